// SPDX-License-Identifier: MIT
/*
 * JSON output of faultmap and stackmap (schema: docs/json.md).  Built with
 * json-c, which does the escaping; integers are exact 64-bit values.
 */
#include <json-c/json.h>

#include <faultline/format.h>

#include "print_json.h"

static void add(struct json_object *o, const char *key, struct json_object *v)
{
	json_object_object_add(o, key, v);
}

static struct json_object *u64(uint64_t v)
{
	return json_object_new_uint64(v);
}

static struct json_object *file_object(struct cli_file *f, const struct cli_section *sec)
{
	struct json_object *o = json_object_new_object();

	add(o, "file", json_object_new_string(f->path));
	add(o, "ok", json_object_new_boolean(1));
	add(o, "found", json_object_new_boolean(sec->found));
	add(o, "machine", json_object_new_string(f->arch));
	add(o, "e_machine", u64(f->machine));
	add(o, "big_endian", json_object_new_boolean(!!(f->parse_flags & FL_PARSE_BIG_ENDIAN)));
	if (sec->found)
		add(o, "section_size", u64(sec->size));
	return o;
}

static struct json_object *symbol(struct cli_file *f, const struct cli_section *sec,
				  size_t address_offset, uint64_t address)
{
	const char *name = cli_file_symbol(f, sec, address_offset, address);

	return name ? json_object_new_string(name) : NULL;
}

struct json_object *file_error_json(const char *path, const char *err)
{
	struct json_object *o = json_object_new_object();

	add(o, "file", json_object_new_string(path));
	add(o, "ok", json_object_new_boolean(0));
	add(o, "error", json_object_new_string(err));
	return o;
}

static const char *fault_kind_key(uint32_t kind)
{
	const char *label = fl_fault_kind_label(kind);

	return label ? label : "unknown";
}

struct json_object *faultmap_json(struct cli_file *f, uint32_t flags)
{
	const struct cli_section *sec = &f->faultmap;
	struct json_object *o = file_object(f, sec), *tables = json_object_new_array();
	struct json_object *table = NULL, *functions = NULL, *faults = NULL;
	struct fl_faultmap_cursor c;
	struct fl_faultmap_event ev;
	struct fl_diag diag;

	add(o, "tables", tables);
	if (!sec->found)
		return o;
	fl_faultmap_cursor_init(&c, sec->data, sec->size, flags, &diag);
	while (fl_faultmap_next(&c, &ev) > 0) {
		struct json_object *x = NULL;

		switch (ev.type) {
		case FL_FM_TABLE:
			table = json_object_new_object();
			functions = json_object_new_array();
			add(table, "index", u64(ev.table));
			add(table, "offset", u64(ev.offset));
			add(table, "version", u64(ev.header.version));
			add(table, "num_functions", u64(ev.header.num_functions));
			add(table, "functions", functions);
			json_object_array_add(tables, table);
			break;
		case FL_FM_FUNCTION:
			x = json_object_new_object();
			faults = json_object_new_array();
			add(x, "index", u64(ev.function.index));
			add(x, "address", u64(ev.function.address));
			add(x, "address_offset", u64(ev.function.address_offset));
			add(x, "symbol", symbol(f, sec, ev.function.address_offset,
						 ev.function.address));
			add(x, "num_faulting_pcs", u64(ev.function.num_faulting_pcs));
			add(x, "faults", faults);
			json_object_array_add(functions, x);
			break;
		case FL_FM_FAULT:
			x = json_object_new_object();
			add(x, "kind", json_object_new_string(fault_kind_key(ev.fault.kind)));
			add(x, "kind_name", json_object_new_string(fl_fault_kind_name(ev.fault.kind)));
			add(x, "faulting_pc_offset", u64(ev.fault.faulting_pc_offset));
			add(x, "handler_pc_offset", u64(ev.fault.handler_pc_offset));
			add(x, "faulting_pc", u64(ev.fault.function_address +
						  ev.fault.faulting_pc_offset));
			add(x, "handler_pc", u64(ev.fault.function_address +
						 ev.fault.handler_pc_offset));
			json_object_array_add(faults, x);
			break;
		case FL_FM_TABLE_END:
			break;
		}
	}
	return o;
}

static const char *location_key(uint8_t kind)
{
	switch (kind) {
	case FL_LOC_REGISTER:
		return "register";
	case FL_LOC_DIRECT:
		return "direct";
	case FL_LOC_INDIRECT:
		return "indirect";
	case FL_LOC_CONSTANT:
		return "constant";
	case FL_LOC_CONSTANT_INDEX:
		return "constant_index";
	}
	return "unknown";
}

static struct json_object *location_json(const struct fl_stackmap_event *ev)
{
	struct json_object *x = json_object_new_object();

	add(x, "kind", json_object_new_string(location_key(ev->location.kind)));
	add(x, "size", u64(ev->location.size));
	switch (ev->location.kind) {
	case FL_LOC_REGISTER:
		add(x, "dwarf_reg", u64(ev->location.dwarf_reg));
		break;
	case FL_LOC_DIRECT:
	case FL_LOC_INDIRECT:
		add(x, "dwarf_reg", u64(ev->location.dwarf_reg));
		add(x, "offset", json_object_new_int64(ev->location.offset));
		break;
	case FL_LOC_CONSTANT:
		add(x, "value", json_object_new_int64(ev->location.offset));
		break;
	case FL_LOC_CONSTANT_INDEX:
		add(x, "index", u64((uint32_t)ev->location.offset));
		add(x, "value", u64(ev->location.constant));
		break;
	}
	return x;
}

struct json_object *stackmap_json(struct cli_file *f, uint32_t flags)
{
	const struct cli_section *sec = &f->stackmap;
	struct json_object *o = file_object(f, sec), *tables = json_object_new_array();
	struct json_object *functions = NULL, *constants = NULL, *records = NULL;
	struct json_object *locations = NULL, *live_outs = NULL;
	struct fl_stackmap_cursor c;
	struct fl_stackmap_event ev;
	struct fl_diag diag;
	unsigned version = 0;

	add(o, "tables", tables);
	if (!sec->found)
		return o;
	fl_stackmap_cursor_init(&c, sec->data, sec->size, flags | f->parse_flags, &diag);
	while (fl_stackmap_next(&c, &ev) > 0) {
		struct json_object *x;

		switch (ev.type) {
		case FL_SM_TABLE:
			x = json_object_new_object();
			functions = json_object_new_array();
			constants = json_object_new_array();
			records = json_object_new_array();
			add(x, "index", u64(ev.table));
			add(x, "offset", u64(ev.offset));
			add(x, "version", u64(ev.header.version));
			version = ev.header.version;
			add(x, "functions", functions);
			add(x, "constants", constants);
			add(x, "records", records);
			json_object_array_add(tables, x);
			break;
		case FL_SM_FUNCTION:
			x = json_object_new_object();
			add(x, "index", u64(ev.function.index));
			add(x, "address", u64(ev.function.address));
			add(x, "address_offset", u64(ev.function.address_offset));
			add(x, "symbol", symbol(f, sec, ev.function.address_offset,
						 ev.function.address));
			add(x, "stack_size", u64(ev.function.stack_size));
			add(x, "dynamic_stack", json_object_new_boolean(
				    ev.function.stack_size == FL_STACK_SIZE_DYNAMIC));
			add(x, "record_count", version == 1 ? NULL :
			    u64(ev.function.record_count));
			json_object_array_add(functions, x);
			break;
		case FL_SM_CONSTANT:
			json_object_array_add(constants, u64(ev.constant.value));
			break;
		case FL_SM_RECORD:
			x = json_object_new_object();
			locations = json_object_new_array();
			live_outs = json_object_new_array();
			add(x, "index", u64(ev.record.index));
			add(x, "id", u64(ev.record.id));
			add(x, "function", ev.record.function == FL_NO_FUNCTION ? NULL :
			    u64(ev.record.function));
			add(x, "instruction_offset", u64(ev.record.instruction_offset));
			add(x, "flags", u64(ev.record.flags));
			add(x, "locations", locations);
			add(x, "live_outs", live_outs);
			json_object_array_add(records, x);
			break;
		case FL_SM_LOCATION:
			json_object_array_add(locations, location_json(&ev));
			break;
		case FL_SM_LIVE_OUT:
			x = json_object_new_object();
			add(x, "dwarf_reg", u64(ev.live_out.dwarf_reg));
			add(x, "size", u64(ev.live_out.size));
			json_object_array_add(live_outs, x);
			break;
		case FL_SM_RECORD_END:
		case FL_SM_TABLE_END:
			break;
		}
	}
	return o;
}
