/* SPDX-License-Identifier: MIT */
/*
 * ptrace's rule (access.h), as __ptrace_may_access applies it without
 * capabilities: the same uid and gid in every slot (real, effective,
 * saved, filesystem), and a dumpable process (get_dumpable() ==
 * SUID_DUMP_USER).  The kernel makes a set-id program undumpable at exec,
 * and any process that changes its ids; a program may change it itself
 * (prctl(PR_SET_DUMPABLE)), and nothing tells the daemon but its agent
 * (DUMPABLE, which may come late): /proc is looked at when a request
 * comes, which closes that window.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "access.h"
#include "procs.h"

/* The four ids after KEY ("\nUid:") in status, NUL-terminated: real, effective, saved, fs. */
static bool ids(const char *status, const char *key, unsigned out[4])
{
	const char *at = strstr(status, key);

	return at && sscanf(at + strlen(key), "%u %u %u %u", &out[0], &out[1], &out[2],
			    &out[3]) == 4;
}

void fld_access_look(struct fld_proc *p)
{
	char path[64], status[4096];
	unsigned u[4], g[4];
	struct stat st;
	ssize_t n;
	int fd;

	if (p->exited)
		return;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)p->pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;		/* gone meanwhile: as last seen */
	/* The Uid and Gid lines are in the first few hundred bytes. */
	n = fstat(fd, &st) == 0 ? read(fd, status, sizeof(status) - 1) : -1;
	close(fd);
	/* Another process with its pid (it is gone): as last seen. */
	if (n <= 0 || (p->start_time && fld_proc_start_time(p->pid) != p->start_time))
		return;
	status[n] = 0;
	if (!ids(status, "\nUid:", u) || !ids(status, "\nGid:", g)) {
		p->ids_one = false;
		return;
	}
	p->ids_one = u[0] == p->uid && u[1] == p->uid && u[2] == p->uid && u[3] == p->uid &&
		     g[1] == g[0] && g[2] == g[0] && g[3] == g[0];
	p->gid = (gid_t)g[0];
	/* Owned by its effective ids when dumpable, else by root (task_dump_owner). */
	p->kernel_dumpable = st.st_uid == (uid_t)u[1] && st.st_gid == (gid_t)g[1];
}

bool fld_access_traceable(struct fld_proc *p, uid_t uid, gid_t gid)
{
	if (uid == 0)
		return true;
	if (uid != p->uid)
		return false;
	fld_access_look(p);
	return p->ids_one && p->gid == gid && p->kernel_dumpable && p->agent_dumpable;
}
