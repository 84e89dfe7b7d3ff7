/* SPDX-License-Identifier: MIT */
/*
 * What the agent tells the daemon about a module beyond its sites, made
 * when the table is about to add the module (its module_prepare observer,
 * without the table's locks): the sections (the fault map, the stack map,
 * the stack map functions' runtime addresses), and the names of the
 * functions the sites are in.  See internal.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

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

/*
 * Names the sites of a loaded module after the functions they are in, from
 * the module file's symbol table (the dynamic one alone, which dladdr
 * reads, lacks most functions of an executable).  Best effort: a site
 * without a name is sent unnamed.
 */
static int cmp_function_address(const void *a, const void *b)
{
	const struct fl_module_function *x = *(const struct fl_module_function *const *)a;
	const struct fl_module_function *y = *(const struct fl_module_function *const *)b;

	return x->address < y->address ? -1 : x->address > y->address;
}

static void name_sites(const struct fl_table_source *src, struct fl_agent_extra *x)
{
	const struct fl_module *fm = src->elf;
	const struct fl_module_section *sec = &fm->sections[FL_SECTION_FAULTMAP];
	const struct fl_module_function **by_address;
	struct fl_elf *elf = NULL;
	struct fl_diag d;
	size_t k = 0;

	if (!src->num_sites || !sec->num_functions)
		return;
	by_address = malloc(sec->num_functions * sizeof(*by_address));
	x->names = calloc(src->num_sites, sizeof(*x->names));
	if (!by_address || !x->names || fl_elf_open(fm->path, NULL, &elf, &d) != 0) {
		free(by_address);
		free(x->names);
		x->names = NULL;
		return;
	}
	x->num_names = src->num_sites;
	for (size_t i = 0; i < sec->num_functions; i++)
		by_address[i] = &sec->functions[i];
	qsort(by_address, sec->num_functions, sizeof(*by_address), cmp_function_address);

	/*
	 * Sites are sorted by PC too: one walk gives each site the function
	 * with the greatest address at or below its PC.
	 */
	for (uint32_t i = 0; i < src->num_sites; i++) {
		const char *name;

		while (k + 1 < sec->num_functions &&
		       by_address[k + 1]->address <= src->sites[i].faulting_pc)
			k++;
		if (by_address[k]->address > src->sites[i].faulting_pc)
			continue;
		name = fl_elf_function_name(elf, FL_SECTION_FAULTMAP, by_address[k]->address_offset,
					    by_address[k]->stored);
		if (name && *name)
			x->names[i] = strdup(name);
	}
	fl_elf_close(elf);
	free(by_address);
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

void *fl_agent_module_prepare(const struct fl_table_source *src)
{
	struct fl_agent_extra *x;

	/* Nothing for the daemon in a module without sites (module_added). */
	if (!src->num_sites || !(x = calloc(1, sizeof(*x))))
		return NULL;
	if (src->elf) {
		const struct fl_module *fm = src->elf;
		const struct fl_module_section *fs = &fm->sections[FL_SECTION_FAULTMAP];
		const struct fl_module_section *ss = &fm->sections[FL_SECTION_STACKMAP];
		uint64_t *funcs;

		name_sites(src, x);
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
		uint64_t *funcs = r->stackmap_size ?
			stored_functions(r->stackmap, r->stackmap_size, r->parse_flags, &n) : NULL;

		take_sections(src->name, r->faultmap, r->faultmap_size, r->stackmap,
			      r->stackmap_size, funcs, n, x);
		free(funcs);
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
	free(x);
}
