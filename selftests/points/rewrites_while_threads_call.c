// SPDX-License-Identifier: MIT
/*
 * Patch points rewritten while 4 threads call them: the eight patch points
 * of rewrites_while_threads_call.ll (13, 16, 32 and 64 bytes, with a call
 * target and without) are rewritten argv[1] times in all (default 100,000),
 * round robin, by ID.  The versions, and what a call returns with each:
 *   A  movabsq $pt_one, %r11; callq *%r11    1   (llc-14's code)
 *   B  movabsq $pt_two, %r11; callq *%r11    2
 *   C  mov $3, %eax                          3
 *   D  mov $4, %eax                          4
 *   E  xor %eax, %eax; mov $5, %al           5
 *   F  xor %eax, %eax; mov $6, %al           6
 * all padded with nops to the region's size.  A region goes back and forth
 * within a pair (A-B, C-D, E-F: one instruction differs, the int3 path)
 * and every 25th rewrite moves on to the next pair (the instruction
 * boundaries move: the thread handshake).  Regions with a call target go
 * A-B, C-D, E-F, A-B...; regions without one start at C (the compiled nops
 * return nothing) and go C-D, E-F, C-D...
 *
 * Every call must return what a version written around the time of the
 * call returns: a thread reads the region's write counter before and after
 * its call, and the value must be that of the version before the first
 * write it saw begin or of a version written since.  A mix of two versions
 * returns something else or crashes.  The threads must have seen at least
 * two versions of every region.  At the end each region holds its last
 * version, fl_patchpoint_reset gives back llc-14's bytes, and the code runs
 * as compiled.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "common.h"

#define THREADS 4
#define REGIONS 8
#define VERSIONS 6
/* Rewrites within a pair before moving to the next pair. */
#define PAIR_RUN 25

int64_t pt_one(void);
int64_t pt_two(void);
int64_t pp_call13(void), pp_call16(void), pp_call32(void), pp_call64(void);
int64_t pp_nops13(void), pp_nops16(void), pp_nops32(void), pp_nops64(void);

int64_t pt_one(void)
{
	return 1;
}

int64_t pt_two(void)
{
	return 2;
}

static int64_t (*const fns[REGIONS])(void) = {
	pp_call13, pp_call16, pp_call32, pp_call64, pp_nops13, pp_nops16, pp_nops32, pp_nops64,
};
static const uint32_t sizes[REGIONS] = { 13, 16, 32, 64, 13, 16, 32, 64 };
/* The IDs in the .ll: region r is ID r + 1. */
#define REGION_ID(r) ((uint64_t)(r) + 1)
#define HAS_CALL(r) ((r) < 4)

static uint8_t version_bytes[VERSIONS][T_CALL_R11_LEN];
static size_t version_len[VERSIONS];

/*
 * The version region r holds after its k-th write (k = 0: before any
 * write of the loop).  Pairs: 0 = A-B, 1 = C-D, 2 = E-F.
 */
static int version_at(int r, uint64_t k)
{
	int npairs = HAS_CALL(r) ? 3 : 2;
	int pair = (int)((k / PAIR_RUN) % (uint64_t)npairs) + (HAS_CALL(r) ? 0 : 1);

	return pair * 2 + (int)(k & 1);
}

/* Before write k of region r the main thread sets writes[r] = k. */
static _Atomic uint64_t writes[REGIONS];
static _Atomic int stop;
static _Atomic uint64_t calls, wrong, wide, seen[REGIONS][VERSIONS];
/*
 * A boundary move needs no caller inside the region.  When callers stay in
 * its way through every try (under QEMU's TCG on a loaded host they can:
 * check-vm failed so), the main thread holds them at the top of their
 * loop (hold), waits until all are there (parked), writes, and lets them
 * go: that write is made with the threads parked, outside every region,
 * and counted (held); most moves must still be made with them calling.
 */
static _Atomic int hold, parked;
static long held;

static void *caller(void *arg)
{
	uint64_t n = 0;
	int r = (int)(uintptr_t)arg % REGIONS;

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		/* seq_cst, as the main thread's store of hold and its loads of parked. */
		if (atomic_load(&hold)) {
			atomic_fetch_add(&parked, 1);
			while (atomic_load(&hold) && !atomic_load(&stop))
				sched_yield();
			atomic_fetch_sub(&parked, 1);
			continue;
		}
		/* Pairs with the main thread's release before write k. */
		uint64_t k0 = atomic_load_explicit(&writes[r], memory_order_acquire);
		int64_t v = fns[r]();
		uint64_t k1 = atomic_load_explicit(&writes[r], memory_order_acquire);
		bool ok = false;

		n++;
		if (v >= 1 && v <= VERSIONS) {
			/* Versions k0 - 1 .. k1; far apart, any version of the region. */
			uint64_t from = k0 ? k0 - 1 : 0;

			if (k1 - from > 4 * PAIR_RUN) {
				atomic_fetch_add_explicit(&wide, 1, memory_order_relaxed);
				ok = HAS_CALL(r) || v >= 3;
			}
			for (uint64_t k = from; !ok && k <= k1; k++)
				ok = version_at(r, k) == v - 1;
		}
		if (ok)
			atomic_fetch_add_explicit(&seen[r][v - 1], 1, memory_order_relaxed);
		else if (atomic_fetch_add(&wrong, 1) < 5)
			fprintf(stderr, "%s: region %d (%u bytes%s): a call between writes %llu and %llu returned %lld\n",
				t_name, r, sizes[r], HAS_CALL(r) ? ", call" : "", (unsigned long long)k0,
				(unsigned long long)k1, (long long)v);
		r = (r + 1) % REGIONS;
	}
	atomic_fetch_add(&calls, n);
	return NULL;
}

/*
 * Writes version v into region r; -EBUSY on a boundary move is tried again,
 * then with the callers held out of the way (threads: they run).
 */
static void write_version(int r, int v, bool moving, uint64_t k, long *busy, bool threads)
{
	struct fl_diag d = { 0 };
	int err = t_write_under_load(REGION_ID(r), version_bytes[v], version_len[v], moving, busy, &d);

	if (err == -EBUSY && moving && threads) {
		atomic_store(&hold, 1);
		while (atomic_load(&parked) < THREADS)
			sched_yield();
		err = fl_patchpoint_write(REGION_ID(r), NULL, version_bytes[v], version_len[v], NULL,
					  &d);
		atomic_store(&hold, 0);
		held++;
	}
	if (err) {
		atomic_store(&stop, 1);
		t_fail("region %d (%u bytes), write %llu (version %c): %d %s", r, sizes[r],
		       (unsigned long long)k, 'A' + v, err, d.msg);
	}
}

int main(int argc, char **argv)
{
	long rewrites = argc > 1 ? atol(argv[1]) : 100000;
	struct fl_point before[REGIONS], pt;
	pthread_t th[THREADS];
	long busy = 0, moves = 0;

	t_start(argv);
	t_call_r11(version_bytes[0], (const void *)pt_one);
	t_call_r11(version_bytes[1], (const void *)pt_two);
	version_len[0] = version_len[1] = T_CALL_R11_LEN;
	t_mov_eax(version_bytes[2], 3);
	t_mov_eax(version_bytes[3], 4);
	version_len[2] = version_len[3] = 5;
	for (int v = 4; v < 6; v++) {
		memcpy(version_bytes[v], (const uint8_t[]){ 0x31, 0xc0, 0xb0, (uint8_t)(v + 1) }, 4);
		version_len[v] = 4;
	}
	t_init_discovering();
	t_enable();

	for (int r = 0; r < REGIONS; r++) {
		t_read_point(REGION_ID(r), NULL, &before[r]);
		t_check(before[r].size == sizes[r], "region %d: %u bytes, compiled with %u", r,
			before[r].size, sizes[r]);
		if (HAS_CALL(r)) {
			t_check(memcmp(before[r].compiled, version_bytes[0], T_CALL_R11_LEN) == 0,
				"region %d: the compiled bytes are not movabsq $pt_one, %%r11; callq *%%r11", r);
			t_check(fns[r]() == 1, "region %d: the compiled code does not return 1", r);
		} else {
			/* Version C first: the compiled nops return nothing. */
			write_version(r, 2, true, 0, &busy, false);
			t_check(fns[r]() == 3, "region %d: version C does not return 3", r);
		}
	}

	for (uintptr_t i = 0; i < THREADS; i++)
		t_check(pthread_create(&th[i], NULL, caller, (void *)(i * 2)) == 0, "pthread_create");
	for (long i = 0; i < rewrites; i++) {
		int r = (int)(i % REGIONS);
		uint64_t k = atomic_load_explicit(&writes[r], memory_order_relaxed) + 1;
		int v = version_at(r, k);
		bool moving = version_at(r, k - 1) / 2 != v / 2;

		moves += moving;
		/* Pairs with the callers' acquire loads. */
		atomic_store_explicit(&writes[r], k, memory_order_release);
		write_version(r, v, moving, k, &busy, true);
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);

	/* The handshake is the test: a library that refused every move under load fails. */
	t_check(moves == 0 || 2 * held <= moves,
		"%ld of %ld boundary moves were made only with the callers held", held, moves);
	printf("%s: %ld rewrites (%ld moving boundaries, %ld of them refused -EBUSY first, %ld with the callers held), %llu calls, wrong %llu, %llu with a wide window\n",
	       t_name, rewrites, moves, busy, held, (unsigned long long)calls,
	       (unsigned long long)wrong, (unsigned long long)wide);
	for (int r = 0; r < REGIONS; r++) {
		int kinds = 0;

		printf("  region %d (%2u bytes%s):", r, sizes[r], HAS_CALL(r) ? ", call" : "");
		for (int v = 0; v < VERSIONS; v++) {
			printf(" %c %llu", 'A' + v, (unsigned long long)seen[r][v]);
			kinds += seen[r][v] != 0;
		}
		printf("\n");
		t_check(rewrites < 4 * REGIONS || kinds >= 2,
			"region %d: the threads saw only one version", r);
	}
	t_check(wrong == 0, "%llu calls returned what no version written then returns",
		(unsigned long long)wrong);

	for (int r = 0; r < REGIONS; r++) {
		int v = version_at(r, atomic_load(&writes[r]));
		struct fl_diag d = { 0 };
		int err;
		char prot[5];

		t_read_point(REGION_ID(r), NULL, &pt);
		t_check(memcmp(pt.now, version_bytes[v], version_len[v]) == 0,
			"region %d: does not hold its last version (%c)", r, 'A' + v);
		t_check(memcmp((const void *)(uintptr_t)pt.pc, pt.now, pt.size) == 0,
			"region %d: fl_patchpoint_read's bytes are not the code's", r);
		t_check(fns[r]() == v + 1, "region %d: the last version does not run", r);
		t_check(memcmp(pt.compiled, before[r].compiled, pt.size) == 0,
			"region %d: the compiled bytes changed", r);
		err = fl_patchpoint_reset(REGION_ID(r), NULL, &d);
		t_check(err == 0, "region %d: fl_patchpoint_reset: %d %s", r, err, d.msg);
		t_read_point(REGION_ID(r), NULL, &pt);
		t_check(memcmp(pt.now, before[r].compiled, pt.size) == 0 &&
			memcmp((const void *)(uintptr_t)pt.pc, before[r].compiled, pt.size) == 0,
			"region %d: fl_patchpoint_reset did not restore the compiled bytes", r);
		t_check(!(pt.flags & FL_POINT_CHANGED), "region %d: FL_POINT_CHANGED after a reset", r);
		t_check(!HAS_CALL(r) || fns[r]() == 1, "region %d: the compiled code does not run", r);
		t_prot((const void *)(uintptr_t)pt.pc, prot);
		t_check(strcmp(prot, "r-xp") == 0, "region %d: its page is %s after patching", r, prot);
	}
	printf("PASS %s\n", t_name);
	return 0;
}
