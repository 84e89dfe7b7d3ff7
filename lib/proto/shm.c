/* SPDX-License-Identifier: MIT */
/*
 * The shared region (docs/protocol.md): its layout, the check of a peer's
 * header copy, and the single-producer single-consumer rings.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "core/fmt.h"
#include "proto/proto.h"

_Static_assert(sizeof(struct fl_shm_header) == FL_SHM_HEADER_SIZE, "region header layout");
_Static_assert(offsetof(struct fl_shm_header, request_head) == 64, "daemon's line");
_Static_assert(offsetof(struct fl_shm_header, completion_head) == 128, "process's line");
_Static_assert(offsetof(struct fl_shm_header, completion_bell) == 144, "the completion bell");
_Static_assert(sizeof(struct fl_shm_site) == 32, "site layout");
_Static_assert(sizeof(struct fl_shm_entry) == 32, "ring entry layout");
_Static_assert(offsetof(struct fl_shm_header, request_slots_offset) == 52, "slots' offsets");
_Static_assert(sizeof(struct fl_shm_point_req) == 576, "request slot layout");
_Static_assert(sizeof(struct fl_shm_point_done) == 768, "completion slot layout");
_Static_assert(sizeof(struct fl_shm_heal) == 16, "heal slot layout");

#define MAX_CAPACITY (1u << 22)
#define MAX_RING (1u << 12)

static bool pow2(uint32_t n)
{
	return n && !(n & (n - 1));
}

static uint64_t align(uint64_t x)
{
	return (x + FL_SHM_ALIGN - 1) & ~(uint64_t)(FL_SHM_ALIGN - 1);
}

int fl_shm_layout(uint32_t capacity, uint32_t request_entries,
		  uint32_t completion_entries, struct fl_shm_layout *l)
{
	uint64_t at = FL_SHM_HEADER_SIZE;

	if (capacity == 0 || capacity > MAX_CAPACITY || !pow2(request_entries) ||
	    !pow2(completion_entries) || request_entries > MAX_RING ||
	    completion_entries > MAX_RING)
		return -EINVAL;
	l->capacity = capacity;
	l->sites_offset = (uint32_t)at;
	at = align(at + (uint64_t)capacity * sizeof(struct fl_shm_site));
	l->counters_offset = (uint32_t)at;
	at = align(at + (uint64_t)capacity * sizeof(uint64_t));
	l->heal_offset = (uint32_t)at;
	at = align(at + (uint64_t)capacity * sizeof(struct fl_shm_heal));
	l->dirty_offset = (uint32_t)at;
	at = align(at + fl_shm_dirty_blocks(capacity));
	l->requests_offset = (uint32_t)at;
	l->request_entries = request_entries;
	at = align(at + (uint64_t)request_entries * sizeof(struct fl_shm_entry));
	l->completions_offset = (uint32_t)at;
	l->completion_entries = completion_entries;
	at = align(at + (uint64_t)completion_entries * sizeof(struct fl_shm_entry));
	l->request_slots_offset = (uint32_t)at;
	at = align(at + (uint64_t)request_entries * sizeof(struct fl_shm_point_req));
	l->completion_slots_offset = (uint32_t)at;
	at = align(at + (uint64_t)completion_entries * sizeof(struct fl_shm_point_done));
	l->size = at;
	return l->size <= FL_PROTO_MAX_REGION ? 0 : -EINVAL;
}

void fl_shm_init(void *region, const struct fl_shm_layout *l, uint32_t pid)
{
	struct fl_shm_header *h = region;

	h->magic = FL_SHM_MAGIC;
	h->version = FL_SHM_VERSION;
	h->header_size = FL_SHM_HEADER_SIZE;
	h->pid = pid;
	h->capacity = l->capacity;
	h->size = l->size;
	h->sites_offset = l->sites_offset;
	h->counters_offset = l->counters_offset;
	h->requests_offset = l->requests_offset;
	h->request_entries = l->request_entries;
	h->completions_offset = l->completions_offset;
	h->completion_entries = l->completion_entries;
	h->request_slots_offset = l->request_slots_offset;
	h->completion_slots_offset = l->completion_slots_offset;
	h->heal_offset = l->heal_offset;
	h->dirty_offset = l->dirty_offset;
}

static int bad(struct fl_diag *diag, const char *what, unsigned long long v)
{
	if (diag) {
		diag->err = -EBADMSG;
		fl_fmt(diag->msg, sizeof(diag->msg), "shared region: %s (%llu)", what, v);
	}
	return -EBADMSG;
}

int fl_shm_check(const struct fl_shm_header *c, uint64_t real_size, uint32_t pid,
		 struct fl_shm_layout *l, struct fl_diag *diag)
{
	struct fl_shm_layout want;

	if (c->magic != FL_SHM_MAGIC)
		return bad(diag, "bad magic", c->magic);
	if (c->version != FL_SHM_VERSION || c->header_size != FL_SHM_HEADER_SIZE)
		return bad(diag, "unsupported version or header size", c->version);
	if (c->pid != pid)
		return bad(diag, "pid is not the peer's", c->pid);
	if (c->size != real_size)
		return bad(diag, "size is not the memfd's", c->size);
	/* The layout must be exactly the one the capacity and rings give. */
	if (fl_shm_layout(c->capacity, c->request_entries, c->completion_entries, &want))
		return bad(diag, "capacity or ring sizes out of range", c->capacity);
	if (want.size != c->size || want.sites_offset != c->sites_offset ||
	    want.counters_offset != c->counters_offset ||
	    want.requests_offset != c->requests_offset ||
	    want.completions_offset != c->completions_offset ||
	    want.request_slots_offset != c->request_slots_offset ||
	    want.completion_slots_offset != c->completion_slots_offset ||
	    want.heal_offset != c->heal_offset || want.dirty_offset != c->dirty_offset)
		return bad(diag, "offsets do not match the layout", c->sites_offset);
	*l = want;
	return 0;
}

int fl_ring_push_slot(_Atomic uint32_t *head, _Atomic uint32_t *tail, void *entries,
		      uint32_t n, const struct fl_shm_entry *e, void *slots, size_t slot_size,
		      const void *slot)
{
	/* Only the producer writes head: relaxed.  Pairs with pop's release of tail. */
	uint32_t h = atomic_load_explicit(head, memory_order_relaxed);
	uint32_t t = atomic_load_explicit(tail, memory_order_acquire);

	if (h - t >= n)
		return -EAGAIN;
	if (slot)
		memcpy((char *)slots + (size_t)(h & (n - 1)) * slot_size, slot, slot_size);
	memcpy((struct fl_shm_entry *)entries + (h & (n - 1)), e, sizeof(*e));
	/* Release: the entry and its slot are written before the consumer sees the new head. */
	atomic_store_explicit(head, h + 1, memory_order_release);
	return 0;
}

int fl_ring_pop_slot(_Atomic uint32_t *head, _Atomic uint32_t *tail, const void *entries,
		     uint32_t n, struct fl_shm_entry *e, const void *slots, size_t slot_size,
		     void *slot)
{
	/* Only the consumer writes tail: relaxed.  Pairs with push's release of head. */
	uint32_t t = atomic_load_explicit(tail, memory_order_relaxed);
	uint32_t h = atomic_load_explicit(head, memory_order_acquire);

	if (h == t)
		return 0;
	if (h - t > n)
		return -EBADMSG;
	memcpy(e, (const struct fl_shm_entry *)entries + (t & (n - 1)), sizeof(*e));
	if (slot)
		memcpy(slot, (const char *)slots + (size_t)(t & (n - 1)) * slot_size, slot_size);
	/* Release: the copies are taken before the producer may overwrite entry and slot. */
	atomic_store_explicit(tail, t + 1, memory_order_release);
	return 1;
}

int fl_ring_push(_Atomic uint32_t *head, _Atomic uint32_t *tail, void *entries,
		 uint32_t n, const struct fl_shm_entry *e)
{
	return fl_ring_push_slot(head, tail, entries, n, e, NULL, 0, NULL);
}

int fl_ring_pop(_Atomic uint32_t *head, _Atomic uint32_t *tail, const void *entries,
		uint32_t n, struct fl_shm_entry *e)
{
	return fl_ring_pop_slot(head, tail, entries, n, e, NULL, 0, NULL);
}

const char *fl_shm_tactic_name(unsigned tactic)
{
	static const char *const names[] = { NULL, "B1", "B2", "T1", "T3", "T2", "REL" };

	return tactic < sizeof(names) / sizeof(names[0]) ? names[tactic] : NULL;
}

const char *fl_shm_why_text(unsigned why)
{
	static const char *const text[] = {
		[FL_SHM_WHY_NONE] = "",
		[FL_SHM_WHY_UNDECODED] = "no instruction decodes at the site",
		[FL_SHM_WHY_NO_BASE] = "the access has no base register to test",
		[FL_SHM_WHY_BRANCH] = "the site is a branch",
		[FL_SHM_WHY_PINNED] = "its bytes are pinned by another patch",
		[FL_SHM_WHY_NO_ROOM] = "no free place for a stub in reach, and no neighbour to evict",
		[FL_SHM_WHY_OTHER] = "other",
		[FL_SHM_WHY_NO_EXTENT] = "no symbol or unwind entry gives the function's extent",
		[FL_SHM_WHY_COMPUTED_JUMP] = "the function has a computed jump",
		[FL_SHM_WHY_SELF_READ] = "the function reads its own bytes",
		[FL_SHM_WHY_EH_TABLES] = "the function has exception tables",
		[FL_SHM_WHY_ENTRY] = "the function's entry cannot take a jump",
		[FL_SHM_WHY_TOO_LARGE] = "the function's copy would not fit in a page",
		[FL_SHM_WHY_UNMOVABLE] = "an instruction of the function cannot be moved",
		[FL_SHM_WHY_RECORDS] = "the function has stack map records",
		[FL_SHM_WHY_RELOCATE_OFF] = "relocation is off",
	};

	return why < sizeof(text) / sizeof(text[0]) ? text[why] : "?";
}
