// SPDX-License-Identifier: MIT
/*
 * The process that faultline patch and faultline invalidate change
 * (run.sh): patch point 7 and stack map record 9 (points.ll).
 *
 *   patch-prog MODE [THREADS]
 *
 * MODE: "flag": fl_init with FL_INIT_ALLOW_PATCH; "env": fl_init without
 * it (FAULTLINE_ALLOW_PATCH decides).  Built without faultline
 * (-DNO_FAULTLINE: patch-prog-shim), MODE is ignored: the preload shim
 * registers the process.  THREADS busy threads call pp_value in a loop.
 * Prints "ready PID TARGET" (TARGET: an address for faultline invalidate
 * --target), then for each line "call" on stdin "value N" (what pp_value
 * returns now); exits 0 at EOF.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef NO_FAULTLINE
#include <faultline/dispatch.h>
#include <faultline/points.h>
#endif

long pp_value(void);
long sm_fn(long a);
void deopt_entry(void);

static volatile long sink;

/* Where an invalidated record's call goes: it never runs in the tests. */
__attribute__((noinline)) void deopt_entry(void)
{
	abort();
}

static void *busy(void *arg)
{
	(void)arg;
	for (;;)
		sink += pp_value();
	return NULL;
}

int main(int argc, char **argv)
{
	char line[64];
	int threads = argc > 2 ? atoi(argv[2]) : 0;

#ifndef NO_FAULTLINE
	struct fl_init_opts o = { .sz = sizeof(o) };
	int err;

	if (argc < 2) {
		fprintf(stderr, "usage: patch-prog flag|env [THREADS]\n");
		return 2;
	}
	if (!strcmp(argv[1], "flag"))
		o.flags = FL_INIT_ALLOW_PATCH;
	err = fl_init(&o);
	if (err) {
		fprintf(stderr, "patch-prog: fl_init: %s\n", strerror(-err));
		return 1;
	}
	/* The shadow holds sm_fn's own last instructions: not derivable from nops. */
	err = fl_stackmap_declare(9, NULL, 16, NULL);
	if (err) {
		fprintf(stderr, "patch-prog: fl_stackmap_declare: %s\n", strerror(-err));
		return 1;
	}
#endif
	sink = sm_fn(1);
	for (int i = 0; i < threads; i++) {
		pthread_t t;

		if (pthread_create(&t, NULL, busy, NULL) != 0) {
			perror("patch-prog: pthread_create");
			return 1;
		}
	}
	printf("ready %d %p\n", (int)getpid(), (void *)deopt_entry);
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		if (!strcmp(line, "call\n"))
			printf("value %ld\n", pp_value());
		fflush(stdout);
	}
	return 0;
}
