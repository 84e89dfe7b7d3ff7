/* SPDX-License-Identifier: MIT */
/* Per-user budgets of sites and section bytes: see budget.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "budget.h"
#include "dlog.h"
#include "procs.h"

static struct fld_budget_opts opts = { UINT64_MAX, UINT64_MAX };

/* The uids whose refusal was logged: a warning once per user. */
#define MAX_LOGGED 4096
static uid_t *logged;
static size_t num_logged;

void fld_budget_init(const struct fld_budget_opts *o)
{
	opts = *o;
}

bool fld_budget_applies(uid_t uid)
{
	return uid != 0 && uid != geteuid();
}

/* uid's sites and section bytes, over its live processes only or all of them. */
static void usage(uid_t uid, bool live_only, uint64_t *sites, uint64_t *bytes)
{
	*sites = *bytes = 0;
	for (size_t i = 0; i < fld_num_procs; i++) {
		const struct fld_proc *p = fld_procs[i];

		if (p->uid != uid || (live_only && p->exited))
			continue;
		*sites += p->num_sites;
		*bytes += p->section_bytes + p->name_bytes;
	}
}

/* Whether uid's refusal is logged as a warning (its first) or at debug level. */
static bool first_refusal(uid_t uid)
{
	uid_t *grown;

	for (size_t i = 0; i < num_logged; i++)
		if (logged[i] == uid)
			return false;
	if (num_logged == MAX_LOGGED)
		return false;
	grown = realloc(logged, (num_logged + 1) * sizeof(*logged));
	if (!grown)
		return false;
	logged = grown;
	logged[num_logged++] = uid;
	return true;
}

int fld_budget_admit(uid_t uid, uint64_t sites, uint64_t bytes, char *why, size_t size)
{
	uint64_t have_sites, have_bytes;

	if (!fld_budget_applies(uid))
		return 0;
	usage(uid, true, &have_sites, &have_bytes);
	/* Live data first: the records of exited processes make room. */
	while (have_sites + sites <= opts.max_sites && have_bytes + bytes <= opts.max_bytes) {
		uint64_t all_sites, all_bytes;

		usage(uid, false, &all_sites, &all_bytes);
		if (all_sites + sites <= opts.max_sites && all_bytes + bytes <= opts.max_bytes)
			return 0;
		if (!fld_proc_drop_oldest_exited(uid))
			break;	/* cannot happen: the exited ones made the difference */
	}
	if (have_sites + sites > opts.max_sites)
		snprintf(why, size, "uid %u's live processes hold %" PRIu64 " sites: %" PRIu64
			 " more would go over its budget of %" PRIu64 " (--max-user-sites)",
			 (unsigned)uid, have_sites, sites, opts.max_sites);
	else
		snprintf(why, size, "uid %u's live processes hold %" PRIu64 " bytes of sections "
			 "and names: %" PRIu64 " more would go over its budget of %" PRIu64
			 " (--max-user-section-bytes)", (unsigned)uid, have_bytes, bytes,
			 opts.max_bytes);
	fld_log(first_refusal(uid) ? FL_LOG_WARN : FL_LOG_DEBUG, "refused: %s", why);
	return -EDQUOT;
}
