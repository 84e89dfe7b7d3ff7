// SPDX-License-Identifier: MIT
/*
 * Text output that is byte for byte what LLVM 14 prints:
 *   faultmap: llvm-objdump-14 --fault-map-section, from "FaultMap table:" on
 *   stackmap: llvm-readelf-14 --stackmap
 * LLVM prints only the first table of a section; these print every table,
 * each in the same form as LLVM's first.  Input is validated before it gets
 * here, so the cursors cannot fail; they are still checked.  A line per
 * entry, millions for a large file: written through out.h, not printf.
 */
#include <stdio.h>

#include <faultline/format.h>

#include "out.h"
#include "print_llvm.h"

#define PUT CLI_OUT_LIT
/* A label (a string literal) and a number in decimal. */
#define FIELD(o, lit, v) (PUT((o), lit), cli_out_u64((o), (v)))

/* fl_fault_kind_name, without strlen. */
static void put_fault_kind(struct cli_out *out, uint32_t kind)
{
	switch (kind) {
	case FL_FAULT_LOAD:
		PUT(out, "FaultingLoad");
		break;
	case FL_FAULT_LOAD_STORE:
		PUT(out, "FaultingLoadStore");
		break;
	case FL_FAULT_STORE:
		PUT(out, "FaultingStore");
		break;
	}
}

int print_faultmap_llvm(FILE *f, const struct cli_section *sec, uint32_t flags)
{
	struct fl_faultmap_cursor c;
	struct fl_faultmap_event ev;
	struct fl_diag diag;
	struct cli_out out;
	int ret;

	if (!sec->found) {
		fputs("FaultMap table:\n<not found>\n", f);
		return 0;
	}
	cli_out_init(&out, f);
	fl_faultmap_cursor_init(&c, sec->data, sec->size, flags, &diag);
	while ((ret = fl_faultmap_next(&c, &ev)) > 0) {
		switch (ev.type) {
		case FL_FM_TABLE:
			/* LLVM: format_hex(Version, 2) */
			PUT(&out, "FaultMap table:\nVersion: 0x");
			cli_out_hex(&out, ev.header.version, 0);
			FIELD(&out, "\nNumFunctions: ", ev.header.num_functions);
			PUT(&out, "\n");
			break;
		case FL_FM_FUNCTION:
			/* LLVM: format_hex(FunctionAddress, 8): "0x" and 6+ digits */
			PUT(&out, "FunctionAddress: 0x");
			cli_out_hex(&out, ev.function.address, 6);
			FIELD(&out, ", NumFaultingPCs: ", ev.function.num_faulting_pcs);
			PUT(&out, "\n");
			break;
		case FL_FM_FAULT:
			PUT(&out, "Fault kind: ");
			put_fault_kind(&out, ev.fault.kind);
			FIELD(&out, ", faulting PC offset: ", ev.fault.faulting_pc_offset);
			FIELD(&out, ", handling PC offset: ", ev.fault.handler_pc_offset);
			PUT(&out, "\n");
			break;
		case FL_FM_TABLE_END:
			break;
		}
	}
	cli_out_flush(&out);
	return ret;
}

static void print_location(struct cli_out *out, const struct fl_stackmap_event *ev)
{
	FIELD(out, "      #", ev->location.index + 1u);
	switch (ev->location.kind) {
	case FL_LOC_REGISTER:
		FIELD(out, ": Register R#", ev->location.dwarf_reg);
		break;
	case FL_LOC_DIRECT:
		FIELD(out, ": Direct R#", ev->location.dwarf_reg);
		PUT(out, " + ");
		cli_out_i64(out, ev->location.offset);
		break;
	case FL_LOC_INDIRECT:
		FIELD(out, ": Indirect [R#", ev->location.dwarf_reg);
		PUT(out, " + ");
		cli_out_i64(out, ev->location.offset);
		PUT(out, "]");
		break;
	case FL_LOC_CONSTANT:
		/* LLVM prints the small constant as the uint32_t it reads. */
		FIELD(out, ": Constant ", (uint32_t)ev->location.offset);
		break;
	case FL_LOC_CONSTANT_INDEX:
		FIELD(out, ": ConstantIndex #", (uint32_t)ev->location.offset);
		FIELD(out, " (", ev->location.constant);
		PUT(out, ")");
		break;
	default:
		PUT(out, ": ");
		break;
	}
	FIELD(out, ", size: ", ev->location.size);
	PUT(out, "\n");
}

/*
 * LLVM prints a header before each part of a table (functions, constants,
 * records), also for an empty part: print every header the walk has moved
 * past, once, when an event of a later part (or the table's end) arrives.
 */
enum part { FUNCTIONS, CONSTANTS, RECORDS };

struct table_print {
	enum part at;
	uint32_t num_constants;
	uint32_t num_records;
	unsigned live_outs;		/* NumLiveOuts of the current record */
	int live_outs_open;		/* its "N live-outs: [ " is printed */
};

static void enter(struct cli_out *out, struct table_print *t, enum part part)
{
	while (t->at < part) {
		t->at++;
		if (t->at == CONSTANTS) {
			FIELD(out, "Num Constants: ", t->num_constants);
		} else {
			FIELD(out, "Num Records: ", t->num_records);
		}
		PUT(out, "\n");
	}
}

/* The live-out list opens after the last location, before any live-out. */
static void open_live_outs(struct cli_out *out, struct table_print *t)
{
	if (!t->live_outs_open) {
		FIELD(out, "    ", t->live_outs);
		PUT(out, " live-outs: [ ");
	}
	t->live_outs_open = 1;
}

int print_stackmap_llvm(FILE *f, const struct cli_section *sec, uint32_t flags)
{
	struct fl_stackmap_cursor c;
	struct fl_stackmap_event ev;
	struct fl_diag diag;
	struct table_print t = { 0 };
	struct cli_out out;
	int ret;

	/* llvm-readelf prints nothing for a file without stack maps. */
	if (!sec->found)
		return 0;
	cli_out_init(&out, f);
	fl_stackmap_cursor_init(&c, sec->data, sec->size, flags, &diag);
	while ((ret = fl_stackmap_next(&c, &ev)) > 0) {
		switch (ev.type) {
		case FL_SM_TABLE:
			FIELD(&out, "LLVM StackMap Version: ", ev.header.version);
			FIELD(&out, "\nNum Functions: ", ev.header.num_functions);
			PUT(&out, "\n");
			t = (struct table_print){
				.at = FUNCTIONS,
				.num_constants = ev.header.num_constants,
				.num_records = ev.header.num_records,
			};
			break;
		case FL_SM_FUNCTION:
			FIELD(&out, "  Function address: ", ev.function.address);
			FIELD(&out, ", stack size: ", ev.function.stack_size);
			FIELD(&out, ", callsite record count: ", ev.function.record_count);
			PUT(&out, "\n");
			break;
		case FL_SM_CONSTANT:
			enter(&out, &t, CONSTANTS);
			FIELD(&out, "  #", ev.constant.index + 1u);
			FIELD(&out, ": ", ev.constant.value);
			PUT(&out, "\n");
			break;
		case FL_SM_RECORD:
			enter(&out, &t, RECORDS);
			FIELD(&out, "  Record ID: ", ev.record.id);
			FIELD(&out, ", instruction offset: ", ev.record.instruction_offset);
			FIELD(&out, "\n    ", ev.record.num_locations);
			PUT(&out, " locations:\n");
			t.live_outs = ev.record.num_live_outs;
			t.live_outs_open = 0;
			break;
		case FL_SM_LOCATION:
			print_location(&out, &ev);
			break;
		case FL_SM_LIVE_OUT:
			open_live_outs(&out, &t);
			FIELD(&out, "R#", ev.live_out.dwarf_reg);
			FIELD(&out, " (", ev.live_out.size);
			PUT(&out, "-bytes) ");
			break;
		case FL_SM_RECORD_END:
			open_live_outs(&out, &t);
			PUT(&out, "]\n");
			break;
		case FL_SM_TABLE_END:
			enter(&out, &t, RECORDS);
			break;
		}
	}
	cli_out_flush(&out);
	return ret;
}
