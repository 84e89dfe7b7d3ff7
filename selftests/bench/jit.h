/* SPDX-License-Identifier: MIT */
/*
 * What bench_dispatch and bench_region share: a JIT code page with one
 * implicit-check load, hand-made fault maps registered with
 * fl_jit_register, the "floor" handler, and medians.
 *
 * The floor is the least a SIGSEGV/SIGBUS handler can do to resume an
 * implicit check: if RIP is the one faulting PC it knows, set RIP to the
 * handler PC.  No table, no counters, no atomics.  Faultline's cost is
 * reported against it.  It is installed with SA_NODEFER and an empty mask,
 * as faultline's handler is: the blocked set then does not change on
 * delivery or sigreturn, and the kernel skips updating it (about 30 ns a
 * fault here; without it the floor would be slower than faultline).
 */
#ifndef FL_BENCH_JIT_H
#define FL_BENCH_JIT_H

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <ucontext.h>

#include <faultline/dispatch.h>

#include "../common/kaction.h"
#include "stats.h"
#include "synth.h"

/*
 * Machine code at the start of the code page:
 *   +0  mov (%rdi),%eax; ret       the load: an implicit null check
 *   +3  mov $-1,%eax; ret          its handler
 */
static const unsigned char jit_code_bytes[] = {
	0x8b, 0x07, 0xc3, 0xb8, 0xff, 0xff, 0xff, 0xff, 0xc3,
};
#define JIT_LOAD_LEN 2		/* what an application's handler skips */
#define JIT_PAGE 4096u

/*
 * Sites that are never executed come in functions of JIT_SITES_PER_FN,
 * JIT_FN_SIZE bytes apart, faulting PCs 16 bytes apart, handler at +60.
 */
#define JIT_SITES_PER_FN 4u
#define JIT_FN_SIZE 64u

typedef int (*jit_fn)(const int *p);

struct jit {
	unsigned char *base;	/* JIT_PAGE of code (RX), then the area */
	size_t size;
	uint64_t area;		/* PROT_NONE: where the sites never executed point */
	jit_fn load;
	uint64_t load_pc, handler_pc;
};

/* err: -errno, or 0 for errno itself. */
static inline void die(const char *what, int err)
{
	fprintf(stderr, "bench: %s failed: %s\n", what, strerror(err ? -err : errno));
	exit(1);
}

/* Maps the code page and area_size bytes of PROT_NONE after it. */
static inline void jit_make(struct jit *j, size_t area_size)
{
	memset(j, 0, sizeof(*j));
	j->size = JIT_PAGE + area_size;
	j->base = mmap(NULL, j->size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		       -1, 0);
	if (j->base == MAP_FAILED)
		die("mmap", 0);
	if (mprotect(j->base, JIT_PAGE, PROT_READ | PROT_WRITE))
		die("mprotect", 0);
	memcpy(j->base, jit_code_bytes, sizeof(jit_code_bytes));
	if (mprotect(j->base, JIT_PAGE, PROT_READ | PROT_EXEC))
		die("mprotect", 0);
	j->area = (uint64_t)(uintptr_t)j->base + JIT_PAGE;
	j->load = (jit_fn)(void *)j->base;
	j->load_pc = (uint64_t)(uintptr_t)j->base;
	j->handler_pc = j->load_pc + 3;
}

/*
 * A fault map (one table): the load of j if with_load, then n sites never
 * executed, in functions from at on.  Kinds as LLVM emits them, mostly
 * loads.
 */
static inline void jit_faultmap(struct synth_buf *b, const struct jit *j, bool with_load,
				uint64_t at, uint32_t n)
{
	static const uint8_t kinds[] = { 1, 1, 3, 1, 2 };
	uint32_t fns = (n + JIT_SITES_PER_FN - 1) / JIT_SITES_PER_FN, f, i;

	memset(b, 0, sizeof(*b));
	synth_put(b, 1, 1);
	synth_put(b, 0, 1);
	synth_put(b, 0, 2);
	synth_put(b, fns + with_load, 4);
	if (with_load) {
		synth_put(b, j->load_pc, 8);
		synth_put(b, 1, 4);
		synth_put(b, 0, 4);
		synth_put(b, 1, 4);				/* FaultingLoad */
		synth_put(b, 0, 4);
		synth_put(b, j->handler_pc - j->load_pc, 4);
	}
	for (f = 0; f < fns; f++) {
		uint32_t k = n - f * JIT_SITES_PER_FN;

		if (k > JIT_SITES_PER_FN)
			k = JIT_SITES_PER_FN;
		synth_put(b, at + (uint64_t)f * JIT_FN_SIZE, 8);
		synth_put(b, k, 4);
		synth_put(b, 0, 4);
		for (i = 0; i < k; i++) {
			synth_put(b, kinds[(f + i) % sizeof(kinds)], 4);
			synth_put(b, 16 * i, 4);
			synth_put(b, JIT_FN_SIZE - 4, 4);
		}
	}
}

/* Registers [start, start + size) with fault map b.  Returns the id. */
static inline int jit_register(const char *name, struct synth_buf *b, uint64_t start,
			       uint64_t size)
{
	struct fl_jit_reg reg = {
		.sz = sizeof(reg),
		.name = name,
		.faultmap = b->p,
		.faultmap_size = b->len,
		.code_start = start,
		.code_size = size,
	};
	struct fl_diag d;
	int id = fl_jit_register(&reg, &d);

	if (id <= 0) {
		fprintf(stderr, "bench: fl_jit_register(%s): %d: %s\n", name, id, d.msg);
		exit(1);
	}
	return id;
}

/* The floor (see above).  Any other fault: the default action, again. */
static uint64_t floor_pc, floor_to;

static inline void floor_handler(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;

	(void)si;
	if ((uint64_t)uc->uc_mcontext.gregs[REG_RIP] == floor_pc) {
		uc->uc_mcontext.gregs[REG_RIP] = (greg_t)floor_to;
		return;
	}
	signal(sig, SIG_DFL);
}

static inline struct sigaction floor_action(const struct jit *j)
{
	struct sigaction sa;

	floor_pc = j->load_pc;
	floor_to = j->handler_pc;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = floor_handler;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	return sa;
}

/*
 * Puts act in the kernel for sig, with libc's sigaction (never
 * faultline's); an action read back from the kernel (SA_RESTORER set, as
 * faultline's) goes back whole, its restorer too, with rt_sigaction: libc
 * would put its own, and faultline's handler knows by the restorer which
 * mask the kernel applied (lib/dispatch/chain.c).
 */
static inline void set_action(int sig, const struct sigaction *act)
{
	if (!(act->sa_flags & 0x04000000)) {	/* SA_RESTORER */
		if (sigaction(sig, act, NULL))
			die("sigaction", 0);
		return;
	}
	if (t_rt_sigaction(sig, act))
		die("rt_sigaction", 0);
}

static inline double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* The median of n nanosecond times (sorted in place), in seconds. */
static inline double median_ns(int64_t *t, int n)
{
	qsort(t, (size_t)n, sizeof(*t), cmp_i64);
	return (n % 2 ? (double)t[n / 2] : (double)(t[n / 2 - 1] + t[n / 2]) / 2) * 1e-9;
}

/* Repetitions of one measurement; sorted in place by the summaries. */
struct series {
	double *v;
	int n;
};

static inline void series_init(struct series *s, int n)
{
	s->v = calloc((size_t)n, sizeof(double));
	s->n = 0;
	if (!s->v)
		abort();
}

static inline double series_median(struct series *s)
{
	int n = s->n;

	qsort(s->v, (size_t)n, sizeof(double), bench_cmp_double);
	return n % 2 ? s->v[n / 2] : (s->v[n / 2 - 1] + s->v[n / 2]) / 2;
}

/*
 * "median [min .. max]", scaled, SERIES_W characters.  Sorts the series:
 * take paired ratios before.
 */
#define SERIES_W 34
static inline const char *series_fmt(char *buf, size_t size, struct series *s, double scale)
{
	double med = series_median(s);

	snprintf(buf, size, "%9.1f [%9.1f .. %9.1f]", med * scale, s->v[0] * scale,
		 s->v[s->n - 1] * scale);
	return buf;
}

/*
 * The median of the ratios a[i] / b[i]: each pair was measured back to
 * back, so a burst of load from elsewhere falls on both of a pair.  Call
 * before the series are sorted.
 */
static inline double paired_ratio(const struct series *a, const struct series *b)
{
	struct series r;
	double m;

	series_init(&r, a->n);
	for (int i = 0; i < a->n; i++)
		r.v[r.n++] = a->v[i] / b->v[i];
	m = series_median(&r);
	free(r.v);
	return m;
}

/* The median of the differences a[i] - b[i], as paired_ratio. */
static inline double paired_diff(const struct series *a, const struct series *b)
{
	struct series r;
	double m;

	series_init(&r, a->n);
	for (int i = 0; i < a->n; i++)
		r.v[r.n++] = a->v[i] - b->v[i];
	m = series_median(&r);
	free(r.v);
	return m;
}

#endif /* FL_BENCH_JIT_H */
