// SPDX-License-Identifier: MIT
/*
 * The workload of the CLI's end-to-end tests, linked with
 * selftests/cli/sample.ll (two implicit null checks and stack map 7) and
 * shared_pc.ll (stack maps 8 and 9 at one address).
 *
 *   prog L S    fails load_field's check L times and store_field's S times
 *               (valid pointers in between, which must not count), passes
 *               the stack maps once, prints "ready PID"; then for each line
 *               "fail L S" on stdin fails that many more and prints "ok";
 *               exits 0 at EOF.
 * A check that does not return its sentinel prints "FAIL" and exits 1.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int load_field(int *p);
void store_field(int64_t *p, int64_t v);
int64_t with_stackmap(int64_t a);
int64_t two_records(int64_t a);

static volatile long null_stores;

void on_null(void)
{
	null_stores++;
}

static int fail(long l, long s)
{
	int words[8] = { 0, 0, 0, 0, 5, 0, 0, 0 };
	int64_t cell = 0;

	for (long i = 0; i < l; i++)
		if (load_field(NULL) != -1 || load_field(words) != 5)
			return -1;
	for (long i = 0; i < s; i++) {
		long before = null_stores;

		store_field(NULL, i);
		store_field(&cell, i);
		if (null_stores != before + 1 || cell != i)
			return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	char line[128];
	long l, s;

	if (argc != 3) {
		fprintf(stderr, "usage: %s L S\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (fail(atol(argv[1]), atol(argv[2])) != 0 || with_stackmap(11) != 11 ||
	    two_records(11) != 12) {
		puts("FAIL");
		return 1;
	}
	printf("ready %d\n", (int)getpid());
	while (fgets(line, sizeof(line), stdin)) {
		if (sscanf(line, "fail %ld %ld", &l, &s) != 2 || fail(l, s) != 0) {
			puts("FAIL");
			return 1;
		}
		puts("ok");
	}
	return 0;
}
