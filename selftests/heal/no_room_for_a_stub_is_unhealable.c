// SPDX-License-Identifier: MIT
/*
 * no_room_for_a_stub_is_unhealable EXPLICIT: with no free page within
 * reach of the code, no site can get a stub: each fl_site_heal says
 * -EOPNOTSUPP, fl_site_heal_info says FL_HEAL_UNHEALABLE with a reason,
 * the heal callback is told the same, nothing is changed, and the program
 * goes on with its implicit checks (the corpus harness prints what
 * EXPLICIT, corpus_explicit, prints; each failure a claimed fault).  Once
 * the room is given back, the sites heal, with their stubs within reach.
 *
 * The room is taken as an address-space squatter would: every hole of
 * /proc/self/maps within 2 GiB (and a page) of the program's code, the
 * reach of every tactic's jump, is mapped PROT_NONE with
 * MAP_FIXED_NOREPLACE.  Built twice: -no-pie (the code at 0x400000: the
 * low end of the window is the bottom of the address space) and -pie
 * (no_room_for_a_stub_is_unhealable_pie: the code where the kernel put it).
 */
#include "common.h"

#define REACH (1ull << 31)

static struct {
	int events, unhealable, healed;
	uint64_t pc;
	int state;
	char reason[112];
} told;

static void on_heal(const struct fl_heal_event *ev, void *ctx)
{
	(void)ctx;
	told.events++;
	told.pc = ev->faulting_pc;
	told.state = ev->state;
	told.unhealable += ev->state == FL_HEAL_UNHEALABLE;
	told.healed += ev->state == FL_HEAL_HEALED;
	snprintf(told.reason, sizeof(told.reason), "%s",
		 ev->state == FL_HEAL_UNHEALABLE && ev->reason ? ev->reason : "");
}

/* The squatter's mappings. */
static struct { uint64_t at, len; } taken[512];
static size_t ntaken;

/* Maps every hole in [lo, hi) PROT_NONE; returns the bytes taken. */
static uint64_t take_holes(uint64_t lo, uint64_t hi)
{
	uint64_t s, e, sum = 0;
	static uint64_t starts[4096], ends[4096];
	size_t n = 0;
	FILE *f = fopen("/proc/self/maps", "r");

	t_check(f != NULL, "/proc/self/maps");
	while (n < 4096 && fscanf(f, "%lx-%lx%*[^\n]", &s, &e) == 2) {
		starts[n] = s;
		ends[n++] = e;
	}
	fclose(f);
	for (size_t i = 0; i <= n; i++) {
		uint64_t hs = i ? ends[i - 1] : 0x10000, he = i < n ? starts[i] : hi;

		if (hs < lo)
			hs = lo;
		if (he > hi)
			he = hi;
		if (hs >= he)
			continue;
		t_check(ntaken < 512, "too many holes");
		if (mmap((void *)(uintptr_t)hs, he - hs, PROT_NONE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0) !=
		    (void *)(uintptr_t)hs)
			t_fail("mmap of the hole 0x%lx-0x%lx: %s", hs, he, strerror(errno));
		taken[ntaken].at = hs;
		taken[ntaken++].len = he - hs;
		sum += he - hs;
	}
	return sum;
}

int main(int argc, char **argv)
{
	struct t_sites t;
	uint64_t lo, hi, bytes, c0, failures;
	char *want, *got, name[128];
	int healed = 0, across = 0;

	t_start(argv);
	t_check(argc > 1, "usage: %s EXPLICIT", argv[0]);
	want = t_explicit_output(argv[1], 2);
	t_init_discovering();
	t_enable();
	fl_set_heal_callback(on_heal, NULL);
	t_sites_get(&t);
	t_check(t.n >= 30, "only %zu sites registered", t.n);
	c0 = t_claimed();
	got = t_corpus_output(2);
	failures = t_claimed() - c0;
	t_check(strcmp(got, want) == 0, "as compiled, the output differs from the explicit build's");
	free(got);

	/* Every page a jump from any site could reach, and a page more. */
	lo = t.pc[0] > REACH + 0x10000 + 4096 ? t.pc[0] - REACH - 4096 : 0x10000;
	hi = t.pc[t.n - 1] + REACH + 4096;
	lo &= ~4095ull;
	hi = (hi + 4095) & ~4095ull;
	bytes = take_holes(lo, hi);
	printf("%s: sites 0x%llx..0x%llx; took %zu holes (%.2f GiB) in 0x%llx..0x%llx\n", t_name,
	       (unsigned long long)t.pc[0], (unsigned long long)t.pc[t.n - 1], ntaken,
	       (double)bytes / (1 << 30), (unsigned long long)lo, (unsigned long long)hi);

	for (size_t i = 0; i < t.n; i++) {
		struct fl_diag d = { 0 };
		uint8_t before[16];
		struct fl_heal_info info;
		int err, events = told.events;

		t_fn_name(t.pc[i], name, sizeof(name));
		memcpy(before, (const void *)(uintptr_t)t.pc[i], sizeof(before));
		err = fl_site_heal((const void *)(uintptr_t)t.pc[i], &d);
		info = t_heal_info(t.pc[i]);
		t_check(err == -EOPNOTSUPP, "%s: fl_site_heal with no room: %d %s", name, err, d.msg);
		t_check(info.state == FL_HEAL_UNHEALABLE && info.reason[0] && !info.stub,
			"%s: fl_site_heal_info: state %d, reason \"%s\"", name, info.state,
			info.reason);
		t_check(told.events == events + 1 && told.pc == t.pc[i] &&
			told.state == FL_HEAL_UNHEALABLE && strcmp(told.reason, info.reason) == 0,
			"%s: the callback was told %d events, the last state %d reason \"%s\"", name,
			told.events - events, told.state, told.reason);
		t_check(memcmp(before, (const void *)(uintptr_t)t.pc[i], sizeof(before)) == 0,
			"%s: the code changed", name);
		if (i == 0)
			printf("%s: %s: \"%s\"\n", t_name, name, d.msg);
	}
	c0 = t_claimed();
	got = t_corpus_output(2);
	t_check(strcmp(got, want) == 0, "unhealable, the output differs from the explicit build's");
	free(got);
	t_check(t_claimed() - c0 == failures, "unhealable: %llu faults claimed, %llu as compiled",
		(unsigned long long)(t_claimed() - c0), (unsigned long long)failures);
	printf("%s: %zu sites unhealable, each reported (-EOPNOTSUPP, the state, the callback); "
	       "the implicit checks work: %llu failures, each a claimed fault\n", t_name, t.n,
	       (unsigned long long)failures);

	/*
	 * The room back: the sites heal, their stubs within reach.  The text
	 * is listed as a mapping per page (MADV_DONTDUMP on every other page
	 * keeps the kernel from merging them), as writing a page of it can
	 * leave it: a site whose function begins on an earlier page must
	 * heal all the same.
	 */
	for (size_t i = 0; i < ntaken; i++)
		t_check(munmap((void *)(uintptr_t)taken[i].at, taken[i].len) == 0, "munmap");
	for (uint64_t p = t.pc[0] & ~4095ull; p <= t.pc[t.n - 1]; p += 8192)
		t_check(madvise((void *)(uintptr_t)p, 4096, MADV_DONTDUMP) == 0, "madvise: %s",
			strerror(errno));
	for (size_t i = 0; i < t.n; i++) {
		Dl_info di;

		if (dladdr((void *)(uintptr_t)t.pc[i], &di) && di.dli_saddr &&
		    ((uint64_t)(uintptr_t)di.dli_saddr & ~4095ull) != (t.pc[i] & ~4095ull))
			across++;
	}
	t_check(across > 0, "no site's function begins on an earlier page");
	for (size_t i = 0; i < t.n; i++) {
		struct fl_diag d = { 0 };
		int err = fl_site_heal((const void *)(uintptr_t)t.pc[i], &d);
		struct fl_heal_info info = t_heal_info(t.pc[i]);
		int64_t dist;

		t_fn_name(t.pc[i], name, sizeof(name));
		if (err == -EOPNOTSUPP)
			continue;	/* several's: a neighbouring site, see healed_corpus_matches_explicit */
		t_check(err == 0 && info.state == FL_HEAL_HEALED, "%s: with room: %d %s", name, err,
			d.msg);
		dist = (int64_t)(info.stub - t.pc[i]);
		t_check(dist > -(int64_t)REACH && dist < (int64_t)REACH,
			"%s: its stub at 0x%llx is out of reach", name, (unsigned long long)info.stub);
		healed++;
	}
	t_check(healed * 10 >= (int)t.n * 9 && told.healed == healed,
		"with room, %d of %zu sites healed (the callback told of %d)", healed, t.n,
		told.healed);
	got = t_corpus_output(2);
	t_check(strcmp(got, want) == 0, "healed, the output differs from the explicit build's");
	free(got);
	printf("%s: with the room back and the text a mapping per page, %d sites healed (%d "
	       "beyond their function's page), the stubs within reach, the same output\n", t_name,
	       healed, across);
	free(want);
	printf("PASS %s\n", t_name);
	return 0;
}
