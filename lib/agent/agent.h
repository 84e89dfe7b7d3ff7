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

#include <stddef.h>
#include <stdint.h>

#include "dispatch/dispatch.h"

/* What MODULE_ADD says about a module. */
struct fl_agent_module {
	int id;
	const char *name;
	uint64_t code_start;
	uint64_t code_size;
	uint32_t first_counter;
	uint32_t num_sites;
	const struct fl_site_entry *sites;
	/*
	 * The fault map, the stack map, then sm_functions u64 runtime
	 * addresses, or NULL: malloc'd memory that the agent takes over (and
	 * frees), so that no descriptor is held per module; it goes to the
	 * daemon in a sealed memfd made for each sending.
	 */
	void *sections;
	size_t sections_size;
	uint32_t faultmap_size;
	uint32_t stackmap_size;
	uint32_t sm_functions;	/* u64 runtime addresses after the stack map */
	/* Per site, its function's name, or NULL (then dladdr is asked). */
	const char *const *names;
};

/*
 * Starts the agent for the socket at path (NULL: $FAULTLINE_SOCKET, else
 * the default).  Registers synchronously when a daemon answers at once, so
 * that a process living a millisecond is counted.  Returns 0, or -errno
 * when the threads cannot be started.
 */
int fl_agent_start(const char *path);

/*
 * Called by the registry, under its lock, after publishing a module with
 * sites, and before freeing one.  They only queue: never block on the
 * daemon.  The agent takes copies, and takes over m->sections.
 */
void fl_agent_module_added(const struct fl_agent_module *m);
void fl_agent_module_removed(int id);


/* The socket path the agent uses (for messages). */
const char *fl_agent_socket_path(void);

#endif /* FL_AGENT_AGENT_H */
