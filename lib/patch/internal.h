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

/* fl_patch_text, with the patch lock held. */
int fl_patch_text_locked(const struct fl_patch *p, size_t n, struct fl_diag *diag);

/* fl_patch_enable has succeeded. */
bool fl_patch_enabled(void);

#endif /* FL_PATCH_INTERNAL_H */
