// SPDX-License-Identifier: MIT
/*
 * Patch points in JIT code: a module compiled by MCJIT (selftests/jit/
 * mcjit.c) and registered with fl_jit_register, its fault map (an implicit
 * null check: a registration needs one) and its stack map.  Its patch
 * points are rewritten by ID while 2 threads call them, argv[1] times
 * (default 2,000):
 *   ID 501, 16 bytes, calling pt_one: back and forth between
 *           movabsq $pt_one / $pt_two, %r11; callq *%r11 (1, 2), and every
 *           10th rewrite mov $3, %eax (the boundaries move);
 *   ID 502, 32 bytes of nops: mov $4 / mov $5, %eax, and every 10th
 *           xor %eax, %eax; mov $6, %al.
 * Every call returns one of its region's values.  Also: read reports the
 * JIT code's bytes (the region inside the registered code, derived
 * extents of numBytes), the null check still takes its handler path,
 * reset restores the compiled bytes, and once the module is unregistered
 * its patch points are unknown (-ENOENT).
 */
#include <pthread.h>
#include <stdatomic.h>

#include <faultline/dispatch.h>

#include "common.h"
#include "../jit/mcjit.h"

#define THREADS 2

int64_t pt_one(void);
int64_t pt_two(void);

int64_t pt_one(void)
{
	return 1;
}

int64_t pt_two(void)
{
	return 2;
}

/* %llu: pt_one's address, a constant target (no relocation for MCJIT). */
static const char ir_fmt[] =
	"target datalayout = \"e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-f80:128-n8:16:32:64-S128\"\n"
	"target triple = \"x86_64-unknown-linux-gnu\"\n"
	"declare i64 @llvm.experimental.patchpoint.i64(i64, i32, i8*, i32, ...)\n"
	"define i32 @jit_load(i32* %%p) {\n"
	"entry:\n"
	"  %%c = icmp eq i32* %%p, null\n"
	"  br i1 %%c, label %%isnull, label %%ok, !make.implicit !0\n"
	"ok:\n"
	"  %%v = load i32, i32* %%p\n"
	"  ret i32 %%v\n"
	"isnull:\n"
	"  ret i32 -77\n"
	"}\n"
	"define i64 @jit_call() {\n"
	"  %%r = call i64 (i64, i32, i8*, i32, ...) @llvm.experimental.patchpoint.i64(i64 501, i32 16,"
	" i8* inttoptr (i64 %llu to i8*), i32 0)\n"
	"  ret i64 %%r\n"
	"}\n"
	"define i64 @jit_nops() {\n"
	"  %%r = call i64 (i64, i32, i8*, i32, ...) @llvm.experimental.patchpoint.i64(i64 502, i32 32,"
	" i8* null, i32 0)\n"
	"  ret i64 %%r\n"
	"}\n"
	"!0 = !{}\n";

static int64_t (*jit_call)(void), (*jit_nops)(void);
static _Atomic int stop;
static _Atomic uint64_t calls, wrong, seen[7];

static void *caller(void *arg)
{
	uint64_t n = 0;

	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		int64_t a = jit_call(), b = jit_nops();

		n += 2;
		if (a >= 1 && a <= 3)
			atomic_fetch_add_explicit(&seen[a], 1, memory_order_relaxed);
		else if (atomic_fetch_add(&wrong, 1) < 5)
			fprintf(stderr, "%s: a call of patch point 501 returned %lld\n", t_name, (long long)a);
		if (b >= 4 && b <= 6)
			atomic_fetch_add_explicit(&seen[b], 1, memory_order_relaxed);
		else if (atomic_fetch_add(&wrong, 1) < 5)
			fprintf(stderr, "%s: a call of patch point 502 returned %lld\n", t_name, (long long)b);
	}
	atomic_fetch_add(&calls, n);
	return NULL;
}

static void write_id(uint64_t id, const uint8_t *bytes, size_t len, bool moving, long *busy)
{
	struct fl_diag d = { 0 };
	int err = t_write_under_load(id, bytes, len, moving, busy, &d);

	if (err) {
		atomic_store(&stop, 1);
		t_fail("write %llu: %d %s", (unsigned long long)id, err, d.msg);
	}
}

int main(int argc, char **argv)
{
	long rewrites = argc > 1 ? atol(argv[1]) : 2000, busy = 0;
	static char ir[sizeof(ir_fmt) + 32];
	uint8_t one[T_CALL_R11_LEN], two[T_CALL_R11_LEN], mov[3][5], xor6[4] = { 0x31, 0xc0, 0xb0, 6 };
	struct jit_module m = { 0 };
	struct fl_jit_reg r;
	struct fl_diag d = { 0 };
	struct fl_point call_pt, nops_pt, pt;
	int32_t (*jit_load)(int32_t *);
	int32_t x = 42;
	pthread_t th[THREADS];
	int id, err;

	t_start(argv);
	t_call_r11(one, (const void *)pt_one);
	t_call_r11(two, (const void *)pt_two);
	for (int i = 0; i < 3; i++)
		t_mov_eax(mov[i], (uint32_t)(i + 3));
	snprintf(ir, sizeof(ir), ir_fmt, (unsigned long long)(uintptr_t)pt_one);
	jit_setup();
	if (jit_compile(&m, ir, "points") != 0)
		t_fail("MCJIT: %s", m.err);
	t_check(m.faultmap && m.stackmap, "MCJIT loaded no fault map (%p) or stack map (%p)",
		m.faultmap, m.stackmap);
	jit_load = (int32_t (*)(int32_t *))(uintptr_t)jit_function(&m, "jit_load");
	jit_call = (int64_t (*)(void))(uintptr_t)jit_function(&m, "jit_call");
	jit_nops = (int64_t (*)(void))(uintptr_t)jit_function(&m, "jit_nops");
	t_check(jit_load && jit_call && jit_nops, "MCJIT: a function is missing");

	t_init();
	t_enable();
	memset(&r, 0, sizeof(r));
	r.sz = sizeof(r);
	r.name = "points";
	r.faultmap = m.faultmap;
	r.faultmap_size = m.faultmap_size;
	r.stackmap = m.stackmap;
	r.stackmap_size = m.stackmap_size;
	r.code_start = m.code_start;
	r.code_size = m.code_size;
	id = fl_jit_register(&r, &d);
	t_check(id > 0, "fl_jit_register: %d %s", id, d.msg);

	t_read_point(501, NULL, &call_pt);
	t_read_point(502, NULL, &nops_pt);
	printf("  patch point 501 at %#llx, %u bytes; 502 at %#llx, %u bytes (code %#llx, %llu bytes)\n",
	       (unsigned long long)call_pt.pc, call_pt.size, (unsigned long long)nops_pt.pc,
	       nops_pt.size, (unsigned long long)m.code_start, (unsigned long long)m.code_size);
	t_check(call_pt.pc >= m.code_start && call_pt.pc + 16 <= m.code_start + m.code_size &&
		nops_pt.pc >= m.code_start && nops_pt.pc + 32 <= m.code_start + m.code_size,
		"a patch point is not inside the JIT code");
	t_check(call_pt.size == 16 && nops_pt.size == 32, "derived sizes %u and %u, compiled 16 and 32",
		call_pt.size, nops_pt.size);
	t_check(memcmp(call_pt.compiled, one, sizeof(one)) == 0 &&
		memcmp((const void *)(uintptr_t)call_pt.pc, call_pt.compiled, 16) == 0,
		"patch point 501 is not movabsq $pt_one, %%r11; callq *%%r11 in the JIT code");
	t_check(jit_call() == 1, "the compiled patch point 501 does not return 1");
	write_id(502, mov[1], 5, true, &busy);

	for (int i = 0; i < THREADS; i++)
		t_check(pthread_create(&th[i], NULL, caller, NULL) == 0, "pthread_create");
	for (long k = 1; k <= rewrites; k++) {
		bool moving = k % 10 == 0 || k % 10 == 1;
		bool odd = k & 1;

		if (k % 10 == 0) {
			write_id(501, mov[0], 5, true, &busy);
			write_id(502, xor6, 4, true, &busy);
		} else {
			write_id(501, odd ? two : one, T_CALL_R11_LEN, moving, &busy);
			write_id(502, odd ? mov[2] : mov[1], 5, moving, &busy);
		}
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	printf("%s: %ld rewrites of each (%ld refused -EBUSY first), %llu calls, wrong %llu;"
	       " seen 1: %llu, 2: %llu, 3: %llu, 4: %llu, 5: %llu, 6: %llu\n",
	       t_name, rewrites, busy, (unsigned long long)calls, (unsigned long long)wrong,
	       (unsigned long long)seen[1], (unsigned long long)seen[2], (unsigned long long)seen[3],
	       (unsigned long long)seen[4], (unsigned long long)seen[5], (unsigned long long)seen[6]);
	t_check(wrong == 0, "%llu calls returned what no version returns", (unsigned long long)wrong);
	t_check(rewrites < 20 || (!!seen[1] + !!seen[2] + !!seen[3] >= 2 &&
				  !!seen[4] + !!seen[5] + !!seen[6] >= 2),
		"the threads did not see two versions of each patch point");

	t_check(jit_load(&x) == 42 && jit_load(NULL) == -77,
		"the implicit null check does not take its handler path");
	err = fl_patchpoint_reset(501, NULL, &d);
	t_check(err == 0, "reset 501: %d %s", err, d.msg);
	t_read_point(501, NULL, &pt);
	t_check(memcmp(pt.now, call_pt.compiled, 16) == 0 &&
		memcmp((const void *)(uintptr_t)pt.pc, call_pt.compiled, 16) == 0 && jit_call() == 1,
		"reset 501 did not restore the compiled call");

	t_check(fl_jit_unregister(id) == 0, "fl_jit_unregister");
	memset(&pt, 0, sizeof(pt));
	pt.sz = sizeof(pt);
	err = fl_patchpoint_read(501, NULL, &pt, &d);
	printf("  read 501 after fl_jit_unregister: %d %s\n", err, d.msg);
	t_check(err == -ENOENT, "read 501 after fl_jit_unregister: %d, not -ENOENT", err);
	err = fl_patchpoint_write(502, NULL, mov[1], 5, NULL, &d);
	printf("  write 502 after fl_jit_unregister: %d %s\n", err, d.msg);
	t_check(err == -ENOENT, "write 502 after fl_jit_unregister: %d, not -ENOENT", err);
	jit_free(&m);
	printf("PASS %s\n", t_name);
	return 0;
}
