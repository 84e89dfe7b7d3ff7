// SPDX-License-Identifier: MIT
/*
 * Calls the functions of sites.ll with NULL and valid pointers, in a fixed
 * pattern, from several threads, and prints what they returned, what they
 * stored and how often each null block ran.  The implicit build under the
 * shim must print exactly what the explicit build prints without it.
 *
 * Built two ways:
 *   driver.c              linked with the sites (executable or DT_NEEDED
 *                         library):  driver run
 *   driver.c -DDRIVER_DL  loads them:  driver-dl dlopen LIB
 *                                      driver-dl reopen LIB_A LIB_B
 *                                      driver-dl stale LIB
 * reopen: uses A, unloads it, keeps its address range busy, loads B, loads
 * A again (at another address), and uses both.  stale: unloads A and runs
 * a copy of its code at its old address; a NULL argument there must not be
 * claimed by faultline any more (the process dies by SIGSEGV).
 * Nothing printed depends on addresses.
 */
#include <dlfcn.h>
#include <inttypes.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sites.h"

struct sites {
	int (*load_i32)(int *);
	int (*load_i8)(uint8_t *);
	int64_t (*load_i64_off)(int64_t *);
	void (*store_i32)(int *, int);
	void (*rmw_add_i32)(int *, int);
	void (*store_i64_off)(int64_t *, int64_t);
	int (*load_nocall)(int *);
	unsigned long (*count)(int);
};

#define THREADS 4
#define ITERATIONS 2000

struct worker {
	const struct sites *s;
	int t;
	pthread_t thread;
	uint64_t sum;
	uint64_t stored;
	unsigned long nulls[SITE_IDS];
};

/* Whether call i of function k in thread t gets NULL: about one in four. */
static int is_null(int i, int k, int t)
{
	return (i * 7 + k * 13 + t * 5) % (k + 3) == 0 || (i + k) % 11 == 3;
}

static void *work(void *arg)
{
	struct worker *w = arg;
	const struct sites *s = w->s;
	int words[64], rmw[64];
	uint8_t bytes[64];
	int64_t far[600], farstore[300];
	uint64_t sum = 0;

	for (int j = 0; j < 64; j++) {
		words[j] = j * 3 + w->t;
		rmw[j] = j;
		bytes[j] = (uint8_t)(j * 5 + 1);
	}
	for (int j = 0; j < 600; j++)
		far[j] = (int64_t)j * 1000003 + w->t;
	memset(farstore, 0, sizeof(farstore));

	for (int i = 0; i < ITERATIONS; i++) {
		int n;

#define CALL(k, id, expr_null, expr_valid) do {		\
			n = is_null(i, k, w->t);		\
			w->nulls[id] += n;			\
			if (n)					\
				expr_null;			\
			else					\
				expr_valid;			\
		} while (0)

		CALL(1, 1, sum += (uint64_t)s->load_i32(NULL),
		     sum += (uint64_t)s->load_i32(&words[i % 64]));
		CALL(2, 2, sum += (uint64_t)s->load_i8(NULL),
		     sum += (uint64_t)s->load_i8(&bytes[i % 64]));
		CALL(3, 3, sum += (uint64_t)s->load_i64_off(NULL),
		     sum += (uint64_t)s->load_i64_off(&far[i % 100]));
		CALL(4, 4, s->store_i32(NULL, i), s->store_i32(&words[i % 64], i));
		CALL(5, 5, s->rmw_add_i32(NULL, i), s->rmw_add_i32(&rmw[i % 64], i));
		CALL(6, 6, s->store_i64_off(NULL, i), s->store_i64_off(&farstore[i % 44], i));
		CALL(7, 7, sum += (uint64_t)s->load_nocall(NULL),
		     sum += (uint64_t)s->load_nocall(&words[i % 64]));
#undef CALL
	}
	w->sum = sum;
	w->stored = 0;
	for (int j = 0; j < 64; j++)
		w->stored = w->stored * 31 + (uint64_t)words[j] * 7 + (uint64_t)rmw[j];
	for (int j = 0; j < 300; j++)
		w->stored = w->stored * 31 + (uint64_t)farstore[j];
	return NULL;
}

/* Runs the pattern in THREADS threads and prints the results. */
static int run_pattern(const char *label, const struct sites *s)
{
	struct worker w[THREADS];
	unsigned long before[SITE_IDS], expect[SITE_IDS] = { 0 };
	int bad = 0;

	for (int id = 1; id < SITE_IDS; id++)
		before[id] = s->count(id);
	for (int t = 0; t < THREADS; t++) {
		memset(&w[t], 0, sizeof(w[t]));
		w[t].s = s;
		w[t].t = t;
		if (pthread_create(&w[t].thread, NULL, work, &w[t]) != 0) {
			perror("pthread_create");
			exit(2);
		}
	}
	for (int t = 0; t < THREADS; t++) {
		pthread_join(w[t].thread, NULL);
		printf("%s: thread %d: returned %#" PRIx64 ", memory %#" PRIx64 "\n",
		       label, t, w[t].sum, w[t].stored);
		for (int id = 1; id < SITE_IDS; id++)
			expect[id] += w[t].nulls[id];
	}
	/* Site 7 has no call in its null block: not counted by record.c. */
	for (int id = 1; id < 7; id++) {
		unsigned long got = s->count(id) - before[id];

		printf("%s: site %d: %lu null calls, null block ran %lu times\n",
		       label, id, expect[id], got);
		bad |= got != expect[id];
	}
	fflush(stdout);
	return bad;
}

#ifndef DRIVER_DL

int main(int argc, char **argv)
{
	static const struct sites s = {
		site_load_i32, site_load_i8, site_load_i64_off, site_store_i32,
		site_rmw_add_i32, site_store_i64_off, site_load_nocall, site_null_count,
	};

	if (argc != 2 || strcmp(argv[1], "run") != 0) {
		fprintf(stderr, "usage: %s run\n", argv[0]);
		return 2;
	}
	return run_pattern("linked", &s);
}

#else

static void *sym(void *h, const char *name)
{
	void *p = dlsym(h, name);

	if (!p) {
		fprintf(stderr, "dlsym %s: %s\n", name, dlerror());
		exit(2);
	}
	return p;
}

static void *load(const char *path, struct sites *s)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		exit(2);
	}
	s->load_i32 = (int (*)(int *))sym(h, "site_load_i32");
	s->load_i8 = (int (*)(uint8_t *))sym(h, "site_load_i8");
	s->load_i64_off = (int64_t (*)(int64_t *))sym(h, "site_load_i64_off");
	s->store_i32 = (void (*)(int *, int))sym(h, "site_store_i32");
	s->rmw_add_i32 = (void (*)(int *, int))sym(h, "site_rmw_add_i32");
	s->store_i64_off = (void (*)(int64_t *, int64_t))sym(h, "site_store_i64_off");
	s->load_nocall = (int (*)(int *))sym(h, "site_load_nocall");
	s->count = (unsigned long (*)(int))sym(h, "site_null_count");
	return h;
}

struct span {
	uintptr_t addr;		/* an address inside the module */
	uintptr_t lo, hi;	/* all its PT_LOAD segments, page-aligned */
	uintptr_t xlo, xhi;	/* its executable segment */
	int found;
};

static int find_span(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct span *sp = arg;
	uintptr_t lo = UINTPTR_MAX, hi = 0, xlo = 0, xhi = 0;
	int mine = 0;
	long pg = sysconf(_SC_PAGESIZE);

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t a, b;

		if (ph->p_type != PT_LOAD)
			continue;
		a = (info->dlpi_addr + ph->p_vaddr) & ~(uintptr_t)(pg - 1);
		b = (info->dlpi_addr + ph->p_vaddr + ph->p_memsz + pg - 1) & ~(uintptr_t)(pg - 1);
		lo = a < lo ? a : lo;
		hi = b > hi ? b : hi;
		if (sp->addr >= a && sp->addr < b)
			mine = 1;
		if (ph->p_flags & PF_X) {
			xlo = a;
			xhi = b;
		}
	}
	if (!mine)
		return 0;
	sp->lo = lo;
	sp->hi = hi;
	sp->xlo = xlo;
	sp->xhi = xhi;
	sp->found = 1;
	return 1;
}

static struct span span_of(void *fn)
{
	struct span sp = { .addr = (uintptr_t)fn };

	dl_iterate_phdr(find_span, &sp);
	return sp;
}

static int reopen(const char *a, const char *b)
{
	struct sites sa, sb, sa2;
	void *ha, *hb, *ha2, *hold;
	struct span old, now;
	int bad;

	ha = load(a, &sa);
	bad = run_pattern("A", &sa);
	old = span_of((void *)sa.load_i32);
	if (!old.found) {
		fprintf(stderr, "A is not in dl_iterate_phdr\n");
		return 2;
	}
	if (dlclose(ha) != 0) {
		fprintf(stderr, "dlclose: %s\n", dlerror());
		return 2;
	}
	printf("A unloaded: %s\n", span_of((void *)sa.load_i32).found ? "no" : "yes");

	/* Keep A's old range busy so that it cannot be loaded there again. */
	hold = mmap((void *)old.lo, old.hi - old.lo, PROT_NONE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (hold == MAP_FAILED) {
		perror("mmap over A's old range");
		return 2;
	}

	hb = load(b, &sb);
	bad |= run_pattern("B", &sb);
	ha2 = load(a, &sa2);
	now = span_of((void *)sa2.load_i32);
	printf("A reloaded at another address: %s\n",
	       now.found && (now.hi <= old.lo || now.lo >= old.hi) ? "yes" : "no");
	bad |= run_pattern("A again", &sa2);
	bad |= run_pattern("B again", &sb);
	dlclose(hb);
	bad |= run_pattern("A after B unloaded", &sa2);
	dlclose(ha2);
	munmap(hold, old.hi - old.lo);
	return bad;
}

static int stale(const char *a)
{
	struct sites s;
	struct span sp;
	void *h, *code, *copy;
	size_t len;

	h = load(a, &s);
	printf("before dlclose: %d\n", s.load_nocall(NULL));
	fflush(stdout);
	sp = span_of((void *)s.load_nocall);
	if (!sp.found || !sp.xlo) {
		fprintf(stderr, "no executable segment\n");
		return 2;
	}
	len = sp.xhi - sp.xlo;
	code = malloc(len);
	if (!code)
		return 2;
	memcpy(code, (void *)sp.xlo, len);
	dlclose(h);
	if (span_of((void *)s.load_nocall).found) {
		fprintf(stderr, "dlclose did not unload the library\n");
		return 2;
	}
	copy = mmap((void *)sp.xlo, len, PROT_READ | PROT_WRITE | PROT_EXEC,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (copy == MAP_FAILED) {
		perror("mmap at the old text");
		return 2;
	}
	memcpy(copy, code, len);
	printf("calling the copy at the old address\n");
	fflush(stdout);
	/* Must fault, unclaimed: the module's sites went with dlclose. */
	printf("the copy returned %d\n", s.load_nocall(NULL));
	return 0;
}

int main(int argc, char **argv)
{
	struct sites s;

	if (argc == 3 && !strcmp(argv[1], "dlopen")) {
		void *h = load(argv[2], &s);
		int bad = run_pattern("dlopen", &s);

		dlclose(h);
		return bad;
	}
	if (argc == 4 && !strcmp(argv[1], "reopen"))
		return reopen(argv[2], argv[3]);
	if (argc == 3 && !strcmp(argv[1], "stale"))
		return stale(argv[2]);
	fprintf(stderr, "usage: %s dlopen LIB | reopen LIB_A LIB_B | stale LIB\n", argv[0]);
	return 2;
}

#endif
