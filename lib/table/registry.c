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

#include "agent/agent.h"
#include "core/fmt.h"
#include "core/log.h"
#include "core/opts.h"
#include "proto/proto.h"
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
	/* Per site, the function it is in (for the daemon), or NULL. */
	char **names;
	/*
	 * The sections for the daemon (agent.h), or NULL: malloc'd, handed
	 * over to the agent when the module is published.
	 */
	void *sections;
	size_t sections_size;
	uint32_t faultmap_size;
	uint32_t stackmap_size;
	uint32_t sm_functions;
};

static pthread_mutex_t refresh_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static bool initialized;
static uint32_t init_flags;
static struct module **mods;
static size_t num_mods;
static struct fl_region **regions;
static size_t num_regions;
static int next_id = 1;
static uint64_t generation;
static bool replaced_reported;

bool fl_table_ready(void)
{
	bool r;

	pthread_mutex_lock(&lock);
	r = initialized;
	pthread_mutex_unlock(&lock);
	return r;
}

static void module_free(struct module *m)
{
	if (!m)
		return;
	free(m->sections);
	for (uint32_t i = 0; m->names && i < m->num_sites; i++)
		free(m->names[i]);
	free(m->names);
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
	s->generation = ++generation;
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
			fl_agent_module_removed(removed[i]->id);
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
		struct fl_agent_module am = {
			.id = m->id, .name = m->name,
			.code_start = m->code_lo, .code_size = m->code_hi - m->code_lo,
			.first_counter = m->counter_base, .num_sites = m->num_sites,
			.sites = m->sites, .sections = m->sections,
			.sections_size = m->sections_size,
			.faultmap_size = m->faultmap_size, .stackmap_size = m->stackmap_size,
			.sm_functions = m->sm_functions,
			.names = (const char *const *)m->names,
		};

		/* The agent owns the sections now, whatever it does with them. */
		m->sections = NULL;
		fl_agent_module_added(&am);
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

/*
 * What the agent passes to the daemon (in a sealed memfd it makes when it
 * sends it): the fault map, the stack map, then the runtime address of
 * each stack map function (funcs, n), into m->sections.  Sections too large
 * for the protocol, or a failure, leave the daemon without them (logged):
 * the module still dispatches.
 */
static void take_sections(const void *fm, size_t fm_size, const void *sm, size_t sm_size,
			  const uint64_t *funcs, size_t n, struct module *m)
{
	size_t total;
	char *buf;

	m->faultmap_size = m->stackmap_size = m->sm_functions = 0;
	if (!fm)
		fm_size = 0;
	if (!sm)
		sm_size = 0;
	if (!sm_size)
		n = 0;
	total = fm_size + sm_size + n * sizeof(uint64_t);
	if (total > FL_PROTO_MAX_REGION) {
		fl_log(FL_LOG_WARN, "%s: sections of %zu bytes: too large for faultlined",
		       m->name, total);
		return;
	}
	if (total == 0)
		return;
	buf = malloc(total);
	if (!buf)
		return;
	if (fm_size)
		memcpy(buf, fm, fm_size);
	if (sm_size)
		memcpy(buf + fm_size, sm, sm_size);
	if (n)
		memcpy(buf + fm_size + sm_size, funcs, n * sizeof(uint64_t));
	m->sections = buf;
	m->sections_size = total;
	m->faultmap_size = (uint32_t)fm_size;
	m->stackmap_size = (uint32_t)sm_size;
	m->sm_functions = (uint32_t)n;
}

/*
 * Names the sites of a loaded module after the functions they are in, from
 * the module file's symbol table (the dynamic one alone, which dladdr
 * reads, lacks most functions of an executable).  Best effort: a site
 * without a name is sent unnamed.
 */
static int cmp_function_address(const void *a, const void *b)
{
	const struct fl_module_function *x = *(const struct fl_module_function *const *)a;
	const struct fl_module_function *y = *(const struct fl_module_function *const *)b;

	return x->address < y->address ? -1 : x->address > y->address;
}

static void name_sites(struct module *m, const struct fl_module *fm)
{
	const struct fl_module_section *sec = &fm->sections[FL_SECTION_FAULTMAP];
	const struct fl_module_function **by_address;
	struct fl_elf *elf = NULL;
	struct fl_diag d;
	size_t k = 0;

	if (!m->num_sites || !sec->num_functions)
		return;
	by_address = malloc(sec->num_functions * sizeof(*by_address));
	m->names = calloc(m->num_sites, sizeof(*m->names));
	if (!by_address || !m->names || fl_elf_open(fm->path, NULL, &elf, &d) != 0) {
		free(by_address);
		free(m->names);
		m->names = NULL;
		return;
	}
	for (size_t i = 0; i < sec->num_functions; i++)
		by_address[i] = &sec->functions[i];
	qsort(by_address, sec->num_functions, sizeof(*by_address), cmp_function_address);

	/*
	 * Sites are sorted by PC too: one walk gives each site the function
	 * with the greatest address at or below its PC.
	 */
	for (uint32_t i = 0; i < m->num_sites; i++) {
		const char *name;

		while (k + 1 < sec->num_functions &&
		       by_address[k + 1]->address <= m->sites[i].faulting_pc)
			k++;
		if (by_address[k]->address > m->sites[i].faulting_pc)
			continue;
		name = fl_elf_function_name(elf, FL_SECTION_FAULTMAP, by_address[k]->address_offset,
					    by_address[k]->stored);
		if (name && *name)
			m->names[i] = strdup(name);
	}
	fl_elf_close(elf);
	free(by_address);
}

/* The stack map's function addresses as stored (JIT: they are runtime ones). */
static uint64_t *stored_functions(const void *sm, size_t size, uint32_t flags, size_t *n)
{
	struct fl_stackmap_cursor c;
	struct fl_stackmap_event ev;
	uint64_t *v = NULL, *grown;
	size_t cap = 0;

	*n = 0;
	fl_stackmap_cursor_init(&c, sm, size, flags, NULL);
	while (fl_stackmap_next(&c, &ev) > 0) {
		if (ev.type != FL_SM_FUNCTION)
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 16;
			grown = realloc(v, cap * sizeof(*v));
			if (!grown) {
				free(v);
				*n = 0;
				return NULL;
			}
			v = grown;
		}
		v[(*n)++] = ev.function.address;
	}
	return v;
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
 * Registered after the agent's handlers, so that these run first before
 * fork (the lock order: refresh_lock, lock, then the agent's lock, which
 * module_add takes under lock).
 */
static void fork_prepare(void)
{
	pthread_mutex_lock(&refresh_lock);
	pthread_mutex_lock(&lock);
}

static void fork_parent(void)
{
	pthread_mutex_unlock(&lock);
	pthread_mutex_unlock(&refresh_lock);
}

/*
 * The child's only thread is not between fl_snapshot_enter and leave (a
 * chained handler that forks runs after claim left): any count in readers
 * belongs to a thread that did not come along, and would keep the child's
 * first grace period waiting for ever.
 */
static void fork_child(void)
{
	atomic_store(&fl_dispatch.readers[0], 0);
	atomic_store(&fl_dispatch.readers[1], 0);
	pthread_mutex_unlock(&lock);
	pthread_mutex_unlock(&refresh_lock);
}

int fl_init(const struct fl_init_opts *opts)
{
	struct fl_init_opts o;
	struct fl_snapshot *empty;
	long page = sysconf(_SC_PAGESIZE);
	int err;

	if (fl_opts_copy(&o, sizeof(o), opts))
		return -EINVAL;
	if (o.flags & ~(uint32_t)(FL_INIT_NO_DISCOVERY | FL_INIT_NO_AGENT))
		return -EINVAL;

	pthread_mutex_lock(&lock);
	if (initialized) {
		pthread_mutex_unlock(&lock);
		return -EALREADY;
	}
	fl_dispatch.null_bound = o.null_bound ? o.null_bound : (uint64_t)(page > 0 ? page : 4096);
	err = fl_counters_init(o.max_sites ? o.max_sites : 1u << 20);
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
	/*
	 * Release: fl_sigaction records actions from now on; pairs with its
	 * acquire load of ready.
	 */
	atomic_store_explicit(&fl_dispatch.ready, 1, memory_order_release);
	initialized = true;
	init_flags = o.flags;
out:
	pthread_mutex_unlock(&lock);
	if (err) {
		fl_log(FL_LOG_ERROR, "fl_init: %s", strerror(-err));
		return err;
	}
	if (!(o.flags & FL_INIT_NO_DISCOVERY)) {
		err = fl_refresh();
		if (err > 0)
			err = 0;
	}
	if (!err && !(o.flags & FL_INIT_NO_AGENT)) {
		int r = fl_agent_start(o.socket_path);

		/* Dispatch works without the daemon: say so, go on. */
		if (r < 0)
			fl_log(FL_LOG_WARN, "no agent for faultlined: %s", strerror(-r));
	}
	pthread_atfork(fork_prepare, fork_parent, fork_child);
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
	{
		size_t n = 0;
		uint64_t *funcs = r.stackmap_size ?
			stored_functions(r.stackmap, r.stackmap_size, r.parse_flags, &n) : NULL;

		take_sections(r.faultmap, r.faultmap_size, r.stackmap, r.stackmap_size,
			      funcs, n, m);
		free(funcs);
	}

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
		const struct fl_module_section *fs = &fm->sections[FL_SECTION_FAULTMAP];
		const struct fl_module_section *ss = &fm->sections[FL_SECTION_STACKMAP];

		module_take_sites(m, &s);
		name_sites(m, fm);
		if (fm->num_text) {
			m->code_lo = fm->text[0].start;
			m->code_hi = fm->text[fm->num_text - 1].end;
		}
		if (m->num_sites) {
			uint64_t *funcs = calloc(ss->num_functions ? ss->num_functions : 1,
						 sizeof(*funcs));

			for (size_t i = 0; funcs && i < ss->num_functions; i++)
				funcs[i] = ss->functions[i].address;
			if (funcs)
				take_sections(fs->data, fs->size, ss->data, ss->size, funcs,
					      ss->num_functions, m);
			free(funcs);
		}
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
	if (!initialized) {
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
	if (initialized) {
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
