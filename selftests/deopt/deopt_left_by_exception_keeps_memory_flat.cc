// SPDX-License-Identifier: MIT
/*
 * A deopt handler may leave by a C++ exception (the runtime's resumed code
 * throws): 100,000 deoptimizations of a record with 70 deopt values (more
 * than fit on the stack: lib/deopt/values.c maps their array), each left
 * by a throw caught below the deoptimized frame's caller, keep the
 * process's RSS flat; a destructor on the way runs; the values are as the
 * record says.
 *   deopt_left_by_exception_keeps_memory_flat [ROUNDS]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <stdexcept>

#include <faultline/deopt.h>
#include <faultline/dispatch.h>
#include <faultline/log.h>

extern "C" int64_t many(int64_t x, bool go);

namespace {

const char *name = "deopt_left_by_exception_keeps_memory_flat";
const uint32_t num_values = 70;
/*
 * RSS may grow by this much: a page leaked per deoptimization is 400 MB.
 * Under ASan its quarantine keeps the freed exceptions too (a third of
 * that, here).
 */
#if defined(__SANITIZE_ADDRESS__)
const long bound_kib = 192 * 1024;
#else
const long bound_kib = 32 * 1024;
#endif
int64_t want_x;
long destroyed;

[[noreturn]] void fail(const char *what, long a = 0, long b = 0)
{
	fprintf(stderr, "FAIL %s: %s (%ld, %ld)\n", name, what, a, b);
	exit(1);
}

void log_cb(enum fl_log_level level, const char *msg, void *ctx)
{
	(void)ctx;
	if (level <= FL_LOG_WARN)
		fprintf(stderr, "libfaultline: %s\n", msg);
}

long rss_kib()
{
	long pages = 0, rss = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (!f || fscanf(f, "%ld %ld", &pages, &rss) != 2)
		fail("cannot read /proc/self/statm");
	fclose(f);
	return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

struct resumed_code_threw : std::runtime_error {
	int64_t x;
	explicit resumed_code_threw(int64_t v) : std::runtime_error("resumed code threw"), x(v) {}
};

struct counted {
	~counted() { destroyed++; }
};

void handler(const struct fl_deopt_state *st, struct fl_deopt_return *, void *)
{
	counted c;

	if (st->num_values != num_values)
		fail("deopt values", st->num_values, num_values);
	for (uint32_t i = 0; i < num_values; i++)
		if ((int64_t)st->values[i].value != want_x + 7 * (int64_t)i + 1)
			fail("a deopt value is wrong", i, (long)st->values[i].value);
	throw resumed_code_threw(want_x);
}

void run(long rounds)
{
	for (long i = 0; i < rounds; i++) {
		want_x = i;
		try {
			many(i, true);
			fail("the deoptimization returned", i);
		} catch (const resumed_code_threw &e) {
			if (e.x != i)
				fail("caught the wrong exception", e.x, i);
		}
	}
}

}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 100000, before, after;
	struct fl_init_opts o = {};
	int err;

	o.sz = sizeof(o);
	o.flags = FL_INIT_NO_AGENT;
	fl_set_log(log_cb, nullptr);
	if ((err = fl_init(&o)) != 0)
		fail("fl_init", err);
	if (fl_deopt_set_handler(handler, nullptr) != 0)
		fail("fl_deopt_set_handler");
	if (many(5, false) != 5)
		fail("many(5, false) is not 5");
	run(1000);
	before = rss_kib();
	run(rounds);
	after = rss_kib();
	printf("  %ld deoptimizations left by a C++ exception: RSS %ld KiB before, %ld KiB after\n",
	       rounds, before, after);
	if (destroyed != rounds + 1000)
		fail("destructors run in the handler", destroyed, rounds + 1000);
	if (after - before >= bound_kib)
		fail("RSS grew (KiB, over the rounds)", after - before, rounds);
	printf("PASS %s\n", name);
	return 0;
}
