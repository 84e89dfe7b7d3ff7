/* SPDX-License-Identifier: MIT */
/*
 * fl_init: the library's layers wired together, bottom up.  The table
 * (its counters, first snapshot and fork handlers) and the handler first;
 * then the patch layer's registry of stack map records and the agent
 * subscribe to the table's changes, so that they hear of every module the
 * first rescan finds; then the rescan; then the agent connects to the
 * daemon.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <faultline/dispatch.h>

#include "agent/agent.h"
#include "core/log.h"
#include "core/opts.h"
#include "patch/points.h"
#include "table/table.h"

/*
 * Whether the process opted in to raw code bytes from faultlined:
 * FL_INIT_ALLOW_PATCH, or FAULTLINE_ALLOW_PATCH=1 (read here, so that the
 * preload shim and every runtime honour it alike).
 */
static bool allow_patch(uint32_t flags)
{
	const char *env = getenv("FAULTLINE_ALLOW_PATCH");

	if (flags & FL_INIT_ALLOW_PATCH)
		return true;
	if (!env || !*env || !strcmp(env, "0"))
		return false;
	if (!strcmp(env, "1"))
		return true;
	fl_log(FL_LOG_WARN, "FAULTLINE_ALLOW_PATCH: expected 1 or 0, not '%s': not allowed", env);
	return false;
}

int fl_init(const struct fl_init_opts *opts)
{
	struct fl_init_opts o;
	int err;

	if (fl_opts_copy(&o, sizeof(o), opts))
		return -EINVAL;
	if (o.flags & ~(uint32_t)(FL_INIT_NO_DISCOVERY | FL_INIT_NO_AGENT | FL_INIT_ALLOW_PATCH))
		return -EINVAL;

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
	err = 0;
	if (!(o.flags & FL_INIT_NO_AGENT)) {
		int r = fl_agent_subscribe();

		if (r < 0)
			fl_log(FL_LOG_WARN, "no agent for faultlined: %s", strerror(-r));
	}
	if (!(o.flags & FL_INIT_NO_DISCOVERY)) {
		err = fl_refresh();
		if (err > 0)
			err = 0;
	}
	if (!err && !(o.flags & FL_INIT_NO_AGENT)) {
		int r;

		if (allow_patch(o.flags))
			fl_agent_allow_patch();
		r = fl_agent_start(o.socket_path);

		/* Dispatch works without the daemon: say so, go on. */
		if (r < 0)
			fl_log(FL_LOG_WARN, "no agent for faultlined: %s", strerror(-r));
	}
	return err;
}
