// SPDX-License-Identifier: MIT
/*
 * bench_deopt [-n ROUNDS]: the cost of deoptimization (deopt.h), figures
 * only.
 *
 * 1. fl_stackmap_record_at's latency with 10^3, 10^4, 10^5 and 10^6
 *    records registered (a synthetic v3 stack map registered as JIT code:
 *    10 records per function, 3-6 locations each), ns per lookup, the
 *    median of ROUNDS rounds (default 15) [min .. max]:
 *      hot     the same return address again and again (the index in cache)
 *      random  every record's address once per round, in a random order
 *              (at 10^6 the index, 8 MiB of slots, is mostly out of cache)
 *    and, side by side at the same sizes, the format layer's own search
 *    (fl_stackmap_find_pc) on the same table, random order.
 * 2. A deoptimization's round trip, ns per call, ROUNDS rounds of 100,000
 *    calls, interleaved: selftests/deopt/returns.ll's ret_i64 called with
 *    go = true (guard failure, __llvm_deoptimize, the record, the decoding,
 *    libunwind's step out of the frame, a handler returning a value, the
 *    value back in the caller) against the same call with go = false (a
 *    plain call) and a failed implicit null check (bench_heal.ll's bh_load
 *    on NULL: a SIGSEGV claimed by faultline's dispatch).  Ratios of the
 *    medians.
 * 3. A stack walk of 100 frames of registered code (walk.ll's bw_frames,
 *    each at a gc.statepoint holding a reference), from C called by the
 *    innermost, to the stack's end: ns per walk and per frame stepped
 *    (every frame, the C ones too), the median of ROUNDS rounds of 200
 *    walks [min .. max]:
 *      fl_stack_walk       a callback that counts the frames
 *      ...reading a root   a callback that reads each frame's reference
 *                          (fl_location_read), as a collector would
 *      unw_step            libunwind alone over the same frames:
 *                          unw_getcontext, unw_init_local, unw_step to the
 *                          end, nothing else
 */
#define UNW_LOCAL_ONLY
#include <errno.h>
#include <libunwind.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <faultline/deopt.h>
#include <faultline/dispatch.h>

#include "stats.h"
#include "synth.h"

int64_t ret_i64(int64_t x, bool go);
int64_t bh_load(int64_t *p);
uint64_t bw_frames(uint64_t ref, uint64_t n);

static int64_t (*volatile fn_deopt)(int64_t, bool) = ret_i64;
static int64_t (*volatile fn_load)(int64_t *) = bh_load;

static void die(const char *what, int err, const char *msg)
{
	fprintf(stderr, "bench_deopt: %s: %s %s\n", what, strerror(-err), msg ? msg : "");
	exit(1);
}

/* ------------------------------------------------------------------------
 * 1. Lookups
 */

#define PER_FUNCTION 10u
#define FUNCTION_SPAN 0x200u

/*
 * A v3 stack map of n records, n / 10 functions from base, FUNCTION_SPAN
 * bytes apart; the records' addresses go to pcs[].
 */
static void make_stackmap(struct synth_buf *b, uint32_t n, uint64_t base, uint64_t *pcs)
{
	uint32_t funcs = n / PER_FUNCTION;

	memset(b, 0, sizeof(*b));
	synth_put(b, 3, 1);
	synth_put(b, 0, 1);
	synth_put(b, 0, 2);
	synth_put(b, funcs, 4);
	synth_put(b, 0, 4);
	synth_put(b, n, 4);
	for (uint32_t f = 0; f < funcs; f++) {
		synth_put(b, base + (uint64_t)f * FUNCTION_SPAN, 8);
		synth_put(b, 8 + 16 * (uint64_t)(f % 32), 8);
		synth_put(b, PER_FUNCTION, 8);
	}
	for (uint32_t r = 0; r < n; r++) {
		uint32_t nloc = 3 + r % 4, off = 16 + 40 * (r % PER_FUNCTION);

		pcs[r] = base + (uint64_t)(r / PER_FUNCTION) * FUNCTION_SPAN + off;
		synth_put(b, 0xABCDEF0Fu, 8);
		synth_put(b, off, 4);
		synth_put(b, 0, 2);
		synth_put(b, nloc, 2);
		for (uint32_t i = 0; i < nloc; i++) {
			if (i < 3)
				synth_loc(b, 4, 8, 0, i == 2 ? (int32_t)nloc - 3 : 0);
			else
				synth_loc(b, 3, 8, 7, 8 * (int32_t)i);
		}
		synth_pad8(b);
		synth_put(b, 0, 2);
		synth_put(b, 0, 2);
		synth_pad8(b);
	}
}

static void shuffle(uint64_t *v, size_t n)
{
	for (size_t i = n - 1; i > 0; i--) {
		size_t j = (size_t)random() % (i + 1);
		uint64_t t = v[i];

		v[i] = v[j];
		v[j] = t;
	}
}

static volatile uintptr_t sink;

static void lookups(int rounds)
{
	static const uint32_t sizes[] = { 1000, 10000, 100000, 1000000 };

	printf("1. fl_stackmap_record_at, ns per lookup: median of %d rounds [min .. max]\n",
	       rounds);
	printf("   %9s  %-26s  %-26s  %-26s\n", "records", "hot (same address)",
	       "random", "fl_stackmap_find_pc random");
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		uint32_t n = sizes[s];
		size_t span = (size_t)(n / PER_FUNCTION) * FUNCTION_SPAN;
		/* An address range of our own for the fake code: never anyone's text. */
		void *code = mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
				  -1, 0);
		uint64_t *pcs = malloc(n * sizeof(*pcs));
		double hot[64], rnd[64], bin[64];
		struct fl_stackmap *table = NULL;
		struct synth_buf b;
		struct fl_diag d = { 0 };
		int id, err;

		if (code == MAP_FAILED || !pcs)
			die("memory", -ENOMEM, NULL);
		make_stackmap(&b, n, (uint64_t)(uintptr_t)code, pcs);
		FL_OPTS(fl_jit_reg, r, .name = "bench", .stackmap = b.p, .stackmap_size = b.len,
			.code_start = (uint64_t)(uintptr_t)code, .code_size = span);
		id = fl_jit_register(&r, &d);
		if (id < 0)
			die("fl_jit_register", id, d.msg);
		err = fl_stackmap_parse(b.p, b.len, 0, &table, &d);
		if (err)
			die("fl_stackmap_parse", err, d.msg);
		shuffle(pcs, n);
		for (int k = 0; k < rounds && k < 64; k++) {
			struct fl_stackmap_at at = { .sz = sizeof(at) };
			uint32_t reps = n < 100000 ? 100000 : n;
			double t0;

			t0 = bench_now();
			for (uint32_t i = 0; i < reps; i++) {
				if (fl_stackmap_record_at(pcs[0], &at))
					die("fl_stackmap_record_at", -ENOENT, "hot");
				sink = (uintptr_t)at.record;
			}
			hot[k] = (bench_now() - t0) * 1e9 / reps;
			t0 = bench_now();
			for (uint32_t i = 0; i < reps; i++) {
				if (fl_stackmap_record_at(pcs[i % n], &at))
					die("fl_stackmap_record_at", -ENOENT, "random");
				sink = (uintptr_t)at.record;
			}
			rnd[k] = (bench_now() - t0) * 1e9 / reps;
			t0 = bench_now();
			for (uint32_t i = 0; i < reps; i++)
				sink = (uintptr_t)fl_stackmap_find_pc(table, pcs[i % n]);
			bin[k] = (bench_now() - t0) * 1e9 / reps;
		}
		int m = rounds < 64 ? rounds : 64;
		double mh = bench_median(hot, (size_t)m), mr = bench_median(rnd, (size_t)m);
		double mb = bench_median(bin, (size_t)m);
		char c1[40], c2[40], c3[40];

		/* bench_median sorted them: [0] is the min, [m - 1] the max. */
		snprintf(c1, sizeof(c1), "%.1f [%.1f .. %.1f]", mh, hot[0], hot[m - 1]);
		snprintf(c2, sizeof(c2), "%.1f [%.1f .. %.1f]", mr, rnd[0], rnd[m - 1]);
		snprintf(c3, sizeof(c3), "%.1f [%.1f .. %.1f]", mb, bin[0], bin[m - 1]);
		printf("   %9u  %-26s  %-26s  %-26s\n", n, c1, c2, c3);
		fl_stackmap_free(table);
		fl_jit_unregister(id);
		free(b.p);
		free(pcs);
		munmap(code, span);
	}
}

/* ------------------------------------------------------------------------
 * 2. Round trips
 */

static void handler(const struct fl_deopt_state *st, struct fl_deopt_return *ret, void *ctx)
{
	(void)ctx;
	ret->rax = st->values[0].value + 1;
}

#define CALLS 100000

static void round_trips(int rounds)
{
	double deopt[64], plain[64], fault[64];
	int m = rounds < 64 ? rounds : 64;
	int64_t sum = 0;

	for (int k = 0; k < m; k++) {
		double t0 = bench_now();

		for (int i = 0; i < CALLS; i++)
			sum += fn_deopt(i, true);
		deopt[k] = (bench_now() - t0) * 1e9 / CALLS;
		t0 = bench_now();
		for (int i = 0; i < CALLS; i++)
			sum += fn_deopt(i, false);
		plain[k] = (bench_now() - t0) * 1e9 / CALLS;
		t0 = bench_now();
		for (int i = 0; i < CALLS; i++)
			sum += fn_load(NULL);
		fault[k] = (bench_now() - t0) * 1e9 / CALLS;
	}
	/* Each deopt returned i + 1, each plain call i, each fault -1. */
	if (sum != (int64_t)m * CALLS * (CALLS - 1))
		die("round trips", -EINVAL, "wrong results");
	double md = bench_median(deopt, (size_t)m), mp = bench_median(plain, (size_t)m);
	double mf = bench_median(fault, (size_t)m);

	printf("\n2. Round trips, ns per call: median of %d rounds of %d calls [min .. max]\n", m,
	       CALLS);
	printf("   deoptimization (guard failure to value back)  %8.1f [%.1f .. %.1f]\n", md,
	       deopt[0], deopt[m - 1]);
	printf("   plain call (the same function, no failure)     %8.1f [%.1f .. %.1f]\n", mp,
	       plain[0], plain[m - 1]);
	printf("   fault dispatch (a failed implicit null check)  %8.1f [%.1f .. %.1f]\n", mf,
	       fault[0], fault[m - 1]);
	printf("   deoptimization / plain call: %.0fx; deoptimization / fault dispatch: %.2fx\n",
	       md / mp, md / mf);
}

/* ------------------------------------------------------------------------
 * 3. Stack walks
 */

#define WALK_FRAMES 100
#define WALKS 200
/* bw_frames' reference: a value to read, not an object (nothing moves here). */
#define WALK_REF 0x5eed

static int walk_rounds;

struct walk_count {
	unsigned frames;
	bool read;		/* each frame's reference, too */
	uint64_t refs;		/* the references read that were WALK_REF */
};

static int count_frame(const struct fl_walk_frame *f, void *ctx)
{
	struct walk_count *c = ctx;
	uint64_t v;

	c->frames++;
	if (c->read) {
		/* Locations 0..2: constants; then its (base, derived) pair. */
		if (f->at->record->num_locations != 5 ||
		    fl_location_read(f->regs, &f->at->record->locations[3], &v))
			return -EIO;
		c->refs += v == WALK_REF;
	}
	return 0;
}

/* Steps libunwind through the stack from here to its end; returns the frames. */
static unsigned bare_walk(void)
{
	unw_context_t uc;
	unw_cursor_t c;
	unsigned n = 1;

	unw_getcontext(&uc);
	if (unw_init_local(&c, &uc) < 0)
		die("unw_init_local", -EIO, NULL);
	while (unw_step(&c) > 0)
		n++;
	return n;
}

static double walk_fl(bool read, unsigned *frames)
{
	double t0 = bench_now();

	for (int i = 0; i < WALKS; i++) {
		struct walk_count c = { .read = read };
		int err = fl_stack_walk(NULL, count_frame, &c);

		if (err)
			die("fl_stack_walk", err, NULL);
		if (c.frames != WALK_FRAMES || (read && c.refs != WALK_FRAMES))
			die("fl_stack_walk", -EINVAL, "did not yield every bw_frames frame");
		*frames = c.frames;
	}
	return (bench_now() - t0) * 1e9 / WALKS;
}

/* bw_frames' innermost frame calls it: the walks, with the frames below. */
void bench_walk_bottom(void);
void bench_walk_bottom(void)
{
	double fl[64], rd[64], bare[64];
	int m = walk_rounds < 64 ? walk_rounds : 64;
	unsigned yielded = 0, stepped = 0;

	for (int k = 0; k < m; k++) {
		double t0;

		fl[k] = walk_fl(false, &yielded);
		rd[k] = walk_fl(true, &yielded);
		t0 = bench_now();
		for (int i = 0; i < WALKS; i++)
			stepped = bare_walk();
		bare[k] = (bench_now() - t0) * 1e9 / WALKS;
	}
	double mf = bench_median(fl, (size_t)m), mr = bench_median(rd, (size_t)m);
	double mb = bench_median(bare, (size_t)m);

	printf("\n3. A stack walk of %u frames of registered code (%u frames to the stack's end):\n"
	       "   ns per walk and per frame, median of %d rounds of %d walks [min .. max]\n",
	       yielded, stepped, m, WALKS);
	printf("   fl_stack_walk, counting frames      %9.0f [%.0f .. %.0f]  %6.1f per frame\n",
	       mf, fl[0], fl[m - 1], mf / stepped);
	printf("   fl_stack_walk, reading each root    %9.0f [%.0f .. %.0f]  %6.1f per frame\n",
	       mr, rd[0], rd[m - 1], mr / stepped);
	printf("   libunwind unw_step alone            %9.0f [%.0f .. %.0f]  %6.1f per frame\n",
	       mb, bare[0], bare[m - 1], mb / stepped);
	printf("   fl_stack_walk / unw_step: %.2fx\n", mf / mb);
}

static void walks(int rounds)
{
	walk_rounds = rounds;
	if (bw_frames(WALK_REF, WALK_FRAMES - 1) != (uint64_t)WALK_REF * WALK_FRAMES)
		die("bw_frames", -EINVAL, "wrong result");
}

int main(int argc, char **argv)
{
	FL_OPTS(fl_init_opts, o, .flags = FL_INIT_NO_AGENT);
	int rounds = 15, err;

	if (argc == 3 && strcmp(argv[1], "-n") == 0)
		rounds = atoi(argv[2]);
	if (rounds < 1)
		rounds = 1;
	err = fl_init(&o);
	if (err)
		die("fl_init", err, NULL);
	err = fl_deopt_set_handler(handler, NULL);
	if (err)
		die("fl_deopt_set_handler", err, NULL);
	srandom(1);
	lookups(rounds);
	round_trips(rounds);
	walks(rounds);
	return 0;
}
