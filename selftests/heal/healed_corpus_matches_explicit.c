// SPDX-License-Identifier: MIT
/*
 * healed_corpus_matches_explicit EXPLICIT [REPS]: every implicit-check site
 * of the corpus (selftests/progs/nullchecks.ll and mixed.ll, and shapes.ll
 * here), healed, computes what the explicit checks compute, and its
 * failures cost no signal.
 *
 * This program is the corpus harness (corpus.c) over the IR compiled with
 * -enable-implicit-null-checks; EXPLICIT is the same harness over the IR
 * compiled without (corpus_explicit).  The harness calls every function
 * with valid pointers once and with each null case REPS times (default
 * 20), and prints every result.  Three passes, each printing exactly what
 * EXPLICIT prints:
 *   1. as compiled: each failed check is a fault, claimed by faultline
 *      (fl_stats_get) and seen by the kernel (kfaults: a page fault at the
 *      site's PC, in the null page): the two counts must be equal, and
 *      not zero;
 *   2. every registered site healed (fl_site_for_each lists them; each
 *      fl_site_heal must succeed): no claimed fault, no kernel fault at a
 *      site nor anywhere in the null page, and the sites' healed failures
 *      (fl_site_heal_info) grow by pass 1's failures; every site failed at
 *      least once;
 *   3. every site unhealed: the faults come back, as many as in pass 1.
 */
#include <dlfcn.h>
#include <stdio.h>

#include "common.h"
#include "corpus.h"

/* Runs the harness; returns its output (malloc'd). */
static char *run_pass(int reps)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	t_check(f != NULL, "open_memstream");
	corpus_run(f, reps);
	t_check(fclose(f) == 0, "fclose");
	return buf;
}

/* EXPLICIT's output (malloc'd); fails the test if it does not exit 0. */
static char *run_explicit(const char *path, int reps)
{
	char cmd[4096], *buf = NULL;
	size_t len = 0, n;
	char chunk[65536];
	FILE *p, *f = open_memstream(&buf, &len);
	int st;

	snprintf(cmd, sizeof(cmd), "'%s' %d", path, reps);
	p = popen(cmd, "r");
	t_check(p != NULL && f != NULL, "popen %s", cmd);
	while ((n = fread(chunk, 1, sizeof(chunk), p)) > 0)
		fwrite(chunk, 1, n, f);
	st = pclose(p);
	fclose(f);
	t_check(st == 0, "%s: exit status 0x%x", cmd, st);
	return buf;
}

/* Fails with the first line where got differs from want. */
static void same_output(const char *pass, const char *got, const char *want)
{
	int line = 1;
	const char *g = got, *w = want;

	if (strcmp(got, want) == 0)
		return;
	while (*g && *g == *w) {
		if (*g == '\n') {
			line++;
			got = g + 1;
			want = w + 1;
		}
		g++;
		w++;
	}
	t_fail("%s: line %d differs from the explicit build's:\n  implicit: %.*s\n  explicit: %.*s",
	       pass, line, (int)strcspn(got, "\n"), got, (int)strcspn(want, "\n"), want);
}

static uint64_t healed_failures(const struct t_sites *t, uint64_t *per)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < t->n; i++) {
		per[i] = t_heal_info(t->pc[i]).healed_failures;
		sum += per[i];
	}
	return sum;
}

static void fn_name(uint64_t pc, char *out, size_t len)
{
	Dl_info di;

	if (dladdr((void *)(uintptr_t)pc, &di) && di.dli_sname)
		snprintf(out, len, "%s+%#llx", di.dli_sname,
			 (unsigned long long)(pc - (uint64_t)(uintptr_t)di.dli_saddr));
	else
		snprintf(out, len, "0x%llx", (unsigned long long)pc);
}

int main(int argc, char **argv)
{
	int reps = argc > 2 ? atoi(argv[2]) : 20;
	static uint64_t before[T_MAX_SITES], after[T_MAX_SITES];
	struct t_sites t;
	struct kfaults k;
	struct kfaults_count kc;
	const char *why = NULL;
	bool kernel;
	char *want, *got;
	uint64_t c0, failures, healed_sum;
	int tactics[5] = { 0 };
	static const char *const tactic_names[] = { "B1", "B2", "T1", "T3", "?" };

	t_start(argv);
	t_check(argc > 1, "usage: %s EXPLICIT [REPS]", argv[0]);
	want = run_explicit(argv[1], reps);
	t_init_discovering();
	t_enable();
	t_sites_get(&t);
	t_check(t.n >= 30, "only %zu registered sites: the corpus was not discovered", t.n);
	kernel = kfaults_open(&k, &why) == 0;
	if (!kernel)
		printf("%s: the kernel's count is not checked: %s (%s)\n", t_name, why,
		       strerror(errno));

	/* 1. As compiled. */
	if (kernel)
		kfaults_count(&k, &t, &kc);
	c0 = t_claimed();
	got = run_pass(reps);
	failures = t_claimed() - c0;
	same_output("as compiled", got, want);
	free(got);
	t_check(failures > 0, "as compiled, no check failed: the null cases do not reach the sites");
	if (kernel) {
		kfaults_count(&k, &t, &kc);
		t_check(kc.at_sites == failures,
			"as compiled: faultline claimed %llu faults, the kernel saw %llu at the sites",
			(unsigned long long)failures, (unsigned long long)kc.at_sites);
	}
	printf("%s: %zu sites; as compiled, %llu failed checks, each a fault (faultline: %llu, "
	       "the kernel: %s%llu)\n", t_name, t.n, (unsigned long long)failures,
	       (unsigned long long)failures, kernel ? "" : "not asked, ",
	       kernel ? (unsigned long long)kc.at_sites : 0ull);

	/* 2. Healed. */
	for (size_t i = 0; i < t.n; i++) {
		struct fl_heal_info info;
		int x;

		t_heal(t.pc[i]);
		info = t_heal_info(t.pc[i]);
		t_check(info.state == FL_HEAL_HEALED, "site 0x%llx: state %d after fl_site_heal",
			(unsigned long long)t.pc[i], info.state);
		for (x = 0; x < 4 && strcmp(info.tactic, tactic_names[x]) != 0; x++)
			;
		tactics[x]++;
	}
	printf("%s: healed every site: B1 %d, B2 %d, T1 %d, T3 %d, other %d\n", t_name,
	       tactics[0], tactics[1], tactics[2], tactics[3], tactics[4]);
	healed_sum = healed_failures(&t, before);
	c0 = t_claimed();
	got = run_pass(reps);
	same_output("healed", got, want);
	free(got);
	t_check(t_claimed() == c0, "healed: faultline claimed %llu faults",
		(unsigned long long)(t_claimed() - c0));
	if (kernel) {
		kfaults_count(&k, &t, &kc);
		t_check(kc.at_sites == 0 && kc.null_page == 0,
			"healed: the kernel saw %llu faults at the sites, %llu in the null page",
			(unsigned long long)kc.at_sites, (unsigned long long)kc.null_page);
	}
	healed_sum = healed_failures(&t, after) - healed_sum;
	t_check(healed_sum == failures, "healed: %llu healed failures, %llu checks failed",
		(unsigned long long)healed_sum, (unsigned long long)failures);
	for (size_t i = 0; i < t.n; i++) {
		char name[128];

		fn_name(t.pc[i], name, sizeof(name));
		t_check(after[i] > before[i], "healed: the site at %s never failed: its stub's null "
			"path is not tested", name);
	}
	printf("%s: healed, the same output; %llu failures, all healed (no claimed fault, the "
	       "kernel: %s)\n", t_name, (unsigned long long)healed_sum,
	       kernel ? "no fault at a site nor in the null page" : "not asked");

	/* 3. Unhealed. */
	for (size_t i = 0; i < t.n; i++)
		t_unheal(t.pc[i]);
	c0 = t_claimed();
	got = run_pass(reps);
	same_output("unhealed", got, want);
	free(got);
	t_check(t_claimed() - c0 == failures, "unhealed: %llu faults claimed, %llu expected",
		(unsigned long long)(t_claimed() - c0), (unsigned long long)failures);
	if (kernel) {
		kfaults_count(&k, &t, &kc);
		t_check(kc.at_sites == failures, "unhealed: the kernel saw %llu faults at the sites",
			(unsigned long long)kc.at_sites);
	}
	printf("PASS %s\n", t_name);
	return 0;
}
