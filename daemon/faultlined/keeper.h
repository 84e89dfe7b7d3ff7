/* SPDX-License-Identifier: MIT */
/*
 * The keeper (keeper.c): a process of faultlined's own that outlives the
 * daemon.  It holds a copy of the listening socket and the shared region
 * of every registered process, so that a daemon that dies (kill -9, a
 * crash) loses no count:
 *
 *   - a process that exits while no daemon runs, or just after one died,
 *     leaves its region with the keeper: the next daemon reads its final
 *     counts there;
 *   - a process that starts, or registers again, while no daemon runs
 *     still connects: the keeper takes the region its HELLO carries (and
 *     closes the connection; the agent tries again later), so it is
 *     counted even when it exits before a daemon comes back.
 *
 * The daemon hands the keeper each region before it answers WELCOME (a
 * process that was welcomed has its region kept), and lets it go once
 * the process's final counts are in the state file.  A daemon that starts
 * finds its keeper at STATE_DIR/keeper.sock (the state directory is the
 * daemon's alone) and takes back the listening socket and the regions;
 * when there is none, it starts one.  A daemon that stops (SIGTERM) ends
 * its keeper; a keeper whose state directory is removed ends by itself.
 *
 * Loop thread only, like the rest of the daemon.
 */
#ifndef FLD_KEEPER_H
#define FLD_KEEPER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "proto/proto.h"

struct fld_proc;

/* A region the keeper held, handed to a daemon that starts. */
struct fld_kept {
	pid_t pid;
	uid_t uid;
	uint64_t start_time;	/* as read when it was handed over, 0 unknown */
	uint64_t ino;		/* the region's inode */
	char comm[FL_PROTO_COMM];
	int fd;
};

/*
 * Finds the keeper of the state directory dir_fd, or starts one (a
 * process of its own, not a child).  Returns 0 with *listen_fd the
 * listening socket it held (-1: none) and *kept, *nkept the regions it
 * held (the caller's to close and free), -EBUSY when the keeper serves
 * another daemon (of this state directory), or another -errno (the
 * daemon then goes on without a keeper).  Call before the event loop and
 * any thread starts.
 */
int fld_keeper_start(int dir_fd, int *listen_fd, struct fld_kept **kept, size_t *nkept);

/* The daemon's listening socket, for the keeper to hold instead of the last. */
void fld_keeper_listen(int fd);

/*
 * Region fd is p's (its pid, uid, start time, inode and comm): kept until
 * released.  Returns 0 when it went to the keeper, -EPIPE without one.
 */
int fld_keeper_hold(const struct fld_proc *p, int fd);

/* p's region (its pid and inode) is no longer needed. */
void fld_keeper_release(const struct fld_proc *p);

/* The daemon stops: its keeper lets go of everything and ends. */
void fld_keeper_stop(void);

#endif /* FLD_KEEPER_H */
