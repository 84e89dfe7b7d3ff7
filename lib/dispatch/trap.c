/* SPDX-License-Identifier: MIT */
/*
 * Signal context (see dispatch.h for the rules): a thread that ran into
 * the int3 of an instruction being patched (lib/patch/patch.c states the
 * protocol).
 *
 * The int3 stands at the instruction's first byte from step 1 of the
 * protocol until its new first byte replaces it in step 3.  A thread that
 * executes it takes SIGTRAP with its PC one past it; the instruction is
 * then half written, so the thread must not go on: it yields the CPU to
 * let the patcher progress, and goes back to the instruction's first
 * byte.  If the int3 is still there it traps again; once it is gone it
 * runs the new instruction, whole (the new first byte is written last).
 *
 * The same handler stops a thread for the patcher's handshake (see
 * struct fl_park in dispatch.h): the handshake's real-time signal with
 * si_code SI_QUEUE and the value key + gen, from this process.
 *
 * A trap at an int3 that faultline did not write goes down the chain: the
 * si_code is not the kernel's int3 (SI_KERNEL), or the address is no
 * site being patched and its byte is still an int3 (the application's own
 * breakpoint, or new code that holds one).  A trap whose int3 is gone was
 * a patch's whose slot is already free: it goes back, too.
 */
#include <errno.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "dispatch/dispatch.h"

struct fl_pokes fl_pokes;
struct fl_park fl_park;

bool fl_trap_park(int sig, const siginfo_t *si, const ucontext_t *uc)
{
	uint64_t v = (uint64_t)(uintptr_t)si->si_value.sival_ptr, gen, i;
	/* The handshake's signal in the kernel's 64-bit signal set. */
	uint64_t park_bit = 1ull << (sig - 1);

	if (sig != fl_park.signo || !sig ||
	    si->si_code != SI_QUEUE || si->si_pid != getpid() || !fl_park.key ||
	    v - fl_park.key >= (1ull << 32))
		return false;
	gen = v - fl_park.key;
	if (atomic_load_explicit(&fl_park.running, memory_order_acquire) != gen)
		return true;		/* late: that handshake is over */
	/*
	 * No nesting: the next handshake's signal waits until this handler
	 * has returned (sigreturn restores the interrupted mask).  Otherwise
	 * back-to-back handshakes could stack handler frames on a thread
	 * faster than it unwinds them, until its stack overflows.
	 */
	atomic_fetch_add_explicit(&fl_park.inside, 1, memory_order_relaxed);
	syscall(SYS_rt_sigprocmask, SIG_BLOCK, &park_bit, NULL, sizeof(park_bit));
	i = atomic_fetch_add_explicit(&fl_park.arrived, 1, memory_order_acq_rel);
	if (i < FL_PARK_MAX) {
		struct fl_park_slot *s = &fl_park.who[i];

		atomic_store_explicit(&s->pc, (uint64_t)uc->uc_mcontext.gregs[REG_RIP],
				      memory_order_relaxed);
		atomic_store_explicit(&s->sp, (uint64_t)uc->uc_mcontext.gregs[REG_RSP],
				      memory_order_relaxed);
		atomic_store_explicit(&s->tid, (int32_t)gettid(), memory_order_release);
	}
	while (atomic_load_explicit(&fl_park.running, memory_order_acquire) == gen)
		sched_yield();
	atomic_fetch_sub_explicit(&fl_park.inside, 1, memory_order_relaxed);
	return true;
}

#define INT3 0xcc

bool fl_trap_claim(const siginfo_t *si, ucontext_t *uc)
{
	uint64_t pc;
	bool ours = false;

	if (si->si_code != SI_KERNEL || !atomic_load_explicit(&fl_pokes.ever, memory_order_acquire))
		return false;
	pc = (uint64_t)uc->uc_mcontext.gregs[REG_RIP] - 1;

	for (size_t i = 0; i < FL_POKE_SLOTS; i++) {
		struct fl_poke_slot *s = &fl_pokes.slots[i];

		if (atomic_load_explicit(&s->addr, memory_order_acquire) != pc)
			continue;
		/*
		 * Retired, and the new code's own first byte is an int3: this
		 * trap is the new code's, not the patch's.
		 */
		if (atomic_load_explicit(&s->done_gen, memory_order_acquire) &&
		    atomic_load_explicit(&s->new0, memory_order_relaxed) == INT3)
			return false;
		ours = true;
		break;
	}
	/* No slot (any more): ours only if the int3 has gone. */
	if (!ours && *(const volatile uint8_t *)(uintptr_t)pc == INT3)
		return false;

	atomic_fetch_add_explicit(&fl_pokes.trapped, 1, memory_order_relaxed);
	sched_yield();
	uc->uc_mcontext.gregs[REG_RIP] = (greg_t)pc;
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
