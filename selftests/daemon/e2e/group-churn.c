// SPDX-License-Identifier: MIT
/*
 * faultlined end to end, group churn (e2e churn ...):
 * fork while another thread loads and unloads a library.
 * The harness and the driver: harness.c.
 */
#include "harness.h"

void group_churn(void)
{
	char lib[PATH_MAX], line[256];
	const char *argv[] = { prog, "churn", lib, "1000", NULL };
	struct proc p;
	int pid = -1, hung = -1, rc, err;
	double t0 = now();
	json_object *doc;

	snprintf(lib, sizeof(lib), "%s", prog);
	snprintf(strrchr(lib, '/') + 1, sizeof(lib) - (size_t)(strrchr(lib, '/') + 1 - lib),
		 "libe2e-sites.so");
	if (daemon_start())
		return;
	if (proc_spawn(&p, 0, true, argv)) {
		fail("churn", "cannot start %s", prog);
		return;
	}
	/* 1,000 forks (up to a minute under TCG), the whole of them bounded. */
	if (proc_line(&p, line, sizeof(line), 4 * WAIT_MS) != 0 ||
	    sscanf(line, "churn %d %d", &pid, &hung) != 2) {
		fail("churn", "expected \"churn PID HUNG\", got \"%s\"", line);
		kill(p.pid, SIGKILL);
	}
	/*
	 * Asked while it lives: once it has exited, the thousand children
	 * the daemon reads after it (they do not wait for it in fork) push it
	 * out of the exited processes the daemon keeps (256).
	 */
	err = query(0, FL_QUERY_PS, 0, 0, &doc);
	check(!err && ps_entries(doc, pid) == 1,
	      "the process is listed once (re-registrations after drops replace its entry)",
	      "listed %d times", err ? -1 : ps_entries(doc, pid));
	if (!err)
		json_object_put(doc);
	rc = proc_end(&p);
	check(rc == 0, "1,000 forks while a thread loads and unloads a library: no crash",
	      "exit %d (a signal: %s)", rc, rc < 0 ? "yes" : "no");
	check(hung == 0, "no child hangs in fork (the agent's lock is held across fork)",
	      "%d children hung", hung);
	check(!log_has(dlog, "does not describe the module: dropped"),
	      "a module unloaded before the daemon read its MODULE_ADD does not drop the process",
	      "dropped for its site table (%s)", dlog);
	err = query(0, FL_QUERY_PS, 0, 0, &doc);
	check(daemon_alive() && !err, "the daemon serves on", "alive %d, err %d",
	      daemon_alive(), err);
	if (!err)
		json_object_put(doc);
	printf("# churn: the process was dropped for its message rate: %s\n",
	       log_has(dlog, "flooding") ? "yes" : "no");
	printf("# churn: %.1f s\n", now() - t0);
	check(daemon_stop() == 0, "SIGTERM: faultlined exits 0", "bad exit");
}

