/* SPDX-License-Identifier: MIT */
/*
 * faultlined's registry of processes: see procs.h.
 *
 * A process's counts are final when it is gone, not when its connection
 * is: the region stays mapped after a disconnection while the process
 * lives (it may register again: the same entry, fld_proc_match), and its
 * counts (and its sites' healing) are frozen from the region once it is
 * gone (fld_proc_final), with the modules of its site table the daemon
 * was never told of.  The
 * slots of an unregistered module keep its final count (RETIRED) until
 * the daemon has saved it (SAVED): docs/protocol.md, "Unregistered
 * modules".
 *
 * What a site held when its counts were frozen is kept for the sites where
 * it is not all zero, the few that ever failed or healed, in an array of
 * its own in site order (fld_site_frozen): not in every site of a
 * million-site module.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "format/smindex.h"

#include "dlog.h"
#include "procs.h"

/* include/linux/sched.h: set in do_exit() before the process's files are closed. */
#define PF_EXITING 0x00000004u

struct fld_proc **fld_procs;
size_t fld_num_procs;
static uint64_t next_serial = 1;
static const struct fld_proc_observer *observers[FLD_PROC_OBSERVERS];
static size_t num_observers;

void fld_proc_observe(const struct fld_proc_observer *o)
{
	if (num_observers == FLD_PROC_OBSERVERS)
		abort();
	observers[num_observers++] = o;
}

static void tell_gone(struct fld_proc *p)
{
	for (size_t i = 0; i < num_observers; i++)
		if (observers[i]->gone)
			observers[i]->gone(p);
}

static void tell_module_gone(struct fld_module *m)
{
	for (size_t i = 0; i < num_observers; i++)
		if (observers[i]->module_gone)
			observers[i]->module_gone(m);
}

static void tell_let_go(const struct fld_proc *p)
{
	for (size_t i = 0; i < num_observers; i++)
		if (observers[i]->let_go)
			observers[i]->let_go(p);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* What procs.h says of it: a million-site module's sites are 32 MB. */
_Static_assert(sizeof(struct fld_site) == 32, "struct fld_site grew");

struct fld_frozen_site {
	uint32_t site;		/* its index in the module's sites */
	struct fld_frozen v;	/* not all zero */
};

static bool frozen_zero(const struct fld_frozen *v)
{
	return !v->faults && !v->populations && !v->heal.failures && !v->heal.state &&
	       !v->heal.tactic && !v->heal.why && !v->heal.healed_at;
}

/* The first of m's frozen entries whose site is i or above (num_frozen: none). */
static uint32_t frozen_at(const struct fld_module *m, uint32_t i)
{
	return (uint32_t)FLD_LOWER_BOUND(m->frozen, m->num_frozen, site, i);
}

void fld_site_frozen(const struct fld_module *m, uint32_t i, struct fld_frozen *out)
{
	uint32_t at = frozen_at(m, i);

	if (at < m->num_frozen && m->frozen[at].site == i)
		memcpy(out, &m->frozen[at].v, sizeof(*out));
	else
		memset(out, 0, sizeof(*out));
}

/* Room for one more frozen entry in *store (cap entries).  Returns false when out of memory. */
static bool frozen_room(struct fld_frozen_site **store, uint32_t n, uint32_t *cap)
{
	struct fld_frozen_site *grown;
	uint32_t want;

	if (n < *cap)
		return true;
	want = *cap ? (*cap > UINT32_MAX / 2 ? UINT32_MAX : *cap * 2) : 16;
	if (n >= want)
		return false;
	grown = realloc(*store, (size_t)want * sizeof(*grown));
	if (!grown)
		return false;
	*store = grown;
	*cap = want;
	return true;
}

int fld_site_set_frozen(struct fld_module *m, uint32_t i, const struct fld_frozen *v)
{
	uint32_t at = m->num_frozen && m->frozen[m->num_frozen - 1].site < i ? m->num_frozen :
		      frozen_at(m, i);
	bool had = at < m->num_frozen && m->frozen[at].site == i;

	if (frozen_zero(v)) {
		if (had) {
			memmove(&m->frozen[at], &m->frozen[at + 1],
				(m->num_frozen - at - 1) * sizeof(*m->frozen));
			m->num_frozen--;
		}
		return 0;
	}
	if (!had) {
		if (!frozen_room(&m->frozen, m->num_frozen, &m->frozen_cap))
			return -ENOMEM;
		memmove(&m->frozen[at + 1], &m->frozen[at],
			(m->num_frozen - at) * sizeof(*m->frozen));
		m->num_frozen++;
		m->frozen[at].site = i;
	}
	memcpy(&m->frozen[at].v, v, sizeof(*v));
	return 0;
}

/* Gives back the room m's frozen store has beyond its entries. */
static void frozen_fit(struct fld_module *m)
{
	struct fld_frozen_site *fit;

	if (m->frozen_cap == m->num_frozen)
		return;
	if (!m->num_frozen) {
		free(m->frozen);
		m->frozen = NULL;
		m->frozen_cap = 0;
		return;
	}
	/* A smaller block or none: the one it has stays. */
	fit = realloc(m->frozen, (size_t)m->num_frozen * sizeof(*fit));
	if (fit) {
		m->frozen = fit;
		m->frozen_cap = m->num_frozen;
	}
}

void fld_module_fit(struct fld_module *m)
{
	frozen_fit(m);
	if (m->names && m->names_cap > m->names_len) {
		char *fit = realloc(m->names, m->names_len ? m->names_len : 1);

		if (fit) {
			m->names = fit;
			m->names_cap = m->names_len ? m->names_len : 1;
		}
	}
}

/* Site s of m's frozen values (fld_site_frozen), s being one of m->sites. */
static void site_frozen(const struct fld_module *m, const struct fld_site *s,
			struct fld_frozen *out)
{
	fld_site_frozen(m, (uint32_t)(s - m->sites), out);
}

uint64_t fld_site_faults(const struct fld_proc *p, const struct fld_module *m,
			 const struct fld_site *s)
{
	const _Atomic uint64_t *counters;

	if (m->removed || !p->region) {
		struct fld_frozen f;

		site_frozen(m, s, &f);
		return f.faults;
	}
	counters = (const _Atomic uint64_t *)((const char *)p->region + p->layout.counters_offset);
	/*
	 * Relaxed: the handler's increments are relaxed too; a count is a
	 * statistic, read once per query.
	 */
	return atomic_load_explicit(&counters[s->slot], memory_order_relaxed);
}

/* Heal slot i of p's region, its values kept in range (fld_site_heal). */
static void heal_read(const struct fld_proc *p, uint32_t i, struct fl_shm_heal *out)
{
	const struct fl_shm_heal *slot;
	uint8_t state;

	slot = (const struct fl_shm_heal *)((const char *)p->region + p->layout.heal_offset) + i;
	/* Acquire: pairs with the process's release of state, after the other fields. */
	state = atomic_load_explicit(&slot->state, memory_order_acquire);
	memset(out, 0, sizeof(*out));
	/*
	 * The process writes the slot: what it says is kept in range, so that
	 * a record never holds what the reader rejects (state.c).
	 */
	out->state = state <= FL_SHM_HEAL_UNHEALABLE ? state : FL_SHM_HEAL_IMPLICIT;
	out->tactic = fl_shm_tactic_name(slot->tactic) ? slot->tactic : 0;
	out->why = slot->why <= FL_SHM_WHY_LAST ? slot->why : FL_SHM_WHY_OTHER;
	out->healed_at = slot->healed_at;
	/* Relaxed: the stub's lock incq is a count, as the handler's. */
	out->failures = atomic_load_explicit(&slot->failures, memory_order_relaxed);
}

void fld_site_heal(const struct fld_proc *p, const struct fld_module *m,
		   const struct fld_site *s, struct fl_shm_heal *out)
{
	if (m->removed || !p->region) {
		struct fld_frozen f;

		site_frozen(m, s, &f);
		memcpy(out, &f.heal, sizeof(*out));
	} else {
		heal_read(p, s->slot, out);
	}
}

void fld_slot_read(const struct fld_proc *p, uint32_t slot, struct fld_slot_now *out)
{
	const _Atomic uint64_t *counters =
		(const _Atomic uint64_t *)((const char *)p->region + p->layout.counters_offset);
	const struct fl_shm_site *table =
		(const struct fl_shm_site *)((const char *)p->region + p->layout.sites_offset);

	/* Relaxed, as the handler's increments (fld_site_faults). */
	out->faults = atomic_load_explicit(&counters[slot], memory_order_relaxed);
	out->populations = atomic_load_explicit(&table[slot].populations, memory_order_relaxed);
	heal_read(p, slot, &out->heal);
}

const char *fld_site_function(const struct fld_module *m, const struct fld_site *s)
{
	return s->function ? m->names + s->function - 1 : NULL;
}

int fld_site_name(struct fld_module *m, uint32_t i, const char *name, size_t len)
{
	const struct fld_site *before = i ? &m->sites[i - 1] : NULL;
	size_t need;

	if (before && before->function && !strncmp(m->names + before->function - 1, name, len) &&
	    m->names[before->function - 1 + len] == 0) {
		m->sites[i].function = before->function;
		return 0;
	}
	/* A name replaced stays in names: bounded by the process's limit on name bytes. */
	need = m->names_len + len + 1;
	if (need >= UINT32_MAX)
		return -ENOMEM;
	if (need > m->names_cap) {
		size_t cap = m->names_cap ? m->names_cap : 4096;
		char *grown;

		while (cap < need)
			cap *= 2;
		grown = realloc(m->names, cap);
		if (!grown)
			return -ENOMEM;
		m->names = grown;
		m->names_cap = cap;
	}
	memcpy(m->names + m->names_len, name, len);
	m->names[m->names_len + len] = 0;
	m->sites[i].function = (uint32_t)m->names_len + 1;
	m->names_len = need;
	return 0;
}

uint64_t fld_site_populations(const struct fld_proc *p, const struct fld_module *m,
			      const struct fld_site *s)
{
	const struct fl_shm_site *table;

	if (m->removed || !p->region) {
		struct fld_frozen f;

		site_frozen(m, s, &f);
		return f.populations;
	}
	table = (const struct fl_shm_site *)((const char *)p->region + p->layout.sites_offset);
	/* Relaxed, as the handler's increments. */
	return atomic_load_explicit(&table[s->slot].populations, memory_order_relaxed);
}

struct fld_proc *fld_proc_add(pid_t pid, uid_t uid, const char *comm)
{
	struct fld_proc *p = calloc(1, sizeof(*p));
	struct fld_proc **grown;

	if (!p)
		return NULL;
	grown = realloc(fld_procs, (fld_num_procs + 1) * sizeof(*fld_procs));
	if (!grown) {
		free(p);
		return NULL;
	}
	fld_procs = grown;
	p->serial = next_serial++;
	p->pid = pid;
	p->uid = uid;
	memcpy(p->comm, comm, sizeof(p->comm));
	p->comm[sizeof(p->comm) - 1] = 0;
	p->registered_ms = now_ms();
	fld_procs[fld_num_procs++] = p;
	return p;
}

void fld_proc_serial_above(uint64_t serial)
{
	if (next_serial <= serial)
		next_serial = serial + 1;
}

struct fld_proc *fld_proc_by_serial(uint64_t serial)
{
	/*
	 * Jobs walk the processes in order (a query, the records): the one
	 * after the last found is looked at first, and a walk over every
	 * process costs each lookup one step instead of a search.
	 */
	static size_t next;

	if (next < fld_num_procs && fld_procs[next]->serial == serial)
		return fld_procs[next++];
	for (size_t i = 0; i < fld_num_procs; i++) {
		if (fld_procs[i]->serial == serial) {
			next = i + 1;
			return fld_procs[i];
		}
	}
	return NULL;
}

struct fld_proc *fld_proc_find_live(pid_t pid)
{
	for (size_t i = 0; i < fld_num_procs; i++)
		if (fld_procs[i]->pid == pid && !fld_procs[i]->exited)
			return fld_procs[i];
	return NULL;
}

struct fld_module *fld_proc_module(struct fld_proc *p, uint32_t id)
{
	for (size_t i = 0; i < p->num_mods; i++)
		if (p->mods[i]->id == id && !p->mods[i]->removed)
			return p->mods[i];
	return NULL;
}

struct fld_module *fld_proc_module_any(struct fld_proc *p, uint32_t id)
{
	for (size_t i = p->num_mods; i-- > 0;)
		if (p->mods[i]->id == id)
			return p->mods[i];
	return NULL;
}

struct fld_proc *fld_proc_match(pid_t pid, uid_t uid, uint64_t start_time, uint64_t ino)
{
	for (size_t i = fld_num_procs; i-- > 0;) {
		const struct fld_proc *p = fld_procs[i];

		if (p->pid != pid || p->uid != uid)
			continue;
		if (p->region_ino ? p->region_ino == ino :
		    (start_time && p->start_time == start_time) ||
		    (p->restored_live && !p->start_time))
			return fld_procs[i];
	}
	return NULL;
}

static struct fl_shm_site *site_table(const struct fld_proc *p)
{
	return (struct fl_shm_site *)((char *)p->region + p->layout.sites_offset);
}

/*
 * The state (FL_SHM_SITE_*) of site s's slot in p's region when the slot
 * still describes s of module m, else -1.  The process writes the table:
 * each field is read once and compared, nothing trusted.
 */
static int slot_state(const struct fld_proc *p, const struct fld_module *m,
		      const struct fld_site *s)
{
	struct fl_shm_site *e;
	uint64_t st;

	if (!p->region || s->slot >= p->layout.capacity)
		return -1;
	e = &site_table(p)[s->slot];
	/*
	 * Acquire: pairs with the process's release store of RETIRED (after
	 * a grace period); a count read after seeing it is final.
	 */
	st = atomic_load_explicit(&e->state, memory_order_acquire);
	if (e->module != m->id || e->faulting_pc != s->faulting_pc || e->kind != s->kind ||
	    st > FL_SHM_SITE_SAVED)
		return -1;
	return (int)st;
}

void fld_module_freeze(struct fld_proc *p, struct fld_module *m)
{
	struct fld_frozen_site *store = NULL;
	uint32_t n = 0, cap = 0, lost = 0;

	if (m->removed)
		return;
	/*
	 * Into a new store: the counts are read from the region (or, without
	 * one, from the store the module has) until the module is removed.
	 */
	for (uint32_t i = 0; i < m->num_sites; i++) {
		struct fld_frozen f;

		/* slot_state first: its acquire orders the counts' reads after it. */
		(void)slot_state(p, m, &m->sites[i]);
		f.faults = fld_site_faults(p, m, &m->sites[i]);
		f.populations = fld_site_populations(p, m, &m->sites[i]);
		fld_site_heal(p, m, &m->sites[i], &f.heal);
		if (frozen_zero(&f))
			continue;
		if (!frozen_room(&store, n, &cap)) {
			lost++;
			continue;
		}
		store[n].site = i;
		memcpy(&store[n++].v, &f, sizeof(f));
	}
	if (lost)
		fld_warn("pid %d: module %u: out of memory: %u of its sites' counts and healing "
			 "are lost (read as 0)", (int)p->pid, m->id, lost);
	free(m->frozen);
	m->frozen = store;
	m->num_frozen = n;
	m->frozen_cap = cap;
	frozen_fit(m);
	m->removed = true;
	/*
	 * Its slots are marked SAVED once a record written from now on is on
	 * disk (fld_proc_saved): the record's generation moves on, so that
	 * one being written already does not count.
	 */
	m->ack = p->region && m->num_sites;
	p->rec.gen++;
}

void fld_proc_attach(struct fld_proc *p, void *region, const struct fl_shm_layout *l)
{
	if (p->region && p->region != region) {
		for (size_t i = 0; i < p->num_mods; i++)
			fld_module_freeze(p, p->mods[i]);
		munmap(p->region, p->layout.size);
	}
	p->region = region;
	p->layout = *l;
	/* Its counts come from the region again: its record is not final. */
	p->rec.gen++;
	for (size_t i = 0; i < p->num_mods;) {
		struct fld_module *m = p->mods[i];
		bool all = m->num_sites > 0, retired = false;

		/*
		 * Restored from a state file without module ids: which of the
		 * region's modules it was cannot be told, and the process sends
		 * its live ones again (counted from its start): left out, not
		 * counted twice.
		 */
		if (!m->id) {
			p->num_sites -= m->num_sites;
			fld_module_free(m);
			memmove(&p->mods[i], &p->mods[i + 1], (p->num_mods - i - 1) * sizeof(*p->mods));
			p->num_mods--;
			continue;
		}
		i++;

		for (uint32_t k = 0; k < m->num_sites && all; k++) {
			int st = slot_state(p, m, &m->sites[k]);

			all = st == FL_SHM_SITE_LIVE || st == FL_SHM_SITE_RETIRED;
			retired |= st == FL_SHM_SITE_RETIRED;
		}
		m->ack = false;
		if (!all) {
			/* Gone from the region: what it had when last seen stays. */
			m->removed = true;
		} else if (retired) {
			/* Unregistered, its final counts still there (and not saved). */
			m->removed = false;
			fld_module_freeze(p, m);
		}
	}
}

/* Grows m's sites by one; returns it, or NULL. */
static struct fld_site *site_append(struct fld_module *m)
{
	struct fld_site *grown;

	if ((m->num_sites & (m->num_sites - 1)) == 0) {
		grown = realloc(m->sites, (m->num_sites ? m->num_sites * 2 : 1) * sizeof(*grown));
		if (!grown)
			return NULL;
		m->sites = grown;
	}
	memset(&m->sites[m->num_sites], 0, sizeof(*m->sites));
	return &m->sites[m->num_sites++];
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* p's module ids, sorted, into *known (freed by the caller).  Returns their count, or -1. */
static ssize_t known_ids(const struct fld_proc *p, uint32_t **known)
{
	*known = malloc((p->num_mods ? p->num_mods : 1) * sizeof(**known));
	if (!*known)
		return -1;
	for (size_t i = 0; i < p->num_mods; i++)
		(*known)[i] = p->mods[i]->id;
	qsort(*known, p->num_mods, sizeof(**known), cmp_u32);
	return (ssize_t)p->num_mods;
}

/*
 * Slot of p's site table, copied once into *copy (the process writes it).
 * Returns whether it describes a site of a module not in known[0 .. n).
 */
static bool untold_slot(const struct fld_proc *p, uint32_t slot, const uint32_t *known, size_t n,
			struct fl_shm_site *copy)
{
	struct fl_shm_site *e = &site_table(p)[slot];
	uint64_t st = atomic_load_explicit(&e->state, memory_order_acquire);

	*copy = (struct fl_shm_site){ .faulting_pc = e->faulting_pc, .handler_pc = e->handler_pc,
				      .module = e->module, .kind = e->kind };
	return copy->kind >= 1 && copy->kind <= 3 && copy->module && st <= FL_SHM_SITE_RETIRED &&
	       !bsearch(&copy->module, known, n, sizeof(*known), cmp_u32);
}

/* The slots of p's site table that may describe sites: below sites_high, within its capacity. */
static uint32_t table_high(const struct fld_proc *p)
{
	const struct fl_shm_header *h = p->region;
	/* Acquire: pairs with the process's release store after describing the slots. */
	uint32_t high = atomic_load_explicit(&h->sites_high, memory_order_acquire);

	return high > p->layout.capacity ? (uint32_t)p->layout.capacity : high;
}

uint64_t fld_proc_untold(const struct fld_proc *p, size_t max_sites)
{
	uint32_t *known, high;
	uint64_t n = 0;
	ssize_t nknown;

	if (!p->region || p->num_sites >= max_sites || (nknown = known_ids(p, &known)) < 0)
		return 0;
	high = table_high(p);
	for (uint32_t slot = 0; slot < high && p->num_sites + n < max_sites; slot++) {
		struct fl_shm_site copy;

		n += untold_slot(p, slot, known, (size_t)nknown, &copy);
	}
	free(known);
	return n;
}

void fld_proc_scan(struct fld_proc *p, size_t max_modules, size_t max_sites)
{
	uint32_t *known, high;
	struct fld_module *cur = NULL;
	ssize_t nknown;

	if (!p->region || (nknown = known_ids(p, &known)) < 0)
		return;
	high = table_high(p);
	for (uint32_t slot = 0; slot < high; slot++) {
		struct fl_shm_site copy;
		struct fld_site *site;

		if (!untold_slot(p, slot, known, (size_t)nknown, &copy)) {
			cur = NULL;
			continue;
		}
		if (p->num_sites >= max_sites)
			break;
		if (!cur || cur->id != copy.module) {
			struct fld_module **grown;

			if (p->num_mods >= max_modules)
				break;
			grown = realloc(p->mods, (p->num_mods + 1) * sizeof(*p->mods));
			if (!grown)
				break;
			p->mods = grown;
			cur = calloc(1, sizeof(*cur));
			if (!cur || !(cur->name = strdup("(unnamed)"))) {
				free(cur);
				break;
			}
			cur->id = copy.module;
			cur->anonymous = true;
			cur->first_counter = slot;
			p->mods[p->num_mods++] = cur;
		}
		site = site_append(cur);
		if (!site)
			break;
		*site = (struct fld_site){ .faulting_pc = copy.faulting_pc,
					   .handler_pc = copy.handler_pc, .kind = copy.kind,
					   .slot = slot };
		p->num_sites++;
		p->rec.gen++;	/* a site its record does not have */
	}
	free(known);
	/* The modules made here are complete: site_append's room beyond them goes back. */
	for (size_t i = (size_t)nknown; i < p->num_mods; i++) {
		struct fld_module *m = p->mods[i];
		struct fld_site *fit = realloc(m->sites, (m->num_sites ? m->num_sites : 1) *
						       sizeof(*fit));

		if (fit)
			m->sites = fit;
	}
}

void fld_proc_final(struct fld_proc *p, size_t max_modules, size_t max_sites)
{
	if (!p->region)
		return;
	fld_proc_scan(p, max_modules, max_sites);
	for (size_t i = 0; i < p->num_mods; i++) {
		fld_module_freeze(p, p->mods[i]);
		/* Nobody reuses the slots of a process that is gone. */
		p->mods[i]->ack = false;
	}
	munmap(p->region, p->layout.size);
	p->region = NULL;
	p->rec.gen++;	/* its record is written again, with the final counts */
}

/*
 * Reads /proc/PID[/task/TID]/stat: *state, *flags, *start (any may be
 * NULL).  Returns 0, or -1 when it cannot be read.
 */
static int read_stat(const char *path, char *state, unsigned *flags, uint64_t *start)
{
	char buf[1024], *p, st;
	unsigned f;
	unsigned long long t;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	/* After the comm, which may hold anything: the last ')'. */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %c %*d %*d %*d %*d %*d %u %*u %*u %*u %*u %*u %*u %*d %*d"
			 " %*d %*d %*d %*d %llu", &st, &f, &t) != 3)
		return -1;
	if (state)
		*state = st;
	if (flags)
		*flags = f;
	if (start)
		*start = t;
	return 0;
}

uint64_t fld_proc_start_time(pid_t pid)
{
	char path[64];
	uint64_t t;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	return read_stat(path, NULL, NULL, &t) == 0 ? t : 0;
}

bool fld_proc_alive(const struct fld_proc *p)
{
	char path[300];
	struct dirent *e;
	bool alive = false;
	DIR *d;

	if (!p->start_time || fld_proc_start_time(p->pid) != p->start_time)
		return false;
	/*
	 * Its connection closes at exit once every thread has PF_EXITING set;
	 * a thread that has not is still running (the main thread may be a
	 * zombie while others run).
	 */
	snprintf(path, sizeof(path), "/proc/%d/task", (int)p->pid);
	d = opendir(path);
	if (!d)
		return false;
	while (!alive && (e = readdir(d))) {
		char state;
		unsigned flags;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%.32s/stat", (int)p->pid, e->d_name);
		alive = read_stat(path, &state, &flags, NULL) == 0 && state != 'Z' &&
			state != 'X' && !(flags & PF_EXITING);
	}
	closedir(d);
	return alive;
}

/* Marks m's RETIRED slots SAVED; returns false when some are not RETIRED yet. */
static bool ack_slots(struct fld_proc *p, struct fld_module *m)
{
	bool done = true;

	for (uint32_t i = 0; i < m->num_sites; i++) {
		int st = slot_state(p, m, &m->sites[i]);

		if (st == FL_SHM_SITE_RETIRED) {
			uint32_t want = FL_SHM_SITE_RETIRED;

			/*
			 * Relaxed: the process reads SAVED and clears the slot;
			 * nothing else of ours is read with it.
			 */
			atomic_compare_exchange_strong_explicit(&site_table(p)[m->sites[i].slot].state,
				&want, FL_SHM_SITE_SAVED, memory_order_relaxed, memory_order_relaxed);
		} else if (st == FL_SHM_SITE_LIVE) {
			done = false;	/* MODULE_REMOVE read before RETIRED was: next time */
		}
	}
	return done;
}

void fld_proc_saved(struct fld_proc *p)
{
	for (size_t k = 0; k < p->num_mods; k++)
		if (p->mods[k]->ack)
			p->mods[k]->ack = p->region && !ack_slots(p, p->mods[k]);
	if (p->kept && p->exited && !p->region) {
		tell_let_go(p);
		p->kept = false;
	}
}

void fld_procs_saved(void)
{
	for (size_t i = 0; i < fld_num_procs; i++)
		fld_proc_saved(fld_procs[i]);
}

void fld_module_free(struct fld_module *m)
{
	if (!m)
		return;
	tell_module_gone(m);
	free(m->sites);
	free(m->names);
	free(m->frozen);
	free(m->name);
	fl_smindex_free(m->stackmaps);
	if (m->sections)
		munmap(m->sections, m->sections_size);
	free(m);
}

static void proc_free(struct fld_proc *p)
{
	tell_gone(p);
	for (size_t i = 0; i < p->num_mods; i++)
		fld_module_free(p->mods[i]);
	free(p->mods);
	free(p->gone);
	if (p->kept)
		tell_let_go(p);
	if (p->region)
		munmap(p->region, p->layout.size);
	free(p);
}

/* Whether a exited before b (restored ones, exit_seq 0, before any other). */
static bool exited_before(const struct fld_proc *a, const struct fld_proc *b)
{
	if (a->exit_seq != b->exit_seq)
		return a->exit_seq < b->exit_seq;
	return a->exited_ms < b->exited_ms;
}

void fld_proc_exit(struct fld_proc *p, size_t max_exited)
{
	static uint64_t exits;
	size_t exited = 0;

	/* The region stays: the process may live on (fld_proc_final). */
	p->client = NULL;
	/* Its modules and their names are all in (a process that sent no SYNC too). */
	for (size_t i = 0; i < p->num_mods; i++)
		fld_module_fit(p->mods[i]);
	p->exited = true;
	p->exited_ms = now_ms();
	p->exit_seq = ++exits;

	/* The bound is per user: one user's exits never push out another's. */
	for (size_t i = 0; i < fld_num_procs; i++)
		exited += fld_procs[i]->exited && fld_procs[i]->uid == p->uid;
	/*
	 * Drop the one that exited first, while too many are kept.  The list
	 * is in registration order: a process that registered early and
	 * exited late is not the oldest exited.
	 */
	while (exited > max_exited && fld_proc_drop_oldest_exited(p->uid, NULL))
		exited--;
}

bool fld_proc_drop_oldest_exited(uid_t uid, const struct fld_proc *keep)
{
	size_t oldest = fld_num_procs;

	for (size_t i = 0; i < fld_num_procs; i++)
		if (fld_procs[i]->exited && fld_procs[i]->uid == uid && fld_procs[i] != keep &&
		    (oldest == fld_num_procs || exited_before(fld_procs[i], fld_procs[oldest])))
			oldest = i;
	if (oldest == fld_num_procs)
		return false;
	proc_free(fld_procs[oldest]);
	memmove(&fld_procs[oldest], &fld_procs[oldest + 1],
		(fld_num_procs - oldest - 1) * sizeof(*fld_procs));
	fld_num_procs--;
	return true;
}

void fld_proc_remove(struct fld_proc *p)
{
	for (size_t i = 0; i < fld_num_procs; i++) {
		if (fld_procs[i] == p) {
			memmove(&fld_procs[i], &fld_procs[i + 1],
				(fld_num_procs - i - 1) * sizeof(*fld_procs));
			fld_num_procs--;
			proc_free(p);
			return;
		}
	}
}

bool fld_proc_visible(const struct fld_proc *p, uid_t uid)
{
	return uid == 0 || uid == p->uid;
}
