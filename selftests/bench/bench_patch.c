// SPDX-License-Identifier: MIT
/*
 * bench_patch [-n BATCHES]: the cost of code patching (lib/patch/), figures
 * only.
 *
 * 1. Latency of one fl_patch_text call, with 1, 2 and 8 other threads
 *    running the code being patched (calling its functions in a loop):
 *    one site and 100 sites in one call by the int3 protocol, and one
 *    site over two instructions (the thread handshake).  Also one
 *    membarrier(SYNC_CORE) alone, the protocol's unit of cost (it is done
 *    three times a call).  Median of BATCHES batches of 51 calls (the
 *    median call of each) [min .. max].
 * 2. The cost for running threads of a patch storm: calls per second of a
 *    hot function in 1 thread while another thread patches unrelated code
 *    (another page) back to back, against no patching, rounds of 0.2 s
 *    interleaved; the ratio is the median of the per-round ratios.
 * 3. One change that moves boundaries (the handshake), median and p90 of
 *    MOVES changes, side by side: with 10 threads calling the code, and in
 *    a process of 1,000 threads, 990 of them blocked in a futex wait and
 *    the same 10 calling (issue 26: blocked threads should cost nothing).
 *    The callers pause between calls, so that ten of them are all outside
 *    the code often enough.
 * 4. The EINTR race of selftests/patch/eintr_race_is_counted, smaller:
 *    RACE_MOVES changes that move boundaries while a thread loops
 *    poll(NULL, 0, 1) and another nanosleep(100 us); how many calls
 *    failed with EINTR (the goal is 0).
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <linux/membarrier.h>
#include <time.h>
#include <unistd.h>

#include <faultline/dispatch.h>
#include <faultline/patch.h>

#include "stats.h"

#define CALLS 51
#define SITES 100
/* Part 3: changes timed in each configuration; its threads. */
#define MOVES 201
#define MOVE_CALLERS 10
#define MOVE_THREADS 1000
#define MOVE_STACK (64 * 1024)
/* Part 4: changes. */
#define RACE_MOVES 1000

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return v[n / 2];
}

static void die(const char *what, int err, const char *msg)
{
	fprintf(stderr, "bench_patch: %s: %s %s\n", what, strerror(-err), msg ? msg : "");
	exit(1);
}

/*
 * A page of SITES functions, 16 bytes apart, each
 *   +0: mov $v,%eax (5 bytes)   +5: nop   +6: ret
 * version v is 1 or 2; +0..+6 over two instructions for the handshake.
 */
static uint8_t *code_page(void)
{
	uint8_t *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		die("mmap", -errno, NULL);
	memset(p, 0xcc, 4096);
	for (int i = 0; i < SITES; i++) {
		static const uint8_t f[] = { 0xb8, 1, 0, 0, 0, 0x90, 0xc3 };

		memcpy(p + 16 * i, f, sizeof(f));
	}
	if (mprotect(p, 4096, PROT_READ | PROT_EXEC) != 0)
		die("mprotect", -errno, NULL);
	return p;
}

/* [0]: one site, [1]: 100 sites, [2]: the handshake's site, [3]: not patched. */
static uint8_t *pages[4];
static _Atomic int stop;
static _Atomic uint64_t calls;

static void *runner(void *arg)
{
	uint64_t n = 0;

	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		for (int pg = 0; pg < 3; pg++)
			for (int i = 0; i < SITES; i += 33)
				((int (*)(void))(void *)(pages[pg] + 16 * i))();
		n++;
	}
	atomic_fetch_add(&calls, n);
	return NULL;
}

static const uint8_t v1[6] = { 0xb8, 1, 0, 0, 0, 0x90 };
static const uint8_t v2[6] = { 0xb8, 2, 0, 0, 0, 0x90 };
/* Over two instructions: xor %eax,%eax; inc %eax; nop; nop (returns 1). */
static const uint8_t v3[6] = { 0x31, 0xc0, 0xff, 0xc0, 0x90, 0x90 };

enum kind { ONE, BATCH, HANDSHAKE, MEMBARRIER, KINDS };

/* One call of kind k, timed; flips the version it patches. */
static double one(enum kind k)
{
	static bool flipped[KINDS];
	struct fl_patch p[SITES];
	struct fl_diag d = { 0 };
	const uint8_t *from = flipped[k] ? (k == HANDSHAKE ? v3 : v2) : v1;
	const uint8_t *to = flipped[k] ? v1 : (k == HANDSHAKE ? v3 : v2);
	size_t n = k == BATCH ? SITES : 1;
	double t0, t;
	int err;

	if (k == MEMBARRIER) {
		t0 = now();
		syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0);
		return now() - t0;
	}
	for (size_t i = 0; i < n; i++)
		p[i] = (struct fl_patch){ .addr = pages[k] + 16 * i, .old_bytes = from,
					  .new_bytes = to, .len = k == HANDSHAKE ? 6 : 5 };
	t0 = now();
	err = fl_patch_text(p, n, &d);
	t = now() - t0;
	if (err)
		die("fl_patch_text", err, d.msg);
	flipped[k] = !flipped[k];
	return t;
}

static void latency(int batches)
{
	static const int nthreads[] = { 1, 2, 8 };
	static const char *names[KINDS] = {
		"1 site (int3 protocol)", "100 sites in one call",
		"1 site over 2 instructions (handshake)", "membarrier(SYNC_CORE) alone",
	};
	double *med = calloc((size_t)batches, sizeof(double)), lat[CALLS];

	printf("1. Latency of one call, us: median of %d batches of %d calls (the median\n"
	       "call of each) [min .. max], while N other threads call the patched code.\n",
	       batches, CALLS);
	printf("  %-42s %22s %22s %22s\n", "", "N = 1", "N = 2", "N = 8");
	for (int k = 0; k < KINDS; k++) {
		printf("  %-42s", names[k]);
		for (size_t t = 0; t < sizeof(nthreads) / sizeof(nthreads[0]); t++) {
			pthread_t th[8];
			double lo, hi;

			atomic_store(&stop, 0);
			for (int i = 0; i < nthreads[t]; i++)
				pthread_create(&th[i], NULL, runner, NULL);
			for (int b = 0; b < batches; b++) {
				for (int c = 0; c < CALLS; c++)
					lat[c] = one((enum kind)k);
				med[b] = median(lat, CALLS);
			}
			atomic_store(&stop, 1);
			for (int i = 0; i < nthreads[t]; i++)
				pthread_join(th[i], NULL);
			qsort(med, (size_t)batches, sizeof(double), cmp_double);
			lo = med[0];
			hi = med[batches - 1];
			printf(" %7.1f [%5.1f .. %5.1f]", med[batches / 2] * 1e6, lo * 1e6, hi * 1e6);
		}
		printf("\n");
	}
	free(med);
}

/* Calls per second of the hot function over 0.2 s, patching or not. */
static void *hot(void *arg)
{
	int (*fn)(void) = (int (*)(void))(void *)pages[3];
	uint64_t n = 0;

	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		fn();
		n++;
	}
	atomic_store(&calls, n);
	return NULL;
}

static void storm(int rounds)
{
	double *with = calloc((size_t)rounds, sizeof(double));
	double *without = calloc((size_t)rounds, sizeof(double));
	double *ratio = calloc((size_t)rounds, sizeof(double));
	uint64_t patches = 0;

	for (int r = 0; r < rounds; r++)
		for (int storming = r & 1, pass = 0; pass < 2; pass++, storming = !storming) {
			pthread_t th;
			double t0, t;

			atomic_store(&stop, 0);
			pthread_create(&th, NULL, hot, NULL);
			t0 = now();
			while ((t = now() - t0) < 0.2)
				if (storming) {
					one(ONE);
					patches++;
				}
			atomic_store(&stop, 1);
			pthread_join(th, NULL);
			(storming ? with : without)[r] = (double)atomic_load(&calls) / t;
		}
	for (int r = 0; r < rounds; r++)
		ratio[r] = with[r] / without[r];
	printf("\n2. A patch storm's cost for a running thread: calls per second of a hot\n"
	       "function (another page) while one thread patches back to back, against\n"
	       "no patching; %d rounds of 0.2 s each, interleaved (%llu patches).\n", rounds,
	       (unsigned long long)patches);
	printf("  no patching            %8.1f Mcalls/s\n", median(without, rounds) / 1e6);
	printf("  during a patch storm   %8.1f Mcalls/s\n", median(with, rounds) / 1e6);
	printf("  ratio                  %8.3fx (median of the per-round ratios)\n",
	       median(ratio, rounds));
	free(with);
	free(without);
	free(ratio);
}

/* Part 3's code: pages[2]'s first function, flipped between v1 and v3. */
static _Atomic uint32_t released;

static void *move_caller(void *arg)
{
	int (*fn)(void) = (int (*)(void))(void *)pages[2];

	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		fn();
		for (int i = 0; i < 64; i++)
			__builtin_ia32_pause();
	}
	return NULL;
}

static void *blocked(void *arg)
{
	(void)arg;
	while (!atomic_load(&released))
		syscall(SYS_futex, &released, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
	return NULL;
}

/* MOVES handshakes with the threads running: their median and p90, us. */
static void moves_timed(double *med, double *p90)
{
	static double lat[MOVES];

	for (int i = 0; i < MOVES; i++)
		lat[i] = one(HANDSHAKE);
	*p90 = bench_percentile(lat, MOVES, 0.9) * 1e6;
	*med = bench_median(lat, MOVES) * 1e6;
}

static void blocked_threads(void)
{
	static pthread_t callers[MOVE_CALLERS], sleepers[MOVE_THREADS - MOVE_CALLERS];
	double med[2], p90[2];
	pthread_attr_t attr;
	char label[64];
	int nblocked = 0;

	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, MOVE_STACK);
	atomic_store(&stop, 0);
	for (int i = 0; i < MOVE_CALLERS; i++) {
		int err = pthread_create(&callers[i], &attr, move_caller, NULL);

		if (err)
			die("pthread_create", -err, NULL);
	}
	moves_timed(&med[0], &p90[0]);
	for (; nblocked < MOVE_THREADS - MOVE_CALLERS; nblocked++)
		if (pthread_create(&sleepers[nblocked], &attr, blocked, NULL) != 0)
			break;
	moves_timed(&med[1], &p90[1]);
	atomic_store(&stop, 1);
	atomic_store(&released, 1);
	syscall(SYS_futex, &released, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
	for (int i = 0; i < MOVE_CALLERS; i++)
		pthread_join(callers[i], NULL);
	for (int i = 0; i < nblocked; i++)
		pthread_join(sleepers[i], NULL);
	pthread_attr_destroy(&attr);
	printf("\n3. One change that moves boundaries (the handshake), us over %d changes,\n"
	       "with %d threads calling the code, and with %d more threads blocked in a\n"
	       "futex wait.\n", MOVES, MOVE_CALLERS, nblocked);
	printf("  %-44s %9s %9s\n", "", "median", "p90");
	snprintf(label, sizeof(label), "%d threads, calling the code", MOVE_CALLERS);
	printf("  %-44s %9.1f %9.1f\n", label, med[0], p90[0]);
	snprintf(label, sizeof(label), "%d threads, %d blocked, %d calling", nblocked + MOVE_CALLERS,
		 nblocked, MOVE_CALLERS);
	printf("  %-44s %9.1f %9.1f\n", label, med[1], p90[1]);
}

static _Atomic uint64_t race_calls, race_eintr;

static void *race_loop(void *arg)
{
	struct timespec us100 = { 0, 100000 };
	bool polls = arg != NULL;

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		int r = polls ? poll(NULL, 0, 1) : nanosleep(&us100, NULL);

		atomic_fetch_add_explicit(&race_calls, 1, memory_order_relaxed);
		if (r == -1 && errno == EINTR)
			atomic_fetch_add_explicit(&race_eintr, 1, memory_order_relaxed);
	}
	return NULL;
}

static void eintr_race(void)
{
	pthread_t th[2];

	atomic_store(&stop, 0);
	pthread_create(&th[0], NULL, race_loop, (void *)1);
	pthread_create(&th[1], NULL, race_loop, NULL);
	for (int i = 0; i < RACE_MOVES; i++)
		one(HANDSHAKE);
	atomic_store(&stop, 1);
	pthread_join(th[0], NULL);
	pthread_join(th[1], NULL);
	printf("\n4. The EINTR race: %d changes that move boundaries while a thread loops\n"
	       "poll(NULL, 0, 1) and another nanosleep(100 us).\n", RACE_MOVES);
	printf("  EINTR: %llu in %llu calls\n", (unsigned long long)race_eintr,
	       (unsigned long long)race_calls);
}

int main(int argc, char **argv)
{
	FL_OPTS(fl_init_opts, o, .flags = FL_INIT_NO_DISCOVERY | FL_INIT_NO_AGENT);
	struct fl_diag d = { 0 };
	int batches = 15, opt, err;

	while ((opt = getopt(argc, argv, "n:")) != -1)
		if (opt == 'n')
			batches = atoi(optarg) > 0 ? atoi(optarg) : 1;
	err = fl_init(&o);
	if (err)
		die("fl_init", err, NULL);
	err = fl_patch_enable(&d);
	if (err) {
		printf("code patching unavailable here: %s\n", d.msg);
		return 0;
	}
	for (int i = 0; i < 4; i++)
		pages[i] = code_page();
	latency(batches);
	storm(batches);
	blocked_threads();
	eintr_race();
	return 0;
}
