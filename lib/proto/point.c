/* SPDX-License-Identifier: MIT */
/*
 * Point requests (docs/protocol.md, "Point requests"): what a request about
 * a patch point or a stack map record may carry, checked alike in a POINT
 * message (the daemon, message.c), in a request slot (the process) and in
 * a completion slot (the daemon).  No I/O; fuzzed (fuzz_proto.c,
 * fuzz_request.c).
 */
#include <errno.h>
#include <string.h>

#include "core/fmt.h"
#include "proto/proto.h"

const char *fl_point_args_why(uint32_t kind, uint64_t target, uint32_t len,
			      uint32_t expect_len)
{
	switch (kind) {
	case FL_REQ_PATCHPOINT_WRITE:
		if (len == 0 || len > FL_PROTO_POINT_MAX)
			return "patch point bytes: none, or more than 256";
		if (expect_len > FL_PROTO_POINT_MAX)
			return "expected bytes: more than 256";
		return target ? "a target in a patch point write" : NULL;
	case FL_REQ_PATCHPOINT_RESET:
		if (len || expect_len)
			return "bytes in a patch point reset";
		return target ? "a target in a patch point reset" : NULL;
	case FL_REQ_STACKMAP_INVALIDATE:
		if (len || expect_len)
			return "bytes in a stack map invalidation";
		return target ? NULL : "a stack map invalidation without a target";
	default:
		return "not a point request";
	}
}

static int refuse(struct fl_diag *diag, int err, const char *what, unsigned long long v)
{
	if (diag) {
		diag->err = err;
		fl_fmt(diag->msg, sizeof(diag->msg), "point request: %s (%llu)", what, v);
	}
	return err;
}

int fl_shm_point_req_check(const struct fl_shm_entry *e, const struct fl_shm_point_req *r,
			   struct fl_diag *diag)
{
	const char *why;

	if (e->value || e->reserved[0] || e->reserved[1])
		return refuse(diag, -EINVAL, "entry's value or reserved fields set", e->value);
	for (size_t i = 0; i < sizeof(r->reserved) / sizeof(r->reserved[0]); i++)
		if (r->reserved[i])
			return refuse(diag, -EINVAL, "slot's reserved fields set", i);
	why = fl_point_args_why((uint32_t)e->status, r->target, r->len, r->expect_len);
	if (why)
		return refuse(diag, -EINVAL, why, (uint32_t)e->status);
	return 0;
}

static bool point_ok(const struct fl_shm_point *p)
{
	return p->size >= 1 && p->size <= FL_PROTO_POINT_MAX;
}

int fl_shm_point_done_check(const struct fl_shm_point_done *d, struct fl_diag *diag)
{
	if (d->have & ~(FL_SHM_POINT_BEFORE | FL_SHM_POINT_NOW) || d->reserved)
		return refuse(diag, -EBADMSG, "completion: unknown bits or reserved set", d->have);
	if ((d->have & FL_SHM_POINT_BEFORE) && !point_ok(&d->before))
		return refuse(diag, -EBADMSG, "completion: size before", d->before.size);
	if ((d->have & FL_SHM_POINT_NOW) && !point_ok(&d->now))
		return refuse(diag, -EBADMSG, "completion: size now", d->now.size);
	if (!memchr(d->diag, 0, sizeof(d->diag)))
		return refuse(diag, -EBADMSG, "completion: diag not terminated", 0);
	return 0;
}
