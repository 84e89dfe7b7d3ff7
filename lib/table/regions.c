/* SPDX-License-Identifier: MIT */
/*
 * Regions in the handler table (lib/region/ owns them): added and removed
 * as modules are, by a publication and, for a removal, a grace period.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "table/modules.h"
#include "table/table.h"

int fl_table_region_add(struct fl_region *r)
{
	struct fl_region **grown;
	int err;

	pthread_mutex_lock(&fl_table_lock);
	if (!fl_table_ready()) {
		err = -ENODEV;
		goto out;
	}
	for (size_t i = 0; i < fl_table_num_regions; i++) {
		if (r->start < fl_table_regions[i]->start + fl_table_regions[i]->size &&
		    fl_table_regions[i]->start < r->start + r->size) {
			err = -EEXIST;
			goto out;
		}
	}
	grown = realloc(fl_table_regions, (fl_table_num_regions + 1) * sizeof(*fl_table_regions));
	if (!grown) {
		err = -ENOMEM;
		goto out;
	}
	fl_table_regions = grown;
	fl_table_regions[fl_table_num_regions++] = r;
	err = fl_table_publish(NULL, 0);
	if (err)
		fl_table_num_regions--;
out:
	pthread_mutex_unlock(&fl_table_lock);
	return err;
}

int fl_table_region_remove(struct fl_region *r)
{
	int err = -ENOENT;

	pthread_mutex_lock(&fl_table_lock);
	for (size_t i = 0; i < fl_table_num_regions; i++) {
		if (fl_table_regions[i] != r)
			continue;
		/* As fl_table_mod_take; on failure the handler still has it. */
		fl_table_regions[i] = fl_table_regions[--fl_table_num_regions];
		err = fl_table_publish(NULL, 0);
		if (err)
			fl_table_regions[fl_table_num_regions++] = r;
		break;
	}
	pthread_mutex_unlock(&fl_table_lock);
	return err;
}
