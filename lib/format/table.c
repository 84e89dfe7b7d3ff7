// SPDX-License-Identifier: MIT
/*
 * Indexed tables built from the cursors: every entry in section order, plus
 * sorted indexes for lookups by PC and by stack map ID.
 *
 * Each builder walks the section twice: once to validate and count (so it
 * allocates exactly once, and nothing at all for malformed input), once to
 * fill in.  A built table is immutable.
 */
#include <errno.h>
#include <stdlib.h>

#include <faultline/format.h>

#include "format/table.h"

struct fl_faultmap {
	size_t count;
	struct fl_faultmap_entry *entries;	/* section order */
	const struct fl_faultmap_entry **by_pc;	/* sorted by faulting_pc, then order */
};

struct fl_stackmap {
	size_t count;
	struct fl_stackmap_record *records;	/* section order */
	struct fl_stackmap_location *locations;
	struct fl_stackmap_live_out *live_outs;
	const struct fl_stackmap_record **by_id;	/* sorted by id, then order */
	const struct fl_stackmap_record **by_pc;	/* sorted by pc, then order */
};

/* qsort is not stable: ties are broken by address, which is section order. */
static int cmp_entry_pc(const void *a, const void *b)
{
	const struct fl_faultmap_entry *x = *(const struct fl_faultmap_entry *const *)a;
	const struct fl_faultmap_entry *y = *(const struct fl_faultmap_entry *const *)b;

	if (x->faulting_pc != y->faulting_pc)
		return x->faulting_pc < y->faulting_pc ? -1 : 1;
	return x < y ? -1 : x > y;
}

int fl_faultmap_parse(const void *data, size_t size, uint32_t flags,
		      struct fl_faultmap **out, struct fl_diag *diag)
{
	struct fl_faultmap_cursor c;
	struct fl_faultmap_event ev;
	struct fl_faultmap *fm;
	long count;
	size_t i = 0;
	int ret;

	*out = NULL;
	count = fl_faultmap_validate(data, size, flags, diag);
	if (count < 0)
		return (int)count;

	fm = calloc(1, sizeof(*fm));
	if (!fm)
		return -ENOMEM;
	fm->count = (size_t)count;
	fm->entries = calloc(fm->count ? fm->count : 1, sizeof(*fm->entries));
	fm->by_pc = calloc(fm->count ? fm->count : 1, sizeof(*fm->by_pc));
	if (!fm->entries || !fm->by_pc) {
		fl_faultmap_free(fm);
		return -ENOMEM;
	}

	fl_faultmap_cursor_init(&c, data, size, flags, diag);
	while ((ret = fl_faultmap_next(&c, &ev)) > 0) {
		struct fl_faultmap_entry *e;

		if (ev.type != FL_FM_FAULT)
			continue;
		e = &fm->entries[i];
		e->function_address = ev.fault.function_address;
		e->faulting_pc = ev.fault.function_address + ev.fault.faulting_pc_offset;
		e->handler_pc = ev.fault.function_address + ev.fault.handler_pc_offset;
		e->kind = ev.fault.kind;
		e->table = ev.table;
		e->function = ev.fault.function;
		e->index = ev.fault.index;
		fm->by_pc[i] = e;
		i++;
	}
	/* The first walk succeeded over the same bytes: so does this one. */
	if (ret < 0 || i != fm->count) {
		fl_faultmap_free(fm);
		return ret < 0 ? ret : -EINVAL;
	}
	qsort(fm->by_pc, fm->count, sizeof(*fm->by_pc), cmp_entry_pc);
	*out = fm;
	return 0;
}

void fl_faultmap_free(struct fl_faultmap *fm)
{
	if (!fm)
		return;
	free(fm->entries);
	free(fm->by_pc);
	free(fm);
}

size_t fl_faultmap_count(const struct fl_faultmap *fm)
{
	return fm->count;
}

const struct fl_faultmap_entry *fl_faultmap_entry(const struct fl_faultmap *fm,
						  size_t i)
{
	return i < fm->count ? &fm->entries[i] : NULL;
}

const struct fl_faultmap_entry *fl_faultmap_lookup(const struct fl_faultmap *fm,
						   uint64_t pc)
{
	size_t lo = 0, hi = fm->count;

	/* The first index whose faulting_pc >= pc. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (fm->by_pc[mid]->faulting_pc < pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < fm->count && fm->by_pc[lo]->faulting_pc == pc)
		return fm->by_pc[lo];
	return NULL;
}

static int cmp_record_id(const void *a, const void *b)
{
	const struct fl_stackmap_record *x = *(const struct fl_stackmap_record *const *)a;
	const struct fl_stackmap_record *y = *(const struct fl_stackmap_record *const *)b;

	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x < y ? -1 : x > y;
}

static int cmp_record_pc(const void *a, const void *b)
{
	const struct fl_stackmap_record *x = *(const struct fl_stackmap_record *const *)a;
	const struct fl_stackmap_record *y = *(const struct fl_stackmap_record *const *)b;

	if (x->pc != y->pc)
		return x->pc < y->pc ? -1 : 1;
	return x < y ? -1 : x > y;
}

/* First walk: counts records, locations and live-outs. */
static int count_stackmap(const void *data, size_t size, uint32_t flags,
			  struct fl_diag *diag, size_t *records, size_t *locations,
			  size_t *live_outs)
{
	struct fl_stackmap_cursor c;
	struct fl_stackmap_event ev;
	int ret;

	*records = *locations = *live_outs = 0;
	fl_stackmap_cursor_init(&c, data, size, flags, diag);
	while ((ret = fl_stackmap_next(&c, &ev)) > 0) {
		if (ev.type == FL_SM_RECORD) {
			(*records)++;
			*locations += ev.record.num_locations;
			*live_outs += ev.record.num_live_outs;
		}
	}
	return ret;
}

int fl_stackmap_parse(const void *data, size_t size, uint32_t flags,
		      struct fl_stackmap **out, struct fl_diag *diag)
{
	size_t nrec, nloc, nlo, r = 0, l = 0, o = 0;
	struct fl_stackmap_cursor c;
	struct fl_stackmap_event ev;
	struct fl_stackmap_record *rec = NULL;
	struct fl_stackmap *sm;
	uint32_t version = 0;
	int ret;

	*out = NULL;
	ret = count_stackmap(data, size, flags, diag, &nrec, &nloc, &nlo);
	if (ret < 0)
		return ret;

	sm = calloc(1, sizeof(*sm));
	if (!sm)
		return -ENOMEM;
	sm->count = nrec;
	sm->records = calloc(nrec ? nrec : 1, sizeof(*sm->records));
	sm->locations = calloc(nloc ? nloc : 1, sizeof(*sm->locations));
	sm->live_outs = calloc(nlo ? nlo : 1, sizeof(*sm->live_outs));
	sm->by_id = calloc(nrec ? nrec : 1, sizeof(*sm->by_id));
	sm->by_pc = calloc(nrec ? nrec : 1, sizeof(*sm->by_pc));
	if (!sm->records || !sm->locations || !sm->live_outs || !sm->by_id ||
	    !sm->by_pc) {
		fl_stackmap_free(sm);
		return -ENOMEM;
	}

	fl_stackmap_cursor_init(&c, data, size, flags, diag);
	while ((ret = fl_stackmap_next(&c, &ev)) > 0) {
		switch (ev.type) {
		case FL_SM_TABLE:
			version = ev.header.version;
			break;
		case FL_SM_RECORD:
			if (r >= nrec) {
				ret = -EINVAL;
				goto out;
			}
			rec = &sm->records[r];
			rec->id = ev.record.id;
			rec->function_address = ev.record.function_address;
			rec->instruction_offset = ev.record.instruction_offset;
			rec->pc = ev.record.function_address + ev.record.instruction_offset;
			rec->table = ev.table;
			rec->function = ev.record.function;
			rec->index = ev.record.index;
			rec->flags = ev.record.flags;
			rec->num_locations = ev.record.num_locations;
			rec->num_live_outs = ev.record.num_live_outs;
			rec->version = (uint8_t)version;
			rec->locations = &sm->locations[l];
			rec->live_outs = &sm->live_outs[o];
			rec->stack_size = ev.record.stack_size;
			sm->by_id[r] = rec;
			sm->by_pc[r] = rec;
			r++;
			break;
		case FL_SM_LOCATION:
			if (l >= nloc) {
				ret = -EINVAL;
				goto out;
			}
			sm->locations[l].kind = ev.location.kind;
			sm->locations[l].size = ev.location.size;
			sm->locations[l].dwarf_reg = ev.location.dwarf_reg;
			sm->locations[l].offset = ev.location.offset;
			sm->locations[l].constant = ev.location.constant;
			l++;
			break;
		case FL_SM_LIVE_OUT:
			if (o >= nlo) {
				ret = -EINVAL;
				goto out;
			}
			sm->live_outs[o].dwarf_reg = ev.live_out.dwarf_reg;
			sm->live_outs[o].size = ev.live_out.size;
			o++;
			break;
		default:
			break;
		}
	}
out:
	if (ret < 0 || r != nrec) {
		fl_stackmap_free(sm);
		return ret < 0 ? ret : -EINVAL;
	}
	qsort(sm->by_id, nrec, sizeof(*sm->by_id), cmp_record_id);
	qsort(sm->by_pc, nrec, sizeof(*sm->by_pc), cmp_record_pc);
	*out = sm;
	return 0;
}

struct fl_stackmap_record *fl_stackmap_records_to_place(struct fl_stackmap *sm)
{
	free(sm->by_id);
	free(sm->by_pc);
	sm->by_id = sm->by_pc = NULL;
	return sm->records;
}

void fl_stackmap_free(struct fl_stackmap *sm)
{
	if (!sm)
		return;
	free(sm->records);
	free(sm->locations);
	free(sm->live_outs);
	free(sm->by_id);
	free(sm->by_pc);
	free(sm);
}

size_t fl_stackmap_count(const struct fl_stackmap *sm)
{
	return sm->count;
}

const struct fl_stackmap_record *fl_stackmap_record(const struct fl_stackmap *sm,
						    size_t i)
{
	return i < sm->count ? &sm->records[i] : NULL;
}

size_t fl_stackmap_find_id(const struct fl_stackmap *sm, uint64_t id,
			   const struct fl_stackmap_record *const **records)
{
	size_t lo = 0, hi = sm->count, end;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (sm->by_id[mid]->id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (end = lo; end < sm->count && sm->by_id[end]->id == id; end++)
		;
	if (end > lo && records)
		*records = &sm->by_id[lo];
	return end - lo;
}

const struct fl_stackmap_record *fl_stackmap_find_pc(const struct fl_stackmap *sm,
						     uint64_t pc)
{
	size_t lo = 0, hi = sm->count;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (sm->by_pc[mid]->pc < pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < sm->count && sm->by_pc[lo]->pc == pc)
		return sm->by_pc[lo];
	return NULL;
}
