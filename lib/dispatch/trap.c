/* SPDX-License-Identifier: MIT */
/*
 * Signal context (see dispatch.h for the rules): a thread that ran into
 * the int3 of an instruction being patched (lib/patch/patch.c states the
 * protocol).
 *
 * The int3 stands at the instruction's first byte from step 1 of the
 * protocol until its new first byte replaces it in step 3.  A thread that
 * executes it takes SIGTRAP with its PC one past it; the instruction is
 * then half written, so the thread must not go on: it waits for the
 * patch (a futex, a moment at most), and goes back to the instruction's
 * first byte.  If the int3 is still there it traps again; once it is gone it
 * runs the new instruction, whole (the new first byte is written last).
 *
 * The same handler stops a thread for the patcher's handshake (see
 * struct fl_park in dispatch.h): the handshake's real-time signal with
 * si_code SI_QUEUE and the value key + gen, from this process.
 *
 * SIGTRAP is the application's but for those int3s: a trap is faultline's
 * only when the kernel raised it for an int3 (si_code SI_KERNEL) at an
 * address being patched now (a busy slot), or at an address that was
 * patched (fl_poked) whose int3 has gone since (the trap was on its way
 * while the patch ended).  Everything else goes down the chain as without
 * faultline: the application's int3 anywhere, its breakpoint at an
 * address patched long ago (an int3 is there), int $3 (its PC is past
 * two bytes, at the 0x03, never an address patched), int1 and single
 * steps (another si_code).  Under a debugger (TracerPid), which may have
 * moved the PC back to the int3 already, a PC at a patched address is
 * taken for that (see fl_trap_claim).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "dispatch/dispatch.h"
#include "uctx.h"

struct fl_pokes fl_pokes;
struct fl_poked fl_poked;
struct fl_park fl_park;

/*
 * The context a stopped thread goes on in when its handlers return: the
 * one a handler of ours interrupted, if the handshake's signal came
 * while it ran (fl_handler_uc), or as it started (the stop's PC is the
 * handler's first instruction: its third argument is that context);
 * else the one the stop interrupted, unless that runs on the alternate
 * signal stack (an application's handler): NULL, not known.
 */
static const ucontext_t *where_it_goes_on(const ucontext_t *uc, int *sig)
{
	stack_t ss;

	*sig = 0;
	if (fl_uc_pc(uc) == (uint64_t)(uintptr_t)fl_dispatch_handler) {
		*sig = (int)fl_uc_arg(uc, 0);
		return (const ucontext_t *)(uintptr_t)fl_uc_arg(uc, 2);
	}
	if (fl_handler_uc) {
		*sig = fl_handler_sig;
		return fl_handler_uc;
	}
	/* The stop's own handler may run on the alternate stack: what it interrupted? */
	if (sigaltstack(NULL, &ss) == 0 && !(ss.ss_flags & SS_DISABLE) && ss.ss_size) {
		uint64_t sp = fl_uc_sp(uc);
		uint64_t lo = (uint64_t)(uintptr_t)ss.ss_sp;

		if (sp >= lo && sp - lo < ss.ss_size)
			return NULL;
	}
	return uc;
}

/* Whether a slot is busy at addr. */
static bool busy_at(uint64_t addr)
{
	for (size_t i = 0; i < FL_POKE_SLOTS; i++)
		if (atomic_load_explicit(&fl_pokes.slots[i].addr, memory_order_acquire) == addr)
			return true;
	return false;
}

__thread int fl_dispatch_claiming __attribute__((tls_model("initial-exec")));
/* The handshake a stop was deferred for (fl_trap_park), 0: none. */
static __thread volatile uint64_t deferred __attribute__((tls_model("initial-exec")));

static void park(uint64_t gen, const ucontext_t *uc);

bool fl_trap_park(int sig, const siginfo_t *si, const ucontext_t *uc)
{
	uint64_t v = (uint64_t)(uintptr_t)si->si_value.sival_ptr, gen;

	if (sig != fl_park.signo || !sig ||
	    si->si_code != SI_QUEUE || si->si_pid != getpid() || !fl_park.key ||
	    v - fl_park.key >= (1ull << 32))
		return false;
	gen = v - fl_park.key;
	if (atomic_load_explicit(&fl_park.running, memory_order_acquire) != gen)
		return true;		/* late: that handshake is over */
	/*
	 * Stopped while a handler of ours decides where a fault goes on
	 * (fl_dispatch_claiming): it would report the faulting PC, which the
	 * claim is about to replace by the handler's.  A change that moves
	 * boundaries around a hot site (a relocation's entry over it) would
	 * find such a thread there on every try.  So the stop waits until the
	 * decision is made (fl_trap_park_deferred): a few instructions.
	 */
	if (fl_dispatch_claiming) {
		deferred = gen;
		return true;
	}
	park(gen, uc);
	return true;
}

void fl_trap_park_deferred(const ucontext_t *uc)
{
	uint64_t gen = deferred, park_bit;

	if (!gen)
		return;
	deferred = 0;
	if (atomic_load_explicit(&fl_park.running, memory_order_acquire) != gen)
		return;
	park_bit = 1ull << (fl_park.signo - 1);
	park(gen, uc);
	/* park blocked the handshake's signal for its handler's sigreturn to restore: no handler here. */
	syscall(SYS_rt_sigprocmask, SIG_UNBLOCK, &park_bit, NULL, sizeof(park_bit));
}

/* Stops this thread for handshake gen until the patcher lets it go. */
static void park(uint64_t gen, const ucontext_t *uc)
{
	/* The handshake's signal in the kernel's 64-bit signal set. */
	uint64_t park_bit = 1ull << (fl_park.signo - 1), i;
	struct fl_nap *me;

	me = fl_nap_self();
	/*
	 * No nesting: the next handshake's signal waits until this handler
	 * has returned (sigreturn restores the interrupted mask).  Otherwise
	 * back-to-back handshakes could stack handler frames on a thread
	 * faster than it unwinds them, until its stack overflows.
	 */
	atomic_fetch_add_explicit(&fl_park.inside, 1, memory_order_relaxed);
	syscall(SYS_rt_sigprocmask, SIG_BLOCK, &park_bit, NULL, sizeof(park_bit));
	/* The census reads these after the mask (lib/patch/threads.c). */
	if (me) {
		atomic_fetch_add_explicit(&me->stops, 1, memory_order_relaxed);
		atomic_store_explicit(&me->park, sigismember(&uc->uc_sigmask, SIGTRAP) == 1 ?
				      FL_NAP_PARKED_TRAP_BLOCKED : FL_NAP_PARKED,
				      memory_order_relaxed);
	}
	i = atomic_fetch_add_explicit(&fl_park.arrived, 1, memory_order_acq_rel);
	if (i < FL_PARK_MAX) {
		struct fl_park_slot *s = &fl_park.who[i];
		int inner;
		const ucontext_t *at = where_it_goes_on(uc, &inner);
		uint64_t pc;

		atomic_store_explicit(&s->unknown, !at, memory_order_relaxed);
		if (!at)
			at = uc;
		pc = fl_uc_pc(at);
		/* A SIGTRAP at a busy slot's int3 goes back to it (fl_trap_claim). */
		if (inner == SIGTRAP && busy_at(pc - 1))
			pc--;
		atomic_store_explicit(&s->pc, pc, memory_order_relaxed);
		atomic_store_explicit(&s->sp, fl_uc_sp(at),
				      memory_order_relaxed);
		/* glibc's pthread_self reads the thread pointer: no lock, no call. */
		atomic_store_explicit(&s->tp, (uint64_t)pthread_self(), memory_order_relaxed);
		atomic_store_explicit(&s->gen, gen, memory_order_relaxed);
		/* Release: pc, sp, tp and gen before the patcher's acquire of tid. */
		atomic_store_explicit(&s->tid, (int32_t)gettid(), memory_order_release);
		atomic_fetch_add_explicit(&fl_park.reported, 1, memory_order_release);
		syscall(SYS_futex, &fl_park.reported, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	}
	/*
	 * Until let go: a few yields first (most stops end within them, and a
	 * thread that slept is woken onto a CPU the patcher may still need),
	 * then asleep.  bell is read before running, and the patcher clears
	 * running before it bumps bell, so a release between the two loads
	 * makes the wait return at once (the word changed).  The wait is
	 * bounded only as a guard: the patcher always rings.
	 */
	for (int spin = 0;; spin++) {
		uint32_t bell = atomic_load_explicit(&fl_park.bell, memory_order_acquire);
		struct timespec guard = { 0, 100 * 1000 * 1000 };

		if (atomic_load_explicit(&fl_park.running, memory_order_acquire) != gen)
			break;
		if (spin < FL_PARK_YIELDS) {
			sched_yield();
			continue;
		}
		fl_nap_wait(&fl_park.bell, bell, &guard);
	}
	if (me)
		atomic_store_explicit(&me->park, 0, memory_order_relaxed);
	atomic_fetch_sub_explicit(&fl_park.inside, 1, memory_order_relaxed);
}

#define INT3 0xcc

static uint64_t poked_hash(uint64_t addr)
{
	return (addr * 0x9e3779b97f4a7c15ull) >> 17;
}

bool fl_poked_has(uint64_t addr)
{
	for (size_t k = 0; k < FL_POKED_TABLES; k++) {
		/* Acquire: pairs with the writer's release of the table. */
		_Atomic uint64_t *t = atomic_load_explicit(&fl_poked.table[k], memory_order_acquire);
		size_t mask = ((size_t)FL_POKED_FIRST << k) - 1;

		if (!t)
			break;
		/* The writer keeps each table at most half full: a 0 ends the probe. */
		for (size_t i = poked_hash(addr) & mask;; i = (i + 1) & mask) {
			uint64_t v = atomic_load_explicit(&t[i], memory_order_relaxed);

			if (v == addr)
				return true;
			if (!v)
				break;
		}
	}
	return false;
}

/*
 * In a child forked (without glibc's fork) while a patch was under way:
 * nobody will finish the patch here, so its old bytes go back, whole, and
 * its pages get their protection back.  The child's only thread (or the
 * first of its threads to get here) does it; the others wait for it.
 */
void fl_trap_orphans_undo(void)
{
	uint32_t free_lock = 0;
	long page = sysconf(_SC_PAGESIZE);

	if (!atomic_compare_exchange_strong_explicit(&fl_pokes.orphan_lock, &free_lock, 1,
						     memory_order_acquire, memory_order_relaxed)) {
		sched_yield();
		return;
	}
	for (size_t i = 0; i < FL_POKE_SLOTS; i++) {
		struct fl_poke_slot *s = &fl_pokes.slots[i];
		uint8_t *a = (uint8_t *)(uintptr_t)atomic_load_explicit(&s->addr,
									memory_order_acquire);

		/* The pages are still writable: the parent restores them after. */
		if (a)
			for (uint32_t k = s->len; k-- > 0;)
				((volatile uint8_t *)a)[k] = s->old[k];
	}
	for (size_t i = 0; i < FL_POKE_SLOTS; i++) {
		struct fl_poke_slot *s = &fl_pokes.slots[i];
		uint64_t a = atomic_load_explicit(&s->addr, memory_order_relaxed);
		uint64_t first = a & ~(uint64_t)(page - 1), last = (a + s->len - 1) & ~(uint64_t)(page - 1);

		if (!a)
			continue;
		mprotect((void *)(uintptr_t)first, (size_t)page, s->prot[0]);
		if (last != first)
			mprotect((void *)(uintptr_t)last, (size_t)page, s->prot[1]);
		atomic_store_explicit(&s->addr, 0, memory_order_relaxed);
	}
	atomic_store_explicit(&fl_pokes.orphan_lock, 0, memory_order_release);
}

bool fl_trap_waiting(int32_t tid, uint64_t *pc, uint64_t *sp)
{
	for (size_t k = 0; k < FL_TRAP_WAITING; k++) {
		struct fl_trap_wait *w = &fl_pokes.waiting[k];

		/* Acquire: pairs with wait_for_patch's release of tid, after pc and sp. */
		if (atomic_load_explicit(&w->tid, memory_order_acquire) == tid) {
			*pc = atomic_load_explicit(&w->pc, memory_order_relaxed);
			*sp = atomic_load_explicit(&w->sp, memory_order_relaxed);
			return true;
		}
	}
	return false;
}

/*
 * A thread at the int3 of a busy slot at pc (its stack pointer sp when it
 * trapped) waits until the patcher ends a batch, or FL_TRAP_WAIT_US: it
 * does not spin on a CPU the patcher and the other threads need.  Without
 * a free record in waiting[], it only yields.
 */
static void wait_for_patch(uint64_t pc, uint64_t sp)
{
	int32_t self = (int32_t)gettid();
	struct timespec most = { 0, FL_TRAP_WAIT_US * 1000L };
	uint32_t done;
	size_t k;

	for (k = 0; k < FL_TRAP_WAITING; k++) {
		struct fl_trap_wait *w = &fl_pokes.waiting[k];
		int32_t none = 0;

		if (atomic_load_explicit(&w->tid, memory_order_relaxed))
			continue;
		/* Claimed with a placeholder; published (release) once pc and sp are in. */
		if (atomic_compare_exchange_strong_explicit(&w->tid, &none, -1,
							    memory_order_relaxed,
							    memory_order_relaxed)) {
			atomic_store_explicit(&w->pc, pc, memory_order_relaxed);
			atomic_store_explicit(&w->sp, sp, memory_order_relaxed);
			atomic_store_explicit(&w->tid, self, memory_order_release);
			break;
		}
	}
	if (k == FL_TRAP_WAITING) {
		sched_yield();
		return;
	}
	/* Seq_cst: waiters before done is read; the patcher bumps done, then reads waiters. */
	atomic_fetch_add_explicit(&fl_pokes.waiters, 1, memory_order_seq_cst);
	done = atomic_load_explicit(&fl_pokes.done, memory_order_seq_cst);
	if (busy_at(pc))
		fl_nap_wait(&fl_pokes.done, done, &most);
	atomic_fetch_sub_explicit(&fl_pokes.waiters, 1, memory_order_relaxed);
	atomic_store_explicit(&fl_pokes.waiting[k].tid, 0, memory_order_release);
}

/* Whether a debugger traces this process (status's TracerPid). */
static bool traced(void)
{
	char buf[512];
	const char *at;
	ssize_t n;
	int fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/thread-self/status", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return false;
	n = syscall(SYS_read, fd, buf, sizeof(buf) - 1);
	syscall(SYS_close, fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	at = strstr(buf, "\nTracerPid:\t");
	return at && at[sizeof("\nTracerPid:\t") - 1] != '0';
}

bool fl_trap_claim(const siginfo_t *si, ucontext_t *uc)
{
	uint64_t pc;
	bool busy = false;

	if (si->si_code != SI_KERNEL)
		return false;
	pc = fl_uc_pc(uc) - 1;

	/*
	 * A debugger that stopped the thread at the int3 may have moved its PC
	 * back to the int3 already (gdb does for every SI_KERNEL trap, and
	 * when the int3 is gone by the time it looks, it passes the signal
	 * on with the PC left there): in a process under a debugger, a trap
	 * whose PC is a patched address is ours at the PC itself.  (What this
	 * mistakes: under a debugger, the program's own int3 or int $3 right
	 * before an address faultline patched.  Without one, no PC is moved
	 * back, and the PC one past the trap is the rule.)
	 */
	if ((busy_at(pc + 1) || fl_poked_has(pc + 1)) && !busy_at(pc) && !fl_poked_has(pc) &&
	    traced())
		pc++;
	for (;;) {
		busy = busy_at(pc);
		if (busy) {
			/* Acquire: pairs with the patcher's release store of 1 (before its slots). */
			if (fl_pokes.here && !atomic_load_explicit(fl_pokes.here, memory_order_acquire))
				fl_trap_orphans_undo();
			else
				wait_for_patch(pc, fl_uc_sp(uc));
			break;
		}
		if (!fl_poked_has(pc))
			return false;	/* not an address of faultline's: the application's trap */
		/* Acquire: the int3 of a patch begun since is written after its slot. */
		if (atomic_load_explicit((const _Atomic uint8_t *)(uintptr_t)pc,
					 memory_order_acquire) != INT3)
			break;		/* the int3 has gone: ours, on its way while the patch ended */
		/* An int3 there: a patch begun since busy_at looked, or the application's. */
		if (!busy_at(pc))
			return false;
	}
	atomic_fetch_add_explicit(&fl_pokes.trapped, 1, memory_order_relaxed);
	fl_uc_set_pc(uc, pc);
	return true;
}

/* Not signal context: faultline's own threads, outside the handshake. */
int fl_park_exempt(bool on)
{
	int32_t self = (int32_t)syscall(SYS_gettid);

	for (size_t i = 0; i < FL_PARK_EXEMPT; i++) {
		int32_t want = on ? 0 : self;

		if (atomic_compare_exchange_strong(&fl_park.exempt[i], &want, on ? self : 0))
			return 0;
	}
	return on ? -ENOSPC : 0;
}

bool fl_park_is_exempt(int32_t tid)
{
	for (size_t i = 0; i < FL_PARK_EXEMPT; i++)
		if (atomic_load_explicit(&fl_park.exempt[i], memory_order_relaxed) == tid)
			return true;
	return false;
}

void fl_park_fork_child(void)
{
	for (size_t i = 0; i < FL_PARK_EXEMPT; i++)
		atomic_store_explicit(&fl_park.exempt[i], 0, memory_order_relaxed);
}

/* What fl_park_exempt_thread hands the new thread. */
struct exempt_start {
	void *(*fn)(void *);
	void *arg;
	_Atomic uint32_t marked;	/* 1: marked (or could not be), the creator may go */
	int err;
};

static void *exempt_main(void *arg)
{
	struct exempt_start *st = arg;
	void *(*fn)(void *) = st->fn;
	void *fn_arg = st->arg;
	void *ret;

	st->err = fl_park_exempt(true);
	/* Release: err before the creator's acquire; st is the creator's, gone after. */
	atomic_store_explicit(&st->marked, 1, memory_order_release);
	syscall(SYS_futex, &st->marked, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	ret = fn(fn_arg);
	fl_park_exempt(false);
	return ret;
}

int fl_park_exempt_thread(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *),
			  void *arg)
{
	struct exempt_start st = { .fn = fn, .arg = arg };
	sigset_t all, old;
	int err;

	/* The new thread inherits the mask: every signal blocked from its start. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(t, attr, exempt_main, &st);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err)
		return -err;
	/* Acquire: pairs with exempt_main's release of marked. */
	while (!atomic_load_explicit(&st.marked, memory_order_acquire))
		syscall(SYS_futex, &st.marked, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
	return st.err;
}
