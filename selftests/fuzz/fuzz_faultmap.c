// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the fault map cursor and table on arbitrary bytes.
 *
 * The input is the section.  Every input is walked both without and with
 * FL_PARSE_STRICT (so the seeds are plain sections, and strict mode is
 * checked against the default on the same bytes).  What must hold:
 *  - the cursor accepts exactly what a small reference walker written here
 *    from the format description accepts, with the same fault count;
 *  - every event is at the section offset where the reference walker is,
 *    inside the input, in non-decreasing order, in the order the format
 *    dictates (table, functions each followed by its faults, table end),
 *    and its fields are the bytes found there;
 *  - a success ends exactly at the end of the input; a failure is one of the
 *    documented errors with a non-empty NUL-terminated diagnostic, and every
 *    later call returns the same error;
 *  - strict success implies default success with the same count;
 *  - fl_faultmap_validate and fl_faultmap_parse agree with the cursor;
 *    every entry of the table is its fault event, and looking up its
 *    faulting PC finds the first entry with that PC;
 *  - of a valid input, a prefix is valid exactly when it ends at a table
 *    boundary.
 */
#include <stdbool.h>

#include "fuzz.h"

#define HEADER_SIZE 8u
#define FUNCTION_SIZE 16u
#define FAULT_SIZE 12u
#define MAX_BOUNDARIES 64
#define PREFIX "" FL_FAULTMAP_SECTION ": table "

/*
 * The format, read again independently of lib/format: returns the number of
 * faults of a valid section, -1 for an invalid one.
 */
static long reference(const uint8_t *d, size_t n, bool strict, int big)
{
	size_t pos = 0;
	long faults = 0;

	if (n == 0)
		return -1;
	while (pos < n) {
		uint32_t nfunc, f;

		if (n - pos < HEADER_SIZE || d[pos] != 1)
			return -1;
		if (strict && (d[pos + 1] || d[pos + 2] || d[pos + 3]))
			return -1;
		nfunc = (uint32_t)raw(d + pos + 4, 4, big);
		pos += HEADER_SIZE;
		for (f = 0; f < nfunc; f++) {
			uint32_t npcs, i;

			if (n - pos < FUNCTION_SIZE)
				return -1;
			npcs = (uint32_t)raw(d + pos + 8, 4, big);
			if (strict && raw(d + pos + 12, 4, big))
				return -1;
			pos += FUNCTION_SIZE;
			if ((n - pos) / FAULT_SIZE < npcs)
				return -1;
			for (i = 0; i < npcs; i++, pos += FAULT_SIZE) {
				uint32_t kind = (uint32_t)raw(d + pos, 4, big);

				if (kind < 1 || kind > 3)
					return -1;
				faults++;
			}
		}
	}
	return faults;
}

struct fault {
	uint64_t function_address;
	uint32_t faulting_pc_offset;
	uint32_t handler_pc_offset;
	uint32_t kind;
	uint32_t table;
	uint32_t function;
	uint32_t index;
};

struct walk {
	long faults;		/* or the error */
	size_t nboundaries;	/* table ends, when no more than MAX_BOUNDARIES */
	size_t boundaries[MAX_BOUNDARIES];
	struct fault *out;	/* room for every fault of the input, or NULL */
};

/* Walks the input with the cursor, checking every event against the bytes. */
static void walk(const uint8_t *d, size_t n, uint32_t flags, struct walk *w)
{
	bool strict = flags & FL_PARSE_STRICT;
	struct fl_faultmap_cursor c;
	struct fl_faultmap_event ev;
	struct fl_diag diag;
	size_t pos = 0, last = 0;
	uint32_t table = 0, nfunc = 0, fn = 0, npcs = 0, pc = 0;
	uint64_t address = 0;
	bool in_table = false;
	int ret;

	memset(&diag, 0xa5, sizeof(diag));
	w->faults = 0;
	w->nboundaries = 0;
	fl_faultmap_cursor_init(&c, d, n, flags, &diag);
	CHECK(diag.err == 0 && diag.msg[0] == '\0');
	while ((ret = fl_faultmap_next(&c, &ev)) > 0) {
		CHECK(ret == 1);
		CHECK(ev.offset >= last && ev.offset <= n);
		CHECK(ev.offset == pos);
		CHECK(ev.table == table);
		last = ev.offset;
		switch (ev.type) {
		case FL_FM_TABLE:
			CHECK(!in_table);
			CHECK(n - pos >= HEADER_SIZE);
			CHECK(ev.header.version == 1 && d[pos] == 1);
			CHECK(ev.header.reserved0 == d[pos + 1]);
			CHECK(ev.header.reserved1 == raw(d + pos + 2, 2, 0));
			CHECK(!strict || (!ev.header.reserved0 && !ev.header.reserved1));
			CHECK(ev.header.num_functions == raw(d + pos + 4, 4, 0));
			nfunc = ev.header.num_functions;
			fn = 0;
			npcs = pc = 0;
			in_table = true;
			pos += HEADER_SIZE;
			break;
		case FL_FM_FUNCTION:
			CHECK(in_table && fn < nfunc && pc == npcs);
			CHECK(n - pos >= FUNCTION_SIZE);
			CHECK(ev.function.index == fn);
			CHECK(ev.function.address == raw(d + pos, 8, 0));
			CHECK(ev.function.address_offset == pos);
			CHECK(ev.function.num_faulting_pcs == raw(d + pos + 8, 4, 0));
			CHECK(ev.function.reserved == raw(d + pos + 12, 4, 0));
			CHECK(!strict || !ev.function.reserved);
			address = ev.function.address;
			npcs = ev.function.num_faulting_pcs;
			pc = 0;
			fn++;
			pos += FUNCTION_SIZE;
			break;
		case FL_FM_FAULT:
			CHECK(in_table && fn > 0 && pc < npcs);
			CHECK(n - pos >= FAULT_SIZE);
			CHECK(ev.fault.index == pc);
			CHECK(ev.fault.function == fn - 1);
			CHECK(ev.fault.function_address == address);
			CHECK(ev.fault.kind == raw(d + pos, 4, 0));
			CHECK(fl_fault_kind_name(ev.fault.kind) != NULL);
			CHECK(ev.fault.faulting_pc_offset == raw(d + pos + 4, 4, 0));
			CHECK(ev.fault.handler_pc_offset == raw(d + pos + 8, 4, 0));
			if (w->out)
				w->out[w->faults] = (struct fault){
					.function_address = address,
					.faulting_pc_offset = ev.fault.faulting_pc_offset,
					.handler_pc_offset = ev.fault.handler_pc_offset,
					.kind = ev.fault.kind,
					.table = table,
					.function = fn - 1,
					.index = pc,
				};
			w->faults++;
			pc++;
			pos += FAULT_SIZE;
			break;
		case FL_FM_TABLE_END:
			CHECK(in_table && fn == nfunc && pc == npcs);
			if (w->nboundaries < MAX_BOUNDARIES)
				w->boundaries[w->nboundaries++] = pos;
			in_table = false;
			table++;
			break;
		default:
			CHECK(!"unknown event type");
		}
	}
	if (ret == 0) {
		CHECK(!in_table && table > 0 && pos == n);
		CHECK(diag.err == 0);
	} else {
		CHECK(format_error(ret));
		check_diag(&diag, ret, PREFIX);
		/* Sticky: the cursor stays on the error. */
		CHECK(fl_faultmap_next(&c, &ev) == ret);
		CHECK(fl_faultmap_next(&c, &ev) == ret);
		w->faults = ret;
	}
}

/* The table built from a valid input: one entry per fault, lookups. */
static void check_table(const uint8_t *d, size_t n, uint32_t flags,
			const struct walk *w)
{
	struct fl_faultmap *fm = (struct fl_faultmap *)1;
	struct fl_diag diag;
	size_t i, count;
	int ret;

	ret = fl_faultmap_parse(d, n, flags, &fm, &diag);
	if (w->faults < 0) {
		CHECK(ret == w->faults && fm == NULL);
		check_diag(&diag, ret, PREFIX);
		return;
	}
	if (ret == -ENOMEM) {
		CHECK(fm == NULL);
		return;
	}
	CHECK(ret == 0 && fm != NULL);
	count = fl_faultmap_count(fm);
	CHECK(count == (size_t)w->faults);
	CHECK(fl_faultmap_entry(fm, count) == NULL);
	CHECK(fl_faultmap_entry(fm, SIZE_MAX) == NULL);
	for (i = 0; i < count; i++) {
		const struct fl_faultmap_entry *e = fl_faultmap_entry(fm, i), *l;
		const struct fault *f = &w->out[i];

		CHECK(e != NULL);
		CHECK(e->function_address == f->function_address);
		CHECK(e->faulting_pc == f->function_address + f->faulting_pc_offset);
		CHECK(e->handler_pc == f->function_address + f->handler_pc_offset);
		CHECK(e->kind == f->kind && e->table == f->table);
		CHECK(e->function == f->function && e->index == f->index);

		l = fl_faultmap_lookup(fm, e->faulting_pc);
		CHECK(l != NULL && l->faulting_pc == e->faulting_pc);
		/* The first in section order (quadratic: small tables only). */
		if (count <= 1024) {
			size_t j = 0;

			while (fl_faultmap_entry(fm, j)->faulting_pc != e->faulting_pc)
				j++;
			CHECK(j <= i && fl_faultmap_entry(fm, j) == l);
		}
	}
	/* Every lookup returns NULL or an entry with that PC. */
	for (i = 0; i + 8 <= n && i < 256; i += 4) {
		uint64_t pc = raw(d + i, 8, 0);
		const struct fl_faultmap_entry *l = fl_faultmap_lookup(fm, pc);

		CHECK(l == NULL || l->faulting_pc == pc);
		if (l == NULL) {
			size_t j;

			for (j = 0; j < count; j++)
				CHECK(fl_faultmap_entry(fm, j)->faulting_pc != pc);
		}
	}
	fl_faultmap_free(fm);
}

/* A prefix of a valid input is valid exactly at a table boundary. */
static void check_prefixes(const uint8_t *d, size_t n, uint32_t flags,
			   const struct walk *w)
{
	size_t i, cut[4] = { n - 1, n / 2, n > 7 ? n - 7 : 0, 1 };

	for (i = 0; i < w->nboundaries; i++)
		CHECK(fl_faultmap_validate(d, w->boundaries[i], flags, NULL) >= 0);
	for (i = 0; i < 4; i++) {
		bool boundary = false;
		size_t j;

		for (j = 0; j < w->nboundaries; j++)
			boundary |= w->boundaries[j] == cut[i];
		if (w->nboundaries < MAX_BOUNDARIES && cut[i] < n)
			CHECK((fl_faultmap_validate(d, cut[i], flags, NULL) >= 0) ==
			      boundary);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct walk w[2];
	struct fault *out;
	uint32_t s;

	out = malloc((size / FAULT_SIZE + 1) * sizeof(*out));
	if (!out)
		return 0;
	for (s = 0; s < 2; s++) {
		uint32_t flags = s ? FL_PARSE_STRICT : 0;
		long ref = reference(data, size, s, 0);
		long ref_big = reference(data, size, s, 1);
		struct fl_diag diag;
		long v;

		w[s].out = out;
		walk(data, size, flags, &w[s]);
		CHECK(ref < 0 ? w[s].faults < 0 : w[s].faults == ref);

		/* Big-endian (an ELFDATA2MSB object's fault map) agrees with the reference too. */
		v = fl_faultmap_validate(data, size, flags | FL_PARSE_BIG_ENDIAN, &diag);
		CHECK(ref_big < 0 ? v < 0 : v == ref_big);
		if (v < 0)
			check_diag(&diag, (int)v, PREFIX);

		check_table(data, size, flags, &w[s]);
		if (w[s].faults >= 0)
			check_prefixes(data, size, flags, &w[s]);
	}
	/* Strict only adds checks. */
	if (w[1].faults >= 0)
		CHECK(w[0].faults == w[1].faults);
	if (w[0].faults < 0)
		CHECK(w[1].faults < 0);
	/* NULL data is an empty section. */
	CHECK(fl_faultmap_validate(NULL, size, 0, NULL) == -EMSGSIZE);
	free(out);
	return 0;
}
