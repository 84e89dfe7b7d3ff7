// SPDX-License-Identifier: MIT
/*
 * Deoptimization from MCJIT code: IR compiled at run time by MCJIT
 * (selftests/jit/mcjit.c, OptLevel 2, large code model), registered with
 * fl_jit_register with its stack map and its .eh_frame, deoptimizes as the
 * same IR compiled by llc-14 and linked does.  The deoptimized frame is
 * unwound by libunwind from the .eh_frame given to fl_jit_register (MCJIT
 * registers it with libgcc only, which libunwind does not see).
 *   1. returns.ll: every return type (i32, i64, pointer, float, double,
 *      void), as returns_every_type checks them, the state naming the JIT
 *      module;
 *   2. values.ll: 20 deopt values of several kinds (Register, Direct,
 *      Indirect, Constant, ConstantIndex) decoded as passed, and @keeps's
 *      callee-saved registers restored after @values deoptimized;
 *   3. code unregistered, then other code registered at the same address:
 *      two versions of @stale, the second with a frame 512 bytes larger,
 *      padded so that their deoptimizations return to the same address.
 *      Once the first is unregistered libunwind finds no unwind
 *      information there; the second, compiled into the same memory,
 *      deoptimizes with its own frame (nothing of the first's unwinding,
 *      cached by libunwind by address, is used).
 *   deopt_from_mcjit_code RETURNS.LL VALUES.LL
 */
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <stdio.h>
#include <stdlib.h>

#include "values.h"
#include "../jit/mcjit.h"

static const char *expect_module;

/* The state names the JIT module, then returns.ll's handler. */
static void ret_handler(const struct fl_deopt_state *st, struct fl_deopt_return *ret, void *ctx)
{
	char why[256];

	(void)ctx;
	t_check(strcmp(st->module_name, expect_module) == 0, "deoptimized in module \"%s\", not %s",
		st->module_name, expect_module);
	if (!ret_handle(st, ret, why, sizeof(why)))
		t_fail("handler: %s", why);
}

/* Reads a whole file (IR). */
static char *slurp(const char *path)
{
	char *buf = jit_read_file(path);

	t_check(buf != NULL, "%s: cannot read", path);
	return buf;
}

/* Compiles ir into m (zeroed, m->place set or not) and registers it. */
static int compile_and_register(struct jit_module *m, const char *ir, const char *name)
{
	struct fl_jit_reg r;
	struct fl_diag d = { 0 };
	int id;

	if (jit_compile(m, ir, name) != 0)
		t_fail("MCJIT %s: %s", name, m->err);
	t_check(m->stackmap && m->eh_frame, "MCJIT %s: no stack map (%p) or .eh_frame (%p)", name,
		m->stackmap, m->eh_frame);
	jit_reg(m, name, &r);
	id = fl_jit_register(&r, &d);
	t_check(id > 0, "fl_jit_register %s: %d %s", name, id, d.msg);
	return id;
}

static void *fn(struct jit_module *m, const char *name)
{
	void *p = (void *)(uintptr_t)jit_function(m, name);

	t_check(p != NULL, "MCJIT: no function %s", name);
	return p;
}

static void returns(const char *ir)
{
	struct jit_module m = { 0 };
	struct ret_fns f;
	int id;

	expect_module = "returns";
	id = compile_and_register(&m, ir, "returns");
	f = (struct ret_fns){ fn(&m, "ret_i32"), fn(&m, "ret_i64"), fn(&m, "ret_ptr"),
			      fn(&m, "ret_f32"), fn(&m, "ret_f64"), fn(&m, "ret_void") };
	t_check(fl_deopt_set_handler(ret_handler, NULL) == 0, "fl_deopt_set_handler");
	ret_check_all(&f, "mcjit");
	t_check(fl_jit_unregister(id) == 0, "fl_jit_unregister returns");
	jit_free(&m);
}

static void values(const char *ir)
{
	struct jit_module m = { 0 };
	int id, kinds = 0;

	id = compile_and_register(&m, ir, "values");
	t_check(fl_deopt_set_handler(values_handler, NULL) == 0, "fl_deopt_set_handler");
	values_run("mcjit", (values_fn)fn(&m, "values"), (keeps_fn)fn(&m, "keeps"));
	printf("  values.ll by MCJIT, location kinds seen:");
	for (int kind = 1; kind <= 5; kind++) {
		bool any = false;

		for (int s = 0; s < 5; s++)
			any |= seen[kind][s];
		if (any)
			printf(" %s", values_kinds[kind]);
		kinds += any;
	}
	printf("\n");
	t_check(kinds >= 4, "only %d location kinds seen", kinds);
	t_check(fl_jit_unregister(id) == 0, "fl_jit_unregister values");
	jit_free(&m);
}

/*
 * @stale, version 1 (a frame of 8 bytes) or 2 (an array of 64 i64 in its
 * frame, given to @opaque), with pad bytes of nops before the call of
 * __llvm_deoptimize.  Its deoptimization's first argument is the version.
 */
static char *stale_ir(int version, unsigned pad)
{
	static const char fmt[] =
		"target triple = \"x86_64-unknown-linux-gnu\"\n"
		"declare i64 @llvm.experimental.deoptimize.i64(...)\n"
		"declare void @opaque(i64*)\n"
		"define i64 @stale(i64 %%x, i1 %%go) {\n"
		"entry:\n"
		"%s"
		"  br i1 %%go, label %%deopt, label %%fast\n"
		"deopt:\n"
		"  call void asm sideeffect \".skip %u, 0x90\", \"\"()\n"
		"  %%r = call i64 (...) @llvm.experimental.deoptimize.i64(i32 %d) [ \"deopt\"(i64 %%x) ]\n"
		"  ret i64 %%r\n"
		"fast:\n"
		"  ret i64 %%x\n"
		"}\n";
	static const char big_frame[] =
		"  %buf = alloca [64 x i64]\n"
		"  %p = getelementptr [64 x i64], [64 x i64]* %buf, i64 0, i64 0\n"
		"  store i64 %x, i64* %p\n"
		"  call void @opaque(i64* %p)\n";
	char *ir = malloc(sizeof(fmt) + sizeof(big_frame) + 32);

	t_check(ir != NULL, "malloc");
	sprintf(ir, fmt, version == 2 ? big_frame : "", pad, version);
	return ir;
}

/* Where @stale's deoptimization returns to, from the start of its code. */
static uint64_t stale_site(const struct jit_module *m)
{
	struct fl_stackmap *map = NULL;
	uint64_t pc;

	t_check(fl_stackmap_parse(m->stackmap, m->stackmap_size, 0, &map, NULL) == 0 &&
		fl_stackmap_count(map) == 1, "@stale's stack map");
	pc = fl_stackmap_record(map, 0)->pc;
	fl_stackmap_free(map);
	return pc - m->code_start;
}

/* The site of @stale (version, pad) compiled alone, wherever. */
static uint64_t stale_measure(int version, unsigned pad)
{
	struct jit_module m = { 0 };
	char *ir = stale_ir(version, pad);
	uint64_t at;

	if (jit_compile(&m, ir, "stale-measure") != 0)
		t_fail("MCJIT stale-measure: %s", m.err);
	at = stale_site(&m);
	jit_free(&m);
	free(ir);
	return at;
}

static int64_t stale_expected(int version, int64_t x)
{
	return version == 1 ? x * 11 + 1 : x * 13 - 2;
}

static void stale_handler(const struct fl_deopt_state *st, struct fl_deopt_return *ret, void *ctx)
{
	int64_t version = (int64_t)st->int_args[0];

	(void)ctx;
	t_check(st->num_values == 1 && (version == 1 || version == 2),
		"@stale: %u deopt values, version %lld", st->num_values, (long long)version);
	ret->rax = (uint64_t)stale_expected((int)version, (int64_t)st->values[0].value);
}

static void stale_deopts(int64_t (*stale)(int64_t, bool), int version)
{
	for (int64_t x = -5; x < 200; x += 3) {
		int64_t r = stale(x, true);

		t_check(r == stale_expected(version, x), "@stale version %d (%lld): %lld, not %lld",
			version, (long long)x, (long long)r, (long long)stale_expected(version, x));
		t_check(stale(x, false) == x, "@stale version %d: fast path", version);
	}
}

static void same_address(void)
{
	unsigned pad1 = 0, pad2 = 0;
	uint64_t at1, at2, code1;
	struct jit_module m1 = { 0 }, m2 = { 0 };
	unw_proc_info_t pi;
	char *ir1, *ir2;
	int id, err;

	/* Pad the earlier deoptimization until both are at the same offset. */
	for (int tries = 0;; tries++) {
		at1 = stale_measure(1, pad1);
		at2 = stale_measure(2, pad2);
		if (at1 == at2)
			break;
		t_check(tries < 8, "@stale: deoptimizations at +0x%llx and +0x%llx after padding",
			(unsigned long long)at1, (unsigned long long)at2);
		if (at1 < at2)
			pad1 += (unsigned)(at2 - at1);
		else
			pad2 += (unsigned)(at1 - at2);
	}
	t_check(fl_deopt_set_handler(stale_handler, NULL) == 0, "fl_deopt_set_handler");

	ir1 = stale_ir(1, pad1);
	id = compile_and_register(&m1, ir1, "stale-1");
	t_check(stale_site(&m1) == at1, "@stale version 1 moved");
	stale_deopts((int64_t (*)(int64_t, bool))fn(&m1, "stale"), 1);
	t_check(fl_jit_unregister(id) == 0, "fl_jit_unregister stale-1");
	/* Looked up as libunwind looks up a return address: the call before it. */
	err = unw_get_proc_info_by_ip(unw_local_addr_space, m1.code_start + at1 - 1, &pi, NULL);
	printf("  @stale version 1 unregistered: libunwind at +0x%llx: %d\n",
	       (unsigned long long)at1, err);
	t_check(err < 0, "libunwind still finds unwind information at 0x%llx (%d, [0x%llx, 0x%llx)) "
		"after fl_jit_unregister", (unsigned long long)(m1.code_start + at1 - 1), err,
		(unsigned long long)pi.start_ip, (unsigned long long)pi.end_ip);

	code1 = m1.code_start;
	m2.place = m1.mem;
	jit_free(&m1);
	ir2 = stale_ir(2, pad2);
	id = compile_and_register(&m2, ir2, "stale-2");
	t_check(m2.code_start + stale_site(&m2) == code1 + at1,
		"@stale version 2 deoptimizes at 0x%llx + 0x%llx, version 1 at 0x%llx + 0x%llx",
		(unsigned long long)m2.code_start, (unsigned long long)stale_site(&m2),
		(unsigned long long)code1, (unsigned long long)at1);
	printf("  @stale versions 1 and 2 deoptimize at 0x%llx (pads %u, %u)\n",
	       (unsigned long long)(m2.code_start + at2), pad1, pad2);
	err = unw_get_proc_info_by_ip(unw_local_addr_space, m2.code_start + at2 - 1, &pi, NULL);
	t_check(err == 0 && pi.start_ip == m2.code_start, "libunwind: %d, [0x%llx, 0x%llx) for "
		"@stale version 2 at 0x%llx", err, (unsigned long long)pi.start_ip,
		(unsigned long long)pi.end_ip, (unsigned long long)m2.code_start);
	stale_deopts((int64_t (*)(int64_t, bool))fn(&m2, "stale"), 2);
	t_check(fl_jit_unregister(id) == 0, "fl_jit_unregister stale-2");
	jit_free(&m2);
	free(ir1);
	free(ir2);
}

int main(int argc, char **argv)
{
	char *ret_ir, *values_ir;

	t_start("deopt_from_mcjit_code");
	setvbuf(stdout, NULL, _IOLBF, 0);
	t_check(argc == 3, "usage: deopt_from_mcjit_code RETURNS.LL VALUES.LL");
	ret_ir = slurp(argv[1]);
	values_ir = slurp(argv[2]);
	jit_setup();
	returns(ret_ir);
	values(values_ir);
	same_address();
	free(ret_ir);
	free(values_ir);
	printf("PASS %s\n", t_name);
	return 0;
}
