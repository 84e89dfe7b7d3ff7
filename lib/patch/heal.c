/* SPDX-License-Identifier: MIT */
/*
 * Healing implicit null checks in place (fl_site_heal, fl_site_unheal in
 * include/faultline/patch.h): the plan is heal_plan.c's, the stubs'
 * memory stubs.c's, the change of the code patch.c's.
 *
 * Healing a site, with the patch lock held:
 *   1. Plan, with the mappings as they are: which bytes change, where the
 *      stubs go.  The planner is told which bytes are taken: other sites'
 *      instructions (evicting one would move its faulting PC) and what
 *      healed sites changed or rely on (a punned jump reads bytes it does
 *      not change: they are pinned while it is healed).
 *   2. Write the stubs (stubs.c: in memory, executable, before any jump
 *      to them exists).
 *   3. Change the code: the neighbour (T3) and the site, each within its
 *      own instruction, in one fl_patch_text batch (the int3 protocol).
 *      The neighbour's bytes that the site's jump lands on are in the
 *      tail of its change, written and serialized before any new first
 *      byte, so no thread can take the site's jump before they are there.
 * Unhealing: the old bytes back (the int3 protocol again), then the
 * handshake proves no thread is in a stub or returns into one, and the
 * stubs are freed.  If a thread stays in one (it was stopped there), the
 * code is restored all the same and the stubs are freed by a later
 * heal or unheal.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/mman.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <faultline/patch.h>

#include "format/diag.h"
#include "patch/heal.h"
#include "patch/heal_plan.h"
#include "patch/heal_policy.h"
#include "patch/internal.h"
#include "patch/maps.h"
#include "patch/seen.h"
#include "patch/stubs.h"
#include "dispatch/dispatch.h"
#include "format/smindex.h"
#include "proto/proto.h"
#include "core/env.h"
#include "core/log.h"
#include "table/libunwind.h"
#include "table/table.h"

struct relocation;

struct healed {
	struct healed *next;	/* in its bucket */
	struct fl_heal_plan plan;
	/* FL_HEAL_RELOC: the relocation that healed it (the plan has no changes of its own). */
	struct relocation *rel;
	/* Its stub's and its evicted neighbour's stub's registrations (seen.h), or NULL. */
	struct fl_seen *seen[2];
	uint64_t healed_at;	/* CLOCK_REALTIME, ns */
	uint32_t counter;	/* the site's counter slot */
	/* For the policy's unhealing: the failures last seen, and since when. */
	uint64_t last_failures;
	uint64_t quiet_since;	/* CLOCK_MONOTONIC, s */
};

/* A site found unhealable, and why (for stats), until it is healed. */
struct unhealable {
	struct unhealable *next;
	uint64_t pc;
	char why[112];
};

/*
 * Healed sites by bucket (pc / BUCKET): whatever a healed site changes or
 * pins lies within REACH of its pc (T3's rel8 and a neighbour's 15 bytes),
 * so the buckets around an address tell what is taken there.
 */
#define BUCKET 256u
#define REACH 160u
static struct healed **buckets;
static size_t num_buckets;	/* a power of 2 */
static size_t num_healed;
static struct unhealable *unhealables;

/* Stubs whose code was unhealed while a thread was in them: freed later. */
struct zombie {
	struct zombie *next;
	struct fl_patch ranges[2];
	size_t n;
	struct fl_seen *seen[2];	/* cancelled when the ranges are freed */
};
static struct zombie *zombies;
static size_t num_zombies;
/* A heal empties the quarantine from this many on. */
#define ZOMBIES_REAPED_AT 32

/*
 * A relocated function (FL_HEAL_RELOC): its copy, the jump at its entry,
 * and the sites it healed, each with a healed entry that points here.
 * Undone as a whole: unhealing any of its sites gives back the entry.
 */
struct relocation {
	struct relocation *next;
	struct fl_heal_reloc *r;
	size_t alive;		/* healed entries that point here */
	struct fl_seen *seen;	/* the copy's registration (seen.h), or NULL */
	bool loud;		/* fl_heal_unheal_quiet: a site of it failed lately */
};
static struct relocation *relocations;

static fl_heal_fn callback;
static void *callback_ctx;

void fl_set_heal_callback(fl_heal_fn fn, void *ctx)
{
	sigset_t old;

	if (fl_patch_lock(&old, NULL) != 0)
		return;
	callback = fn;
	callback_ctx = ctx;
	fl_patch_unlock(&old);
}

static size_t bucket_of(uint64_t pc)
{
	uint64_t k = pc / BUCKET;

	k ^= k >> 29;
	k *= 0xbf58476d1ce4e5b9ull;
	k ^= k >> 32;
	return (size_t)k & (num_buckets - 1);
}

static struct healed *healed_find(uint64_t pc)
{
	if (!num_buckets)
		return NULL;
	for (struct healed *h = buckets[bucket_of(pc)]; h; h = h->next)
		if (h->plan.site.addr == pc)
			return h;
	return NULL;
}

static int healed_add(struct healed *h)
{
	size_t b;

	if (num_healed + 1 > num_buckets / 2) {
		size_t n = num_buckets ? 2 * num_buckets : 64;
		struct healed **nb = calloc(n, sizeof(*nb)), **old = buckets;
		size_t old_n = num_buckets;

		if (!nb)
			return -ENOMEM;
		buckets = nb;
		num_buckets = n;
		for (size_t i = 0; i < old_n; i++)
			while (old[i]) {
				struct healed *x = old[i];

				old[i] = x->next;
				b = bucket_of(x->plan.site.addr);
				x->next = buckets[b];
				buckets[b] = x;
			}
		free(old);
	}
	b = bucket_of(h->plan.site.addr);
	h->next = buckets[b];
	buckets[b] = h;
	num_healed++;
	return 0;
}

static void healed_remove(struct healed *h)
{
	for (struct healed **p = &buckets[bucket_of(h->plan.site.addr)]; *p; p = &(*p)->next)
		if (*p == h) {
			*p = h->next;
			num_healed--;
			return;
		}
}

static bool overlaps(uint64_t a, size_t alen, uint64_t b, size_t blen)
{
	return blen && alen && a < b + blen && b < a + alen;
}

/* What a healed site changes or pins, or a relocation's entry, overlaps [a, a + len). */
static bool healed_busy(uint64_t a, size_t len)
{
	for (uint64_t k = (a - REACH) / BUCKET; num_buckets && k <= (a + len + REACH) / BUCKET; k++)
		for (struct healed *h = buckets[bucket_of(k * BUCKET)]; h; h = h->next) {
			const struct fl_heal_plan *p = &h->plan;

			if (p->site.addr / BUCKET != k)
				continue;
			if (overlaps(a, len, p->site.addr, p->site.len) ||
			    overlaps(a, len, p->pin, p->pin_len) ||
			    (p->evicts && overlaps(a, len, p->nb.addr, p->nb.len)))
				return true;
		}
	for (struct relocation *rel = relocations; rel; rel = rel->next)
		if (overlaps(a, len, rel->r->entry.addr, rel->r->entry.len))
			return true;
	return false;
}

static void overlay(uint64_t a, size_t len, uint8_t *out, const struct fl_heal_change *c)
{
	for (size_t i = 0; i < c->len; i++)
		if (c->addr + i >= a && c->addr + i < a + len)
			out[c->addr + i - a] = c->old[i];
}

/* [a, a + len) as compiled: the code, with what healed sites changed given back. */
static void compiled(uint64_t a, size_t len, uint8_t *out)
{
	memcpy(out, (const void *)(uintptr_t)a, len);
	/* A relocation's entry first: its old bytes may hold a healed site's jump. */
	for (struct relocation *rel = relocations; rel; rel = rel->next)
		overlay(a, len, out, &rel->r->entry);
	for (uint64_t k = (a - REACH) / BUCKET; num_buckets && k <= (a + len + REACH) / BUCKET; k++)
		for (struct healed *h = buckets[bucket_of(k * BUCKET)]; h; h = h->next) {
			if (h->plan.site.addr / BUCKET != k || h->rel)
				continue;
			overlay(a, len, out, &h->plan.site);
			if (h->plan.evicts)
				overlay(a, len, out, &h->plan.nb);
		}
}

/*
 * The heals of the batch being prepared (heal_batch).  The planner looks
 * at bytes within REACH of its site only, and a site within 2 * REACH of
 * one of the batch waits for the next batch (near_batch): no two plans of
 * a batch can see each other's bytes.
 */
#define HEAL_BATCH (FL_PATCH_MAX_BATCH / 2)

/* What the planner asks. */
struct env_ctx {
	struct fl_maps maps;
	uint64_t site;
	size_t site_len;
};

static bool env_place(void *ctx, uint64_t lo, uint64_t hi, size_t size, uint64_t *at)
{
	struct env_ctx *e = ctx;

	return fl_stubs_find(&e->maps, lo, hi, size, e->site, at);
}

/*
 * Bytes that are taken: another site's instruction (an evicted site would
 * fault in a stub, where no handler knows it; changed, it could not be
 * healed itself), or what a healed site changed or pins.
 *
 * Every range the planner asks about starts at an instruction boundary
 * (the site, the end of the site or of a neighbour, a neighbour), and an
 * instruction that starts before a boundary ends at or before it: another
 * site is in the range exactly when it starts inside it.  (Counting a site
 * that starts up to 15 bytes before the range, as if its instruction were
 * 15 bytes long, made every site within 15 bytes after another unhealable:
 * "pinned by another patch", with nothing healed.)
 */
static bool env_busy(void *ctx, uint64_t a, size_t len)
{
	struct env_ctx *e = ctx;
	struct fl_site_entry near[8];
	size_t n = fl_table_sites_in(a, a + len, near, 8);

	if (n > 8)
		return true;
	for (size_t i = 0; i < n; i++)
		if (near[i].faulting_pc != e->site)
			return true;
	return healed_busy(a, len);
}

/*
 * Relocation (heal_reloc.c) asks the function's extent of its unwind
 * entry (libunwind's, which also knows JIT code given to
 * fl_jit_register), and is off when FAULTLINE_HEAL_RELOCATE is 0: a
 * program that recognises its own faulting instructions by address (a
 * safepoint poll) would not find them in the copy.
 */
static bool relocation_on(void)
{
	const char *v = fl_env("FAULTLINE_HEAL_RELOCATE");

	return !v || strcmp(v, "0") != 0;
}

/*
 * FAULTLINE_HEAL_TACTICS: the tactics the planner may use (heal_plan.h's
 * names, "T2,REL"), all when unset; a list with an unknown name is
 * ignored, and said once.  For tests that need one tactic, and for a
 * program that wants to rule one out.
 */
static unsigned tactics_allowed(void)
{
	static _Atomic int said;
	const char *v = fl_env("FAULTLINE_HEAL_TACTICS");
	unsigned bits;

	if (!v || !*v)
		return 0;
	bits = fl_heal_tactics_parse(v);
	if (!bits && !atomic_exchange(&said, 1))
		fl_log(FL_LOG_WARN, "FAULTLINE_HEAL_TACTICS=%s: not a list of B1, B2, T1, T2, T3, "
		       "REL: every tactic is used", v);
	return bits;
}

static bool env_extent(void *ctx, uint64_t fn, uint64_t *end, bool *lsda)
{
	unw_proc_info_t pi;

	(void)ctx;
	memset(&pi, 0, sizeof(pi));
	if (fl_libunwind_load() != 0 ||
	    fl_libunwind->get_proc_info_by_ip(fl_libunwind->local_addr_space, fn, &pi, NULL) < 0 ||
	    pi.start_ip != fn || pi.end_ip <= fn)
		return false;
	*end = pi.end_ip;
	*lsda = pi.lsda != 0;
	return true;
}

static size_t env_sites(void *ctx, uint64_t lo, uint64_t hi, struct fl_heal_member *out,
			size_t max)
{
	struct fl_site_entry v[FL_HEAL_RELOC_SITES];
	size_t n = fl_table_sites_in(lo, hi, v, FL_HEAL_RELOC_SITES);

	(void)ctx;
	for (size_t i = 0; i < n && i < max && i < FL_HEAL_RELOC_SITES; i++)
		out[i] = (struct fl_heal_member){ v[i].faulting_pc, v[i].handler_pc };
	return n;
}

static void env_original(void *ctx, uint64_t a, size_t len, uint8_t *out)
{
	(void)ctx;
	compiled(a, len, out);
}

/*
 * The entry jump of a relocation may overwrite no byte another heal
 * changed or pins, its own sites' in-place heals included: a thread in
 * such a heal's stub would come back inside the entry's jump, and no
 * handshake looks in stubs.  (Such a site then stays as it is, and the
 * relocation is refused, said.)
 */
static bool env_entry_free(void *ctx, uint64_t fn, size_t len)
{
	(void)ctx;
	/* A relocation's members (h->rel) change nothing of their own: site.len is 0. */
	return !healed_busy(fn, len);
}

/*
 * Stack map records in [lo, hi) (a function of a page at most): the
 * module's records that the snapshot holds, looked at one by one (a
 * relocation is rare; the index finds records by exact address only).
 */
static bool env_records(void *ctx, uint64_t lo, uint64_t hi)
{
	const struct fl_snapshot *snap;
	const struct fl_snap_stackmap *m = NULL;
	unsigned parity = fl_snapshot_enter(&snap);
	bool found = false;

	(void)ctx;
	/* The module whose records' span meets [lo, hi) (one: the function is in one module). */
	for (uint64_t a = lo; snap && a < hi && !m; a++)
		m = fl_snapshot_stackmap(snap, a);
	for (uint32_t i = 0, n = m ? fl_smindex_count(m->index) : 0; i < n && !found; i++) {
		uint64_t pc = fl_smindex_record(m->index, i)->pc;

		found = pc >= lo && pc < hi;
	}
	fl_snapshot_leave(parity);
	return found;
}

static struct fl_shm_heal *slot_of(uint64_t pc, uint32_t *counter)
{
	struct fl_site_entry s;

	if (fl_table_sites_in(pc, pc + 1, &s, 1) != 1)
		return NULL;
	if (counter)
		*counter = s.counter;
	return fl_counters_heal(s.counter);
}

static uint64_t env_counter(void *ctx, uint64_t pc)
{
	struct fl_shm_heal *slot = slot_of(pc, NULL);

	(void)ctx;
	return slot ? (uint64_t)(uintptr_t)&slot->failures : 0;
}

/* Sets slot's heal policy count (FL_HEAL_GAVE_UP, or 0 to start again). */
static void watch_set(uint32_t slot, uint32_t count)
{
	if (fl_heal_trigger.watch && slot < fl_heal_trigger.slots)
		atomic_store_explicit(&fl_heal_trigger.watch[slot].count, count,
				      memory_order_relaxed);
}

static void say_unhealable(uint64_t pc, const char *why)
{
	struct unhealable *u;

	for (u = unhealables; u; u = u->next)
		if (u->pc == pc)
			break;
	if (!u) {
		u = calloc(1, sizeof(*u));
		if (!u)
			return;
		u->pc = pc;
		u->next = unhealables;
		unhealables = u;
	}
	snprintf(u->why, sizeof(u->why), "%s", why);
}

static void forget_unhealable(uint64_t pc)
{
	for (struct unhealable **p = &unhealables; *p; p = &(*p)->next)
		if ((*p)->pc == pc) {
			struct unhealable *u = *p;

			*p = u->next;
			free(u);
			return;
		}
}

/*
 * Modules that go away take their heals with them: the table tells (an
 * observer), under its lock, where nothing may block on the patch lock;
 * the module's code range goes to `gone`, and the next heal operation,
 * under the patch lock, forgets the healed sites in it (their stubs wait
 * in the zombies until no thread is in one) and what was unhealable
 * there.  A module loaded later at the same address starts as compiled.
 */
struct mod_range {
	struct mod_range *next;
	int id;
	uint64_t start, size;
};

static pthread_mutex_t mods_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mod_range *mods, *gone;

static void mod_added(const struct fl_table_module *m, void *data)
{
	struct mod_range *r = malloc(sizeof(*r));

	(void)data;
	if (!r)
		return;		/* its heals outlive it: as before, no worse */
	r->id = m->id;
	r->start = m->code_start;
	r->size = m->code_size;
	pthread_mutex_lock(&mods_lock);
	r->next = mods;
	mods = r;
	pthread_mutex_unlock(&mods_lock);
}

static void mod_removed(int id)
{
	pthread_mutex_lock(&mods_lock);
	for (struct mod_range **p = &mods; *p; p = &(*p)->next)
		if ((*p)->id == id) {
			struct mod_range *r = *p;

			/* Its patched addresses first: nothing there is ours now. */
			fl_poked_forget(r->start, r->start + r->size);
			*p = r->next;
			r->next = gone;
			gone = r;
			break;
		}
	pthread_mutex_unlock(&mods_lock);
}

static void mods_fork_prepare(void)
{
	pthread_mutex_lock(&mods_lock);
}

static void mods_fork_done(void)
{
	pthread_mutex_unlock(&mods_lock);
}

static void mods_fork_child(int counters_err)
{
	(void)counters_err;
	pthread_mutex_unlock(&mods_lock);
}

static const struct fl_table_observer heal_observer = {
	.module_added = mod_added,
	.module_removed = mod_removed,
	.fork_prepare = mods_fork_prepare,
	.fork_parent = mods_fork_done,
	.fork_child = mods_fork_child,
};

int fl_heal_subscribe(void)
{
	return fl_table_observe(&heal_observer);
}

static struct zombie *zombie_of(const struct healed *h)
{
	struct zombie *z = calloc(1, sizeof(*z));

	if (!z)
		return NULL;
	z->ranges[z->n++] = (struct fl_patch){ .addr = (void *)(uintptr_t)h->plan.stub,
					       .len = h->plan.stub_size };
	z->seen[0] = h->seen[0];
	if (h->plan.evicts) {
		z->ranges[z->n++] = (struct fl_patch){ .addr = (void *)(uintptr_t)h->plan.nb_stub,
						       .len = h->plan.nb_stub_size };
		z->seen[1] = h->seen[1];
	}
	return z;
}

static void zombie_add(struct zombie *z)
{
	if (!z)
		return;		/* the stubs stay taken: safe, a leak */
	z->next = zombies;
	zombies = z;
	num_zombies++;
}

/*
 * A relocation none of whose sites is healed any more, its entry given
 * back (or its module gone): its copy waits with the zombies until no
 * thread is in it or returns into it.
 */
static void reloc_retire(struct relocation *rel)
{
	struct zombie *z = calloc(1, sizeof(*z));

	for (struct relocation **p = &relocations; *p; p = &(*p)->next)
		if (*p == rel) {
			*p = rel->next;
			break;
		}
	if (z) {
		z->ranges[z->n++] = (struct fl_patch){ .addr = (void *)(uintptr_t)rel->r->copy,
						       .len = rel->r->size };
		z->seen[0] = rel->seen;
	}
	zombie_add(z);
	free(rel->r->bytes);
	free(rel->r->rows);
	free(rel->r);
	free(rel);
}

/* Under the patch lock: forgets the heals of the modules gone. */
static void forget_gone(void)
{
	struct mod_range *list;

	pthread_mutex_lock(&mods_lock);
	list = gone;
	gone = NULL;
	pthread_mutex_unlock(&mods_lock);
	while (list) {
		struct mod_range *r = list;
		uint64_t end = r->start + r->size;

		list = r->next;
		for (size_t b = 0; b < num_buckets; b++)
			for (struct healed **p = &buckets[b]; *p;) {
				struct healed *h = *p;
				struct zombie *z;

				if (h->plan.site.addr < r->start || h->plan.site.addr >= end) {
					p = &h->next;
					continue;
				}
				*p = h->next;
				num_healed--;
				if (h->rel) {
					/* The copy goes with the last of its sites. */
					if (--h->rel->alive == 0)
						reloc_retire(h->rel);
				} else {
					z = zombie_of(h);
					zombie_add(z);
				}
				free(h);
			}
		for (struct unhealable **p = &unhealables; *p;) {
			struct unhealable *u = *p;

			if (u->pc >= r->start && u->pc < end) {
				*p = u->next;
				free(u);
			} else {
				p = &u->next;
			}
		}
		free(r);
	}
}

/* Frees the zombies' stubs that no thread is in any more. */
static void zombies_reap(void)
{
	for (struct zombie **p = &zombies; *p;) {
		struct zombie *z = *p;

		if (fl_patch_quiesce_locked(z->ranges, z->n, NULL) != 0) {
			p = &z->next;
			continue;
		}
		for (size_t i = 0; i < z->n; i++) {
			fl_stubs_free((uint64_t)(uintptr_t)z->ranges[i].addr, z->ranges[i].len);
			fl_seen_remove(z->seen[i]);
		}
		*p = z->next;
		free(z);
		num_zombies--;
	}
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The event to tell once the lock is released. */
struct event {
	bool tell;
	struct fl_heal_event ev;
	char tactic[4];
	char reason[112];
	/* The other sites a relocation healed or gave back with this one: told the same. */
	uint64_t also[FL_HEAL_RELOC_SITES];
	size_t nalso;
};

static void tell(struct event *e)
{
	fl_heal_fn fn;
	void *ctx;
	sigset_t old;

	if (!e->tell || fl_patch_lock(&old, NULL) != 0)
		return;
	fn = callback;
	ctx = callback_ctx;
	fl_patch_unlock(&old);
	if (!fn)
		return;
	e->ev.sz = sizeof(e->ev);
	e->ev.tactic = e->tactic;
	e->ev.reason = e->reason;
	fn(&e->ev, ctx);
	for (size_t i = 0; i < e->nalso; i++) {
		e->ev.faulting_pc = e->also[i];
		fn(&e->ev, ctx);
	}
}

/*
 * A heal planned and its stubs written, its jump not yet (heal_prepare):
 * heal_commit after its changes are written, heal_undo if they are not.
 */
struct prepared {
	struct healed *h;
	struct fl_shm_heal *slot;
	uint32_t counter;
	struct fl_maps maps;	/* read while it was planned */
};

/* One registration of new code standing for the code at orig (seen.h). */
static void seen_one(uint64_t at, size_t len, uint64_t orig, const struct fl_seen_row *rows,
		     size_t n, struct fl_seen **out)
{
	static const char prefix[] = "faultline:heal:";
	char name[256];
	struct fl_diag d = { 0 };

	memcpy(name, prefix, sizeof(prefix));
	fl_seen_name(orig, name + sizeof(prefix) - 1, sizeof(name) - (sizeof(prefix) - 1));
	if (fl_seen_add(at, len, name, rows, n, out, &d) != 0)
		fl_log(FL_LOG_DEBUG, "%s at 0x%llx: %s", name, (unsigned long long)at, d.msg);
}

/*
 * Names the heal's new code in the perf map and gives it the unwind rules
 * of the code it stands for (seen.h), before any jump to it exists: a
 * profiler names it, libunwind, backtrace() and a C++ exception step
 * through it.  A registration that fails leaves the heal as it is.
 */
static void make_seen(const struct fl_heal_env *env, struct healed *h)
{
	const struct fl_heal_plan *p = &h->plan;
	struct fl_seen_row rows[FL_HEAL_STUB_ROWS];

	if (p->tactic == FL_HEAL_RELOC) {
		seen_one(p->reloc->copy, p->reloc->size, p->reloc->fn, p->reloc->rows,
			 p->reloc->nrows, &h->seen[0]);
		return;
	}
	seen_one(p->stub, p->stub_size, p->site.addr, rows, fl_heal_stub_rows(env, p, rows),
		 &h->seen[0]);
	if (p->evicts) {
		rows[0] = (struct fl_seen_row){ p->nb_stub, p->nb.addr, 0 };
		rows[1] = (struct fl_seen_row){ p->nb_stub + p->nb.len, p->nb.addr + p->nb.len, 0 };
		seen_one(p->nb_stub, p->nb_stub_size, p->nb.addr, rows, 2, &h->seen[1]);
	}
}

/*
 * Plans the heal of pc and writes its stubs; its changes (one or two)
 * are appended to changes at *n.  Returns 0 (p is to be committed or
 * undone), 1 (healed already: nothing to do), or -errno (said, and the
 * event of an unhealable site set).
 */
static int heal_prepare(uint64_t pc, struct prepared *p, struct fl_patch *changes, size_t *n,
			struct event *ev, struct fl_diag *diag)
{
	struct env_ctx e = { .site = pc };
	struct fl_heal_env env = { .place = env_place, .busy = env_busy, .sites = env_sites,
				   .original = env_original, .entry_free = env_entry_free,
				   .records = env_records, .counter = env_counter, .ctx = &e };
	struct fl_site_entry site;
	uint64_t code_start, code_end;
	uint8_t stub[FL_HEAL_STUB_MAX], nb_stub[FL_HEAL_STUB_MAX];
	struct healed *h;
	struct fl_shm_heal *slot;
	int err;

	memset(p, 0, sizeof(*p));
	if (!fl_patch_enabled())
		return fl_diag_say(diag, -ENOTSUP, "code patching is not enabled (fl_patch_enable)");
	forget_gone();
	if (healed_find(pc))
		return 1;
	if (fl_table_sites_in(pc, pc + 1, &site, 1) != 1)
		return fl_diag_say(diag, -ENOENT, "0x%llx is no registered implicit-check site",
				   (unsigned long long)pc);
	/* The quarantine is emptied now and then, or when a stub finds no room. */
	if (num_zombies >= ZOMBIES_REAPED_AT)
		zombies_reap();
	err = fl_maps_read(&e.maps);
	if (err)
		return fl_diag_say(diag, err, "reading /proc/self/maps: %s", strerror(-err));
	if (!fl_maps_code(&e.maps, pc, &code_start, &code_end) || site.function < code_start ||
	    site.function > pc) {
		err = fl_diag_say(diag, -EFAULT, "the site 0x%llx is not in readable code with its "
				  "function", (unsigned long long)pc);
		goto out;
	}
	env.base = code_start;
	env.code = (const uint8_t *)(uintptr_t)code_start;
	env.len = code_end - code_start;
	if (relocation_on())
		env.extent = env_extent;
	env.tactics = tactics_allowed();

	h = calloc(1, sizeof(*h));
	if (!h) {
		err = fl_diag_say(diag, -ENOMEM, "out of memory");
		goto out;
	}
	slot = fl_counters_heal(site.counter);
	if (!slot) {
		err = fl_diag_say(diag, -ENOSPC, "the site 0x%llx has no healing slot",
				  (unsigned long long)pc);
		goto fail;
	}
	err = fl_heal_plan(&env, pc, site.function, site.handler_pc, &h->plan);
	if (!err && h->plan.tactic == FL_HEAL_NONE && zombies) {
		zombies_reap();
		memset(&h->plan, 0, sizeof(h->plan));
		err = fl_heal_plan(&env, pc, site.function, site.handler_pc, &h->plan);
	}
	if (!err && h->plan.tactic == FL_HEAL_RELOC) {
		/* Every check of the copy counts somewhere: a null counter would fault in it. */
		const struct fl_heal_reloc *r = h->plan.reloc;

		for (size_t i = 0; i < r->nmembers; i++)
			if (!env_counter(NULL, r->members[i].pc)) {
				fl_heal_plan_release(&h->plan);
				err = fl_diag_say(diag, -ENOSPC, "the site 0x%llx of the function to "
						  "relocate has no healing slot",
						  (unsigned long long)r->members[i].pc);
				break;
			}
	}
	if (!err && h->plan.tactic == FL_HEAL_NONE) {
		say_unhealable(pc, h->plan.why);
		watch_set(site.counter, FL_HEAL_GAVE_UP);
		slot->why = (uint8_t)h->plan.why_code;
		/* Release: why is written before the daemon sees the state (acquire). */
		atomic_store_explicit(&slot->state, FL_SHM_HEAL_UNHEALABLE, memory_order_release);
		fl_counters_mark_dirty(site.counter, 1);
		ev->tell = true;
		ev->ev.faulting_pc = pc;
		ev->ev.state = FL_HEAL_UNHEALABLE;
		snprintf(ev->reason, sizeof(ev->reason), "%s", h->plan.why);
		err = fl_diag_say(diag, -EOPNOTSUPP, "the site 0x%llx cannot be healed in place: %s",
				  (unsigned long long)pc, h->plan.why);
	}
	if (err)
		goto fail;

	if (h->plan.tactic == FL_HEAL_RELOC) {
		err = fl_stubs_take(h->plan.reloc->copy, h->plan.reloc->bytes, h->plan.reloc->size);
	} else {
		fl_heal_site_stub(&h->plan, site.handler_pc, (uint64_t)(uintptr_t)&slot->failures,
				  stub);
		err = fl_stubs_take(h->plan.stub, stub, h->plan.stub_size);
	}
	if (!err && h->plan.evicts) {
		fl_heal_nb_stub(&h->plan, nb_stub);
		err = fl_stubs_take(h->plan.nb_stub, nb_stub, h->plan.nb_stub_size);
		if (err)
			fl_stubs_free(h->plan.stub, h->plan.stub_size);
	}
	if (err) {
		fl_diag_say(diag, err, "the stub of 0x%llx at 0x%llx: %s", (unsigned long long)pc,
			    (unsigned long long)h->plan.stub, strerror(-err));
		fl_heal_plan_release(&h->plan);
		goto fail;
	}
	make_seen(&env, h);
	if (h->plan.tactic == FL_HEAL_RELOC)
		changes[(*n)++] = (struct fl_patch){ (void *)(uintptr_t)h->plan.reloc->entry.addr,
						     h->plan.reloc->entry.old,
						     h->plan.reloc->entry.new, 5 };
	else if (h->plan.evicts)
		changes[(*n)++] = (struct fl_patch){ (void *)(uintptr_t)h->plan.nb.addr, h->plan.nb.old,
						     h->plan.nb.new, h->plan.nb.len };
	if (h->plan.tactic != FL_HEAL_RELOC)
		changes[(*n)++] = (struct fl_patch){ (void *)(uintptr_t)pc, h->plan.site.old,
						     h->plan.site.new, h->plan.site.len };
	p->h = h;
	p->slot = slot;
	p->counter = site.counter;
	p->maps = e.maps;
	return 0;
fail:
	free(h);
out:
	free(e.maps.m);
	return err;
}

/* Nothing jumps to p's stubs: they are freed, the code is as it was. */
static void heal_undo(struct prepared *p)
{
	fl_stubs_free(p->h->plan.stub, p->h->plan.stub_size);
	if (p->h->plan.evicts)
		fl_stubs_free(p->h->plan.nb_stub, p->h->plan.nb_stub_size);
	fl_seen_remove(p->h->seen[0]);
	fl_seen_remove(p->h->seen[1]);
	fl_heal_plan_release(&p->h->plan);
	free(p->h);
	free(p->maps.m);
}

/* Marks the slot of a site healed by tactic t. */
static void slot_healed(struct fl_shm_heal *slot, uint32_t counter, uint64_t at_ns,
			enum fl_heal_tactic t)
{
	slot->healed_at = (uint32_t)(at_ns / 1000000000u);
	slot->tactic = (uint8_t)t;
	slot->why = FL_SHM_WHY_NONE;
	/* Release: the fields above before the state (the daemon's acquire). */
	atomic_store_explicit(&slot->state, FL_SHM_HEAL_HEALED, memory_order_release);
	/*
	 * The daemon saves the block, and from then on reads it every period
	 * while a slot in it is healed: the stub's lock incq of failures
	 * marks nothing.
	 */
	fl_counters_mark_dirty(counter, 1);
}

/*
 * A relocation's entry is written: every site of the function that is not
 * healed already is healed by it, each with an entry of its own.  Returns
 * 0, or -ENOMEM (said: the relocation stays, with the entries made).
 */
static int reloc_commit(struct prepared *p, struct event *ev, struct fl_diag *diag)
{
	struct healed *h = p->h;
	struct relocation *rel = calloc(1, sizeof(*rel));
	uint64_t now = now_ns(), pc = h->plan.site.addr;
	struct fl_heal_reloc *r = h->plan.reloc;

	if (!rel) {
		/* The jump is written: the copy stays (a leak, safe), unhealable from here. */
		free(h);
		return fl_diag_say(diag, -ENOMEM, "out of memory for the relocation of 0x%llx",
				   (unsigned long long)pc);
	}
	rel->r = r;
	rel->seen = h->seen[0];
	h->seen[0] = NULL;
	h->plan.reloc = NULL;
	rel->next = relocations;
	relocations = rel;
	for (size_t i = 0; i < r->nmembers; i++) {
		uint64_t m = r->members[i].pc;
		struct healed *hm = m == pc ? h : NULL;
		struct fl_shm_heal *slot;
		uint32_t counter = 0;

		if (!hm && healed_find(m))
			continue;	/* healed in place: its stub stays, its check is in the copy too */
		slot = slot_of(m, &counter);
		if (!hm)
			hm = calloc(1, sizeof(*hm));
		if (!hm || !slot) {
			if (hm != h)
				free(hm);
			continue;
		}
		/* Nothing of its own changed or pinned: the relocation's entry is (healed_busy). */
		hm->plan.tactic = FL_HEAL_RELOC;
		hm->plan.site = (struct fl_heal_change){ .addr = m };
		hm->plan.stub = r->copy;
		hm->plan.stub_size = 0;
		hm->plan.evicts = false;
		hm->plan.pin_len = 0;
		hm->rel = rel;
		if (healed_add(hm) != 0) {
			if (hm != h)
				free(hm);
			continue;
		}
		hm->healed_at = now;
		hm->counter = counter;
		rel->alive++;
		forget_unhealable(m);
		slot_healed(slot, counter, now, FL_HEAL_RELOC);
		if (m != pc && ev->nalso < FL_HEAL_RELOC_SITES)
			ev->also[ev->nalso++] = m;
	}
	if (!healed_find(pc))
		free(h);
	if (!rel->alive) {
		/* No site could be recorded (no memory, no slot): nothing heals; undone now. */
		struct fl_patch back = { (void *)(uintptr_t)r->entry.addr, r->entry.new,
					 r->entry.old, r->entry.len };

		if (fl_patch_text_locked(&back, 1, NULL, 0, NULL) == 0)
			reloc_retire(rel);
		return fl_diag_say(diag, -ENOMEM, "the relocation of 0x%llx healed no site",
				   (unsigned long long)pc);
	}
	ev->tell = true;
	ev->ev.faulting_pc = pc;
	ev->ev.state = FL_HEAL_HEALED;
	snprintf(ev->tactic, sizeof(ev->tactic), "%s", fl_heal_tactic_name(FL_HEAL_RELOC));
	return 0;
}

/* p's changes are written: it is healed.  Returns 0 or -ENOMEM (said). */
static int heal_commit(struct prepared *p, struct event *ev, struct fl_diag *diag)
{
	struct healed *h = p->h;
	struct fl_shm_heal *slot = p->slot;
	uint64_t pc = h->plan.site.addr;

	free(p->maps.m);
	if (h->plan.tactic == FL_HEAL_RELOC)
		return reloc_commit(p, ev, diag);
	if (healed_add(h) != 0) {
		/*
		 * The jump is written: the stubs stay taken (a leak, safe),
		 * the site heals no more through this registry.
		 */
		free(h);
		return fl_diag_say(diag, -ENOMEM, "out of memory for the healed site 0x%llx",
				   (unsigned long long)pc);
	}
	h->healed_at = now_ns();
	h->counter = p->counter;
	forget_unhealable(pc);
	slot_healed(slot, p->counter, h->healed_at, h->plan.tactic);
	ev->tell = true;
	ev->ev.faulting_pc = pc;
	ev->ev.state = FL_HEAL_HEALED;
	snprintf(ev->tactic, sizeof(ev->tactic), "%s", fl_heal_tactic_name(h->plan.tactic));
	return 0;
}

static int heal_locked(uint64_t pc, struct event *ev, struct fl_diag *diag)
{
	struct fl_patch changes[2];
	struct prepared p;
	size_t n = 0;
	int err = heal_prepare(pc, &p, changes, &n, ev, diag);

	if (err)
		return err > 0 ? 0 : err;
	/* The stubs' new pages are not the code's: the mappings read then still hold. */
	if (p.h->plan.tactic == FL_HEAL_T2) {
		/*
		 * The site's jump reads the successor's new first bytes: they
		 * are written, and every thread sees them, before it is.  Each
		 * change is entered only at its first byte.
		 */
		err = fl_patch_text_locked(&changes[0], 1, &p.maps, FL_PATCH_ENTERED_AT_START, diag);
		if (!err) {
			err = fl_patch_text_locked(&changes[1], 1, &p.maps, FL_PATCH_ENTERED_AT_START,
						   diag);
			if (err) {
				/*
				 * Threads may be in the successor's stub already: the
				 * successor back, the stubs quarantined, not freed.  If
				 * it cannot be given back it stays a jump to its stub,
				 * which stays: correct, a leak.
				 */
				struct zombie *z = NULL;

				if (fl_patch_text_locked(&(struct fl_patch){ changes[0].addr,
						changes[0].new_bytes, changes[0].old_bytes, changes[0].len },
						1, &p.maps, FL_PATCH_ENTERED_AT_START, NULL) == 0)
					z = zombie_of(p.h);
				zombie_add(z);
				free(p.maps.m);
				fl_heal_plan_release(&p.h->plan);
				free(p.h);
				return err;
			}
		}
	} else {
		/* A relocation's entry moves boundaries whatever its bytes decode to now. */
		err = fl_patch_text_locked(changes, n, &p.maps, p.h->plan.tactic == FL_HEAL_RELOC ?
					   FL_PATCH_CHECK_THREADS : 0, diag);
	}
	if (err) {
		heal_undo(&p);
		return err;
	}
	return heal_commit(&p, ev, diag);
}

/* Tactics whose changes are made alone, not in a batch: T2 (two changes), REL (a handshake). */
static bool heals_alone(const struct healed *h)
{
	return h->plan.tactic == FL_HEAL_T2 || h->plan.tactic == FL_HEAL_RELOC;
}

/* Whether pc is within the planner's reach of one of the k heals prepared. */
static bool near_batch(uint64_t pc, const struct prepared *preps, size_t k)
{
	for (size_t i = 0; i < k; i++) {
		uint64_t other = preps[i].h->plan.site.addr;

		if ((pc > other ? pc - other : other - pc) < 2 * REACH)
			return true;
	}
	return false;
}

/*
 * The heals of pcs[0..n) whose result is still 1 (to do), in batches
 * that share one change of code (fl_patch_text_locked: its serializations
 * and its handshake, once for all of them).  A site within the planner's
 * reach of one of the batch waits for the next batch: it is planned with
 * that one's bytes healed, as one after the other would be.  A batch whose
 * change is refused (a thread in the way of one of its sites) is healed
 * again one site at a time.  Each result: 0, or -errno.
 */
static void heal_batch(const uint64_t *pcs, size_t n, int *results, struct event *evs)
{
	struct fl_patch changes[2 * HEAL_BATCH];
	struct prepared preps[HEAL_BATCH];
	size_t which[HEAL_BATCH];
	bool left = true;

	while (left) {
		size_t nchanges = 0, k = 0;
		int err;

		left = false;
		for (size_t i = 0; i < n; i++) {
			if (results[i] != 1)
				continue;
			if (k == HEAL_BATCH || near_batch(pcs[i], preps, k)) {
				left = true;
				continue;
			}
			size_t before = nchanges;

			results[i] = heal_prepare(pcs[i], &preps[k], changes, &nchanges, &evs[i], NULL);
			if (results[i] > 0) {
				results[i] = 0;		/* healed already */
			} else if (results[i] == 0 && heals_alone(preps[k].h)) {
				heal_undo(&preps[k]);
				nchanges = before;
				results[i] = 2;		/* after the batches, alone */
			} else if (results[i] == 0) {
				which[k++] = i;
			}
		}
		if (!k)
			continue;
		err = fl_patch_text_locked(changes, nchanges, NULL, 0, NULL);
		for (size_t j = 0; j < k; j++) {
			size_t i = which[j];

			if (err) {
				heal_undo(&preps[j]);
				results[i] = k == 1 ? err : heal_locked(pcs[i], &evs[i], NULL);
			} else
				results[i] = heal_commit(&preps[j], &evs[i], NULL);
		}
	}
	for (size_t i = 0; i < n; i++)
		if (results[i] == 2)
			results[i] = heal_locked(pcs[i], &evs[i], NULL);
}

int fl_sites_heal(const uint64_t *pcs, size_t n, int *results)
{
	struct event *evs = calloc(n ? n : 1, sizeof(*evs));
	sigset_t old;
	int err;

	if (!evs)
		return -ENOMEM;
	err = fl_patch_lock(&old, NULL);
	if (err) {
		free(evs);
		return err;
	}
	for (size_t i = 0; i < n; i++)
		results[i] = 1;
	heal_batch(pcs, n, results, evs);
	fl_patch_unlock(&old);
	for (size_t i = 0; i < n; i++)
		tell(&evs[i]);
	free(evs);
	return 0;
}

int fl_site_heal(const void *faulting_pc, struct fl_diag *diag)
{
	struct event ev = { 0 };
	sigset_t old;
	int err = fl_patch_lock(&old, diag);

	if (err)
		return err;
	err = heal_locked((uint64_t)(uintptr_t)faulting_pc, &ev, diag);
	fl_patch_unlock(&old);
	tell(&ev);
	return err;
}

/* The slot of a site no longer healed: implicit, and the policy counts from 0 again. */
static void slot_implicit(uint32_t counter)
{
	struct fl_shm_heal *slot = fl_counters_heal(counter);

	if (slot) {
		atomic_store_explicit(&slot->state, FL_SHM_HEAL_IMPLICIT, memory_order_release);
		fl_counters_mark_dirty(counter, 1);
	}
	watch_set(counter, 0);
}

/*
 * Unhealing a site healed by relocation undoes the relocation: the entry's
 * bytes back (the handshake: the change moves instruction boundaries),
 * then every site it healed is implicit again.  Threads in the copy
 * finish there; it is freed once none is in it.
 */
static int unheal_reloc(struct relocation *rel, uint64_t pc, struct event *ev,
			struct fl_diag *diag)
{
	struct fl_heal_reloc *r = rel->r;
	struct fl_patch back = { (void *)(uintptr_t)r->entry.addr, r->entry.new, r->entry.old,
				 r->entry.len };
	int err = fl_patch_text_locked(&back, 1, NULL, 0, diag);

	if (err)
		return err;
	for (size_t i = 0; i < r->nmembers; i++) {
		struct healed *h = healed_find(r->members[i].pc);

		if (!h || h->rel != rel)
			continue;
		healed_remove(h);
		slot_implicit(h->counter);
		free(h);
		if (r->members[i].pc != pc && ev->nalso < FL_HEAL_RELOC_SITES)
			ev->also[ev->nalso++] = r->members[i].pc;
	}
	reloc_retire(rel);
	return 0;
}

static int unheal_locked(uint64_t pc, struct event *ev, struct fl_diag *diag)
{
	struct healed *h;
	struct fl_patch changes[2];
	struct zombie *z;
	size_t n = 0;
	int err;

	forget_gone();
	h = healed_find(pc);
	if (!h)
		return fl_diag_say(diag, -ENOENT, "the site 0x%llx is not healed",
				   (unsigned long long)pc);
	if (h->rel) {
		err = unheal_reloc(h->rel, pc, ev, diag);
		if (!err) {
			ev->tell = true;
			ev->ev.faulting_pc = pc;
			ev->ev.state = FL_HEAL_IMPLICIT;
		}
		return err;
	}
	if (h->plan.tactic == FL_HEAL_T2) {
		/* The other order than the heal's: no thread reads the successor's bytes as a rel32 once the site is back. */
		struct fl_patch site_back = { (void *)(uintptr_t)pc, h->plan.site.new,
					      h->plan.site.old, h->plan.site.len };
		struct fl_patch succ_back = { (void *)(uintptr_t)h->plan.nb.addr, h->plan.nb.new,
					      h->plan.nb.old, h->plan.nb.len };

		err = fl_patch_text_locked(&site_back, 1, NULL, FL_PATCH_ENTERED_AT_START, diag);
		if (err)
			return err;
		/* If this fails the successor stays a jump to its stub, which stays: correct. */
		if (fl_patch_text_locked(&succ_back, 1, NULL, FL_PATCH_ENTERED_AT_START, diag) != 0)
			h->plan.evicts = false;
		goto unhealed;
	}
	if (h->plan.evicts)
		changes[n++] = (struct fl_patch){ (void *)(uintptr_t)h->plan.nb.addr, h->plan.nb.new,
						  h->plan.nb.old, h->plan.nb.len };
	changes[n++] = (struct fl_patch){ (void *)(uintptr_t)pc, h->plan.site.new, h->plan.site.old,
					  h->plan.site.len };
	/*
	 * The site's own jump (B1, B2, T1) is entered only at its first byte:
	 * its range holds no boundary a thread can be at, whatever bytes
	 * follow the jump.  A neighbour's (T2, T3) is also entered at the
	 * site's jump's target, inside it: the threads are checked.
	 */
	err = fl_patch_text_locked(changes, n, NULL, h->plan.evicts ? 0 : FL_PATCH_ENTERED_AT_START,
				   diag);
	if (err)
		return err;
unhealed:
	healed_remove(h);
	slot_implicit(h->counter);
	ev->tell = true;
	ev->ev.faulting_pc = pc;
	ev->ev.state = FL_HEAL_IMPLICIT;

	/*
	 * No jump reaches the stubs any more: quarantined, freed once no
	 * thread is in one (zombies_reap, when a heal needs the room), so
	 * that an unheal disturbs no thread.
	 */
	z = zombie_of(h);
	if (z && h->plan.tactic == FL_HEAL_T2 && !h->plan.evicts) {
		z->n = 1;	/* the successor's stub is still reached: it stays */
		z->seen[1] = NULL;
	}
	free(h);
	zombie_add(z);
	return 0;
}

int fl_site_unheal(const void *faulting_pc, struct fl_diag *diag)
{
	struct event ev = { 0 };
	sigset_t old;
	int err = fl_patch_lock(&old, diag);

	if (err)
		return err;
	err = unheal_locked((uint64_t)(uintptr_t)faulting_pc, &ev, diag);
	fl_patch_unlock(&old);
	tell(&ev);
	return err;
}

int fl_site_heal_info(const void *faulting_pc, struct fl_heal_info *out)
{
	uint64_t pc = (uint64_t)(uintptr_t)faulting_pc;
	struct fl_heal_info info = { .sz = sizeof(info) };
	struct fl_site_entry site;
	struct fl_shm_heal *slot;
	struct healed *h;
	sigset_t old;
	int err;

	if (!out || out->sz < sizeof(*out))
		return -EINVAL;
	if (fl_table_sites_in(pc, pc + 1, &site, 1) != 1)
		return -ENOENT;
	slot = fl_counters_heal(site.counter);
	err = fl_patch_lock(&old, NULL);
	if (err)
		return err;
	forget_gone();
	h = healed_find(pc);
	if (h) {
		info.state = FL_HEAL_HEALED;
		snprintf(info.tactic, sizeof(info.tactic), "%s", fl_heal_tactic_name(h->plan.tactic));
		info.healed_at_ns = h->healed_at;
		info.stub = h->plan.stub;
	} else {
		for (struct unhealable *u = unhealables; u; u = u->next)
			if (u->pc == pc) {
				info.state = FL_HEAL_UNHEALABLE;
				snprintf(info.reason, sizeof(info.reason), "%s", u->why);
			}
	}
	fl_patch_unlock(&old);
	info.healed_failures = slot ? atomic_load_explicit(&slot->failures, memory_order_relaxed) : 0;
	*out = info;
	return 0;
}

static uint64_t mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec;
}

void fl_heal_unheal_quiet(uint32_t seconds)
{
	uint64_t now = mono_s(), *quiet = NULL;
	size_t n = 0, cap = 0;
	sigset_t old;

	if (fl_patch_lock(&old, NULL) != 0)
		return;
	/* A relocation is quiet when all its sites are: one unheal undoes it for all. */
	for (struct relocation *rel = relocations; rel; rel = rel->next)
		rel->loud = false;
	for (size_t b = 0; b < num_buckets; b++)
		for (struct healed *h = buckets[b]; h; h = h->next) {
			struct fl_shm_heal *slot = fl_counters_heal(h->counter);
			uint64_t f = slot ? atomic_load_explicit(&slot->failures,
								 memory_order_relaxed) : 0;

			if (!h->quiet_since || f != h->last_failures) {
				h->last_failures = f;
				h->quiet_since = now;
				if (h->rel)
					h->rel->loud = true;
				continue;
			}
			if (now - h->quiet_since < seconds) {
				if (h->rel)
					h->rel->loud = true;
				continue;
			}
			if (n == cap) {
				uint64_t *v = realloc(quiet, (cap ? 2 * cap : 16) * sizeof(*v));

				if (!v)
					break;
				quiet = v;
				cap = cap ? 2 * cap : 16;
			}
			quiet[n++] = h->plan.site.addr;
		}
	/* The sites of a relocation that is not quiet as a whole stay healed. */
	for (size_t i = 0, k = 0; i < n; i++) {
		struct healed *h = healed_find(quiet[i]);

		if (!h || !h->rel || !h->rel->loud)
			quiet[k++] = quiet[i];
		if (i + 1 == n)
			n = k;
	}
	fl_patch_unlock(&old);
	/* Unhealed one by one: each tells the callback. */
	for (size_t i = 0; i < n; i++)
		fl_site_unheal((const void *)(uintptr_t)quiet[i], NULL);
	free(quiet);
}
