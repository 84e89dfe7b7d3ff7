/* SPDX-License-Identifier: MIT */
/*
 * Changing the code of the running process while its other threads run it
 * (fl_patch_text), in the process itself.
 *
 * x86 does not promise that a thread running code another thread writes
 * sees the new instruction whole: it may fetch and decode part of the old
 * bytes and part of the new ones (Intel SDM vol. 3, 8.1.3, "Handling
 * Self- and Cross-Modifying Code").  What it does promise: a single byte
 * is written atomically, and a thread that executes a serializing
 * instruction after the write sees it.  membarrier(SYNC_CORE) makes every
 * other thread of the process execute one (the kernel IPIs the CPUs that
 * run them, and the others go through a serializing return to user space
 * when they are next scheduled).  So the kernel's text_poke_bp protocol
 * (arch/x86/kernel/alternative.c) works in user space too, with
 * membarrier where the kernel uses its sync_core IPIs.
 *
 * The protocol, for a batch of sites, each changed from its old bytes to
 * its new ones (len bytes within one old instruction):
 *
 *   0. Publish each site in fl_pokes (lib/dispatch/dispatch.h) and make its
 *      pages writable, keeping them executable.
 *      Why: a thread that traps in step 1 must find the site, so the slot
 *      comes before the int3; the page must never stop being executable,
 *      or another thread running on it would fault.
 *
 *   1. Write int3 (0xcc) at byte 0 of every site; serialize.
 *      Why: from here on a thread that reaches a site traps before it
 *      reads bytes 1..len-1, so they can change freely.  A thread that
 *      had already fetched the whole old instruction runs it, whole: the
 *      serialization makes sure no thread still holds part of an old
 *      fetch when step 2 writes.
 *
 *   2. Write bytes 1..len-1 of every site; serialize.
 *      Why: the new tail must be seen by every thread before any of them
 *      can run past byte 0, which happens in step 3.
 *
 *   3. Write the new byte 0 of every site; serialize.
 *      Why: one byte, written atomically, turns each site from int3 into
 *      the new instruction, whose tail every thread has already seen.
 *      The serialization makes every thread see the new byte 0, so no
 *      thread can hit the int3 from now on; only a trap already taken
 *      may still be on its way to the handler.
 *
 *   4. Retire the sites (done_gen), restore the pages' protection.  A
 *      retired slot is freed only at the start of a later patch, after
 *      that patch's generation has moved past it: a SIGTRAP in flight
 *      still finds its site meanwhile, and a trap at an int3 that is gone
 *      is known to have been a patch's (lib/dispatch/trap.c).
 *
 * A thread that hits an int3 between steps 1 and 3 takes SIGTRAP: the
 * handler (lib/dispatch/trap.c) yields and sends it back to byte 0, where
 * it traps again or, after step 3, runs the new instruction.
 *
 * Why within one instruction: a thread is only ever at an instruction
 * boundary.  If a change covers only (part of) the instruction at addr,
 * the one boundary inside its range is addr itself, which steps 1-3
 * guard.  A change over several instructions could find a thread
 * stopped at one of their boundaries, inside the range, or returning to
 * one: that needs every thread's PC and return addresses proven outside
 * the range first, and is refused here (-EBUSY).
 *
 * The patching thread blocks every signal while it patches: a handler of
 * its own that ran into a site would wait for the patch forever.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <Zydis/Zydis.h>

#include <faultline/patch.h>

#include "core/fmt.h"
#include "dispatch/dispatch.h"

#define INT3 0xcc

static pthread_mutex_t patch_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int enabled;

static int say(struct fl_diag *diag, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int say(struct fl_diag *diag, int err, const char *fmt, ...)
{
	va_list ap;

	if (!diag)
		return err;
	diag->err = err;
	va_start(ap, fmt);
	fl_vfmt(diag->msg, sizeof(diag->msg), fmt, ap);
	va_end(ap);
	return err;
}

static long membarrier(int cmd)
{
	return syscall(__NR_membarrier, cmd, 0, 0);
}

int fl_patch_enable(struct fl_diag *diag)
{
	long offered;
	int err = 0;

	if (!atomic_load_explicit(&fl_dispatch.ready, memory_order_acquire))
		return say(diag, -ENODEV, "fl_patch_enable: fl_init has not run");
	pthread_mutex_lock(&patch_lock);
	if (atomic_load_explicit(&enabled, memory_order_relaxed))
		goto out;
	offered = membarrier(MEMBARRIER_CMD_QUERY);
	if (offered < 0) {
		err = say(diag, -ENOSYS, "code patching needs membarrier(2) (Linux 4.16 or later): %s",
			  strerror(errno));
		goto out;
	}
	if (!(offered & MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE)) {
		err = say(diag, -ENOSYS, "code patching needs membarrier's "
			  "PRIVATE_EXPEDITED_SYNC_CORE command, which this kernel does not offer");
		goto out;
	}
	if (membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE) != 0) {
		err = say(diag, -errno, "membarrier(REGISTER_PRIVATE_EXPEDITED_SYNC_CORE): %s",
			  strerror(errno));
		goto out;
	}
	err = fl_dispatch_install_trap();
	if (err) {
		say(diag, err, "installing the SIGTRAP handler: %s", strerror(-err));
		goto out;
	}
	atomic_store_explicit(&enabled, 1, memory_order_release);
out:
	pthread_mutex_unlock(&patch_lock);
	return err;
}

/* Every thread of the process executes a serializing instruction. */
static void serialize(void)
{
	/* Registered in fl_patch_enable: it cannot fail for EPERM. */
	while (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE) != 0 && errno == EINTR)
		;
	atomic_fetch_add_explicit(&fl_pokes.gen, 1, memory_order_seq_cst);
}

/* A mapping of /proc/self/maps. */
struct mapping {
	uint64_t start;
	uint64_t end;
	int prot;
	bool shared_file;
};

struct maps {
	struct mapping *m;
	size_t n;
};

/* Reads /proc/self/maps.  Returns 0 or -errno. */
static int maps_read(struct maps *out)
{
	size_t cap = 1 << 16, len = 0, mcap = 0;
	char *buf = malloc(cap), *line, *next;
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	ssize_t r;

	out->m = NULL;
	out->n = 0;
	if (!buf || fd < 0) {
		int err = fd < 0 ? -errno : -ENOMEM;

		free(buf);
		if (fd >= 0)
			close(fd);
		return err;
	}
	while ((r = read(fd, buf + len, cap - len - 1)) > 0 || (r < 0 && errno == EINTR)) {
		if (r < 0)
			continue;
		len += (size_t)r;
		if (cap - len - 1 == 0) {
			char *bigger = realloc(buf, cap * 2);

			if (!bigger) {
				free(buf);
				close(fd);
				return -ENOMEM;
			}
			buf = bigger;
			cap *= 2;
		}
	}
	close(fd);
	buf[len] = '\0';
	for (line = buf; line && *line; line = next) {
		unsigned long long start, end;
		char perms[5];
		int path = 0;
		struct mapping *m;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (sscanf(line, "%llx-%llx %4s %*s %*s %*s %n", &start, &end, perms, &path) < 3)
			continue;
		if (out->n == mcap) {
			struct mapping *more = realloc(out->m, (mcap ? mcap * 2 : 64) * sizeof(*more));

			if (!more) {
				free(out->m);
				free(buf);
				return -ENOMEM;
			}
			out->m = more;
			mcap = mcap ? mcap * 2 : 64;
		}
		m = &out->m[out->n++];
		m->start = start;
		m->end = end;
		m->prot = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
			  (perms[2] == 'x' ? PROT_EXEC : 0);
		/* A shared mapping of a file, but a memfd's (a JIT's double mapping). */
		m->shared_file = perms[3] == 's' && path > 0 && line[path] == '/' &&
				 strncmp(line + path, "/memfd:", 7) != 0;
	}
	free(buf);
	return 0;
}

static const struct mapping *maps_find(const struct maps *maps, uint64_t addr)
{
	for (size_t i = 0; i < maps->n; i++)
		if (addr >= maps->m[i].start && addr < maps->m[i].end)
			return &maps->m[i];
	return NULL;
}

/* A page made writable for the patch, and the protection to give back. */
struct page {
	uint64_t addr;
	int prot;
};

struct batch {
	const struct fl_patch *p;
	size_t n;
	struct page pages[2 * FL_PATCH_MAX_BATCH];
	size_t num_pages;
	size_t slots[FL_PATCH_MAX_BATCH];
};

static bool page_listed(const struct batch *b, uint64_t page)
{
	for (size_t i = 0; i < b->num_pages; i++)
		if (b->pages[i].addr == page)
			return true;
	return false;
}

/*
 * Checks change i against the mappings and the code: returns 0 or the
 * error, said in diag.  Collects its pages.
 */
static int check_site(struct batch *b, size_t i, const struct maps *maps, uint64_t pagesz,
		      struct fl_diag *diag)
{
	const struct fl_patch *p = &b->p[i];
	uint64_t a = (uint64_t)(uintptr_t)p->addr, end = a + p->len, avail = 0;
	ZydisDecoder dec;
	ZydisDecodedInstruction insn;

	for (uint64_t at = a; at < end;) {
		const struct mapping *m = maps_find(maps, at);
		uint64_t page = at & ~(pagesz - 1);

		if (!m || !(m->prot & PROT_EXEC) || !(m->prot & PROT_READ))
			return say(diag, -EFAULT, "change %zu at 0x%llx: not in executable memory",
				   i, (unsigned long long)at);
		if (m->shared_file)
			return say(diag, -EPERM, "change %zu at 0x%llx: a shared mapping of a file "
				   "(writing it would change the file)", i, (unsigned long long)at);
		if (!page_listed(b, page)) {
			b->pages[b->num_pages].addr = page;
			b->pages[b->num_pages].prot = m->prot;
			b->num_pages++;
		}
		if (at == a) {
			/* How much code follows addr in this and the next mappings. */
			const struct mapping *c = m;

			avail = c->end - a;
			while (avail < ZYDIS_MAX_INSTRUCTION_LENGTH &&
			       (c = maps_find(maps, c->end)) && (c->prot & PROT_EXEC))
				avail = c->end - a;
		}
		at = page + pagesz < end ? page + pagesz : end;
	}
	if (memcmp(p->addr, p->old_bytes, p->len) != 0)
		return say(diag, -ESTALE, "change %zu at 0x%llx: the code is not its old bytes",
			   i, (unsigned long long)a);
	ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
	if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&dec, NULL, p->addr,
			avail < ZYDIS_MAX_INSTRUCTION_LENGTH ? avail : ZYDIS_MAX_INSTRUCTION_LENGTH,
			&insn)))
		return say(diag, -EBUSY, "change %zu at 0x%llx: no instruction decodes there, "
			   "so its boundaries are unknown", i, (unsigned long long)a);
	if (p->len > insn.length)
		return say(diag, -EBUSY, "change %zu at 0x%llx: %zu bytes span more than the "
			   "%u-byte instruction there (it would move instruction boundaries, "
			   "with threads possibly inside)", i, (unsigned long long)a, p->len,
			   (unsigned)insn.length);
	return 0;
}

static int check_args(const struct fl_patch *p, size_t n, struct fl_diag *diag)
{
	if (!p || n == 0 || n > FL_PATCH_MAX_BATCH)
		return say(diag, -EINVAL, "fl_patch_text: %zu changes (1 to %d)", n,
			   FL_PATCH_MAX_BATCH);
	for (size_t i = 0; i < n; i++) {
		uint64_t a = (uint64_t)(uintptr_t)p[i].addr;

		if (!p[i].addr || !p[i].old_bytes || !p[i].new_bytes ||
		    p[i].len == 0 || p[i].len > FL_PATCH_MAX_LEN || a + p[i].len < a)
			return say(diag, -EINVAL, "change %zu: a NULL pointer, or len %zu "
				   "(1 to %d)", i, p[i].len, FL_PATCH_MAX_LEN);
		for (size_t j = 0; j < i; j++) {
			uint64_t b = (uint64_t)(uintptr_t)p[j].addr;

			if (a < b + p[j].len && b < a + p[i].len)
				return say(diag, -EINVAL, "changes %zu and %zu overlap", j, i);
		}
	}
	return 0;
}

/* Frees the slots a later serialization has passed; takes n free ones. */
static int slots_take(struct batch *b)
{
	uint64_t gen = atomic_load_explicit(&fl_pokes.gen, memory_order_relaxed);
	size_t got = 0;

	for (size_t i = 0; i < FL_POKE_SLOTS && got < b->n; i++) {
		struct fl_poke_slot *s = &fl_pokes.slots[i];
		uint64_t done = atomic_load_explicit(&s->done_gen, memory_order_relaxed);

		if (atomic_load_explicit(&s->addr, memory_order_relaxed) && (!done || done >= gen))
			continue;
		b->slots[got++] = i;
	}
	return got == b->n ? 0 : -EAGAIN;
}

static int pages_writable(struct batch *b, uint64_t pagesz, struct fl_diag *diag)
{
	for (size_t i = 0; i < b->num_pages; i++) {
		if (mprotect((void *)(uintptr_t)b->pages[i].addr, pagesz,
			     b->pages[i].prot | PROT_WRITE) != 0) {
			int err = -errno;
			uint64_t at = b->pages[i].addr;

			while (i-- > 0)
				mprotect((void *)(uintptr_t)b->pages[i].addr, pagesz, b->pages[i].prot);
			return say(diag, err, "mprotect(PROT_WRITE|PROT_EXEC) of the page at 0x%llx: "
				   "%s%s", (unsigned long long)at, strerror(-err),
				   err == -EACCES ? " (an SELinux execmod denial or a "
				   "PaX-style MPROTECT policy: the process may not write its code)" : "");
		}
	}
	return 0;
}

static void pages_restore(const struct batch *b, uint64_t pagesz)
{
	for (size_t i = 0; i < b->num_pages; i++)
		mprotect((void *)(uintptr_t)b->pages[i].addr, pagesz, b->pages[i].prot);
}

static void write_byte(void *addr, uint8_t v)
{
	atomic_store_explicit((_Atomic uint8_t *)addr, v, memory_order_relaxed);
}

/* Steps 1 to 4 of the protocol above. */
static void poke(struct batch *b)
{
	for (size_t i = 0; i < b->n; i++) {
		struct fl_poke_slot *s = &fl_pokes.slots[b->slots[i]];

		atomic_store_explicit(&s->done_gen, 0, memory_order_relaxed);
		atomic_store_explicit(&s->new0, ((const uint8_t *)b->p[i].new_bytes)[0],
				      memory_order_relaxed);
		atomic_store_explicit(&s->addr, (uint64_t)(uintptr_t)b->p[i].addr,
				      memory_order_release);
	}
	atomic_store_explicit(&fl_pokes.ever, 1, memory_order_release);

	/* 1. int3 at byte 0. */
	for (size_t i = 0; i < b->n; i++)
		write_byte(b->p[i].addr, INT3);
	serialize();

	/* 2. The tail. */
	for (size_t i = 0; i < b->n; i++)
		for (size_t k = 1; k < b->p[i].len; k++)
			write_byte((uint8_t *)b->p[i].addr + k,
				   ((const uint8_t *)b->p[i].new_bytes)[k]);
	serialize();

	/* 3. The new byte 0. */
	for (size_t i = 0; i < b->n; i++)
		write_byte(b->p[i].addr, ((const uint8_t *)b->p[i].new_bytes)[0]);
	serialize();

	/* 4. Retired: freed after a later serialization (slots_take). */
	for (size_t i = 0; i < b->n; i++)
		atomic_store_explicit(&fl_pokes.slots[b->slots[i]].done_gen,
				      atomic_load_explicit(&fl_pokes.gen, memory_order_relaxed),
				      memory_order_release);
}

int fl_patch_text(const struct fl_patch *p, size_t n, struct fl_diag *diag)
{
	uint64_t pagesz = (uint64_t)sysconf(_SC_PAGESIZE);
	struct batch *b;
	struct maps maps;
	sigset_t all, old;
	int err;

	if (!atomic_load_explicit(&enabled, memory_order_acquire))
		return say(diag, -ENOTSUP, "code patching is not enabled (fl_patch_enable)");
	err = check_args(p, n, diag);
	if (err)
		return err;
	b = calloc(1, sizeof(*b));
	if (!b)
		return say(diag, -ENOMEM, "fl_patch_text: out of memory");
	b->p = p;
	b->n = n;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	pthread_mutex_lock(&patch_lock);
	err = maps_read(&maps);
	if (err) {
		say(diag, err, "reading /proc/self/maps: %s", strerror(-err));
		goto out;
	}
	for (size_t i = 0; i < n && !err; i++)
		err = check_site(b, i, &maps, pagesz, diag);
	free(maps.m);
	if (err)
		goto out;
	/* Every slot is freed by the time a patch returns, but one generation. */
	err = slots_take(b);
	if (err) {
		serialize();
		err = slots_take(b);
	}
	if (err) {
		say(diag, err, "fl_patch_text: no free slot for %zu changes", n);
		goto out;
	}
	err = pages_writable(b, pagesz, diag);
	if (err)
		goto out;
	poke(b);
	pages_restore(b, pagesz);
out:
	pthread_mutex_unlock(&patch_lock);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	free(b);
	return err;
}
