/* SPDX-License-Identifier: MIT */
/* Internal to lib/patch/: the patcher's lock, shared with the points API. */
#ifndef FL_PATCH_INTERNAL_H
#define FL_PATCH_INTERNAL_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include <faultline/patch.h>

/*
 * The patch lock: one patch, or one points operation (points.c), at a time.
 * It blocks every signal of the calling thread until fl_patch_unlock (a
 * handler of its own that ran into a site being patched would wait for the
 * patch for ever), and fork waits for it.  Returns 0, or -errno when the
 * fork handlers could not be registered (said in diag).
 */
int fl_patch_lock(sigset_t *old, struct fl_diag *diag);
void fl_patch_unlock(const sigset_t *old);

struct fl_maps;

/*
 * fl_patch_text, with the patch lock held.  known: the mappings as the
 * caller read them under the lock (or NULL: read here), so that a heal
 * reads /proc/self/maps once; the code's own mappings are all it looks
 * at unless the changes move instruction boundaries (the handshake reads
 * its own).
 */
/*
 * How many changes of code (fl_patch_text_locked calls that wrote) this
 * process has made: each costs its serializations, and maybe a
 * handshake.  For tests and benchmarks.
 */
uint64_t fl_patch_changes_made(void);

/*
 * Forgets the addresses patched in [start, end), a module's code that is
 * gone (fl_poked, dispatch.h): a trap there is no longer taken for one
 * of faultline's, whatever is loaded there next.  Takes only the lock of
 * fl_poked's writers, briefly: callable under the table's lock.
 */
void fl_poked_forget(uint64_t start, uint64_t end);

int fl_patch_text_locked(const struct fl_patch *p, size_t n, const struct fl_maps *known,
			 unsigned flags, struct fl_diag *diag);

/*
 * fl_patch_text_locked's flags.  FL_PATCH_ENTERED_AT_START: the caller
 * knows that no thread can be anywhere in each change's range but at its
 * first byte (a healed site's jump, whose range may go on past the jump
 * with bytes nothing reaches), so the change needs no thread checked.
 */
#define FL_PATCH_ENTERED_AT_START 1u
/*
 * FL_PATCH_CHECK_THREADS: the change is to be treated as one that moves
 * boundaries whatever the bytes at its address decode to now (a
 * relocation's entry, written over a healed site's jump whose stub comes
 * back inside it): every thread is checked.
 */
#define FL_PATCH_CHECK_THREADS 2u

/*
 * With the patch lock held: the handshake of patch.c (threads that wait in
 * the kernel looked at, the others stopped) proves that none is in any of the ranges (addr, len of each;
 * the bytes are not looked at), their first byte included, and none has a
 * return address into one; tries again a while.  Returns 0 (then no thread
 * can be in them any more, for code no longer reachable), -EBUSY (said
 * in diag), or the handshake's other errors.
 */
int fl_patch_quiesce_locked(const struct fl_patch *ranges, size_t n, struct fl_diag *diag);

/* fl_patch_enable has succeeded. */
bool fl_patch_enabled(void);

#endif /* FL_PATCH_INTERNAL_H */
