// SPDX-License-Identifier: MIT
/*
 * faultlined end to end, group restart (e2e restart ...):
 * kill -9 and restart on the same state directory; state.json read
 * back, not trusted.
 * The harness and the driver: harness.c.
 */
#include "harness.h"

/* Removes the daemon's records: a state.json written next is the whole state. */
static void remove_records(void)
{
	DIR *d = opendir(state_dir);
	struct dirent *e;

	while (d && (e = readdir(d))) {
		char path[PATH_MAX + 300];

		if (strncmp(e->d_name, "proc.", 5))
			continue;
		snprintf(path, sizeof(path), "%s/%s", state_dir, e->d_name);
		unlink(path);
	}
	if (d)
		closedir(d);
}

/*
 * Writes text as state.json (of the daemons before records, version 1),
 * the records removed, starts the daemon on it; returns ps's entries or -1.
 */
static int restored_from(const char *text)
{
	char path[PATH_MAX + 16];
	json_object *doc;
	FILE *f;
	int n = -1;

	remove_records();
	snprintf(path, sizeof(path), "%s/state.json", state_dir);
	f = fopen(path, "w");
	if (!f || fputs(text, f) < 0 || fclose(f)) {
		fail("state.json", "cannot write %s", path);
		return -1;
	}
	if (daemon_start())
		return -1;
	if (query(0, FL_QUERY_PS, 0, 0, &doc) == 0) {
		n = (int)nprocs(doc);
		if (n == 1 && json_object_get_int(get(proc_at(doc, 0), "pid")) != 12345)
			n = -1;
		json_object_put(doc);
	}
	daemon_stop();
	return n;
}

/*
 * state.json is read back, not trusted: a file of another version is not
 * guessed at, and an entry whose pid or uid no process can have (the uid
 * decides who sees it) is left out.
 */
static void state_file_checked(void)
{
	int n;

	n = restored_from("{\"version\":2,\"processes\":[{\"pid\":12345,\"uid\":0}]}");
	check(n == 0, "state.json of version 2 (there is none: records are): starting empty",
	      "%d processes restored", n);
	n = restored_from("{\"version\":1,\"processes\":[{\"pid\":0,\"uid\":0},"
			  "{\"pid\":-5,\"uid\":0},{\"pid\":1099511627776,\"uid\":0},"
			  "{\"pid\":777,\"uid\":4294967295},{\"pid\":778,\"uid\":-1},7,"
			  "{\"pid\":12345,\"uid\":0,\"comm\":\"valid\"}]}");
	check(n == 1, "state.json entries with no valid pid or uid left out, the valid one "
	      "restored", "%d processes restored (want 1, pid 12345)", n);
}

void group_restart(void)
{
	struct proc a, c;
	pid_t apid, bpid, cpid = -1;
	json_object *doc;
	int rc;

	if (daemon_start())
		return;
	apid = start_waiter(&a, 0, 5, 6, 7, "restart");
	{
		const char *argv[] = { prog, "run", "1", "2", "3", NULL };

		bpid = run_prog(argv, "pid", "restart");
	}
	if (apid < 0 || bpid < 0)
		return;
	expect_counts("before kill -9: the running process", apid, false, 5, 6, 7);
	expect_counts("before kill -9: the exited process", bpid, true, 1, 2, 3);
	state_lists_exited("before kill -9: state.json", &bpid, 1);
	daemon_kill9();

	/* While the daemon is down: counts go on in the process; a new one starts. */
	waiter_fail(&a, 1, 1, 1, "restart: fails checks while the daemon is down");
	cpid = start_waiter(&c, 0, 2, 2, 2, "started while the daemon is down");

	if (daemon_start())
		return;
	expect_counts("after kill -9 and restart: the running process re-registered, counts intact",
		      apid, false, 6, 7, 8);
	expect_counts("after kill -9 and restart: the exited process restored from state.json",
		      bpid, true, 1, 2, 3);
	if (cpid > 0)
		expect_counts("a process started while the daemon was down registers when it comes up",
			      cpid, false, 2, 2, 2);
	if (query(0, FL_QUERY_PS, 0, 0, &doc) == 0) {
		int na = ps_entries(doc, apid), nb = ps_entries(doc, bpid);

		check(na == 1 && nb == 1, "ps after restart: each process listed once",
		      "running process listed %d times, exited one %d times", na, nb);
		json_object_put(doc);
	}
	if (query(0, FL_QUERY_STATS, (uint32_t)apid, 0, &doc) == 0) {
		check(nprocs(doc) == 1, "stats --pid after restart: one entry",
		      "%zu entries", nprocs(doc));
		json_object_put(doc);
	}

	/* A second kill -9 with both exited: everything from state.json. */
	waiter_fail(&a, 10, 0, 0, "restart");
	rc = proc_end(&a);
	check(rc == 0, "the re-registered process exits cleanly", "exit %d", rc);
	expect_counts("the re-registered process's final counts", apid, true, 16, 7, 8);
	if (cpid > 0)
		proc_end(&c);
	if (cpid > 0)
		expect_counts("the late process's final counts", cpid, true, 2, 2, 2);
	{
		pid_t gone[3] = { apid, bpid, cpid };

		state_lists_exited("second kill -9: state.json", gone, cpid > 0 ? 3 : 2);
	}
	daemon_kill9();
	if (daemon_start())
		return;
	expect_counts("second kill -9: the re-registered process's final counts restored", apid,
		      true, 16, 7, 8);
	expect_counts("second kill -9: the first exited process still there", bpid, true, 1, 2,
		      3);
	if (cpid > 0)
		expect_counts("second kill -9: the late process restored", cpid, true, 2, 2, 2);
	rc = daemon_stop();
	check(rc == 0, "SIGTERM: faultlined exits 0", "exit %d", rc);
	state_file_checked();
}
