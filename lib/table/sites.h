/* SPDX-License-Identifier: MIT */
/*
 * Internal to lib/table/: sites from a fault map (sites.c).  Thread-safe
 * (no shared state); they allocate; never in signal context.
 */
#ifndef FL_TABLE_SITES_H
#define FL_TABLE_SITES_H

#include <stddef.h>

#include "dispatch/dispatch.h"

struct fl_diag;
struct fl_module;
struct fl_jit_reg;

/* A growing array of site entries. */
struct fl_sites {
	struct fl_site_entry *v;
	size_t n;
	size_t cap;
};

/*
 * Appends the sites of a discovered module (function addresses as the
 * discovery layer resolved them; every PC inside its code) to out, sorted.
 * Returns 0, -EINVAL with *diag filled in, or -ENOMEM.  out->v is the
 * caller's to free either way.
 */
int fl_sites_of_elf(const struct fl_module *fm, struct fl_sites *out, struct fl_diag *diag);

/*
 * The same for JIT code: function addresses as stored, every PC inside
 * [reg->code_start, + reg->code_size).
 */
int fl_sites_of_jit(const struct fl_jit_reg *reg, struct fl_sites *out,
		    struct fl_diag *diag);

#endif /* FL_TABLE_SITES_H */
