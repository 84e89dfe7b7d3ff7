/* SPDX-License-Identifier: MIT */
/* The process's mappings, from /proc/self/maps (maps.h). */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/ownfd.h"
#include "patch/maps.h"

/* Skips one field and the blanks after it. */
static const char *skip_field(const char *p)
{
	while (*p && *p != ' ')
		p++;
	while (*p == ' ')
		p++;
	return p;
}

/*
 * One line: "START-END PERMS OFFSET DEV INODE [PATH]".  By hand rather
 * than with sscanf, which was most of the parse (a heal reads the file).
 * *path: where PATH starts (the line's end when there is none).
 */
static bool parse_line(const char *line, unsigned long long *start, unsigned long long *end,
		       char perms[5], size_t *path)
{
	const char *p = line;
	char *q;

	*start = strtoull(p, &q, 16);
	if (q == p || *q != '-')
		return false;
	p = q + 1;
	*end = strtoull(p, &q, 16);
	if (q == p || *q != ' ')
		return false;
	p = q + 1;
	for (int i = 0; i < 4; i++) {
		if (!p[i] || p[i] == ' ')
			return false;
		perms[i] = p[i];
	}
	perms[4] = '\0';
	p = skip_field(p);
	for (int i = 0; i < 3; i++)
		p = skip_field(p);
	*path = (size_t)(p - line);
	return true;
}

int fl_maps_read(struct fl_maps *out)
{
	size_t cap = 1 << 16, len = 0, mcap = 0;
	char *buf = malloc(cap), *line, *next;
	int fd = fl_ownfd_transient(open("/proc/self/maps", O_RDONLY | O_CLOEXEC));
	ssize_t r;

	out->m = NULL;
	out->n = 0;
	if (!buf || fd < 0) {
		int err = fd < 0 ? -errno : -ENOMEM;

		free(buf);
		if (fd >= 0)
			close(fd);
		return err;
	}
	while ((r = read(fd, buf + len, cap - len - 1)) > 0 || (r < 0 && errno == EINTR)) {
		if (r < 0)
			continue;
		len += (size_t)r;
		if (cap - len - 1 == 0) {
			char *bigger = realloc(buf, cap * 2);

			if (!bigger) {
				free(buf);
				close(fd);
				return -ENOMEM;
			}
			buf = bigger;
			cap *= 2;
		}
	}
	close(fd);
	buf[len] = '\0';
	for (line = buf; line && *line; line = next) {
		unsigned long long start, end;
		char perms[5];
		size_t path = 0;
		struct fl_mapping *m;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (!parse_line(line, &start, &end, perms, &path))
			continue;
		if (out->n == mcap) {
			struct fl_mapping *more = realloc(out->m, (mcap ? mcap * 2 : 64) * sizeof(*more));

			if (!more) {
				free(out->m);
				free(buf);
				return -ENOMEM;
			}
			out->m = more;
			mcap = mcap ? mcap * 2 : 64;
		}
		m = &out->m[out->n++];
		m->start = start;
		m->end = end;
		m->prot = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
			  (perms[2] == 'x' ? PROT_EXEC : 0);
		/* A shared mapping of a file, but a memfd's (a JIT's double mapping). */
		m->shared_file = perms[3] == 's' && path > 0 && line[path] == '/' &&
				 strncmp(line + path, "/memfd:", 7) != 0;
		m->heap = path > 0 && strcmp(line + path, "[heap]") == 0;
		m->stack = path > 0 && strncmp(line + path, "[stack", 6) == 0;
	}
	free(buf);
	return 0;
}

const struct fl_mapping *fl_maps_find(const struct fl_maps *maps, uint64_t addr)
{
	for (size_t i = 0; i < maps->n; i++)
		if (addr >= maps->m[i].start && addr < maps->m[i].end)
			return &maps->m[i];
	return NULL;
}

static bool is_code(const struct fl_mapping *m)
{
	return (m->prot & (PROT_READ | PROT_EXEC)) == (PROT_READ | PROT_EXEC);
}

bool fl_maps_code(const struct fl_maps *maps, uint64_t addr, uint64_t *start, uint64_t *end)
{
	size_t i, lo, hi;

	for (i = 0; i < maps->n; i++)
		if (addr >= maps->m[i].start && addr < maps->m[i].end)
			break;
	if (i == maps->n || !is_code(&maps->m[i]))
		return false;
	for (lo = i; lo > 0 && is_code(&maps->m[lo - 1]) &&
		     maps->m[lo - 1].end == maps->m[lo].start; lo--)
		;
	for (hi = i; hi + 1 < maps->n && is_code(&maps->m[hi + 1]) &&
		     maps->m[hi + 1].start == maps->m[hi].end; hi++)
		;
	*start = maps->m[lo].start;
	*end = maps->m[hi].end;
	return true;
}
