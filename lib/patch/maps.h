/* SPDX-License-Identifier: MIT */
/* Internal to lib/patch/: the process's mappings (maps.c). */
#ifndef FL_PATCH_MAPS_H
#define FL_PATCH_MAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fl_mapping {
	uint64_t start;
	uint64_t end;
	int prot;		/* PROT_* */
	bool shared_file;	/* a shared mapping of a file (not a memfd) */
	bool heap;		/* [heap] */
	bool stack;		/* [stack] */
};

/* In address order, as the kernel lists them. */
struct fl_maps {
	struct fl_mapping *m;
	size_t n;
};

/*
 * Reads /proc/self/maps.  Returns 0 with *out filled in (free out->m), or
 * -errno (out->m is then NULL).
 */
int fl_maps_read(struct fl_maps *out);

/* The mapping that holds addr, or NULL. */
const struct fl_mapping *fl_maps_find(const struct fl_maps *maps, uint64_t addr);

/*
 * The readable, executable code around addr: the run of adjacent r-x
 * mappings that holds it, in [*start, *end).  One text segment is often
 * listed as several: writing a page of it (a patch) gives that page an
 * anonymous copy, and the kernel may keep it a mapping of its own.
 * Returns false when addr is not in readable, executable memory.
 */
bool fl_maps_code(const struct fl_maps *maps, uint64_t addr, uint64_t *start, uint64_t *end);

#endif /* FL_PATCH_MAPS_H */
