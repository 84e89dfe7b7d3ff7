/* SPDX-License-Identifier: MIT */
/*
 * What the agent tells the daemon about a module beyond its sites, made
 * when the table is about to add the module (its module_prepare observer,
 * without the table's locks): the sections (the fault map, the stack map,
 * the stack map functions' runtime addresses), and a JIT module's sites'
 * names (the functions registered with it); and later, in the fl-agent
 * thread, the names of a loaded module's sites from its file.  See
 * internal.h.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <faultline/discovery.h>
#include <faultline/dispatch.h>

#include "agent/internal.h"
#include "core/log.h"
#include "proto/proto.h"
#include "table/table.h"

/*
 * What the agent passes to the daemon (in a sealed memfd it makes when it
 * sends it): the fault map, the stack map, then the runtime address of
 * each stack map function (funcs, n), into x->sections.  Sections too
 * large for the protocol, or a failure, leave the daemon without them
 * (logged): the module still dispatches.
 */
static void take_sections(const char *name, const void *fm, size_t fm_size, const void *sm,
			  size_t sm_size, const uint64_t *funcs, size_t n,
			  struct fl_agent_extra *x)
{
	size_t total;
	char *buf;

	x->faultmap_size = x->stackmap_size = x->sm_functions = 0;
	if (!fm)
		fm_size = 0;
	if (!sm)
		sm_size = 0;
	if (!sm_size)
		n = 0;
	total = fm_size + sm_size + n * sizeof(uint64_t);
	if (total > FL_PROTO_MAX_REGION) {
		fl_log(FL_LOG_WARN, "%s: sections of %zu bytes: too large for faultlined",
		       name, total);
		return;
	}
	if (total == 0)
		return;
	buf = malloc(total);
	if (!buf)
		return;
	if (fm_size)
		memcpy(buf, fm, fm_size);
	if (sm_size)
		memcpy(buf + fm_size, sm, sm_size);
	if (n)
		memcpy(buf + fm_size + sm_size, funcs, n * sizeof(uint64_t));
	x->sections = buf;
	x->sections_size = total;
	x->faultmap_size = (uint32_t)fm_size;
	x->stackmap_size = (uint32_t)sm_size;
	x->sm_functions = (uint32_t)n;
}

char **fl_agent_name_sites(const char *path, uint64_t bias, const uint64_t *pcs, uint32_t n,
			   uint32_t **offsets)
{
	struct fl_elf *elf = NULL;
	struct fl_diag d;
	char **names;

	*offsets = NULL;
	if (!n || fl_elf_open(path, NULL, &elf, &d) != 0)
		return NULL;
	names = calloc(n, sizeof(*names));
	*offsets = names ? malloc(n * sizeof(**offsets)) : NULL;
	for (uint32_t i = 0; *offsets && i < n; i++) {
		uint64_t offset;
		const char *name = fl_elf_function_containing(elf, pcs[i] - bias, &offset);

		(*offsets)[i] = FL_SYMBOL_NO_OFFSET;
		if (!name || !*name)
			continue;
		names[i] = strdup(name);
		if (offset < FL_SYMBOL_NO_OFFSET)
			(*offsets)[i] = (uint32_t)offset;
	}
	fl_elf_close(elf);
	if (!*offsets) {
		free(names);
		names = NULL;
	}
	return names;
}

/*
 * The names of a JIT module's sites, from the functions registered with
 * it (sorted by start, disjoint: jit.c checked them): n malloc'd names,
 * NULL for a site outside every function, or NULL for none at all (or no
 * memory), and in *offsets each named site's offset in its function.  A
 * binary search per site: a JIT registers thousands of functions.
 */
static char **jit_names(const struct fl_jit_function *fns, size_t num_fns,
			const struct fl_site_entry *sites, uint32_t n, uint32_t **offsets)
{
	char **names;

	*offsets = NULL;
	if (!num_fns || !n)
		return NULL;
	names = calloc(n, sizeof(*names));
	*offsets = names ? malloc(n * sizeof(**offsets)) : NULL;
	if (!*offsets) {
		free(names);
		return NULL;
	}
	for (uint32_t i = 0; i < n; i++) {
		uint64_t pc = sites[i].faulting_pc;
		size_t lo = 0, hi = num_fns;

		/* The last function starting at or before pc, if any. */
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (fns[mid].start <= pc)
				lo = mid + 1;
			else
				hi = mid;
		}
		(*offsets)[i] = FL_SYMBOL_NO_OFFSET;
		if (lo == 0 || pc - fns[lo - 1].start >= fns[lo - 1].size)
			continue;
		if (pc - fns[lo - 1].start < FL_SYMBOL_NO_OFFSET)
			(*offsets)[i] = (uint32_t)(pc - fns[lo - 1].start);
		names[i] = strdup(fns[lo - 1].name);
		if (!names[i]) {
			while (i--)
				free(names[i]);
			free(names);
			free(*offsets);
			*offsets = NULL;
			return NULL;
		}
	}
	return names;
}

/* The stack map's function addresses as stored (JIT: they are runtime ones). */
static uint64_t *stored_functions(const void *sm, size_t size, uint32_t flags, size_t *n)
{
	struct fl_stackmap_cursor c;
	struct fl_stackmap_event ev;
	uint64_t *v = NULL, *grown;
	size_t cap = 0;

	*n = 0;
	fl_stackmap_cursor_init(&c, sm, size, flags, NULL);
	while (fl_stackmap_next(&c, &ev) > 0) {
		if (ev.type != FL_SM_FUNCTION)
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 16;
			grown = realloc(v, cap * sizeof(*v));
			if (!grown) {
				free(v);
				*n = 0;
				return NULL;
			}
			v = grown;
		}
		v[(*n)++] = ev.function.address;
	}
	return v;
}

/* The program's file (malloc'd), or NULL when it cannot be read. */
static char *exe_path(void)
{
	char buf[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);

	if (n <= 0)
		return NULL;
	buf[n] = 0;
	return strdup(buf);
}

void *fl_agent_module_prepare(const struct fl_table_source *src)
{
	struct fl_agent_extra *x;

	bool stackmap = src->elf ? src->elf->sections[FL_SECTION_STACKMAP].size > 0 :
			src->jit && src->jit->stackmap_size > 0;

	/*
	 * Nothing for the daemon in a module with neither sites nor stack map
	 * records (module_added); one with records alone goes, for
	 * faultline stackmaps.
	 */
	if ((!src->num_sites && !stackmap) || !(x = calloc(1, sizeof(*x))))
		return NULL;
	if (src->elf) {
		const struct fl_module *fm = src->elf;
		const struct fl_module_section *fs = &fm->sections[FL_SECTION_FAULTMAP];
		const struct fl_module_section *ss = &fm->sections[FL_SECTION_STACKMAP];
		uint64_t *funcs;

		x->path = strdup(fm->path);
		x->bias = fm->load_bias;
		if (!src->name || !src->name[0])
			x->exe = exe_path();
		funcs = calloc(ss->num_functions ? ss->num_functions : 1, sizeof(*funcs));
		for (size_t i = 0; funcs && i < ss->num_functions; i++)
			funcs[i] = ss->functions[i].address;
		if (funcs)
			take_sections(src->name, fs->data, fs->size, ss->data, ss->size, funcs,
				      ss->num_functions, x);
		free(funcs);
	} else if (src->jit) {
		const struct fl_jit_reg *r = src->jit;
		size_t n = 0;
		uint64_t *funcs;

		x->bias = r->code_start;
		funcs = r->stackmap_size ?
			stored_functions(r->stackmap, r->stackmap_size, r->parse_flags, &n) : NULL;

		take_sections(src->name, r->faultmap, r->faultmap_size, r->stackmap,
			      r->stackmap_size, funcs, n, x);
		free(funcs);
		/* No file to name them from later: named now, or never. */
		x->names = jit_names(r->functions, r->num_functions, src->sites, src->num_sites,
				     &x->offsets);
		x->num_names = x->names ? src->num_sites : 0;
	}
	return x;
}

void fl_agent_module_discard(void *data)
{
	struct fl_agent_extra *x = data;

	if (!x)
		return;
	free(x->sections);
	for (uint32_t i = 0; x->names && i < x->num_names; i++)
		free(x->names[i]);
	free(x->names);
	free(x->offsets);
	free(x->path);
	free(x->exe);
	free(x);
}
