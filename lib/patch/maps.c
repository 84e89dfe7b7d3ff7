/* SPDX-License-Identifier: MIT */
/* The process's mappings, from /proc/self/maps (maps.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "patch/maps.h"

int fl_maps_read(struct fl_maps *out)
{
	size_t cap = 1 << 16, len = 0, mcap = 0;
	char *buf = malloc(cap), *line, *next;
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
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
		int path = 0;
		struct fl_mapping *m;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (sscanf(line, "%llx-%llx %4s %*s %*s %*s %n", &start, &end, perms, &path) < 3)
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
