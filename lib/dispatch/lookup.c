/* SPDX-License-Identifier: MIT */
/*
 * Signal context (see dispatch.h for the rules): where a faulting PC
 * becomes a site.  Two binary searches over an immutable snapshot.
 */
#include "dispatch/dispatch.h"

const struct fl_site_entry *fl_snapshot_lookup(const struct fl_snapshot *s, uint64_t pc)
{
	size_t lo = 0, hi = s->num_modules;
	const struct fl_snap_module *m = NULL;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (pc < s->modules[mid].start) {
			hi = mid;
		} else if (pc >= s->modules[mid].end) {
			lo = mid + 1;
		} else {
			m = &s->modules[mid];
			break;
		}
	}
	if (!m)
		return NULL;

	lo = 0;
	hi = m->num_sites;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t at = m->sites[mid].faulting_pc;

		if (pc < at)
			hi = mid;
		else if (pc > at)
			lo = mid + 1;
		else
			return &m->sites[mid];
	}
	return NULL;
}

const struct fl_snap_region *fl_snapshot_region(const struct fl_snapshot *s, uint64_t addr)
{
	size_t lo = 0, hi = s->num_regions;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (addr < s->regions[mid].start)
			hi = mid;
		else if (addr >= s->regions[mid].end)
			lo = mid + 1;
		else
			return &s->regions[mid];
	}
	return NULL;
}
