// SPDX-License-Identifier: MIT
/*
 * fl_stackmap_record_at finds every record of a registered JIT stack map
 * (its runtime address, function, frame size, module) and nothing else:
 * not an address between records, not a record once its module is
 * unregistered.  Bad input gets a clear error: a stack map record outside
 * the registered code, records overlapping another module's, a short
 * out->sz; fl_location_read and fl_location_write refuse locations they
 * cannot read or write, and read and write the ones they can.
 */
#include <errno.h>
#include <stdio.h>

#include "common.h"

#define FUNCS 50
#define PER 4

static uint8_t code[FUNCS * 256];

/* A v3 stack map: FUNCS functions 256 bytes apart in code, PER records each. */
static size_t make_map(uint8_t *m, uint64_t base, uint32_t bad_offset)
{
	size_t at = 0;

#define PUT(v, n) do { uint64_t x_ = (v); memcpy(m + at, &x_, n); at += n; } while (0)
	PUT(3, 1); PUT(0, 1); PUT(0, 2);
	PUT(FUNCS, 4); PUT(0, 4); PUT(FUNCS * PER, 4);
	for (int f = 0; f < FUNCS; f++) {
		PUT(base + 256u * f, 8);
		PUT(f == 7 ? UINT64_MAX : 16u * f, 8);
		PUT(PER, 8);
	}
	for (int r = 0; r < FUNCS * PER; r++) {
		PUT(1000 + r, 8);
		PUT(r == 0 && bad_offset ? bad_offset : 8u + 40u * (r % PER), 4);
		PUT(0, 2);
		PUT(1, 2);
		/* one location: Indirect 8 [rsp + 8] */
		PUT(3, 1); PUT(0, 1); PUT(8, 2); PUT(7, 2); PUT(0, 2); PUT(8, 4);
		while (at % 8)
			PUT(0, 1);
		PUT(0, 2); PUT(0, 2);
		while (at % 8)
			PUT(0, 1);
	}
#undef PUT
	return at;
}

static int reg(const uint8_t *map, size_t size, uint64_t start, uint64_t len, struct fl_diag *d)
{
	FL_OPTS(fl_jit_reg, r, .name = "records", .stackmap = map, .stackmap_size = size,
		.code_start = start, .code_size = len);

	return fl_jit_register(&r, d);
}

static void records(void)
{
	static uint8_t map[64 << 10];
	uint64_t base = (uint64_t)(uintptr_t)code;
	struct fl_stackmap_at at = { .sz = sizeof(at) };
	struct fl_diag d = { 0 };
	size_t size = make_map(map, base, 0);
	int id, err;

	id = reg(map, size, base, sizeof(code), &d);
	t_check(id > 0, "fl_jit_register: %d %s", id, d.msg);
	for (int r = 0; r < FUNCS * PER; r++) {
		uint64_t fn = base + 256u * (uint64_t)(r / PER), pc = fn + 8 + 40u * (r % PER);

		err = fl_stackmap_record_at(pc, &at);
		t_check(err == 0, "record %d at 0x%llx: %d", r, (unsigned long long)pc, err);
		t_check(at.record->id == 1000u + (unsigned)r && at.record->pc == pc &&
			at.function == fn && at.module == id && strcmp(at.module_name, "records") == 0,
			"record %d: ID %llu pc 0x%llx function 0x%llx module %d %s", r,
			(unsigned long long)at.record->id, (unsigned long long)at.record->pc,
			(unsigned long long)at.function, at.module, at.module_name);
		t_check(at.stack_size == (r / PER == 7 ? FL_STACK_SIZE_DYNAMIC : 16u * (r / PER)),
			"record %d: stack size %llu", r, (unsigned long long)at.stack_size);
		t_check(fl_stackmap_record_at(pc + 1, &at) == -ENOENT, "0x%llx + 1 is a record",
			(unsigned long long)pc);
	}
	t_check(fl_stackmap_record_at(base + 8, &(struct fl_stackmap_at){ .sz = 4 }) == -EINVAL,
		"a short out->sz is accepted");
	/* The same records again: they overlap. */
	err = reg(map, size, base, sizeof(code), &d);
	t_check(err == -EEXIST && strstr(d.msg, "overlap"), "registered twice: %d %s", err, d.msg);
	t_check(fl_jit_unregister(id) == 0, "fl_jit_unregister");
	t_check(fl_stackmap_record_at(base + 8, &at) == -ENOENT, "a record after unregistration");

	/*
	 * A record right after the code's last byte is the return address of
	 * a call that ends it: accepted.  One byte further is past the code.
	 */
	size = make_map(map, base, sizeof(code));
	id = reg(map, size, base, sizeof(code), &d);
	t_check(id > 0, "a record at the end of the code: %d %s", id, d.msg);
	t_check(fl_stackmap_record_at(base + sizeof(code), &at) == 0 && at.record->id == 1000,
		"the record at the end of the code is not found");
	t_check(fl_jit_unregister(id) == 0, "fl_jit_unregister");
	size = make_map(map, base, sizeof(code) + 1);
	err = reg(map, size, base, sizeof(code), &d);
	t_check(err == -EINVAL && strstr(d.msg, "record 0") && strstr(d.msg, "outside"),
		"a record outside the code: %d %s", err, d.msg);
	/* Truncated. */
	err = reg(map, 40, base, sizeof(code), &d);
	t_check(err == -EINVAL && d.msg[0], "a truncated stack map: %d %s", err, d.msg);
	/* Neither section. */
	err = reg(NULL, 0, base, sizeof(code), &d);
	t_check(err == -EINVAL && strstr(d.msg, "no fault map and no stack map"),
		"no section: %d %s", err, d.msg);
}

static void locations(void)
{
	uint64_t rsp_value, rbx = 0x1122334455667788ull, slot[4] = { 0, 0xdeadbeefcafef00dull };
	uint64_t xmm[2] = { 0x4004000000000000ull, 7 }, v;
	struct fl_frame_regs regs = { 0 };
	struct fl_stackmap_location l;

	rsp_value = (uint64_t)(uintptr_t)slot;
	regs.at[T_DWARF_SP] = &rsp_value;
	regs.at[T_DWARF_CALLEE0] = &rbx;
	regs.at[T_DWARF_VEC0 + 1] = xmm;

	l = (struct fl_stackmap_location){ .kind = FL_LOC_INDIRECT, .size = 8,
					   .dwarf_reg = T_DWARF_SP, .offset = 8 };
	t_check(fl_location_read(&regs, &l, &v) == 0 && v == slot[1], "Indirect 8");
	l.size = 2;
	t_check(fl_location_read(&regs, &l, &v) == 0 && v == 0xf00d, "Indirect 2: 0x%llx",
		(unsigned long long)v);
	t_check(fl_location_write(&regs, &l, 0x1234) == 0 && slot[1] == 0xdeadbeefcafe1234ull,
		"Indirect 2 written: 0x%llx", (unsigned long long)slot[1]);
	l.size = 3;
	t_check(fl_location_read(&regs, &l, &v) == -EINVAL, "Indirect of 3 bytes");
	l = (struct fl_stackmap_location){ .kind = FL_LOC_DIRECT, .size = 8,
					   .dwarf_reg = T_DWARF_SP, .offset = 16 };
	t_check(fl_location_read(&regs, &l, &v) == 0 && v == rsp_value + 16, "Direct");
	t_check(fl_location_write(&regs, &l, 1) == -EINVAL, "a Direct location written");
	l = (struct fl_stackmap_location){ .kind = FL_LOC_REGISTER, .size = 4,
					   .dwarf_reg = T_DWARF_CALLEE0 };
	t_check(fl_location_read(&regs, &l, &v) == 0 && v == 0x55667788, "Register 4");
	t_check(fl_location_write(&regs, &l, 0xaabbccdd) == 0 && rbx == 0x11223344aabbccddull,
		"Register 4 written");
	l.dwarf_reg = T_DWARF_CALLEE1;
	t_check(fl_location_read(&regs, &l, &v) == -ENOENT, "an unknown register read");
	l.dwarf_reg = 99;
	t_check(fl_location_read(&regs, &l, &v) == -EINVAL, "register 99 read");
	l = (struct fl_stackmap_location){ .kind = FL_LOC_REGISTER, .size = 16,
					   .dwarf_reg = T_DWARF_VEC0 + 1 };
	t_check(fl_location_read(&regs, &l, &v) == 0 && v == xmm[0], "a vector register");
	l = (struct fl_stackmap_location){ .kind = FL_LOC_CONSTANT, .size = 8,
					   .constant = (uint64_t)-5 };
	t_check(fl_location_read(&regs, &l, &v) == 0 && v == (uint64_t)-5, "Constant");
	t_check(fl_location_write(&regs, &l, 1) == -EINVAL, "a Constant written");
	l.kind = 9;
	t_check(fl_location_read(&regs, &l, &v) == -EINVAL, "kind 9 read");
}

int main(void)
{
	t_start("record_at_and_locations_refuse_bad_input");
	records();
	locations();
	printf("PASS %s\n", t_name);
	return 0;
}
