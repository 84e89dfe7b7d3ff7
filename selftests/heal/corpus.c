// SPDX-License-Identifier: MIT
/*
 * The calls of the corpus harness (corpus.h).  The IR's null blocks call
 * throw_npe, defined here: it counts, and the function returns its null
 * value.  libfaultline does not define __llvm_deoptimize yet: a stub
 * does, for mixed.ll.  Every call's arguments are rebuilt before it, so the printed
 * memory depends only on the call.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "corpus.h"

/* nullchecks.ll's %obj, mixed.ll's %node, shapes.ll's %cell. */
struct obj {
	int64_t a;
	int32_t b;
	int16_t c;
	int8_t d;
	double e;
	float f;
	int32_t g[100];
	void *next;
};

struct node {
	int64_t value;
	struct node *next;
	int32_t x;
	int32_t tag;
};

struct cell {
	int64_t value;
	struct cell *next;
};

void throw_npe(void);
void __llvm_deoptimize(void);

/* nullchecks.ll */
int8_t load_i8(int8_t *p);
int64_t load_i16(int16_t *p);
int64_t load_i32(int32_t *p);
int64_t load_i64(int64_t *p);
float load_float(float *p);
double load_double(double *p);
int32_t load_field(struct obj *o);
int32_t load_far_field(int32_t *p);
int32_t load_beyond_page(int32_t *p);
int64_t load_ne(int64_t *p);
void store_i8(int8_t *p, int8_t x);
void store_i16(int16_t *p);
void store_i32(int32_t *p, int32_t x);
void store_i64(int64_t *p);
void store_double(struct obj *o, double d);
void store_float(struct obj *o, float x);
void rmw_add_i32(int32_t *p, int32_t x);
void rmw_inc_i64(int64_t *p);
void rmw_or_i8(struct obj *o);
void rmw_xor_i16(struct obj *o, int16_t x);
void rmw_sub_field(struct obj *o, int32_t i);
int32_t atomic_add(int32_t *p, int32_t x);
int64_t several(struct obj *o, struct obj *q, int32_t *r);
int64_t walk_list(int64_t **head, int64_t n);
void hidden_store(int64_t *p);
int32_t call_internal(int32_t *p);
/* mixed.ll */
extern int64_t mixed_calls;
int64_t mixed_sum(struct node *head);
void mixed_update(struct node *n, int32_t x);
int64_t mixed_deopt(struct node *n, int32_t expected);
/* shapes.ll */
int64_t base_rcx(int64_t a, int64_t b, int64_t c, int64_t *p, int64_t e, int64_t f);
int64_t base_r8(int64_t a, int64_t b, int64_t c, int64_t d, int32_t *p);
int64_t base_r9(int64_t a, int64_t b, int64_t c, int64_t d, int64_t e, int16_t *p);
int64_t base_rcx_args_live(int64_t a, int64_t b, int64_t c, int64_t **p);
int32_t rmw_flags_read_after(int32_t *p, int32_t x);
int32_t load_op_store(int32_t *p, int32_t x);
int64_t compare_before_select_after(int64_t *p, int64_t a, int64_t b);
int64_t list_len_sum(struct cell *head, int64_t limit);
int64_t pressure(int64_t *p, int64_t *q);
int64_t load_then_store_global(int32_t *p);
extern int64_t last_load;

static uint64_t npes;

void throw_npe(void)
{
	npes++;
}

/* mixed_deopt's deoptimizing path, which the calls never take. */
void __llvm_deoptimize(void)
{
	abort();
}

/* Memory the calls read and write: 3 pages, so load_beyond_page's 8192 fits. */
static union {
	uint8_t bytes[3 * 4096];
	int64_t i64[3 * 512];
	struct obj o;
} mem, mem2;

static void fill(void)
{
	for (size_t i = 0; i < sizeof(mem.bytes); i++) {
		mem.bytes[i] = (uint8_t)(i * 37 + 11);
		mem2.bytes[i] = (uint8_t)(i * 91 + 5);
	}
	mem.o.next = &mem2.bytes[17];
}

/*
 * FNV-1a of the memory, so a stray write anywhere shows; fill's pointer
 * (an address, other in each program) as its offset.
 */
static uint64_t digest(void)
{
	uint64_t h = 0xcbf29ce484222325ull;
	void *next = mem.o.next;

	if (next == &mem2.bytes[17])
		mem.o.next = (void *)17;
	for (size_t i = 0; i < sizeof(mem.bytes); i++)
		h = (h ^ mem.bytes[i]) * 0x100000001b3ull;
	for (size_t i = 0; i < sizeof(mem2.bytes); i++)
		h = (h ^ mem2.bytes[i]) * 0x100000001b3ull;
	mem.o.next = next;
	return h;
}

struct run {
	FILE *out;
	uint64_t nulls;
};

/* Prints one call's line: its name, result, throw_npe calls, memory. */
static void said(struct run *r, const char *call, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void said(struct run *r, const char *call, const char *fmt, ...)
{
	va_list ap;

	fprintf(r->out, "%-40s = ", call);
	va_start(ap, fmt);
	vfprintf(r->out, fmt, ap);
	va_end(ap);
	fprintf(r->out, "  npe %" PRIu64 " mem %016" PRIx64 " calls %" PRId64 "\n", npes,
		digest(), mixed_calls);
}

#define I64 "%" PRId64

/* The calls whose pointer argument is p (valid or NULL). */
static void calls_with(struct run *r, bool null)
{
	const char *k = null ? "null" : "valid";
	char name[64];
	int64_t args[8];

#define P(T) (null ? (T *)NULL : (T *)(void *)&mem.bytes[64])
#define O (null ? NULL : &mem.o)
/* A call returning a value of printf format f; a call returning nothing. */
#define C(fn, f, type, ...) do { type v_; fill(); v_ = fn(__VA_ARGS__); \
	snprintf(name, sizeof(name), "%s(%s)", #fn, k); said(r, name, f, v_); } while (0)
#define V(fn, ...) do { fill(); fn(__VA_ARGS__); \
	snprintf(name, sizeof(name), "%s(%s)", #fn, k); said(r, name, "-"); } while (0)
	C(load_i8, "%d", int, P(int8_t));
	C(load_i16, I64, int64_t, P(int16_t));
	C(load_i32, I64, int64_t, P(int32_t));
	C(load_i64, I64, int64_t, P(int64_t));
	C(load_float, "%a", double, P(float));
	C(load_double, "%a", double, P(double));
	C(load_field, "%d", int32_t, O);
	C(load_far_field, "%d", int32_t, P(int32_t));
	C(load_beyond_page, "%d", int32_t, null ? NULL : (int32_t *)(void *)mem.bytes);
	C(load_ne, I64, int64_t, P(int64_t));
	V(store_i8, P(int8_t), -3);
	V(store_i16, P(int16_t));
	V(store_i32, P(int32_t), 0x12345);
	V(store_i64, P(int64_t));
	V(store_double, O, 2.5);
	V(store_float, O, -1.25f);
	V(rmw_add_i32, P(int32_t), 77);
	V(rmw_inc_i64, P(int64_t));
	V(rmw_or_i8, O);
	V(rmw_xor_i16, O, 0x5a5a);
	V(rmw_sub_field, O, 3);
	C(atomic_add, "%d", int32_t, P(int32_t), 5);
	V(hidden_store, P(int64_t));
	C(call_internal, "%d", int32_t, P(int32_t));
	{ struct node *n = (struct node *)(void *)&mem.bytes[512];

	  fill(); n->tag = 9;
	  mixed_update(null ? NULL : n, 41);
	  snprintf(name, sizeof(name), "mixed_update(%s)", k); said(r, name, "-");
	  fill(); n->tag = 9;
	  /* The tag it expects: never the deoptimizing path. */
	  snprintf(name, sizeof(name), "mixed_deopt(%s)", k);
	  said(r, name, I64, mixed_deopt(null ? NULL : n, 9)); }
	for (int i = 0; i < 8; i++)
		args[i] = (int64_t)0x0101010101010101ll * (i + 1) + i;
	C(base_rcx, I64, int64_t, args[0], args[1], args[2], P(int64_t), args[4], args[5]);
	C(base_r8, I64, int64_t, args[0], args[1], args[2], args[3], P(int32_t));
	C(base_r9, I64, int64_t, args[0], args[1], args[2], args[3], args[4], P(int16_t));
	C(base_rcx_args_live, I64, int64_t, args[0], args[1], args[2], P(int64_t *));
	for (int32_t x = 0; x < 3; x++) {
		int32_t v;

		fill();
		if (!null)
			P(int32_t)[2] = x;	/* decl gives -1, 0 and 1 */
		v = rmw_flags_read_after(P(int32_t), x);
		snprintf(name, sizeof(name), "rmw_flags_read_after(%s, %d)", k, x);
		said(r, name, "%d", v);
	}
	for (int32_t x = -2; x <= 2; x += 2) {
		int32_t v;

		fill();
		if (!null)
			P(int32_t)[1] = 1;
		v = load_op_store(P(int32_t), x);
		snprintf(name, sizeof(name), "load_op_store(%s, %d)", k, x);
		said(r, name, "%d", v);
	}
	C(compare_before_select_after, I64, int64_t, P(int64_t), 3, 4);
	C(pressure, I64, int64_t, P(int64_t), &mem2.i64[3]);
	last_load = -1;
	C(load_then_store_global, I64, int64_t, P(int32_t));
	said(r, "last_load", "%lld", (long long)last_load);
#undef V
#undef C
#undef O
#undef P
}

/* Lists: nullchecks.ll's walk_list, mixed.ll's mixed_sum, shapes.ll's list_len_sum. */
static void lists(struct run *r, bool null_at_end)
{
	char name[64];

	for (int len = 0; len < 4; len++) {
		int64_t *chain[4];
		struct cell cells[4];
		struct node nodes[4];
		int64_t v, terms;

		fill();
		/* walk_list: each element points at the next; the last at NULL or at itself. */
		for (int i = 0; i < 4; i++)
			chain[i] = (int64_t *)(i + 1 < len ? (void *)&chain[i + 1] :
					       null_at_end ? NULL : (void *)&chain[i]);
		v = walk_list(len || !null_at_end ? (int64_t **)chain : NULL, len + 1);
		/*
		 * A sum of addresses in chain (on the stack, elsewhere in each
		 * process): printed as so many times chain's address plus a
		 * small rest.
		 */
		terms = (v + (int64_t)(intptr_t)chain / 2) / (int64_t)(intptr_t)chain;
		snprintf(name, sizeof(name), "walk_list(%d, %s)", len, null_at_end ? "null" : "loop");
		said(r, name, I64 " x chain + " I64, terms, v - terms * (int64_t)(intptr_t)chain);
		for (int i = 0; i < 4; i++) {
			cells[i].value = 1000 * (i + 1) + len;
			cells[i].next = i + 1 < len ? &cells[i + 1] : NULL;
			nodes[i].value = 100 * (i + 1) + len;
			nodes[i].next = i + 1 < len ? &nodes[i + 1] : NULL;
		}
		v = list_len_sum(len ? cells : NULL, null_at_end ? 100 : len);
		snprintf(name, sizeof(name), "list_len_sum(%d, %s)", len, null_at_end ? "null" : "limit");
		said(r, name, I64, v);
		v = mixed_sum(len ? nodes : NULL);
		snprintf(name, sizeof(name), "mixed_sum(%d)", len);
		said(r, name, I64, v);
	}
}

/* several: each of its four checks fails in turn. */
static void several_calls(struct run *r)
{
	static const char *const cases[] = { "o", "q", "r", "o->next", "none" };

	for (int c = 0; c < 5; c++) {
		struct obj *o = &mem.o, *q = (struct obj *)(void *)&mem2.bytes[1024];
		int32_t *rr = (int32_t *)(void *)&mem.bytes[2048];
		char name[64];
		int64_t v;

		fill();
		if (c == 3)
			o->next = NULL;
		v = several(c == 0 ? NULL : o, c == 1 ? NULL : q, c == 2 ? NULL : rr);
		snprintf(name, sizeof(name), "several(null %s)", cases[c]);
		said(r, name, I64, v);
	}
}

uint64_t corpus_run(FILE *out, int reps)
{
	struct run r = { .out = out };

	npes = 0;
	mixed_calls = 0;
	calls_with(&r, false);
	lists(&r, false);
	for (int i = 0; i < reps; i++) {
		calls_with(&r, true);
		lists(&r, true);
		several_calls(&r);
	}
	return npes;
}
