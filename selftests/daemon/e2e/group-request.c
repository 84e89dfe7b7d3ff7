// SPDX-License-Identifier: MIT
/*
 * faultlined end to end, group request (e2e request ...):
 * requests.
 * The harness and the driver: harness.c.
 */
#include "harness.h"

void group_request(void)
{
	struct proc a, n;
	pid_t apid, npid, bpid;
	uint64_t v = 0;
	int err;

	if (daemon_start())
		return;
	apid = start_waiter(&a, 0, 0, 0, 0, "request");
	npid = start_waiter(&n, NOBODY, 1, 0, 0, "request (process of nobody)");
	if (apid < 0 || npid < 0)
		return;
	expect_counts("request: root's process registered", apid, false, 0, 0, 0);
	expect_counts("request: nobody's process registered", npid, false, 1, 0, 0);

	err = request(0, (uint32_t)apid, FL_REQ_PING, 12345, &v);
	check(!err && v == 12345, "ping: REPLY with the value", "err %d value %" PRIu64, err, v);
	err = request(0, (uint32_t)apid, FL_REQ_HEAL_THRESHOLD, 17, &v);
	check(!err && v == 0, "heal threshold set: returns the old value (0)",
	      "err %d value %" PRIu64, err, v);
	err = request(0, (uint32_t)apid, FL_REQ_HEAL_THRESHOLD, 5, &v);
	check(!err && v == 17, "heal threshold set again: returns the old value (17)",
	      "err %d value %" PRIu64, err, v);

	err = request(NOBODY, (uint32_t)apid, FL_REQ_HEAL_THRESHOLD, 99, &v);
	check(err == -ESRCH, "heal threshold from another uid (nobody): -ESRCH", "err %d", err);
	err = request(NOBODY, (uint32_t)apid, FL_REQ_PING, 1, &v);
	check(err == -ESRCH, "ping from another uid (nobody): -ESRCH", "err %d", err);
	err = request(0, (uint32_t)apid, FL_REQ_HEAL_THRESHOLD, 5, &v);
	check(!err && v == 5, "the refused request did not reach the process (threshold still 5)",
	      "err %d value %" PRIu64, err, v);

	err = request(NOBODY, (uint32_t)npid, FL_REQ_PING, 777, &v);
	check(!err && v == 777, "nobody pings its own process", "err %d value %" PRIu64, err, v);
	err = request(NOBODY, (uint32_t)npid, FL_REQ_HEAL_THRESHOLD, 3, &v);
	check(!err && v == 0, "nobody sets its own process's heal threshold",
	      "err %d value %" PRIu64, err, v);
	err = request(0, (uint32_t)npid, FL_REQ_HEAL_THRESHOLD, 4, &v);
	check(!err && v == 3, "root sets nobody's process's heal threshold",
	      "err %d value %" PRIu64, err, v);

	err = request(0, (uint32_t)apid, FL_REQ_HEAL_THRESHOLD, 1ull << 40, &v);
	check(err == -EINVAL, "a heal window without a count: the process answers -EINVAL",
	      "err %d", err);
	{
		const char *argv[] = { prog, "run", "0", "0", "0", NULL };

		bpid = run_prog(argv, "pid", "request");
		if (bpid > 0) {
			expect_counts("request: a process that exited", bpid, true, 0, 0, 0);
			err = request(0, (uint32_t)bpid, FL_REQ_PING, 1, &v);
			check(err == -ESRCH, "ping to an exited process: -ESRCH", "err %d", err);
		}
	}
	err = request(0, 0x3fffffff, FL_REQ_PING, 1, &v);
	check(err == -ESRCH, "ping to an unknown pid: -ESRCH", "err %d", err);

	/* Many requests on one connection, and several in flight. */
	{
		int fd = conn(), bad = 0;
		char msg[64], *text;

		/* Each answered when the process's DONE behind its completion is read. */
		for (int i = 0; fd >= 0 && i < 40; i++) {
			json_object *doc;

			if (xsend(fd, msg, mk_request(msg, (uint32_t)apid, FL_REQ_PING, 1000 + i), NULL,
				  0, 0) || read_reply(fd, &text, WAIT_MS)) {
				bad++;
				break;
			}
			doc = json_tokener_parse(text);
			bad += json_object_get_uint64(get(doc, "value")) != (uint64_t)(1000 + i);
			json_object_put(doc);
			free(text);
		}
		check(fd >= 0 && !bad, "40 pings in a row on one connection", "%d wrong", bad);
		for (int i = 0; fd >= 0 && i < 8; i++)
			xsend(fd, msg, mk_request(msg, (uint32_t)apid, FL_REQ_PING, 50 + i), NULL, 0,
			      0);
		bad = 0;
		for (int i = 0; fd >= 0 && i < 8; i++) {
			json_object *doc;

			if (read_reply(fd, &text, WAIT_MS)) {
				bad += 8 - i;
				break;
			}
			doc = json_tokener_parse(text);
			bad += json_object_get_uint64(get(doc, "value")) < 50;
			json_object_put(doc);
			free(text);
		}
		check(!bad, "8 pings in flight at once: all answered", "%d missing", bad);
		if (fd >= 0)
			close(fd);
	}
	/* A process that does not take requests: timed out, the daemon serves on. */
	{
		char line[64];
		int rc;

		kill(a.pid, SIGSTOP);
		/* Stopped is a moment later for every thread (fl-requests too). */
		wait_stopped(apid);
		err = request(0, (uint32_t)apid, FL_REQ_PING, 5, &v);
		check(err == -ETIMEDOUT, "a stopped process's request times out (-ETIMEDOUT)",
		      "err %d", err);
		kill(a.pid, SIGCONT);
		err = request(0, (uint32_t)apid, FL_REQ_PING, 6, &v);
		check(!err && v == 6, "after SIGCONT it answers again", "err %d value %" PRIu64,
		      err, v);
		(void)line;
		rc = proc_end(&a);
		check(rc == 0, "request: root's process exits cleanly", "exit %d", rc);
		rc = proc_end(&n);
		check(rc == 0, "request: nobody's process exits cleanly", "exit %d", rc);
	}
	check(daemon_stop() == 0, "SIGTERM: faultlined exits 0", "bad exit");
}

