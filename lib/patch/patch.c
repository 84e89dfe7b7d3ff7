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
 * guard.
 *
 * A change over several instructions (it moves instruction boundaries)
 * could find a thread stopped at one of their boundaries, inside the
 * range, or returning to one.  For those, the threads are stopped instead
 * (the handshake, struct fl_park in lib/dispatch/dispatch.h):
 *
 *   H1. Send every other thread of the process (/proc/self/task, read
 *       with getdents64: no allocation while threads are stopped, one of
 *       them may hold malloc's lock) the handshake's signal (a real-time
 *       one: see struct fl_park for why not SIGTRAP) carrying this handshake's
 *       value, but faultline's own, which block every signal and never
 *       run code that can be patched (fl_park_exempt, dispatch.h); each stops in the handler, after writing its PC and stack
 *       pointer.  Wait until all have; list the threads again and stop
 *       the new ones, until no thread is missing.
 *       Why: a stopped thread runs no code, and its PC and stack say
 *       where it will run when it goes on.
 *   H2. Check each thread: its PC must not be inside a change (its first
 *       byte is fine: the thread runs the new instruction from there),
 *       and no word of its stack, from its stack pointer to the end of
 *       the mapping, may point inside one (a return address would land
 *       in the middle of the new code).  The patching thread's stack too.
 *       Why: these are the only ways a thread can come back into the
 *       range other than through its first byte.
 *   H3. If every thread is clear: write the changes, serialize, let the
 *       threads go (sigreturn serializes each of them too).  If not: let
 *       them go, wait, and try again, up to PARK_TRIES times; then refuse
 *       (-EBUSY) naming the thread and why.  The wait starts at 20 us and
 *       doubles up to a millisecond: a thread stopped in a stub it is
 *       leaving is out a few instructions after it goes on, and a first
 *       wait of a millisecond made most refusals cost that.  A thread
 *       that does not stop within PARK_WAIT_MS is refused at once when it
 *       blocks that signal (and is not on its way out of an earlier
 *       handshake's handler, which blocks it for a moment) or is stopped;
 *       one that is only slow (a loaded machine, an emulator) is waited
 *       for up to PARK_WAIT_MAX_MS.  One that exited is not waited for.
 *
 * The stack scan is conservative: a stale word that happens to point
 * inside a change refuses it too, which is safe.  It does not see
 * frames on another stack than the one the thread is on (an alternate
 * signal stack's interrupted code): say so in the man page.
 *
 * The patching thread blocks every signal while it patches: a handler of
 * its own that ran into a site would wait for the patch forever.  And a
 * fork waits until the patch is done (fork_prepare below).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <Zydis/Zydis.h>

#include <faultline/patch.h>

#include "core/fmt.h"
#include "dispatch/dispatch.h"
#include "format/diag.h"
#include "patch/internal.h"
#include "patch/maps.h"

#define INT3 0xcc

static pthread_mutex_t patch_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int enabled;

/*
 * fork waits for a patch under way: the child gets the code whole, old or
 * new.  Forked in the middle, its copy would keep the int3s of a patch
 * that nobody finishes in it, and a thread of it that ran there would trap
 * for ever.  The handlers are registered at the lock's first use, so that
 * the points API (points.c), which takes the lock before patching is
 * enabled, is covered too.
 */
static void fork_prepare(void)
{
	pthread_mutex_lock(&patch_lock);
}

static void fork_done(void)
{
	pthread_mutex_unlock(&patch_lock);
}

static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
static int atfork_err;

static void atfork_register(void)
{
	atfork_err = -pthread_atfork(fork_prepare, fork_done, fork_done);
}

int fl_patch_lock(sigset_t *old, struct fl_diag *diag)
{
	sigset_t all;

	if (diag) {
		diag->err = 0;
		diag->msg[0] = 0;
	}
	pthread_once(&atfork_once, atfork_register);
	if (atfork_err)
		return fl_diag_say(diag, atfork_err, "pthread_atfork: %s", strerror(-atfork_err));
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, old);
	pthread_mutex_lock(&patch_lock);
	return 0;
}

void fl_patch_unlock(const sigset_t *old)
{
	pthread_mutex_unlock(&patch_lock);
	pthread_sigmask(SIG_SETMASK, old, NULL);
}

bool fl_patch_enabled(void)
{
	return atomic_load_explicit(&enabled, memory_order_acquire);
}

static long membarrier(int cmd)
{
	return syscall(__NR_membarrier, cmd, 0, 0);
}

/*
 * The handshake's signal: SIGRTMAX - FL_PARK_SIGNAL_FROM_MAX, or the
 * real-time signal FAULTLINE_HANDSHAKE_SIGNAL names (for an application
 * that uses that one itself).  Returns 0 or -EINVAL (said).
 */
static int park_signal(struct fl_diag *diag)
{
	const char *env = getenv("FAULTLINE_HANDSHAKE_SIGNAL");
	char *end;
	long v;

	if (!env || !*env) {
		fl_park.signo = SIGRTMAX - FL_PARK_SIGNAL_FROM_MAX;
		return 0;
	}
	errno = 0;
	v = strtol(env, &end, 10);
	if (errno || *end || v < SIGRTMIN || v > SIGRTMAX)
		return fl_diag_say(diag, -EINVAL, "FAULTLINE_HANDSHAKE_SIGNAL: '%s' is not a "
				   "real-time signal (%d to %d)", env, SIGRTMIN, SIGRTMAX);
	fl_park.signo = (int)v;
	return 0;
}

int fl_patch_enable(struct fl_diag *diag)
{
	long offered;
	int err = 0;

	sigset_t old;

	if (!atomic_load_explicit(&fl_dispatch.ready, memory_order_acquire))
		return fl_diag_say(diag, -ENODEV, "fl_patch_enable: fl_init has not run");
	err = fl_patch_lock(&old, diag);
	if (err)
		return err;
	if (atomic_load_explicit(&enabled, memory_order_relaxed))
		goto out;
	offered = membarrier(MEMBARRIER_CMD_QUERY);
	if (offered < 0) {
		err = fl_diag_say(diag, -ENOSYS, "code patching needs membarrier(2) "
				  "(Linux 4.16 or later): %s", strerror(errno));
		goto out;
	}
	if (!(offered & MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE)) {
		err = fl_diag_say(diag, -ENOSYS, "code patching needs membarrier's "
				  "PRIVATE_EXPEDITED_SYNC_CORE command, which this kernel does not offer");
		goto out;
	}
	if (membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE) != 0) {
		err = fl_diag_say(diag, -errno, "membarrier(REGISTER_PRIVATE_EXPEDITED_SYNC_CORE): %s",
				  strerror(errno));
		goto out;
	}
	/* The handshake's key: only this process can send its signals. */
	while (!fl_park.key || fl_park.key > UINT64_MAX - (1ull << 33))
		if (getrandom(&fl_park.key, sizeof(fl_park.key), 0) != sizeof(fl_park.key)) {
			err = fl_diag_say(diag, -errno, "getrandom: %s", strerror(errno));
			goto out;
		}
	if (!fl_park.signo) {
		err = park_signal(diag);
		if (err)
			goto out;
	}
	err = fl_dispatch_install_trap();
	if (err) {
		fl_diag_say(diag, err, "installing the SIGTRAP and handshake handlers: %s",
			    strerror(-err));
		goto out;
	}
	atomic_store_explicit(&enabled, 1, memory_order_release);
out:
	fl_patch_unlock(&old);
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

/* A batch fits the slots even when the one before has not been freed yet. */
_Static_assert(FL_PATCH_MAX_BATCH <= FL_POKE_SLOTS, "a batch takes a slot per site");

/* The threads stopped so far, by tid. */
struct stopped {
	pid_t tid[FL_PARK_MAX];
	size_t n;
};

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
	/* A change moves instruction boundaries: the handshake, not int3s. */
	bool moves;
	/*
	 * fl_patch_quiesce_locked: the handshake only proves that no thread
	 * is in the ranges (their first byte included) nor returns into them.
	 */
	bool quiesce;
	/* The handshake's threads, and why the last one failed. */
	struct stopped stopped;
	char why[160];
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
static int check_site(struct batch *b, size_t i, const struct fl_maps *maps, uint64_t pagesz,
		      struct fl_diag *diag)
{
	const struct fl_patch *p = &b->p[i];
	uint64_t a = (uint64_t)(uintptr_t)p->addr, end = a + p->len, avail = 0;
	ZydisDecoder dec;
	ZydisDecodedInstruction insn;

	for (uint64_t at = a; at < end;) {
		const struct fl_mapping *m = fl_maps_find(maps, at);
		uint64_t page = at & ~(pagesz - 1);

		if (!m || !(m->prot & PROT_EXEC) || !(m->prot & PROT_READ))
			return fl_diag_say(diag, -EFAULT, "change %zu at 0x%llx: not in executable memory",
					   i, (unsigned long long)at);
		if (m->shared_file)
			return fl_diag_say(diag, -EPERM, "change %zu at 0x%llx: a shared mapping of a file "
					   "(writing it would change the file)", i, (unsigned long long)at);
		if (!page_listed(b, page)) {
			b->pages[b->num_pages].addr = page;
			b->pages[b->num_pages].prot = m->prot;
			b->num_pages++;
		}
		if (at == a) {
			/* How much code follows addr in this and the next mappings. */
			const struct fl_mapping *c = m;

			avail = c->end - a;
			while (avail < ZYDIS_MAX_INSTRUCTION_LENGTH &&
			       (c = fl_maps_find(maps, c->end)) && (c->prot & PROT_EXEC))
				avail = c->end - a;
		}
		at = page + pagesz < end ? page + pagesz : end;
	}
	if (memcmp(p->addr, p->old_bytes, p->len) != 0)
		return fl_diag_say(diag, -ESTALE, "change %zu at 0x%llx: the code is not its old bytes",
				   i, (unsigned long long)a);
	ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
	/*
	 * More than the instruction at addr, or no instruction there: the
	 * boundaries move, and the threads must be proven outside.
	 */
	if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&dec, NULL, p->addr,
			avail < ZYDIS_MAX_INSTRUCTION_LENGTH ? avail : ZYDIS_MAX_INSTRUCTION_LENGTH,
			&insn)) || p->len > insn.length)
		b->moves = true;
	return 0;
}

static int check_args(const struct fl_patch *p, size_t n, struct fl_diag *diag)
{
	if (!p || n == 0 || n > FL_PATCH_MAX_BATCH)
		return fl_diag_say(diag, -EINVAL, "fl_patch_text: %zu changes (1 to %d)", n,
				   FL_PATCH_MAX_BATCH);
	for (size_t i = 0; i < n; i++) {
		uint64_t a = (uint64_t)(uintptr_t)p[i].addr;

		if (!p[i].addr || !p[i].old_bytes || !p[i].new_bytes ||
		    p[i].len == 0 || p[i].len > FL_PATCH_MAX_LEN || a + p[i].len < a)
			return fl_diag_say(diag, -EINVAL, "change %zu: a NULL pointer, or len %zu "
					   "(1 to %d)", i, p[i].len, FL_PATCH_MAX_LEN);
		for (size_t j = 0; j < i; j++) {
			uint64_t b = (uint64_t)(uintptr_t)p[j].addr;

			if (a < b + p[j].len && b < a + p[i].len)
				return fl_diag_say(diag, -EINVAL, "changes %zu and %zu overlap", j, i);
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
			return fl_diag_say(diag, err, "mprotect(PROT_WRITE|PROT_EXEC) of the page at 0x%llx: "
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

/* The handshake (H1 to H3 above). */
#define PARK_TRIES 100
#define PARK_WAIT_MS 2000
#define PARK_WAIT_MAX_MS 30000

static uint64_t park_gen;

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}


static bool stopped_has(const struct stopped *s, pid_t tid)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->tid[i] == tid)
			return true;
	return false;
}

/*
 * Sends the handshake's signal to every thread of /proc/self/task not yet
 * in s, but this one.  Returns how many it sent to, or -errno.  No
 * allocation: getdents64 into a buffer on the stack.
 */
static int stop_new_threads(struct stopped *s, uint64_t gen)
{
	char buf[4096];
	pid_t self = gettid(), pid = getpid();
	int fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC), sent = 0;
	long r;

	if (fd < 0)
		return -errno;
	while ((r = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0) {
		for (long off = 0; off < r;) {
			struct dirent64 *d = (struct dirent64 *)(buf + off);
			pid_t tid = (pid_t)strtol(d->d_name, NULL, 10);
			siginfo_t si;

			off += d->d_reclen;
			if (tid <= 0 || tid == self || stopped_has(s, tid) ||
			    fl_park_is_exempt(tid))
				continue;
			if (s->n == FL_PARK_MAX) {
				close(fd);
				return -E2BIG;
			}
			memset(&si, 0, sizeof(si));
			si.si_signo = fl_park.signo;
			si.si_code = SI_QUEUE;
			si.si_pid = pid;
			si.si_uid = getuid();
			si.si_value.sival_ptr = (void *)(uintptr_t)(fl_park.key + gen);
			if (syscall(SYS_rt_tgsigqueueinfo, pid, tid, fl_park.signo, &si) != 0) {
				if (errno == ESRCH)	/* it has exited */
					continue;
				close(fd);
				return -errno;
			}
			s->tid[s->n++] = tid;
			sent++;
		}
	}
	close(fd);
	return sent;
}

/* Whether v points inside a change: after its first byte, before its end. */
static bool inside(const struct batch *b, uint64_t v, size_t *which)
{
	for (size_t i = 0; i < b->n; i++) {
		uint64_t a = (uint64_t)(uintptr_t)b->p[i].addr;

		if ((v > a || (b->quiesce && v == a)) && v < a + b->p[i].len) {
			*which = i;
			return true;
		}
	}
	return false;
}

/*
 * Scans the stack from sp to the end of its mapping for a word inside a
 * change.  Returns 1 (found, at *at), 0, or -1 when sp is in no mapping.
 *
 * The mapping is as /proc/self/maps listed it, and the kernel merges
 * adjacent anonymous mappings: a stack (a signal stack in the heap, a
 * thread's stack next to other memory) may share its entry with memory
 * that another thread unmaps meanwhile (the allocator's).  So the words
 * are copied with process_vm_readv on this process, which stops at a
 * page no longer there instead of faulting; its end ends the scan.  A
 * kernel or a sandbox without it (ENOSYS, EPERM): read in place, as
 * the mapping was listed.
 */
__attribute__((no_sanitize_address))	/* other threads' frames hold ASan's redzones */
static int scan_stack(const struct batch *b, const struct fl_maps *maps, uint64_t sp,
		      uint64_t *at, size_t *which)
{
	const struct fl_mapping *m = fl_maps_find(maps, sp);
	uint64_t chunk[512];
	uint64_t w = sp & ~(uint64_t)7;

	if (!m)
		return -1;
	while (w + 8 <= m->end) {
		size_t want = m->end - w < sizeof(chunk) ? (size_t)(m->end - w) & ~(size_t)7 :
			sizeof(chunk);
		struct iovec local = { chunk, want }, remote = { (void *)(uintptr_t)w, want };
		ssize_t got = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);

		if (got < 0 && (errno == ENOSYS || errno == EPERM)) {
			for (; w + 8 <= m->end; w += 8)
				if (inside(b, *(const volatile uint64_t *)(uintptr_t)w, which)) {
					*at = w;
					return 1;
				}
			return 0;
		}
		if (got < 8)
			return 0;
		for (size_t k = 0; k < (size_t)got / 8; k++)
			if (inside(b, chunk[k], which)) {
				*at = w + 8 * k;
				return 1;
			}
		w += (uint64_t)got & ~(uint64_t)7;
	}
	return 0;
}

/*
 * H2: the stopped threads and this one.  Returns 0 when all are clear,
 * else a reason in b->why: -EAGAIN (try again), -ESTALE (the maps are
 * older than a stack: read them again).
 */
static int check_threads(struct batch *b, const struct fl_maps *maps, uint32_t stopped)
{
	uint64_t here = (uint64_t)(uintptr_t)__builtin_frame_address(0), at;
	size_t which;
	int r;

	for (uint32_t i = 0; i < stopped && i < FL_PARK_MAX; i++) {
		const struct fl_park_slot *s = &fl_park.who[i];
		pid_t tid = atomic_load_explicit(&s->tid, memory_order_acquire);
		uint64_t pc = atomic_load_explicit(&s->pc, memory_order_relaxed);
		uint64_t sp = atomic_load_explicit(&s->sp, memory_order_relaxed);

		if (inside(b, pc, &which)) {
			fl_fmt(b->why, sizeof(b->why), "thread %d is at 0x%llx, inside change %zu",
			       (int)tid, (unsigned long long)pc, which);
			return -EAGAIN;
		}
		r = scan_stack(b, maps, sp, &at, &which);
		if (r < 0) {
			fl_fmt(b->why, sizeof(b->why), "thread %d's stack at 0x%llx is in no mapping "
			       "read before", (int)tid, (unsigned long long)sp);
			return -ESTALE;
		}
		if (r > 0) {
			fl_fmt(b->why, sizeof(b->why), "thread %d would return inside change %zu "
			       "(a return address at 0x%llx on its stack)", (int)tid, which,
			       (unsigned long long)at);
			return -EAGAIN;
		}
	}
	r = scan_stack(b, maps, here, &at, &which);
	if (r != 0) {
		fl_fmt(b->why, sizeof(b->why), "the patching thread %s change %zu", r > 0 ?
		       "would return inside" : "has its stack in no mapping, near", which);
		return r > 0 ? -EBUSY : -ESTALE;
	}
	return 0;
}

/* How many of the threads signalled have written their PC and stack pointer. */
static size_t threads_stopped(void)
{
	uint32_t arrived = atomic_load_explicit(&fl_park.arrived, memory_order_acquire);
	size_t have = 0;

	for (uint32_t i = 0; i < arrived && i < FL_PARK_MAX; i++)
		have += atomic_load_explicit(&fl_park.who[i].tid, memory_order_acquire) != 0;
	return have;
}

/* A thread of s that has not stopped, or 0. */
static pid_t thread_not_stopped(const struct stopped *s)
{
	for (size_t i = 0; i < s->n; i++) {
		bool found = false;

		for (uint32_t k = 0; k < FL_PARK_MAX && !found; k++)
			found = atomic_load_explicit(&fl_park.who[k].tid, memory_order_acquire) ==
				s->tid[i];
		if (!found)
			return s->tid[i];
	}
	return 0;
}

enum late { LATE_WAIT, LATE_GONE, LATE_REFUSE };

/*
 * A thread that has not stopped after PARK_WAIT_MS: whether to wait for it
 * longer.  Reads /proc/self/task/TID/status into a buffer on the stack (no
 * allocation while threads are stopped).
 */
static enum late late_thread(pid_t tid, size_t stopped)
{
	char path[64], buf[2048], *at;
	unsigned long long blocked = 0;
	ssize_t n;
	int fd;

	/* Someone is still leaving an earlier handshake's handler: it comes. */
	if (atomic_load_explicit(&fl_park.inside, memory_order_relaxed) > stopped)
		return LATE_WAIT;
	fl_fmt(path, sizeof(path), "/proc/self/task/%d/status", (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return LATE_GONE;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return LATE_GONE;
	buf[n] = '\0';
	at = strstr(buf, "\nState:\t");
	if (at && (at[8] == 'T' || at[8] == 't' || at[8] == 'Z' || at[8] == 'X'))
		return at[8] == 'Z' || at[8] == 'X' ? LATE_GONE : LATE_REFUSE;
	at = strstr(buf, "\nSigBlk:\t");
	if (at)
		blocked = strtoull(at + 9, NULL, 16);
	return blocked & (1ull << (fl_park.signo - 1)) ? LATE_REFUSE : LATE_WAIT;
}

/* Forgets tid, which exited: it cannot be in a change. */
static void stopped_drop(struct stopped *s, pid_t tid)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->tid[i] == tid) {
			s->tid[i] = s->tid[--s->n];
			return;
		}
}

/*
 * One handshake: stop every thread, check, and write the changes if all
 * are clear.  Returns 0 (written), or -errno with b->why.
 */
static int handshake_once(struct batch *b, const struct fl_maps *maps)
{
	struct stopped *s = &b->stopped;
	uint64_t gen = ++park_gen, deadline = now_ms() + PARK_WAIT_MS;
	uint64_t hard_deadline = deadline - PARK_WAIT_MS + PARK_WAIT_MAX_MS;
	int sent, err = 0;

	s->n = 0;
	for (size_t i = 0; i < FL_PARK_MAX; i++)
		atomic_store_explicit(&fl_park.who[i].tid, 0, memory_order_relaxed);
	atomic_store_explicit(&fl_park.arrived, 0, memory_order_relaxed);
	atomic_store_explicit(&fl_park.running, gen, memory_order_seq_cst);

	/* H1: until a listing finds no thread that is not stopped. */
	while ((sent = stop_new_threads(s, gen)) != 0) {
		if (sent < 0) {
			err = sent;
			fl_fmt(b->why, sizeof(b->why), "stopping the threads: %s", strerror(-err));
			goto release;
		}
		while (threads_stopped() < s->n) {
			uint64_t now = now_ms();
			pid_t late;

			if (now <= deadline) {
				sched_yield();
				continue;
			}
			late = thread_not_stopped(s);
			if (!late && now <= hard_deadline) {
				sched_yield();
				continue;
			}
			switch (now > hard_deadline ? LATE_REFUSE : late_thread(late, threads_stopped())) {
			case LATE_GONE:
				stopped_drop(s, late);
				continue;
			case LATE_WAIT:
				sched_yield();
				continue;
			case LATE_REFUSE:
				break;
			}
			err = -EBUSY;
			fl_fmt(b->why, sizeof(b->why), "thread %d did not stop within %d ms "
			       "(the handshake's signal %d blocked, or stopped)", (int)late,
			       (int)(now - (deadline - PARK_WAIT_MS)), fl_park.signo);
			goto release;
		}
	}

	/* H2, H3. */
	err = check_threads(b, maps, (uint32_t)s->n);
	if (!err && !b->quiesce) {
		for (size_t i = 0; i < b->n; i++)
			for (size_t k = 0; k < b->p[i].len; k++)
				write_byte((uint8_t *)b->p[i].addr + k,
					   ((const uint8_t *)b->p[i].new_bytes)[k]);
		serialize();
	}
release:
	atomic_store_explicit(&fl_park.running, 0, memory_order_release);
	return err;
}

/* The handshake, with its bounded retry.  Returns 0 or -errno (said). */
static int handshake(struct batch *b, struct fl_maps *maps, struct fl_diag *diag)
{
	int err = 0, t;

	for (t = 0; t < PARK_TRIES; t++) {
		long wait_ns = t < 6 ? 20000L << t : 1000000L;
		struct timespec ms = { 0, wait_ns < 1000000L ? wait_ns : 1000000L };

		err = handshake_once(b, maps);
		if (err != -EAGAIN && err != -ESTALE)
			break;
		if (err == -ESTALE) {
			free(maps->m);
			err = fl_maps_read(maps);
			if (err) {
				fl_fmt(b->why, sizeof(b->why), "reading /proc/self/maps: %s",
				       strerror(-err));
				break;
			}
			err = -ESTALE;
		}
		nanosleep(&ms, NULL);
	}
	if (err == -EAGAIN || err == -ESTALE)
		err = -EBUSY;
	if (err)
		fl_diag_say(diag, err, "%s, after %d tr%s: %s", b->quiesce ?
			    "code that no thread may be in" : "changes that move instruction boundaries",
			    t < PARK_TRIES ? t + 1 : t, t == 0 ? "y" : "ies", b->why);
	return err;
}

int fl_patch_text_locked(const struct fl_patch *p, size_t n, const struct fl_maps *known,
			 struct fl_diag *diag)
{
	uint64_t pagesz = (uint64_t)sysconf(_SC_PAGESIZE);
	struct batch *b;
	struct fl_maps maps;
	int err;

	if (!atomic_load_explicit(&enabled, memory_order_acquire))
		return fl_diag_say(diag, -ENOTSUP, "code patching is not enabled (fl_patch_enable)");
	err = check_args(p, n, diag);
	if (err)
		return err;
	b = calloc(1, sizeof(*b));
	if (!b)
		return fl_diag_say(diag, -ENOMEM, "fl_patch_text: out of memory");
	b->p = p;
	b->n = n;

	maps.m = NULL;
	err = known ? 0 : fl_maps_read(&maps);
	if (err) {
		fl_diag_say(diag, err, "reading /proc/self/maps: %s", strerror(-err));
		goto out;
	}
	for (size_t i = 0; i < n && !err; i++)
		err = check_site(b, i, known ? known : &maps, pagesz, diag);
	if (err)
		goto out;
	if (b->moves) {
		/* The handshake reads them again when they change: its own copy. */
		if (known) {
			err = fl_maps_read(&maps);
			if (err) {
				fl_diag_say(diag, err, "reading /proc/self/maps: %s", strerror(-err));
				goto out;
			}
		}
		err = pages_writable(b, pagesz, diag);
		if (!err) {
			err = handshake(b, &maps, diag);
			pages_restore(b, pagesz);
		}
		goto out;
	}
	/* Every slot is freed by the time a patch returns, but one generation. */
	err = slots_take(b);
	if (err) {
		serialize();
		err = slots_take(b);
	}
	if (err) {
		fl_diag_say(diag, err, "fl_patch_text: no free slot for %zu changes", n);
		goto out;
	}
	err = pages_writable(b, pagesz, diag);
	if (err)
		goto out;
	poke(b);
	pages_restore(b, pagesz);
out:
	free(maps.m);
	free(b);
	return err;
}

int fl_patch_text(const struct fl_patch *p, size_t n, struct fl_diag *diag)
{
	sigset_t old;
	int err = fl_patch_lock(&old, diag);

	if (err)
		return err;
	err = fl_patch_text_locked(p, n, NULL, diag);
	fl_patch_unlock(&old);
	return err;
}

int fl_patch_quiesce_locked(const struct fl_patch *ranges, size_t n, struct fl_diag *diag)
{
	struct batch *b;
	struct fl_maps maps;
	int err;

	if (!atomic_load_explicit(&enabled, memory_order_acquire))
		return fl_diag_say(diag, -ENOTSUP, "code patching is not enabled (fl_patch_enable)");
	if (n == 0 || n > FL_PATCH_MAX_BATCH)
		return fl_diag_say(diag, -EINVAL, "fl_patch_quiesce: %zu ranges", n);
	b = calloc(1, sizeof(*b));
	if (!b)
		return fl_diag_say(diag, -ENOMEM, "fl_patch_quiesce: out of memory");
	b->p = ranges;
	b->n = n;
	b->quiesce = true;
	maps.m = NULL;
	err = fl_maps_read(&maps);
	if (err)
		fl_diag_say(diag, err, "reading /proc/self/maps: %s", strerror(-err));
	else
		err = handshake(b, &maps, diag);
	free(maps.m);
	free(b);
	return err;
}
