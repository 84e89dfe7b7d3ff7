/* SPDX-License-Identifier: MIT */
/*
 * The agent: the in-process side of the daemon protocol (docs/protocol.md).
 * It registers the process with faultlined when one is listening, tells
 * it about every module the registry adds or removes, and serves the
 * daemon's requests from the shared region.  Without a daemon the process
 * works the same; the agent keeps trying in the background.
 *
 * Threads: "fl-agent" (the connection) and "fl-requests" (the request
 * ring's futex).  Neither ever runs in signal context.
 */
#ifndef FL_AGENT_AGENT_H
#define FL_AGENT_AGENT_H

#include <stdbool.h>

/*
 * Subscribes the agent to the table's changes (fl_table_observe): modules
 * added and removed, which it queues for the daemon, and forks.  Before
 * the first fl_refresh, so that it hears of every module; the daemon hears
 * of them once fl_agent_start has run.  Returns 0 or -errno.
 */
int fl_agent_subscribe(void);

/*
 * Starts the agent for the socket at path (NULL: $FAULTLINE_SOCKET, else
 * the default).  Registers synchronously when a daemon answers at once, so
 * that a process living a millisecond is counted.  Returns 0, or -errno
 * when the threads cannot be started.
 */
int fl_agent_start(const char *path);
/*
 * Whether the fl-agent thread runs: it does the first rescan when fl_init
 * left it pending (FL_INIT_DEFER_DISCOVERY), before anything else.
 */
bool fl_agent_scanning(void);

/*
 * The process opted in to raw code bytes from the daemon: its HELLO says
 * so (FL_HELLO_ALLOW_PATCH), and its request thread applies patch point
 * writes.  Before fl_agent_start; there is no way back.
 */
void fl_agent_allow_patch(void);

#endif /* FL_AGENT_AGENT_H */
