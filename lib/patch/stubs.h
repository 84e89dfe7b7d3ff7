/* SPDX-License-Identifier: MIT */
/*
 * Internal to lib/patch/: executable memory for healing stubs, placed
 * where a jump can reach them (stubs.c).  Everything here is called with
 * the patch lock held.
 */
#ifndef FL_PATCH_STUBS_H
#define FL_PATCH_STUBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "patch/maps.h"

/*
 * Finds where size bytes of stub may start in [lo, hi], near near when the
 * window leaves a choice: in a stub page with room, else in a page no
 * mapping of maps (read just before) holds.  Nothing is taken yet.
 * Returns true with *at set.
 */
bool fl_stubs_find(const struct fl_maps *maps, uint64_t lo, uint64_t hi, size_t size,
		   uint64_t near, uint64_t *at);

/*
 * Takes [at, at + size) (found by fl_stubs_find) and writes bytes there:
 * a new page is mapped (MAP_FIXED_NOREPLACE: never over another mapping),
 * a page that holds other stubs is made writable for the write and
 * executable throughout.  The bytes are in memory before this returns;
 * no thread can have jumped there yet.  Returns 0, -EEXIST (the page was
 * mapped meanwhile by someone else), or -errno.
 */
int fl_stubs_take(uint64_t at, const uint8_t *bytes, size_t size);

/*
 * Gives [at, at + size) back, once no thread can be in it; a page with no
 * stub left is unmapped.
 */
void fl_stubs_free(uint64_t at, size_t size);

#endif /* FL_PATCH_STUBS_H */
