// SPDX-License-Identifier: MIT
/*
 * JIT code registered with a stack map and no fault map (fl_jit_register
 * accepts that: code whose only need is deoptimization, or patching): its
 * patch points and stack map records are found as those of a registration
 * with both.
 *   - patch point 801 (16 bytes of nops) is read inside the JIT code and
 *     rewritten: jit_point returns the value written; reset restores the
 *     compiled nops;
 *   - stack map record 802, its shadow declared, is invalidated: the call
 *     to the target is at the record's address, the return address of
 *     jit_record's call of pt_note;
 *   - once the module is unregistered, both are unknown (-ENOENT).
 */
#include <faultline/dispatch.h>

#include "common.h"
#include "../jit/mcjit.h"

void pt_note(void);
void pt_target(void);

static uintptr_t noted;

__attribute__((noinline)) void pt_note(void)
{
	noted = (uintptr_t)__builtin_return_address(0);
}

/* The invalidation's target: never called (the test runs no invalidated frame). */
void pt_target(void)
{
	abort();
}

/* %llu: pt_note's address (large code model: an absolute call). */
static const char ir_fmt[] =
	"target datalayout = \"e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-f80:128-n8:16:32:64-S128\"\n"
	"target triple = \"x86_64-unknown-linux-gnu\"\n"
	"declare i64 @llvm.experimental.patchpoint.i64(i64, i32, i8*, i32, ...)\n"
	"declare void @llvm.experimental.stackmap(i64, i32, ...)\n"
	"define i64 @jit_point() {\n"
	"  %%r = call i64 (i64, i32, i8*, i32, ...) @llvm.experimental.patchpoint.i64(i64 801, i32 16,"
	" i8* null, i32 0)\n"
	"  ret i64 %%r\n"
	"}\n"
	"define i64 @jit_record(i64 %%a) {\n"
	"  call void inttoptr (i64 %llu to void ()*)()\n"
	"  call void (i64, i32, ...) @llvm.experimental.stackmap(i64 802, i32 16, i64 %%a)\n"
	"  ret i64 %%a\n"
	"}\n";

int main(int argc, char **argv)
{
	static char ir[sizeof(ir_fmt) + 32];
	struct jit_module m = { 0 };
	struct fl_diag d = { 0 };
	struct fl_point pt, compiled;
	int64_t (*jit_point)(void), (*jit_record)(int64_t);
	uint8_t mov[5], call[T_CALL_R11_LEN];
	int32_t rel;
	int id, err;

	(void)argc;
	t_start(argv);
	snprintf(ir, sizeof(ir), ir_fmt, (unsigned long long)(uintptr_t)pt_note);
	jit_setup();
	if (jit_compile(&m, ir, "stackmap-only") != 0)
		t_fail("MCJIT: %s", m.err);
	t_check(m.stackmap && !m.faultmap, "MCJIT loaded a fault map (%p) or no stack map (%p)",
		m.faultmap, m.stackmap);
	jit_point = (int64_t (*)(void))(uintptr_t)jit_function(&m, "jit_point");
	jit_record = (int64_t (*)(int64_t))(uintptr_t)jit_function(&m, "jit_record");
	t_check(jit_point && jit_record, "MCJIT: a function is missing");

	t_init();
	t_enable();
	{
		FL_OPTS(fl_jit_reg, r, .name = "stackmap-only", .stackmap = m.stackmap,
			.stackmap_size = m.stackmap_size, .code_start = m.code_start,
			.code_size = m.code_size);

		id = fl_jit_register(&r, &d);
	}
	t_check(id > 0, "fl_jit_register: %d %s", id, d.msg);

	t_read_point(801, NULL, &compiled);
	printf("  patch point 801 at 0x%llx, %u bytes (code 0x%llx, %llu bytes)\n",
	       (unsigned long long)compiled.pc, compiled.size, (unsigned long long)m.code_start,
	       (unsigned long long)m.code_size);
	t_check(compiled.pc >= m.code_start && compiled.pc + 16 <= m.code_start + m.code_size &&
		compiled.size == 16, "patch point 801 is not 16 bytes inside the JIT code");
	t_mov_eax(mov, 801);
	err = fl_patchpoint_write(801, NULL, mov, sizeof(mov), NULL, &d);
	t_check(err == 0, "fl_patchpoint_write(801): %d %s", err, d.msg);
	t_check(jit_point() == 801, "jit_point does not return the 801 written");
	err = fl_patchpoint_reset(801, NULL, &d);
	t_check(err == 0, "fl_patchpoint_reset(801): %d %s", err, d.msg);
	t_read_point(801, NULL, &pt);
	t_check(memcmp(pt.now, compiled.compiled, 16) == 0 && !(pt.flags & FL_POINT_CHANGED),
		"reset 801 did not restore the compiled nops");

	t_check(jit_record(7) == 7, "jit_record(7) did not return 7");
	t_read_shadow(802, NULL, &pt);
	t_check(pt.pc == noted, "stack map record 802 at 0x%llx, not 0x%llx after jit_record's call",
		(unsigned long long)pt.pc, (unsigned long long)noted);
	err = fl_stackmap_declare(802, NULL, 16, &d);
	t_check(err == 0, "fl_stackmap_declare(802): %d %s", err, d.msg);
	err = fl_stackmap_invalidate(802, NULL, (const void *)pt_target, &d);
	t_check(err == 0, "fl_stackmap_invalidate(802): %d %s", err, d.msg);
	/* A callq rel32 when the target is within reach, else movabsq; callq *%r11. */
	memcpy(&rel, (const void *)(noted + 1), sizeof(rel));
	t_call_r11(call, (const void *)pt_target);
	t_check((*(const uint8_t *)noted == 0xe8 && noted + 5 + (intptr_t)rel == (uintptr_t)pt_target) ||
		memcmp((const void *)noted, call, sizeof(call)) == 0,
		"no call of pt_target at record 802's address 0x%llx", (unsigned long long)noted);

	t_check(fl_jit_unregister(id) == 0, "fl_jit_unregister");
	memset(&pt, 0, sizeof(pt));
	pt.sz = sizeof(pt);
	err = fl_patchpoint_read(801, NULL, &pt, &d);
	t_check(err == -ENOENT, "read 801 after fl_jit_unregister: %d, not -ENOENT", err);
	err = fl_stackmap_read(802, NULL, &pt, &d);
	t_check(err == -ENOENT, "read 802 after fl_jit_unregister: %d, not -ENOENT", err);
	jit_free(&m);
	printf("PASS %s\n", t_name);
	return 0;
}
