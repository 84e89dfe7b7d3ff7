// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the stack map cursor and table on arbitrary bytes.
 *
 * The input is the section.  Every input is walked in both byte orders,
 * without and with FL_PARSE_STRICT (four walks, so the seeds are plain
 * sections).  What must hold, for each:
 *  - the cursor accepts exactly what a small reference walker written here
 *    from the format description accepts, with the same record count;
 *  - every event is at the section offset the format puts its item at,
 *    inside the input, in non-decreasing order, in the order the format
 *    dictates (table, functions, constants, then each record's header,
 *    locations, live-outs and end; table end), and its fields are the bytes
 *    found there; a record belongs to the function its RecordCounts say
 *    (v2, v3); a ConstantIndex location carries that constant;
 *  - a success ends exactly at the end of the input; a failure is one of the
 *    documented errors with a non-empty NUL-terminated diagnostic, and every
 *    later call returns the same error;
 *  - strict success implies default success with the same count;
 *  - fl_stackmap_validate and fl_stackmap_parse agree with the cursor; every
 *    record of the table (with its locations and live-outs) is what the
 *    cursor reported; fl_stackmap_find_id finds every record among the
 *    records with its ID, in section order; fl_stackmap_find_pc finds the
 *    first record with its PC;
 *  - of a valid input, a prefix is valid exactly when it ends at a table
 *    boundary.
 */
#include <stdbool.h>

#include "fuzz.h"

#define HEADER_SIZE 16u
#define CONSTANT_SIZE 8u
#define RECORD_HEADER_SIZE 16u
#define LIVE_OUT_SIZE 4u
#define MAX_BOUNDARIES 64
#define PREFIX "" FL_STACKMAP_SECTION ": table "

static unsigned function_size(unsigned version)
{
	return version == 1 ? 16u : 24u;
}

static unsigned location_size(unsigned version)
{
	return version == 3 ? 12u : 8u;
}

/* Offset pos aligned to 8 relative to the table that starts at start. */
static size_t align8(size_t start, size_t pos)
{
	return start + ((pos - start + 7) & ~(size_t)7);
}

static bool nonzero(const uint8_t *d, size_t from, size_t to)
{
	for (; from < to; from++)
		if (d[from])
			return true;
	return false;
}

/*
 * The format, read again independently of lib/format: returns the number of
 * records of a valid section, -1 for an invalid one.
 */
static long reference(const uint8_t *d, size_t n, bool big, bool strict)
{
	size_t pos = 0;
	long records = 0;

	if (n == 0)
		return -1;
	while (pos < n) {
		size_t start = pos, fpos, cpos;
		uint32_t nfunc, nconst, nrec, i;
		unsigned v, lsize;

		if (n - pos < HEADER_SIZE)
			return -1;
		v = d[pos];
		if (v < 1 || v > 3)
			return -1;
		if (strict && (d[pos + 1] || d[pos + 2] || d[pos + 3]))
			return -1;
		nfunc = (uint32_t)raw(d + pos + 4, 4, big);
		nconst = (uint32_t)raw(d + pos + 8, 4, big);
		nrec = (uint32_t)raw(d + pos + 12, 4, big);
		lsize = location_size(v);
		fpos = pos + HEADER_SIZE;
		if ((n - fpos) / function_size(v) < nfunc)
			return -1;
		cpos = fpos + (size_t)nfunc * function_size(v);
		if ((n - cpos) / CONSTANT_SIZE < nconst)
			return -1;
		pos = cpos + (size_t)nconst * CONSTANT_SIZE;
		if (v >= 2) {
			uint64_t sum = 0;

			for (i = 0; i < nfunc; i++) {
				uint64_t count = raw(d + fpos + (size_t)i * 24 + 16, 8, big);

				if (count > nrec - sum)
					return -1;
				sum += count;
			}
			if (sum != nrec)
				return -1;
		}
		for (i = 0; i < nrec; i++) {
			size_t p, lo;
			uint16_t nloc, nlo, l;

			if (n - pos < RECORD_HEADER_SIZE)
				return -1;
			if (strict && raw(d + pos + 12, 2, big))
				return -1;
			nloc = (uint16_t)raw(d + pos + 14, 2, big);
			p = pos + RECORD_HEADER_SIZE;
			for (l = 0; l < nloc; l++, p += lsize) {
				unsigned kind;
				uint32_t offset;

				if (n - p < lsize)
					return -1;
				kind = d[p];
				if (kind < 1 || kind > 5)
					return -1;
				if (v == 3 && strict && (d[p + 1] || raw(d + p + 6, 2, big)))
					return -1;
				offset = (uint32_t)raw(d + p + lsize - 4, 4, big);
				if (kind == 5 && offset >= nconst)
					return -1;
			}
			lo = align8(start, p);
			if (lo > n || n - lo < 4)
				return -1;
			if (strict && (nonzero(d, p, lo) || raw(d + lo, 2, big)))
				return -1;
			nlo = (uint16_t)raw(d + lo + 2, 2, big);
			p = lo + 4;
			if ((n - p) / LIVE_OUT_SIZE < nlo)
				return -1;
			for (l = 0; l < nlo; l++, p += LIVE_OUT_SIZE)
				if (strict && d[p + 2])
					return -1;
			pos = align8(start, p);
			if (pos > n || (strict && nonzero(d, p, pos)))
				return -1;
			records++;
		}
	}
	return records;
}

struct function {
	uint64_t address, stack_size, record_count;
};

struct record {
	struct fl_stackmap_record r;	/* locations, live_outs: into the arrays */
	size_t first_location, first_live_out;
};

struct walk {
	long records;		/* or the error */
	size_t nboundaries;	/* table ends, when no more than MAX_BOUNDARIES */
	size_t boundaries[MAX_BOUNDARIES];
	/* Room for everything the input can hold. */
	struct function *functions;
	uint64_t *constants;
	struct record *recs;
	struct fl_stackmap_location *locations;
	struct fl_stackmap_live_out *live_outs;
	size_t nlocations, nlive_outs;
};

enum expect {
	X_HEADER,	/* a table, or the end */
	X_TABLE,	/* functions, constants, records, table end */
	X_RECORD,	/* locations, live-outs, record end */
};

/* Walks the input with the cursor, checking every event against the bytes. */
static void walk(const uint8_t *d, size_t n, uint32_t flags, struct walk *w)
{
	bool strict = flags & FL_PARSE_STRICT, big = flags & FL_PARSE_BIG_ENDIAN;
	struct fl_stackmap_cursor c;
	struct fl_stackmap_event ev;
	struct fl_diag diag;
	enum expect x = X_HEADER;
	size_t pos = 0, last = 0, start = 0, fpos = 0, cpos = 0, rpos = 0, lopos = 0;
	uint32_t table = 0, version = 0, nfunc = 0, nconst = 0, nrec = 0;
	uint32_t fn = 0, cn = 0, rn = 0, rec_fn = 0;
	uint64_t left_in_fn = 0;
	uint16_t nloc = 0, nlo = 0, ln = 0, lon = 0;
	struct record *rec = NULL;
	int ret;

	memset(&diag, 0xa5, sizeof(diag));
	w->records = 0;
	w->nboundaries = 0;
	w->nlocations = w->nlive_outs = 0;
	fl_stackmap_cursor_init(&c, d, n, flags, &diag);
	CHECK(diag.err == 0 && diag.msg[0] == '\0');
	while ((ret = fl_stackmap_next(&c, &ev)) > 0) {
		CHECK(ret == 1);
		CHECK(ev.offset >= last && ev.offset <= n);
		CHECK(ev.table == table);
		last = ev.offset;
		switch (ev.type) {
		case FL_SM_TABLE:
			CHECK(x == X_HEADER && ev.offset == pos);
			CHECK(n - pos >= HEADER_SIZE);
			version = d[pos];
			CHECK(ev.header.version == version && version >= 1 && version <= 3);
			CHECK(ev.header.reserved0 == d[pos + 1]);
			CHECK(ev.header.reserved1 == raw(d + pos + 2, 2, big));
			CHECK(!strict || (!ev.header.reserved0 && !ev.header.reserved1));
			nfunc = ev.header.num_functions;
			nconst = ev.header.num_constants;
			nrec = ev.header.num_records;
			CHECK(nfunc == raw(d + pos + 4, 4, big));
			CHECK(nconst == raw(d + pos + 8, 4, big));
			CHECK(nrec == raw(d + pos + 12, 4, big));
			start = pos;
			fpos = pos + HEADER_SIZE;
			CHECK((n - fpos) / function_size(version) >= nfunc);
			cpos = fpos + (size_t)nfunc * function_size(version);
			CHECK((n - cpos) / CONSTANT_SIZE >= nconst);
			rpos = cpos + (size_t)nconst * CONSTANT_SIZE;
			fn = cn = rn = rec_fn = 0;
			left_in_fn = 0;
			x = X_TABLE;
			break;
		case FL_SM_FUNCTION: {
			size_t off = fpos + (size_t)fn * function_size(version);

			CHECK(x == X_TABLE && fn < nfunc && cn == 0 && rn == 0);
			CHECK(ev.offset == off && ev.function.address_offset == off);
			CHECK(ev.function.index == fn);
			CHECK(ev.function.address == raw(d + off, 8, big));
			CHECK(ev.function.stack_size == raw(d + off + 8, 8, big));
			CHECK(ev.function.record_count ==
			      (version >= 2 ? raw(d + off + 16, 8, big) : 0));
			w->functions[fn] = (struct function){
				ev.function.address, ev.function.stack_size,
				ev.function.record_count,
			};
			fn++;
			break;
		}
		case FL_SM_CONSTANT: {
			size_t off = cpos + (size_t)cn * CONSTANT_SIZE;

			CHECK(x == X_TABLE && fn == nfunc && cn < nconst && rn == 0);
			CHECK(ev.offset == off && ev.constant.index == cn);
			CHECK(ev.constant.value == raw(d + off, 8, big));
			w->constants[cn++] = ev.constant.value;
			break;
		}
		case FL_SM_RECORD:
			CHECK(x == X_TABLE && fn == nfunc && cn == nconst && rn < nrec);
			CHECK(ev.offset == rpos && rpos == align8(start, rpos));
			CHECK(n - rpos >= RECORD_HEADER_SIZE);
			CHECK(ev.record.index == rn);
			CHECK(ev.record.id == raw(d + rpos, 8, big));
			CHECK(ev.record.instruction_offset == raw(d + rpos + 8, 4, big));
			CHECK(ev.record.flags == raw(d + rpos + 12, 2, big));
			CHECK(!strict || !ev.record.flags);
			nloc = ev.record.num_locations;
			CHECK(nloc == raw(d + rpos + 14, 2, big));
			lopos = align8(start, rpos + RECORD_HEADER_SIZE +
				       (size_t)nloc * location_size(version));
			CHECK(lopos <= n && n - lopos >= 4);
			nlo = ev.record.num_live_outs;
			CHECK(nlo == raw(d + lopos + 2, 2, big));
			if (version >= 2) {
				/* Grouped by function, as the RecordCounts say. */
				while (left_in_fn == 0) {
					CHECK(rec_fn < nfunc);
					left_in_fn = w->functions[rec_fn++].record_count;
				}
				left_in_fn--;
				CHECK(ev.record.function == rec_fn - 1);
				CHECK(ev.record.function_address ==
				      w->functions[rec_fn - 1].address);
				CHECK(ev.record.stack_size ==
				      w->functions[rec_fn - 1].stack_size);
			} else {
				CHECK(ev.record.function == FL_NO_FUNCTION);
				CHECK(ev.record.function_address == 0);
				CHECK(ev.record.stack_size == 0);
			}
			rec = &w->recs[w->records];
			*rec = (struct record){
				.r = {
					.id = ev.record.id,
					.function_address = ev.record.function_address,
					.pc = ev.record.function_address +
					      ev.record.instruction_offset,
					.stack_size = ev.record.stack_size,
					.instruction_offset = ev.record.instruction_offset,
					.table = table,
					.function = ev.record.function,
					.index = rn,
					.flags = ev.record.flags,
					.num_locations = nloc,
					.num_live_outs = nlo,
					.version = (uint8_t)version,
				},
				.first_location = w->nlocations,
				.first_live_out = w->nlive_outs,
			};
			ln = lon = 0;
			x = X_RECORD;
			break;
		case FL_SM_LOCATION: {
			size_t off = rpos + RECORD_HEADER_SIZE + (size_t)ln * location_size(version);
			struct fl_stackmap_location *l = &w->locations[w->nlocations++];

			CHECK(x == X_RECORD && ln < nloc && lon == 0);
			CHECK(ev.offset == off && n - off >= location_size(version));
			CHECK(ev.location.record == rn && ev.location.index == ln);
			CHECK(ev.location.kind == d[off]);
			CHECK(fl_location_kind_name(ev.location.kind) != NULL);
			if (version == 3) {
				CHECK(ev.location.reserved0 == d[off + 1]);
				CHECK(ev.location.size == raw(d + off + 2, 2, big));
				CHECK(ev.location.dwarf_reg == raw(d + off + 4, 2, big));
				CHECK(ev.location.reserved1 == raw(d + off + 6, 2, big));
				CHECK((uint32_t)ev.location.offset == raw(d + off + 8, 4, big));
			} else {
				CHECK(ev.location.reserved0 == 0 && ev.location.reserved1 == 0);
				CHECK(ev.location.size == d[off + 1]);
				CHECK(ev.location.dwarf_reg == raw(d + off + 2, 2, big));
				CHECK((uint32_t)ev.location.offset == raw(d + off + 4, 4, big));
			}
			CHECK(!strict || (!ev.location.reserved0 && !ev.location.reserved1));
			switch (ev.location.kind) {
			case FL_LOC_CONSTANT:
				CHECK(ev.location.constant ==
				      (uint64_t)(int64_t)ev.location.offset);
				break;
			case FL_LOC_CONSTANT_INDEX:
				CHECK((uint32_t)ev.location.offset < nconst);
				CHECK(ev.location.constant ==
				      w->constants[(uint32_t)ev.location.offset]);
				break;
			default:
				CHECK(ev.location.constant == 0);
			}
			*l = (struct fl_stackmap_location){
				.kind = ev.location.kind,
				.size = ev.location.size,
				.dwarf_reg = ev.location.dwarf_reg,
				.offset = ev.location.offset,
				.constant = ev.location.constant,
			};
			ln++;
			break;
		}
		case FL_SM_LIVE_OUT: {
			size_t off = lopos + 4 + (size_t)lon * LIVE_OUT_SIZE;

			CHECK(x == X_RECORD && ln == nloc && lon < nlo);
			CHECK(ev.offset == off && n - off >= LIVE_OUT_SIZE);
			CHECK(ev.live_out.record == rn && ev.live_out.index == lon);
			CHECK(ev.live_out.dwarf_reg == raw(d + off, 2, big));
			CHECK(ev.live_out.reserved == d[off + 2]);
			CHECK(ev.live_out.size == d[off + 3]);
			CHECK(!strict || !ev.live_out.reserved);
			w->live_outs[w->nlive_outs++] = (struct fl_stackmap_live_out){
				.dwarf_reg = ev.live_out.dwarf_reg,
				.size = ev.live_out.size,
			};
			lon++;
			break;
		}
		case FL_SM_RECORD_END: {
			size_t end = lopos + 4 + (size_t)nlo * LIVE_OUT_SIZE;

			CHECK(x == X_RECORD && ln == nloc && lon == nlo);
			CHECK(ev.offset == end);
			CHECK(align8(start, end) <= n);
			rpos = align8(start, end);
			rn++;
			w->records++;
			x = X_TABLE;
			break;
		}
		case FL_SM_TABLE_END:
			CHECK(x == X_TABLE && fn == nfunc && cn == nconst && rn == nrec);
			CHECK(version < 2 || left_in_fn == 0);
			CHECK(ev.offset == rpos);
			pos = rpos;
			if (w->nboundaries < MAX_BOUNDARIES)
				w->boundaries[w->nboundaries++] = pos;
			table++;
			x = X_HEADER;
			break;
		default:
			CHECK(!"unknown event type");
		}
	}
	if (ret == 0) {
		CHECK(x == X_HEADER && table > 0 && pos == n);
		CHECK(diag.err == 0);
	} else {
		CHECK(format_error(ret));
		check_diag(&diag, ret, PREFIX);
		/* Sticky: the cursor stays on the error. */
		CHECK(fl_stackmap_next(&c, &ev) == ret);
		CHECK(fl_stackmap_next(&c, &ev) == ret);
		w->records = ret;
	}
}

static bool same_record(const struct fl_stackmap_record *a, const struct walk *w,
			const struct record *b)
{
	uint16_t i;

	if (a->id != b->r.id || a->function_address != b->r.function_address ||
	    a->pc != b->r.pc || a->stack_size != b->r.stack_size ||
	    a->instruction_offset != b->r.instruction_offset ||
	    a->table != b->r.table || a->function != b->r.function ||
	    a->index != b->r.index || a->flags != b->r.flags ||
	    a->num_locations != b->r.num_locations ||
	    a->num_live_outs != b->r.num_live_outs || a->version != b->r.version)
		return false;
	if (a->num_locations && !a->locations)
		return false;
	if (a->num_live_outs && !a->live_outs)
		return false;
	for (i = 0; i < a->num_locations; i++) {
		const struct fl_stackmap_location *x = &a->locations[i];
		const struct fl_stackmap_location *y = &w->locations[b->first_location + i];

		if (x->kind != y->kind || x->size != y->size ||
		    x->dwarf_reg != y->dwarf_reg || x->offset != y->offset ||
		    x->constant != y->constant)
			return false;
	}
	for (i = 0; i < a->num_live_outs; i++) {
		const struct fl_stackmap_live_out *x = &a->live_outs[i];
		const struct fl_stackmap_live_out *y = &w->live_outs[b->first_live_out + i];

		if (x->dwarf_reg != y->dwarf_reg || x->size != y->size)
			return false;
	}
	return true;
}

/* The table built from the input: one record per record event, lookups. */
static void check_table(const uint8_t *d, size_t n, uint32_t flags,
			const struct walk *w)
{
	struct fl_stackmap *sm = (struct fl_stackmap *)1;
	struct fl_diag diag;
	size_t i, count;
	int ret;

	ret = fl_stackmap_parse(d, n, flags, &sm, &diag);
	if (w->records < 0) {
		CHECK(ret == w->records && sm == NULL);
		check_diag(&diag, ret, PREFIX);
		return;
	}
	if (ret == -ENOMEM) {
		CHECK(sm == NULL);
		return;
	}
	CHECK(ret == 0 && sm != NULL);
	count = fl_stackmap_count(sm);
	CHECK(count == (size_t)w->records);
	CHECK(fl_stackmap_record(sm, count) == NULL);
	CHECK(fl_stackmap_record(sm, SIZE_MAX) == NULL);
	for (i = 0; i < count; i++) {
		const struct fl_stackmap_record *r = fl_stackmap_record(sm, i), *p;
		const struct fl_stackmap_record *const *ids = NULL;
		size_t nids, j, at = SIZE_MAX;

		CHECK(r != NULL && same_record(r, w, &w->recs[i]));

		/* All the records with this ID, in section order, r among them. */
		nids = fl_stackmap_find_id(sm, r->id, &ids);
		CHECK(nids >= 1 && ids != NULL);
		for (j = 0; j < nids; j++) {
			CHECK(ids[j]->id == r->id);
			if (ids[j] == r)
				at = j;
			if (j > 0)
				CHECK(ids[j - 1]->table < ids[j]->table ||
				      (ids[j - 1]->table == ids[j]->table &&
				       ids[j - 1]->index < ids[j]->index));
		}
		CHECK(at != SIZE_MAX);

		p = fl_stackmap_find_pc(sm, r->pc);
		CHECK(p != NULL && p->pc == r->pc);
		/* The first in section order (quadratic: small tables only). */
		if (count <= 1024) {
			j = 0;
			while (fl_stackmap_record(sm, j)->pc != r->pc)
				j++;
			CHECK(j <= i && fl_stackmap_record(sm, j) == p);
		}
	}
	/* Lookups of values found in the input: NULL or a match. */
	for (i = 0; i + 8 <= n && i < 256; i += 4) {
		uint64_t v = raw(d + i, 8, flags & FL_PARSE_BIG_ENDIAN);
		const struct fl_stackmap_record *const *ids = NULL;
		const struct fl_stackmap_record *p = fl_stackmap_find_pc(sm, v);
		size_t nids = fl_stackmap_find_id(sm, v, &ids), j;

		CHECK(p == NULL || p->pc == v);
		for (j = 0; j < nids; j++)
			CHECK(ids[j]->id == v);
		if (nids == 0 || p == NULL)
			for (j = 0; j < count; j++) {
				CHECK(nids || fl_stackmap_record(sm, j)->id != v);
				CHECK(p || fl_stackmap_record(sm, j)->pc != v);
			}
	}
	fl_stackmap_free(sm);
}

/* A prefix of a valid input is valid exactly at a table boundary. */
static void check_prefixes(const uint8_t *d, size_t n, uint32_t flags,
			   const struct walk *w)
{
	size_t i, cut[4] = { n - 1, n / 2, n > 9 ? n - 9 : 0, 16 };

	for (i = 0; i < w->nboundaries; i++)
		CHECK(fl_stackmap_validate(d, w->boundaries[i], flags, NULL) >= 0);
	for (i = 0; i < 4; i++) {
		bool boundary = false;
		size_t j;

		for (j = 0; j < w->nboundaries; j++)
			boundary |= w->boundaries[j] == cut[i];
		if (w->nboundaries < MAX_BOUNDARIES && cut[i] < n)
			CHECK((fl_stackmap_validate(d, cut[i], flags, NULL) >= 0) ==
			      boundary);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct walk w[4];
	uint32_t s;

	/* Every item takes at least 4 bytes: room for all of them. */
	w[0] = (struct walk){
		.functions = malloc((size / 16 + 1) * sizeof(struct function)),
		.constants = malloc((size / 8 + 1) * sizeof(uint64_t)),
		.recs = malloc((size / 24 + 1) * sizeof(struct record)),
		.locations = malloc((size / 8 + 1) * sizeof(struct fl_stackmap_location)),
		.live_outs = malloc((size / 4 + 1) * sizeof(struct fl_stackmap_live_out)),
	};
	if (!w[0].functions || !w[0].constants || !w[0].recs || !w[0].locations ||
	    !w[0].live_outs)
		goto out;
	for (s = 0; s < 4; s++) {
		uint32_t flags = ((s & 1) ? FL_PARSE_STRICT : 0) |
				 ((s & 2) ? FL_PARSE_BIG_ENDIAN : 0);
		long ref = reference(data, size, s & 2, s & 1);
		struct fl_diag diag;
		long v;

		w[s] = w[0];
		walk(data, size, flags, &w[s]);
		CHECK(ref < 0 ? w[s].records < 0 : w[s].records == ref);

		v = fl_stackmap_validate(data, size, flags, &diag);
		CHECK(v == w[s].records);
		if (v < 0)
			check_diag(&diag, (int)v, PREFIX);

		check_table(data, size, flags, &w[s]);
		if (w[s].records >= 0)
			check_prefixes(data, size, flags, &w[s]);
	}
	/* Strict only adds checks, in either byte order. */
	for (s = 0; s < 4; s += 2) {
		if (w[s + 1].records >= 0)
			CHECK(w[s].records == w[s + 1].records);
		if (w[s].records < 0)
			CHECK(w[s + 1].records < 0);
	}
	/* NULL data is an empty section. */
	CHECK(fl_stackmap_validate(NULL, size, 0, NULL) == -EMSGSIZE);
out:
	free(w[0].functions);
	free(w[0].constants);
	free(w[0].recs);
	free(w[0].locations);
	free(w[0].live_outs);
	return 0;
}
