// SPDX-License-Identifier: MIT
/*
 * Dispatch under concurrent table changes: two threads fail implicit null
 * checks as fast as they can while a third keeps changing the handler
 * table under them.
 *
 *   stress LIBDL        (STRESS_SECONDS, default 30, then until the loader
 *                       has done each thing once: see main)
 *
 *  - faulter 0 calls st_load, st_store, st_rmw (stress-main.ll, linked into
 *    this program), faulter 1 sk_load, sk_store (stress-keep.ll, a library
 *    this program links): each with NULL, which must return the null
 *    block's value, and with a valid pointer, which must load or store.
 *  - the loader thread, in a loop: dlopen LIBDL (stress-dl.ll), fl_refresh,
 *    sd_load(NULL) must dispatch; dlclose, fl_refresh, its site must be
 *    gone; then fl_jit_register an MCJIT module (rebuilt every
 *    JIT_REBUILD iterations, so code is freed and mapped again),
 *    sj_load(NULL) must dispatch, fl_jit_unregister, its sites gone.
 *  - the handoff: every HANDOFF_EVERY iterations, before closing or
 *    unregistering, the loader hands the new function to faulter 1 and
 *    waits until it has called it: a module registered by one thread
 *    dispatches the faults of another.
 *
 * The program links libfaultline directly (no preload shim), so it calls
 * fl_refresh after its own dlopen and dlclose.
 *
 * At the end: every result right, every site of the two modules that stay
 * counted exactly as many faults as NULL calls were made on it, the
 * claimed total equal to all NULL calls, nothing chained, and the modules
 * and sites back to what they were.  An unclaimed fault kills the process
 * (SIGSEGV), which fails the test too.  Prints the counts and "PASS
 * stress" or "FAIL stress: why"; exits 0 only on pass.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <faultline/dispatch.h>

#include "mcjit.h"

/* stress-main.ll */
int32_t st_load(int32_t *p);
int32_t st_store(int64_t *p, int64_t x);
int32_t st_rmw(int32_t *p);
/* stress-keep.ll */
int64_t sk_load(int64_t *p);
int32_t sk_store(int32_t *p, int32_t x);

typedef int32_t (*load32_fn)(int32_t *);

#define JIT_REBUILD 64		/* loader iterations per MCJIT engine */
#define LOADER_CALLS 8		/* NULL calls per dlopen and per registration */
#define HANDOFF_EVERY 8		/* loader iterations per handoff (it waits) */

static const char jit_ir[] =
	"target datalayout = \"e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-f80:128-n8:16:32:64-S128\"\n"
	"target triple = \"x86_64-unknown-linux-gnu\"\n"
	"define i32 @sj_load(i32* %p) {\n"
	"entry:\n"
	"  %c = icmp eq i32* %p, null\n"
	"  br i1 %c, label %isnull, label %ok, !make.implicit !0\n"
	"ok:\n"
	"  %v = load i32, i32* %p\n"
	"  ret i32 %v\n"
	"isnull:\n"
	"  ret i32 -7\n"
	"}\n"
	"!0 = !{}\n";

/* The functions whose sites stay registered the whole run. */
enum { ST_LOAD, ST_STORE, ST_RMW, SK_LOAD, SK_STORE, NSTAY };

static const char *const stay_names[NSTAY] = {
	"st_load", "st_store", "st_rmw", "sk_load", "sk_store",
};
static uint64_t stay_addr[NSTAY];

static atomic_int stop;

/*
 * Set by the loader once it has done each of its things (a dlopen round,
 * a JIT round, a handoff): the run goes on past STRESS_SECONDS until then,
 * for at most PROGRESS_WAIT_S more, so that a slow machine (the first
 * MCJIT build under TSan) is not taken for a loader that made no progress.
 */
static atomic_int progressed;
#define PROGRESS_WAIT_S 600

/*
 * The handoff: the loader stores fn and null_value, then increments gen
 * (release; pairs with faulter 1's acquire load of gen).  Faulter 1 calls
 * fn, then stores ack = gen (release; pairs with the loader's acquire load
 * of ack, after which the loader may unload fn).  done: faulter 1 has left
 * its loop and calls nothing more.
 */
static struct {
	load32_fn fn;
	int32_t null_value;
	atomic_uint gen;
	atomic_uint ack;
	atomic_int done;
} handoff;

struct faulter {
	pthread_t thread;
	int index;
	uint64_t null_calls[NSTAY];
	uint64_t handoff_calls;	/* NULL calls of handed-off functions */
	uint64_t valid_calls;
	uint64_t wrong;
};

struct loader {
	pthread_t thread;
	const char *libdl;
	uint64_t dl_iterations;
	uint64_t jit_iterations;
	uint64_t jit_builds;
	uint64_t handoffs;
	uint64_t null_calls;
	uint64_t valid_calls;
	uint64_t wrong;		/* wrong results */
	uint64_t errors;	/* API calls that failed, stale sites */
	char first_error[256];
};

/* Faulter 1: calls a function the loader handed off, if there is one. */
static void take_handoff(struct faulter *f, unsigned *seen)
{
	unsigned gen = atomic_load_explicit(&handoff.gen, memory_order_acquire);
	int32_t v = 99;

	if (gen == *seen)
		return;
	f->wrong += handoff.fn(NULL) != handoff.null_value;
	f->wrong += handoff.fn(&v) != 99;
	f->handoff_calls++;
	f->valid_calls++;
	*seen = gen;
	atomic_store_explicit(&handoff.ack, gen, memory_order_release);
}

static void *faulter_main(void *arg)
{
	struct faulter *f = arg;
	unsigned seen = 0;
	uint64_t i = 0;

	if (f->index == 0) {
		int32_t x;
		int64_t y;

		while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
			i++;
			f->wrong += st_load(NULL) != -1;
			x = (int32_t)i;
			f->wrong += st_load(&x) != (int32_t)i;
			f->wrong += st_store(NULL, (int64_t)i) != -2;
			f->wrong += st_store(&y, (int64_t)i) != 0 || y != (int64_t)i;
			f->wrong += st_rmw(NULL) != -3;
			f->wrong += st_rmw(&x) != 0 || x != (int32_t)i + 1;
		}
		f->null_calls[ST_LOAD] = f->null_calls[ST_STORE] = f->null_calls[ST_RMW] = i;
		f->valid_calls = 3 * i;
	} else {
		int64_t x;
		int32_t y;

		while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
			i++;
			f->wrong += sk_load(NULL) != -4;
			x = (int64_t)i << 20;
			f->wrong += sk_load(&x) != (int64_t)i << 20;
			f->wrong += sk_store(NULL, (int32_t)i) != -5;
			f->wrong += sk_store(&y, (int32_t)i) != 0 || y != (int32_t)i;
			take_handoff(f, &seen);
		}
		atomic_store(&handoff.done, 1);
		f->null_calls[SK_LOAD] = f->null_calls[SK_STORE] = i;
		f->valid_calls += 2 * i;
	}
	return NULL;
}

static void loader_error(struct loader *l, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void loader_error(struct loader *l, const char *fmt, ...)
{
	va_list ap;

	if (l->errors++ == 0) {
		va_start(ap, fmt);
		vsnprintf(l->first_error, sizeof(l->first_error), fmt, ap);
		va_end(ap);
	}
}

/* fl_site_for_each: is there a site at pc, or one of module id? */
struct find {
	uint64_t lo, hi;	/* faulting PC range */
	int module;		/* 0: any */
	int found;
	uint64_t pc;
};

static int find_site(const struct fl_site *s, void *ctx)
{
	struct find *f = ctx;

	if ((f->module && s->module == f->module) ||
	    (s->faulting_pc >= f->lo && s->faulting_pc < f->hi)) {
		f->found++;
		f->pc = s->faulting_pc;
	}
	return 0;
}

static int sites_in(uint64_t lo, uint64_t hi, int module, uint64_t *pc)
{
	struct find f = { .lo = lo, .hi = hi, .module = module };

	fl_site_for_each(find_site, &f);
	if (pc)
		*pc = f.pc;
	return f.found;
}

/*
 * Hands fn to faulter 1 and waits until it has called it (or has stopped).
 * Returns 0, or -1 when faulter 1 stopped first.
 */
static int hand_off(load32_fn fn, int32_t null_value)
{
	unsigned gen = atomic_load_explicit(&handoff.gen, memory_order_relaxed) + 1;

	handoff.fn = fn;
	handoff.null_value = null_value;
	atomic_store_explicit(&handoff.gen, gen, memory_order_release);
	while (atomic_load_explicit(&handoff.ack, memory_order_acquire) != gen) {
		if (atomic_load(&handoff.done))
			return -1;
		sched_yield();
	}
	return 0;
}

/* Calls fn with NULL and with a valid pointer LOADER_CALLS times each. */
static void call_loaded(struct loader *l, load32_fn fn, int32_t null_value)
{
	int32_t v;
	int k;

	for (k = 0; k < LOADER_CALLS; k++) {
		v = k * 3 + 1;
		l->wrong += fn(NULL) != null_value;
		l->wrong += fn(&v) != k * 3 + 1;
	}
	l->null_calls += LOADER_CALLS;
	l->valid_calls += LOADER_CALLS;
}

static void dl_iteration(struct loader *l)
{
	uint64_t lo, site_pc = 0;
	load32_fn fn;
	void *h;
	int rc;

	h = dlopen(l->libdl, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		loader_error(l, "dlopen: %s", dlerror());
		return;
	}
	rc = fl_refresh();
	if (rc < 1)
		loader_error(l, "fl_refresh after dlopen: %d", rc);
	fn = (load32_fn)dlsym(h, "sd_load");
	if (!fn) {
		loader_error(l, "dlsym sd_load: %s", dlerror());
		dlclose(h);
		return;
	}
	/* Functions are 16-byte aligned: [fn, fn + 16) holds only its site. */
	lo = (uint64_t)(uintptr_t)fn;
	if (sites_in(lo, lo + 16, 0, &site_pc) != 1) {
		loader_error(l, "sd_load at %#lx has no site after fl_refresh",
			     (unsigned long)lo);
		dlclose(h);
		fl_refresh();
		return;
	}
	call_loaded(l, fn, -6);
	if (l->dl_iterations % HANDOFF_EVERY == 0 && hand_off(fn, -6) == 0)
		l->handoffs++;
	if (dlclose(h))
		loader_error(l, "dlclose: %s", dlerror());
	rc = fl_refresh();
	if (rc < 1)
		loader_error(l, "fl_refresh after dlclose: %d", rc);
	if (sites_in(site_pc, site_pc + 1, 0, NULL) != 0)
		loader_error(l, "site %#lx of the closed library still registered",
			     (unsigned long)site_pc);
	l->dl_iterations++;
}

static void jit_iteration(struct loader *l, struct jit_module *m)
{
	struct fl_jit_reg r;
	struct fl_diag d = { 0 };
	load32_fn fn;
	int id, rc;

	if (l->jit_iterations % JIT_REBUILD == 0) {
		jit_free(m);
		if (jit_compile(m, jit_ir, "stress-jit")) {
			loader_error(l, "jit_compile: %s", m->err);
			return;
		}
		if (!m->faultmap) {
			loader_error(l, "MCJIT made no fault map");
			return;
		}
		l->jit_builds++;
	}
	fn = (load32_fn)(uintptr_t)jit_function(m, "sj_load");
	jit_reg(m, "stress-jit", &r);
	id = fl_jit_register(&r, &d);
	if (id <= 0) {
		loader_error(l, "fl_jit_register: %d %s", id, d.msg);
		return;
	}
	call_loaded(l, fn, -7);
	if (l->jit_iterations % HANDOFF_EVERY == 0 && hand_off(fn, -7) == 0)
		l->handoffs++;
	rc = fl_jit_unregister(id);
	if (rc)
		loader_error(l, "fl_jit_unregister(%d): %d", id, rc);
	if (sites_in(m->code_start, m->code_start + m->code_size, id, NULL) != 0)
		loader_error(l, "JIT module %d still has sites", id);
	l->jit_iterations++;
}

static void *loader_main(void *arg)
{
	struct loader *l = arg;
	struct jit_module m = { 0 };

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		dl_iteration(l);
		jit_iteration(l, &m);
		if (l->dl_iterations && l->jit_iterations && l->handoffs)
			atomic_store(&progressed, 1);
	}
	jit_free(&m);
	return NULL;
}

struct stay_walk {
	uint64_t faults[NSTAY];
	int sites[NSTAY];
};

static int count_stay(const struct fl_site *s, void *ctx)
{
	struct stay_walk *w = ctx;
	int i;

	for (i = 0; i < NSTAY; i++)
		if (s->faulting_pc >= stay_addr[i] && s->faulting_pc < stay_addr[i] + 16) {
			w->faults[i] += s->faults;
			w->sites[i]++;
		}
	return 0;
}

static int get_stats(struct fl_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->sz = sizeof(*st);
	return fl_stats_get(st);
}

int main(int argc, char **argv)
{
	struct faulter faulters[2] = { { .index = 0 }, { .index = 1 } };
	struct loader loader = { 0 };
	struct fl_stats before, after;
	struct stay_walk w = { 0 };
	const char *env = getenv("STRESS_SECONDS");
	long seconds = env ? strtol(env, NULL, 10) : 30;
	uint64_t null_total, valid_total, wrong, stay_null[NSTAY] = { 0 };
	int failed = 0, i, k, rc;

	if (argc != 2) {
		fprintf(stderr, "usage: %s LIBDL\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	loader.libdl = argv[1];
	stay_addr[ST_LOAD] = (uint64_t)(uintptr_t)st_load;
	stay_addr[ST_STORE] = (uint64_t)(uintptr_t)st_store;
	stay_addr[ST_RMW] = (uint64_t)(uintptr_t)st_rmw;
	stay_addr[SK_LOAD] = (uint64_t)(uintptr_t)sk_load;
	stay_addr[SK_STORE] = (uint64_t)(uintptr_t)sk_store;

	jit_setup();
	rc = fl_init(NULL);
	if (rc) {
		printf("FAIL stress: fl_init: %d (%s)\n", rc, strerror(-rc));
		return 1;
	}
	if (get_stats(&before)) {
		printf("FAIL stress: fl_stats_get\n");
		return 1;
	}
	fl_site_for_each(count_stay, &w);
	for (i = 0; i < NSTAY; i++)
		if (w.sites[i] != 1 || w.faults[i] != 0) {
			printf("FAIL stress: %s has %d sites with %lu faults after fl_init, "
			       "want 1 with 0\n", stay_names[i], w.sites[i],
			       (unsigned long)w.faults[i]);
			return 1;
		}
	printf("stress: %ld s; %u modules, %u sites registered at start\n", seconds,
	       before.modules, before.sites);

	for (i = 0; i < 2; i++)
		if (pthread_create(&faulters[i].thread, NULL, faulter_main, &faulters[i])) {
			printf("FAIL stress: pthread_create\n");
			return 1;
		}
	if (pthread_create(&loader.thread, NULL, loader_main, &loader)) {
		printf("FAIL stress: pthread_create\n");
		return 1;
	}
	for (; seconds > 0; seconds--)
		sleep(1);
	for (i = 0; !atomic_load(&progressed) && i < PROGRESS_WAIT_S; i++)
		sleep(1);
	atomic_store(&stop, 1);
	for (i = 0; i < 2; i++)
		pthread_join(faulters[i].thread, NULL);
	pthread_join(loader.thread, NULL);

	null_total = loader.null_calls;
	valid_total = loader.valid_calls;
	wrong = loader.wrong;
	for (i = 0; i < 2; i++) {
		for (k = 0; k < NSTAY; k++)
			stay_null[k] += faulters[i].null_calls[k];
		null_total += faulters[i].handoff_calls;
		valid_total += faulters[i].valid_calls;
		wrong += faulters[i].wrong;
	}
	for (k = 0; k < NSTAY; k++)
		null_total += stay_null[k];

	memset(&w, 0, sizeof(w));
	fl_site_for_each(count_stay, &w);
	if (get_stats(&after)) {
		printf("FAIL stress: fl_stats_get\n");
		return 1;
	}

	printf("  faults dispatched: %lu (claimed +%lu, chained +%lu)\n",
	       (unsigned long)null_total, (unsigned long)(after.claimed - before.claimed),
	       (unsigned long)(after.chained - before.chained));
	for (k = 0; k < NSTAY; k++)
		printf("    %-8s %lu calls, site counted %lu\n", stay_names[k],
		       (unsigned long)stay_null[k], (unsigned long)w.faults[k]);
	printf("    loaded   %lu calls (dlopen'd library and JIT)\n",
	       (unsigned long)loader.null_calls);
	printf("    handoff  %lu calls by faulter 1 of the loader's functions\n",
	       (unsigned long)faulters[1].handoff_calls);
	printf("  valid calls: %lu\n", (unsigned long)valid_total);
	printf("  wrong results: %lu\n", (unsigned long)wrong);
	printf("  dlopen/dlclose iterations: %lu\n", (unsigned long)loader.dl_iterations);
	printf("  JIT register/unregister: %lu (MCJIT engines built: %lu)\n",
	       (unsigned long)loader.jit_iterations, (unsigned long)loader.jit_builds);
	printf("  loader errors: %lu%s%s\n", (unsigned long)loader.errors,
	       loader.errors ? ", first: " : "", loader.first_error);
	printf("  end: %u modules, %u sites; handler_replaced %u\n", after.modules,
	       after.sites, after.handler_replaced);

	if (wrong) {
		printf("FAIL stress: %lu wrong results\n", (unsigned long)wrong);
		failed = 1;
	}
	if (loader.errors) {
		printf("FAIL stress: loader: %s\n", loader.first_error);
		failed = 1;
	}
	if (loader.dl_iterations == 0 || loader.jit_iterations == 0 ||
	    loader.handoffs == 0) {
		printf("FAIL stress: the loader made no progress\n");
		failed = 1;
	}
	for (k = 0; k < NSTAY; k++)
		if (w.sites[k] != 1 || w.faults[k] != stay_null[k]) {
			printf("FAIL stress: %s: %d sites counted %lu, want 1 site with %lu\n",
			       stay_names[k], w.sites[k], (unsigned long)w.faults[k],
			       (unsigned long)stay_null[k]);
			failed = 1;
		}
	if (after.claimed - before.claimed != null_total ||
	    after.chained != before.chained) {
		printf("FAIL stress: claimed +%lu chained +%lu, want +%lu and +0\n",
		       (unsigned long)(after.claimed - before.claimed),
		       (unsigned long)(after.chained - before.chained),
		       (unsigned long)null_total);
		failed = 1;
	}
	if (after.modules != before.modules || after.sites != before.sites ||
	    after.handler_replaced) {
		printf("FAIL stress: modules/sites/handler_replaced changed\n");
		failed = 1;
	}
	if (failed)
		return 1;
	printf("PASS stress\n");
	return 0;
}
