/* SPDX-License-Identifier: MIT */
/*
 * Site names for the daemon: the function each faulting PC is in, as the
 * dynamic symbol tables know it (dladdr).  Off the signal path, in the
 * fl-agent thread.  JIT code has no symbols; its sites stay unnamed.
 */
#include <dlfcn.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

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
	for (;;) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);

		if (n == (ssize_t)len)
			return 0;
		if (n < 0 && errno == EINTR)
			continue;
		return n < 0 ? -errno : -EIO;
	}
}

int fl_agent_send_symbols(int fd, uint32_t module, const uint64_t *pcs, uint32_t n,
			  uint32_t *seq)
{
	static char buf[FL_PROTO_MAX_MESSAGE];
	size_t len = sizeof(struct fl_msg_symbols);
	uint32_t count = 0;
	int err;

	for (uint32_t i = 0; i < n; i++) {
		Dl_info info;
		size_t name_len;
		uint16_t l16;

		if (!dladdr((void *)(uintptr_t)pcs[i], &info) || !info.dli_sname ||
		    !info.dli_sname[0])
			continue;
		name_len = strlen(info.dli_sname);
		if (name_len > UINT16_MAX)
			name_len = UINT16_MAX;
		if (len + 6 + name_len > sizeof(buf)) {
			err = send_buf(fd, buf, len, module, count, seq);
			if (err)
				return err;
			len = sizeof(struct fl_msg_symbols);
			count = 0;
		}
		l16 = (uint16_t)name_len;
		memcpy(buf + len, &i, 4);
		memcpy(buf + len + 4, &l16, 2);
		memcpy(buf + len + 6, info.dli_sname, name_len);
		len += 6 + name_len;
		count++;
	}
	return count ? send_buf(fd, buf, len, module, count, seq) : 0;
}
