/* SPDX-License-Identifier: MIT */
/*
 * Signal context (see dispatch.h for the rules): the relay, the
 * application's handlers for the other signals under the preload shim.
 *
 * Under the shim SIGSEGV, SIGBUS and SIGTRAP are never blocked in the
 * kernel (mask.c).  An action for another signal (SIGUSR1, SIGALRM, a
 * real-time one, ...) whose sa_mask names them, put in the kernel as it
 * is, would have the kernel really block them while its handler runs: a
 * fault at an implicit null check there, or a patch's int3, would kill the
 * process (a forced signal that is blocked resets the action to SIG_DFL).
 * So the kernel gets fl_relay_handler instead, with the application's
 * flags (SA_SIGINFO added) and its sa_mask without the three; the
 * application's action is recorded (chain.c's records) and read back as
 * it set it.  fl_relay_handler blocks the three its sa_mask names in
 * fl_mask_virtual around the application's handler, as the chain does for
 * the three's own handlers (fl_mask_handler_enter, fl_mask_handler_leave):
 * one of them sent meanwhile is held, and raised again when the handler
 * returns; a jump out of it restores fl_mask_virtual (fl_mask_jump).
 *
 * Every handler is relayed, whatever its sa_mask, so that each sees in
 * uc_sigmask the mask it interrupted as the application had it.  SIG_DFL
 * and SIG_IGN go to the kernel as they are.  Not relayed: SIGKILL,
 * SIGSTOP, glibc's internal signals (its sigaction refuses them), the
 * handshake's signal, and any action set before the shim took over the
 * mask (fl_mask_enable), until the application sets one again.
 */
#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "dispatch/dispatch.h"

#define KERNEL_SIGSET_BITS 64

/*
 * [sig]: 1 once an action of the application's for sig is recorded, from
 * when the shim had the mask: chain.c's record for it is the action in
 * effect.  Before, the kernel's is.
 */
static _Atomic int recorded[KERNEL_SIGSET_BITS + 1];

/* glibc's internal signals, SIGCANCEL and SIGSETXID. */
static bool glibc_internal(int sig)
{
	return sig == 32 || sig == 33;
}

static bool relayed(int sig)
{
	if (sig < 1 || sig > KERNEL_SIGSET_BITS || !fl_mask_hidden())
		return false;
	return sig != SIGSEGV && sig != SIGBUS && sig != SIGTRAP && sig != SIGKILL &&
	       sig != SIGSTOP && !glibc_internal(sig) && sig != fl_park.signo;
}

static bool is_handler(uintptr_t h)
{
	return h != (uintptr_t)SIG_DFL && h != (uintptr_t)SIG_IGN;
}

/*
 * The recorded action, once the kernel has given it its SIG_DFL back
 * (SA_RESETHAND, on delivery; fl_relay_handler records it too, a moment
 * later).
 */
static void in_effect(int sig, struct fl_chain_act *a)
{
	struct sigaction k;

	fl_chain_other_read(sig, a);
	if (is_handler(a->handler) && (a->flags & SA_RESETHAND) &&
	    fl_real_sigaction(sig, NULL, &k) == 0 &&
	    !((k.sa_flags & SA_SIGINFO) && k.sa_sigaction == fl_relay_handler))
		a->handler = (uintptr_t)SIG_DFL;
}

void fl_relay_read(int sig, struct sigaction *out)
{
	struct fl_chain_act a;

	in_effect(sig, &a);
	fl_chain_act_show(&a, out);
}

int fl_relay_sigaction(int sig, const struct sigaction *act, struct sigaction *oldact)
{
	struct fl_chain_act a, old;
	struct sigaction k, kernel_old;
	bool had;

	if (!relayed(sig))
		return fl_real_sigaction(sig, act, oldact);
	/* Pairs with the release below: the record it names is published. */
	had = atomic_load_explicit(&recorded[sig], memory_order_acquire);
	if (!act) {
		if (!had)
			return fl_real_sigaction(sig, NULL, oldact);
		if (oldact)
			fl_relay_read(sig, oldact);
		return 0;
	}

	/* Recorded first: a delivery from now on, even through the old action, runs it. */
	fl_chain_act_of(act, &a);
	fl_chain_other_publish(sig, &a, &old);
	k = *act;
	if (is_handler(a.handler)) {
		uint64_t mask;

		k.sa_sigaction = fl_relay_handler;
		k.sa_flags |= SA_SIGINFO;
		memcpy(&mask, &k.sa_mask, sizeof(mask));
		mask &= ~fl_mask_hidden();
		memcpy(&k.sa_mask, &mask, sizeof(mask));
	}
	if (fl_real_sigaction(sig, &k, &kernel_old) != 0) {
		int err = errno;

		if (had)
			fl_chain_other_publish(sig, &old, NULL);
		errno = err;
		return -1;
	}
	if (!had) {
		/* The kernel's action was the application's, as the kernel reports it. */
		fl_chain_act_of(&kernel_old, &old);
		old.flags = kernel_old.sa_flags;
		old.restorer = (uintptr_t)kernel_old.sa_restorer;
		/* Pairs with the acquire above. */
		atomic_store_explicit(&recorded[sig], 1, memory_order_release);
	} else if (is_handler(old.handler) && (old.flags & SA_RESETHAND) &&
		   !((kernel_old.sa_flags & SA_SIGINFO) &&
		     kernel_old.sa_sigaction == fl_relay_handler)) {
		old.handler = (uintptr_t)SIG_DFL;
	}
	if (oldact)
		fl_chain_act_show(&old, oldact);
	return 0;
}

void fl_relay_handler(int sig, siginfo_t *si, void *uc)
{
	int saved_errno = errno;
	struct fl_chain_act act;
	uint64_t hide = fl_mask_hidden();

	fl_chain_other_read(sig, &act);
	if (!is_handler(act.handler)) {
		/*
		 * The application set SIG_DFL or SIG_IGN since the kernel
		 * chose this action: ignored, it is dropped; by default, sent
		 * again, to meet the default action once this returns.
		 */
		if (act.handler == (uintptr_t)SIG_DFL)
			syscall(SYS_tgkill, getpid(), gettid(), sig);
		errno = saved_errno;
		return;
	}
	/* As the kernel did (it gave SIG_DFL back on delivery): only the handler. */
	if (act.flags & SA_RESETHAND) {
		struct fl_chain_act reset = act;

		reset.handler = (uintptr_t)SIG_DFL;
		fl_chain_other_publish(sig, &reset, NULL);
	}
	/* sig itself is the kernel's to block (SA_NODEFER or not): not one of hide. */
	fl_mask_handler_enter(uc, act.mask & hide);
	errno = saved_errno;
	/*
	 * From the kernel's frame for it (frame.c), returning through the
	 * restorer that ends what fl_mask_handler_enter began.
	 */
	if (fl_frame_enter(sig, si, uc, (uintptr_t)__builtin_return_address(0), act.handler,
			   act.flags & SA_ONSTACK, (uintptr_t)fl_frame_leave_restorer,
			   si->si_code > 0)) {
		fl_mask_handler_leave(uc);
		errno = saved_errno;
		return;
	}
	/* A frame not laid out as frame.c knows: a call, on this one. */
	if (act.flags & SA_SIGINFO)
		((void (*)(int, siginfo_t *, void *))act.handler)(sig, si, uc);
	else
		((void (*)(int))act.handler)(sig);
	saved_errno = errno;
	fl_mask_handler_leave(uc);
	errno = saved_errno;
}
