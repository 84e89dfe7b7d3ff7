/* SPDX-License-Identifier: MIT */
/*
 * ptrace's rule for whatever reads a process's memory layout or changes
 * its code through the daemon (docs/protocol.md, "Who may do what"): the
 * queries that give addresses (STATS, SITES, STACKMAPS, STACKMAP_PC),
 * every REQUEST and every POINT are served only to a requester that could
 * ptrace the process.  Any other requester is answered as about another
 * user's process: "no registered process".
 */
#ifndef FLD_ACCESS_H
#define FLD_ACCESS_H

#include <stdbool.h>
#include <sys/types.h>

struct fld_proc;

/*
 * Whether a requester of uid and gid (its SO_PEERCRED, effective ids)
 * could ptrace p: root; or p's real, effective, saved and filesystem uids
 * all uid, its gids all gid, and p dumpable, in the kernel's word and in
 * its agent's last report (DUMPABLE).  A live p is looked at now in
 * /proc/PID/status (its ids, and the file's owner: the kernel makes it
 * root for a process that is not dumpable), and what is seen is kept in p
 * for when it is gone; an exited one is taken as it was last seen.
 */
bool fld_access_traceable(struct fld_proc *p, uid_t uid, gid_t gid);

/* Looks at live p in /proc (as fld_access_traceable does): at its HELLO. */
void fld_access_look(struct fld_proc *p);

#endif /* FLD_ACCESS_H */
