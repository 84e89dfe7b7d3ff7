/* SPDX-License-Identifier: MIT */
/*
 * The deoptimization tests (selftests/deopt/): one program per property,
 * each exiting 0 (pass), 77 (skip, with the reason) or 1 (fail, with the
 * reason); run.sh runs them.
 *
 * What they share: fl_init without the agent (discovery registers the
 * test program's and its libraries' stack maps), and returns.ll's
 * functions with the values their deoptimizations return.
 */
#ifndef FL_TEST_DEOPT_COMMON_H
#define FL_TEST_DEOPT_COMMON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <faultline/deopt.h>
#include <faultline/dispatch.h>

#include "../common/t.h"

/*
 * The registers struct fl_deopt_return returns an integer and a float or
 * a double in: the architecture's (x86-64: rax, xmm0; AArch64: x0, d0).
 */
#if defined(__aarch64__)
#define RET_INT(r) ((r)->x0)
#define RET_FP(r) ((r)->d0)
#else
#define RET_INT(r) ((r)->rax)
#define RET_FP(r) ((r)->xmm0)
#endif

/*
 * DWARF registers the location tests name: the stack pointer, two
 * callee-saved registers and the first vector register (x86-64: rsp, rbx,
 * r12, xmm0; AArch64: sp, x19, x20, v0).
 */
#if defined(__aarch64__)
#define T_DWARF_SP FL_DWARF_A64_SP
#define T_DWARF_CALLEE0 FL_DWARF_A64_X19
#define T_DWARF_CALLEE1 (FL_DWARF_A64_X19 + 1)
#define T_DWARF_VEC0 FL_DWARF_A64_V0
#else
#define T_DWARF_SP FL_DWARF_RSP
#define T_DWARF_CALLEE0 FL_DWARF_RBX
#define T_DWARF_CALLEE1 FL_DWARF_R12
#define T_DWARF_VEC0 FL_DWARF_XMM0
#endif

/* fl_init, with the log on stderr; the loaded modules are registered. */
static inline void t_start(const char *name)
{
	FL_OPTS(fl_init_opts, o, .flags = FL_INIT_NO_AGENT);
	int err;

	t_name = name;
	fl_set_log(t_log, NULL);
	err = fl_init(&o);
	t_check(err == 0, "fl_init: %d", err);
}

/* returns.ll */
int32_t ret_i32(int32_t x, bool go);
int64_t ret_i64(int64_t x, bool go);
void *ret_ptr(void *x, bool go);
float ret_f32(float x, bool go);
double ret_f64(double x, bool go);
void ret_void(int64_t *out, int64_t x, bool go);

/* The intrinsic's first argument in returns.ll: which function deoptimized. */
enum ret_kind { RET_I32 = 1, RET_I64, RET_PTR, RET_F32, RET_F64, RET_VOID };

/* What a deoptimization of each returns, from its deopt value x. */
static inline int32_t ret_i32_expected(int32_t x) { return x * 3 + 1; }
static inline int64_t ret_i64_expected(int64_t x) { return x * 5 - 7; }
static inline void *ret_ptr_expected(void *x) { return (char *)x + 16; }
static inline float ret_f32_expected(float x) { return x * 2.0f + 0.5f; }
static inline double ret_f64_expected(double x) { return x * 4.0 - 0.25; }
static inline int64_t ret_void_expected(int64_t x) { return x ^ 0x5a5a; }

/*
 * The handler for returns.ll: checks the record is a deoptimization with
 * the value it was given, and returns what the *_expected functions say.
 * Returns false (with why) when what it was told is wrong.
 */
static inline bool ret_handle(const struct fl_deopt_state *st, struct fl_deopt_return *ret,
			      char *why, size_t len)
{
	uint64_t kind = st->int_args[0];
	uint64_t v;
	union { uint32_t u; float f; } f32;
	union { uint64_t u; double d; } f64;

	if (st->record->id != 0xABCDEF0F || st->calling_convention != 0 || st->flags != 0) {
		snprintf(why, len, "record ID 0x%llx, calling convention %llu, flags %llu",
			 (unsigned long long)st->record->id,
			 (unsigned long long)st->calling_convention, (unsigned long long)st->flags);
		return false;
	}
	if (st->num_values != (kind == RET_VOID ? 2u : 1u)) {
		snprintf(why, len, "kind %llu: %u deopt values", (unsigned long long)kind,
			 st->num_values);
		return false;
	}
	v = st->values[0].value;
	switch (kind) {
	case RET_I32:
		RET_INT(ret) = (uint32_t)ret_i32_expected((int32_t)v);
		break;
	case RET_I64:
		RET_INT(ret) = (uint64_t)ret_i64_expected((int64_t)v);
		break;
	case RET_PTR:
		RET_INT(ret) = (uint64_t)(uintptr_t)ret_ptr_expected((void *)(uintptr_t)v);
		break;
	case RET_F32:
		f32.u = (uint32_t)v;
		/* The intrinsic's own argument: the same float, in xmm0 (s0). */
		if (st->xmm_args[0].f != f32.f) {
			snprintf(why, len, "f32: argument %g, deopt value %g",
				 (double)st->xmm_args[0].f, (double)f32.f);
			return false;
		}
		RET_FP(ret).f = ret_f32_expected(f32.f);
		break;
	case RET_F64:
		f64.u = v;
		if (st->xmm_args[0].d != f64.d) {
			snprintf(why, len, "f64: argument %g, deopt value %g", st->xmm_args[0].d,
				 f64.d);
			return false;
		}
		RET_FP(ret).d = ret_f64_expected(f64.d);
		break;
	case RET_VOID:
		*(int64_t *)(uintptr_t)v = ret_void_expected((int64_t)st->values[1].value);
		break;
	default:
		snprintf(why, len, "unknown kind %llu", (unsigned long long)kind);
		return false;
	}
	return true;
}

/* returns.ll's functions, wherever the IR was compiled (linked, or MCJIT). */
struct ret_fns {
	int32_t (*i32)(int32_t, bool);
	int64_t (*i64)(int64_t, bool);
	void *(*ptr)(void *, bool);
	float (*f32)(float, bool);
	double (*f64)(double, bool);
	void (*v)(int64_t *, int64_t, bool);
};

/* The functions linked into the program. */
#define RET_LINKED ((struct ret_fns){ ret_i32, ret_i64, ret_ptr, ret_f32, ret_f64, ret_void })

/*
 * Each of f's functions deoptimized over a range of values (the handler
 * uses ret_handle) returns what ret_*_expected says, and returns its
 * argument when it does not deoptimize; where names them in messages.
 */
static inline void ret_check_all(const struct ret_fns *f, const char *where)
{
	int64_t out = 0;
	char buf[64];

	for (int i = -3; i < 1000; i += 7) {
		int64_t big = (int64_t)i * 0x100000007ll;
		float x = (float)i / 8.0f;
		double d = (double)i / 3.0;

		t_check(f->i32(i, false) == i, "%s: i32: fast path", where);
		t_check(f->i32(i, true) == ret_i32_expected(i), "%s: i32 %d: %d", where, i,
			f->i32(i, true));
		t_check(f->i64(big, true) == ret_i64_expected(big), "%s: i64 %lld", where,
			(long long)big);
		t_check(f->ptr(buf + i % 32, true) == ret_ptr_expected(buf + i % 32), "%s: ptr",
			where);
		t_check(f->f32(x, false) == x, "%s: f32: fast path", where);
		t_check(f->f32(x, true) == ret_f32_expected(x), "%s: f32 %g: %g", where, (double)x,
			(double)f->f32(x, true));
		t_check(f->f64(d, true) == ret_f64_expected(d), "%s: f64 %g: %g", where, d,
			f->f64(d, true));
		f->v(&out, big, true);
		t_check(out == ret_void_expected(big), "%s: void: %lld", where, (long long)out);
		f->v(&out, big, false);
		t_check(out == big, "%s: void: fast path", where);
	}
}

#endif /* FL_TEST_DEOPT_COMMON_H */
