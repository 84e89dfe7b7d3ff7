/* SPDX-License-Identifier: MIT */
/*
 * Code patching: changing the code of the running process, inside the
 * process (never through ptrace or another process's writes), while its
 * other threads run that code.
 *
 * fl_patch_enable makes the process ready once: it registers for
 * membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE), which serializes
 * every thread of the process, and installs faultline's handlers for
 * SIGTRAP and for the handshake's real-time signal (SIGRTMAX - 1, or
 * $FAULTLINE_HANDSHAKE_SIGNAL), chained like SIGSEGV and SIGBUS: the
 * application's own handlers for them keep working, through fl_sigaction
 * or the preload shim.
 *
 * fl_patch_text replaces instructions with the protocol of the kernel's
 * text_poke_bp (see lib/patch/patch.c): an int3 first, then the tail, then
 * the new first byte, with every thread serialized after each step.  A
 * thread that reaches an instruction while it is being changed runs either
 * the old instruction or the new one, whole, never a mix.
 */
#ifndef FAULTLINE_PATCH_H
#define FAULTLINE_PATCH_H

#include <stddef.h>
#include <stdint.h>

#include <faultline/format.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The longest change.  One within the instruction at its address is at
 * most 15 bytes (the longest x86 instruction); a longer one moves
 * instruction boundaries (the thread handshake below).
 */
#define FL_PATCH_MAX_LEN 256
/* The most sites one fl_patch_text call changes together. */
#define FL_PATCH_MAX_BATCH 256

/*
 * Enables code patching, after fl_init.  Idempotent.  Returns 0, or:
 *   -ENODEV   before fl_init;
 *   -ENOSYS   membarrier's SYNC_CORE command is not offered (Linux before
 *             4.16, or membarrier filtered out by seccomp): patching is
 *             refused, and nothing else changes;
 *   -EINVAL   FAULTLINE_HANDSHAKE_SIGNAL is not a real-time signal;
 *   -errno    of the registration or of installing the handlers.
 * diag (may be NULL) says which.  Thread-safe; not async-signal-safe.
 */
int fl_patch_enable(struct fl_diag *diag);

/* One change: len bytes at addr, from old_bytes to new_bytes. */
struct fl_patch {
	void *addr;
	const void *old_bytes;	/* what must be at addr now */
	const void *new_bytes;
	size_t len;		/* 1 .. FL_PATCH_MAX_LEN */
};

/*
 * Makes the n changes of p (1 .. FL_PATCH_MAX_BATCH, not overlapping) with
 * one set of serializations: all or none.  Each addr is the first byte of
 * an instruction.  Changes within the instruction at addr use the int3
 * protocol: other threads run on.  A change over more than that moves
 * instruction boundaries: every other thread is stopped (a signal
 * handshake) and must be outside it, by its PC and by the return
 * addresses on its stack, or the call tries again a while, then refuses.
 * Returns 0, or, with nothing changed:
 *   -ENOTSUP  fl_patch_enable has not succeeded;
 *   -EINVAL   n, a len, an address (NULL, overlapping another change);
 *   -ESTALE   the bytes at an addr are not its old_bytes;
 *   -EBUSY    a change moves instruction boundaries and a thread stayed
 *             inside it, or would return into it, or did not stop (its
 *             the handshake's signal blocked);
 *   -E2BIG    more than 1024 other threads to stop;
 *   -EFAULT   an address is not in executable memory of this process;
 *   -EPERM    an address is in a shared mapping of a file (writing would
 *             change the file);
 *   -EACCES   the kernel refused to make the page writable (an SELinux
 *             execmod denial, or a PaX-style MPROTECT policy): the process
 *             needs that permission to be patched.
 * diag (may be NULL) names the change and the reason.
 *
 * The pages stay executable throughout; they are writable only while the
 * changes are made (W^X otherwise: their protection is restored).  Calls
 * are serialized with each other.  Thread-safe; not async-signal-safe.
 */
int fl_patch_text(const struct fl_patch *p, size_t n, struct fl_diag *diag);

/* ------------------------------------------------------------------------
 * Healing: an implicit null check that fails too often becomes an
 * explicit one, in place (lib/patch/heal.c).  The faulting instruction
 * becomes a jump to a stub that tests the base register of its access: a
 * null one is counted (as a healed failure, see fl_site_heal_info) and
 * goes to the handler PC without a signal; any other runs the instruction,
 * relocated, and jumps back.  Flags, every register and the red zone are
 * preserved on both paths.
 */

/* What a site is. */
enum fl_heal_state {
	FL_HEAL_IMPLICIT = 0,	/* as compiled: a null faults */
	FL_HEAL_HEALED = 1,	/* an explicit check in a stub */
	FL_HEAL_UNHEALABLE = 2,	/* healing was tried and cannot be done in place */
};

/* What a heal callback is told. */
struct fl_heal_event {
	size_t sz;
	uint64_t faulting_pc;
	int state;		/* enum fl_heal_state: what the site is now */
	const char *tactic;	/* HEALED: "B1", "B2", "T1", "T2", "T3" (E9Patch's names), "REL" */
	const char *reason;	/* UNHEALABLE: why */
};

typedef void (*fl_heal_fn)(const struct fl_heal_event *ev, void *ctx);

/*
 * Sets the function told of every site healed, unhealed, or found
 * unhealable (a runtime may then recompile the code, as HotSpot does);
 * NULL: none.  It is called in the thread that healed, after the change,
 * without faultline's locks: it may call fl_site_heal.  Thread-safe.
 */
void fl_set_heal_callback(fl_heal_fn fn, void *ctx);

/*
 * Heals the registered implicit-check site at faulting_pc.  Returns 0
 * (also when it is healed already), or:
 *   -ENOTSUP     fl_patch_enable has not succeeded;
 *   -ENOENT      no registered site there;
 *   -EOPNOTSUPP  it cannot be healed in place (diag and the callback say
 *                why: no room for a stub within reach, bytes another
 *                healed site relies on, an instruction without a base
 *                register);
 *   and fl_patch_text's errors.  Thread-safe; not async-signal-safe.
 */
int fl_site_heal(const void *faulting_pc, struct fl_diag *diag);

/*
 * Restores the implicit check at faulting_pc (the compiled bytes) and
 * frees its stub once no thread can be in it.  Returns 0, -ENOENT (not
 * healed), or fl_patch_text's errors.  Thread-safe; not async-signal-safe.
 */
int fl_site_unheal(const void *faulting_pc, struct fl_diag *diag);

struct fl_heal_info {
	size_t sz;			/* sizeof(struct fl_heal_info) */
	int state;			/* enum fl_heal_state */
	char tactic[4];			/* HEALED */
	char reason[112];		/* UNHEALABLE */
	uint64_t healed_at_ns;		/* HEALED: CLOCK_REALTIME */
	uint64_t stub;			/* HEALED: the stub's address */
	uint64_t healed_failures;	/* nulls the stub sent to the handler, ever */
};

/*
 * Fills *out (out->sz set by the caller) for the site at faulting_pc.
 * Returns 0, -EINVAL (out), -ENOENT (no registered site).  Thread-safe.
 */
int fl_site_heal_info(const void *faulting_pc, struct fl_heal_info *out);

#ifdef __cplusplus
}
#endif

#endif /* FAULTLINE_PATCH_H */
