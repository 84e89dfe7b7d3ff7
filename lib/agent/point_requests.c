/* SPDX-License-Identifier: MIT */
/*
 * The daemon's requests about patch points and stack map records
 * (docs/protocol.md, "Point requests"), run by the fl-requests thread on
 * its copies of a request entry and its slot.
 *
 * The daemon already refused what its requester may not ask; the process
 * checks again, on its own copy, everything it can (the fields, the
 * lengths, the reserved bytes, and that it opted in to raw bytes), and
 * the points API checks the rest (the record, the region, the expected
 * bytes).  Nothing is changed unless every check passed.  The completion
 * carries the record as it was before and as it is now, whatever
 * happened, when it can be read.
 */
#include <errno.h>
#include <string.h>

#include <faultline/patch.h>
#include <faultline/points.h>

#include "agent/internal.h"
#include "core/fmt.h"
#include "proto/proto.h"

_Static_assert(FL_POINT_MAX_SIZE == FL_PROTO_POINT_MAX, "a slot holds a whole region");
_Static_assert(sizeof(((struct fl_shm_point_done *)0)->diag) < FL_DIAG_MAX, "diag fits");

static void refuse(struct fl_shm_entry *done, struct fl_shm_point_done *out, int err,
		   const char *msg)
{
	done->status = err;
	fl_fmt(out->diag, sizeof(out->diag), "%s", msg);
}

static int read_record(uint32_t kind, const struct fl_shm_point_req *r,
		       struct fl_shm_point *to, struct fl_diag *d)
{
	struct fl_point p = { .sz = sizeof(p) };
	const void *pc = (const void *)(uintptr_t)r->pc;
	int err;

	if (kind == FL_REQ_STACKMAP_INVALIDATE)
		err = fl_stackmap_read(r->id, pc, &p, d);
	else
		err = fl_patchpoint_read(r->id, pc, &p, d);
	if (err)
		return err;
	if (p.size == 0 || p.size > FL_PROTO_POINT_MAX) {
		fl_fmt(d->msg, sizeof(d->msg), "record %llu: a region of %u bytes",
		       (unsigned long long)p.id, p.size);
		return -ERANGE;
	}
	to->id = p.id;
	to->pc = p.pc;
	to->size = p.size;
	to->flags = p.flags;
	memcpy(to->bytes, p.now, p.size);
	return 0;
}

/* The change itself, through the points API (which checks the record and the bytes). */
static int apply(uint32_t kind, const struct fl_shm_point_req *r, struct fl_diag *d)
{
	const void *pc = (const void *)(uintptr_t)r->pc;

	switch (kind) {
	case FL_REQ_PATCHPOINT_WRITE:
		return fl_patchpoint_write(r->id, pc, r->bytes, r->len,
					   r->expect_len ? r->expect : NULL, d);
	case FL_REQ_PATCHPOINT_RESET:
		return fl_patchpoint_reset(r->id, pc, d);
	default:
		return fl_stackmap_invalidate(r->id, pc, (const void *)(uintptr_t)r->target, d);
	}
}

void fl_agent_point_run(const struct fl_shm_entry *req, const struct fl_shm_point_req *r,
			bool allowed, struct fl_shm_entry *done, struct fl_shm_point_done *out)
{
	uint32_t kind = (uint32_t)req->status;
	struct fl_diag d = { 0 };
	int err;

	memset(done, 0, sizeof(*done));
	memset(out, 0, sizeof(*out));
	done->seq = req->seq;
	if ((err = fl_shm_point_req_check(req, r, &d)) != 0) {
		refuse(done, out, err, d.msg);
		return;
	}
	if (kind == FL_REQ_PATCHPOINT_WRITE && !allowed) {
		refuse(done, out, -EPERM, "this process did not opt in to raw code bytes "
		       "(FAULTLINE_ALLOW_PATCH=1 or FL_INIT_ALLOW_PATCH)");
		return;
	}
	if ((err = fl_patch_enable(&d)) != 0) {
		refuse(done, out, err, d.msg);
		return;
	}
	if ((err = read_record(kind, r, &out->before, &d)) != 0) {
		refuse(done, out, err, d.msg);
		return;
	}
	out->have = FL_SHM_POINT_BEFORE;
	/*
	 * The region's size is fixed before the first write (points.h): an
	 * expectation of another length can only be stale.
	 */
	if (r->expect_len && r->expect_len != out->before.size) {
		fl_fmt(d.msg, sizeof(d.msg), "record %llu: %u bytes expected, its region has %u",
		       (unsigned long long)out->before.id, r->expect_len, out->before.size);
		err = -ESTALE;
	} else {
		err = apply(kind, r, &d);
	}
	if (err)
		refuse(done, out, err, d.msg);
	/* What is there now, also after a refusal (the reader sees why). */
	if (read_record(kind, r, &out->now, &d) == 0)
		out->have |= FL_SHM_POINT_NOW;
}
