/* SPDX-License-Identifier: MIT */
/*
 * Descriptors faultline owns inside a program that may close or reuse any
 * descriptor number it likes (daemons close 3..1023 at start, then open
 * their own files).  Each one is kept at a high number, with the identity
 * (device and inode) of what it was opened on, and is checked before every
 * use: one the program closed, or whose number it reused, is never read,
 * written, sent or closed again; it is forgotten.
 *
 * The identity tells apart memfds, sockets and files; it cannot tell one
 * eventfd from another (they share one inode), so faultline uses none.
 */
#ifndef FL_CORE_OWNFD_H
#define FL_CORE_OWNFD_H

#include <stdbool.h>
#include <sys/types.h>

/*
 * faultline keeps descriptors only at this number or above: the ones below
 * are the program's (at RLIMIT_NOFILE 4, its one free number).
 */
#define FL_OWNFD_FLOOR 512

struct fl_ownfd {
	int fd;		/* -1: none */
	dev_t dev;
	ino_t ino;
};

#define FL_OWNFD_NONE ((struct fl_ownfd){ .fd = -1 })

/*
 * Takes fd (just opened by faultline): moves it at or above the soft
 * RLIMIT_NOFILE when the hard limit leaves room and the soft one is at
 * most 65536 (raised for a moment by 64 to make the move, then put back:
 * a program that looks at the limit in that moment sees it raised), else
 * to FL_OWNFD_FLOOR or above; close-on-exec; and records what it is.  Returns 0 with *o set, or -errno
 * (fd is then closed): -EMFILE when no number is free up there (the
 * process's RLIMIT_NOFILE is at most the floor, or it uses every number
 * above).  Thread-safe.
 */
int fl_ownfd_adopt(struct fl_ownfd *o, int fd);

/*
 * Returns o's descriptor when it is still the one faultline opened, else
 * -1 (and o is forgotten: faultline never touches that number again).
 * Thread-safe for distinct o.
 */
int fl_ownfd_get(struct fl_ownfd *o);

/*
 * A descriptor faultline holds only for a moment (a file it reads, a /proc
 * listing), just opened: moved to FL_OWNFD_FLOOR or above, close-on-exec,
 * the low number closed, so that the program's own opens get the numbers
 * they would without faultline and a program that closes every number at
 * its start (a daemon: 3..1023, while a thread of faultline's reads a
 * module's file) does not close it under faultline, nor faultline the
 * program's file that took its number.  Returns the new descriptor, or fd
 * itself when nothing is free up there.  Thread-safe, async-signal-safe.
 */
int fl_ownfd_transient(int fd);

/* Closes o's descriptor if it is still faultline's, and forgets it. */
void fl_ownfd_close(struct fl_ownfd *o);

#endif /* FL_CORE_OWNFD_H */
