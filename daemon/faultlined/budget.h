/* SPDX-License-Identifier: MIT */
/*
 * Per-user budgets (budget.c): how many sites, and how many bytes of
 * sections (fault map and stack map sections, and the names SYMBOLS gives
 * sites), one user may make the daemon hold over its live processes and the
 * exited ones it keeps.  Root and the daemon's own uid are not held to them
 * (the per-process limits still apply).  A live process's data comes first:
 * to make room, the user's exited processes are dropped, the first to exit
 * first; only when its live processes alone would go over is the module (or
 * the names) refused.
 *
 * Loop thread only.
 */
#ifndef FLD_BUDGET_H
#define FLD_BUDGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct fld_budget_opts {
	uint64_t max_sites;	/* per user */
	uint64_t max_bytes;	/* per user */
};

void fld_budget_init(const struct fld_budget_opts *o);

/* Whether uid is held to the budgets: not root, not the daemon's own uid. */
bool fld_budget_applies(uid_t uid);

/*
 * Makes room for sites more sites and bytes more bytes of uid's, dropping
 * its exited processes as needed.  Returns 0 when they fit (always for a
 * uid not held to the budgets), or -EDQUOT with why (size bytes) saying
 * which budget; the first refusal of each uid is logged as a warning, the
 * others at debug level.
 */
int fld_budget_admit(uid_t uid, uint64_t sites, uint64_t bytes, char *why, size_t size);

#endif /* FLD_BUDGET_H */
