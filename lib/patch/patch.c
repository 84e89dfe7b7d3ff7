/* SPDX-License-Identifier: MIT */
/*
 * Changing the code of the running process while its other threads run it
 * (fl_patch_text), in the process itself, so that no thread can tell but
 * by the new code's behaviour: no thread that waits in the kernel is
 * signalled (a signal cuts nanosleep, poll, epoll_wait, select, futex
 * waits with a timeout short with EINTR, SA_RESTART or not), and no
 * thread that blocks SIGTRAP meets an int3 (the kernel would kill the
 * process).
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
 * The threads, first (the census, threads.h).  /proc/self/task lists
 * them, each one's status gives its blocked signals, and its syscall file
 * tells whether it waits in the kernel and, if so, its user PC and stack
 * pointer, read while it is off its CPU.  Faultline's own threads (which
 * block every signal and never run code that can be patched,
 * fl_park_exempt) are left alone.  Of the others:
 *   - one that blocks SIGTRAP must not meet an int3: if it runs, it is
 *     stopped (the handshake below) for the whole change; if it waits in
 *     the kernel it could wake into the int3, and if it blocks the
 *     handshake's signal too it cannot be stopped: the change waits and
 *     tries again, and is refused (-EBUSY, naming the thread) if that
 *     lasts;
 *   - for a change that moves instruction boundaries (H1 to H3 below),
 *     one that waits in the kernel is only looked at, and one that keeps
 *     running is stopped: at once, before step 1, if it computes (it has
 *     been on a CPU a while without a sleep of its own since the last
 *     census: threads.c), else after it was watched (H1);
 *   - any other thread is not disturbed at all.
 * Whatever keeps the census from knowing where every thread is (a listing
 * the kernel or a sandbox refuses, a /proc of another pid namespace that
 * does not say which thread is which, more threads than FL_PARK_MAX)
 * refuses the change: it is never written on a guess.
 *
 * The protocol, for a batch of sites, each changed from its old bytes to
 * its new ones:
 *
 *   0. Record each site in fl_poked (for good), publish it in a slot of
 *      fl_pokes with its old bytes (lib/dispatch/dispatch.h), and make its
 *      pages writable, keeping them executable.  Stop the threads that
 *      must be (see above) and, for a change that moves boundaries,
 *      check every thread (H1 to H3 below).
 *      Why: a thread that traps in step 1 must find the site, so the slot
 *      comes before the int3; the page must never stop being executable,
 *      or another thread running on it would fault.
 *
 *   1. Write int3 (0xcc) at byte 0 of every site; serialize.
 *      Why: from here on a thread that reaches a site traps before it
 *      reads bytes 1..len-1, so they can change freely.  A thread that
 *      had already fetched the whole old instruction runs it, whole: the
 *      serialization makes sure no thread still holds part of an old
 *      fetch when step 2 writes.  The first serialization is also the
 *      test that membarrier works (a seccomp filter may deny it): if it
 *      fails, the old first bytes go back (the tails are unchanged, so
 *      every site is its old instruction again) and the change is
 *      refused.
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
 *   4. Let the stopped threads go, free the slots, restore the pages'
 *      protection.  A trap still on its way finds the address in
 *      fl_poked and its int3 gone: it was ours (lib/dispatch/trap.c).
 *
 * A thread that hits an int3 between steps 1 and 3 takes SIGTRAP: the
 * handler (lib/dispatch/trap.c) yields and sends it back to byte 0, where
 * it traps again or, after step 3, runs the new instruction.
 *
 * Why within one instruction needs no more: a thread is only ever at an
 * instruction boundary.  If a change covers only (part of) the
 * instruction at addr, the one boundary inside its range is addr itself,
 * which steps 1-3 guard.  The callers that know more say so
 * (FL_PATCH_ENTERED_AT_START: a healed site's jump is entered only at its
 * first byte, whatever follows it in the range).
 *
 * A change over several instructions (it moves instruction boundaries)
 * could find a thread at one of their boundaries, inside the range, or
 * returning to one.  So, between steps 1 and 2 (the int3s guard the first
 * bytes from step 1 on: a thread found outside a change can come back
 * into it only through a return address):
 *
 *   H1. Look at every thread (but those stopped already).  One that waits
 *       in the kernel (seen so before or after the int3s): its PC and
 *       stack (H2), then its schedstat again: if it was put on a CPU
 *       since it was seen, it may have run, and is looked at again.  One
 *       that waits at an int3 of this batch (the SIGTRAP
 *       handler's futex) goes on from that int3, with the stack it
 *       trapped with (fl_pokes.waiting).  One that computes was stopped
 *       before step 1; any other that runs is watched for PATIENCE_US
 *       (one that has just woken is soon back in the kernel); then it is
 *       stopped: the handshake's signal (a real-time one: see
 *       struct fl_park for why not SIGTRAP) carrying this try's value;
 *       its handler writes where the thread goes on (its PC, stack
 *       pointer and thread pointer, or those of the handler of ours it
 *       was in), rings fl_park.reported and waits (FL_PARK_YIELDS yields,
 *       then asleep on fl_park.bell).  List the threads again and do the same with
 *       the new ones, until no thread is missing.  Nothing is allocated
 *       meanwhile: a stopped thread may hold malloc's lock.
 *   H2. Check each thread: its PC must not be inside a change (its first
 *       byte is fine: the thread runs the new instruction from there),
 *       and no word of its stack, from its stack pointer to the top of
 *       its frames, may point inside one (a return address would land in
 *       the middle of the new code).  The patching thread's stack too.
 *       The top of a thread's frames is its thread block (glibc puts it
 *       above the stack, also a stack the application gave), known to a
 *       stopped thread and found by its signature in a thread that waits;
 *       without one, the end of the stack's mapping.
 *   H3. Steps 2 and 3 with the stopped threads still stopped; then they
 *       go (running cleared, then bell rung).  Why that is enough: a looked-at thread that wakes goes on
 *       from where it was checked, outside the changes, and can reach one
 *       only through its first byte (an int3 until step 3) or by a return
 *       address, which H2 saw on its stack.
 *   A try that fails lets the threads go (the int3s are taken back first:
 *   the tails were not touched), waits and tries again, up to PARK_TRIES
 *   times; then refuses (-EBUSY) naming the thread and why.  The wait
 *   starts at 20 us and doubles up to a millisecond.  A thread's signal
 *   mask that refuses is given MASK_PATIENCE_MS, or the whole PARK_WAIT_MS
 *   when the mask is glibc's own (GLIBC_MASK: a thread being created).
 *
 * The race this leaves: a thread seen running (for the kernel, runnable:
 * also one that has just woken and not yet left its call) may be in a
 * system call when the signal reaches it, and a call that is not
 * restarted returns EINTR.  Watching it for PATIENCE_US before it is
 * stopped, and threads at an int3 that sleep rather than spin, make that
 * rare (selftests/patch/eintr_race_is_counted counts what is left).
 *
 * The stack scan is conservative: a stale word that happens to point
 * inside a change refuses it too, which is safe.  It does not see
 * frames on another stack than the one the thread is on (an alternate
 * signal stack's interrupted code): say so in the man page.
 *
 * The patching thread blocks every signal while it patches: a handler of
 * its own that ran into a site would wait for the patch forever.  A fork
 * waits until the patch is done (fork_prepare below); a child forked
 * without glibc's fork (no atfork handlers) finds its slots busy with no
 * patcher in its memory, and the trap handler puts the old bytes back.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
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
#include <ucontext.h>
#include <unistd.h>

#include <Zydis/Zydis.h>

#include <faultline/patch.h>

#include "core/fmt.h"
#include "core/env.h"
#include "dispatch/dispatch.h"
#include "format/diag.h"
#include "patch/internal.h"
#include "patch/maps.h"
#include "patch/threads.h"
#include "table/libunwind.h"
#include "unw_arch.h"

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

/* The child's threads are others: what the census remembers is forgotten. */
static void fork_child(void)
{
	fl_threads_forget();
	fork_done();
}

static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
static int atfork_err;

static void atfork_register(void)
{
	atfork_err = -pthread_atfork(fork_prepare, fork_done, fork_child);
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
	const char *env = fl_env("FAULTLINE_HANDSHAKE_SIGNAL");
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

/*
 * Where glibc keeps a thread's id in its thread block, learnt from this
 * thread's: the block starts with two pointers to itself (tcb at 0, self
 * at 16), and somewhere in its first kilobytes holds the tid.  0: not
 * learnt (the stack scans of waiting threads then go to their mapping's
 * end).  With the signature, a scan of a thread's stack stops at its
 * thread block, the top of its frames.
 */
static size_t tcb_tid_offset;

static void learn_tcb(void)
{
	const uint8_t *tcb = (const uint8_t *)pthread_self();
	int32_t tid = gettid();
	uint64_t w0, w2;

	memcpy(&w0, tcb, 8);
	memcpy(&w2, tcb + 16, 8);
	if (w0 != (uint64_t)(uintptr_t)tcb || w2 != w0)
		return;
	for (size_t off = 24; off + 4 <= 4096; off += 4) {
		int32_t v;

		memcpy(&v, tcb + off, 4);
		if (v == tid) {
			tcb_tid_offset = off;
			return;
		}
	}
}

/* The page fork wipes (fl_pokes.here): 1 in the memory of a patcher. */
static int here_init(struct fl_diag *diag)
{
	long page = sysconf(_SC_PAGESIZE);
	void *p;

	if (fl_pokes.here)
		return 0;
	p = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return fl_diag_say(diag, -errno, "mmap: %s", strerror(errno));
	if (madvise(p, (size_t)page, MADV_WIPEONFORK) != 0) {
		int err = -errno;

		munmap(p, (size_t)page);
		return fl_diag_say(diag, err, "madvise(MADV_WIPEONFORK) (Linux 4.14 or later): %s",
				   strerror(-err));
	}
	fl_pokes.here = p;
	/* Release: pairs with the handler's acquire, after it found a busy slot. */
	atomic_store_explicit(fl_pokes.here, 1, memory_order_release);
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
	err = here_init(diag);
	if (err)
		goto out;
	learn_tcb();
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

/*
 * Every thread of the process executes a serializing instruction.
 * Returns 0 or -errno (a seccomp filter that denies membarrier: EPERM).
 */
static int serialize(void)
{
	int err = 0;

	while (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE) != 0) {
		if (errno != EINTR) {
			err = -errno;
			break;
		}
	}
	return err;
}

/* A batch fits the slots even when the one before has not been freed yet. */
_Static_assert(FL_PATCH_MAX_BATCH <= FL_POKE_SLOTS, "a batch takes a slot per site");

/* A page made writable for the patch, and the protection to give back. */
struct page {
	uint64_t addr;
	int prot;
};

/* What the census decided for a thread (fl_thread.what). */
enum {
	T_NEW,		/* listed, not decided yet */
	T_ALONE,	/* not disturbed: faultline's own, or nothing to fear */
	T_LOOKED,	/* waits in the kernel: looked at, checked, not stopped */
	T_RUNS,		/* seen not waiting: watched a moment (look_all) */
	T_STOP,		/* runs: to be stopped by the handshake's signal */
	T_SENT,		/* the signal sent */
};

/* The most frames of the patching thread that are walked exactly. */
#define SELF_FRAMES 256

struct batch {
	const struct fl_patch *p;
	size_t n;
	struct page pages[2 * FL_PATCH_MAX_BATCH];
	size_t num_pages;
	size_t slots[FL_PATCH_MAX_BATCH];
	/* A change moves instruction boundaries: every thread is checked. */
	bool moves;
	/*
	 * fl_patch_quiesce_locked: nothing is written; the handshake only
	 * proves that no thread is in the ranges (their first byte included)
	 * nor returns into them.
	 */
	bool quiesce;
	unsigned flags;		/* FL_PATCH_* of patch/internal.h */
	/* The int3s of step 1 are in place. */
	bool int3s;
	/*
	 * The last try was refused by a thread's signal mask; by_glibc: a
	 * mask of glibc's own (below), which it holds only for a moment.
	 */
	bool by_mask, by_glibc;
	/* The threads stopped by this try, in census order; the try's handshake. */
	size_t stopped;
	uint64_t gen;
	struct fl_census census;
	/*
	 * The patching thread's return addresses, walked exactly before the
	 * change (self_walk); self_walked false: its stack is scanned.
	 */
	bool self_walked;
	size_t nself;
	uint64_t self[SELF_FRAMES];
	uint64_t self_sp;	/* the last frame walked: scanned from there up */
	char why[200];
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
	if (b->flags & FL_PATCH_CHECK_THREADS) {
		b->moves = true;
		return 0;
	}
	if (b->flags & FL_PATCH_ENTERED_AT_START)
		return 0;
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

/* Takes n free slots. */
static int slots_take(struct batch *b)
{
	size_t got = 0;

	for (size_t i = 0; i < FL_POKE_SLOTS && got < b->n; i++)
		if (!atomic_load_explicit(&fl_pokes.slots[i].addr, memory_order_relaxed))
			b->slots[got++] = i;
	return got == b->n ? 0 : -EAGAIN;
}

static int page_prot(const struct batch *b, uint64_t addr, uint64_t pagesz)
{
	for (size_t i = 0; i < b->num_pages; i++)
		if (b->pages[i].addr == (addr & ~(pagesz - 1)))
			return b->pages[i].prot;
	return PROT_READ | PROT_EXEC;
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

/* fl_poked (dispatch.h): the same hash as the handler's. */
static uint64_t poked_hash(uint64_t addr)
{
	return (addr * 0x9e3779b97f4a7c15ull) >> 17;
}

/*
 * fl_poked's writers: the patcher (poked_add, under the patch lock) and
 * fl_poked_forget (under the table's lock, where the patch lock may not
 * be waited for).  Held only for the table's own work.
 */
static pthread_mutex_t poked_lock = PTHREAD_MUTEX_INITIALIZER;

static int poked_add_locked(uint64_t addr);

/*
 * Adds addr to the addresses patched.  Returns 0 or -ENOMEM.  Under the
 * patch lock, before addr's slot is published.
 */
static int poked_add(uint64_t addr)
{
	int err;

	pthread_mutex_lock(&poked_lock);
	err = poked_add_locked(addr);
	pthread_mutex_unlock(&poked_lock);
	return err;
}

void fl_poked_forget(uint64_t start, uint64_t end)
{
	pthread_mutex_lock(&poked_lock);
	for (size_t k = 0; k < FL_POKED_TABLES; k++) {
		_Atomic uint64_t *t = atomic_load_explicit(&fl_poked.table[k], memory_order_relaxed);

		if (!t)
			break;
		/*
		 * A tombstone, not 0: the handler's probes for the addresses
		 * after it go on past it.  It still counts as used.
		 */
		for (size_t i = 0; i < ((size_t)FL_POKED_FIRST << k); i++) {
			uint64_t v = atomic_load_explicit(&t[i], memory_order_relaxed);

			if (v >= start && v < end && v != FL_POKED_GONE)
				atomic_store_explicit(&t[i], FL_POKED_GONE, memory_order_relaxed);
		}
	}
	pthread_mutex_unlock(&poked_lock);
}

static int poked_add_locked(uint64_t addr)
{
	size_t k = 0, cap, mask;
	_Atomic uint64_t *t;

	if (fl_poked_has(addr))
		return 0;
	while (k + 1 < FL_POKED_TABLES && atomic_load_explicit(&fl_poked.table[k + 1],
							       memory_order_relaxed))
		k++;
	t = atomic_load_explicit(&fl_poked.table[k], memory_order_relaxed);
	/* At most half full: the handler's probe always ends at a 0. */
	if (!t || fl_poked.used[k] + 1 > ((size_t)FL_POKED_FIRST << k) / 2) {
		if (t)
			k++;
		if (k == FL_POKED_TABLES)
			return -ENOMEM;
		t = mmap(NULL, ((size_t)FL_POKED_FIRST << k) * sizeof(*t), PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (t == MAP_FAILED)
			return -ENOMEM;
		/* Release: the zeroed table before the handler's acquire of it. */
		atomic_store_explicit(&fl_poked.table[k], t, memory_order_release);
	}
	cap = (size_t)FL_POKED_FIRST << k;
	mask = cap - 1;
	for (size_t i = poked_hash(addr) & mask;; i = (i + 1) & mask)
		if (!atomic_load_explicit(&t[i], memory_order_relaxed)) {
			atomic_store_explicit(&t[i], addr, memory_order_relaxed);
			break;
		}
	fl_poked.used[k]++;
	return 0;
}

/*
 * Step 0's slots: each site's address and old bytes, for the handler
 * (and a forked child).  Returns 0 or -ENOMEM (said in b->why).
 */
static int slots_publish(struct batch *b, uint64_t pagesz)
{
	/*
	 * A child forked in the middle of a patch (no atfork handler ran)
	 * that patches itself: its inherited slots are orphans, put back.
	 */
	if (!atomic_load_explicit(fl_pokes.here, memory_order_relaxed)) {
		fl_trap_orphans_undo();
		/* Release: pairs with the handler's acquire, after it found a busy slot. */
		atomic_store_explicit(fl_pokes.here, 1, memory_order_release);
	}
	for (size_t i = 0; i < b->n; i++) {
		struct fl_poke_slot *s = &fl_pokes.slots[b->slots[i]];
		uint64_t a = (uint64_t)(uintptr_t)b->p[i].addr;

		if (poked_add(a) != 0) {
			fl_fmt(b->why, sizeof(b->why), "out of memory for the patched addresses");
			while (i-- > 0)
				atomic_store_explicit(&fl_pokes.slots[b->slots[i]].addr, 0,
						      memory_order_relaxed);
			return -ENOMEM;
		}
		s->len = (uint32_t)b->p[i].len;
		memcpy(s->old, b->p[i].old_bytes, b->p[i].len);
		s->prot[0] = page_prot(b, a, pagesz);
		s->prot[1] = page_prot(b, a + b->p[i].len - 1, pagesz);
		/* Release: len, old and prot before the handler's acquire of addr. */
		atomic_store_explicit(&s->addr, a, memory_order_release);
	}
	return 0;
}

/* The threads waiting at the int3s go back to them (they are gone, or taken back). */
static void wake_waiters(void)
{
	atomic_fetch_add_explicit(&fl_pokes.done, 1, memory_order_seq_cst);
	if (atomic_load_explicit(&fl_pokes.waiters, memory_order_seq_cst))
		syscall(SYS_futex, &fl_pokes.done, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
}

/*
 * Step 4's: the slots go; a trap on its way finds the site in fl_poked.
 * The threads that wait at the int3s are woken.
 */
static void slots_free(const struct batch *b)
{
	for (size_t i = 0; i < b->n; i++)
		atomic_store_explicit(&fl_pokes.slots[b->slots[i]].addr, 0, memory_order_release);
	wake_waiters();
}


/* Step 1: int3s, then the serialization that tests membarrier. */
static int write_int3s(struct batch *b)
{
	int err;

	for (size_t i = 0; i < b->n; i++)
		write_byte(b->p[i].addr, INT3);
	err = serialize();
	if (err) {
		/*
		 * The tails are the old ones: with its old first byte back each
		 * site is its old instruction.  A thread that still sees the
		 * int3 traps, and is sent back to it by the handler.
		 */
		for (size_t i = 0; i < b->n; i++)
			write_byte(b->p[i].addr, ((const uint8_t *)b->p[i].old_bytes)[0]);
		fl_fmt(b->why, sizeof(b->why), "membarrier(PRIVATE_EXPEDITED_SYNC_CORE): %s "
		       "(a seccomp filter?): no thread can be made to see a change whole",
		       strerror(-err));
	}
	return err;
}

/* A try that fails after step 1: the int3s go, the tails were not touched. */
static void unwrite_int3s(struct batch *b)
{
	for (size_t i = 0; i < b->n; i++)
		write_byte(b->p[i].addr, ((const uint8_t *)b->p[i].old_bytes)[0]);
	serialize();
	wake_waiters();
}

/* Steps 2 and 3. */
static void write_rest(struct batch *b)
{
	for (size_t i = 0; i < b->n; i++)
		for (size_t k = 1; k < b->p[i].len; k++)
			write_byte((uint8_t *)b->p[i].addr + k,
				   ((const uint8_t *)b->p[i].new_bytes)[k]);
	/*
	 * membarrier answered in step 1: it cannot fail now but for a filter
	 * installed since, and then the sites are best finished anyway (each
	 * thread that runs one goes through its int3, and is serialized by
	 * the kernel's return from the trap).
	 */
	serialize();
	for (size_t i = 0; i < b->n; i++)
		write_byte(b->p[i].addr, ((const uint8_t *)b->p[i].new_bytes)[0]);
	serialize();
}

/* The handshake (H1 to H3 above). */
#define PARK_TRIES 100
#define MASK_PATIENCE_MS 20
/*
 * glibc blocks every signal, its own two (SIGCANCEL 32, SIGSETXID 33)
 * included, only inside itself: a new thread from clone until
 * start_thread sets the mask it inherits, pthread_create and posix_spawn
 * around their clone.  The application cannot block those two (its
 * pthread_sigmask and sigprocmask take them out of the set), so a mask
 * holding both is glibc's, and gone soon: it is given the handshake's
 * whole wait, not MASK_PATIENCE_MS, and its tries are not counted (a new
 * thread on a busy machine can wait many milliseconds for a CPU).
 */
#define GLIBC_MASK ((1ULL << (32 - 1)) | (1ULL << (33 - 1)))
#define PARK_WAIT_MS 2000
#define PARK_WAIT_MAX_MS 30000

static uint64_t park_gen;
/* The last try signalled a thread that had not stopped when it ended. */
static bool park_unfinished;
static _Atomic uint64_t changes_made;

uint64_t fl_patch_changes_made(void)
{
	return atomic_load_explicit(&changes_made, memory_order_relaxed);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * Whether v points inside a change: after its first byte, before its end.
 * A word of a stack (stack) is not inside at the second byte while the
 * int3 is there: that is where a thread that hit the int3 was interrupted
 * (its SIGTRAP's context, on its stack while the handler sends it back to
 * the first byte), never a return address (a call that ended there would
 * have started before the first byte, which is an instruction's).
 */
static bool inside(const struct batch *b, uint64_t v, bool stack, size_t *which)
{
	for (size_t i = 0; i < b->n; i++) {
		uint64_t a = (uint64_t)(uintptr_t)b->p[i].addr;

		if (stack && b->int3s && v == a + 1)
			continue;
		if ((v > a || (b->quiesce && v == a)) && v < a + b->p[i].len) {
			*which = i;
			return true;
		}
	}
	return false;
}

/*
 * Reads len bytes at addr of this process into out, stopping at a page
 * that is not there.  Returns how many it read.  process_vm_readv on this
 * process does not fault; a kernel or a sandbox without it (ENOSYS,
 * EPERM): read in place (*direct set), as the mapping was listed.
 */
static size_t read_mem(uint64_t addr, void *out, size_t len, bool *direct)
{
	struct iovec local = { out, len }, remote = { (void *)(uintptr_t)addr, len };
	ssize_t got;

	if (!*direct) {
		got = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
		if (got >= 0)
			return (size_t)got;
		if (errno != ENOSYS && errno != EPERM)
			return 0;
		*direct = true;
	}
	for (size_t k = 0; k + 8 <= len; k += 8)
		((uint64_t *)out)[k / 8] = *(const volatile uint64_t *)(uintptr_t)(addr + k);
	return len & ~(size_t)7;
}

/* Whether the words at w (w[0] at address at) open tid's thread block. */
static bool thread_block_at(const uint64_t *w, size_t words, uint64_t at, int32_t tid,
			    bool *direct)
{
	int32_t v = 0;

	if (!tcb_tid_offset || !tid || words < 3 || w[0] != at || w[2] != at)
		return false;
	return read_mem(at + tcb_tid_offset, &v, 4, direct) >= 4 && v == tid;
}

/*
 * Scans the stack from sp up to top (or, when top is 0, to the end of its
 * mapping, or to the thread block of tid found on the way) for a word
 * inside a change.  Returns 1 (found, at *at), 0, or -1 when sp is in no
 * mapping.
 *
 * The mapping is as /proc/self/maps listed it, and the kernel merges
 * adjacent anonymous mappings: a stack (a signal stack in the heap, a
 * thread's stack next to other memory) may share its entry with memory
 * that another thread unmaps meanwhile (the allocator's).  So the words
 * are copied (read_mem), which stops at a page no longer there instead
 * of faulting; its end ends the scan.
 */
__attribute__((no_sanitize_address))	/* other threads' frames hold ASan's redzones */
static int scan_stack(const struct batch *b, const struct fl_maps *maps, uint64_t sp,
		      uint64_t top, int32_t tid, uint64_t *at, size_t *which)
{
	const struct fl_mapping *m = fl_maps_find(maps, sp);
	uint64_t chunk[512];
	uint64_t w = sp & ~(uint64_t)7, end;
	bool direct = false;

	if (!m)
		return -1;
	end = top > sp && top < m->end ? top : m->end;
	while (w + 8 <= end) {
		size_t want = end - w < sizeof(chunk) ? (size_t)(end - w) & ~(size_t)7 :
			sizeof(chunk);
		size_t got = read_mem(w, chunk, want, &direct) / 8;

		if (got == 0)
			return 0;
		for (size_t k = 0; k < got; k++) {
			if (!top && thread_block_at(chunk + k, got - k, w + 8 * k, tid, &direct))
				return 0;
			if (inside(b, chunk[k], true, which)) {
				*at = w + 8 * k;
				return 1;
			}
		}
		w += 8 * got;
	}
	return 0;
}

/*
 * H2 for one thread at pc with sp (tp: its thread pointer, 0 if not
 * known).  Returns 0 when it is clear, else a reason in b->why: -EAGAIN
 * (try again), -ESTALE (the maps are older than its stack: read them
 * again).
 */
static int check_thread(struct batch *b, const struct fl_maps *maps, int32_t tid, uint64_t pc,
			uint64_t sp, uint64_t tp)
{
	uint64_t at;
	size_t which;
	int r;

	if (inside(b, pc, false, &which)) {
		fl_fmt(b->why, sizeof(b->why), "thread %d is at 0x%llx, inside change %zu",
		       (int)tid, (unsigned long long)pc, which);
		return -EAGAIN;
	}
	r = scan_stack(b, maps, sp, tp, tid, &at, &which);
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
	return 0;
}

/*
 * Looks at t: whether it waits in the kernel, and where, with its runs
 * read just before (t->seen...): by the listing that has just added it
 * (listed), or now.  Returns 0, -ESRCH (exited) or -errno.
 */
static int observe(struct batch *b, struct fl_thread *t, bool listed)
{
	uint64_t listed_runs = t->runs;
	int err = 0;

	/*
	 * Remembered waiting, and not on a CPU since: where it waits is known
	 * (once: looked at again, it is read again).
	 */
	if (t->remembered && t->waiting)
		t->remembered = false;
	else {
		t->remembered = false;
		if (!listed)
			err = fl_thread_runs(&b->census, t);
		if (!err)
			err = fl_thread_look(&b->census, t);
		/* Its status too is this moment's if it did not run since the listing. */
		if (!err && t->runs == listed_runs)
			fl_thread_remember(t);
	}
	if (!err && t->waiting) {
		t->seen = true;
		t->seen_pc = t->pc;
		t->seen_sp = t->sp;
		t->seen_runs = t->runs;
	}
	return err;
}

/*
 * A running thread that is to be stopped: refused while it blocks the
 * handshake's signal (a thread that starts, or leaves an earlier
 * handshake's handler, does for a moment).  Returns T_STOP, or -EAGAIN
 * with b->why.
 */
static int stoppable(struct batch *b, const struct fl_thread *t)
{
	bool traps_blocked = fl_sigset_has(t->blocked, SIGTRAP) && !b->quiesce;

	if (!fl_sigset_has(t->blocked, fl_park.signo))
		return T_STOP;
	fl_fmt(b->why, sizeof(b->why), "thread %d runs with the handshake's signal %d "
	       "blocked%s: it cannot be stopped", (int)t->tid, fl_park.signo,
	       traps_blocked ? " and SIGTRAP blocked (it must not meet an int3)" : "");
	b->by_mask = true;
	b->by_glibc |= (t->blocked & GLIBC_MASK) == GLIBC_MASK;
	return -EAGAIN;
}

/*
 * The census's first decision for t (its status read), before the int3s:
 * T_ALONE, T_STOP (it blocks SIGTRAP and runs: stopped for the whole
 * change), or T_NEW (looked at after the int3s if the change needs it);
 * or -EAGAIN (try again) with the reason in b->why.
 */
static int decide_first(struct batch *b, struct fl_thread *t)
{
	bool traps_blocked = fl_sigset_has(t->blocked, SIGTRAP) && !b->quiesce;
	int err;

	if (fl_park_is_exempt(t->tid))
		return T_ALONE;
	if (!traps_blocked && !(b->moves || b->quiesce))
		return T_ALONE;
	/*
	 * One that computes (the census, threads.h) is in no call that a
	 * signal could cut short: stopped at once, not looked at or watched.
	 */
	if (t->computes && !fl_sigset_has(t->blocked, fl_park.signo))
		return T_STOP;
	if (!traps_blocked) {
		/* Seen before the int3s: if it does not run until after, that is where it is. */
		err = observe(b, t, true);
		if (err && err != -ESRCH)
			fl_fmt(b->why, sizeof(b->why), "thread %d: %s%s", (int)t->tid, strerror(-err),
			       err == -ENOTSUP ? " (its schedstat counts nothing: a kernel without "
			       "CONFIG_SCHED_INFO, where a thread cannot be looked at)" : "");
		return err == -ESRCH ? T_ALONE : err ? err : T_NEW;
	}
	err = fl_thread_look(&b->census, t);
	if (err == -ESRCH)
		return T_ALONE;		/* it has exited */
	if (err) {
		fl_fmt(b->why, sizeof(b->why), "thread %d: its syscall file: %s", (int)t->tid,
		       strerror(-err));
		return err;
	}
	if (t->waiting) {
		fl_fmt(b->why, sizeof(b->why), "thread %d blocks SIGTRAP and waits in the kernel, "
		       "where it is not stopped: it could wake into an int3, which would kill "
		       "the process", (int)t->tid);
		b->by_mask = true;
		b->by_glibc |= (t->blocked & GLIBC_MASK) == GLIBC_MASK;
		return -EAGAIN;
	}
	return stoppable(b, t);
}

/*
 * After the int3s: where t goes on, checked (H2).  A thread seen waiting
 * in the kernel (now, or earlier in this try) that has not been put on a
 * CPU since goes on from where it was seen, whatever its state says (one
 * that has just woken is runnable, yet has not left its call: a signal
 * would cut that call short).  Its stack is scanned, then its runs read
 * again: if they moved, it ran meanwhile and is looked at again.  Returns
 * T_LOOKED, T_ALONE (exited) or T_RUNS (it runs, or ran since), or -errno
 * with b->why.
 */
static int look_at(struct batch *b, const struct fl_maps *maps, struct fl_thread *t)
{
	for (int look = 0; look < 3; look++) {
		uint64_t pc, sp;
		int err = 0, checked;

		if (!t->seen) {
			err = observe(b, t, false);
			if (!err && !t->seen)
				return T_RUNS;
		}
		if (!err) {
			pc = t->seen_pc;
			sp = t->seen_sp;
			/* Waiting at an int3 of this batch: it goes on from there. */
			fl_trap_waiting(t->tid, &pc, &sp);
			checked = check_thread(b, maps, t->tid, pc, sp, 0);
			/*
			 * Then its run count: the same as when it was seen, and it
			 * has not been on a CPU since, so what was checked is where
			 * it goes on (a refusal too); otherwise, looked at again.
			 */
			err = fl_thread_runs(&b->census, t);
			if (!err && t->runs == t->seen_runs)
				return checked ? checked : T_LOOKED;
			t->seen = false;
		}
		if (err == -ESRCH)
			return T_ALONE;
		if (err) {
			fl_fmt(b->why, sizeof(b->why), "thread %d: %s", (int)t->tid, strerror(-err));
			return err;
		}
	}
	return T_RUNS;
}

/*
 * How long the threads that do not wait are watched before they are
 * stopped (PATIENCE_US, and at least PATIENCE_LOOKS looks each).
 */
#define PATIENCE_US 1000
#define PATIENCE_LOOKS 4

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/*
 * The threads of the census from index from that were not looked at yet
 * (T_NEW): looked at; those that do not wait are watched a moment, then
 * are to be stopped (T_STOP).
 *
 * Why the moment: "running" (the syscall file) means runnable, and a
 * thread whose sleep has just ended is runnable before it has left the
 * kernel; a signal then cuts the call short all the same (poll returns
 * EINTR though its time is up).  Watched while it gets a CPU, such a
 * thread is soon back in the kernel, in its next call, where it is
 * looked at; one that runs code goes on running, and is stopped.
 * Returns 0 or -errno with b->why.
 */
static int look_all(struct batch *b, const struct fl_maps *maps, size_t from)
{
	struct timespec look = { 0, PATIENCE_US * 1000 / PATIENCE_LOOKS };
	uint64_t until = 0;
	bool runs = true;

	for (int round = 0; runs; round++) {
		runs = false;
		for (size_t i = from; i < b->census.n; i++) {
			struct fl_thread *t = &b->census.t[i];
			int what;

			if (t->what != T_NEW && t->what != T_RUNS)
				continue;
			what = look_at(b, maps, t);
			if (what < 0)
				return what;
			t->what = what;
			runs |= what == T_RUNS;
		}
		if (!runs)
			break;
		if (round == 0)
			until = now_us() + PATIENCE_US;
		else if (round + 1 >= PATIENCE_LOOKS && now_us() >= until)
			break;
		/*
		 * A sleep, not sched_yield: with more runnable threads than
		 * CPUs, a yield gives each of them its whole slice first.
		 */
		nanosleep(&look, NULL);
	}
	for (size_t i = from; i < b->census.n; i++) {
		struct fl_thread *t = &b->census.t[i];
		int what;

		if (t->what != T_RUNS)
			continue;
		what = stoppable(b, t);
		if (what < 0)
			return what;
		t->what = what;
	}
	return 0;
}

/*
 * How long the patcher yields, before it sleeps, while it waits for the
 * threads it signalled.  Why not sleep at once: a thread that wakes does
 * not take the CPU from one that runs before the slice of that one is
 * over (milliseconds), and a sleep that each report ends would cost that
 * many times over; the threads signalled mostly stop within
 * microseconds.
 */
#define STOP_SPIN_US 2000

/*
 * Asleep until a stopped thread reports after seen (fl_park.reported read
 * before the count), 1 ms at most: the caller counts again either way.
 */
static void wait_reported(uint32_t seen)
{
	struct timespec ms = { 0, 1000 * 1000 };

	syscall(SYS_futex, &fl_park.reported, FUTEX_WAIT_PRIVATE, seen, &ms, NULL, 0);
}

/* Whether who[i] is a stop of handshake gen (pc, sp and tp written). */
static int32_t stopped_for(uint32_t i, uint64_t gen)
{
	/* Acquire: pairs with the handler's release of tid (trap.c). */
	int32_t tid = atomic_load_explicit(&fl_park.who[i].tid, memory_order_acquire);

	return tid && atomic_load_explicit(&fl_park.who[i].gen, memory_order_relaxed) == gen ?
		tid : 0;
}

/* How many of the threads signalled have written their PC and stack pointer. */
static size_t threads_stopped(uint64_t gen)
{
	uint32_t arrived = atomic_load_explicit(&fl_park.arrived, memory_order_acquire);
	size_t have = 0;

	for (uint32_t i = 0; i < arrived && i < FL_PARK_MAX; i++)
		have += stopped_for(i, gen) != 0;
	return have;
}

/* A thread signalled that has not arrived, or NULL. */
static struct fl_thread *thread_not_stopped(struct batch *b)
{
	for (size_t i = 0; i < b->census.n; i++) {
		struct fl_thread *t = &b->census.t[i];
		bool found = false;

		if (t->what != T_SENT)
			continue;
		for (uint32_t k = 0; k < FL_PARK_MAX && !found; k++)
			found = stopped_for(k, b->gen) == t->tid;
		if (!found)
			return t;
	}
	return NULL;
}

enum late { LATE_WAIT, LATE_GONE, LATE_REFUSE };

/* A thread that has not stopped after PARK_WAIT_MS: whether to wait for it longer. */
static enum late late_thread(struct batch *b, struct fl_thread *t, size_t stopped)
{
	int err;

	/* Someone is still leaving an earlier handshake's handler: it comes. */
	if (atomic_load_explicit(&fl_park.inside, memory_order_relaxed) > stopped)
		return LATE_WAIT;
	err = fl_thread_status(&b->census, t);
	if (err)
		return LATE_GONE;
	if (t->state == 'T' || t->state == 't' || fl_sigset_has(t->blocked, fl_park.signo))
		return LATE_REFUSE;
	return LATE_WAIT;
}

/* Sends the handshake's signal of gen to t.  Returns 0, -ESRCH (gone) or -errno. */
static int send_stop(const struct fl_thread *t, uint64_t gen)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	si.si_signo = fl_park.signo;
	si.si_code = SI_QUEUE;
	si.si_pid = getpid();
	si.si_uid = getuid();
	si.si_value.sival_ptr = (void *)(uintptr_t)(fl_park.key + gen);
	if (syscall(SYS_rt_tgsigqueueinfo, getpid(), t->tid, fl_park.signo, &si) != 0)
		return -errno;
	return 0;
}

/*
 * H1's stop: signals the threads decided T_STOP and waits until every
 * thread signalled has stopped.  Returns 0 or -errno with b->why.
 */
static int stop_decided(struct batch *b, uint64_t gen)
{
	uint64_t start = now_ms(), spin_until = now_us() + STOP_SPIN_US;
	int err;

	for (size_t i = 0; i < b->census.n; i++) {
		struct fl_thread *t = &b->census.t[i];

		if (t->what != T_STOP)
			continue;
		err = send_stop(t, gen);
		if (err == -ESRCH && fl_thread_status(&b->census, t) == -ESRCH) {
			t->what = T_ALONE;	/* it has exited */
			continue;
		}
		if (err) {
			/* Not gone, yet not to be signalled: not this process's tid. */
			fl_fmt(b->why, sizeof(b->why), "signalling thread %d: %s", (int)t->tid,
			       strerror(-err));
			return err == -ESRCH ? -ENOTSUP : err;
		}
		t->what = T_SENT;
		b->stopped++;
	}
	for (;;) {
		uint32_t seen = atomic_load_explicit(&fl_park.reported, memory_order_acquire);
		uint64_t now = now_ms();
		struct fl_thread *late;

		if (threads_stopped(b->gen) >= b->stopped)
			break;
		if (now_us() < spin_until) {
			sched_yield();
			continue;
		}
		if (now <= start + PARK_WAIT_MS) {
			wait_reported(seen);
			continue;
		}
		late = thread_not_stopped(b);
		if (!late) {
			wait_reported(seen);
			continue;
		}
		switch (now > start + PARK_WAIT_MAX_MS ? LATE_REFUSE :
			late_thread(b, late, threads_stopped(b->gen))) {
		case LATE_GONE:
			late->what = T_ALONE;
			b->stopped--;
			continue;
		case LATE_WAIT:
			wait_reported(seen);
			continue;
		case LATE_REFUSE:
			break;
		}
		fl_fmt(b->why, sizeof(b->why), "thread %d did not stop within %d ms (the "
		       "handshake's signal %d blocked, or stopped)", (int)late->tid,
		       (int)(now - start), fl_park.signo);
		return -EAGAIN;
	}
	return 0;
}

/*
 * The patching thread's own frames, walked with libunwind before anything
 * is stopped (the walk may take the loader's lock, which a stopped thread
 * could hold).  Exact, unlike the scan of another thread's stack: its
 * stack holds code addresses as data (a heal's site, the caller's
 * arguments), and a site in a function's first bytes would then look like
 * a return address into a relocation's entry.  Frames deeper than the
 * walk's are faultline's own, which no change touches.  libunwind ends a
 * walk also where it finds no unwind information and no frame pointer,
 * so what lies above the last frame walked is still scanned word by word
 * (check_stopped); a walk that fails leaves the whole scan to it.
 */
static void self_walk(struct batch *b)
{
	unw_context_t uc;
	unw_cursor_t c;
	unw_word_t ip;

	b->self_walked = false;
	b->nself = 0;
	if (fl_libunwind_load() != 0 || fl_unw_capture(&uc) != 0 ||
	    fl_libunwind->init_local(&c, &uc) < 0)
		return;
	for (;;) {
		int r = fl_libunwind->step(&c);
		unw_word_t sp;

		if (r == 0) {
			b->self_walked = true;
			return;
		}
		if (r < 0 || b->nself == SELF_FRAMES ||
		    fl_libunwind->get_reg(&c, UNW_REG_IP, &ip) < 0 ||
		    fl_libunwind->get_reg(&c, UNW_REG_SP, &sp) < 0)
			return;
		b->self[b->nself++] = (uint64_t)ip;
		b->self_sp = (uint64_t)sp;
	}
}

/* H2 for the stopped threads and this one. */
static int check_stopped(struct batch *b, const struct fl_maps *maps)
{
	uint64_t here = (uint64_t)(uintptr_t)__builtin_frame_address(0), at;
	uint32_t arrived = atomic_load_explicit(&fl_park.arrived, memory_order_acquire);
	size_t which;
	int r;

	for (uint32_t i = 0; i < arrived && i < FL_PARK_MAX; i++) {
		const struct fl_park_slot *s = &fl_park.who[i];
		int32_t tid = stopped_for(i, b->gen);
		int err;

		if (!tid)
			continue;
		if (atomic_load_explicit(&s->unknown, memory_order_relaxed)) {
			fl_fmt(b->why, sizeof(b->why), "thread %d was stopped in a handler on its "
			       "alternate signal stack: where it goes on is not known", (int)tid);
			return -EAGAIN;
		}
		err = check_thread(b, maps, tid, atomic_load_explicit(&s->pc, memory_order_relaxed),
				   atomic_load_explicit(&s->sp, memory_order_relaxed),
				   atomic_load_explicit(&s->tp, memory_order_relaxed));
		if (err)
			return err;
	}
	if (b->self_walked) {
		for (size_t i = 0; i < b->nself; i++)
			if (inside(b, b->self[i], true, &which)) {
				fl_fmt(b->why, sizeof(b->why), "the patching thread would return "
				       "inside change %zu (a return address 0x%llx)", which,
				       (unsigned long long)b->self[i]);
				return -EBUSY;
			}
		if (b->self_sp)
			here = b->self_sp;
	}
	r = scan_stack(b, maps, here, (uint64_t)pthread_self(), gettid(), &at, &which);
	if (r != 0) {
		fl_fmt(b->why, sizeof(b->why), "the patching thread %s change %zu", r > 0 ?
		       "would return inside" : "has its stack in no mapping, near", which);
		return r > 0 ? -EBUSY : -ESTALE;
	}
	return 0;
}

/* decide_first for the threads of the census from index from on. */
static int decide_new(struct batch *b, size_t from)
{
	for (size_t i = from; i < b->census.n; i++) {
		int what = decide_first(b, &b->census.t[i]);

		if (what < 0)
			return what;
		b->census.t[i].what = what;
	}
	return 0;
}

/*
 * One try: the census, the threads stopped and checked as the change
 * needs, and the change written when all is clear (steps 1 to 3).
 * Returns 0 (written, or for quiesce proven) or -errno with b->why.
 */
static int try_once(struct batch *b, const struct fl_maps *maps)
{
	uint64_t gen = ++park_gen;
	bool where = b->moves || b->quiesce;
	size_t from = 0;
	int err;

	/*
	 * The threads an earlier try stopped may still be leaving the
	 * handler: the census knows them (fl_naps' park), and they take this
	 * try's signal once out.  But a try that gave up on a thread it
	 * signalled leaves that signal on its way: the thread may yet report,
	 * into the slots this try is about to clear.  Then the handler is
	 * first let empty (a moment: it only returns).
	 */
	for (uint64_t until = now_ms() + PARK_WAIT_MS; park_unfinished &&
	     atomic_load_explicit(&fl_park.inside, memory_order_relaxed) && now_ms() < until;)
		sched_yield();
	park_unfinished = false;
	b->gen = gen;
	b->census.n = 0;
	b->stopped = 0;
	for (size_t i = 0; i < FL_PARK_MAX; i++)
		atomic_store_explicit(&fl_park.who[i].tid, 0, memory_order_relaxed);
	atomic_store_explicit(&fl_park.arrived, 0, memory_order_relaxed);
	/* Seq_cst: before any signal of gen is sent (the handler's acquire load). */
	atomic_store_explicit(&fl_park.running, gen, memory_order_seq_cst);

	/* The threads that must not meet an int3 first: stopped before step 1. */
	/* A change within one instruction needs to know only who blocks SIGTRAP. */
	err = fl_census_list(&b->census, !where, b->why, sizeof(b->why));
	if (err >= 0)
		err = decide_new(b, 0);
	if (!err)
		err = stop_decided(b, gen);
	if (err)
		goto release;
	if (!b->quiesce) {
		err = write_int3s(b);
		if (err)
			goto release;
		b->int3s = true;
	}
	/*
	 * H1, H2, H3 (the int3s guard the first bytes from here on): until a
	 * listing finds no thread that is not decided.
	 */
	while (where) {
		err = look_all(b, maps, from);
		if (!err)
			err = stop_decided(b, gen);
		if (err)
			goto release;
		from = b->census.n;
		err = fl_census_list(&b->census, false, b->why, sizeof(b->why));
		if (err == 0)
			break;
		if (err < 0 || (err = decide_new(b, from)) != 0)
			goto release;
	}
	if (where) {
		err = check_stopped(b, maps);
		if (err)
			goto release;
	}
	if (!b->quiesce)
		write_rest(b);
release:
	if (err && b->int3s)
		unwrite_int3s(b);
	b->int3s = false;
	park_unfinished = threads_stopped(gen) < b->stopped;
	atomic_store_explicit(&fl_park.running, 0, memory_order_release);
	/* H3: the stopped threads go on (trap.c reads bell, then running). */
	if (b->stopped) {
		atomic_fetch_add_explicit(&fl_park.bell, 1, memory_order_release);
		syscall(SYS_futex, &fl_park.bell, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
	}
	return err;
}

/*
 * The change (or the proof, for quiesce), with its bounded retry.
 * Returns 0 or -errno (said).
 */
static int change(struct batch *b, struct fl_maps *maps, struct fl_diag *diag)
{
	uint64_t masked_since = 0;
	int err = 0, t, counted;

	err = fl_census_open(&b->census, b->why, sizeof(b->why));
	if (err)
		return fl_diag_say(diag, err, "%s: the threads cannot be known: %s",
				   b->quiesce ? "code that no thread may be in" : "a change of code",
				   b->why);
	for (t = 0, counted = 0; counted < PARK_TRIES; t++) {
		long wait_ns = t < 6 ? 20000L << t : 1000000L;
		struct timespec ms = { 0, wait_ns < 1000000L ? wait_ns : 1000000L };

		b->by_mask = b->by_glibc = false;
		err = try_once(b, maps);
		if (err != -EAGAIN && err != -ESTALE)
			break;
		/*
		 * A signal mask that refuses the change is given MASK_PATIENCE_MS
		 * (a thread that leaves a handler blocks signals for a moment),
		 * or PARK_WAIT_MS when it is glibc's (GLIBC_MASK), not the tries
		 * of a thread in the way.
		 */
		if (!b->by_mask)
			masked_since = 0;
		else if (!masked_since)
			masked_since = now_ms();
		else if (now_ms() - masked_since > (b->by_glibc ? PARK_WAIT_MS : MASK_PATIENCE_MS))
			break;
		if (!b->by_glibc)
			counted++;
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
	fl_census_close(&b->census);
	if (err == -EAGAIN || err == -ESTALE)
		err = -EBUSY;
	if (err)
		fl_diag_say(diag, err, "%s, after %d tr%s: %s", b->quiesce ?
			    "code that no thread may be in" : b->moves ?
			    "changes that move instruction boundaries" : "changes",
			    counted < PARK_TRIES ? t + 1 : t, t == 0 ? "y" : "ies", b->why);
	return err;
}

int fl_patch_text_locked(const struct fl_patch *p, size_t n, const struct fl_maps *known,
			 unsigned flags, struct fl_diag *diag)
{
	uint64_t pagesz = (uint64_t)sysconf(_SC_PAGESIZE);
	struct batch *b;
	struct fl_maps maps = { 0 };
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
	b->flags = flags;
	b->census.taskfd = -1;

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
	if (b->moves)
		self_walk(b);
	/* The stacks of the threads are checked against a copy of our own. */
	if (b->moves && known) {
		err = fl_maps_read(&maps);
		if (err) {
			fl_diag_say(diag, err, "reading /proc/self/maps: %s", strerror(-err));
			goto out;
		}
	}
	err = slots_take(b);
	if (err) {
		fl_diag_say(diag, err, "fl_patch_text: no free slot for %zu changes", n);
		goto out;
	}
	err = pages_writable(b, pagesz, diag);
	if (err)
		goto out;
	err = slots_publish(b, pagesz);
	if (err) {
		fl_diag_say(diag, err, "%s", b->why);
		pages_restore(b, pagesz);
	} else {
		err = change(b, &maps, diag);
		if (!err && !b->quiesce)
			atomic_fetch_add_explicit(&changes_made, 1, memory_order_relaxed);
		/*
		 * The pages first: the threads that slots_free wakes (those
		 * that met an int3) would take the CPU from this one while it
		 * still has the pages to restore.
		 */
		pages_restore(b, pagesz);
		slots_free(b);
	}
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
	err = fl_patch_text_locked(p, n, NULL, 0, diag);
	fl_patch_unlock(&old);
	return err;
}

int fl_patch_quiesce_locked(const struct fl_patch *ranges, size_t n, struct fl_diag *diag)
{
	struct batch *b;
	struct fl_maps maps = { 0 };
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
	b->census.taskfd = -1;
	self_walk(b);
	maps.m = NULL;
	err = fl_maps_read(&maps);
	if (err)
		fl_diag_say(diag, err, "reading /proc/self/maps: %s", strerror(-err));
	else
		err = change(b, &maps, diag);
	free(maps.m);
	free(b);
	return err;
}
