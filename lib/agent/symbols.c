/* SPDX-License-Identifier: MIT */
/*
 * Site names for the daemon: the function each faulting PC is in, as the
 * dynamic symbol tables know it (dladdr), and its offset there.  Off the
 * signal path, in the fl-agent thread.  JIT code has no symbols: its sites
 * are named by the functions registered with it (fl_jit_reg.functions,
 * sections.c), or stay unnamed.
 */
#include <dlfcn.h>
#include <errno.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "agent/internal.h"
#include "proto/proto.h"

static int send_buf(int fd, char *buf, size_t len, uint32_t module, uint32_t count,
		    uint32_t *seq)
{
	struct fl_msg_symbols s;

	memset(&s, 0, sizeof(s));
	fl_proto_header(&s, FL_MSG_SYMBOLS, len, ++*seq);
	s.module = module;
	s.count = count;
	memcpy(buf, &s, sizeof(s));
	return fl_proto_send(fd, buf, len, NULL, 0, 0);
}

/*
 * Copies the name dladdr pointed to, which a dlclose in another thread may
 * unmap as soon as dladdr returns (the agent does not hold the module):
 * read with process_vm_readv, which fails instead of faulting.  Returns
 * the length (> 0), or 0 for no name.
 */
static size_t copy_name(char *dst, size_t size, const char *src)
{
	/* Most names are short: 256 bytes first, the whole buffer if needed. */
	for (size_t want = size < 256 ? size : 256;; want = size) {
		struct iovec local = { dst, want }, remote = { (void *)src, want };
		ssize_t n = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
		const char *nul;

		if (n < 0 && (errno == ENOSYS || errno == EPERM)) {
			/* Not allowed here (seccomp): read it directly, as dladdr's callers do. */
			n = (ssize_t)strnlen(src, size - 1) + 1;
			memcpy(dst, src, (size_t)n);
			want = size;
		}
		if (n <= 0)
			return 0;
		nul = memchr(dst, 0, (size_t)n);
		if (nul)
			return (size_t)(nul - dst);
		/* No NUL: longer than want, or cut short by an unmapped page. */
		if ((size_t)n < want || want == size)
			return 0;
	}
}

int fl_agent_send_symbols(int fd, uint32_t module, const uint64_t *pcs,
			  const char *const *names, const uint32_t *offsets, uint32_t n,
			  uint32_t *seq)
{
	static char buf[FL_PROTO_MAX_MESSAGE];
	static char name[8192];
	size_t len = sizeof(struct fl_msg_symbols), name_len = 0;
	const char *last = NULL;	/* the name in name[], as dladdr gave it */
	uint32_t count = 0;
	int err;

	for (uint32_t i = 0; i < n; i++) {
		uint32_t offset = FL_SYMBOL_NO_OFFSET;
		Dl_info info;

		/* The registry's name (from the module's symbol table) first. */
		if (names && names[i]) {
			name_len = strnlen(names[i], sizeof(name) - 1);
			memcpy(name, names[i], name_len);
			if (offsets)
				offset = offsets[i];
			last = NULL;
		} else if (!dladdr((void *)(uintptr_t)pcs[i], &info) || !info.dli_sname) {
			continue;
		} else if (info.dli_sname != last) {
			/* Sites of one function are next to each other: one copy. */
			name_len = copy_name(name, sizeof(name), info.dli_sname);
			last = name_len ? info.dli_sname : NULL;
		}
		if (!name_len)
			continue;
		if (!(names && names[i]) && info.dli_saddr &&
		    pcs[i] - (uintptr_t)info.dli_saddr < FL_SYMBOL_NO_OFFSET)
			offset = (uint32_t)(pcs[i] - (uintptr_t)info.dli_saddr);
		if (len + FL_SYMBOL_ENTRY_HEAD + name_len > sizeof(buf)) {
			err = send_buf(fd, buf, len, module, count, seq);
			if (err)
				return err;
			len = sizeof(struct fl_msg_symbols);
			count = 0;
		}
		len += fl_symbols_put(buf + len, i, offset, name, (uint16_t)name_len);
		count++;
	}
	return count ? send_buf(fd, buf, len, module, count, seq) : 0;
}
