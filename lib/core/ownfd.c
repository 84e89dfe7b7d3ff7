/* SPDX-License-Identifier: MIT */
/* Descriptors faultline owns in a program that may close any (ownfd.h). */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/ownfd.h"

int fl_ownfd_adopt(struct fl_ownfd *o, int fd)
{
	struct stat st;
	int high, err;

	*o = FL_OWNFD_NONE;
	if (fd < 0)
		return -EBADF;
	if (fd < FL_OWNFD_FLOOR) {
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
