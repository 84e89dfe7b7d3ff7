// SPDX-License-Identifier: MIT
/*
 * The fault map cursor: walks .llvm_faultmaps (version 1) as events.
 *
 * Layout (the object's byte order, FL_PARSE_BIG_ENDIAN; no alignment):
 *   header    u8 Version (1), u8 0, u16 0, u32 NumFunctions
 *   function  u64 FunctionAddress, u32 NumFaultingPCs, u32 0
 *   fault     u32 FaultKind, u32 FaultingPCOffset, u32 HandlerPCOffset
 * Tables follow one another until the section ends.
 *
 * Every read is preceded by a bounds check done in 64-bit arithmetic on
 * 32-bit counts, which cannot overflow.  No allocation, no syscalls: this
 * runs in signal context too.
 */
#include <errno.h>

#include <faultline/format.h>

#include "format/cursor.h"
#include "format/diag.h"
#include "format/read.h"

#define SECTION FL_FAULTMAP_SECTION
#define HEADER_SIZE 8u
#define FUNCTION_SIZE 16u
#define FAULT_SIZE 12u

enum {
	FM_HEADER,	/* at a table header, or at the end */
	FM_FUNCTION,	/* at the next function of the table */
	FM_FAULT,	/* at the next fault of the function */
	FM_ERROR,
};

void fl_faultmap_cursor_init(struct fl_faultmap_cursor *c, const void *data,
			     size_t size, uint32_t flags, struct fl_diag *diag)
{
	*c = (struct fl_faultmap_cursor){
		.data = data,
		.size = data ? size : 0,
		.flags = flags,
		.state = FM_HEADER,
		.diag = diag,
	};
	if (diag) {
		diag->err = 0;
		diag->msg[0] = '\0';
	}
}

static int fail(struct fl_faultmap_cursor *c, int err)
{
	c->state = FM_ERROR;
	c->err = err;
	return err;
}

static int big(const struct fl_faultmap_cursor *c)
{
	return !!(c->flags & FL_PARSE_BIG_ENDIAN);
}

static uint32_t r32(const struct fl_faultmap_cursor *c, size_t off)
{
	return rd32(c->data + off, big(c));
}

/* A hint for a table that reads sensibly only in the other byte order. */
static const char *endian_hint(const struct fl_faultmap_cursor *c, uint32_t value,
			       uint64_t limit)
{
	uint32_t swapped = __builtin_bswap32(value);

	if (value > limit && swapped <= limit)
		return big(c) ? " (the table looks little-endian, the object is big-endian)"
			      : " (the table looks big-endian, the object is little-endian)";
	return "";
}

static int read_header(struct fl_faultmap_cursor *c, struct fl_faultmap_event *ev)
{
	const unsigned char *p = c->data + c->pos;
	uint64_t rest = left(c->size, c->pos);
	uint8_t version;
	uint32_t nfunc;

	if (rest < HEADER_SIZE)
		return fail(c, fl_diag_set(c->diag, -EMSGSIZE, SECTION, c->table,
			"header truncated: %u bytes needed at offset %zu, %llu left",
			HEADER_SIZE, c->pos, (unsigned long long)rest));
	version = rd8(p);
	if (version != 1)
		return fail(c, fl_diag_set(c->diag, -EPROTONOSUPPORT, SECTION, c->table,
			"Version %u unsupported (supported: 1)", version));
	if ((c->flags & FL_PARSE_STRICT) && (p[1] || rd16(p + 2, big(c))))
		return fail(c, fl_diag_set(c->diag, -EINVAL, SECTION, c->table,
			"Reserved header fields are 0x%x, 0x%x, expected 0 (strict)",
			p[1], rd16(p + 2, big(c))));
	nfunc = r32(c, c->pos + 4);
	if ((uint64_t)nfunc * FUNCTION_SIZE > rest - HEADER_SIZE)
		return fail(c, fl_diag_set(c->diag, -EMSGSIZE, SECTION, c->table,
			"NumFunctions %u needs at least %llu bytes, %llu left%s",
			nfunc, (unsigned long long)nfunc * FUNCTION_SIZE,
			(unsigned long long)(rest - HEADER_SIZE),
			endian_hint(c, nfunc, (rest - HEADER_SIZE) / FUNCTION_SIZE)));

	ev->type = FL_FM_TABLE;
	ev->table = c->table;
	ev->offset = c->pos;
	ev->header.version = version;
	ev->header.reserved0 = p[1];
	ev->header.reserved1 = rd16(p + 2, big(c));
	ev->header.num_functions = nfunc;

	c->num_functions = nfunc;
	c->function = 0;
	c->pos += HEADER_SIZE;
	c->state = FM_FUNCTION;
	return 1;
}

static int read_function(struct fl_faultmap_cursor *c, struct fl_faultmap_event *ev)
{
	uint64_t rest = left(c->size, c->pos);
	uint64_t later = (uint64_t)(c->num_functions - c->function - 1) * FUNCTION_SIZE;
	uint32_t npcs, reserved;

	/* The header check guaranteed room for this and every later FunctionInfo. */
	npcs = r32(c, c->pos + 8);
	reserved = r32(c, c->pos + 12);
	if ((uint64_t)npcs * FAULT_SIZE > rest - FUNCTION_SIZE - later)
		return fail(c, fl_diag_set(c->diag, -EMSGSIZE, SECTION, c->table,
			"function %u: NumFaultingPCs %u needs %llu bytes, %llu left%s",
			c->function, npcs, (unsigned long long)npcs * FAULT_SIZE,
			(unsigned long long)(rest - FUNCTION_SIZE - later),
			endian_hint(c, npcs, (rest - FUNCTION_SIZE - later) / FAULT_SIZE)));
	if ((c->flags & FL_PARSE_STRICT) && reserved)
		return fail(c, fl_diag_set(c->diag, -EINVAL, SECTION, c->table,
			"function %u: Reserved is 0x%x, expected 0 (strict)",
			c->function, reserved));

	ev->type = FL_FM_FUNCTION;
	ev->table = c->table;
	ev->offset = c->pos;
	ev->function.index = c->function;
	ev->function.address = rd64(c->data + c->pos, big(c));
	ev->function.address_offset = c->pos;
	ev->function.num_faulting_pcs = npcs;
	ev->function.reserved = reserved;

	c->function_address = ev->function.address;
	c->num_pcs = npcs;
	c->pc = 0;
	c->pos += FUNCTION_SIZE;
	c->state = FM_FAULT;
	return 1;
}

static int read_fault(struct fl_faultmap_cursor *c, struct fl_faultmap_event *ev)
{
	/* read_function guaranteed room for all NumFaultingPCs entries. */
	uint32_t kind = r32(c, c->pos);

	if (!fl_fault_kind_known(kind))
		return fail(c, fl_diag_set(c->diag, -EINVAL, SECTION, c->table,
			"function %u: fault %u: FaultKind %u unknown%s",
			c->function, c->pc, kind, endian_hint(c, kind, 3)));

	ev->type = FL_FM_FAULT;
	ev->table = c->table;
	ev->offset = c->pos;
	ev->fault.index = c->pc;
	ev->fault.function = c->function;
	ev->fault.function_address = c->function_address;
	ev->fault.kind = kind;
	ev->fault.faulting_pc_offset = r32(c, c->pos + 4);
	ev->fault.handler_pc_offset = r32(c, c->pos + 8);

	c->pc++;
	c->pos += FAULT_SIZE;
	return 1;
}

int fl_faultmap_next(struct fl_faultmap_cursor *c, struct fl_faultmap_event *ev)
{
	for (;;) {
		switch (c->state) {
		case FM_HEADER:
			if (c->pos == c->size) {
				if (c->table == 0)
					return fail(c, fl_diag_set(c->diag, -EMSGSIZE,
						SECTION, 0, "section is empty"));
				return 0;
			}
			return read_header(c, ev);
		case FM_FUNCTION:
			if (c->function == c->num_functions) {
				ev->type = FL_FM_TABLE_END;
				ev->table = c->table;
				ev->offset = c->pos;
				c->table++;
				c->state = FM_HEADER;
				return 1;
			}
			return read_function(c, ev);
		case FM_FAULT:
			if (c->pc == c->num_pcs) {
				c->function++;
				c->state = FM_FUNCTION;
				continue;
			}
			return read_fault(c, ev);
		default:
			return c->err;
		}
	}
}

/*
 * The faults of the function just read, in a tight loop: read_fault's one
 * check of each (its kind), and the entry each makes; the first that fails
 * the check is read by read_fault, which fails the walk exactly as an event
 * walk would.
 */
int fl_faultmap_take_faults(struct fl_faultmap_cursor *c, struct fl_faultmap_entry *out)
{
	struct fl_faultmap_event ev;

	if (c->state != FM_FAULT)
		return c->state == FM_ERROR ? c->err : -EINVAL;
	for (; c->pc < c->num_pcs; c->pc++, c->pos += FAULT_SIZE) {
		uint32_t kind = r32(c, c->pos);

		if (!fl_fault_kind_known(kind))
			return read_fault(c, &ev);
		if (out)
			*out++ = (struct fl_faultmap_entry){
				.function_address = c->function_address,
				.faulting_pc = c->function_address + r32(c, c->pos + 4),
				.handler_pc = c->function_address + r32(c, c->pos + 8),
				.kind = kind,
				.table = c->table,
				.function = c->function,
				.index = c->pc,
			};
	}
	return 0;
}

size_t fl_faultmap_faults_bound(const struct fl_faultmap_cursor *c)
{
	/* read_header checked that the function headers fit. */
	return (size_t)((left(c->size, c->pos) -
			 (uint64_t)c->num_functions * FUNCTION_SIZE) / FAULT_SIZE);
}

long fl_faultmap_validate(const void *data, size_t size, uint32_t flags,
			  struct fl_diag *diag)
{
	struct fl_faultmap_cursor c;
	struct fl_faultmap_event ev;
	long faults = 0;
	int ret;

	fl_faultmap_cursor_init(&c, data, size, flags, diag);
	while ((ret = fl_faultmap_next(&c, &ev)) > 0) {
		if (ev.type != FL_FM_FUNCTION)
			continue;
		if ((ret = fl_faultmap_take_faults(&c, NULL)) < 0)
			break;
		faults += ev.function.num_faulting_pcs;
	}
	return ret < 0 ? ret : faults;
}
