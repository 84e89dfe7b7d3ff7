/* SPDX-License-Identifier: MIT */
/* Per-user budgets of sites, section bytes and state bytes: see budget.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "budget.h"
#include "dlog.h"
#include "procs.h"

static struct fld_budget_opts opts = { UINT64_MAX, UINT64_MAX, UINT64_MAX };

/*
 * The uids over a budget as far as the log knows (a bit per kind): a
 * warning when a bit is set, nothing more until it is cleared.  Bounded:
 * beyond MAX_LOGGED users every refusal is at debug level.
 */
#define MAX_LOGGED 4096
struct logged {
	uid_t uid;
	unsigned over;		/* 1 << enum fld_budget_kind */
};
static struct logged *logged;
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

/* The bytes of uid's records and counts files, but except's. */
static uint64_t state_usage(uid_t uid, const struct fld_proc *except)
{
	uint64_t n = 0;

	for (size_t i = 0; i < fld_num_procs; i++)
		if (fld_procs[i]->uid == uid && fld_procs[i] != except)
			n += fld_procs[i]->rec.record_bytes + fld_procs[i]->rec.counts_bytes;
	return n;
}

static struct logged *logged_of(uid_t uid, bool add)
{
	struct logged *grown;

	for (size_t i = 0; i < num_logged; i++)
		if (logged[i].uid == uid)
			return &logged[i];
	if (!add || num_logged == MAX_LOGGED)
		return NULL;
	grown = realloc(logged, (num_logged + 1) * sizeof(*logged));
	if (!grown)
		return NULL;
	logged = grown;
	logged[num_logged] = (struct logged){ .uid = uid };
	return &logged[num_logged++];
}

void fld_budget_refused(uid_t uid, enum fld_budget_kind kind, const char *why)
{
	struct logged *l = logged_of(uid, true);
	bool first = l && !(l->over & 1u << kind);

	if (l)
		l->over |= 1u << kind;
	fld_log(first ? FL_LOG_WARN : FL_LOG_DEBUG, "refused: %s", why);
}

void fld_budget_within(uid_t uid, enum fld_budget_kind kind)
{
	struct logged *l = logged_of(uid, false);

	if (l)
		l->over &= ~(1u << kind);
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
		if (all_sites + sites <= opts.max_sites && all_bytes + bytes <= opts.max_bytes) {
			if (all_sites + sites <= opts.max_sites / 2)
				fld_budget_within(uid, FLD_BUDGET_SITES);
			if (all_bytes + bytes <= opts.max_bytes / 2)
				fld_budget_within(uid, FLD_BUDGET_BYTES);
			return 0;
		}
		if (!fld_proc_drop_oldest_exited(uid, NULL))
			break;	/* cannot happen: the exited ones made the difference */
	}
	if (have_sites + sites > opts.max_sites) {
		snprintf(why, size, "uid %u's live processes hold %" PRIu64 " sites: %" PRIu64
			 " more would go over its budget of %" PRIu64 " (--max-user-sites)",
			 (unsigned)uid, have_sites, sites, opts.max_sites);
		fld_budget_refused(uid, FLD_BUDGET_SITES, why);
	} else {
		snprintf(why, size, "uid %u's live processes hold %" PRIu64 " bytes of sections "
			 "and names: %" PRIu64 " more would go over its budget of %" PRIu64
			 " (--max-user-section-bytes)", (unsigned)uid, have_bytes, bytes,
			 opts.max_bytes);
		fld_budget_refused(uid, FLD_BUDGET_BYTES, why);
	}
	return -EDQUOT;
}

uint64_t fld_budget_room_sites(const struct fld_proc *p, uint64_t sites)
{
	uint64_t have, bytes, room;
	char why[256];

	if (!sites || !fld_budget_applies(p->uid))
		return sites;
	usage(p->uid, false, &have, &bytes);
	room = have < opts.max_sites ? opts.max_sites - have : 0;
	if (sites <= room)
		return sites;
	snprintf(why, sizeof(why), "pid %d's site table holds %" PRIu64 " sites it did not "
		 "register: %" PRIu64 " of them kept, uid %u holding %" PRIu64 " of its budget of %"
		 PRIu64 " (--max-user-sites)", (int)p->pid, sites, room, (unsigned)p->uid, have,
		 opts.max_sites);
	fld_budget_refused(p->uid, FLD_BUDGET_SITES, why);
	return room;
}

uint64_t fld_budget_admit_state(struct fld_proc *p, uint64_t bytes, char *why, size_t size)
{
	uint64_t others;

	if (!fld_budget_applies(p->uid))
		return UINT64_MAX;
	others = state_usage(p->uid, p);
	while (others + bytes > opts.max_state_bytes && fld_proc_drop_oldest_exited(p->uid, p))
		others = state_usage(p->uid, p);
	if (others + bytes <= opts.max_state_bytes) {
		if (others + bytes <= opts.max_state_bytes / 2)
			fld_budget_within(p->uid, FLD_BUDGET_STATE);
		return opts.max_state_bytes - others;
	}
	snprintf(why, size, "uid %u's records hold %" PRIu64 " bytes in the state directory: pid "
		 "%d's of about %" PRIu64 " more would go over its budget of %" PRIu64
		 " (--max-user-state-bytes)", (unsigned)p->uid, others, (int)p->pid, bytes,
		 opts.max_state_bytes);
	fld_budget_refused(p->uid, FLD_BUDGET_STATE, why);
	return 0;
}

/* Whether uid's processes go over one of its budgets. */
static bool over(uid_t uid)
{
	uint64_t sites, bytes;

	usage(uid, false, &sites, &bytes);
	return sites > opts.max_sites || bytes > opts.max_bytes ||
	       state_usage(uid, NULL) > opts.max_state_bytes;
}

void fld_budget_restored(void)
{
	for (size_t i = 0; i < fld_num_procs; i++) {
		uid_t uid = fld_procs[i]->uid;
		uint64_t sites, bytes, state = state_usage(uid, NULL);
		size_t dropped = 0;
		char why[256];

		if (!fld_budget_applies(uid) || !over(uid))
			continue;
		usage(uid, false, &sites, &bytes);
		while (over(uid) && fld_proc_drop_oldest_exited(uid, NULL))
			dropped++;
		if (!dropped)
			continue;	/* none exited: nothing to drop (cannot happen at start) */
		snprintf(why, sizeof(why), "uid %u's restored processes held %" PRIu64 " sites, %"
			 PRIu64 " bytes of sections and names and %" PRIu64 " bytes of records, "
			 "over its budgets (--max-user-sites %" PRIu64 ", --max-user-section-bytes %"
			 PRIu64 ", --max-user-state-bytes %" PRIu64 "): %zu of them dropped, the "
			 "first to exit first", (unsigned)uid, sites, bytes, state, opts.max_sites,
			 opts.max_bytes, opts.max_state_bytes, dropped);
		fld_budget_refused(uid, FLD_BUDGET_SITES, why);
		/* The processes moved: this uid's are within now, the others are looked at again. */
		i = (size_t)-1;
	}
}
