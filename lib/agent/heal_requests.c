/* SPDX-License-Identifier: MIT */
/*
 * faultlined's healing requests (docs/protocol.md): the heal policy, heal
 * and unheal one site, heal the sites over a count, the quiet time before
 * unhealing.  The request entry is the agent's own copy; the policy and
 * the site lookups check what they are given (an address that is no
 * registered site is -ENOENT), so a hostile arg changes nothing.
 */
#include <errno.h>
#include <string.h>

#include <faultline/patch.h>

#include "agent/internal.h"
#include "patch/heal_policy.h"
#include "proto/proto.h"
#include "table/table.h"

/* The heal slot of the site at pc (what heal.c wrote of it), or NULL: no site. */
static const struct fl_shm_heal *heal_slot(uint64_t pc)
{
	struct fl_site_entry site;

	if (fl_table_sites_in(pc, pc + 1, &site, 1) != 1)
		return NULL;
	return fl_counters_heal(site.counter);
}

void fl_agent_heal_run(const struct fl_shm_entry *req, struct fl_shm_header *h,
		       struct fl_shm_entry *done)
{
	struct fl_diag diag;
	uint32_t healed, unhealable, before32 = 0;
	uint64_t before = 0;
	int err;

	switch (req->status) {
	case FL_REQ_HEAL_THRESHOLD:
		err = fl_heal_policy_request(req->value, &before, &diag);
		done->status = err;
		done->value = before;
		if (!err)
			/* For the daemon's view; relaxed, a statistic. */
			atomic_store_explicit(&h->heal_threshold,
					      (uint32_t)atomic_load_explicit(&fl_heal_trigger.after,
									     memory_order_relaxed),
					      memory_order_relaxed);
		return;
	case FL_REQ_HEAL:
		err = fl_patch_enable(&diag);
		if (!err)
			err = fl_site_heal((const void *)(uintptr_t)req->value, &diag);
		done->status = err;
		if (err == 0 || err == -EOPNOTSUPP) {
			const struct fl_shm_heal *slot = heal_slot(req->value);

			done->value = !slot ? 0 : err ? slot->why : slot->tactic;
		}
		return;
	case FL_REQ_UNHEAL:
		done->status = fl_site_unheal((const void *)(uintptr_t)req->value, &diag);
		return;
	case FL_REQ_HEAL_OVER:
		err = fl_patch_enable(&diag);
		if (!err)
			err = fl_heal_over(req->value, &healed, &unhealable);
		done->status = err;
		done->value = err ? 0 : healed | (uint64_t)unhealable << 32;
		return;
	case FL_REQ_UNHEAL_AFTER:
		done->status = fl_heal_policy_unheal_after(req->value, &before32, &diag);
		done->value = before32;
		return;
	default:
		done->status = -EOPNOTSUPP;
		return;
	}
}
