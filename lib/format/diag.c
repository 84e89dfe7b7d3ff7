// SPDX-License-Identifier: MIT
/* Diagnostics and names shared by the fault map and stack map parsers. */
#include <stdarg.h>

#include "core/fmt.h"
#include "format/diag.h"

int fl_diag_say(struct fl_diag *diag, int err, const char *fmt, ...)
{
	va_list ap;

	if (!diag)
		return err;
	diag->err = err;
	va_start(ap, fmt);
	fl_vfmt(diag->msg, sizeof(diag->msg), fmt, ap);
	va_end(ap);
	return err;
}

int fl_diag_set(struct fl_diag *diag, int err, const char *section,
		uint32_t table, const char *fmt, ...)
{
	va_list ap;
	size_t n;

	if (!diag)
		return err;
	diag->err = err;
	n = fl_fmt(diag->msg, sizeof(diag->msg), "%s: table %u: ", section, table);
	va_start(ap, fmt);
	fl_vfmt(diag->msg + n, sizeof(diag->msg) - n, fmt, ap);
	va_end(ap);
	return err;
}

const char *fl_fault_kind_name(uint32_t kind)
{
	switch (kind) {
	case FL_FAULT_LOAD:
		return "FaultingLoad";
	case FL_FAULT_LOAD_STORE:
		return "FaultingLoadStore";
	case FL_FAULT_STORE:
		return "FaultingStore";
	}
	return NULL;
}

const char *fl_fault_kind_label(uint32_t kind)
{
	switch (kind) {
	case FL_FAULT_LOAD:
		return "load";
	case FL_FAULT_LOAD_STORE:
		return "load-store";
	case FL_FAULT_STORE:
		return "store";
	}
	return NULL;
}

const char *fl_location_kind_name(uint32_t kind)
{
	switch (kind) {
	case FL_LOC_REGISTER:
		return "Register";
	case FL_LOC_DIRECT:
		return "Direct";
	case FL_LOC_INDIRECT:
		return "Indirect";
	case FL_LOC_CONSTANT:
		return "Constant";
	case FL_LOC_CONSTANT_INDEX:
		return "ConstantIndex";
	}
	return NULL;
}
