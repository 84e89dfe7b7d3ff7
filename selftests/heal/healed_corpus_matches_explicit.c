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
 *   2. every registered site healed (fl_site_for_each lists them): each
 *      fl_site_heal must succeed, or say -EOPNOTSUPP with the site
 *      FL_HEAL_UNHEALABLE and a reason, for at most a tenth of them (in
 *      the -no-pie layout: several's second and third checks, 3 and 2
 *      bytes each followed by the next check, whose bytes a punned jump
 *      may not read, and no neighbour of 6 bytes in reach).  Per site, against pass 1's
 *      failures there (its counter): a healed site's healed failures
 *      (fl_site_heal_info) grow by as many, its counter not at all, and
 *      the kernel sees no fault at it; an unhealable one traps as before
 *      (its counter, the kernel's count).  No fault in the null page
 *      anywhere else.  Every site failed at least once;
 *   3. every site unhealed: the faults come back, as many as in pass 1.
 * With FAULTLINE_HEAL_TACTICS set (run.sh: REL alone, T2 alone), every
 * site healed must be healed by one of those, at least one is, and any
 * number may be unhealable; a site healed by relocation may be healed
 * already when its turn comes (its function's other site was), and
 * unhealing one undoes the relocation for all of them.
 */
#include "common.h"

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

/* Fills per[] with each site's healed failures; returns their sum. */
static uint64_t healed_failures(const struct t_sites *t, uint64_t *per)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < t->n; i++) {
		per[i] = t_heal_info(t->pc[i]).healed_failures;
		sum += per[i];
	}
	return sum;
}

int main(int argc, char **argv)
{
	int reps = argc > 2 ? atoi(argv[2]) : 20;
	static uint64_t hf0[T_MAX_SITES], hf1[T_MAX_SITES];
	static bool unhealable[T_MAX_SITES];
	struct t_sites t, t1, t2;
	struct kfaults k;
	struct kfaults_count kc;
	const char *why = NULL;
	bool kernel;
	char *want, *got, name[128];
	uint64_t c0, failures, healed_sum, trapped_sum = 0, healed_fail_sum = 0;
	int tactics[7] = { 0 }, n_unhealable = 0;
	static const char *const tactic_names[] = { "B1", "B2", "T1", "T3", "T2", "REL", "?" };
	const char *only = getenv("FAULTLINE_HEAL_TACTICS");

	t_start(argv);
	t_check(argc > 1, "usage: %s EXPLICIT [REPS]", argv[0]);
	want = t_explicit_output(argv[1], reps);
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
	got = t_corpus_output(reps);
	failures = t_claimed() - c0;
	t_sites_get(&t1);
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
		struct fl_diag d = { 0 };
		struct fl_heal_info info;
		int err = fl_site_heal((const void *)(uintptr_t)t.pc[i], &d), x;

		t_fn_name(t.pc[i], name, sizeof(name));
		info = t_heal_info(t.pc[i]);
		if (err == -EOPNOTSUPP) {
			t_check(info.state == FL_HEAL_UNHEALABLE && info.reason[0],
				"%s: -EOPNOTSUPP, but fl_site_heal_info says state %d, reason \"%s\"",
				name, info.state, info.reason);
			printf("%s: %s is unhealable: %s\n", t_name, name, info.reason);
			unhealable[i] = true;
			n_unhealable++;
			continue;
		}
		t_check(err == 0, "fl_site_heal(%s): %d %s", name, err, d.msg);
		t_check(info.state == FL_HEAL_HEALED, "%s: state %d after fl_site_heal", name,
			info.state);
		for (x = 0; x < 6 && strcmp(info.tactic, tactic_names[x]) != 0; x++)
			;
		t_check(!only || (x < 6 && strstr(only, tactic_names[x])),
			"%s healed by %s, not by FAULTLINE_HEAL_TACTICS=%s", name, info.tactic, only);
		tactics[x]++;
	}
	printf("%s: healed %zu sites: B1 %d, B2 %d, T1 %d, T3 %d, T2 %d, REL %d, other %d; "
	       "%d unhealable%s%s\n", t_name, t.n - (size_t)n_unhealable, tactics[0], tactics[1],
	       tactics[2], tactics[3], tactics[4], tactics[5], tactics[6], n_unhealable,
	       only ? ", with FAULTLINE_HEAL_TACTICS=" : "", only ? only : "");
	if (only)
		t_check((size_t)n_unhealable < t.n, "no site healed with FAULTLINE_HEAL_TACTICS=%s",
			only);
	else
		t_check((size_t)n_unhealable * 10 <= t.n, "%d of %zu sites unhealable", n_unhealable,
			t.n);
	healed_failures(&t, hf0);
	c0 = t_claimed();
	got = t_corpus_output(reps);
	t_sites_get(&t2);
	same_output("healed", got, want);
	free(got);
	healed_sum = healed_failures(&t, hf1);
	if (kernel)
		kfaults_count(&k, &t, &kc);
	for (size_t i = 0; i < t.n; i++) {
		uint64_t f = t1.faults[i] - t.faults[i];	/* pass 1's failures there */
		uint64_t trapped = t2.faults[i] - t1.faults[i], healed = hf1[i] - hf0[i];

		t_fn_name(t.pc[i], name, sizeof(name));
		t_check(f > 0, "the site at %s never failed: its healing is not tested", name);
		if (unhealable[i]) {
			t_check(trapped == f && healed == 0 && (!kernel || kc.at[i] == f),
				"unhealable %s: %llu failures, %llu trapped, %llu healed, %llu kernel "
				"faults", name, (unsigned long long)f, (unsigned long long)trapped,
				(unsigned long long)healed, kernel ? (unsigned long long)kc.at[i] : 0ull);
			trapped_sum += trapped;
			continue;
		}
		t_check(trapped == 0 && healed == f && (!kernel || kc.at[i] == 0),
			"healed %s: %llu failures, %llu trapped, %llu healed, %llu kernel faults",
			name, (unsigned long long)f, (unsigned long long)trapped,
			(unsigned long long)healed, kernel ? (unsigned long long)kc.at[i] : 0ull);
		healed_fail_sum += healed;
	}
	t_check(t_claimed() - c0 == trapped_sum, "healed: faultline claimed %llu faults, %llu at "
		"unhealable sites", (unsigned long long)(t_claimed() - c0),
		(unsigned long long)trapped_sum);
	t_check(!kernel || kc.null_page == trapped_sum, "healed: the kernel saw %llu faults in the "
		"null page, %llu at unhealable sites", (unsigned long long)kc.null_page,
		(unsigned long long)trapped_sum);
	t_check(healed_fail_sum + trapped_sum == failures, "healed: %llu healed and %llu trapped "
		"failures, %llu checks failed", (unsigned long long)healed_fail_sum,
		(unsigned long long)trapped_sum, (unsigned long long)failures);
	(void)healed_sum;
	printf("%s: healed, the same output; of %llu failures %llu healed (no claimed fault, "
	       "the kernel: %s), %llu trapped at the unhealable sites\n", t_name,
	       (unsigned long long)failures, (unsigned long long)healed_fail_sum,
	       kernel ? "no fault there" : "not asked", (unsigned long long)trapped_sum);

	/* 3. Unhealed. */
	for (size_t i = 0; i < t.n; i++)
		if (!unhealable[i] && t_heal_info(t.pc[i]).state == FL_HEAL_HEALED)
			t_unheal(t.pc[i]);
	c0 = t_claimed();
	got = t_corpus_output(reps);
	same_output("unhealed", got, want);
	free(got);
	t_check(t_claimed() - c0 == failures, "unhealed: %llu faults claimed, %llu expected",
		(unsigned long long)(t_claimed() - c0), (unsigned long long)failures);
	if (kernel) {
		kfaults_count(&k, &t, &kc);
		t_check(kc.at_sites == failures, "unhealed: the kernel saw %llu faults at the sites",
			(unsigned long long)kc.at_sites);
	}
	free(want);
	printf("PASS %s\n", t_name);
	return 0;
}
