/* SPDX-License-Identifier: MIT */
/*
 * Signal context (see dispatch.h for the rules): the chain.
 *
 * The kernel keeps faultline's handler for SIGSEGV and SIGBUS, and for
 * SIGTRAP and the handshake's signal once code patching is enabled
 * (fl_dispatch_install_trap).  What
 * the application asks for with sigaction (or signal, sigset, ...) is
 * recorded here and answered as if it had taken effect; a signal faultline
 * does not claim is delivered to the recorded action the way the kernel
 * would have delivered it.
 *
 * Records are written by fl_sigaction, which must stay async-signal-safe
 * (a handler may call sigaction, and a thread may be interrupted in the
 * middle of one), so there is no lock: each signal has a ring of slots,
 * each slot a sequence count.  A writer takes a fresh slot, fills it
 * between two increments of its sequence, and publishes it by exchanging
 * the signal's current index: the exchange hands back exactly the action
 * in effect before, as sigaction's oldact must.  A reader copies the
 * current slot and retries if its sequence moved.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <ucontext.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <faultline/dispatch.h>

#include "dispatch/dispatch.h"

#define CHAIN_SLOTS 64u
#define KERNEL_SIGSET_BITS 64

/*
 * The sa_flags bits the kernel keeps (its UAPI_SA_FLAGS on x86-64, as
 * measured: every other bit reads back as 0).  0x800 is SA_EXPOSE_TAGBITS.
 */
#define KERNEL_SA_FLAGS ((int)(SA_NOCLDSTOP | SA_NOCLDWAIT | SA_SIGINFO | 0x800 | \
	SA_RESTORER | SA_ONSTACK | SA_RESTART | SA_NODEFER | SA_RESETHAND))

struct chain_slot {
	_Atomic uint32_t seq;		/* odd while being written */
	_Atomic uintptr_t handler;	/* sa_handler / sa_sigaction */
	_Atomic int flags;
	_Atomic uint64_t mask;		/* the kernel's 64-bit sigset */
	_Atomic uintptr_t restorer;
};

/* What one install of a mirror put in the kernel (SIGSEGV and SIGBUS). */
struct chain_mirror {
	_Atomic uint32_t seq;		/* odd while being written */
	_Atomic int flags;		/* of the installed action */
	_Atomic uint64_t mask;		/* its sa_mask, the kernel's 64 bits */
};

struct chain {
	_Atomic uint32_t current;	/* index of the slot in effect */
	_Atomic uint32_t next;		/* next slot to write */
	struct chain_slot slots[CHAIN_SLOTS];
	_Atomic uint32_t installs;	/* mirrors installed so far */
	struct chain_mirror mirrors[CHAIN_SLOTS];
};

/*
 * [0] SIGSEGV, [1] SIGBUS, [2] SIGTRAP, [3] the handshake's signal
 * (fl_park.signo).  Slot 0 starts as SIG_DFL (all zero).
 */
static struct chain chains[4];

/*
 * SIGTRAP and the handshake's signal are faultline's, and recorded here,
 * only from fl_dispatch_install_trap on; before, sigaction for them goes
 * to the kernel.
 */
static _Atomic int chained[4];

static struct chain *chain_of(int sig)
{
	if (sig == SIGSEGV)
		return &chains[0];
	if (sig == SIGBUS)
		return &chains[1];
	if (sig == SIGTRAP && atomic_load_explicit(&chained[2], memory_order_acquire))
		return &chains[2];
	if (sig == fl_park.signo && sig && atomic_load_explicit(&chained[3], memory_order_acquire))
		return &chains[3];
	return NULL;
}

/*
 * The kernel's part of a sigset_t, and back: bit operations, since glibc's
 * sigaddset refuses its internal signals (32 and 33), which the kernel
 * stores in an sa_mask as any other (glibc's sigvec sets 32).
 */
static uint64_t mask_to_bits(const sigset_t *set)
{
	uint64_t bits;

	memcpy(&bits, set, sizeof(bits));
	return bits;
}

static void bits_to_mask(uint64_t bits, sigset_t *set)
{
	sigemptyset(set);
	memcpy(set, &bits, sizeof(bits));
}

/* Copies slot s into *out; returns false if a writer was in it. */
static bool slot_copy_raw(struct chain_slot *s, struct fl_chain_act *out)
{
	/* Pairs with the release increment that ends a write. */
	uint32_t seq = atomic_load_explicit(&s->seq, memory_order_acquire);

	if (seq & 1)
		return false;
	out->handler = atomic_load_explicit(&s->handler, memory_order_relaxed);
	out->flags = atomic_load_explicit(&s->flags, memory_order_relaxed);
	out->mask = atomic_load_explicit(&s->mask, memory_order_relaxed);
	out->restorer = atomic_load_explicit(&s->restorer, memory_order_relaxed);
	/* Orders the field loads before the re-check of seq. */
	atomic_thread_fence(memory_order_acquire);
	return atomic_load_explicit(&s->seq, memory_order_relaxed) == seq;
}

void fl_chain_act_show(const struct fl_chain_act *a, struct sigaction *out)
{
	memset(out, 0, sizeof(*out));
	if (a->flags & SA_SIGINFO)
		out->sa_sigaction = (void (*)(int, siginfo_t *, void *))a->handler;
	else
		out->sa_handler = (void (*)(int))a->handler;
	out->sa_flags = a->flags;
	bits_to_mask(a->mask, &out->sa_mask);
	out->sa_restorer = (void (*)(void))a->restorer;
}

/* As slot_copy_raw, as sigaction reports an action. */
static bool slot_copy(struct chain_slot *s, struct sigaction *out)
{
	struct fl_chain_act a;

	if (!slot_copy_raw(s, &a))
		return false;
	fl_chain_act_show(&a, out);
	return true;
}

/* Copies the action in effect into *out; returns its slot's index. */
static uint32_t slot_read_raw(struct chain *c, struct fl_chain_act *out)
{
	uint32_t i;

	/* Pairs with the exchange in slot_publish. */
	do
		i = atomic_load_explicit(&c->current, memory_order_acquire);
	while (!slot_copy_raw(&c->slots[i % CHAIN_SLOTS], out));
	return i;
}

static void slot_read(struct chain *c, struct sigaction *out)
{
	/* Pairs with the exchange in slot_publish. */
	while (!slot_copy(&c->slots[atomic_load_explicit(&c->current,
			memory_order_acquire) % CHAIN_SLOTS], out))
		;
}

/* Publishes act; returns the index of the slot it replaced. */
static uint32_t slot_publish_raw(struct chain *c, const struct fl_chain_act *act)
{
	uint32_t i = atomic_fetch_add_explicit(&c->next, 1, memory_order_relaxed) + 1;
	struct chain_slot *s = &c->slots[i % CHAIN_SLOTS];
	uint32_t seq = atomic_load_explicit(&s->seq, memory_order_relaxed);

	/* Odd: readers of this slot retry until the write is done. */
	atomic_store_explicit(&s->seq, seq + 1, memory_order_relaxed);
	/* Orders the odd seq before the field stores (readers' acquire fence). */
	atomic_thread_fence(memory_order_release);
	atomic_store_explicit(&s->handler, act->handler, memory_order_relaxed);
	atomic_store_explicit(&s->flags, act->flags, memory_order_relaxed);
	atomic_store_explicit(&s->mask, act->mask, memory_order_relaxed);
	atomic_store_explicit(&s->restorer, act->restorer, memory_order_relaxed);
	/* Pairs with the acquire load of seq in slot_copy_raw. */
	atomic_store_explicit(&s->seq, seq + 2, memory_order_release);
	/* Pairs with the acquire load of current in slot_read(_raw). */
	return atomic_exchange_explicit(&c->current, i, memory_order_acq_rel);
}

/* act as it is, no bit of it dropped (an action of the kernel's, or faultline's own). */
static void act_of(const struct sigaction *act, struct fl_chain_act *a)
{
	a->handler = (act->sa_flags & SA_SIGINFO) ? (uintptr_t)act->sa_sigaction
						  : (uintptr_t)act->sa_handler;
	a->flags = act->sa_flags;
	a->mask = mask_to_bits(&act->sa_mask);
	a->restorer = (uintptr_t)act->sa_restorer;
}

static uint32_t slot_publish(struct chain *c, const struct sigaction *act)
{
	struct fl_chain_act a;

	act_of(act, &a);
	return slot_publish_raw(c, &a);
}

_Static_assert(CHAIN_SLOTS == 64, "fl_chain_restorers has 64 copies");
#define RESTORER_BYTES FL_RESTORER_BYTES

/* The kernel's struct sigaction of rt_sigaction (x86-64). */
struct kernel_sigaction {
	uintptr_t handler;
	unsigned long flags;
	uintptr_t restorer;
	uint64_t mask;
};

/*
 * SIGTRAP too: between the kernel's delivery and fl_chain_deliver's
 * sigprocmask, a signal the application's action blocks would otherwise
 * interrupt faultline's handler, on the alternate stack, where the
 * application could never have been interrupted (SBCL's stop-for-GC
 * handler then records a stack pointer off the thread's stack).
 */
static bool mirrored(int sig)
{
	return sig == SIGSEGV || sig == SIGBUS || sig == SIGTRAP;
}

static uint64_t sig_bit(int sig)
{
	return sig >= 1 && sig <= KERNEL_SIGSET_BITS ? 1ull << (sig - 1) : 0;
}

/*
 * The flags and mask faultline's action gets for the recorded action a.
 * SIG_DFL and SIG_IGN run nothing of the application's: SA_NODEFER and
 * an empty mask, so that the blocked set does not change on delivery nor
 * on sigreturn (the kernel then skips writing it).  The handshake's signal
 * is never blocked while our handler runs: the patcher may stop a thread
 * that is claiming a fault (trap.c).
 */
static void mirror_of(int sig, const struct fl_chain_act *a, int *flags, uint64_t *mask)
{
	uint64_t hide = fl_mask_hidden();

	*flags = SA_SIGINFO | SA_ONSTACK | SA_RESTORER;
	if (a->handler == (uintptr_t)SIG_DFL || a->handler == (uintptr_t)SIG_IGN) {
		*flags |= SA_NODEFER | SA_RESTART;
		*mask = 0;
		return;
	}
	*flags |= a->flags & (SA_NODEFER | SA_RESTART);
	/*
	 * Under the shim the signals of hide are blocked for the application's
	 * handler in fl_mask_virtual only (fl_chain_deliver): not in the
	 * kernel, the signal itself neither.
	 */
	if (hide & sig_bit(sig))
		*flags |= SA_NODEFER;
	*mask = a->mask & ~sig_bit(fl_park.signo) & ~hide;
}

int fl_chain_mirror(int sig)
{
	struct chain *c = chain_of(sig);

	if (!c || !mirrored(sig))
		return -EINVAL;
	for (;;) {
		uint32_t cur, t, seq;
		struct chain_mirror *m;
		struct kernel_sigaction k;
		struct fl_chain_act a;
		int flags;
		uint64_t mask;

		cur = slot_read_raw(c, &a);
		mirror_of(sig, &a, &flags, &mask);
		t = atomic_fetch_add_explicit(&c->installs, 1, memory_order_relaxed) % CHAIN_SLOTS;
		m = &c->mirrors[t];
		seq = atomic_load_explicit(&m->seq, memory_order_relaxed);
		/* Odd: a reader of this record falls back to its own sigprocmask. */
		atomic_store_explicit(&m->seq, seq + 1, memory_order_relaxed);
		/* Orders the odd seq before the field stores (applied_mask's fence). */
		atomic_thread_fence(memory_order_release);
		atomic_store_explicit(&m->flags, flags, memory_order_relaxed);
		atomic_store_explicit(&m->mask, mask, memory_order_relaxed);
		/* Pairs with the acquire load of seq in applied_mask. */
		atomic_store_explicit(&m->seq, seq + 2, memory_order_release);

		k.handler = (uintptr_t)fl_dispatch_handler;
		k.flags = (unsigned long)flags;
		k.restorer = (uintptr_t)fl_chain_restorers + (uintptr_t)t * RESTORER_BYTES;
		k.mask = mask;
		if (syscall(SYS_rt_sigaction, sig, &k, NULL, KERNEL_SIGSET_BITS / 8) != 0)
			return -errno;
		/*
		 * Another thread may have recorded a newer action and installed
		 * its mirror before ours: then ours is stale, and whoever
		 * installs last finds current moved, and installs again.  Pairs
		 * with the exchange in slot_publish_raw.
		 */
		if (atomic_load_explicit(&c->current, memory_order_acquire) == cur)
			return 0;
	}
}

/*
 * The blocked mask the kernel set for this delivery of sig, from the
 * restorer it gave our handler (its return address) and uc's mask (the
 * interrupted one): returns false when that is not known (not one of
 * ours, or its record was reused since: 63 installs in between).
 */
static bool applied_mask(struct chain *c, int sig, uintptr_t restorer, uint64_t before,
			 uint64_t *out)
{
	uintptr_t base = (uintptr_t)fl_chain_restorers, off = restorer - base;
	struct chain_mirror *m;
	uint32_t seq;
	uint64_t mask;
	int flags;

	if (restorer < base || off >= CHAIN_SLOTS * RESTORER_BYTES || off % RESTORER_BYTES)
		return false;
	m = &c->mirrors[off / RESTORER_BYTES];
	/* Pairs with the release store that ends a write in fl_chain_mirror. */
	seq = atomic_load_explicit(&m->seq, memory_order_acquire);
	if (seq & 1)
		return false;
	flags = atomic_load_explicit(&m->flags, memory_order_relaxed);
	mask = atomic_load_explicit(&m->mask, memory_order_relaxed);
	/* Orders the field loads before the re-check of seq. */
	atomic_thread_fence(memory_order_acquire);
	if (atomic_load_explicit(&m->seq, memory_order_relaxed) != seq)
		return false;
	*out = before | mask | ((flags & SA_NODEFER) ? 0 : sig_bit(sig));
	return true;
}

bool fl_chain_taken(int sig)
{
	return chain_of(sig) != NULL;
}

/* libc's signal restorer (SA_RESTORER), learnt from our own action. */
static _Atomic uintptr_t libc_restorer;

void fl_chain_record(int sig, const struct sigaction *act)
{
	struct chain *c = chain_of(sig);

	if (c)
		slot_publish(c, act);
}

/*
 * SIGTRAP or the handshake's signal joins the chain.  From the store of
 * chained[] on, the application's sigaction calls are recorded instead of
 * reaching the kernel; the exchange that installs ours hands back the
 * action in effect just before.  That one becomes the chain's, unless an
 * application call was recorded in between, which is newer.
 */
int fl_chain_take(int sig, const struct sigaction *ours)
{
	int i = sig == SIGTRAP ? 2 : 3;
	struct chain *c = &chains[i];
	uint32_t before = atomic_load_explicit(&c->next, memory_order_acquire);
	struct sigaction prev;

	if (sig != SIGTRAP && (sig != fl_park.signo || !sig))
		return -EINVAL;
	atomic_store_explicit(&chained[i], 1, memory_order_seq_cst);
	if (fl_real_sigaction(sig, ours, &prev) != 0) {
		int err = -errno;

		atomic_store_explicit(&chained[i], 0, memory_order_seq_cst);
		return err;
	}
	/* The application's action for it may have been relayed (relay.c) until now. */
	if ((prev.sa_flags & SA_SIGINFO) && prev.sa_sigaction == fl_relay_handler)
		fl_relay_read(sig, &prev);
	if (atomic_load_explicit(&c->next, memory_order_acquire) == before &&
	    !((prev.sa_flags & SA_SIGINFO) && prev.sa_sigaction == fl_dispatch_handler))
		slot_publish(c, &prev);
	return 0;
}

void fl_chain_set_restorer(void (*restorer)(void))
{
	atomic_store_explicit(&libc_restorer, (uintptr_t)restorer, memory_order_relaxed);
}

int fl_real_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	/*
	 * glibc's own name for sigaction: the preload shim interposes
	 * sigaction, signal, ... but not this one.
	 */
	extern int __sigaction(int, const struct sigaction *, struct sigaction *);

	return __sigaction(sig, act, old);
}

void fl_chain_act_of(const struct sigaction *act, struct fl_chain_act *a)
{
	/*
	 * What the kernel would have stored, and would report back as oldact
	 * later: the mask without SIGKILL and SIGSTOP, the flags without the
	 * bits it does not know (since 5.11 it clears them, so that programs
	 * can probe for flags with SA_UNSUPPORTED), and SA_RESTORER with
	 * libc's restorer (glibc's sigaction always asks for it; ours carries
	 * a copy of it, see fl_chain_restorers).
	 */
	act_of(act, a);
	a->mask &= ~(sig_bit(SIGKILL) | sig_bit(SIGSTOP));
	a->flags &= KERNEL_SA_FLAGS;
	a->flags |= SA_RESTORER;
	a->restorer = atomic_load_explicit(&libc_restorer, memory_order_relaxed);
}

/*
 * The application's actions for the signals the shim relays (relay.c):
 * [sig], the same records as the chain's, without mirrors.
 */
static struct chain others[KERNEL_SIGSET_BITS + 1];

void fl_chain_other_read(int sig, struct fl_chain_act *out)
{
	slot_read_raw(&others[sig], out);
}

void fl_chain_other_publish(int sig, const struct fl_chain_act *act, struct fl_chain_act *old)
{
	uint32_t i = slot_publish_raw(&others[sig], act);

	while (old && !slot_copy_raw(&others[sig].slots[i % CHAIN_SLOTS], old))
		;
}

/* The process the records are this one's: set by fl_chain_owner at start and in a forked child. */
static _Atomic pid_t records_pid;

void fl_chain_owner(void)
{
	atomic_store_explicit(&records_pid, (pid_t)syscall(SYS_getpid), memory_order_relaxed);
}

bool fl_chain_vforked(void)
{
	pid_t owner = atomic_load_explicit(&records_pid, memory_order_relaxed);

	return owner && owner != (pid_t)syscall(SYS_getpid);
}

int fl_sigaction(int sig, const struct sigaction *act, struct sigaction *oldact)
{
	struct chain *c = chain_of(sig);
	struct fl_chain_act k;
	uint32_t old;

	/*
	 * A child of vfork (or of clone with CLONE_VM), before it executes
	 * something: it shares the parent's memory, records included, but
	 * not its actions.  Its sigaction calls are its own, the kernel's
	 * (CPython's subprocess resets its handlers there).
	 */
	if (fl_chain_vforked())
		return fl_real_sigaction(sig, act, oldact);
	if (!c || !atomic_load_explicit(&fl_dispatch.ready, memory_order_acquire))
		return fl_relay_sigaction(sig, act, oldact);

	if (!act) {
		if (oldact)
			slot_read(c, oldact);
		return 0;
	}

	fl_chain_act_of(act, &k);
	/*
	 * The old action is the slot the exchange replaced, not "current"
	 * read before it: another thread may publish in between.  Only 63
	 * more sigaction calls racing this one could reuse that slot first.
	 */
	old = slot_publish_raw(c, &k);
	/*
	 * The kernel's action follows (the mask and flags the new action
	 * asks for).  Should that fail, deliveries still apply the recorded
	 * mask themselves (fl_chain_deliver).
	 */
	if (mirrored(sig))
		fl_chain_mirror(sig);
	while (oldact && !slot_copy(&c->slots[old % CHAIN_SLOTS], oldact))
		;
	return 0;
}

/* Set once the chain gave a signal its default action back: the process is dying by it. */
static _Atomic int restored_default;

bool fl_chain_restored_default(void)
{
	/* Pairs with the release in fl_chain_restore_default, before its rt_sigaction. */
	return atomic_load_explicit(&restored_default, memory_order_acquire);
}

void fl_chain_restore_default(int sig)
{
	struct sigaction dfl;

	atomic_store_explicit(&restored_default, 1, memory_order_release);
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	fl_real_sigaction(sig, &dfl, NULL);
}

void fl_chain_deliver(int sig, siginfo_t *si, void *ucv, uintptr_t restorer)
{
	ucontext_t *uc = ucv;
	struct chain *c = chain_of(sig);
	struct fl_chain_act act;
	/* The kernel raised it (a fault or a trap), nobody sent it. */
	int synchronous = si->si_code > 0;
	/*
	 * A fault: returning re-executes the instruction.  Not a trap: the
	 * kernel's SIGTRAP (int3, a single step, a breakpoint) reports what
	 * already executed, and returning goes on after it.
	 */
	bool refaults = synchronous && sig != SIGTRAP;
	/* The signals the application blocks only in fl_mask_virtual (mask.c). */
	uint64_t hide = fl_mask_hidden();
	uint64_t before, want, kernel_want, applied;

	slot_read_raw(c, &act);

	/*
	 * Blocked, as the application sees its mask: the kernel would have
	 * kept one that was sent pending (held until it is unblocked), and
	 * given a fault or a trap the default action (force_sig_info_to_task:
	 * a blocked forced signal resets the action to SIG_DFL).
	 */
	if ((atomic_load_explicit(&fl_mask_virtual, memory_order_relaxed) & sig_bit(sig)) &&
	    !(synchronous && fl_mask_resync(uc) &&
	      !(atomic_load_explicit(&fl_mask_virtual, memory_order_relaxed) & sig_bit(sig)))) {
		if (!synchronous) {
			fl_mask_hold(sig, si);
			return;
		}
		act.handler = (uintptr_t)SIG_DFL;
	}

	if (act.handler == (uintptr_t)SIG_DFL || act.handler == (uintptr_t)SIG_IGN) {
		/* An ignored signal someone sent: dropped, as the kernel does. */
		if (act.handler == (uintptr_t)SIG_IGN && !synchronous)
			return;
		/*
		 * The kernel forces the default action for a synchronous fault
		 * or trap whose handler is SIG_IGN (force_sig_info_to_task), and
		 * SIG_DFL is the default: restore it and let the fault happen
		 * again, so the process dies by this signal with its core dump.
		 * A trap does not happen again, and a signal that was sent is
		 * sent again: either is delivered when this handler returns (or
		 * now, when the action in the kernel has SA_NODEFER).
		 */
		fl_chain_restore_default(sig);
		if (!refaults)
			syscall(SYS_tgkill, getpid(), gettid(), sig);
		return;
	}

	/*
	 * The mask the kernel would have set: the interrupted one, plus
	 * sa_mask, plus the signal itself unless SA_NODEFER.  sigreturn
	 * restores uc_sigmask when this handler returns.  The kernel has set
	 * it already when it delivered through the mirror of this action
	 * (fl_chain_mirror); otherwise set it here.
	 */
	memcpy(&before, &uc->uc_sigmask, sizeof(before));
	want = before | act.mask | ((act.flags & SA_NODEFER) ? 0 : sig_bit(sig));
	/* Under the shim, the kernel's mask leaves out the signals of hide. */
	kernel_want = want & ~hide;
	if (!applied_mask(c, sig, restorer, before, &applied) || applied != kernel_want)
		syscall(SYS_rt_sigprocmask, SIG_SETMASK, &kernel_want, NULL,
			KERNEL_SIGSET_BITS / 8);

	/* As the kernel does: only the handler goes back to SIG_DFL. */
	if (act.flags & SA_RESETHAND) {
		struct fl_chain_act reset = act;

		reset.handler = (uintptr_t)SIG_DFL;
		slot_publish_raw(c, &reset);
	}

	/*
	 * Under the shim the handler runs with the signals of hide that want
	 * names blocked in fl_mask_virtual, and finds in uc_sigmask the mask
	 * of the interrupted code as the application had it.  What uc_sigmask
	 * holds when it returns is the mask sigreturn restores (a handler may
	 * change it): split again, the kernel's part and the virtual one.  A
	 * handler that jumps out (siglongjmp) leaves fl_mask_virtual as the
	 * outermost handler found it (fl_mask_jump, the shim's siglongjmp).
	 */
	if (hide)
		fl_mask_handler_enter(uc, want & hide);
	/*
	 * The handler runs from the frame the kernel would have given it
	 * (frame.c), and returns to the action's restorer, or under the shim
	 * to one that ends what fl_mask_handler_enter began.
	 */
	if (!(act.flags & SA_RESTORER) || !act.restorer)
		act.restorer = (uintptr_t)fl_chain_restorers;
	if (fl_frame_enter(sig, si, uc, restorer, act.handler, act.flags & SA_ONSTACK,
			   hide ? (uintptr_t)fl_frame_leave_restorer : act.restorer, synchronous)) {
		/* Not entered: the interrupted stack could not take the frame. */
		if (hide)
			fl_mask_handler_leave(uc);
		return;
	}
	/* A frame not laid out as frame.c knows: a call, on faultline's. */
	if (act.flags & SA_SIGINFO)
		((void (*)(int, siginfo_t *, void *))act.handler)(sig, si, ucv);
	else
		((void (*)(int))act.handler)(sig);
	if (hide)
		fl_mask_handler_leave(uc);
}
