// SPDX-License-Identifier: MIT
/*
 * Many threads deoptimize at once, each with its own values, while another
 * thread registers and unregisters JIT stack maps and unwind information
 * (publishing snapshots under the lookups, changing libunwind's list under
 * the unwinding): every deoptimization returns its own thread's value.
 *   threads_deopt_at_once [ROUNDS]
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include "common.h"
#include "handmade.h"

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
 * Registers and unregisters "JIT code" (a static buffer) with a stack map
 * and an .eh_frame: the snapshot the deoptimizations look records up in
 * changes under them, and so does libunwind's list of registered code,
 * which their unwinding reads without a lock.
 */
static void *churn(void *arg)
{
	static uint8_t code[64];
	static struct eh eh;
	uint8_t map[64];
	unsigned n = 0;

	(void)arg;
	map_one_record(map, (uint64_t)(uintptr_t)code);
	eh_simple(&eh, (uint64_t)(uintptr_t)code, 16);
	while (!atomic_load(&stop)) {
		FL_OPTS(fl_jit_reg, r, .name = "churn", .stackmap = map, .stackmap_size = 64,
			.code_start = (uint64_t)(uintptr_t)code, .code_size = sizeof(code),
			.eh_frame = eh.b, .eh_frame_size = eh.n);
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
