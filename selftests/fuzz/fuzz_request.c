// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the process's side of a point request (the agent's
 * fl_agent_point_run, lib/agent/point_requests.c) on a hostile daemon's
 * request entry and slot, and the daemon's check of a hostile process's
 * completion slot (fl_shm_point_done_check).
 *
 * The points API and fl_patch_enable are replaced here (this file defines
 * them; the archive's are never linked in) by fakes that count every call
 * and change nothing: the outcomes of the real ones are chosen by the
 * input.  The input: a selector byte (bit 0: the process opted in; bit 1:
 * fl_patch_enable fails; bit 2: reading the record fails; bit 3: the change
 * fails; the next byte: the record's size - 1), then the entry (32 bytes),
 * then the slot (576), then a completion slot (768), each zero-filled when
 * the input is shorter.  What must hold:
 *  - a request that a reference validator written here from
 *    docs/protocol.md refuses (a reserved field, a length, the target, the
 *    kind, or raw bytes to a process that did not opt in) is answered with
 *    a negative status and a reason, and neither fl_patch_enable nor any
 *    change is called: nothing is applied;
 *  - at most one change is called, with exactly the slot's id, pc, bytes,
 *    expected bytes (NULL when there are none) and target, and never when
 *    the expected bytes are not the region's length;
 *  - the completion is the request's seq and always passes the daemon's
 *    fl_shm_point_done_check;
 *  - fl_shm_point_done_check accepts a completion slot exactly when the
 *    reference does.
 */
#include <stdbool.h>

#include <faultline/patch.h>
#include <faultline/points.h>

#include "agent/internal.h"
#include "fuzz.h"
#include "proto/proto.h"

static struct {
	uint8_t sel, size;
	int enables, reads, writes, resets, invalidates;
	const struct fl_shm_point_req *slot;
} fake;

int fl_patch_enable(struct fl_diag *diag)
{
	fake.enables++;
	if (fake.sel & 2) {
		snprintf(diag->msg, sizeof(diag->msg), "no membarrier");
		return -ENOSYS;
	}
	return 0;
}

static int fake_read(uint64_t id, const void *pc, struct fl_point *out, struct fl_diag *diag)
{
	CHECK(out->sz == sizeof(*out));
	CHECK(id == fake.slot->id && (uintptr_t)pc == fake.slot->pc);
	fake.reads++;
	if (fake.sel & 4) {
		snprintf(diag->msg, sizeof(diag->msg), "no such record");
		return -ENOENT;
	}
	out->id = id;
	out->pc = pc ? (uintptr_t)pc : 0x401000;
	out->size = fake.size + 1u;
	out->flags = FL_POINT_CHANGED;
	memset(out->now, 0x90, sizeof(out->now));
	return 0;
}

int fl_patchpoint_read(uint64_t id, const void *pc, struct fl_point *out, struct fl_diag *diag)
{
	return fake_read(id, pc, out, diag);
}

int fl_stackmap_read(uint64_t id, const void *pc, struct fl_point *out, struct fl_diag *diag)
{
	return fake_read(id, pc, out, diag);
}

static int changed(struct fl_diag *diag)
{
	if (fake.sel & 8) {
		snprintf(diag->msg, sizeof(diag->msg), "refused");
		return -EBUSY;
	}
	return 0;
}

int fl_patchpoint_write(uint64_t id, const void *pc, const void *bytes, size_t len,
			const void *expect, struct fl_diag *diag)
{
	const struct fl_shm_point_req *r = fake.slot;

	fake.writes++;
	CHECK(id == r->id && (uintptr_t)pc == r->pc);
	CHECK(len == r->len && len >= 1 && len <= FL_POINT_MAX_SIZE);
	CHECK(memcmp(bytes, r->bytes, len) == 0);
	CHECK((expect != NULL) == (r->expect_len != 0));
	CHECK(!expect || memcmp(expect, r->expect, r->expect_len) == 0);
	CHECK(!expect || r->expect_len == fake.size + 1u);
	return changed(diag);
}

int fl_patchpoint_reset(uint64_t id, const void *pc, struct fl_diag *diag)
{
	fake.resets++;
	CHECK(id == fake.slot->id && (uintptr_t)pc == fake.slot->pc);
	return changed(diag);
}

int fl_stackmap_invalidate(uint64_t id, const void *pc, const void *target,
			   struct fl_diag *diag)
{
	fake.invalidates++;
	CHECK(id == fake.slot->id && (uintptr_t)pc == fake.slot->pc);
	CHECK((uintptr_t)target == fake.slot->target && target != NULL);
	return changed(diag);
}

/* docs/protocol.md, "Point requests", read again: may the process apply it? */
static bool reference(const struct fl_shm_entry *e, const struct fl_shm_point_req *r,
		      bool allowed)
{
	uint32_t kind = (uint32_t)e->status;

	if (e->value || e->reserved[0] || e->reserved[1])
		return false;
	for (int i = 0; i < 4; i++)
		if (r->reserved[i])
			return false;
	switch (kind) {
	case 3:		/* PATCHPOINT_WRITE */
		return allowed && r->len >= 1 && r->len <= 256 && r->expect_len <= 256 &&
		       !r->target;
	case 4:		/* PATCHPOINT_RESET */
		return !r->len && !r->expect_len && !r->target;
	case 5:		/* STACKMAP_INVALIDATE */
		return !r->len && !r->expect_len && r->target;
	default:
		return false;
	}
}

static bool reference_done(const struct fl_shm_point_done *d)
{
	if ((d->have & ~3u) || d->reserved)
		return false;
	if ((d->have & 1) && (d->before.size < 1 || d->before.size > 256))
		return false;
	if ((d->have & 2) && (d->now.size < 1 || d->now.size > 256))
		return false;
	return memchr(d->diag, 0, sizeof(d->diag)) != NULL;
}

static void take(void *to, size_t size, const uint8_t **d, size_t *n)
{
	size_t k = *n < size ? *n : size;

	memset(to, 0, size);
	memcpy(to, *d, k);
	*d += k;
	*n -= k;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fl_shm_entry e, done;
	static struct fl_shm_point_req r;
	static struct fl_shm_point_done out, theirs;
	struct fl_diag diag;
	bool allowed, valid;
	int changes;

	if (size < 2)
		return 0;
	memset(&fake, 0, sizeof(fake));
	fake.sel = data[0];
	fake.size = data[1];
	fake.slot = &r;
	data += 2;
	size -= 2;
	take(&e, sizeof(e), &data, &size);
	take(&r, sizeof(r), &data, &size);
	take(&theirs, sizeof(theirs), &data, &size);
	allowed = fake.sel & 1;

	memset(&done, 0xa5, sizeof(done));
	memset(&out, 0x5a, sizeof(out));
	fl_agent_point_run(&e, &r, allowed, &done, &out);
	changes = fake.writes + fake.resets + fake.invalidates;
	valid = reference(&e, &r, allowed);
	CHECK(done.seq == e.seq && done.value == 0 && !done.reserved[0] && !done.reserved[1]);
	CHECK(done.status <= 0 && done.status >= -4095);
	CHECK(fl_shm_point_done_check(&out, NULL) == 0);
	CHECK(changes <= 1);
	if (!valid) {
		CHECK(done.status < 0 && out.diag[0]);
		CHECK(fake.enables == 0 && fake.reads == 0 && changes == 0);
		CHECK(out.have == 0);
	} else if (changes) {
		CHECK(fake.writes == ((uint32_t)e.status == FL_REQ_PATCHPOINT_WRITE));
		CHECK(fake.resets == ((uint32_t)e.status == FL_REQ_PATCHPOINT_RESET));
		CHECK(fake.invalidates == ((uint32_t)e.status == FL_REQ_STACKMAP_INVALIDATE));
	} else {
		/* Valid, yet not applied: enable, the read or the expected length said no. */
		CHECK(done.status < 0 && out.diag[0]);
		CHECK((fake.sel & 6) || r.expect_len != fake.size + 1u);
	}
	if (done.status == 0)
		CHECK(changes == 1 && out.have == (FL_SHM_POINT_BEFORE | FL_SHM_POINT_NOW));

	memset(&diag, 0, sizeof(diag));
	if (fl_shm_point_done_check(&theirs, &diag) == 0) {
		CHECK(reference_done(&theirs));
	} else {
		CHECK(!reference_done(&theirs));
		CHECK(diag.err == -EBADMSG && diag.msg[0]);
	}
	return 0;
}
