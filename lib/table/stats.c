/* SPDX-License-Identifier: MIT */
/*
 * Queries: fl_stats_get and fl_site_for_each, under the registry lock.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include <faultline/dispatch.h>

#include "core/opts.h"
#include "table/modules.h"
#include "table/table.h"

int fl_stats_get(struct fl_stats *st)
{
	struct fl_stats o;

	if (!st || st->sz < sizeof(size_t))
		return -EINVAL;
	memset(&o, 0, sizeof(o));
	o.claimed = atomic_load_explicit(&fl_dispatch.claimed, memory_order_relaxed);
	o.chained = atomic_load_explicit(&fl_dispatch.chained, memory_order_relaxed);
	o.populated = atomic_load_explicit(&fl_dispatch.populated, memory_order_relaxed);
	pthread_mutex_lock(&fl_table_lock);
	for (size_t i = 0; i < fl_table_num_mods; i++) {
		if (fl_table_mods[i]->num_sites) {
			o.modules++;
			o.sites += fl_table_mods[i]->num_sites;
		}
	}
	if (fl_table_ready()) {
		fl_table_report_replaced();
		o.handler_replaced = fl_table_replaced_reported;
	}
	pthread_mutex_unlock(&fl_table_lock);
	return fl_opts_out(st, &o, sizeof(o));
}

int fl_site_for_each(fl_site_fn fn, void *ctx)
{
	const struct fl_snapshot *s;
	int r = 0;

	pthread_mutex_lock(&fl_table_lock);
	/* Writers hold lock: the current snapshot stays while we do. */
	s = atomic_load(&fl_dispatch.current);
	for (uint32_t i = 0; s && r == 0 && i < s->num_modules; i++) {
		const struct fl_snap_module *sm = &s->modules[i];
		const char *name = "";

		for (size_t k = 0; k < fl_table_num_mods; k++)
			if (fl_table_mods[k]->id == sm->id)
				name = fl_table_mods[k]->name;
		for (uint32_t j = 0; r == 0 && j < sm->num_sites; j++) {
			const struct fl_site_entry *e = &sm->sites[j];
			struct fl_site site = {
				.module = sm->id,
				.module_name = name,
				.faulting_pc = e->faulting_pc,
				.handler_pc = e->handler_pc,
				.kind = e->kind,
				.faults = atomic_load_explicit(&fl_dispatch.counters[e->counter],
							       memory_order_relaxed),
			};

			r = fn(&site, ctx);
		}
	}
	pthread_mutex_unlock(&fl_table_lock);
	return r;
}
