/* SPDX-License-Identifier: MIT */
/*
 * Signal context (see dispatch.h for the rules): the signal mask under the
 * preload shim.
 *
 * The kernel kills a thread that blocks SIGSEGV, SIGBUS or SIGTRAP when it
 * raises one of them for that thread (a fault, an int3: a forced signal
 * that is blocked resets the action to SIG_DFL).  Under the shim those
 * three, while faultline's handler is the kernel's action for them, are
 * never blocked in the kernel: the shim's sigprocmask and the like
 * (lib/preload/mask.c) record here which of them the application blocks,
 * per thread, and pass the rest on.  The handler then does what the kernel
 * would have done with a blocked one that faultline does not claim
 * (chain.c): a synchronous one kills the process by its default action;
 * one that was sent is held here, and raised again (to the thread itself)
 * once the application unblocks it.
 *
 * Approximated: a signal sent to the process (kill, sigqueue) that lands in
 * a thread that blocks it is held for the process, and raised again by the
 * first thread that unblocks it (a mask call, or the return of a handler
 * of the chain), where the kernel would have delivered it at once to a
 * thread that does not block it.  Held signals keep si_code, si_pid, si_uid
 * and si_value, nothing else of their siginfo; one sent to the process is
 * raised again as one sent to the thread that raises it.  A standard
 * signal is held once, as the kernel keeps it pending once.  Several held
 * ones unblocked at once are raised one after the other, each reaching its
 * handler before the next is raised; the kernel would set up all their
 * frames at once, the last one's handler running first.
 *
 * Thread-local (initial-exec, as dispatch.h requires): 128 bytes in all
 * with handler.c's, also in libfaultline.so, where nothing sets them.
 */
#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "dispatch/dispatch.h"

/* 1 once the shim has taken over the mask (fl_mask_enable). */
static _Atomic int mask_on;

/* This thread's count of holds (fl_mask_holds). */
static __thread _Atomic uint64_t holds __attribute__((tls_model("initial-exec")));

__thread _Atomic uint64_t fl_mask_virtual __attribute__((tls_model("initial-exec")));

/* What is kept of a held signal's siginfo. */
struct held_info {
	int32_t code;
	int32_t pid;
	uint32_t uid;
	uint64_t value;
};

/* [0] SIGTRAP, [1] SIGBUS, [2] SIGSEGV: the order the kernel dequeues them in. */
static const int held_sigs[3] = { SIGTRAP, SIGBUS, SIGSEGV };

/*
 * Sent to this thread (tgkill, raise, pthread_kill).  Only this thread
 * reads and writes it, its handler included: a bit is set after its info
 * is written, and cleared after its info is read.
 */
static __thread struct {
	_Atomic uint64_t bits;
	struct held_info info[3];
} thread_held __attribute__((tls_model("initial-exec")));

/*
 * Sent to the process.  state: 0 empty, 1 being written, 2 held, 3 being
 * taken; whoever moves it from 0 (or 2) owns info until it stores the next
 * state (release; pairs with the acquire of the exchange that moves it).
 */
enum { HELD_EMPTY, HELD_WRITING, HELD_FULL, HELD_TAKING };
static struct {
	_Atomic uint32_t state;
	struct held_info info;
} process_held[3];

/*
 * The handlers of the chain this thread runs (fl_mask_enter, fl_mask_leave)
 * and fl_mask_virtual as the outermost of them found it.
 */
static __thread struct {
	int depth;
	uint64_t outer;
} in_chain __attribute__((tls_model("initial-exec")));

static int held_index(int sig)
{
	return sig == SIGTRAP ? 0 : sig == SIGBUS ? 1 : sig == SIGSEGV ? 2 : -1;
}

static uint64_t bit_of(int sig)
{
	return 1ull << (sig - 1);
}

void fl_mask_enable(void)
{
	atomic_store_explicit(&mask_on, 1, memory_order_release);
	/* The mirrors of the three's actions block none of the three now. */
	fl_dispatch_remirror();
}

uint64_t fl_mask_hidden(void)
{
	uint64_t bits;

	/* Pairs with the release in fl_mask_enable. */
	if (!atomic_load_explicit(&mask_on, memory_order_acquire))
		return 0;
	bits = bit_of(SIGSEGV) | bit_of(SIGBUS);
	if (fl_chain_taken(SIGTRAP))
		bits |= bit_of(SIGTRAP);
	return bits;
}

void fl_mask_hold(int sig, const siginfo_t *si)
{
	int i = held_index(sig);
	struct held_info rec = {
		.code = si->si_code,
		.pid = si->si_pid,
		.uid = si->si_uid,
		.value = (uint64_t)(uintptr_t)si->si_value.sival_ptr,
	};
	uint32_t empty = HELD_EMPTY;

	if (i < 0)
		return;
	atomic_fetch_add_explicit(&holds, 1, memory_order_relaxed);
	if (si->si_code == SI_TKILL) {
		if (atomic_load_explicit(&thread_held.bits, memory_order_relaxed) & bit_of(sig))
			return;
		thread_held.info[i] = rec;
		/* Orders the info before the bit for this thread's handlers. */
		atomic_signal_fence(memory_order_release);
		atomic_fetch_or_explicit(&thread_held.bits, bit_of(sig), memory_order_relaxed);
		return;
	}
	if (!atomic_compare_exchange_strong_explicit(&process_held[i].state, &empty, HELD_WRITING,
						     memory_order_acquire, memory_order_relaxed))
		return;
	process_held[i].info = rec;
	/* Pairs with the acquire of the exchange in fl_mask_release. */
	atomic_store_explicit(&process_held[i].state, HELD_FULL, memory_order_release);
}

/* The signal and what was kept of its info, as a siginfo_t. */
static void info_of(int sig, const struct held_info *rec, siginfo_t *si)
{
	memset(si, 0, sizeof(*si));
	si->si_signo = sig;
	si->si_code = rec->code;
	si->si_pid = rec->pid;
	si->si_uid = rec->uid;
	si->si_value.sival_ptr = (void *)(uintptr_t)rec->value;
}

/* Raises sig again, to this thread, with what was kept of its siginfo. */
static void raise_held(int sig, const struct held_info *rec)
{
	int saved_errno = errno;
	siginfo_t si;

	info_of(sig, rec, &si);
	/* The kernel takes any si_code from a thread that sends to itself. */
	if (syscall(SYS_rt_tgsigqueueinfo, getpid(), gettid(), sig, &si) != 0)
		syscall(SYS_tgkill, getpid(), gettid(), sig);
	errno = saved_errno;
}

/*
 * Takes held signal i (of held_sigs) of this thread's into *rec.  The
 * info is read before the bit is taken: a hold writes it only while the
 * bit is clear.  Taking it with one atomic operation makes one taker of
 * this thread's (a handler that interrupts this one takes too) the one
 * that gets it.
 */
static bool take_thread(int i, struct held_info *rec)
{
	uint64_t bit = bit_of(held_sigs[i]);

	*rec = thread_held.info[i];
	atomic_signal_fence(memory_order_acq_rel);
	return atomic_fetch_and_explicit(&thread_held.bits, ~bit, memory_order_relaxed) & bit;
}

/* Takes held signal i of the process's into *rec. */
static bool take_process(int i, struct held_info *rec)
{
	uint32_t full = HELD_FULL;

	/* Pairs with the release that ends a write in fl_mask_hold. */
	if (!atomic_compare_exchange_strong_explicit(&process_held[i].state, &full, HELD_TAKING,
						     memory_order_acquire, memory_order_relaxed))
		return false;
	*rec = process_held[i].info;
	/* Pairs with the acquire of the exchange in fl_mask_hold. */
	atomic_store_explicit(&process_held[i].state, HELD_EMPTY, memory_order_release);
	return true;
}

/*
 * As the kernel dequeues them: the thread's own before the process's,
 * the lowest number first (all three are synchronous ones, which it takes
 * before others).
 */
int fl_mask_release(void)
{
	uint64_t blocked = atomic_load_explicit(&fl_mask_virtual, memory_order_relaxed);
	struct held_info rec;
	int raised = 0;

	for (int from = 0; from < 2; from++)
		for (int i = 0; i < 3; i++) {
			int sig = held_sigs[i];

			if (blocked & bit_of(sig))
				continue;
			if (from == 0 ? take_thread(i, &rec) : take_process(i, &rec)) {
				raise_held(sig, &rec);
				raised++;
			}
		}
	return raised;
}

int fl_mask_take(uint64_t set, siginfo_t *si)
{
	struct held_info rec;

	for (int from = 0; from < 2; from++)
		for (int i = 0; i < 3; i++) {
			int sig = held_sigs[i];

			if (!(set & bit_of(sig)))
				continue;
			if (from == 0 ? take_thread(i, &rec) : take_process(i, &rec)) {
				info_of(sig, &rec, si);
				return sig;
			}
		}
	return 0;
}

uint64_t fl_mask_holds(void)
{
	return atomic_load_explicit(&holds, memory_order_relaxed);
}

uint64_t fl_mask_held(void)
{
	uint64_t bits = atomic_load_explicit(&thread_held.bits, memory_order_relaxed);

	for (int i = 0; i < 3; i++)
		if (atomic_load_explicit(&process_held[i].state, memory_order_acquire) == HELD_FULL)
			bits |= bit_of(held_sigs[i]);
	return bits;
}

void fl_mask_enter(uint64_t shown)
{
	if (in_chain.depth++ == 0)
		in_chain.outer = shown;
}

void fl_mask_leave(void)
{
	if (in_chain.depth > 0)
		in_chain.depth--;
}

/* The kernel's mask the shim last set for this thread, and whether it did (fl_mask_kernel_note). */
static __thread uint64_t kernel_noted __attribute__((tls_model("initial-exec")));
static __thread int kernel_known __attribute__((tls_model("initial-exec")));

/* glibc's internal signals (32, 33): it blocks them for itself, with the raw call. */
#define GLIBC_INTERNAL_BITS (3ull << 31)

void fl_mask_kernel_note(uint64_t kernel)
{
	kernel_noted = kernel;
	kernel_known = 1;
}

bool fl_mask_resync(const void *ucv)
{
	const ucontext_t *uc = ucv;
	uint64_t hide = fl_mask_hidden(), now;

	if (!hide || !kernel_known || in_chain.depth > 0)
		return false;
	memcpy(&now, &uc->uc_sigmask, sizeof(now));
	if (!((now ^ kernel_noted) & ~hide & ~GLIBC_INTERNAL_BITS))
		return false;
	atomic_store_explicit(&fl_mask_virtual, now & hide, memory_order_relaxed);
	kernel_noted = now;
	return true;
}

void fl_mask_handler_enter(void *ucv, uint64_t blocks)
{
	ucontext_t *uc = ucv;
	uint64_t shown, before;

	/*
	 * The outermost handler: a raw mask change before it is taken first,
	 * or the handler's return would note the interrupted mask as the
	 * shim's, with the virtual set from before the change.
	 */
	fl_mask_resync(uc);
	shown = atomic_load_explicit(&fl_mask_virtual, memory_order_relaxed);

	fl_mask_enter(shown);
	atomic_store_explicit(&fl_mask_virtual, shown | blocks, memory_order_relaxed);
	memcpy(&before, &uc->uc_sigmask, sizeof(before));
	before |= shown;
	memcpy(&uc->uc_sigmask, &before, sizeof(before));
}

void fl_mask_handler_leave(void *ucv)
{
	ucontext_t *uc = ucv;
	uint64_t hide = fl_mask_hidden(), after;

	memcpy(&after, &uc->uc_sigmask, sizeof(after));
	atomic_store_explicit(&fl_mask_virtual, after & hide, memory_order_relaxed);
	after &= ~hide;
	memcpy(&uc->uc_sigmask, &after, sizeof(after));
	/*
	 * Held ones it unblocks are raised while this handler still counts:
	 * the kernel's mask is still the handler's, which fl_mask_resync must
	 * not take for a raw change of the program's.
	 */
	fl_mask_release();
	fl_mask_leave();
	/* The outermost handler's return: the kernel's mask is the one sigreturn restores. */
	if (in_chain.depth == 0)
		fl_mask_kernel_note(after);
}

void fl_mask_jump(void)
{
	if (in_chain.depth > 0) {
		atomic_store_explicit(&fl_mask_virtual, in_chain.outer, memory_order_relaxed);
		in_chain.depth = 0;
		/* Held ones the jump unblocks: delivered now, as the jump's sigprocmask would. */
		fl_mask_release();
	}
}

void fl_mask_fork_child(void)
{
	/* The records are the child's own now (chain.c). */
	fl_chain_owner();
	/* The kernel clears a child's pending signals (the forking thread's are its only thread's). */
	atomic_store_explicit(&thread_held.bits, 0, memory_order_relaxed);
	for (int i = 0; i < 3; i++)
		atomic_store_explicit(&process_held[i].state, HELD_EMPTY, memory_order_relaxed);
}
