/* SPDX-License-Identifier: MIT */
/*
 * Signal context (see dispatch.h for the rules): where a faulting PC
 * becomes a site.  Two binary searches over an immutable snapshot.  Also
 * the snapshot's other lookups by address: regions, and the modules whose
 * stack map records fl_stackmap_record_at searches (lib/deopt/).
 */
#include "dispatch/dispatch.h"

/*
 * The index of the range holding addr in an array of n ranges sorted by
 * start, non-overlapping, each element stride bytes and beginning with its
 * uint64_t start and end; n when none does.
 */
static size_t range_find(const void *v, size_t n, size_t stride, uint64_t addr)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const uint64_t *r = (const uint64_t *)((const char *)v + mid * stride);

		if (addr < r[0])
			hi = mid;
		else if (addr >= r[1])
			lo = mid + 1;
		else
			return mid;
	}
	return n;
}

_Static_assert(offsetof(struct fl_snap_module, start) == 0 &&
	       offsetof(struct fl_snap_module, end) == 8 &&
	       offsetof(struct fl_snap_region, start) == 0 &&
	       offsetof(struct fl_snap_region, end) == 8 &&
	       offsetof(struct fl_snap_stackmap, start) == 0 &&
	       offsetof(struct fl_snap_stackmap, end) == 8, "range_find's layout");

const struct fl_site_entry *fl_snapshot_lookup(const struct fl_snapshot *s, uint64_t pc)
{
	size_t i = range_find(s->modules, s->num_modules, sizeof(*s->modules), pc);
	const struct fl_snap_module *m;
	size_t lo, hi;

	if (i == s->num_modules)
		return NULL;
	m = &s->modules[i];
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
	size_t i = range_find(s->regions, s->num_regions, sizeof(*s->regions), addr);

	return i < s->num_regions ? &s->regions[i] : NULL;
}

const struct fl_snap_stackmap *fl_snapshot_stackmap(const struct fl_snapshot *s, uint64_t pc)
{
	size_t i = range_find(s->stackmaps, s->num_stackmaps, sizeof(*s->stackmaps), pc);

	return i < s->num_stackmaps ? &s->stackmaps[i] : NULL;
}
