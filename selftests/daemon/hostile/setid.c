// SPDX-License-Identifier: MIT
/*
 * A program linked with libfaultline, made set-group-ID or set-user-ID by
 * the test (setid.sh) and run by nobody: what a local user would turn
 * against its owner through faultlined (setid.ll).
 *
 *   setid-prog [patch]
 *
 * fl_init (with FL_INIT_ALLOW_PATCH when "patch" is given), then prints
 * "ready PID WIN" (WIN: the address of win(), a --target for faultline
 * invalidate) and, for each line on stdin:
 *   call        "value N": setid_sm(1) (2 unless its record was
 *               invalidated), and one failed check at setid_load
 *   undumpable  prctl(PR_SET_DUMPABLE, 0), "undumpable"
 * exits 0 at EOF.  win(), which nothing calls, prints the ids it runs
 * with and exits 42: a requester who made it run chose this program's
 * code.  faultline's messages go to stderr, every level.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <faultline/dispatch.h>
#include <faultline/log.h>
#include <faultline/points.h>

int setid_load(int *p);
long setid_sm(long a);
long setid_pp(void);
void win(void);

__attribute__((noinline)) void win(void)
{
	printf("win: uid %d euid %d gid %d egid %d\n", (int)getuid(), (int)geteuid(),
	       (int)getgid(), (int)getegid());
	fflush(stdout);
	_exit(42);
}

static void log_stderr(enum fl_log_level level, const char *msg, void *ctx)
{
	(void)level;
	(void)ctx;
	fprintf(stderr, "faultline: %s\n", msg);
}

int main(int argc, char **argv)
{
	struct fl_init_opts o = { .sz = sizeof(o) };
	char line[64];
	int err;

	fl_set_log(log_stderr, NULL);
	if (argc > 1 && !strcmp(argv[1], "patch"))
		o.flags = FL_INIT_ALLOW_PATCH;
	err = fl_init(&o);
	if (err) {
		fprintf(stderr, "setid-prog: fl_init: %s\n", strerror(-err));
		return 1;
	}
	/* The shadow holds setid_sm's own last instructions: not derivable from nops. */
	err = fl_stackmap_declare(42, NULL, 16, NULL);
	if (err) {
		fprintf(stderr, "setid-prog: fl_stackmap_declare: %s\n", strerror(-err));
		return 1;
	}
	printf("ready %d %p\n", (int)getpid(), (void *)win);
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		if (!strcmp(line, "call\n")) {
			setid_load(NULL);
			printf("value %ld\n", setid_sm(1));
		} else if (!strcmp(line, "undumpable\n")) {
			printf(prctl(PR_SET_DUMPABLE, 0) == 0 ? "undumpable\n" : "prctl failed\n");
		}
		fflush(stdout);
	}
	return 0;
}
