/* SPDX-License-Identifier: MIT */
/* Descriptors faultline owns in a program that may close any (ownfd.h). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/ownfd.h"

/*
 * The soft RLIMIT_NOFILE, when faultline's descriptors can go at or above
 * it: programs that look at or close every descriptor below it (daemons
 * at start, sysconf(_SC_OPEN_MAX) loops, CPython's close_fds) then never
 * meet them.  Not above FL_OWNFD_ABOVE_MAX: the kernel's descriptor
 * table grows to the highest number in use.  0: not possible.
 */
#define FL_OWNFD_ABOVE_MAX 65536
#define FL_OWNFD_ROOM 64

static pthread_mutex_t limit_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * fd moved at or above the soft limit, which is raised by FL_OWNFD_ROOM
 * for the dup (a descriptor above the limit stays valid) and put back at
 * once, unless the program changed it meanwhile.  Returns the new
 * number (fd closed), or -1 (fd untouched).
 */
static int above_limit(int fd)
{
	struct rlimit lim, raised, now;
	int high = -1;

	pthread_mutex_lock(&limit_lock);
	if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur >= FL_OWNFD_FLOOR &&
	    lim.rlim_cur <= FL_OWNFD_ABOVE_MAX &&
	    (lim.rlim_max == RLIM_INFINITY || lim.rlim_max >= lim.rlim_cur + FL_OWNFD_ROOM)) {
		raised = lim;
		raised.rlim_cur = lim.rlim_cur + FL_OWNFD_ROOM;
		if (setrlimit(RLIMIT_NOFILE, &raised) == 0) {
			high = fcntl(fd, F_DUPFD_CLOEXEC, (int)lim.rlim_cur);
			if (getrlimit(RLIMIT_NOFILE, &now) == 0 && now.rlim_cur == raised.rlim_cur)
				setrlimit(RLIMIT_NOFILE, &lim);
		}
	}
	pthread_mutex_unlock(&limit_lock);
	if (high >= 0)
		close(fd);
	return high;
}

int fl_ownfd_adopt(struct fl_ownfd *o, int fd)
{
	struct stat st;
	int high, err;

	*o = FL_OWNFD_NONE;
	if (fd < 0)
		return -EBADF;
	if ((high = above_limit(fd)) >= 0)
		fd = high;
	else if (fd < FL_OWNFD_FLOOR) {
		high = fcntl(fd, F_DUPFD_CLOEXEC, FL_OWNFD_FLOOR);
		close(fd);
		/* EINVAL: the floor is at or past RLIMIT_NOFILE. */
		if (high < 0)
			return errno == EINVAL || errno == EMFILE ? -EMFILE : -errno;
		fd = high;
	}
	if (fstat(fd, &st) != 0) {
		err = -errno;
		close(fd);
		return err;
	}
	o->fd = fd;
	o->dev = st.st_dev;
	o->ino = st.st_ino;
	return 0;
}

int fl_ownfd_get(struct fl_ownfd *o)
{
	struct stat st;

	if (o->fd < 0)
		return -1;
	/*
	 * A program that closes the number and opens something else there
	 * between this check and the use can still win: that takes two
	 * system calls of its own in the window, on a number it did not open.
	 */
	if (fstat(o->fd, &st) != 0 || st.st_dev != o->dev || st.st_ino != o->ino) {
		*o = FL_OWNFD_NONE;
		return -1;
	}
	return o->fd;
}

void fl_ownfd_close(struct fl_ownfd *o)
{
	int fd = fl_ownfd_get(o);

	if (fd >= 0)
		close(fd);
	*o = FL_OWNFD_NONE;
}

int fl_ownfd_transient(int fd)
{
	int high;

	if (fd < 0 || fd >= FL_OWNFD_FLOOR)
		return fd;
	high = fcntl(fd, F_DUPFD_CLOEXEC, FL_OWNFD_FLOOR);
	if (high < 0)
		return fd;
	close(fd);
	return high;
}
