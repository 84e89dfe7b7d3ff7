// SPDX-License-Identifier: MIT
/*
 * The perf map (perfmap.h).
 *
 * perf reads /tmp/perf-PID.map for samples in memory that no file backs,
 * one "START SIZE NAME" line per piece of code, and so does faultline
 * profile (daemon/cli/symbolize.c).  A JIT that writes one (V8's
 * --perf-basic-prof, the JVM's agents, ...) owns it, so faultline adds its
 * lines only when the file is its own or the program asked for it:
 *   - FAULTLINE_PERF_MAP unset: faultline creates the file (O_EXCL); when
 *     it exists already, it is the program's and is left alone.
 *   - FAULTLINE_PERF_MAP=1: faultline also appends to the program's.
 *   - FAULTLINE_PERF_MAP=0: never.
 * /tmp is everyone's: the file is opened with O_NOFOLLOW (never through a
 * symlink), and one that exists must be a regular file owned by the
 * process's effective user (another user cannot have it receive our
 * lines; we never write into theirs).  O_NONBLOCK keeps a FIFO someone
 * left there from blocking the open.  Each line is one write to an
 * O_APPEND descriptor, so the program's own lines and ours do not mix.
 *
 * After fork: the child is another PID, so its perf map is another file.
 * The inherited descriptor is the parent's file and is closed in the
 * child; the child's map is decided and opened at its next registration
 * (the same rules), which first writes again every piece of code still
 * registered (its copies of the parent's): fl_perfmap_open returns 1.  A
 * child that registers nothing has no map.
 *
 * Lines are never removed (perf maps have no way to say so): a range
 * registered again later is named by its later line, which is what perf
 * and faultline profile take.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/env.h"
#include "core/log.h"
#include "core/ownfd.h"
#include "patch/perfmap.h"

/* The map of process pid (0: none decided yet), under the patch lock. */
static struct {
	pid_t pid;
	int err;		/* 0: open in o; else why not */
	struct fl_ownfd o;
	char path[64];
	bool write_failed;
} map = { .o = FL_OWNFD_NONE };

/* Opens the existing map if it is ours to append to.  Returns the fd or -errno. */
static int open_existing(const char *path)
{
	struct stat st;
	int fd = open(path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);

	if (fd < 0) {
		fl_log(FL_LOG_INFO, "perf map %s: not written: %s%s", path, strerror(errno),
		       errno == ELOOP ? " (a symlink)" : "");
		return -errno;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
		fl_log(FL_LOG_INFO, "perf map %s: not written: it is not a regular file of "
		       "this process's user", path);
		close(fd);
		return -EPERM;
	}
	return fd;
}

static int decide(void)
{
	const char *want = fl_env(FL_PERFMAP_ENV);
	int fd;

	snprintf(map.path, sizeof(map.path), "/tmp/perf-%d.map", (int)map.pid);
	if (want && !strcmp(want, "0")) {
		fl_log(FL_LOG_INFO, "perf map %s: not written (" FL_PERFMAP_ENV "=0)", map.path);
		return -ECANCELED;
	}
	fd = open(map.path, O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		  0644);
	if (fd < 0 && errno != EEXIST) {
		fl_log(FL_LOG_INFO, "perf map %s: not written: %s", map.path, strerror(errno));
		return -errno;
	}
	if (fd < 0) {
		if (!want || strcmp(want, "1")) {
			fl_log(FL_LOG_INFO, "perf map %s: not written: the program has its own "
			       "(" FL_PERFMAP_ENV "=1 appends to it)", map.path);
			return -EEXIST;
		}
		if ((fd = open_existing(map.path)) < 0)
			return fd;
	}
	return fl_ownfd_adopt(&map.o, fd);
}

int fl_perfmap_open(void)
{
	pid_t pid = getpid();

	if (map.pid == pid)
		return map.err ? map.err : 0;
	/* A child after fork: the descriptor is its parent's file. */
	fl_ownfd_close(&map.o);
	map.pid = pid;
	map.write_failed = false;
	map.err = decide();
	return map.err ? map.err : 1;
}

int fl_perfmap_write(uint64_t start, size_t size, const char *name)
{
	char line[512];
	int n, fd;

	if (map.pid != getpid() || map.err)
		return -EBADF;
	n = snprintf(line, sizeof(line), "%llx %zx %s\n", (unsigned long long)start, size, name);
	if (n < 0 || (size_t)n >= sizeof(line))
		return -ENAMETOOLONG;
	fd = fl_ownfd_get(&map.o);
	if (fd < 0) {
		/* The program closed it (or reused its number): stop, do not reopen. */
		map.err = -EBADF;
		fl_log(FL_LOG_INFO, "perf map %s: no longer written: the program closed its "
		       "descriptor", map.path);
		return -EBADF;
	}
	if (write(fd, line, (size_t)n) != n) {
		int err = errno ? -errno : -EIO;

		if (!map.write_failed)
			fl_log(FL_LOG_WARN, "perf map %s: write: %s", map.path, strerror(-err));
		map.write_failed = true;
		return err;
	}
	return 0;
}
