// SPDX-License-Identifier: MIT
/*
 * The null blocks of sites.ll call site_null(id): counted here, one counter
 * per site, so that the driver can print how often each null path ran.
 * Linked beside sites.ll's object (into the executable or the library).
 */
#include <stdatomic.h>

#include "sites.h"

static _Atomic unsigned long counts[SITE_IDS];

void site_null(int id)
{
	if (id > 0 && id < SITE_IDS)
		atomic_fetch_add_explicit(&counts[id], 1, memory_order_relaxed);
}

unsigned long site_null_count(int id)
{
	return id > 0 && id < SITE_IDS ? atomic_load(&counts[id]) : 0;
}
