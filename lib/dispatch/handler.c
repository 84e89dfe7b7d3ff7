/* SPDX-License-Identifier: MIT */
/*
 * Signal context (see dispatch.h for the rules): the SIGSEGV/SIGBUS
 * handler, and SIGTRAP's once code patching is enabled (trap.c).  This is
 * where a faulting PC becomes a handler PC.
 *
 * A fault is claimed only when all four rules of DESIGN.md hold:
 *  1. the kernel raised it: SIGSEGV with SEGV_MAPERR/SEGV_ACCERR, or SIGBUS
 *     with BUS_ADRERR (what userfaultfd's SIGBUS feature sends, and what
 *     a fault a region's helper thread forwarded reads as once
 *     fl_region_forwarded has checked it);
 *  2. the PC is exactly a registered faulting PC;
 *  3. the access fits the site's kind (fl_uc_fault_wrote: on x86-64 bit 1
 *     of the page fault error code, uc_mcontext REG_ERR);
 *  4. the address is in the null area (below fl_dispatch.null_bound) or
 *     past the committed limit of a registered region (there also a
 *     SIGSEGV with SEGV_ACCERR, in a region's guard tail: see
 *     fl_region_guard in dispatch.h).
 * A claimed fault resumes at the site's handler PC and bumps the site's
 * counter.  Anything else goes down the chain unchanged (chain.c).
 */
#include <errno.h>
#include <string.h>

#include <faultline/format.h>

#include "dispatch/dispatch.h"
#include "uctx.h"

struct fl_dispatch_state fl_dispatch;

/*
 * Set while this thread runs the claiming part of the handler: a fault
 * there is a bug in faultline, and must kill the process by its default
 * action rather than recurse.  Initial-exec: no allocation on first use.
 */
static __thread int in_handler __attribute__((tls_model("initial-exec")));

/*
 * The context this thread's handler of ours interrupted, from its first
 * statement until it returns or hands the signal to the application: a
 * handshake that stops the thread meanwhile (fl_trap_park) reports where
 * that context goes on, on the stack it was on, rather than the handler's
 * own frames, maybe on the alternate stack.
 */
__thread const ucontext_t *fl_handler_uc __attribute__((tls_model("initial-exec")));
__thread int fl_handler_sig __attribute__((tls_model("initial-exec")));

enum verdict { CHAIN, CLAIMED, RETRY };

static bool kernel_fault(int sig, const siginfo_t *si)
{
	if (sig == SIGSEGV)
		return si->si_code == SEGV_MAPERR || si->si_code == SEGV_ACCERR;
	return sig == SIGBUS && si->si_code == BUS_ADRERR;
}

static bool kind_fits(uint32_t kind, bool write)
{
	switch (kind) {
	case FL_FAULT_LOAD:
		return !write;
	case FL_FAULT_STORE:
		return write;
	case FL_FAULT_LOAD_STORE:	/* the load or the store */
		return true;
	default:
		return false;
	}
}

static enum verdict claim(int sig, siginfo_t *si, ucontext_t *uc)
{
	const struct fl_snapshot *snap;
	const struct fl_site_entry *site;
	uint64_t addr = (uint64_t)(uintptr_t)si->si_addr;
	uint64_t pc = fl_uc_pc(uc);
	bool write = fl_uc_fault_wrote(uc, si);
	bool guarded = addr < fl_dispatch.null_bound;
	/* The kernel's own signal, which its eBPF program counts at pc. */
	bool from_kernel = !(sig == SIGBUS && si->si_code == SI_QUEUE);
	enum verdict v = CHAIN;
	/* The region of a guard fault: in its tail, or through the userfaultfd. */
	struct fl_region *tail = NULL, *through_uffd = NULL;
	unsigned parity;

	/*
	 * A fault a region's helper thread forwarded (SI_QUEUE): accepted, it
	 * reads as the kernel's SIGBUS from here on; -1: it was meant for the
	 * context this signal interrupted, not this one: do nothing.
	 */
	if (sig == SIGBUS && si->si_code == SI_QUEUE && fl_region_forwarded(si, uc) < 0)
		return RETRY;
	if (!kernel_fault(sig, si))
		return CHAIN;
	/*
	 * Rule 4 without the snapshot: past a region's limit is a SIGBUS
	 * (userfaultfd's, or the helper's), or a SEGV_ACCERR in a guard tail.
	 * Another SIGSEGV outside the null area cannot be claimed, and need
	 * not touch the readers' counters, which every thread in the handler
	 * shares.
	 */
	if (!guarded && sig != SIGBUS &&
	    !(si->si_code == SEGV_ACCERR && fl_region_maybe_guarded(addr)))
		return CHAIN;

	parity = fl_snapshot_enter(&snap);
	if (!snap)
		goto out;

	if (!guarded) {
		const struct fl_snap_region *r = fl_snapshot_region(snap, addr);

		if (r && sig == SIGSEGV) {
			struct fl_region *g = r->region;
			uint64_t off = addr - g->start;

			/* Not a page of its guard tail: not faultline's. */
			if (off < atomic_load_explicit(&g->guard_from, memory_order_relaxed))
				goto out;
			/*
			 * Acquire: pairs with the release store of
			 * fl_region_commit.  Committed since it was guarded:
			 * read-write again, and the access retries (and, the
			 * page missing, goes to the userfaultfd).
			 */
			if (off < atomic_load_explicit(&g->limit, memory_order_acquire)) {
				v = fl_region_unguard(g, off, atomic_load_explicit(
					&g->limit, memory_order_acquire)) ? CHAIN : RETRY;
				goto out;
			}
			tail = g;
			guarded = true;
		} else if (r) {
			int populated = fl_region_fault(r->region, addr);

			if (populated > 0) {
				atomic_fetch_add_explicit(&fl_dispatch.populated, 1,
							  memory_order_relaxed);
				/*
				 * At a site, apart from its failed checks: the
				 * kernel counted a fault signal there.
				 */
				site = from_kernel ? fl_snapshot_lookup(snap, pc) : NULL;
				if (site && fl_dispatch.populations)
					atomic_fetch_add_explicit(
						&fl_dispatch.populations[(size_t)site->counter *
									 fl_dispatch.populations_stride],
						1, memory_order_relaxed);
				if (site)
					fl_dispatch_mark_dirty(site->counter);
				v = RETRY;
				goto out;
			}
			guarded = populated == 0;
			if (guarded)
				through_uffd = r->region;
			/*
			 * The helper thread's SIGBUS is not a page fault of
			 * this thread: its fault's write bit is stale, and si_errno carries
			 * the write bit of the userfaultfd message instead.
			 */
			if (r->region->flags & FL_REGION_HELPER_THREAD) {
				write = si->si_errno & 1;
				/* The kernel's SIGBUS has si_errno 0, as the chain expects. */
				si->si_errno = 0;
			}
		}
	}
	if (!guarded)
		goto out;

	site = fl_snapshot_lookup(snap, pc);
	if (!site || !kind_fits(site->kind, write)) {
		/*
		 * In the guard tail: read-write again from here on, and the
		 * access faults again through the userfaultfd, so that the
		 * chain gets what it would have without the tail (a SIGBUS).
		 */
		if (tail && !fl_region_unguard(tail, addr - tail->start, tail->size))
			v = RETRY;
		goto out;
	}

	/* Relaxed: a statistic; the daemon reads it whenever it likes. */
	atomic_fetch_add_explicit(&fl_dispatch.counters[site->counter], 1,
				  memory_order_relaxed);
	fl_dispatch_mark_dirty(site->counter);
	fl_heal_note(site->counter);
	fl_uc_set_pc(uc, site->handler_pc);
	atomic_fetch_add_explicit(&fl_dispatch.claimed, 1, memory_order_relaxed);
	/* The next guard faults of this region need no userfaultfd. */
	if (through_uffd && atomic_fetch_add_explicit(&through_uffd->uffd_guards, 1,
						      memory_order_relaxed) + 1 >= FL_GUARD_AFTER)
		fl_region_guard(through_uffd);
	v = CLAIMED;
out:
	/* After the last use of snap and site: the writer may free them. */
	fl_snapshot_leave(parity);
	return v;
}

/*
 * claim(), with a handshake's stop that comes meanwhile deferred until its
 * decision is in the context (fl_dispatch_claiming, trap.c).  The signal
 * fences keep the compiler from moving the flag across the claim: the
 * stop's handler runs on this thread.
 */
static enum verdict claim_deferring_stops(int sig, siginfo_t *si, void *ucv)
{
	enum verdict v;

	fl_dispatch_claiming = 1;
	atomic_signal_fence(memory_order_seq_cst);
	v = claim(sig, si, ucv);
	atomic_signal_fence(memory_order_seq_cst);
	fl_dispatch_claiming = 0;
	atomic_signal_fence(memory_order_seq_cst);
	fl_trap_park_deferred(ucv);
	return v;
}

void fl_dispatch_handler(int sig, siginfo_t *si, void *ucv)
{
	/* The kernel's: sa_restorer, which tells the mirror it used (chain.c). */
	uintptr_t restorer = (uintptr_t)__builtin_return_address(0);
	int saved_errno = errno;
	enum verdict v;

	/*
	 * Not a fault: the patcher's handshake may stop a thread anywhere,
	 * in a handler of ours too (see fl_trap_park).
	 */
	if (sig == fl_park.signo && fl_trap_park(sig, si, ucv)) {
		errno = saved_errno;
		return;
	}
	if (in_handler) {
		fl_chain_restore_default(sig);
		return;
	}
	fl_handler_sig = sig;
	fl_handler_uc = ucv;

	in_handler = 1;
	if (sig == SIGTRAP)
		v = fl_trap_claim(si, ucv) ? CLAIMED : CHAIN;
	else if (sig == SIGSEGV || sig == SIGBUS) {
		v = claim_deferring_stops(sig, si, ucv);
		/* Before the first rescan published the sites (scan_wait.c). */
		if (v == CHAIN && fl_dispatch_scan_wait(si))
			v = claim_deferring_stops(sig, si, ucv);
	} else
		v = CHAIN;	/* the handshake's signal, someone else's */
	in_handler = 0;

	errno = saved_errno;
	fl_handler_uc = NULL;
	if (v != CHAIN)
		return;

	atomic_fetch_add_explicit(&fl_dispatch.chained, 1, memory_order_relaxed);
	/* The application's handler may longjmp out: nothing of ours is held. */
	fl_chain_deliver(sig, si, ucv, restorer);
}

bool fl_dispatch_installed(int sig)
{
	struct sigaction cur;

	if (fl_real_sigaction(sig, NULL, &cur) != 0)
		return false;
	return (cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == fl_dispatch_handler;
}

/*
 * Our action as first installed: SA_NODEFER with an empty mask;
 * SA_ONSTACK: a stack overflow can only be handled on an alternate stack.
 * For SIGSEGV and SIGBUS, fl_chain_mirror then gives it the mask and the
 * flags the recorded action asks for; for SIGTRAP and the handshake's
 * signal, chain.c sets the mask when it delivers.
 */
static void our_action(struct sigaction *ours)
{
	memset(ours, 0, sizeof(*ours));
	ours->sa_sigaction = fl_dispatch_handler;
	ours->sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER | SA_RESTART;
	sigemptyset(&ours->sa_mask);
}

int fl_dispatch_install_trap(void)
{
	const int sigs[] = { SIGTRAP, fl_park.signo };
	struct sigaction ours;

	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		int err;

		if (fl_dispatch_installed(sigs[i]))
			continue;
		/*
		 * The handshake's signal is not blocked while SIGTRAP is
		 * handled: a thread that yields at the int3 of a patch is
		 * stopped there, and reported at the context it goes back to
		 * (fl_handler_uc).
		 */
		our_action(&ours);
		err = fl_chain_take(sigs[i], &ours);
		if (err)
			return err;
	}
	/*
	 * SIGTRAP's mirror from now on, with the application's mask (see
	 * chain.c's mirrored()); SIGSEGV's and SIGBUS's leave the handshake's
	 * signal, known from now on, unblocked.
	 */
	fl_dispatch_remirror();
	return 0;
}

void fl_dispatch_remirror(void)
{
	static const int sigs[] = { SIGSEGV, SIGBUS, SIGTRAP };

	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		if (fl_chain_taken(sigs[i]) && fl_dispatch_installed(sigs[i]))
			fl_chain_mirror(sigs[i]);
}

int fl_dispatch_install(void)
{
	static const int sigs[] = { SIGSEGV, SIGBUS };

	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		struct sigaction ours, old;

		our_action(&ours);
		int err;

		if (fl_real_sigaction(sigs[i], NULL, &old) != 0)
			return -errno;
		if (!((old.sa_flags & SA_SIGINFO) && old.sa_sigaction == fl_dispatch_handler))
			fl_chain_record(sigs[i], &old);
		if (fl_real_sigaction(sigs[i], &ours, NULL) != 0 ||
		    fl_real_sigaction(sigs[i], NULL, &ours) != 0)
			return -errno;
		if (ours.sa_flags & SA_RESTORER)
			fl_chain_set_restorer(ours.sa_restorer);
		err = fl_chain_mirror(sigs[i]);
		if (err)
			return err;
	}
	return 0;
}
