/* SPDX-License-Identifier: MIT */
/*
 * The daemon's directories (the socket's and the state's), checked so that
 * no other user can choose what the daemon writes, replaces or chmods.
 * See safedir.h.
 *
 * The path is walked from "/" one component at a time with openat(...,
 * O_NOFOLLOW), so that what is checked is what is used: a component
 * swapped for a symlink between the check and the use is refused, not
 * followed.  A symlink met on the way (/var/run -> /run) is followed only
 * when it and its directory pass the same checks; its target is walked
 * the same way.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "safedir.h"

#define MAX_LINKS 16

struct walk {
	uid_t me;
	mode_t mode;		/* for directories created */
	bool create;
	int links;
	char *why;
	size_t why_size;
};

static int refuse(struct walk *w, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int refuse(struct walk *w, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(w->why, w->why_size, fmt, ap);
	va_end(ap);
	return err;
}

/*
 * Who may change what is in a directory: its owner, and whoever its mode
 * lets write.  Only root and this daemon's uid may own it; group or other
 * write is refused unless the directory is sticky (then others may add
 * names, but not rename or remove ours).
 */
static int check_dir(struct walk *w, const struct stat *st, const char *name)
{
	if (!S_ISDIR(st->st_mode))
		return refuse(w, -ENOTDIR, "%s is not a directory", name);
	if (st->st_uid != 0 && st->st_uid != w->me)
		return refuse(w, -EPERM, "%s belongs to uid %u, neither root nor faultlined's "
			      "uid %u", name, (unsigned)st->st_uid, (unsigned)w->me);
	if ((st->st_mode & (S_IWGRP | S_IWOTH)) && !(st->st_mode & S_ISVTX))
		return refuse(w, -EPERM, "%s is writable by other users (mode %04o) and not "
			      "sticky", name, (unsigned)(st->st_mode & 07777));
	return 0;
}

static int walk_from(struct walk *w, int at, const char *path, char *shown, size_t shown_len);

/* Takes "." and ".." out of the absolute path p, in place ("/.." is "/"). */
static void normalize(char *p)
{
	char buf[PATH_MAX], *name, *save = NULL;
	size_t len = 0;

	snprintf(buf, sizeof(buf), "%s", p);
	p[0] = 0;
	for (name = strtok_r(buf, "/", &save); name; name = strtok_r(NULL, "/", &save)) {
		if (strcmp(name, ".") == 0)
			continue;
		if (strcmp(name, "..") == 0) {
			char *slash = strrchr(p, '/');

			if (slash)
				*slash = 0;
			len = strlen(p);
			continue;
		}
		len += (size_t)snprintf(p + len, PATH_MAX - len, "/%s", name);
	}
	if (!p[0])
		snprintf(p, PATH_MAX, "/");
}

/*
 * Steps from directory at into name (one component).  Returns the new
 * directory's fd (O_PATH), or -errno with w->why filled in.  shown is the
 * path walked so far, for messages; name is appended to it.
 */
static int step(struct walk *w, int at, const char *name, char *shown, size_t shown_len)
{
	size_t len = strlen(shown);
	struct stat st;
	int fd, err;

	snprintf(shown + len, shown_len - len, "%s%s", len > 1 ? "/" : "", name);
	if (fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
		if (errno != ENOENT || !w->create)
			return refuse(w, -errno, "%s: %s", shown, strerror(errno));
		if (mkdirat(at, name, w->mode) != 0 && errno != EEXIST)
			return refuse(w, -errno, "cannot create %s: %s", shown, strerror(errno));
		fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return refuse(w, -errno, "%s: %s", shown, strerror(errno));
		/* The mode asked for, whatever the umask. */
		if (fstat(fd, &st) != 0 || (st.st_uid == w->me && fchmod(fd, w->mode) != 0)) {
			err = -errno;
			close(fd);
			return refuse(w, err, "%s: %s", shown, strerror(-err));
		}
		close(fd);
		if (fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			return refuse(w, -errno, "%s: %s", shown, strerror(errno));
	}
	if (S_ISLNK(st.st_mode)) {
		char target[PATH_MAX];
		ssize_t n;

		if (st.st_uid != 0 && st.st_uid != w->me)
			return refuse(w, -EPERM, "%s is a symbolic link of uid %u, neither root "
				      "nor faultlined's uid %u", shown, (unsigned)st.st_uid,
				      (unsigned)w->me);
		if (++w->links > MAX_LINKS)
			return refuse(w, -ELOOP, "%s: too many symbolic links", shown);
		n = readlinkat(at, name, target, sizeof(target) - 1);
		if (n < 0)
			return refuse(w, -errno, "%s: %s", shown, strerror(errno));
		target[n] = 0;
		/*
		 * The target is walked from "/" as an absolute path.  A
		 * relative one (/var/run -> ../run) is joined to the link's
		 * directory, which shown names: a path of real, checked
		 * directories, so that ".." in it can be taken textually.
		 */
		if (target[0] != '/') {
			char joined[PATH_MAX], *slash = strrchr(shown, '/');

			if (slash && slash != shown)
				*slash = 0;
			else
				snprintf(shown, shown_len, "/");
			if ((size_t)snprintf(joined, sizeof(joined), "%s/%s", shown, target) >=
			    sizeof(joined))
				return refuse(w, -ENAMETOOLONG, "%s: link target too long", shown);
			snprintf(target, sizeof(target), "%s", joined);
		}
		normalize(target);
		snprintf(shown, shown_len, "/");
		fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			return refuse(w, -errno, "/: %s", strerror(errno));
		err = walk_from(w, fd, target, shown, shown_len);
		close(fd);
		return err;
	}
	fd = openat(at, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return refuse(w, -errno, "%s: %s", shown, strerror(errno));
	/* What was opened, not what was at the name a moment before. */
	if (fstat(fd, &st) != 0)
		err = refuse(w, -errno, "%s: %s", shown, strerror(errno));
	else
		err = check_dir(w, &st, shown);
	if (err < 0) {
		close(fd);
		return err;
	}
	return fd;
}

/* Walks path (relative to at, or absolute) component by component. */
static int walk_from(struct walk *w, int at, const char *path, char *shown, size_t shown_len)
{
	char buf[PATH_MAX], *name, *save = NULL;
	int fd = fcntl(at, F_DUPFD_CLOEXEC, 0);

	if (fd < 0)
		return refuse(w, -errno, "%s", strerror(errno));
	if (strlen(path) >= sizeof(buf)) {
		close(fd);
		return refuse(w, -ENAMETOOLONG, "%s: path too long", path);
	}
	strcpy(buf, path);
	for (name = strtok_r(buf, "/", &save); name; name = strtok_r(NULL, "/", &save)) {
		int next;

		if (strcmp(name, ".") == 0)
			continue;
		if (strcmp(name, "..") == 0) {
			close(fd);
			return refuse(w, -EINVAL, "%s: a path with \"..\" is not taken", path);
		}
		next = step(w, fd, name, shown, shown_len);
		close(fd);
		if (next < 0)
			return next;
		fd = next;
	}
	return fd;
}

int fld_safedir_open(const char *path, mode_t mode, bool create, char *why, size_t why_size)
{
	struct walk w = { .me = geteuid(), .mode = mode, .create = create, .why = why,
			  .why_size = why_size };
	char shown[PATH_MAX] = "/";
	struct stat st;
	int root, fd;

	if (path[0] != '/')
		return refuse(&w, -EINVAL, "%s: not an absolute path", path);
	root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return refuse(&w, -errno, "/: %s", strerror(errno));
	if (fstat(root, &st) != 0 || check_dir(&w, &st, "/") < 0) {
		close(root);
		return -EPERM;
	}
	fd = walk_from(&w, root, path, shown, sizeof(shown));
	close(root);
	return fd;
}
