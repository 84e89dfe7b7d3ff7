// SPDX-License-Identifier: MIT
/*
 * The load test's processes: e2e-load N K forks N children; each calls
 * fl_init (it registers with the daemon at $FAULTLINE_SOCKET), fails
 * e2e_load (i % 5 + 1) times and e2e_store (i % 3) times, and waits.
 * Children K to N-1 wait for "release 1" on the parent's stdin, the
 * first K (which registered first) for "release 2"; then they exit.  The parent prints
 * "child I PID LOADS STORES" for each child once it has failed its checks,
 * then "ready", and "done" when every child released has been reaped
 * ("FAIL ..." when something went wrong).  Linked with libfaultline.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <faultline/dispatch.h>

int e2e_load(int *p);
int e2e_store(int *p, int x);

static void child(int i, int report, int release)
{
	int loads = i % 5 + 1, stores = i % 3, err;
	char line[64], c;
	int n;

	err = fl_init(NULL);
	if (err) {
		n = snprintf(line, sizeof(line), "FAIL child %d: fl_init: %s\n", i, strerror(-err));
		(void)!write(report, line, (size_t)n);
		_exit(1);
	}
	for (int k = 0; k < loads; k++)
		if (e2e_load(NULL) != -1)
			_exit(2);
	for (int k = 0; k < stores; k++)
		if (e2e_store(NULL, k) != -1)
			_exit(2);
	n = snprintf(line, sizeof(line), "child %d %d %d %d\n", i, (int)getpid(), loads, stores);
	(void)!write(report, line, (size_t)n);
	while (read(release, &c, 1) < 0 && errno == EINTR)
		;
	_exit(0);
}

int main(int argc, char **argv)
{
	int n, k, report[2], rel[2][2], reported = 0, failed = 0;
	pid_t *pids, self;
	char line[128];
	FILE *in;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc != 3 || (n = atoi(argv[1])) < 1 || (k = atoi(argv[2])) < 0 || k > n) {
		printf("FAIL usage: e2e-load N K\n");
		return 1;
	}
	self = getpid();
	pids = calloc((size_t)n, sizeof(*pids));
	if (!pids || pipe(report) || pipe(rel[0]) || pipe(rel[1])) {
		printf("FAIL pipes: %s\n", strerror(errno));
		return 1;
	}
	for (int i = 0; i < n; i++) {
		pids[i] = fork();
		if (pids[i] < 0) {
			printf("FAIL fork %d: %s\n", i, strerror(errno));
			return 1;
		}
		if (pids[i] == 0) {
			int mine = i < k ? 1 : 0;

			/* Killed with this process, however it ends (its main thread forks). */
			if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != self)
				_exit(3);
			close(report[0]);
			close(rel[0][1]);
			close(rel[1][1]);
			close(rel[!mine][0]);
			child(i, report[1], rel[mine][0]);
		}
	}
	close(report[1]);
	close(rel[0][0]);
	close(rel[1][0]);
	in = fdopen(report[0], "r");
	while (reported < n && in && fgets(line, sizeof(line), in)) {
		fputs(line, stdout);
		if (!strncmp(line, "child ", 6))
			reported++;
		else
			failed++;
	}
	if (reported < n) {
		printf("FAIL %d of %d children reported\n", reported, n);
		return 1;
	}
	printf("ready\n");
	for (int phase = 1; phase <= 2; phase++) {
		int lo = phase == 1 ? k : 0, hi = phase == 1 ? n : k;

		if (!fgets(line, sizeof(line), stdin))
			break;
		if (atoi(line + strlen("release ")) != phase) {
			printf("FAIL expected: release %d\n", phase);
			return 1;
		}
		close(rel[phase - 1][1]);
		for (int i = lo; i < hi; i++) {
			int status;

			if (waitpid(pids[i], &status, 0) != pids[i] || !WIFEXITED(status) ||
			    WEXITSTATUS(status) != 0)
				failed++;
		}
		if (failed)
			printf("FAIL %d children failed\n", failed);
		printf("done %d\n", phase);
	}
	return failed != 0;
}
