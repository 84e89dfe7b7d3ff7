/* SPDX-License-Identifier: MIT */
/*
 * JIT code: fl_jit_register and fl_jit_unregister (the runtime's
 * modules; loaded ELF modules come and go with the rescan, rescan.c): its
 * sites, its stack map records, its unwind information (unwind.c) and its
 * functions' names (for the observers: the agent names the sites with
 * them), each checked before anything is registered.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <faultline/dispatch.h>

#include "core/opts.h"
#include "format/diag.h"
#include "proto/proto.h"
#include "table/modules.h"
#include "table/sites.h"
#include "table/stackmaps.h"
#include "table/table.h"
#include "table/unwind.h"

/* The public limit is the protocol's: a name goes to faultlined in SYMBOLS. */
_Static_assert(FL_JIT_MAX_FUNCTION_NAME <= FL_PROTO_MAX_NAME,
	       "a JIT function's name must fit faultlined's names");

static int cmp_function(const void *a, const void *b)
{
	const struct fl_jit_function *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/*
 * Checks r's functions against its code range and each other, and makes
 * *out a copy of them sorted by start (the names are still the caller's:
 * the observers copy what they keep, during the call).  Returns 0 with
 * *out set (NULL when there are none), -EINVAL with diag filled in, or
 * -ENOMEM.
 */
static int sorted_functions(const struct fl_jit_reg *r, struct fl_jit_function **out,
			    struct fl_diag *diag)
{
	uint64_t code_end = r->code_start + r->code_size;
	struct fl_jit_function *v;

	*out = NULL;
	if (!r->num_functions)
		return 0;
	if (!r->functions)
		return fl_diag_say(diag, -EINVAL, "fl_jit_register: %zu functions at NULL",
				   r->num_functions);
	if (r->num_functions > SIZE_MAX / sizeof(*v))
		return fl_diag_say(diag, -EINVAL, "fl_jit_register: %zu functions: too many",
				   r->num_functions);
	for (size_t i = 0; i < r->num_functions; i++) {
		const struct fl_jit_function *f = &r->functions[i];

		if (!f->name || !f->name[0])
			return fl_diag_say(diag, -EINVAL, "fl_jit_register: function %zu: no name", i);
		if (strnlen(f->name, FL_JIT_MAX_FUNCTION_NAME + 1) > FL_JIT_MAX_FUNCTION_NAME)
			return fl_diag_say(diag, -EINVAL, "fl_jit_register: function %zu: name "
					   "longer than %u bytes", i, FL_JIT_MAX_FUNCTION_NAME);
		if (strchr(f->name, '\n'))
			return fl_diag_say(diag, -EINVAL, "fl_jit_register: function %zu: newline "
					   "in its name", i);
		if (f->size == 0)
			return fl_diag_say(diag, -EINVAL, "fl_jit_register: function %zu (%s): "
					   "size 0", i, f->name);
		if (f->start < r->code_start || f->start > code_end ||
		    f->size > code_end - f->start)
			return fl_diag_say(diag, -EINVAL, "fl_jit_register: function %zu (%s): "
					   "[0x%llx, +0x%llx) outside the code [0x%llx, 0x%llx)",
					   i, f->name, (unsigned long long)f->start,
					   (unsigned long long)f->size,
					   (unsigned long long)r->code_start,
					   (unsigned long long)code_end);
	}
	v = malloc(r->num_functions * sizeof(*v));
	if (!v)
		return -ENOMEM;
	memcpy(v, r->functions, r->num_functions * sizeof(*v));
	qsort(v, r->num_functions, sizeof(*v), cmp_function);
	/* Sorted, each inside the code: only neighbours can overlap. */
	for (size_t i = 1; i < r->num_functions; i++) {
		if (v[i - 1].start + v[i - 1].size > v[i].start) {
			fl_diag_say(diag, -EINVAL, "fl_jit_register: functions %s at 0x%llx and "
				    "%s at 0x%llx overlap", v[i - 1].name,
				    (unsigned long long)v[i - 1].start, v[i].name,
				    (unsigned long long)v[i].start);
			free(v);
			return -EINVAL;
		}
	}
	*out = v;
	return 0;
}

int fl_jit_register(const struct fl_jit_reg *reg, struct fl_diag *diag)
{
	struct fl_jit_reg r;
	struct fl_diag local;
	struct fl_sites s = { 0 };
	struct fl_smindex *maps = NULL;
	struct fl_unwind *unwind = NULL;
	struct fl_jit_function *functions = NULL;
	struct fl_table_mod *m;
	int err;

	if (!diag)
		diag = &local;
	diag->err = 0;
	diag->msg[0] = 0;
	if (!reg || fl_opts_copy(&r, sizeof(r), reg))
		return -EINVAL;
	/* Code with stack maps only (deoptimization exits) has no fault map. */
	if ((!r.faultmap || !r.faultmap_size) && (!r.stackmap || !r.stackmap_size))
		return fl_diag_say(diag, -EINVAL, "fl_jit_register: no fault map and no stack map");
	if ((r.faultmap_size && !r.faultmap) || (r.stackmap_size && !r.stackmap) ||
	    (r.eh_frame_size && !r.eh_frame) ||
	    r.code_size == 0 || r.code_start + r.code_size < r.code_start)
		return fl_diag_say(diag, -EINVAL, "fl_jit_register: bad code, fault map, "
				   "stack map or .eh_frame range");
	if (!fl_table_ready())
		return -ENODEV;

	err = sorted_functions(&r, &functions, diag);
	if (err == 0)
		err = r.faultmap_size ? fl_sites_of_jit(&r, &s, diag) : 0;
	if (err == 0)
		err = fl_smindex_of_jit(&r, &maps, diag);
	if (err == 0)
		err = fl_unwind_of_jit(&r, &unwind, diag);
	if (err) {
		free(functions);
		free(s.v);
		fl_smindex_free(maps);
		/* Whatever the format layer found, for the caller it is bad input. */
		return err == -ENOMEM ? err : -EINVAL;
	}

	m = calloc(1, sizeof(*m));
	if (!m || !(m->name = strdup(r.name ? r.name : "jit"))) {
		free(m);
		free(functions);
		free(s.v);
		fl_smindex_free(maps);
		fl_unwind_free(unwind);
		return -ENOMEM;
	}
	fl_table_mod_take_sites(m, &s);
	m->stackmaps = maps;
	m->unwind = unwind;
	m->start = m->code_lo = r.code_start;
	m->end = m->code_hi = r.code_start + r.code_size;
	/* The observers see them sorted (table.h's fl_table_source). */
	r.functions = functions;
	fl_table_mod_prepare(m, NULL, &r);
	free(functions);

	pthread_mutex_lock(&fl_table_lock);
	fl_table_report_replaced();
	err = fl_table_mod_add(m);
	pthread_mutex_unlock(&fl_table_lock);
	if (err < 0) {
		if (err == -EEXIST)
			fl_diag_say(diag, err, "fl_jit_register: code range overlaps a registered "
				    "module (its sites, stack map records or .eh_frame's code)");
		fl_table_mod_free(m);
	}
	return err;
}

int fl_jit_unregister(int id)
{
	int err = -ENOENT;

	pthread_mutex_lock(&fl_table_lock);
	for (size_t i = 0; i < fl_table_num_mods; i++) {
		if (fl_table_mods[i]->id == id && !fl_table_mods[i]->elf) {
			struct fl_table_mod *m = fl_table_mod_take(i);

			err = fl_table_publish(&m, 1);
			/* On failure the handler still has it. */
			if (err)
				fl_table_mods[fl_table_num_mods++] = m;
			break;
		}
	}
	pthread_mutex_unlock(&fl_table_lock);
	return err;
}
