/* SPDX-License-Identifier: MIT */
/*
 * Per-user budgets (budget.c): how many sites, how many bytes of sections
 * (fault map and stack map sections, and the names SYMBOLS gives sites),
 * and how many bytes of records in the state directory one user may make
 * the daemon hold over its live processes and the exited ones it keeps.
 * Every site is charged, wherever the daemon found it: a MODULE_ADD, the
 * region's site table when the process disconnects or is gone
 * (fld_proc_scan), a record restored at start.  Root and the daemon's own
 * uid are not held to them (the per-process limits still apply).  A live
 * process's data comes first: to make room, the user's exited processes
 * are dropped, the first to exit first; only when its live processes
 * alone would go over is the module (or the names) refused.
 *
 * A refusal is logged once per user and budget (a warning) until the user
 * is back within it with room to spare (fld_budget_within): never a line
 * per refused message, process or site.
 *
 * Loop thread only.
 */
#ifndef FLD_BUDGET_H
#define FLD_BUDGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct fld_proc;

struct fld_budget_opts {
	uint64_t max_sites;		/* per user */
	uint64_t max_bytes;		/* per user: sections and names */
	uint64_t max_state_bytes;	/* per user: its records and counts files */
};

/* What a user may be over: each is logged once (fld_budget_refused). */
enum fld_budget_kind {
	FLD_BUDGET_SITES,
	FLD_BUDGET_BYTES,
	FLD_BUDGET_STATE,
	FLD_BUDGET_REQUESTS,	/* requests in flight (requests.c) */
	FLD_BUDGET_KINDS
};

void fld_budget_init(const struct fld_budget_opts *o);

/* Whether uid is held to the budgets: not root, not the daemon's own uid. */
bool fld_budget_applies(uid_t uid);

/*
 * Makes room for sites more sites and bytes more bytes of uid's, dropping
 * its exited processes as needed.  Returns 0 when they fit (always for a
 * uid not held to the budgets), or -EDQUOT with why (size bytes) saying
 * which budget (logged: fld_budget_refused).
 */
int fld_budget_admit(uid_t uid, uint64_t sites, uint64_t bytes, char *why, size_t size);

/*
 * How many of the sites sites that p's site table holds and the daemon
 * was not told of (fld_proc_scan) fit in p's user's budget as it is:
 * nothing is dropped for them (they are an exited process's, or one's
 * that disconnected).  Returns sites when they all fit (always for a uid
 * not held to the budgets); fewer is a refusal, logged.
 */
uint64_t fld_budget_room_sites(const struct fld_proc *p, uint64_t sites);

/*
 * Makes room in the state directory for about bytes bytes of p's record
 * and counts file, dropping its user's other exited processes (and their
 * records), the first to exit first, as needed; p is never dropped.
 * Returns the most bytes p's files may take (UINT64_MAX for a uid not
 * held to the budgets), or 0 with why (size bytes) when even bytes do not
 * fit (logged).
 */
uint64_t fld_budget_admit_state(struct fld_proc *p, uint64_t bytes, char *why, size_t size);

/*
 * The processes restored from the state directory: those that take a
 * user over any budget are dropped (their records too), the first to exit
 * first, until none does.  Logged once per user.
 */
void fld_budget_restored(void);

/*
 * uid was refused for being over kind: why is logged as a warning when uid
 * was within kind until now, else at debug level.
 */
void fld_budget_refused(uid_t uid, enum fld_budget_kind kind, const char *why);

/*
 * uid is within kind with room to spare (the caller says when: at half
 * of it, so that a user at the edge, refused and admitted in turn, is
 * not logged each time): its next refusal is a warning again.
 */
void fld_budget_within(uid_t uid, enum fld_budget_kind kind);

#endif /* FLD_BUDGET_H */
