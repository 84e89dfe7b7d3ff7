// SPDX-License-Identifier: MIT
/*
 * Indexed tables built from the cursors: every entry in section order, plus
 * indexes (index.h) for lookups by PC and by stack map ID.
 *
 * Each builder walks the section once, validating as it fills in.  The
 * arrays are sized at each table's header for what the rest of the section
 * can hold (which for one table is about what it holds), and grow past that
 * only for what a later table of another version holds: never by more than
 * what the cursor has checked fits in the section.  Malformed input frees what was built and returns the
 * cursor's error.  A built table is immutable.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include <faultline/format.h>

#include "format/cursor.h"
#include "format/index.h"
#include "format/table.h"

struct fl_faultmap {
	size_t count;
	struct fl_faultmap_entry *entries;	/* section order */
	struct fl_index by_pc;			/* faulting_pc -> entry */
};

struct fl_stackmap {
	size_t count;
	struct fl_stackmap_record *records;	/* section order */
	struct fl_stackmap_location *locations;
	struct fl_stackmap_live_out *live_outs;
	const struct fl_stackmap_record **by_id;	/* sorted by id, then order */
	struct fl_index id_rank;		/* id -> its first place in by_id */
	struct fl_index by_pc;			/* pc -> record */
};

/*
 * Makes room for need elements in *p (of size bytes each, *cap of them
 * now), at least doubling.  Returns 0, or -ENOMEM (*p unchanged).
 */
static int reserve(void *p, size_t *cap, size_t need, size_t size)
{
	void **arr = p, *grown;
	size_t to = *cap > SIZE_MAX / 2 ? SIZE_MAX : 2 * *cap;

	if (need <= *cap)
		return 0;
	if (to < need)
		to = need;
	if (to > SIZE_MAX / size)
		return -ENOMEM;
	grown = realloc(*arr, to * size);
	if (!grown)
		return -ENOMEM;
	*arr = grown;
	*cap = to;
	return 0;
}

int fl_faultmap_parse(const void *data, size_t size, uint32_t flags,
		      struct fl_faultmap **out, struct fl_diag *diag)
{
	struct fl_faultmap_cursor c;
	struct fl_faultmap_event ev;
	struct fl_faultmap *fm;
	bool in_order = true;
	uint64_t last_pc = 0;
	size_t cap = 0;
	int ret;

	*out = NULL;
	fm = calloc(1, sizeof(*fm));
	if (!fm)
		return -ENOMEM;
	fl_faultmap_cursor_init(&c, data, size, flags, diag);
	while ((ret = fl_faultmap_next(&c, &ev)) > 0) {
		struct fl_faultmap_entry *e;
		uint32_t n;

		/*
		 * Room for every fault the rest of the section can hold: in
		 * one table, exactly its faults, so that the array is
		 * allocated once and never copied.
		 */
		if (ev.type == FL_FM_TABLE &&
		    (ret = reserve(&fm->entries, &cap, fm->count + fl_faultmap_faults_bound(&c),
				   sizeof(*fm->entries))) < 0)
			break;
		if (ev.type != FL_FM_FUNCTION)
			continue;
		n = ev.function.num_faulting_pcs;
		/* The cursor checked that they fit in the section. */
		if ((ret = reserve(&fm->entries, &cap, fm->count + n, sizeof(*e))) < 0)
			break;
		/* (No entries, no array: NULL + 0 is not a pointer.) */
		e = n ? &fm->entries[fm->count] : NULL;
		if ((ret = fl_faultmap_take_faults(&c, e)) < 0)
			break;
		for (uint32_t i = 0; i < n; i++) {
			in_order &= last_pc <= e[i].faulting_pc;
			last_pc = e[i].faulting_pc;
		}
		fm->count += n;
	}
	if (ret == 0)
		ret = fl_index_build(&fm->by_pc, fm->count ? &fm->entries[0].faulting_pc : NULL,
				     sizeof(*fm->entries), fm->count, in_order);
	if (ret < 0) {
		fl_faultmap_free(fm);
		return ret;
	}
	*out = fm;
	return 0;
}

void fl_faultmap_free(struct fl_faultmap *fm)
{
	if (!fm)
		return;
	free(fm->entries);
	fl_index_free(&fm->by_pc);
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
	uint32_t i;

	return fl_index_find(&fm->by_pc, pc, &i) ? &fm->entries[i] : NULL;
}

/* What a stack map walk has filled in, and how much room there is. */
struct sm_build {
	struct fl_stackmap *sm;
	struct fl_key *ids;	/* each record's ID and index, for by_id */
	size_t cap_records, cap_ids, cap_locations, cap_live_outs;
	size_t nloc, nlo;
	bool pc_in_order;	/* so far, the PCs do not go down */
};

/* Room for need records (and their IDs). */
static int reserve_records(struct sm_build *b, size_t need)
{
	int ret = reserve(&b->sm->records, &b->cap_records, need, sizeof(*b->sm->records));

	return ret < 0 ? ret : reserve(&b->ids, &b->cap_ids, need, sizeof(*b->ids));
}

static int add_record(struct sm_build *b, const struct fl_stackmap_event *ev,
		      uint8_t version)
{
	struct fl_stackmap_record *rec;
	int ret;

	/* The cursor checked that the record, locations and live-outs fit. */
	if ((ret = reserve_records(b, b->sm->count + 1)) < 0 ||
	    (ret = reserve(&b->sm->locations, &b->cap_locations,
			   b->nloc + ev->record.num_locations,
			   sizeof(*b->sm->locations))) < 0 ||
	    (ret = reserve(&b->sm->live_outs, &b->cap_live_outs,
			   b->nlo + ev->record.num_live_outs,
			   sizeof(*b->sm->live_outs))) < 0)
		return ret;
	b->ids[b->sm->count] = (struct fl_key){ ev->record.id, (uint32_t)b->sm->count };
	rec = &b->sm->records[b->sm->count++];
	rec->id = ev->record.id;
	rec->function_address = ev->record.function_address;
	rec->instruction_offset = ev->record.instruction_offset;
	rec->pc = ev->record.function_address + ev->record.instruction_offset;
	rec->table = ev->table;
	rec->function = ev->record.function;
	rec->index = ev->record.index;
	rec->flags = ev->record.flags;
	rec->num_locations = ev->record.num_locations;
	rec->num_live_outs = ev->record.num_live_outs;
	rec->version = version;
	rec->stack_size = ev->record.stack_size;
	b->pc_in_order &= b->sm->count == 1 || rec[-1].pc <= rec->pc;
	/* Set once the arrays stop moving: see link_records. */
	rec->locations = NULL;
	rec->live_outs = NULL;
	return 0;
}

/* Walks the section into b. */
static int fill_stackmap(struct sm_build *b, const void *data, size_t size,
			 uint32_t flags, struct fl_diag *diag)
{
	struct fl_stackmap *sm = b->sm;
	struct fl_stackmap_cursor c;
	struct fl_stackmap_event ev;
	uint8_t version = 0;
	int ret;

	fl_stackmap_cursor_init(&c, data, size, flags, diag);
	while ((ret = fl_stackmap_next(&c, &ev)) > 0) {
		switch (ev.type) {
		case FL_SM_TABLE:
			version = ev.header.version;
			/*
			 * The cursor checked that NumRecords fit in the
			 * section.  Locations: room for all the rest of the
			 * section can hold (in one table, about what it holds:
			 * no copies as the walk fills them in).
			 */
			ret = reserve_records(b, sm->count + ev.header.num_records);
			if (ret == 0)
				ret = reserve(&sm->locations, &b->cap_locations,
					      b->nloc + fl_stackmap_locations_bound(&c),
					      sizeof(*sm->locations));
			break;
		case FL_SM_RECORD:
			ret = add_record(b, &ev, version);
			if (ret == 0)
				ret = fl_stackmap_take_locations(&c, ev.record.num_locations ?
								 &sm->locations[b->nloc] : NULL);
			b->nloc += ev.record.num_locations;
			break;
		case FL_SM_LIVE_OUT:
			sm->live_outs[b->nlo++] = (struct fl_stackmap_live_out){
				.dwarf_reg = ev.live_out.dwarf_reg,
				.size = ev.live_out.size,
			};
			break;
		default:
			break;
		}
		if (ret < 0)
			return ret;
	}
	return ret;
}

/* Where records point when the section has no locations or no live-outs. */
static const struct fl_stackmap_location no_locations[1];
static const struct fl_stackmap_live_out no_live_outs[1];

/*
 * Points every record at its locations and live-outs, in section order
 * (never NULL, as memcpy and friends want even for 0 of them).
 */
static void link_records(struct fl_stackmap *sm)
{
	size_t r, l = 0, o = 0;

	for (r = 0; r < sm->count; r++) {
		struct fl_stackmap_record *rec = &sm->records[r];

		rec->locations = sm->locations ? &sm->locations[l] : no_locations;
		rec->live_outs = sm->live_outs ? &sm->live_outs[o] : no_live_outs;
		l += rec->num_locations;
		o += rec->num_live_outs;
	}
}

/* by_id and its index (IDs to places in by_id), then the PC index. */
static int index_stackmap(struct fl_stackmap *sm, struct fl_key *keys, bool pc_in_order)
{
	size_t n = sm->count, i;
	int ret;

	sm->by_id = malloc((n ? n : 1) * sizeof(*sm->by_id));
	if (!sm->by_id)
		return -ENOMEM;
	ret = fl_keys_sort(keys, n);
	if (ret == 0) {
		for (i = 0; i < n; i++)
			sm->by_id[i] = &sm->records[keys[i].val];
		/* In order now: the value of each is its place in by_id. */
		ret = fl_index_build(&sm->id_rank, n ? &keys[0].key : NULL, sizeof(*keys), n,
				     true);
	}
	if (ret == 0)
		ret = fl_index_build(&sm->by_pc, n ? &sm->records[0].pc : NULL,
				     sizeof(*sm->records), n, pc_in_order);
	return ret;
}

int fl_stackmap_parse(const void *data, size_t size, uint32_t flags,
		      struct fl_stackmap **out, struct fl_diag *diag)
{
	struct sm_build b = { .pc_in_order = true };
	int ret;

	*out = NULL;
	b.sm = calloc(1, sizeof(*b.sm));
	if (!b.sm)
		return -ENOMEM;
	ret = fill_stackmap(&b, data, size, flags, diag);
	/* Past FL_INDEX_MAX records the indexes refuse (-ENOMEM). */
	if (ret == 0) {
		link_records(b.sm);
		ret = index_stackmap(b.sm, b.ids, b.pc_in_order);
	}
	free(b.ids);
	if (ret < 0) {
		fl_stackmap_free(b.sm);
		return ret;
	}
	*out = b.sm;
	return 0;
}

struct fl_stackmap_record *fl_stackmap_records_to_place(struct fl_stackmap *sm)
{
	free(sm->by_id);
	sm->by_id = NULL;
	fl_index_free(&sm->id_rank);
	fl_index_free(&sm->by_pc);
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
	fl_index_free(&sm->id_rank);
	fl_index_free(&sm->by_pc);
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
	uint32_t first, end;
	uint64_t next;

	if (!fl_index_find(&sm->id_rank, id, &first))
		return 0;
	/* The records with this ID end where the next ID starts. */
	if (id == UINT64_MAX || !fl_index_lower_bound(&sm->id_rank, id + 1, &next, &end))
		end = (uint32_t)sm->count;
	if (records)
		*records = &sm->by_id[first];
	return end - first;
}

const struct fl_stackmap_record *fl_stackmap_find_pc(const struct fl_stackmap *sm,
						     uint64_t pc)
{
	uint32_t i;

	return fl_index_find(&sm->by_pc, pc, &i) ? &sm->records[i] : NULL;
}
