/* SPDX-License-Identifier: MIT */
/*
 * fl_stackmap_record_at: where a return address becomes a stack map
 * record, over every registered module.
 *
 * The modules with records are in the handler table's snapshot (lib/table/
 * publishes them), sorted by the span of their records
 * (fl_snapshot_stackmap finds the one for pc), each with its index
 * (format/smindex.h); the reader side of the snapshot's protocol
 * (lib/dispatch/dispatch.h) keeps the module from being freed while the
 * lookup reads it, so that the lookup is safe against concurrent
 * registration and unregistration, and async-signal-safe: no lock, no
 * allocation, no syscall.
 */
#include <errno.h>
#include <string.h>

#include <faultline/deopt.h>

#include "core/opts.h"
#include "dispatch/dispatch.h"
#include "format/smindex.h"

int fl_stackmap_record_at(uint64_t pc, struct fl_stackmap_at *out)
{
	const struct fl_stackmap_record *r = NULL;
	const struct fl_snap_stackmap *m = NULL;
	const struct fl_snapshot *s;
	uint64_t function, stack_size;
	struct fl_stackmap_at at;
	unsigned parity;

	if (!out || out->sz < offsetof(struct fl_stackmap_at, record) + sizeof(out->record))
		return -EINVAL;
	parity = fl_snapshot_enter(&s);
	if (s && (m = fl_snapshot_stackmap(s, pc)))
		r = fl_smindex_find(m->index, pc, &function, &stack_size);
	if (r)
		at = (struct fl_stackmap_at){
			.sz = sizeof(at), .record = r, .function = function,
			.stack_size = stack_size, .module = m->id, .module_name = m->name,
		};
	fl_snapshot_leave(parity);
	if (!s)
		return -ENODEV;
	if (!r)
		return -ENOENT;
	return fl_opts_out(out, &at, sizeof(at));
}
