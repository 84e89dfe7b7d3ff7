/* SPDX-License-Identifier: MIT */
/*
 * The heal policy (heal_policy.c) and what the layers above ask of
 * healing: fl_init (FAULTLINE_HEAL_AFTER, fl_init_opts), the agent
 * (faultlined's requests).
 */
#ifndef FL_PATCH_HEAL_POLICY_H
#define FL_PATCH_HEAL_POLICY_H

#include <stdint.h>

#include <faultline/format.h>

/* Registers the policy's fork handlers; once, at fl_init.  Returns 0 or -errno. */
int fl_heal_policy_init(void);

/*
 * The process's own policy (fl_init's): heals a site once its check fails
 * after times within window_s seconds (0: ever; after 0: never), and
 * unheals a healed site once its stub has seen no failure for
 * unheal_after seconds (0: never).  The first policy enables code patching
 * and starts the healer thread.  Returns 0 or -errno (said in diag);
 * thread-safe.
 */
int fl_heal_policy_set(uint32_t after, uint32_t window_s, uint32_t unheal_after,
		       struct fl_diag *diag);
void fl_heal_policy_get(uint32_t *after, uint32_t *window_s, uint32_t *unheal_after);

/*
 * faultlined's FL_REQ_HEAL_THRESHOLD (proto.h): arg's policy, unless it is
 * a default (FL_HEAL_DEFAULT) and the process set its own (then nothing
 * changes).  *before: the policy before, in arg's form.  Returns 0 or
 * -errno (said in diag).
 */
int fl_heal_policy_request(uint64_t arg, uint64_t *before, struct fl_diag *diag);

/*
 * faultlined's FL_REQ_UNHEAL_AFTER: the quiet time in seconds, with
 * FL_HEAL_DEFAULT a default the process's own overrides; *before the one
 * before.  Returns 0 or -errno (-EINVAL: over UINT32_MAX seconds).
 */
int fl_heal_policy_unheal_after(uint64_t arg, uint32_t *before, struct fl_diag *diag);

/*
 * Heals every registered site whose trapped failures are more than over.
 * Returns 0 with the counts set, or -errno.
 */
int fl_heal_over(uint64_t over, uint32_t *healed, uint32_t *unhealable);

/* With the healer: unheals the healed sites quiet for seconds.  Thread-safe. */
void fl_heal_unheal_quiet(uint32_t seconds);

#endif /* FL_PATCH_HEAL_POLICY_H */
