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
 */
#include <errno.h>
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

#define CALLS 51
#define SITES 100

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
	return 0;
}
