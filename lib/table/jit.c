/* SPDX-License-Identifier: MIT */
/*
 * JIT code: fl_jit_register and fl_jit_unregister (the runtime's
 * modules; loaded ELF modules come and go with the rescan, rescan.c): its
 * sites, its stack map records and its unwind information (unwind.c), each
 * checked before anything is registered.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <faultline/dispatch.h>

#include "core/opts.h"
#include "format/diag.h"
#include "table/modules.h"
#include "table/sites.h"
#include "table/stackmaps.h"
#include "table/table.h"
#include "table/unwind.h"

int fl_jit_register(const struct fl_jit_reg *reg, struct fl_diag *diag)
{
	struct fl_jit_reg r;
	struct fl_diag local;
	struct fl_sites s = { 0 };
	struct fl_smindex *maps = NULL;
	struct fl_unwind *unwind = NULL;
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

	err = r.faultmap_size ? fl_sites_of_jit(&r, &s, diag) : 0;
	if (err == 0)
		err = fl_smindex_of_jit(&r, &maps, diag);
	if (err == 0)
		err = fl_unwind_of_jit(&r, &unwind, diag);
	if (err) {
		free(s.v);
		fl_smindex_free(maps);
		/* Whatever the format layer found, for the caller it is bad input. */
		return err == -ENOMEM ? err : -EINVAL;
	}

	m = calloc(1, sizeof(*m));
	if (!m || !(m->name = strdup(r.name ? r.name : "jit"))) {
		free(m);
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
	fl_table_mod_prepare(m, NULL, &r);

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
