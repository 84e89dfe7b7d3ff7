// SPDX-License-Identifier: MIT
/*
 * faultlined end to end, group counts (e2e counts ...):
 * exact per-site counts: short-lived, long-lived, 4 threads, fork.
 * The harness and the driver: harness.c.
 */
#include "harness.h"

void group_counts(void)
{
	struct proc p;
	pid_t pid, child;
	char line[256];
	json_object *doc;
	int rc;

	if (daemon_start())
		return;

	/* Short-lived: registers, fails a few checks, exits. */
	{
		const char *argv[] = { prog, "run", "3", "5", "7", NULL };

		pid = run_prog(argv, "pid", "short-lived");
		if (pid > 0)
			expect_counts("short-lived process: exact counts after exit", pid, true, 3, 5,
				      7);
	}
	{
		int bad = 0;
		pid_t pids[20];
		char detail[512] = "";
		double end;

		for (int i = 0; i < 20; i++) {
			char a[3][16];
			const char *argv[] = { prog, "run", a[0], a[1], a[2], NULL };

			snprintf(a[0], sizeof(a[0]), "%d", i);
			snprintf(a[1], sizeof(a[1]), "%d", i + 1);
			snprintf(a[2], sizeof(a[2]), "%d", 2 * i);
			pids[i] = run_prog(argv, "pid", "20 short-lived processes");
		}
		/* One deadline for the 20: a failing run does not wait 20 times. */
		end = now() + WAIT_S;
		for (int i = 0; i < 20; i++) {
			struct pstat st;

			for (;;) {
				if (query(0, FL_QUERY_STATS, 0, 0, &doc) == 0) {
					pstat_of(doc, pids[i], &st);
					json_object_put(doc);
				} else {
					st.entries = 0;
				}
				if (st.entries == 1 && st.exited == 1 && st.faults[S_LOAD] == (uint64_t)i &&
				    st.faults[S_STORE] == (uint64_t)i + 1 &&
				    st.faults[S_RMW] == 2 * (uint64_t)i)
					break;
				if (now() > end) {
					bad++;
					pstat_str(&st, detail, sizeof(detail));
					break;
				}
				sleep_ms(50);
			}
		}
		check(!bad, "20 short-lived processes in a row: every one counted exactly",
		      "%d wrong, e.g. %s", bad, detail);
	}

	/* Long-lived: queried while it runs, then after it exits. */
	pid = start_waiter(&p, 0, 10, 20, 30, "long-lived");
	if (pid > 0) {
		expect_counts("long-lived process: counts while it runs", pid, false, 10, 20, 30);
		if (waiter_fail(&p, 1, 2, 3, "long-lived"))
			expect_counts("long-lived process: counts grow while it runs", pid, false, 11,
				      22, 33);

		/* Sites and stack maps of a live process. */
		if (query(0, FL_QUERY_SITES, (uint32_t)pid, 0, &doc) == 0) {
			struct pstat st;

			pstat_of(doc, pid, &st);
			check(nprocs(doc) == 1 && st.entries == 1 && st.faults[S_LOAD] == 11 &&
			      st.other_sites == 0, "sites PID: the process's three sites, named",
			      "%zu processes, %d entries, %d other sites", nprocs(doc), st.entries,
			      st.other_sites);
			json_object_put(doc);
		} else {
			fail("sites PID", "query failed");
		}
		if (query(0, FL_QUERY_STACKMAPS, (uint32_t)pid, UINT64_MAX, &doc) == 0) {
			json_object *recs = get(proc_at(doc, 0), "records");
			json_object *r0 = recs ? json_object_array_get_idx(recs, 0) : NULL;
			json_object *locs = get(r0, "locations");
			json_object *l0 = locs ? json_object_array_get_idx(locs, 0) : NULL;

			check(recs && json_object_array_length(recs) == 1 &&
			      json_object_get_uint64(get(r0, "id")) == 4242 &&
			      json_object_get_uint64(get(r0, "pc")) != 0 && locs &&
			      json_object_array_length(locs) == 2 &&
			      json_object_get_uint64(get(l0, "constant")) == 7,
			      "stackmaps PID: record 4242 with its constant and register",
			      "%s", json_object_to_json_string(doc));
			json_object_put(doc);
		} else {
			fail("stackmaps PID", "query failed");
		}
		if (query(0, FL_QUERY_STACKMAPS, (uint32_t)pid, 4242, &doc) == 0) {
			json_object *recs = get(proc_at(doc, 0), "records");
			size_t n1 = recs ? json_object_array_length(recs) : 99, n2 = 99;

			json_object_put(doc);
			if (query(0, FL_QUERY_STACKMAPS, (uint32_t)pid, 4243, &doc) == 0) {
				recs = get(proc_at(doc, 0), "records");
				n2 = recs ? json_object_array_length(recs) : 99;
				json_object_put(doc);
			}
			check(n1 == 1 && n2 == 0, "stackmaps PID --id: by record ID",
			      "id 4242: %zu records, id 4243: %zu", n1, n2);
		}
		rc = proc_end(&p);
		check(rc == 0, "long-lived process exits cleanly", "exit %d", rc);
		expect_counts("long-lived process: final counts after exit", pid, true, 11, 22, 33);
	}

	/* Multi-threaded: 4 threads. */
	{
		const char *argv[] = { prog, "threads", "100", "200", "300", NULL };

		pid = run_prog(argv, "pid", "multi-threaded");
		if (pid > 0)
			expect_counts("multi-threaded process (4 threads): exact counts", pid, true,
				      400, 800, 1200);
	}

	/* Forking: the child is a process of its own, with its own counts. */
	{
		const char *argv[] = { prog, "fork", "4", "5", "6", "7", "8", "9", NULL };

		if (proc_spawn(&p, 0, true, argv) == 0) {
			double ms = -1;

			child = -1;
			/* The child registers before fork returns: a round trip, a figure. */
			if (proc_line(&p, line, sizeof(line), WAIT_MS) != 0 ||
			    sscanf(line, "child %d %lf", &child, &ms) != 2)
				fail("forking process", "expected \"child PID MS\", got \"%s\"", line);
			printf("# fork in a registered process: %.1f ms in the child\n", ms);
			pid = proc_expect_pid(&p, "parent", "forking process");
			rc = proc_end(&p);
			if (pid > 0 && child > 0 && rc == 0) {
				check(child != pid, "fork: the child has a pid of its own",
				      "child %d, parent %d", (int)child, (int)pid);
				expect_counts("forking process: the parent's own counts (before and after fork)",
					      pid, true, 8, 10, 12);
				expect_counts("forking process: the child listed as its own process, with its own counts",
					      child, true, 7, 8, 9);
			} else {
				fail("forking process", "exit %d", rc);
			}
		}
	}

	rc = daemon_stop();
	check(rc == 0, "SIGTERM: faultlined exits 0", "exit %d", rc);
}

