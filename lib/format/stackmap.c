// SPDX-License-Identifier: MIT
/*
 * The stack map cursor: walks .llvm_stackmaps (versions 1, 2 and 3) as
 * events.
 *
 * Layout (object byte order; offsets are aligned relative to the table):
 *   header    u8 Version, u8 0, u16 0, u32 NumFunctions, u32 NumConstants,
 *             u32 NumRecords
 *   function  u64 Address, u64 StackSize, u64 RecordCount   (v1: no RecordCount)
 *   constant  u64
 *   record    u64 ID, u32 InstructionOffset, u16 Flags, u16 NumLocations,
 *             locations, [v3: pad to 8], u16 Padding, u16 NumLiveOuts,
 *             live-outs, pad to 8
 *   location  v3: u8 Kind, u8 0, u16 Size, u16 DwarfReg, u16 0, i32 Offset
 *             v1, v2: u8 Kind, u8 Size, u16 DwarfReg, i32 Offset
 *   live-out  u16 DwarfReg, u8 0, u8 Size
 *
 * A table's header-level checks are made before its first event: the
 * counts must fit in what is left of the section (every record needs at
 * least MIN_RECORD_SIZE bytes) and, from v2 on, the RecordCounts of the
 * functions must add up to NumRecords.  Each record is then checked whole
 * (header, locations, live-outs, padding) before its FL_SM_RECORD event, and
 * each location's kind and constant index when it is reached.
 *
 * Bounds arithmetic is 64-bit on 32-bit and 16-bit counts, which cannot
 * overflow; 64-bit RecordCounts are compared, never multiplied.  No
 * allocation, no syscalls: this runs in signal context too.
 */
#include <errno.h>

#include <faultline/format.h>

#include "format/cursor.h"
#include "format/diag.h"
#include "format/read.h"

#define SECTION FL_STACKMAP_SECTION
#define HEADER_SIZE 16u
#define CONSTANT_SIZE 8u
#define RECORD_HEADER_SIZE 16u
#define LIVE_OUT_HEADER_SIZE 4u	/* u16 Padding, u16 NumLiveOuts */
#define LIVE_OUT_SIZE 4u
/* Header, no locations, padding + NumLiveOuts, no live-outs, aligned to 8. */
#define MIN_RECORD_SIZE 24u

enum {
	SM_HEADER,	/* at a table header, or at the end */
	SM_FUNCTION,
	SM_CONSTANT,
	SM_RECORD,
	SM_LOCATION,
	SM_LIVE_OUT_HEADER,	/* after the last location: padding, NumLiveOuts */
	SM_LIVE_OUT,
	SM_RECORD_END,
	SM_ERROR,
};

static int big(const struct fl_stackmap_cursor *c)
{
	return !!(c->flags & FL_PARSE_BIG_ENDIAN);
}

static uint16_t r16(const struct fl_stackmap_cursor *c, size_t off)
{
	return rd16(c->data + off, big(c));
}

static uint32_t r32(const struct fl_stackmap_cursor *c, size_t off)
{
	return rd32(c->data + off, big(c));
}

static uint64_t r64(const struct fl_stackmap_cursor *c, size_t off)
{
	return rd64(c->data + off, big(c));
}

static unsigned function_size(uint8_t version)
{
	return version == 1 ? 16u : 24u;
}

static unsigned location_size(uint8_t version)
{
	return version == 3 ? 12u : 8u;
}

/* Aligns a section offset to 8 relative to the start of the table. */
static uint64_t align8(const struct fl_stackmap_cursor *c, uint64_t off)
{
	uint64_t rel = off - c->table_start;

	return c->table_start + ((rel + 7) & ~(uint64_t)7);
}

void fl_stackmap_cursor_init(struct fl_stackmap_cursor *c, const void *data,
			     size_t size, uint32_t flags, struct fl_diag *diag)
{
	*c = (struct fl_stackmap_cursor){
		.data = data,
		.size = data ? size : 0,
		.flags = flags,
		.state = SM_HEADER,
		.diag = diag,
	};
	if (diag) {
		diag->err = 0;
		diag->msg[0] = '\0';
	}
}

static int fail(struct fl_stackmap_cursor *c, int err)
{
	c->state = SM_ERROR;
	c->err = err;
	return err;
}

static int strict(const struct fl_stackmap_cursor *c)
{
	return !!(c->flags & FL_PARSE_STRICT);
}

/* Non-zero bytes in [from, to): for padding checks in strict mode. */
static int nonzero(const struct fl_stackmap_cursor *c, uint64_t from, uint64_t to)
{
	for (; from < to; from++)
		if (c->data[from])
			return 1;
	return 0;
}

/* v2 and v3: the RecordCounts must add up to NumRecords. */
static int check_record_counts(struct fl_stackmap_cursor *c)
{
	uint64_t sum = 0;
	uint32_t i;

	for (i = 0; i < c->num_functions; i++) {
		uint64_t count = r64(c, c->functions_pos + (size_t)i * 24 + 16);

		if (count > c->num_records - sum)
			return fail(c, fl_diag_set(c->diag, -EINVAL, SECTION, c->table,
				"function %u: RecordCount %llu takes the sum of RecordCount past NumRecords %u",
				i, (unsigned long long)count, c->num_records));
		sum += count;
	}
	if (sum != c->num_records)
		return fail(c, fl_diag_set(c->diag, -EINVAL, SECTION, c->table,
			"sum of RecordCount %llu != NumRecords %u",
			(unsigned long long)sum, c->num_records));
	return 0;
}

static int read_header(struct fl_stackmap_cursor *c, struct fl_stackmap_event *ev)
{
	const unsigned char *p = c->data + c->pos;
	uint64_t rest = left(c->size, c->pos);
	uint64_t need;
	uint8_t version;
	int ret;

	if (rest < HEADER_SIZE)
		return fail(c, fl_diag_set(c->diag, -EMSGSIZE, SECTION, c->table,
			"header truncated: %u bytes needed at offset %zu, %llu left",
			HEADER_SIZE, c->pos, (unsigned long long)rest));
	version = rd8(p);
	if (version < 1 || version > 3)
		return fail(c, fl_diag_set(c->diag, -EPROTONOSUPPORT, SECTION, c->table,
			"Version %u unsupported (supported: 1, 2, 3)", version));
	if (strict(c) && (p[1] || r16(c, c->pos + 2)))
		return fail(c, fl_diag_set(c->diag, -EINVAL, SECTION, c->table,
			"Reserved header fields are 0x%x, 0x%x, expected 0 (strict)",
			p[1], r16(c, c->pos + 2)));

	c->version = version;
	c->table_start = c->pos;
	c->num_functions = r32(c, c->pos + 4);
	c->num_constants = r32(c, c->pos + 8);
	c->num_records = r32(c, c->pos + 12);

	need = (uint64_t)c->num_functions * function_size(version);
	if (need > rest - HEADER_SIZE)
		return fail(c, fl_diag_set(c->diag, -EMSGSIZE, SECTION, c->table,
			"NumFunctions %u needs %llu bytes, %llu left",
			c->num_functions, (unsigned long long)need,
			(unsigned long long)(rest - HEADER_SIZE)));
	need += (uint64_t)c->num_constants * CONSTANT_SIZE;
	if (need > rest - HEADER_SIZE)
		return fail(c, fl_diag_set(c->diag, -EMSGSIZE, SECTION, c->table,
			"NumConstants %u needs %llu bytes, %llu left after the functions",
			c->num_constants,
			(unsigned long long)c->num_constants * CONSTANT_SIZE,
			(unsigned long long)(rest - HEADER_SIZE -
				(uint64_t)c->num_functions * function_size(version))));
	if ((uint64_t)c->num_records * MIN_RECORD_SIZE > rest - HEADER_SIZE - need)
		return fail(c, fl_diag_set(c->diag, -EMSGSIZE, SECTION, c->table,
			"NumRecords %u needs at least %llu bytes, %llu left after the constants",
			c->num_records,
			(unsigned long long)c->num_records * MIN_RECORD_SIZE,
			(unsigned long long)(rest - HEADER_SIZE - need)));

	c->functions_pos = c->pos + HEADER_SIZE;
	c->constants_pos = c->functions_pos +
		(size_t)c->num_functions * function_size(version);
	if (version >= 2 && (ret = check_record_counts(c)) < 0)
		return ret;

	ev->type = FL_SM_TABLE;
	ev->table = c->table;
	ev->offset = c->pos;
	ev->header.version = version;
	ev->header.reserved0 = p[1];
	ev->header.reserved1 = r16(c, c->pos + 2);
	ev->header.num_functions = c->num_functions;
	ev->header.num_constants = c->num_constants;
	ev->header.num_records = c->num_records;

	c->function = 0;
	c->constant = 0;
	c->record = 0;
	c->record_function = 0;
	c->records_left_in_function = 0;
	if (version >= 2 && c->num_functions > 0)
		c->records_left_in_function = r64(c, c->functions_pos + 16);
	c->pos = c->constants_pos + (size_t)c->num_constants * CONSTANT_SIZE;
	c->state = SM_FUNCTION;
	return 1;
}

static void function_event(struct fl_stackmap_cursor *c, struct fl_stackmap_event *ev)
{
	size_t off = c->functions_pos + (size_t)c->function * function_size(c->version);

	ev->type = FL_SM_FUNCTION;
	ev->table = c->table;
	ev->offset = off;
	ev->function.index = c->function;
	ev->function.address = r64(c, off);
	ev->function.address_offset = off;
	ev->function.stack_size = r64(c, off + 8);
	ev->function.record_count = c->version >= 2 ? r64(c, off + 16) : 0;
	c->function++;
}

static void constant_event(struct fl_stackmap_cursor *c, struct fl_stackmap_event *ev)
{
	size_t off = c->constants_pos + (size_t)c->constant * CONSTANT_SIZE;

	ev->type = FL_SM_CONSTANT;
	ev->table = c->table;
	ev->offset = off;
	ev->constant.index = c->constant;
	ev->constant.value = r64(c, off);
	c->constant++;
}

/* Checks the whole record at c->pos, then reports its header. */
static int read_record(struct fl_stackmap_cursor *c, struct fl_stackmap_event *ev)
{
	uint64_t later = (uint64_t)(c->num_records - c->record - 1) * MIN_RECORD_SIZE;
	uint64_t rest = left(c->size, c->pos);
	uint64_t avail, locs_end, lo_header, end;
	uint16_t nloc, nlo;

	/* read_header left room for MIN_RECORD_SIZE bytes per record. */
	avail = rest - later;
	nloc = r16(c, c->pos + 14);
	locs_end = c->pos + RECORD_HEADER_SIZE + (uint64_t)nloc * location_size(c->version);
	lo_header = align8(c, locs_end);
	if (lo_header + LIVE_OUT_HEADER_SIZE > c->pos + avail)
		return fail(c, fl_diag_set(c->diag, -EMSGSIZE, SECTION, c->table,
			"record %u: NumLocations %u needs %llu bytes, %llu left",
			c->record, nloc,
			(unsigned long long)(lo_header + LIVE_OUT_HEADER_SIZE - c->pos),
			(unsigned long long)avail));
	nlo = r16(c, (size_t)lo_header + 2);
	end = align8(c, lo_header + LIVE_OUT_HEADER_SIZE + (uint64_t)nlo * LIVE_OUT_SIZE);
	if (end > c->pos + avail)
		return fail(c, fl_diag_set(c->diag, -EMSGSIZE, SECTION, c->table,
			"record %u: NumLiveOuts %u needs %llu bytes, %llu left",
			c->record, nlo,
			(unsigned long long)(end - lo_header),
			(unsigned long long)(c->pos + avail - lo_header)));
	if (strict(c) && r16(c, c->pos + 12))
		return fail(c, fl_diag_set(c->diag, -EINVAL, SECTION, c->table,
			"record %u: Flags is 0x%x, expected 0 (strict)",
			c->record, r16(c, c->pos + 12)));

	if (c->version >= 2) {
		/*
		 * Records come grouped by function, in function order.  The
		 * RecordCounts add up to NumRecords (checked in read_header),
		 * so this stays within the functions.
		 */
		while (c->records_left_in_function == 0) {
			c->record_function++;
			c->records_left_in_function = r64(c,
				c->functions_pos + (size_t)c->record_function * 24 + 16);
		}
		c->records_left_in_function--;
		ev->record.function = c->record_function;
		ev->record.function_address =
			r64(c, c->functions_pos + (size_t)c->record_function * 24);
		ev->record.stack_size =
			r64(c, c->functions_pos + (size_t)c->record_function * 24 + 8);
	} else {
		ev->record.function = FL_NO_FUNCTION;
		ev->record.function_address = 0;
		ev->record.stack_size = 0;
	}

	ev->type = FL_SM_RECORD;
	ev->table = c->table;
	ev->offset = c->pos;
	ev->record.index = c->record;
	ev->record.id = r64(c, c->pos);
	ev->record.instruction_offset = r32(c, c->pos + 8);
	ev->record.flags = r16(c, c->pos + 12);
	ev->record.num_locations = nloc;
	ev->record.num_live_outs = nlo;

	c->num_locations = nloc;
	c->location = 0;
	c->num_live_outs = nlo;
	c->live_out = 0;
	c->pos += RECORD_HEADER_SIZE;
	c->state = SM_LOCATION;
	return 1;
}

/* The location at c->pos, checked: ev->location filled in, or the error. */
static inline __attribute__((always_inline)) int location_at(struct fl_stackmap_cursor *c, struct fl_stackmap_event *ev)
{
	size_t off = c->pos;
	uint8_t kind = rd8(c->data + off);

	ev->location.record = c->record;
	ev->location.index = c->location;
	ev->location.kind = kind;
	if (c->version == 3) {
		ev->location.reserved0 = c->data[off + 1];
		ev->location.size = r16(c, off + 2);
		ev->location.dwarf_reg = r16(c, off + 4);
		ev->location.reserved1 = r16(c, off + 6);
		ev->location.offset = (int32_t)r32(c, off + 8);
	} else {
		ev->location.reserved0 = 0;
		ev->location.size = c->data[off + 1];
		ev->location.dwarf_reg = r16(c, off + 2);
		ev->location.reserved1 = 0;
		ev->location.offset = (int32_t)r32(c, off + 4);
	}
	ev->location.constant = 0;

	if (!fl_location_kind_known(kind))
		return fail(c, fl_diag_set(c->diag, -EINVAL, SECTION, c->table,
			"record %u: location %u: Kind %u unknown",
			c->record, c->location, kind));
	if (strict(c) && (ev->location.reserved0 || ev->location.reserved1))
		return fail(c, fl_diag_set(c->diag, -EINVAL, SECTION, c->table,
			"record %u: location %u: Reserved fields are 0x%x, 0x%x, expected 0 (strict)",
			c->record, c->location, ev->location.reserved0,
			ev->location.reserved1));

	if (kind == FL_LOC_CONSTANT) {
		ev->location.constant = (uint64_t)(int64_t)ev->location.offset;
	} else if (kind == FL_LOC_CONSTANT_INDEX) {
		uint32_t index = (uint32_t)ev->location.offset;

		if (index >= c->num_constants)
			return fail(c, fl_diag_set(c->diag, -EINVAL, SECTION, c->table,
				"record %u: location %u: ConstantIndex %u >= NumConstants %u",
				c->record, c->location, index, c->num_constants));
		ev->location.constant = r64(c, c->constants_pos + (size_t)index * CONSTANT_SIZE);
	}
	return 0;
}

static int read_location(struct fl_stackmap_cursor *c, struct fl_stackmap_event *ev)
{
	int ret = location_at(c, ev);

	if (ret < 0)
		return ret;
	ev->type = FL_SM_LOCATION;
	ev->table = c->table;
	ev->offset = c->pos;
	c->location++;
	c->pos += location_size(c->version);
	return 1;
}

/*
 * The locations of the record just read, in a loop of their own: the same
 * checks as read_location (location_at), without an event apiece.
 */
int fl_stackmap_take_locations(struct fl_stackmap_cursor *c, struct fl_stackmap_location *out)
{
	struct fl_stackmap_event ev;
	int ret;

	if (c->state != SM_LOCATION)
		return c->state == SM_ERROR ? c->err : -EINVAL;
	for (; c->location < c->num_locations; c->location++, c->pos += location_size(c->version)) {
		if ((ret = location_at(c, &ev)) < 0)
			return ret;
		if (out)
			*out++ = (struct fl_stackmap_location){
				.kind = ev.location.kind,
				.size = ev.location.size,
				.dwarf_reg = ev.location.dwarf_reg,
				.offset = ev.location.offset,
				.constant = ev.location.constant,
			};
	}
	return 0;
}

/* Steps over the padding after the locations and the live-out header. */
static int skip_live_out_header(struct fl_stackmap_cursor *c)
{
	uint64_t lo_header = align8(c, c->pos);

	if (strict(c) && nonzero(c, c->pos, lo_header))
		return fail(c, fl_diag_set(c->diag, -EINVAL, SECTION, c->table,
			"record %u: padding after the locations is not zero (strict)",
			c->record));
	if (strict(c) && r16(c, (size_t)lo_header))
		return fail(c, fl_diag_set(c->diag, -EINVAL, SECTION, c->table,
			"record %u: Padding before NumLiveOuts is 0x%x, expected 0 (strict)",
			c->record, r16(c, (size_t)lo_header)));
	c->pos = (size_t)lo_header + LIVE_OUT_HEADER_SIZE;
	return 0;
}

static int read_live_out(struct fl_stackmap_cursor *c, struct fl_stackmap_event *ev)
{
	size_t off = c->pos;

	ev->type = FL_SM_LIVE_OUT;
	ev->table = c->table;
	ev->offset = off;
	ev->live_out.record = c->record;
	ev->live_out.index = c->live_out;
	ev->live_out.dwarf_reg = r16(c, off);
	ev->live_out.reserved = c->data[off + 2];
	ev->live_out.size = c->data[off + 3];
	if (strict(c) && ev->live_out.reserved)
		return fail(c, fl_diag_set(c->diag, -EINVAL, SECTION, c->table,
			"record %u: live-out %u: Reserved is 0x%x, expected 0 (strict)",
			c->record, c->live_out, ev->live_out.reserved));
	c->live_out++;
	c->pos += LIVE_OUT_SIZE;
	return 1;
}

static int end_record(struct fl_stackmap_cursor *c, struct fl_stackmap_event *ev)
{
	uint64_t end = align8(c, c->pos);

	if (strict(c) && nonzero(c, c->pos, end))
		return fail(c, fl_diag_set(c->diag, -EINVAL, SECTION, c->table,
			"record %u: padding after the live-outs is not zero (strict)",
			c->record));
	ev->type = FL_SM_RECORD_END;
	ev->table = c->table;
	ev->offset = c->pos;
	ev->record.index = c->record;
	c->pos = (size_t)end;
	c->record++;
	c->state = SM_RECORD;
	return 1;
}

int fl_stackmap_next(struct fl_stackmap_cursor *c, struct fl_stackmap_event *ev)
{
	int ret;

	for (;;) {
		switch (c->state) {
		case SM_HEADER:
			if (c->pos == c->size) {
				if (c->table == 0)
					return fail(c, fl_diag_set(c->diag, -EMSGSIZE,
						SECTION, 0, "section is empty"));
				return 0;
			}
			return read_header(c, ev);
		case SM_FUNCTION:
			if (c->function < c->num_functions) {
				function_event(c, ev);
				return 1;
			}
			c->state = SM_CONSTANT;
			continue;
		case SM_CONSTANT:
			if (c->constant < c->num_constants) {
				constant_event(c, ev);
				return 1;
			}
			c->state = SM_RECORD;
			continue;
		case SM_RECORD:
			if (c->record < c->num_records)
				return read_record(c, ev);
			ev->type = FL_SM_TABLE_END;
			ev->table = c->table;
			ev->offset = c->pos;
			c->table++;
			c->state = SM_HEADER;
			return 1;
		case SM_LOCATION:
			if (c->location < c->num_locations)
				return read_location(c, ev);
			c->state = SM_LIVE_OUT_HEADER;
			continue;
		case SM_LIVE_OUT_HEADER:
			if ((ret = skip_live_out_header(c)) < 0)
				return ret;
			c->state = SM_LIVE_OUT;
			continue;
		case SM_LIVE_OUT:
			if (c->live_out < c->num_live_outs)
				return read_live_out(c, ev);
			c->state = SM_RECORD_END;
			continue;
		case SM_RECORD_END:
			return end_record(c, ev);
		default:
			return c->err;
		}
	}
}

/*
 * A record with k locations takes at least 16 + k * location_size + 4
 * bytes, so the rest of the section holds at most (rest - 20 * records) /
 * location_size of them.
 */
size_t fl_stackmap_locations_bound(const struct fl_stackmap_cursor *c)
{
	uint64_t rest = left(c->size, c->pos), headers = (uint64_t)c->num_records * 20;

	/* read_header left c->pos at the records, and room for 24 bytes each. */
	return (size_t)((rest - headers) / location_size(c->version));
}

long fl_stackmap_validate(const void *data, size_t size, uint32_t flags,
			  struct fl_diag *diag)
{
	struct fl_stackmap_cursor c;
	struct fl_stackmap_event ev;
	long records = 0;
	int ret;

	fl_stackmap_cursor_init(&c, data, size, flags, diag);
	while ((ret = fl_stackmap_next(&c, &ev)) > 0) {
		if (ev.type != FL_SM_RECORD)
			continue;
		if ((ret = fl_stackmap_take_locations(&c, NULL)) < 0)
			break;
		records++;
	}
	return ret < 0 ? ret : records;
}
