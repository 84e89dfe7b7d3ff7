// SPDX-License-Identifier: MIT
/*
 * Text output that is byte for byte what LLVM 14 prints:
 *   faultmap: llvm-objdump-14 --fault-map-section, from "FaultMap table:" on
 *   stackmap: llvm-readelf-14 --stackmap
 * LLVM prints only the first table of a section; these print every table,
 * each in the same form as LLVM's first.  Input is validated before it gets
 * here, so the cursors cannot fail; they are still checked.
 */
#include <inttypes.h>
#include <stdio.h>

#include <faultline/format.h>

#include "print_llvm.h"

int print_faultmap_llvm(FILE *out, const struct cli_section *sec, uint32_t flags)
{
	struct fl_faultmap_cursor c;
	struct fl_faultmap_event ev;
	struct fl_diag diag;
	int ret;

	if (!sec->found) {
		fputs("FaultMap table:\n<not found>\n", out);
		return 0;
	}
	fl_faultmap_cursor_init(&c, sec->data, sec->size, flags, &diag);
	while ((ret = fl_faultmap_next(&c, &ev)) > 0) {
		switch (ev.type) {
		case FL_FM_TABLE:
			/* LLVM: format_hex(Version, 2) */
			fprintf(out, "FaultMap table:\nVersion: 0x%x\nNumFunctions: %" PRIu32 "\n",
				ev.header.version, ev.header.num_functions);
			break;
		case FL_FM_FUNCTION:
			/* LLVM: format_hex(FunctionAddress, 8): "0x" and 6+ digits */
			fprintf(out, "FunctionAddress: 0x%06" PRIx64 ", NumFaultingPCs: %" PRIu32 "\n",
				ev.function.address, ev.function.num_faulting_pcs);
			break;
		case FL_FM_FAULT:
			fprintf(out, "Fault kind: %s, faulting PC offset: %" PRIu32
				", handling PC offset: %" PRIu32 "\n",
				fl_fault_kind_name(ev.fault.kind),
				ev.fault.faulting_pc_offset, ev.fault.handler_pc_offset);
			break;
		case FL_FM_TABLE_END:
			break;
		}
	}
	return ret;
}

static void print_location(FILE *out, const struct fl_stackmap_event *ev)
{
	fprintf(out, "      #%u: ", ev->location.index + 1);
	switch (ev->location.kind) {
	case FL_LOC_REGISTER:
		fprintf(out, "Register R#%u", ev->location.dwarf_reg);
		break;
	case FL_LOC_DIRECT:
		fprintf(out, "Direct R#%u + %" PRId32, ev->location.dwarf_reg,
			ev->location.offset);
		break;
	case FL_LOC_INDIRECT:
		fprintf(out, "Indirect [R#%u + %" PRId32 "]", ev->location.dwarf_reg,
			ev->location.offset);
		break;
	case FL_LOC_CONSTANT:
		/* LLVM prints the small constant as the uint32_t it reads. */
		fprintf(out, "Constant %" PRIu32, (uint32_t)ev->location.offset);
		break;
	case FL_LOC_CONSTANT_INDEX:
		fprintf(out, "ConstantIndex #%" PRIu32 " (%" PRIu64 ")",
			(uint32_t)ev->location.offset, ev->location.constant);
		break;
	}
	fprintf(out, ", size: %u\n", ev->location.size);
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

static void enter(FILE *out, struct table_print *t, enum part part)
{
	while (t->at < part) {
		t->at++;
		if (t->at == CONSTANTS)
			fprintf(out, "Num Constants: %" PRIu32 "\n", t->num_constants);
		else
			fprintf(out, "Num Records: %" PRIu32 "\n", t->num_records);
	}
}

/* The live-out list opens after the last location, before any live-out. */
static void open_live_outs(FILE *out, struct table_print *t)
{
	if (!t->live_outs_open)
		fprintf(out, "    %u live-outs: [ ", t->live_outs);
	t->live_outs_open = 1;
}

int print_stackmap_llvm(FILE *out, const struct cli_section *sec, uint32_t flags)
{
	struct fl_stackmap_cursor c;
	struct fl_stackmap_event ev;
	struct fl_diag diag;
	struct table_print t = { 0 };
	int ret;

	/* llvm-readelf prints nothing for a file without stack maps. */
	if (!sec->found)
		return 0;
	fl_stackmap_cursor_init(&c, sec->data, sec->size, flags, &diag);
	while ((ret = fl_stackmap_next(&c, &ev)) > 0) {
		switch (ev.type) {
		case FL_SM_TABLE:
			fprintf(out, "LLVM StackMap Version: %u\nNum Functions: %" PRIu32 "\n",
				ev.header.version, ev.header.num_functions);
			t = (struct table_print){
				.at = FUNCTIONS,
				.num_constants = ev.header.num_constants,
				.num_records = ev.header.num_records,
			};
			break;
		case FL_SM_FUNCTION:
			fprintf(out, "  Function address: %" PRIu64 ", stack size: %" PRIu64
				", callsite record count: %" PRIu64 "\n",
				ev.function.address, ev.function.stack_size,
				ev.function.record_count);
			break;
		case FL_SM_CONSTANT:
			enter(out, &t, CONSTANTS);
			fprintf(out, "  #%" PRIu32 ": %" PRIu64 "\n", ev.constant.index + 1,
				ev.constant.value);
			break;
		case FL_SM_RECORD:
			enter(out, &t, RECORDS);
			fprintf(out, "  Record ID: %" PRIu64 ", instruction offset: %" PRIu32 "\n"
				"    %u locations:\n",
				ev.record.id, ev.record.instruction_offset,
				ev.record.num_locations);
			t.live_outs = ev.record.num_live_outs;
			t.live_outs_open = 0;
			break;
		case FL_SM_LOCATION:
			print_location(out, &ev);
			break;
		case FL_SM_LIVE_OUT:
			open_live_outs(out, &t);
			fprintf(out, "R#%u (%u-bytes) ", ev.live_out.dwarf_reg, ev.live_out.size);
			break;
		case FL_SM_RECORD_END:
			open_live_outs(out, &t);
			fputs("]\n", out);
			break;
		case FL_SM_TABLE_END:
			enter(out, &t, RECORDS);
			break;
		}
	}
	return ret;
}
