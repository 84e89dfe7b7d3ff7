/* SPDX-License-Identifier: MIT */
/* The daemon's directories, safe from other users (safedir.c). */
#ifndef FLD_SAFEDIR_H
#define FLD_SAFEDIR_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/*
 * Opens the directory at the absolute path, creating it and its missing
 * parents with mode when create, after checking every directory on the
 * way: each belongs to root or to this process's uid, and none is writable
 * by another user unless it is sticky.  Symbolic links on the way are
 * followed only when root or this uid owns them (their targets are checked
 * the same way).  Once opened, no other user can replace the directory or
 * anything on its path.  Returns an O_PATH descriptor of it, or -errno
 * with why (why_size bytes) saying which directory is wrong and why.
 */
int fld_safedir_open(const char *path, mode_t mode, bool create, char *why, size_t why_size);

#endif /* FLD_SAFEDIR_H */
