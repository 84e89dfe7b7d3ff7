/* SPDX-License-Identifier: MIT */
/*
 * Reading the program's fl_faults table (faultline_bpf.h) in user space:
 * it is an mmap-able array, so a read is a walk of memory, not a system
 * call per entry.  A key can have two slots (two CPUs took its first fault
 * at once): the records made here sum them, so every count is exact.
 * Include after faultline.skel.h.  The table is written by the program
 * while it is read: a record is what its slots held at some moment during
 * the walk.
 */
#ifndef FL_BPF_FAULTS_H
#define FL_BPF_FAULTS_H

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/types.h>

#include <linux/types.h>
#include <bpf/libbpf.h>

#include "faultline_bpf.h"

/* One key's counts, its slots summed. */
struct fl_fault_rec {
	struct fl_fault_key k;
	struct fl_fault_counts c;
};

#define FL_FAULTS_BYTES ((size_t)FL_FAULT_SLOTS * sizeof(struct fl_fault_slot))

/*
 * Maps map (the skeleton's fl_faults), writable for fl_bpf_faults_forget.
 * Returns the table, or NULL with errno set.
 */
static inline struct fl_fault_slot *fl_bpf_faults_map(struct bpf_map *map, bool writable)
{
	void *t;

	if (bpf_map__max_entries(map) != FL_FAULT_SLOTS ||
	    bpf_map__value_size(map) != sizeof(struct fl_fault_slot)) {
		errno = EINVAL;
		return NULL;
	}
	t = mmap(NULL, FL_FAULTS_BYTES, PROT_READ | (writable ? PROT_WRITE : 0), MAP_SHARED,
		 bpf_map__fd(map), 0);
	return t == MAP_FAILED ? NULL : (struct fl_fault_slot *)t;
}

static inline void fl_bpf_faults_unmap(struct fl_fault_slot *t)
{
	if (t)
		munmap(t, FL_FAULTS_BYTES);
}

static inline int fl_fault_rec_cmp(const void *a, const void *b)
{
	const struct fl_fault_key *x = &((const struct fl_fault_rec *)a)->k;
	const struct fl_fault_key *y = &((const struct fl_fault_rec *)b)->k;

	if (x->tgid != y->tgid)
		return x->tgid < y->tgid ? -1 : 1;
	return x->ip < y->ip ? -1 : x->ip > y->ip;
}

/* Adds b's counts to a's (not sites_gen, which is no count). */
static inline void fl_fault_counts_add(struct fl_fault_counts *a, const struct fl_fault_counts *b)
{
	a->implicit += b->implicit;
	a->stray += b->stray;
	a->read += b->read;
	a->write += b->write;
	a->ifetch += b->ifetch;
}

/* A live slot's tgid in *tgid.  Pairs with take_slot's store of the tag
 * after the ip (faultline.bpf.c): a slot read live here has its ip. */
static inline bool fl_fault_slot_live(const struct fl_fault_slot *s, __u32 *tgid)
{
	__u64 tag = __atomic_load_n(&s->tag, __ATOMIC_ACQUIRE);

	*tgid = (__u32)(tag >> 32);
	return (tag & 3) == 3;
}

/*
 * The records of t's keys (of tgid only, unless 0), sorted by tgid then
 * ip, into *out (malloc'ed; NULL when there are none).  Returns their
 * number, or -ENOMEM.
 */
static inline ssize_t fl_bpf_faults_read(const struct fl_fault_slot *t, __u32 only,
					 struct fl_fault_rec **out)
{
	struct fl_fault_rec *r = NULL, *grown;
	size_t n = 0, cap = 0, m = 0;

	for (size_t i = 0; i < FL_FAULT_SLOTS; i++) {
		const struct fl_fault_slot *s = &t[i];
		struct fl_fault_rec *e;
		__u32 tgid;

		if (!fl_fault_slot_live(s, &tgid) || (only && tgid != only))
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 256;
			grown = realloc(r, cap * sizeof(*r));
			if (!grown) {
				free(r);
				return -ENOMEM;
			}
			r = grown;
		}
		e = &r[n++];
		e->k.tgid = tgid;
		e->k.pad = 0;
		e->k.ip = s->ip;
		/* Each count alone: the program adds to them meanwhile. */
		e->c.implicit = __atomic_load_n(&s->c.implicit, __ATOMIC_RELAXED);
		e->c.stray = __atomic_load_n(&s->c.stray, __ATOMIC_RELAXED);
		e->c.read = __atomic_load_n(&s->c.read, __ATOMIC_RELAXED);
		e->c.write = __atomic_load_n(&s->c.write, __ATOMIC_RELAXED);
		e->c.ifetch = __atomic_load_n(&s->c.ifetch, __ATOMIC_RELAXED);
		e->c.sites_gen = __atomic_load_n(&s->c.sites_gen, __ATOMIC_RELAXED);
	}
	if (n)
		qsort(r, n, sizeof(*r), fl_fault_rec_cmp);
	/* A key's second slot, if any, is summed into its first. */
	for (size_t i = 0; i < n; i++) {
		if (m && !fl_fault_rec_cmp(&r[m - 1], &r[i])) {
			fl_fault_counts_add(&r[m - 1].c, &r[i].c);
			continue;
		}
		r[m++] = r[i];
	}
	*out = r;
	return (ssize_t)m;
}

/*
 * Marks dead the slots of every tgid gone(tgid, arg) says is gone: the
 * program takes them again for new keys.  Only for processes the program
 * no longer counts (their fl_tgid_bits bit clear): the program changes a
 * live slot's counts, never its tag.  Returns the number of slots marked.
 */
static inline size_t fl_bpf_faults_forget(struct fl_fault_slot *t,
					  bool (*gone)(__u32 tgid, void *arg), void *arg)
{
	size_t n = 0;

	for (size_t i = 0; i < FL_FAULT_SLOTS; i++) {
		__u64 live;
		__u32 tgid;

		if (!fl_fault_slot_live(&t[i], &tgid) || !gone(tgid, arg))
			continue;
		live = FL_SLOT_LIVE(tgid);
		/* Pairs with the program's compare-and-swap of a dead tag. */
		if (__atomic_compare_exchange_n(&t[i].tag, &live, FL_SLOT_DEAD, false,
						__ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
			n++;
	}
	return n;
}

/*
 * tgid's counts at ip in *c (zero when it has none).  Returns true when it
 * has some.  A walk of its probe window only, for tests and benchmarks.
 */
static inline bool fl_bpf_faults_get(const struct fl_fault_slot *t, __u32 tgid, __u64 ip,
				     struct fl_fault_counts *c)
{
	__u32 h = fl_fault_hash(tgid, ip);
	bool found = false;

	*c = (struct fl_fault_counts){ 0 };
	for (__u32 i = 0; i < FL_FAULT_PROBES; i++) {
		const struct fl_fault_slot *s = &t[(h + i) & (FL_FAULT_SLOTS - 1)];
		__u32 owner;

		if (__atomic_load_n(&s->tag, __ATOMIC_ACQUIRE) == FL_SLOT_EMPTY)
			break;
		if (!fl_fault_slot_live(s, &owner) || owner != tgid || s->ip != ip)
			continue;
		found = true;
		fl_fault_counts_add(c, &s->c);
	}
	return found;
}

#endif /* FL_BPF_FAULTS_H */
