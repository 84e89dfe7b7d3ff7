/* SPDX-License-Identifier: MIT */
/*
 * Where the agent looks for faultlined, and in which order (internal.h).
 *
 *   1. the path given: fl_init's socket_path, else $FAULTLINE_SOCKET;
 *      nothing else is tried then (whoever named a daemon meant that one);
 *   2. not root: the user's own daemon,
 *      $XDG_RUNTIME_DIR/faultline/faultlined.sock (when XDG_RUNTIME_DIR is
 *      set);
 *   3. the system daemon, /run/faultline/faultlined.sock, which serves
 *      every user (faultlined(8)): root's only choice, and every other
 *      user's when their own daemon does not answer.
 *
 * A set-id program (fl_env_secure) takes 3 alone, and only when root
 * serves it: its environment is its caller's, who would otherwise choose
 * the daemon that is handed its region (and may ask it for its code's
 * addresses and change its code); fl_init's socket_path is refused too,
 * so that the rule reads the same for every set-id program.
 *
 * A process that is not root once looked only at 2, and never found a
 * system daemon, silently.  Each connection tries the paths in order and
 * takes the first that answers and passes fl_proto_connect's check of
 * its uid (root or this process's): a user's daemon that starts later is
 * taken at the next connection (after the daemon in use is lost), not
 * while one serves the process.
 *
 * The paths are fixed by fl_agent_paths_resolve before any agent thread
 * starts (their creation orders the writes before those threads' reads)
 * and never change; only which one answered last changes, in an atomic.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "agent/internal.h"
#include "core/env.h"
#include "core/fmt.h"
#include "core/log.h"
#include "proto/proto.h"

#define SYSTEM_SOCKET "/run/faultline/faultlined.sock"
#define MAX_PATHS 2

static struct {
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	const char *what;	/* whose daemon, or who named it: for messages */
} paths[MAX_PATHS];
static unsigned num_paths;
/* The path of the last connection made (an index in paths). */
static _Atomic unsigned last;
/* Warned about a daemon of another uid there (any agent thread may find one). */
static _Atomic bool peer_warned[MAX_PATHS];

/* Adds dir followed by file (which may be ""). */
static void add(const char *what, const char *dir, const char *file)
{
	size_t a = strlen(dir), b = strlen(file);

	if (a + b >= sizeof(paths[0].path)) {
		fl_log(FL_LOG_WARN, "the %s socket path is too long: not looking for "
		       "faultlined there", what);
		return;
	}
	memcpy(paths[num_paths].path, dir, a);
	memcpy(paths[num_paths].path + a, file, b + 1);
	paths[num_paths++].what = what;
}

void fl_agent_paths_resolve(const char *given)
{
	const char *env = fl_env("FAULTLINE_SOCKET");
	const char *xdg = fl_env("XDG_RUNTIME_DIR");

	num_paths = 0;
	if (fl_env_secure()) {
		if (given && *given)
			fl_log(FL_LOG_INFO, "a set-id program registers only with the system "
			       "daemon: not with fl_init's socket_path %s", given);
		add("system daemon", SYSTEM_SOCKET, "");
	} else if (given && *given)
		add("fl_init's socket_path", given, "");
	else if (env && *env)
		add("FAULTLINE_SOCKET", env, "");
	else {
		if (geteuid() != 0 && xdg && *xdg)
			add("user daemon", xdg, "/faultline/faultlined.sock");
		add("system daemon", SYSTEM_SOCKET, "");
	}
	atomic_store(&last, 0);
}

bool fl_agent_paths_any(void)
{
	return num_paths > 0;
}

int fl_agent_connect(void)
{
	int err = -ENOENT;

	for (unsigned i = 0; i < num_paths; i++) {
		uint32_t uid = 0;
		int fd = fl_proto_connect(paths[i].path, &uid);

		/* A set-id program's effective uid is not its caller's: root only. */
		if (fd >= 0 && uid != 0 && fl_env_secure()) {
			close(fd);
			fd = -EPERM;
		}
		if (fd >= 0) {
			atomic_store(&last, i);
			return fd;
		}
		if (fd == -EPERM && !atomic_exchange(&peer_warned[i], true))
			fl_log(FL_LOG_WARN, "%s is served by uid %u, neither root nor this "
			       "process's uid %u%s: not registering with it", paths[i].path, uid,
			       (unsigned)geteuid(), fl_env_secure() ? " (a set-id program: root only)" : "");
		/* The reason worth telling: one path's, other than nobody listening there. */
		if (err == -ENOENT || err == -ECONNREFUSED)
			err = fd;
	}
	return err;
}

const char *fl_agent_path(void)
{
	return num_paths ? paths[atomic_load(&last)].path : "";
}

const char *fl_agent_path_what(void)
{
	return num_paths ? paths[atomic_load(&last)].what : "";
}

void fl_agent_paths_say_none(void)
{
	char list[MAX_PATHS * (sizeof(paths[0].path) + 32)];
	size_t len = 0;

	list[0] = 0;
	for (unsigned i = 0; i < num_paths; i++)
		len += fl_fmt(list + len, sizeof(list) - len, "%s%s (%s)", i ? ", " : "",
			      paths[i].path, paths[i].what);
	if (num_paths)
		fl_log(FL_LOG_INFO, "no faultlined answered at %s: not registered; trying again "
		       "in the background", list);
	else
		fl_log(FL_LOG_INFO, "no faultlined to look for: not registering");
}
