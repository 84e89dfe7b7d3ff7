// SPDX-License-Identifier: MIT
/*
 * faultlined end to end, group load (e2e load ...):
 * 1,000 registered processes.
 * The harness and the driver: harness.c.
 */
#include "harness.h"

#define LOAD_MAX 1000
#define LOAD_KEEP 256	/* the daemon's max_exited */

/*
 * How many processes: 1,000, or E2E_LOAD_N (make vmtest: QEMU's TCG runs
 * 1,000 processes and the daemon too slowly).  At least 2 * LOAD_KEEP, so
 * that the first release leaves LOAD_KEEP live and more than LOAD_KEEP
 * exited.
 */
static int load_count(void)
{
	const char *env = getenv("E2E_LOAD_N");
	int n = env ? atoi(env) : LOAD_MAX;

	if (n < 2 * LOAD_KEEP || n > LOAD_MAX) {
		printf("# E2E_LOAD_N=%s: not from %d to %d: %d processes\n", env, 2 * LOAD_KEEP,
		       LOAD_MAX, LOAD_MAX);
		n = LOAD_MAX;
	}
	return n;
}

struct lchild {
	pid_t pid;
	int loads, stores;
};

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

/* ps: counts of live and exited entries of pids in set (sorted). */
static int load_ps(const pid_t *set, size_t n, int *live, int *exited, int *outside)
{
	json_object *doc;
	int err = query(0, FL_QUERY_PS, 0, 0, &doc);

	*live = *exited = *outside = 0;
	if (err)
		return err;
	for (size_t i = 0; i < nprocs(doc); i++) {
		json_object *p = proc_at(doc, i);
		pid_t pid = json_object_get_int(get(p, "pid"));

		if (!bsearch(&pid, set, n, sizeof(*set), cmp_pid))
			*outside += 1;
		else if (json_object_get_boolean(get(p, "exited")))
			*exited += 1;
		else
			*live += 1;
	}
	json_object_put(doc);
	return 0;
}

void group_load(void)
{
	static struct lchild kids[LOAD_MAX];
	static pid_t all[LOAD_MAX], last[LOAD_KEEP];
	const int n = load_count();
	struct proc p;
	char line[256], n_s[16], k_s[16], name[128];
	const char *argv[] = { loadprog, n_s, k_s, NULL };
	int reported = 0, live, exited, outside, err, base;
	double t0 = now(), t;
	json_object *doc;

	if (daemon_start())
		return;
	base = daemon_nfds();
	snprintf(n_s, sizeof(n_s), "%d", n);
	snprintf(k_s, sizeof(k_s), "%d", LOAD_KEEP);
	if (proc_spawn(&p, 0, false, argv)) {
		fail("load", "cannot start %s", loadprog);
		return;
	}
	while (proc_line(&p, line, sizeof(line), WAIT_MS) == 0) {
		int i, pid, l, s;

		if (!strcmp(line, "ready"))
			break;
		if (sscanf(line, "child %d %d %d %d", &i, &pid, &l, &s) == 4 && i >= 0 &&
		    i < n) {
			kids[i] = (struct lchild){ pid, l, s };
			reported++;
		} else {
			fail("load", "%s", line);
		}
	}
	snprintf(name, sizeof(name), "%d processes started (fl_init, checks failed)", n);
	check(reported == n, name, "%d reported: %s", reported, line);
	if (reported != n) {
		proc_end(&p);
		daemon_kill9();
		return;
	}
	t = now();
	for (int i = 0; i < n; i++)
		all[i] = kids[i].pid;
	qsort(all, (size_t)n, sizeof(*all), cmp_pid);
	for (int i = 0; i < LOAD_KEEP; i++)
		last[i] = kids[i].pid;
	qsort(last, LOAD_KEEP, sizeof(*last), cmp_pid);
	do {
		err = load_ps(all, (size_t)n, &live, &exited, &outside);
		if (!err && live == n)
			break;
		sleep_ms(100);
	} while (now() - t < WAIT_S);
	snprintf(name, sizeof(name), "ps lists all %d live processes", n);
	check(!err && live == n && exited == 0, name,
	      "err %d: %d live, %d exited (started in %.1f s)", err, live, exited, t - t0);

	/* stats: every process with its own exact counts. */
	{
		double q0 = now();
		int bad = 0, missing = 0;
		char detail[512] = "";

		err = query(0, FL_QUERY_STATS, 0, 0, &doc);
		t = now() - q0;
		for (int i = 0; !err && i < n; i++) {
			struct pstat st;

			pstat_of(doc, kids[i].pid, &st);
			if (st.entries != 1) {
				missing++;
			} else if (st.exited != 0 || st.faults[S_LOAD] != (uint64_t)kids[i].loads ||
				   st.faults[S_STORE] != (uint64_t)kids[i].stores ||
				   st.faults[S_RMW] != 0) {
				if (!bad++)
					pstat_str(&st, detail, sizeof(detail));
			}
		}
		if (!err)
			json_object_put(doc);
		snprintf(name, sizeof(name), "stats with %d live processes: every count exact", n);
		check(!err && !bad && !missing, name, "err %d, %d missing, %d wrong (%s)", err,
		      missing, bad, detail);
		printf("# stats query with %d live processes: %.0f ms\n", n, t * 1000);
	}
	{
		int nfds = daemon_nfds();

		check(nfds - base <= n + 8, "daemon descriptors: one per registered process",
		      "%d before, %d with %d processes", base, nfds, n);
	}

	/*
	 * Release all but the first 256 (the first to register), then those:
	 * the 256 kept are the last to exit, not the last to register.
	 */
	proc_say(&p, "release 1\n");
	if (proc_line(&p, line, sizeof(line), WAIT_MS) || strcmp(line, "done 1"))
		fail("load: release 1", "%s", line);
	t = now();
	do {
		err = load_ps(all, (size_t)n, &live, &exited, &outside);
		if (!err && live == LOAD_KEEP && exited == LOAD_KEEP)
			break;
		sleep_ms(100);
	} while (now() - t < WAIT_S);
	snprintf(name, sizeof(name), "%d exit: 256 live, exactly 256 exited kept", n - LOAD_KEEP);
	check(!err && live == LOAD_KEEP && exited == LOAD_KEEP, name,
	      "err %d: %d live, %d exited", err, live, exited);
	proc_say(&p, "release 2\n");
	if (proc_line(&p, line, sizeof(line), WAIT_MS) || strcmp(line, "done 2"))
		fail("load: release 2", "%s", line);
	t = now();
	do {
		err = load_ps(all, (size_t)n, &live, &exited, &outside);
		if (!err && live == 0)
			break;
		sleep_ms(100);
	} while (now() - t < WAIT_S);
	snprintf(name, sizeof(name), "all %d exited: exactly 256 kept (max_exited)", n);
	check(!err && live == 0 && exited == LOAD_KEEP, name,
	      "err %d: %d live, %d exited", err, live, exited);
	/* The 256 kept are the last to exit, with their final counts. */
	err = query(0, FL_QUERY_STATS, 0, 0, &doc);
	if (!err) {
		int kept_last = 0, bad = 0;

		for (int i = 0; i < LOAD_KEEP; i++) {
			struct pstat st;

			pstat_of(doc, kids[i].pid, &st);
			kept_last += st.entries == 1 && st.exited == 1;
			bad += st.entries == 1 && (st.faults[S_LOAD] != (uint64_t)kids[i].loads ||
						   st.faults[S_STORE] != (uint64_t)kids[i].stores);
		}
		json_object_put(doc);
		check(kept_last == LOAD_KEEP && !bad,
		      "the oldest exited were dropped first: the 256 kept are the last to exit, with final counts",
		      "%d of the last 256 kept, %d with wrong counts", kept_last, bad);
	}
	proc_end(&p);
	/* The same 256 after kill -9 and a restart (state.json). */
	state_lists_exited("load: state.json before kill -9", last, LOAD_KEEP);
	daemon_kill9();
	if (daemon_start())
		return;
	err = load_ps(last, LOAD_KEEP, &live, &exited, &outside);
	check(!err && exited == LOAD_KEEP && outside == 0 && live == 0,
	      "after kill -9 and restart: the same 256 exited processes",
	      "err %d: %d of them exited, %d others", err, exited, outside);
	/* As many as the daemon had before the first process, once ps's client is gone. */
	{
		double end = now() + WAIT_S;
		int nfds;

		while ((nfds = daemon_nfds()) > base && now() < end)
			sleep_ms(50);
		check(nfds <= base, "daemon descriptors back to where they were",
		      "%d before the processes, %d after the restart", base, nfds);
	}
	printf("# load: %.1f s\n", now() - t0);
	check(daemon_stop() == 0, "SIGTERM: faultlined exits 0", "bad exit");
}

