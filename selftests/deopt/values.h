/* SPDX-License-Identifier: MIT */
/*
 * values.ll's deoptimizations, wherever the IR was compiled (llc-14 and
 * linked in every mode: deopt_values_every_kind_and_size; MCJIT:
 * deopt_from_mcjit_code): the handler that checks every decoded value
 * against what the IR passed, and the runs of @values and @keeps.
 * Included by one file of a program (it defines @opaque).
 */
#ifndef FL_TEST_DEOPT_VALUES_H
#define FL_TEST_DEOPT_VALUES_H

#include <stdio.h>

#include "common.h"

typedef int64_t (*values_fn)(int8_t, int16_t, int32_t, int64_t, float, double, void *, bool);
typedef int64_t (*keeps_fn)(int64_t, void *);

/* What values.ll passes, as the handler must decode it. */
struct expect {
	int8_t a;
	int16_t b;
	int32_t c;
	int64_t d;
	float e;
	double f;
	void *p;
};

static struct expect want;
static const char *variant;
static unsigned deopts;
/* Seen: [kind][log2 size], sizes 1..16. */
static bool seen[6][5];
/* Register locations of a vector register (xmm, v), by log2 of their size. */
static bool seen_vector[5];

static uint64_t bits_f32(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	return u;
}

static uint64_t bits_f64(double d)
{
	uint64_t u;

	memcpy(&u, &d, 8);
	return u;
}

static int log2_size(uint16_t size)
{
	return size == 1 ? 0 : size == 2 ? 1 : size == 4 ? 2 : size == 8 ? 3 : size == 16 ? 4 : -1;
}

/* values.ll's @opaque (exported: -rdynamic, for the shared library and MCJIT). */
void opaque(int64_t *p);
void __attribute__((noinline)) opaque(int64_t *p)
{
	__asm__ volatile("" : : "r"(p) : "memory");
}

static void values_handler(const struct fl_deopt_state *st, struct fl_deopt_return *ret, void *ctx)
{
	const struct expect *w = &want;
	/* Value i of values.ll's deopt bundle: expected bits and their size. */
	const struct {
		uint64_t v;
		unsigned size;
	} exp[20] = {
		{ (uint8_t)w->a, 1 }, { (uint16_t)w->b, 2 }, { (uint32_t)w->c, 4 },
		{ (uint64_t)w->d, 8 }, { bits_f32(w->e), 4 }, { bits_f64(w->f), 8 },
		{ (uint64_t)(uintptr_t)w->p, 8 }, { 0, 0 /* the alloca: below */ },
		{ (uint8_t)(w->a + 1), 1 }, { (uint16_t)(w->b + 2), 2 },
		{ (uint32_t)(w->c + 3), 4 }, { (uint64_t)(w->d + 4), 8 },
		{ (uint64_t)(w->d * 3), 8 }, { (uint64_t)(w->d ^ 255), 8 },
		{ 42, 4 }, { (uint64_t)-7ll, 8 }, { 0x0123456789ABCDEFull, 8 },
		{ (uint8_t)-3, 1 }, { (uint16_t)-300, 2 }, { bits_f64(2.5), 8 },
	};

	(void)ctx;
	deopts++;
	t_check(st->num_values == 20, "%s: %u deopt values", variant, st->num_values);
	t_check(st->int_args[0] == (uint64_t)w->d, "%s: the intrinsic's argument 0x%llx",
		variant, (unsigned long long)st->int_args[0]);
	for (unsigned i = 0; i < 20; i++) {
		const struct fl_stackmap_location *l = st->values[i].location;
		uint64_t v = st->values[i].value;
		int s = log2_size(l->size);

		t_check(l->kind >= 1 && l->kind <= 5 && s >= 0, "%s: value %u: kind %u size %u",
			variant, i, l->kind, l->size);
		seen[l->kind][s] = true;
		if (l->kind == FL_LOC_REGISTER && l->dwarf_reg >= T_DWARF_VEC0)
			seen_vector[s] = true;
		if (i == 7) {
			/* The alloca's address: it holds d. */
			t_check(*(const int64_t *)(uintptr_t)v == w->d,
				"%s: value 7 (%s): *0x%llx is not %lld", variant,
				fl_location_kind_name(l->kind), (unsigned long long)v,
				(long long)w->d);
			continue;
		}
		uint64_t mask = exp[i].size == 8 ? ~0ull : (1ull << (8 * exp[i].size)) - 1;

		t_check(((v ^ exp[i].v) & mask) == 0,
			"%s: value %u (%s %u, register %u, offset %d): 0x%llx, not 0x%llx", variant,
			i, fl_location_kind_name(l->kind), l->size, l->dwarf_reg, l->offset,
			(unsigned long long)v, (unsigned long long)exp[i].v);
	}
	RET_INT(ret) = (uint64_t)(w->d * 7 + 1);
}

/* What @keeps computes from x when @values returns r. */
static int64_t keeps_expected(int64_t x, int64_t r)
{
	return r + x * 3 + (x + 1000) * 3 + (x ^ 12345) * 5 + x * 7 * 9 + (x - 99) * 17 +
	       (int64_t)((uint64_t)x << 2) * 33 + (x + 77) * 65;
}

/*
 * 50 deoptimizations of values (set values_handler first), each with its
 * own values, and 50 calls of keeps, whose callee-saved registers must
 * come back; variant names them in messages.
 */
static void values_run(const char *name, values_fn values, keeps_fn keeps)
{
	char mem[64];

	variant = name;
	for (int i = 0; i < 50; i++) {
		int64_t r;

		want = (struct expect){
			.a = (int8_t)(i * 37 - 100), .b = (int16_t)(i * 1001 - 20000),
			.c = i * 100003 - 7, .d = (int64_t)i * 0x123456789ll - 5,
			.e = (float)i * 0.75f - 3.0f, .f = (double)i * 1.125 - 17.0,
			.p = mem + i,
		};
		r = values(want.a, want.b, want.c, want.d, want.e, want.f, want.p, true);
		t_check(r == want.d * 7 + 1, "%s: returned %lld", variant, (long long)r);
		/* keeps passes its own constants but its x and p. */
		want = (struct expect){ .a = 5, .b = 6, .c = 7, .d = want.d, .e = 1.5f,
					.f = 3.25, .p = want.p };
		r = keeps(want.d, want.p);
		t_check(r == keeps_expected(want.d, want.d * 7 + 1),
			"%s: a caller's callee-saved registers: %lld, not %lld", variant,
			(long long)r, (long long)keeps_expected(want.d, want.d * 7 + 1));
	}
}

/* The location kinds, by number, for messages. */
static const char *const values_kinds[6] = {
	"", "Register", "Direct", "Indirect", "Constant", "ConstantIndex",
};

#endif /* FL_TEST_DEOPT_VALUES_H */
