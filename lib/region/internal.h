/* SPDX-License-Identifier: MIT */
/* The writer side of a userfaultfd region (region.c) and its helper thread (helper.c). */
#ifndef FL_REGION_INTERNAL_H
#define FL_REGION_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>

#include "dispatch/dispatch.h"

struct fl_region_priv {
	struct fl_region r;	/* what the handler reads; r.priv points here */
	void *template_copy;	/* one page of its own (mmap), or NULL */
	bool helper_running;
	pthread_t helper;
	int stop_fd;		/* eventfd: the helper thread exits when readable */
};

/*
 * Starts the helper thread of p (all signals blocked).  Returns 0 or
 * -errno.
 */
int fl_region_helper_start(struct fl_region_priv *p);

/* Stops and joins it.  Nothing if it was not started. */
void fl_region_helper_stop(struct fl_region_priv *p);

#endif /* FL_REGION_INTERNAL_H */
