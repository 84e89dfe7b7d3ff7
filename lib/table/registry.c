/* SPDX-License-Identifier: MIT */
/*
 * The registry: every registered module (loaded ELF modules found through
 * the discovery layer, JIT code registered by the runtime) and region, and
 * the immutable snapshots the handler reads, built from it.
 *
 * A change is: take the registry lock, change the lists, build a whole new
 * snapshot, publish it with one atomic store, wait for a grace period, then
 * free what only the old snapshot referred to (the snapshot, the sites of
 * removed modules, their counter blocks).  Lookups in signal context never
 * wait for any of it.
 *
 * Locks, in order: refresh_lock (one rescan of the loaded modules at a
 * time; held across dl_iterate_phdr, which takes the loader's lock), then
 * lock (the lists).  lock is never held while calling into the loader, so
 * a library constructor that registers JIT code cannot deadlock with a
 * rescan.
 */
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <faultline/discovery.h>
#include <faultline/dispatch.h>

#include "core/fmt.h"
#include "core/log.h"
#include "core/opts.h"
#include "table/table.h"

struct module {
	int id;
	char *name;
	/* Loaded ELF module: its identity in dl_iterate_phdr. */
	bool elf;
	uint64_t bias;
	uint64_t first_load;
	bool seen;
	/* [start, end) covers the sites (ELF) or the code (JIT). */
	uint64_t start;
	uint64_t end;
	/* The code, for the daemon: executable segments (ELF) or [start, end). */
	uint64_t code_lo;
	uint64_t code_hi;
	struct fl_site_entry *sites;
	uint32_t num_sites;
	uint32_t counter_base;
	/*
	 * Per observer, its data from module_prepare until module_added
	 * takes it (module_discard frees what is left).
	 */
	void *observed[FL_TABLE_MAX_OBSERVERS];
};

static pthread_mutex_t refresh_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t init_flags;
static struct module **mods;
static size_t num_mods;
static struct fl_region **regions;
static size_t num_regions;
static int next_id = 1;
static bool replaced_reported;
/* Appended to under lock; read without it (module_prepare) up to the count. */
static const struct fl_table_observer *observers[FL_TABLE_MAX_OBSERVERS];
static _Atomic size_t num_observers;

bool fl_table_ready(void)
{
	/* Pairs with the release store in fl_table_init. */
	return atomic_load_explicit(&fl_dispatch.ready, memory_order_acquire) != 0;
}

int fl_table_observe(const struct fl_table_observer *o)
{
	size_t n;
	int err = 0;

	pthread_mutex_lock(&lock);
	n = atomic_load_explicit(&num_observers, memory_order_relaxed);
	if (n == FL_TABLE_MAX_OBSERVERS) {
		err = -ENOSPC;
	} else {
		observers[n] = o;
		atomic_store_explicit(&num_observers, n + 1, memory_order_release);
	}
	pthread_mutex_unlock(&lock);
	return err;
}

static size_t observers_count(void)
{
	return atomic_load_explicit(&num_observers, memory_order_acquire);
}

/* The observers' data for m, a module with sites.  Without lock. */
static void module_prepare(struct module *m, const struct fl_module *elf,
			   const struct fl_module_reg *jit)
{
	struct fl_table_source src = {
		.name = m->name, .sites = m->sites, .num_sites = m->num_sites,
		.elf = elf, .jit = jit,
	};
	size_t n = observers_count();

	if (!m->num_sites)
		return;
	for (size_t i = 0; i < n; i++)
		if (observers[i]->module_prepare)
			m->observed[i] = observers[i]->module_prepare(&src);
}

static void module_free(struct module *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < FL_TABLE_MAX_OBSERVERS; i++)
		if (m->observed[i] && observers[i]->module_discard)
			observers[i]->module_discard(m->observed[i]);
	free(m->name);
	free(m->sites);
	free(m);
}

static int cmp_snap_module(const void *a, const void *b)
{
	const struct fl_snap_module *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static int cmp_snap_region(const void *a, const void *b)
{
	const struct fl_snap_region *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static int cmp_site(const void *a, const void *b)
{
	const struct fl_site_entry *x = a, *y = b;

	return x->faulting_pc < y->faulting_pc ? -1 : x->faulting_pc > y->faulting_pc;
}

/* Builds a snapshot of the lists, in one allocation.  Under lock. */
static struct fl_snapshot *snapshot_build(void)
{
	size_t n = 0, size;
	struct fl_snapshot *s;
	struct fl_snap_module *sm;
	struct fl_snap_region *sr;

	for (size_t i = 0; i < num_mods; i++)
		n += mods[i]->num_sites > 0;
	size = sizeof(*s) + n * sizeof(*sm) + num_regions * sizeof(*sr);
	s = calloc(1, size);
	if (!s)
		return NULL;
	sm = (struct fl_snap_module *)(s + 1);
	sr = (struct fl_snap_region *)(sm + n);

	n = 0;
	for (size_t i = 0; i < num_mods; i++) {
		const struct module *m = mods[i];

		if (m->num_sites == 0)
			continue;
		sm[n++] = (struct fl_snap_module){
			.start = m->start, .end = m->end, .sites = m->sites,
			.num_sites = m->num_sites, .id = m->id,
		};
	}
	qsort(sm, n, sizeof(*sm), cmp_snap_module);
	for (size_t i = 0; i < num_regions; i++)
		sr[i] = (struct fl_snap_region){
			.start = regions[i]->start,
			.end = regions[i]->start + regions[i]->size,
			.region = regions[i],
		};
	qsort(sr, num_regions, sizeof(*sr), cmp_snap_region);
	s->num_modules = (uint32_t)n;
	s->num_regions = (uint32_t)num_regions;
	s->modules = sm;
	s->regions = sr;
	return s;
}

/*
 * Publishes the lists as they are now and frees the removed modules after
 * the grace period.  Under lock.  Returns 0 or -ENOMEM (then nothing
 * changed for the handler; removed modules are still freed only if the
 * publication happened, so on failure the caller must put them back).
 */
static int publish(struct module **removed, size_t num_removed)
{
	struct fl_snapshot *s = snapshot_build();
	const struct fl_snapshot *old;

	if (!s)
		return -ENOMEM;
	old = fl_snapshot_publish(s);
	fl_snapshot_synchronize();
	free((void *)old);
	for (size_t i = 0; i < num_removed; i++) {
		if (removed[i]->num_sites) {
			/*
			 * Kept, final counts and all, until the daemon has saved
			 * them (counters.c); marked so before MODULE_REMOVE can go.
			 */
			fl_counters_retire(removed[i]->counter_base, removed[i]->num_sites);
			for (size_t k = 0; k < observers_count(); k++)
				if (observers[k]->module_removed)
					observers[k]->module_removed(removed[i]->id);
		}
		module_free(removed[i]);
	}
	return 0;
}

static bool overlaps(uint64_t start, uint64_t end)
{
	for (size_t i = 0; i < num_mods; i++)
		if (mods[i]->num_sites && start < mods[i]->end && mods[i]->start < end)
			return true;
	return false;
}

/* Adds m to the lists, with counters, and publishes.  Under lock. */
static int module_add(struct module *m)
{
	struct module **grown;
	int64_t base = 0;
	int err;

	if (m->num_sites) {
		if (overlaps(m->start, m->end))
			return -EEXIST;
		base = fl_counters_alloc(m->num_sites);
		if (base < 0)
			return (int)base;
		m->counter_base = (uint32_t)base;
		for (uint32_t i = 0; i < m->num_sites; i++)
			m->sites[i].counter = m->counter_base + i;
	}
	grown = realloc(mods, (num_mods + 1) * sizeof(*mods));
	if (!grown) {
		err = -ENOMEM;
		goto fail;
	}
	mods = grown;
	m->id = next_id++;
	mods[num_mods++] = m;
	if (m->num_sites == 0)
		return m->id;	/* nothing for the handler */
	fl_counters_describe(m->counter_base, m->num_sites, (uint32_t)m->id, m->sites);
	err = publish(NULL, 0);
	if (err == 0) {
		struct fl_table_module tm = {
			.id = m->id, .name = m->name,
			.code_start = m->code_lo, .code_size = m->code_hi - m->code_lo,
			.first_counter = m->counter_base, .num_sites = m->num_sites,
			.sites = m->sites,
		};

		for (size_t i = 0; i < observers_count(); i++) {
			void *data = m->observed[i];

			/* The observer owns its data now, whatever it does with it. */
			m->observed[i] = NULL;
			if (observers[i]->module_added)
				observers[i]->module_added(&tm, data);
			else if (data && observers[i]->module_discard)
				observers[i]->module_discard(data);
		}
		return m->id;
	}
	fl_counters_describe(m->counter_base, m->num_sites, 0, NULL);
	num_mods--;
fail:
	if (m->num_sites)
		fl_counters_free(m->counter_base, m->num_sites);
	return err;
}

static void report_replaced(void)
{
	if (replaced_reported)
		return;
	if (!fl_dispatch_installed(SIGSEGV) || !fl_dispatch_installed(SIGBUS)) {
		replaced_reported = true;
		fl_log(FL_LOG_ERROR, "the SIGSEGV or SIGBUS handler is no longer faultline's: "
		       "something installed another with a raw rt_sigaction; "
		       "implicit checks that fail will crash");
	}
}

/* ------------------------------------------------------------------------
 * Sites from a fault map
 */

struct sites {
	struct fl_site_entry *v;
	size_t n;
	size_t cap;
};

static int sites_push(struct sites *s, uint64_t faulting, uint64_t handler, uint32_t kind)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		struct fl_site_entry *v = realloc(s->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = (struct fl_site_entry){ faulting, handler, kind, 0 };
	return 0;
}

/*
 * Sorts the sites and checks there is one entry per faulting PC.  Returns
 * 0 or -EINVAL with diag set.
 */
static int sites_finish(struct sites *s, struct fl_diag *diag)
{
	qsort(s->v, s->n, sizeof(*s->v), cmp_site);
	for (size_t i = 1; i < s->n; i++) {
		if (s->v[i].faulting_pc == s->v[i - 1].faulting_pc) {
			diag->err = -EINVAL;
			fl_fmt(diag->msg, sizeof(diag->msg),
			       ".llvm_faultmaps: two entries for faulting PC 0x%llx",
			       (unsigned long long)s->v[i].faulting_pc);
			return -EINVAL;
		}
	}
	return 0;
}

/* Sites of a discovered module: function addresses are the discovery layer's. */
static int sites_of_elf(const struct fl_module *fm, struct sites *out, struct fl_diag *diag)
{
	const struct fl_module_section *sec = &fm->sections[FL_SECTION_FAULTMAP];
	struct fl_faultmap_cursor c;
	struct fl_faultmap_event ev;
	size_t fn = 0;
	uint64_t fn_addr = 0;
	int r;

	if (!sec->data)
		return 0;
	fl_faultmap_cursor_init(&c, sec->data, sec->size, sec->parse_flags, diag);
	while ((r = fl_faultmap_next(&c, &ev)) > 0) {
		if (ev.type == FL_FM_FUNCTION) {
			if (fn >= sec->num_functions)
				return -EINVAL;
			fn_addr = sec->functions[fn++].address;
		} else if (ev.type == FL_FM_FAULT) {
			uint64_t at = fn_addr + ev.fault.faulting_pc_offset;
			uint64_t to = fn_addr + ev.fault.handler_pc_offset;

			if (!fl_module_text_contains(fm, at) || !fl_module_text_contains(fm, to)) {
				diag->err = -EINVAL;
				fl_fmt(diag->msg, sizeof(diag->msg),
				       ".llvm_faultmaps: table %u: function %u: fault %u: "
				       "a PC outside the module's code",
				       ev.table, ev.fault.function, ev.fault.index);
				return -EINVAL;
			}
			if (sites_push(out, at, to, ev.fault.kind))
				return -ENOMEM;
		}
	}
	if (r < 0)
		return r;
	return sites_finish(out, diag);
}

/* Sites of JIT code: function addresses as stored, inside [lo, hi). */
static int sites_of_jit(const struct fl_module_reg *reg, struct sites *out,
			struct fl_diag *diag)
{
	uint64_t lo = reg->code_start, hi = reg->code_start + reg->code_size;
	struct fl_faultmap_cursor c;
	struct fl_faultmap_event ev;
	int r;

	fl_faultmap_cursor_init(&c, reg->faultmap, reg->faultmap_size, reg->parse_flags, diag);
	while ((r = fl_faultmap_next(&c, &ev)) > 0) {
		uint64_t at, to;

		if (ev.type != FL_FM_FAULT)
			continue;
		at = ev.fault.function_address + ev.fault.faulting_pc_offset;
		to = ev.fault.function_address + ev.fault.handler_pc_offset;
		if (at < lo || at >= hi || to < lo || to >= hi ||
		    at < ev.fault.function_address || to < ev.fault.function_address) {
			diag->err = -EINVAL;
			fl_fmt(diag->msg, sizeof(diag->msg),
			       ".llvm_faultmaps: table %u: function %u: fault %u: "
			       "PC outside the code range [0x%llx, 0x%llx)",
			       ev.table, ev.fault.function, ev.fault.index,
			       (unsigned long long)lo, (unsigned long long)hi);
			return -EINVAL;
		}
		if (sites_push(out, at, to, ev.fault.kind))
			return -ENOMEM;
	}
	if (r < 0)
		return r;
	return sites_finish(out, diag);
}

static void module_take_sites(struct module *m, struct sites *s)
{
	m->sites = s->v;
	m->num_sites = (uint32_t)s->n;
	if (s->n) {
		m->start = s->v[0].faulting_pc;
		m->end = s->v[s->n - 1].faulting_pc + 1;
	}
	s->v = NULL;
	s->n = s->cap = 0;
}

/* ------------------------------------------------------------------------
 * Public API
 */

/*
 * fork: both locks are held across it, so that the child never inherits
 * one locked by a thread it does not have, nor the lists half changed.
 * The observers' handlers run inside (table.h: refresh_lock, lock, then
 * theirs, which module_add takes under lock).
 */
static void fork_prepare(void)
{
	pthread_mutex_lock(&refresh_lock);
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < observers_count(); i++)
		if (observers[i]->fork_prepare)
			observers[i]->fork_prepare();
}

static void fork_parent(void)
{
	for (size_t i = observers_count(); i-- > 0;)
		if (observers[i]->fork_parent)
			observers[i]->fork_parent();
	pthread_mutex_unlock(&lock);
	pthread_mutex_unlock(&refresh_lock);
}

/*
 * The child's only thread is not between fl_snapshot_enter and leave (a
 * chained handler that forks runs after claim left): any count in readers
 * belongs to a thread that did not come along, and would keep the child's
 * first grace period waiting for ever.  The child counts on counters of
 * its own from zero, whether an agent is there or not.
 */
static void fork_child(void)
{
	int err;

	atomic_store(&fl_dispatch.readers[0], 0);
	atomic_store(&fl_dispatch.readers[1], 0);
	err = fl_counters_fork_child();
	for (size_t i = 0; i < observers_count(); i++)
		if (observers[i]->fork_child)
			observers[i]->fork_child(err);
	pthread_mutex_unlock(&lock);
	pthread_mutex_unlock(&refresh_lock);
}

int fl_table_init(const struct fl_init_opts *o)
{
	struct fl_snapshot *empty;
	long page = sysconf(_SC_PAGESIZE);
	int err;

	pthread_mutex_lock(&lock);
	if (fl_table_ready()) {
		pthread_mutex_unlock(&lock);
		return -EALREADY;
	}
	fl_dispatch.null_bound = o->null_bound ? o->null_bound :
				 (uint64_t)(page > 0 ? page : 4096);
	err = fl_counters_init(o->max_sites ? o->max_sites : 1u << 20);
	if (err)
		goto out;
	empty = snapshot_build();
	if (!empty) {
		err = -ENOMEM;
		goto out;
	}
	fl_snapshot_publish(empty);
	err = fl_dispatch_install();
	if (err)
		goto out;
	init_flags = o->flags;
	pthread_atfork(fork_prepare, fork_parent, fork_child);
	/*
	 * Release: fl_sigaction records actions from now on; pairs with its
	 * acquire load of ready (and fl_table_ready's).
	 */
	atomic_store_explicit(&fl_dispatch.ready, 1, memory_order_release);
out:
	pthread_mutex_unlock(&lock);
	return err;
}

int fl_module_register(const struct fl_module_reg *reg, struct fl_diag *diag)
{
	struct fl_module_reg r;
	struct fl_diag local;
	struct sites s = { 0 };
	struct module *m;
	int err;

	if (!diag)
		diag = &local;
	diag->err = 0;
	diag->msg[0] = 0;
	if (!reg || fl_opts_copy(&r, sizeof(r), reg))
		return -EINVAL;
	if (!r.faultmap || r.faultmap_size == 0 || r.code_size == 0 ||
	    r.code_start + r.code_size < r.code_start ||
	    (r.stackmap_size && !r.stackmap)) {
		diag->err = -EINVAL;
		fl_fmt(diag->msg, sizeof(diag->msg), "fl_module_register: %s",
		       !r.faultmap || !r.faultmap_size ? "no fault map" : "bad code or stack map range");
		return -EINVAL;
	}
	if (!fl_table_ready())
		return -ENODEV;

	err = sites_of_jit(&r, &s, diag);
	if (err == 0 && r.stackmap_size)
		err = fl_stackmap_validate(r.stackmap, r.stackmap_size, r.parse_flags, diag) < 0 ?
			diag->err : 0;
	if (err) {
		free(s.v);
		/* Whatever the format layer found, for the caller it is bad input. */
		return err == -ENOMEM ? err : -EINVAL;
	}

	m = calloc(1, sizeof(*m));
	if (!m || !(m->name = strdup(r.name ? r.name : "jit"))) {
		free(m);
		free(s.v);
		return -ENOMEM;
	}
	module_take_sites(m, &s);
	m->start = m->code_lo = r.code_start;
	m->end = m->code_hi = r.code_start + r.code_size;
	module_prepare(m, NULL, &r);

	pthread_mutex_lock(&lock);
	report_replaced();
	err = module_add(m);
	pthread_mutex_unlock(&lock);
	if (err < 0) {
		if (err == -EEXIST) {
			diag->err = err;
			fl_fmt(diag->msg, sizeof(diag->msg),
			       "fl_module_register: code range overlaps a registered module");
		}
		module_free(m);
	}
	return err;
}

/*
 * Removes mods[i] from the list, the last taking its place: the order of
 * the lists does not matter (snapshots are sorted), so a removal that
 * could not be published is undone by appending.  Under lock.
 */
static struct module *module_take(size_t i)
{
	struct module *m = mods[i];

	mods[i] = mods[--num_mods];
	return m;
}

int fl_module_unregister(int id)
{
	int err = -ENOENT;

	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < num_mods; i++) {
		if (mods[i]->id == id && !mods[i]->elf) {
			struct module *m = module_take(i);

			err = publish(&m, 1);
			if (err)
				mods[num_mods++] = m;	/* the handler still has it */
			break;
		}
	}
	pthread_mutex_unlock(&lock);
	return err;
}

/* ------------------------------------------------------------------------
 * Loaded modules
 */

struct loaded {
	char *name;
	uint64_t bias;
	uint64_t first_load;
};

struct loaded_list {
	struct loaded *v;
	size_t n;
	int err;
};

static int collect(struct dl_phdr_info *info, size_t size, void *ctx)
{
	struct loaded_list *l = ctx;
	uint64_t first = 0;
	bool found = false;
	struct loaded *grown;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		if (info->dlpi_phdr[i].p_type == PT_LOAD) {
			first = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
			found = true;
			break;
		}
	}
	/* The vDSO has no file and no fault map. */
	if (!found || (uint64_t)getauxval(AT_SYSINFO_EHDR) == first)
		return 0;
	grown = realloc(l->v, (l->n + 1) * sizeof(*l->v));
	if (!grown)
		goto nomem;
	l->v = grown;
	l->v[l->n].name = strdup(info->dlpi_name ? info->dlpi_name : "");
	if (!l->v[l->n].name)
		goto nomem;
	l->v[l->n].bias = info->dlpi_addr;
	l->v[l->n].first_load = first;
	l->n++;
	return 0;
nomem:
	l->err = -ENOMEM;
	return 1;
}

static void loaded_free(struct loaded_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].name);
	free(l->v);
}

static struct module *find_elf(const struct loaded *ld)
{
	for (size_t i = 0; i < num_mods; i++) {
		struct module *m = mods[i];

		if (m->elf && m->bias == ld->bias && m->first_load == ld->first_load &&
		    strcmp(m->name, ld->name) == 0)
			return m;
	}
	return NULL;
}

/*
 * A module record for a newly loaded ELF module.  Modules without a fault
 * map, or whose maps are unusable (logged once), are kept with no sites so
 * that the next rescan does not open their files again.
 */
static struct module *elf_module_new(const struct loaded *ld)
{
	struct module *m = calloc(1, sizeof(*m));
	struct fl_module *fm = NULL;
	struct fl_diag diag = { 0 };
	struct sites s = { 0 };
	int err;

	if (!m || !(m->name = strdup(ld->name))) {
		free(m);
		return NULL;
	}
	m->elf = true;
	m->bias = ld->bias;
	m->first_load = ld->first_load;

	err = fl_module_open_addr((const void *)(uintptr_t)ld->first_load, NULL, &fm, &diag);
	if (err == 0)
		err = sites_of_elf(fm, &s, &diag);
	if (err == -ENOMEM) {
		free(s.v);
		fl_module_free(fm);
		module_free(m);
		return NULL;
	}
	if (err) {
		fl_log(FL_LOG_WARN, "%s: not registered: %s",
		       ld->name[0] ? ld->name : "the main program",
		       diag.msg[0] ? diag.msg : strerror(-err));
		free(s.v);
	} else {
		module_take_sites(m, &s);
		if (fm->num_text) {
			m->code_lo = fm->text[0].start;
			m->code_hi = fm->text[fm->num_text - 1].end;
		}
		module_prepare(m, fm, NULL);
		if (m->num_sites)
			fl_log(FL_LOG_DEBUG, "%s: %u implicit checks",
			       ld->name[0] ? ld->name : "the main program", m->num_sites);
	}
	fl_module_free(fm);
	return m;
}

int fl_refresh(void)
{
	struct loaded_list l = { 0 };
	struct module **added = NULL, **removed = NULL;
	size_t num_added = 0, num_removed = 0;
	int changes = 0, err = 0;

	if (!fl_table_ready())
		return -ENODEV;
	if (init_flags & FL_INIT_NO_DISCOVERY)
		return 0;

	pthread_mutex_lock(&refresh_lock);
	dl_iterate_phdr(collect, &l);
	if (l.err) {
		err = l.err;
		goto out;
	}
	added = calloc(l.n ? l.n : 1, sizeof(*added));
	if (!added) {
		err = -ENOMEM;
		goto out;
	}

	/* Which are new: read the list under lock, open files without it. */
	for (size_t i = 0; i < l.n; i++) {
		bool known;

		pthread_mutex_lock(&lock);
		known = find_elf(&l.v[i]) != NULL;
		pthread_mutex_unlock(&lock);
		if (known)
			continue;
		added[num_added] = elf_module_new(&l.v[i]);
		if (!added[num_added]) {
			err = -ENOMEM;
			goto out;
		}
		num_added++;
	}

	pthread_mutex_lock(&lock);
	report_replaced();
	removed = calloc(num_mods ? num_mods : 1, sizeof(*removed));
	if (!removed) {
		pthread_mutex_unlock(&lock);
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < num_mods; i++)
		mods[i]->seen = !mods[i]->elf;
	for (size_t i = 0; i < l.n; i++) {
		struct module *m = find_elf(&l.v[i]);

		if (m)
			m->seen = true;
	}
	for (size_t i = 0; i < num_mods;) {
		if (!mods[i]->seen) {
			if (mods[i]->num_sites)
				changes++;
			removed[num_removed++] = module_take(i);
		} else {
			i++;
		}
	}
	if (num_removed && !changes) {
		/* None was in a snapshot: no publication, no grace period. */
		for (size_t i = 0; i < num_removed; i++)
			module_free(removed[i]);
		num_removed = 0;
	} else if (num_removed) {
		err = publish(removed, num_removed);
		if (err) {
			/* Keep them: the handler still has their sites. */
			for (size_t i = 0; i < num_removed; i++)
				mods[num_mods++] = removed[i];
			num_removed = 0;
			pthread_mutex_unlock(&lock);
			goto out;
		}
		num_removed = 0;
	}
	for (size_t i = 0; i < num_added; i++) {
		struct module *m = added[i];
		int r;

		added[i] = NULL;
		r = module_add(m);
		if (r < 0) {
			fl_log(FL_LOG_WARN, "%s: not registered: %s",
			       m->name[0] ? m->name : "the main program",
			       r == -EEXIST ? "its code overlaps a registered module" :
			       strerror(-r));
			module_free(m);
			if (r == -ENOMEM)
				err = r;
			continue;
		}
		changes += m->num_sites > 0;
	}
	pthread_mutex_unlock(&lock);
out:
	for (size_t i = 0; added && i < num_added; i++)
		module_free(added[i]);
	free(added);
	free(removed);
	loaded_free(&l);
	pthread_mutex_unlock(&refresh_lock);
	return err ? err : changes;
}

/* ------------------------------------------------------------------------
 * Regions
 */

int fl_table_region_add(struct fl_region *r)
{
	struct fl_region **grown;
	int err;

	pthread_mutex_lock(&lock);
	if (!fl_table_ready()) {
		err = -ENODEV;
		goto out;
	}
	for (size_t i = 0; i < num_regions; i++) {
		if (r->start < regions[i]->start + regions[i]->size &&
		    regions[i]->start < r->start + r->size) {
			err = -EEXIST;
			goto out;
		}
	}
	grown = realloc(regions, (num_regions + 1) * sizeof(*regions));
	if (!grown) {
		err = -ENOMEM;
		goto out;
	}
	regions = grown;
	regions[num_regions++] = r;
	err = publish(NULL, 0);
	if (err)
		num_regions--;
out:
	pthread_mutex_unlock(&lock);
	return err;
}

int fl_table_region_remove(struct fl_region *r)
{
	int err = -ENOENT;

	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < num_regions; i++) {
		if (regions[i] != r)
			continue;
		/* As module_take. */
		regions[i] = regions[--num_regions];
		err = publish(NULL, 0);
		if (err)
			regions[num_regions++] = r;	/* the handler still has it */
		break;
	}
	pthread_mutex_unlock(&lock);
	return err;
}

/* ------------------------------------------------------------------------
 * Queries
 */

int fl_stats_get(struct fl_stats *st)
{
	struct fl_stats o;

	if (!st || st->sz < sizeof(size_t))
		return -EINVAL;
	memset(&o, 0, sizeof(o));
	o.claimed = atomic_load_explicit(&fl_dispatch.claimed, memory_order_relaxed);
	o.chained = atomic_load_explicit(&fl_dispatch.chained, memory_order_relaxed);
	o.populated = atomic_load_explicit(&fl_dispatch.populated, memory_order_relaxed);
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < num_mods; i++) {
		if (mods[i]->num_sites) {
			o.modules++;
			o.sites += mods[i]->num_sites;
		}
	}
	if (fl_table_ready()) {
		report_replaced();
		o.handler_replaced = replaced_reported;
	}
	pthread_mutex_unlock(&lock);
	return fl_opts_out(st, &o, sizeof(o));
}

int fl_site_for_each(fl_site_fn fn, void *ctx)
{
	const struct fl_snapshot *s;
	int r = 0;

	pthread_mutex_lock(&lock);
	/* Writers hold lock: the current snapshot stays while we do. */
	s = atomic_load(&fl_dispatch.current);
	for (uint32_t i = 0; s && r == 0 && i < s->num_modules; i++) {
		const struct fl_snap_module *sm = &s->modules[i];
		const char *name = "";

		for (size_t k = 0; k < num_mods; k++)
			if (mods[k]->id == sm->id)
				name = mods[k]->name;
		for (uint32_t j = 0; r == 0 && j < sm->num_sites; j++) {
			const struct fl_site_entry *e = &sm->sites[j];
			struct fl_site site = {
				.module = sm->id,
				.module_name = name,
				.faulting_pc = e->faulting_pc,
				.handler_pc = e->handler_pc,
				.kind = e->kind,
				.faults = atomic_load_explicit(&fl_dispatch.counters[e->counter],
							       memory_order_relaxed),
			};

			r = fn(&site, ctx);
		}
	}
	pthread_mutex_unlock(&lock);
	return r;
}
