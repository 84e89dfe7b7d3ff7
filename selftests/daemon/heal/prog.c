// SPDX-License-Identifier: MIT
/*
 * The process that selftests/daemon/heal heals (run.sh): heal.ll's five
 * implicit-check functions, called with NULL or with a valid pointer as
 * stdin says.
 *
 *   heal-prog
 *
 * Built with faultline (fl_init: FAULTLINE_HEAL_AFTER and the other
 * variables apply) or, -DNO_FAULTLINE, without it (heal-prog-shim: the
 * preload shim registers it); linked with heal.ll compiled with implicit
 * checks or without (the explicit build, whose output is the reference).
 * Prints "ready PID", then one line per command, each starting with the
 * command's number (1, 2, ...), so that a caller knows when it is done:
 *   null F N      calls function F (1..5, heal.ll's ids) with NULL N
 *                 times: "K null F N: hits H sum S" (H: the null block
 *                 ran H times in all; S: what the calls returned)
 *   valid F N     the same with valid pointers: "K valid F N: sum S"
 *   pattern N     N rounds of every function, NULL in a fixed pattern
 *                 about one call in four: "K pattern N: sum S nulls A/B/C/D/E"
 * Exits 0 at EOF.  Nothing printed depends on addresses.
 */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef NO_FAULTLINE
#include <faultline/dispatch.h>
#endif

#define FUNCS 5

int h_load_i32(int *p);
int h_load_i8(uint8_t *p);
int64_t h_load_i64_off(int64_t *p);
void h_store_i32(int *p, int x);
void h_rmw_add_i32(int *p, int x);
void null_hit(int id);

static _Atomic unsigned long hits[FUNCS + 1];

/* heal.ll's null blocks. */
void null_hit(int id)
{
	if (id > 0 && id <= FUNCS)
		atomic_fetch_add_explicit(&hits[id], 1, memory_order_relaxed);
}

static int words[64];
static uint8_t bytes[64];
static int64_t far[600];

/* Calls function f once, with NULL or a valid pointer; returns what it returned or stored. */
static uint64_t call(int f, int null, int i)
{
	int *w = null ? NULL : &words[i % 64];

	switch (f) {
	case 1:
		return (uint64_t)h_load_i32(w);
	case 2:
		return (uint64_t)h_load_i8(null ? NULL : &bytes[i % 64]);
	case 3:
		return (uint64_t)h_load_i64_off(null ? NULL : &far[i % 100]);
	case 4:
		h_store_i32(w, i);
		return null ? 0 : (uint64_t)words[i % 64];
	default:
		h_rmw_add_i32(w, i);
		return null ? 0 : (uint64_t)words[i % 64];
	}
}

int main(void)
{
	char line[128], what[16];
	unsigned long k = 0;

#ifndef NO_FAULTLINE
	int err = fl_init(NULL);

	if (err) {
		fprintf(stderr, "heal-prog: fl_init: %s\n", strerror(-err));
		return 1;
	}
#endif
	for (int j = 0; j < 64; j++) {
		words[j] = j * 3 + 1;
		bytes[j] = (uint8_t)(j * 5 + 1);
	}
	for (int j = 0; j < 600; j++)
		far[j] = (int64_t)j * 1000003;
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready %d\n", (int)getpid());
	while (fgets(line, sizeof(line), stdin)) {
		uint64_t sum = 0;
		int f = 0;
		long n = 0;

		k++;
		if (sscanf(line, "%15s %d %ld", what, &f, &n) == 3 &&
		    (!strcmp(what, "null") || !strcmp(what, "valid")) && f >= 1 && f <= FUNCS &&
		    n >= 0) {
			int null = !strcmp(what, "null");

			for (long i = 0; i < n; i++)
				sum = sum * 31 + call(f, null, (int)i);
			if (null)
				printf("%lu null %d %ld: hits %lu sum %" PRIu64 "\n", k, f, n,
				       atomic_load(&hits[f]), sum);
			else
				printf("%lu valid %d %ld: sum %" PRIu64 "\n", k, f, n, sum);
		} else if (sscanf(line, "%15s %ld", what, &n) == 2 && !strcmp(what, "pattern") &&
			   n >= 0) {
			for (long i = 0; i < n; i++)
				for (f = 1; f <= FUNCS; f++)
					sum = sum * 31 + call(f, (i * 7 + f * 13) % (f + 3) == 0 ||
								 (i + f) % 11 == 3, (int)i);
			printf("%lu pattern %ld: sum %" PRIu64 " nulls %lu/%lu/%lu/%lu/%lu\n", k, n,
			       sum, atomic_load(&hits[1]), atomic_load(&hits[2]),
			       atomic_load(&hits[3]), atomic_load(&hits[4]), atomic_load(&hits[5]));
		} else {
			printf("%lu ? %s", k, line);
		}
	}
	return 0;
}
