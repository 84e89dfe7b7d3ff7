// SPDX-License-Identifier: MIT
/*
 * Many threads deoptimize at once, each with its own values, while another
 * thread registers and unregisters JIT stack maps (publishing snapshots
 * under the lookups): every deoptimization returns its own thread's value.
 *   threads_deopt_at_once [ROUNDS]
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include "common.h"

#define THREADS 8

static atomic_uint handled;
static atomic_bool stop;
static unsigned rounds = 20000;

static void handler(const struct fl_deopt_state *st, struct fl_deopt_return *ret, void *ctx)
{
	char why[256];

	(void)ctx;
	if (!ret_handle(st, ret, why, sizeof(why)))
		t_fail("handler: %s", why);
	atomic_fetch_add_explicit(&handled, 1, memory_order_relaxed);
}

static void *run(void *arg)
{
	int64_t base = (int64_t)(intptr_t)arg << 40;

	for (unsigned i = 0; i < rounds; i++) {
		int64_t x = base + i;
		double d = (double)x / 7.0;

		t_check(ret_i64(x, true) == ret_i64_expected(x), "thread %lld: i64 %lld",
			(long long)(base >> 40), (long long)x);
		t_check(ret_f64(d, true) == ret_f64_expected(d), "thread %lld: f64",
			(long long)(base >> 40));
	}
	return NULL;
}

/*
 * A v3 stack map of one function at code_start with one record, for a
 * JIT registration that comes and goes.
 */
static void churn_map(uint8_t *m, uint64_t code_start)
{
	memset(m, 0, 64);
	m[0] = 3;
	m[4] = 1;		/* NumFunctions */
	m[12] = 1;		/* NumRecords */
	memcpy(m + 16, &code_start, 8);
	m[24] = 16;		/* StackSize */
	m[32] = 1;		/* RecordCount */
	m[40] = 7;		/* ID */
	m[48] = 4;		/* InstrOffset */
	/* flags, NumLocations 0; at 56 padding, NumLiveOuts 0; 64 bytes */
}

static void *churn(void *arg)
{
	static uint8_t code[64];
	uint8_t map[64];
	unsigned n = 0;

	(void)arg;
	churn_map(map, (uint64_t)(uintptr_t)code);
	while (!atomic_load(&stop)) {
		FL_OPTS(fl_jit_reg, r, .name = "churn", .stackmap = map, .stackmap_size = 64,
			.code_start = (uint64_t)(uintptr_t)code, .code_size = sizeof(code));
		struct fl_diag d = { 0 };
		int id = fl_jit_register(&r, &d);

		t_check(id > 0, "fl_jit_register: %d %s", id, d.msg);
		t_check(fl_jit_unregister(id) == 0, "fl_jit_unregister");
		n++;
	}
	return (void *)(uintptr_t)n;
}

int main(int argc, char **argv)
{
	pthread_t t[THREADS], c;
	void *churned;

	t_start("threads_deopt_at_once");
	if (argc > 1)
		rounds = (unsigned)strtoul(argv[1], NULL, 0);
	t_check(fl_deopt_set_handler(handler, NULL) == 0, "fl_deopt_set_handler");
	t_check(pthread_create(&c, NULL, churn, NULL) == 0, "pthread_create");
	for (int i = 0; i < THREADS; i++)
		t_check(pthread_create(&t[i], NULL, run, (void *)(intptr_t)(i + 1)) == 0,
			"pthread_create");
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	atomic_store(&stop, true);
	pthread_join(c, &churned);
	t_check(atomic_load(&handled) == 2u * THREADS * rounds, "%u deoptimizations handled, not %u",
		atomic_load(&handled), 2u * THREADS * rounds);
	printf("PASS %s: %u threads x %u x 2 deoptimizations, %lu registrations meanwhile\n",
	       t_name, THREADS, rounds, (unsigned long)(uintptr_t)churned);
	return 0;
}
