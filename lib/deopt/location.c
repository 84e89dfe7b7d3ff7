/* SPDX-License-Identifier: MIT */
/*
 * Reading and writing a stack map location in a frame (deopt.h): the
 * deoptimization entry decodes its deopt values with it, a collector
 * updates its roots with it.  Async-signal-safe: plain loads and stores.
 */
#include <errno.h>
#include <string.h>

#include <faultline/deopt.h>

#include "deopt_arch.h"

/* The address of the register's storage in regs, or NULL; -EINVAL: no such register. */
static int reg_at(const struct fl_frame_regs *regs, uint16_t reg, void **at)
{
	if (reg >= FL_DWARF_REGS)
		return -EINVAL;
	*at = regs->at[reg];
	return *at ? 0 : -ENOENT;
}

/*
 * The bytes of a Register or Indirect location that are its value: its
 * size, but for a vector register (llc-14 gives a float or double kept in
 * one the register's size, 16), whose low 8 bytes hold it.  0: a size
 * faultline does not read.
 */
static size_t value_size(const struct fl_stackmap_location *loc)
{
	if (loc->size == 1 || loc->size == 2 || loc->size == 4 || loc->size == 8)
		return loc->size;
	if (loc->kind == FL_LOC_REGISTER && loc->size == 16 && fl_arch_reg_is_vector(loc->dwarf_reg))
		return 8;
	return 0;
}

/*
 * Where a Register or Indirect location's bytes are.  Little-endian: the
 * low bytes of a register are its first bytes in memory.
 */
static int bytes_at(const struct fl_frame_regs *regs, const struct fl_stackmap_location *loc,
		    void **p)
{
	uint64_t base;
	void *at;
	int err;

	if (!value_size(loc))
		return -EINVAL;
	err = reg_at(regs, loc->dwarf_reg, &at);
	if (err)
		return err;
	if (loc->kind == FL_LOC_REGISTER) {
		*p = at;
		return 0;
	}
	memcpy(&base, at, sizeof(base));
	*p = (void *)(uintptr_t)(base + (uint64_t)(int64_t)loc->offset);
	return 0;
}

int fl_location_read(const struct fl_frame_regs *regs, const struct fl_stackmap_location *loc,
		     uint64_t *value)
{
	uint64_t v = 0;
	void *p;
	int err;

	switch (loc->kind) {
	case FL_LOC_CONSTANT:
	case FL_LOC_CONSTANT_INDEX:
		*value = loc->constant;
		return 0;
	case FL_LOC_DIRECT:
		err = reg_at(regs, loc->dwarf_reg, &p);
		if (err)
			return err;
		memcpy(&v, p, sizeof(v));
		*value = v + (uint64_t)(int64_t)loc->offset;
		return 0;
	case FL_LOC_REGISTER:
	case FL_LOC_INDIRECT:
		err = bytes_at(regs, loc, &p);
		if (err)
			return err;
		memcpy(&v, p, value_size(loc));
		*value = v;
		return 0;
	default:
		return -EINVAL;
	}
}

int fl_location_write(const struct fl_frame_regs *regs, const struct fl_stackmap_location *loc,
		      uint64_t value)
{
	void *p;
	int err;

	if (loc->kind != FL_LOC_REGISTER && loc->kind != FL_LOC_INDIRECT)
		return -EINVAL;
	err = bytes_at(regs, loc, &p);
	if (err)
		return err;
	memcpy(p, &value, value_size(loc));
	return 0;
}
