/* SPDX-License-Identifier: MIT */
/* Finding registered sites by address, for the layers above (table.h). */
#include <pthread.h>

#include "table/modules.h"
#include "table/table.h"

size_t fl_table_sites_in(uint64_t lo, uint64_t hi, struct fl_site_entry *out, size_t cap)
{
	size_t found = 0;

	pthread_mutex_lock(&fl_table_lock);
	for (size_t i = 0; i < fl_table_num_mods; i++) {
		const struct fl_table_mod *m = fl_table_mods[i];
		size_t a = 0, b = m->num_sites;

		if (!m->num_sites || m->end <= lo || m->start >= hi)
			continue;
		/* The first site at or after lo. */
		while (a < b) {
			size_t mid = a + (b - a) / 2;

			if (m->sites[mid].faulting_pc < lo)
				a = mid + 1;
			else
				b = mid;
		}
		for (; a < m->num_sites && m->sites[a].faulting_pc < hi; a++, found++)
			if (found < cap)
				out[found] = m->sites[a];
	}
	pthread_mutex_unlock(&fl_table_lock);
	return found;
}
