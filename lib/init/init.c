/* SPDX-License-Identifier: MIT */
/*
 * fl_init: the library's layers wired together, bottom up.  The table
 * (its counters, first snapshot and fork handlers) and the handler first;
 * then the patch layer's registry of stack map records and the agent
 * subscribe to the table's changes, so that they hear of every module the
 * first rescan finds; then the rescan; then the agent connects to the
 * daemon.  With FL_INIT_DEFER_DISCOVERY the rescan is the fl-agent
 * thread's first work instead, after the agent's registration (the HELLO
 * alone, before the program runs: the kernel's counts still cover its
 * whole life); the modules follow from that thread.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <faultline/dispatch.h>

#include "agent/agent.h"
#include "core/env.h"
#include "core/log.h"
#include "core/opts.h"
#include "core/workers.h"
#include "dispatch/dispatch.h"
#include "patch/heal_policy.h"
#include "patch/heal.h"
#include "patch/points.h"
#include "table/table.h"

/*
 * Whether the process opted in to raw code bytes from faultlined:
 * FL_INIT_ALLOW_PATCH, or FAULTLINE_ALLOW_PATCH=1 (read here, so that the
 * preload shim and every runtime honour it alike).  A set-id program
 * never does: raw bytes are code of the requester's choosing, run with
 * privileges its caller does not have.
 */
static bool allow_patch(uint32_t flags)
{
	const char *env = fl_env("FAULTLINE_ALLOW_PATCH");

	if (fl_env_secure()) {
		if (flags & FL_INIT_ALLOW_PATCH)
			fl_log(FL_LOG_INFO, "a set-id program takes no raw code bytes from "
			       "faultlined: FL_INIT_ALLOW_PATCH ignored");
		return false;
	}
	if (flags & FL_INIT_ALLOW_PATCH)
		return true;
	if (!env || !*env || !strcmp(env, "0"))
		return false;
	if (!strcmp(env, "1"))
		return true;
	fl_log(FL_LOG_WARN, "FAULTLINE_ALLOW_PATCH: expected 1 or 0, not '%s': not allowed", env);
	return false;
}

/*
 * Reads "N" or "N/SECONDS" (N > 0) from the environment variable name.
 * Returns true with the values set, false (said) when unset or malformed.
 */
static bool env_policy(const char *name, bool window, uint32_t *n, uint32_t *s)
{
	const char *env = fl_env(name);
	char *end;
	unsigned long v, w = 0;

	if (!env || !*env)
		return false;
	errno = 0;
	v = strtoul(env, &end, 10);
	if (window && *end == '/' && end[1])
		w = strtoul(end + 1, &end, 10);
	if (errno || *end || !v || v > UINT32_MAX || w > UINT32_MAX || env[0] == '-') {
		fl_log(FL_LOG_WARN, "%s: expected %s, not '%s': ignored", name,
		       window ? "N or N/SECONDS (N > 0)" : "SECONDS (> 0)", env);
		return false;
	}
	*n = (uint32_t)v;
	*s = (uint32_t)w;
	return true;
}

/* The heal policy of opts, or of the environment. */
static void heal_policy(const struct fl_init_opts *o)
{
	uint32_t after = o->heal_after, window = o->heal_window_s, quiet = o->unheal_after_s, unused;
	struct fl_diag d;
	int err;

	if (!after)
		env_policy("FAULTLINE_HEAL_AFTER", true, &after, &window);
	if (!quiet)
		env_policy("FAULTLINE_UNHEAL_AFTER", false, &quiet, &unused);
	err = fl_heal_policy_init();
	if (!err && (after || quiet))
		err = fl_heal_policy_set(after, after ? window : 0, quiet, &d);
	if (err)
		fl_log(FL_LOG_WARN, "no heal policy: %s", err == -EAGAIN ? strerror(-err) : d.msg);
}

int fl_init(const struct fl_init_opts *opts)
{
	struct fl_init_opts o;
	bool defer;
	int err;

	if (fl_opts_copy(&o, sizeof(o), opts))
		return -EINVAL;
	if (o.flags & ~(uint32_t)(FL_INIT_NO_DISCOVERY | FL_INIT_NO_AGENT | FL_INIT_ALLOW_PATCH |
				  FL_INIT_DEFER_DISCOVERY))
		return -EINVAL;
	defer = (o.flags & FL_INIT_DEFER_DISCOVERY) &&
		!(o.flags & (FL_INIT_NO_DISCOVERY | FL_INIT_NO_AGENT));

	/* Before any fork handler of a worker's owner (the table's, the heal policy's). */
	fl_workers_set_create(fl_park_exempt_thread);
	err = fl_table_init(&o);
	if (err == -EALREADY)
		return err;
	if (err) {
		fl_log(FL_LOG_ERROR, "fl_init: %s", strerror(-err));
		return err;
	}
	err = fl_points_subscribe();
	if (err)
		fl_log(FL_LOG_WARN, "the stack maps of JIT code cannot be patched: %s",
		       strerror(-err));
	err = fl_heal_subscribe();
	if (err)
		fl_log(FL_LOG_WARN, "healed sites outlive their modules: %s", strerror(-err));
	err = 0;
	if (!(o.flags & FL_INIT_NO_AGENT)) {
		int r = fl_agent_subscribe();

		if (r < 0)
			fl_log(FL_LOG_WARN, "no agent for faultlined: %s", strerror(-r));
	}
	if (defer) {
		/* The fl-agent thread's first work (fl_agent_start); faults wait for it. */
		fl_table_defer_scan();
	} else if (!(o.flags & FL_INIT_NO_DISCOVERY)) {
		err = fl_refresh();
		if (err > 0)
			err = 0;
	}
	if (!err)
		heal_policy(&o);
	if (!err && !(o.flags & FL_INIT_NO_AGENT)) {
		int r;

		if (allow_patch(o.flags))
			fl_agent_allow_patch();
		r = fl_agent_start(o.socket_path);

		/* Dispatch works without the daemon: say so, go on. */
		if (r < 0)
			fl_log(FL_LOG_WARN, "no agent for faultlined: %s", strerror(-r));
	}
	/* No fl-agent thread took the rescan: it is done here, as without the flag. */
	if (defer && fl_table_scan_pending() && !fl_agent_scanning()) {
		err = fl_refresh();
		if (err > 0)
			err = 0;
	}
	return err;
}
