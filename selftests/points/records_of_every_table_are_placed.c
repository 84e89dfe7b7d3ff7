// SPDX-License-Identifier: MIT
/*
 * A program linked from several objects has several stack map tables in
 * its .llvm_stackmaps section (several_tables_first.ll, then
 * several_tables_second.ll), and a record names its function within its
 * own table.  The records of the second table must be placed at their own
 * function's addresses, not at the first table's functions of the same
 * index:
 *   - patch point 72 (the second table's function 0) is at the return
 *     address of tbl_second's second call of tbl_opaque, and rewritten
 *     there: tbl_second returns the value written;
 *   - stack map record 73 (its function 1) is at the return address of
 *     tbl_second_sm's call, and fl_stackmap_invalidate writes its call
 *     there (tbl_second_sm is not called again);
 *   - patch points 70 and 71 (the first table's) are rewritten in their
 *     own functions, and none of the writes reaches another function.
 */
#include "common.h"

int64_t tbl_first_a(void), tbl_first_b(void), tbl_second(int64_t), tbl_second_sm(int64_t);
void tbl_opaque(int64_t *slot);
void tbl_target(void);

/* The return addresses of the last two calls of tbl_opaque. */
static uintptr_t returns[2];

__attribute__((noinline)) void tbl_opaque(int64_t *slot)
{
	returns[0] = returns[1];
	returns[1] = (uintptr_t)__builtin_return_address(0);
	__asm__ volatile("" : : "r"(slot) : "memory");
}

/* The invalidation's target: never called (the test runs no invalidated frame). */
void tbl_target(void)
{
	abort();
}

/* Writes mov $imm, %eax into patch point id. */
static void write_mov(uint64_t id, uint32_t imm)
{
	struct fl_diag d = { 0 };
	uint8_t mov[5];
	int err;

	t_mov_eax(mov, imm);
	err = fl_patchpoint_write(id, NULL, mov, sizeof(mov), NULL, &d);
	t_check(err == 0, "fl_patchpoint_write(%llu): %d %s", (unsigned long long)id, err, d.msg);
}

/* Reads record id with read and checks it is at want, the return address of the call before it. */
static void placed(int (*read)(uint64_t, const void *, struct fl_point *, struct fl_diag *),
		   uint64_t id, uintptr_t want, const char *what, struct fl_point *pt)
{
	t_read(read, what, id, NULL, pt);
	printf("  %s at 0x%llx (the call before it returns to 0x%llx)\n", what,
	       (unsigned long long)pt->pc, (unsigned long long)want);
	t_check(pt->pc == want, "%s placed at 0x%llx, not 0x%llx after its call", what,
		(unsigned long long)pt->pc, (unsigned long long)want);
}

int main(int argc, char **argv)
{
	struct fl_point pt;
	struct fl_diag d = { 0 };
	uintptr_t at72, at73;
	int64_t v;
	int32_t rel;
	int err;

	(void)argc;
	t_start(argv);
	t_init_discovering();
	t_enable();

	/* Where the second table's records are, by the calls right before them. */
	tbl_second_sm(5);
	at73 = returns[1];
	tbl_second(6);	/* its patch point's nops: what it returns means nothing yet */
	at72 = returns[1];
	t_check(returns[0] != at72, "tbl_second did not call tbl_opaque twice");

	placed(fl_patchpoint_read, 72, at72, "patch point 72 (second table, function 0)", &pt);
	t_check(pt.size == 16, "patch point 72: %u bytes, compiled 16", pt.size);
	placed(fl_stackmap_read, 73, at73, "stack map record 73 (second table, function 1)", &pt);

	write_mov(70, 170);
	write_mov(71, 171);
	write_mov(72, 172);
	t_check((v = tbl_first_a()) == 170, "tbl_first_a returned %lld, not 170", (long long)v);
	t_check((v = tbl_first_b()) == 171, "tbl_first_b returned %lld, not 171", (long long)v);
	t_check((v = tbl_second(1)) == 172, "tbl_second returned %lld, not 172", (long long)v);

	/* Its shadow holds the code after the call, not nops: declared. */
	err = fl_stackmap_declare(73, NULL, 16, &d);
	t_check(err == 0, "fl_stackmap_declare(73): %d %s", err, d.msg);
	err = fl_stackmap_invalidate(73, NULL, (const void *)tbl_target, &d);
	t_check(err == 0, "fl_stackmap_invalidate(73): %d %s", err, d.msg);
	memcpy(&rel, (const void *)(at73 + 1), sizeof(rel));
	t_check(*(const uint8_t *)at73 == 0xe8 && at73 + 5 + (intptr_t)rel == (uintptr_t)tbl_target,
		"no callq tbl_target at record 73's address 0x%llx", (unsigned long long)at73);
	/* Nothing else moved: the first table's functions still return their values. */
	t_check(tbl_first_a() == 170 && tbl_first_b() == 171,
		"a write to the second table's records changed the first table's functions");
	printf("PASS %s\n", t_name);
	return 0;
}
