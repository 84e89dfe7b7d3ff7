/* SPDX-License-Identifier: MIT */
/*
 * Sites from a fault map: the sorted site entries of a loaded ELF module
 * (function addresses from the discovery layer) or of registered JIT code
 * (function addresses as stored).  See sites.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <faultline/discovery.h>
#include <faultline/dispatch.h>

#include "format/diag.h"
#include "format/index.h"
#include "table/sites.h"

static int sites_push(struct fl_sites *s, uint64_t function, uint64_t faulting, uint64_t handler,
		      uint32_t kind)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		struct fl_site_entry *v = realloc(s->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = (struct fl_site_entry){ .faulting_pc = faulting, .handler_pc = handler,
					       .kind = kind, .function = function };
	return 0;
}

/*
 * Puts v[0..n) in faulting PC order, through the format layer's radix
 * sort: llc lists a table's functions in its own order (at 10^5 sites
 * qsort was a third of a process's start-up).  Returns 0 or -ENOMEM.
 */
static int sort_sites(struct fl_site_entry *v, size_t n)
{
	struct fl_key *keys = malloc(n * sizeof(*keys));
	struct fl_site_entry *tmp = malloc(n * sizeof(*tmp));
	int err = keys && tmp ? 0 : -ENOMEM;

	for (size_t i = 0; !err && i < n; i++)
		keys[i] = (struct fl_key){ .key = v[i].faulting_pc, .val = (uint32_t)i };
	if (!err)
		err = fl_keys_sort(keys, n);
	for (size_t i = 0; !err && i < n; i++)
		tmp[i] = v[keys[i].val];
	if (!err)
		memcpy(v, tmp, n * sizeof(*v));
	free(keys);
	free(tmp);
	return err;
}

/*
 * Sorts the sites and checks there is one entry per faulting PC.  Returns
 * 0, -ENOMEM, or -EINVAL with diag set.
 */
static int sites_finish(struct fl_sites *s, struct fl_diag *diag)
{
	size_t sorted = 1;
	int err;

	while (sorted < s->n && s->v[sorted - 1].faulting_pc <= s->v[sorted].faulting_pc)
		sorted++;
	if (sorted < s->n && s->n > FL_INDEX_MAX)
		return -ENOMEM;
	if (sorted < s->n && (err = sort_sites(s->v, s->n)) != 0)
		return err;
	for (size_t i = 1; i < s->n; i++)
		if (s->v[i].faulting_pc == s->v[i - 1].faulting_pc)
			return fl_diag_say(diag, -EINVAL,
					   ".llvm_faultmaps: two entries for faulting PC 0x%llx",
					   (unsigned long long)s->v[i].faulting_pc);
	return 0;
}

/* Sites of a discovered module: function addresses are the discovery layer's. */
int fl_sites_of_elf(const struct fl_module *fm, struct fl_sites *out, struct fl_diag *diag)
{
	const struct fl_module_section *sec = &fm->sections[FL_SECTION_FAULTMAP];
	struct fl_faultmap_cursor c;
	struct fl_faultmap_event ev;
	size_t fn = 0;
	uint64_t fn_addr = 0;
	int r;

	if (!sec->data)
		return 0;
	fl_faultmap_cursor_init(&c, sec->data, sec->size, sec->parse_flags, diag);
	while ((r = fl_faultmap_next(&c, &ev)) > 0) {
		if (ev.type == FL_FM_FUNCTION) {
			if (fn >= sec->num_functions)
				return -EINVAL;
			fn_addr = sec->functions[fn++].address;
		} else if (ev.type == FL_FM_FAULT) {
			uint64_t at = fn_addr + ev.fault.faulting_pc_offset;
			uint64_t to = fn_addr + ev.fault.handler_pc_offset;

			if (!fl_module_text_contains(fm, at) || !fl_module_text_contains(fm, to))
				return fl_diag_set(diag, -EINVAL, ".llvm_faultmaps", ev.table,
						   "function %u: fault %u: a PC outside the module's code",
						   ev.fault.function, ev.fault.index);
			if (sites_push(out, fn_addr, at, to, ev.fault.kind))
				return -ENOMEM;
		}
	}
	if (r < 0)
		return r;
	return sites_finish(out, diag);
}

/* Sites of JIT code: function addresses as stored, inside [lo, hi). */
int fl_sites_of_jit(const struct fl_jit_reg *reg, struct fl_sites *out,
		    struct fl_diag *diag)
{
	uint64_t lo = reg->code_start, hi = reg->code_start + reg->code_size;
	struct fl_faultmap_cursor c;
	struct fl_faultmap_event ev;
	int r;

	fl_faultmap_cursor_init(&c, reg->faultmap, reg->faultmap_size, reg->parse_flags, diag);
	while ((r = fl_faultmap_next(&c, &ev)) > 0) {
		uint64_t at, to;

		if (ev.type != FL_FM_FAULT)
			continue;
		at = ev.fault.function_address + ev.fault.faulting_pc_offset;
		to = ev.fault.function_address + ev.fault.handler_pc_offset;
		if (at < lo || at >= hi || to < lo || to >= hi ||
		    at < ev.fault.function_address || to < ev.fault.function_address)
			return fl_diag_set(diag, -EINVAL, ".llvm_faultmaps", ev.table,
					   "function %u: fault %u: PC outside the code range "
					   "[0x%llx, 0x%llx)", ev.fault.function, ev.fault.index,
					   (unsigned long long)lo, (unsigned long long)hi);
		if (sites_push(out, ev.fault.function_address, at, to, ev.fault.kind))
			return -ENOMEM;
	}
	if (r < 0)
		return r;
	return sites_finish(out, diag);
}
