// SPDX-License-Identifier: MIT
/*
 * unheal_restores_the_compiled_bytes: after every site is healed and
 * unhealed, the program's code is byte for byte as compiled (the whole
 * executable segment, so an evicted neighbour and a pinned byte count too),
 * every stub's page is unmapped, and the same again over many rounds: no
 * stub page and no mapping left behind.
 *
 * The code is the corpus (nullchecks.ll, mixed.ll, shapes.ll, -no-pie):
 * heal all (the code must differ), unheal all (as compiled again; then
 * one call that frees the stubs left for later, see reap), check
 * each healed site's stub address: its page is no longer mapped (msync
 * says ENOMEM), as long as no other site's stub is still live there.
 * Then 200 rounds of the same: no anonymous executable mapping is left, and the corpus still prints what it printed as compiled.
 */
#include "common.h"

/*
 * Anonymous executable mappings: stub pages (and a JIT's, which this
 * program has none of).  Not all mappings: patching splits the text
 * mapping where it made pages private, for good.
 */
static int mappings(void)
{
	char line[512], perms[5], path[256];
	int n = 0;
	FILE *f = fopen("/proc/self/maps", "r");

	while (f && fgets(line, sizeof(line), f))
		n += sscanf(line, "%*s %4s %*s %*s %*s %255s", perms, path) == 1 && perms[2] == 'x';
	if (f)
		fclose(f);
	return n;
}

__attribute__((noinline)) static bool mapped(uint64_t addr)
{
	return msync((void *)(uintptr_t)(addr & ~4095ull), 4096, MS_ASYNC) == 0 || errno != ENOMEM;
}

/* The executable mapping that holds pc. */
static void text_of(uint64_t pc, uint64_t *start, uint64_t *end)
{
	unsigned long s, e;
	char perms[5];
	FILE *f = fopen("/proc/self/maps", "r");

	*start = *end = 0;
	while (f && fscanf(f, "%lx-%lx %4s%*[^\n]", &s, &e, perms) == 3)
		if (pc >= s && pc < e && perms[2] == 'x') {
			*start = s;
			*end = e;
		}
	if (f)
		fclose(f);
	t_check(*start, "no executable mapping holds 0x%llx", (unsigned long long)pc);
}


/*
 * The stub's address, kept out of main's frame: fl_site_unheal frees a
 * stub only when no word of any thread's stack points into it, the
 * caller's own included (patch.c's conservative scan), so a copy of
 * fl_site_heal_info's answer in main's frame would keep the stub until a
 * later call.  This frame is gone (below the stack pointer) by then.
 */
__attribute__((noinline)) static void note_stub(uint64_t *out, uint64_t pc)
{
	struct fl_heal_info info = t_heal_info(pc);

	*out = info.stub;
	memset(&info, 0, sizeof(info));
	__asm__ volatile("" : : "r"(&info) : "memory");
}

/*
 * fl_site_unheal frees a stub once a handshake proves no thread in it nor
 * any stack word pointing into it, the unhealing thread's own stack
 * included.  In the sanitizer build the library's own frames of that very
 * unheal hold the stub's address (a spill), so the stub stays a zombie,
 * "freed by a later heal or unheal" (fl_site_heal(3)); and the stale
 * words of earlier calls in the frames of that later call can keep it
 * too.  So: the stack below scrubbed, then a heal of the last site (it
 * frees the zombies first), then its unheal.  The last site's own stub is not checked.
 */
static uint64_t reaper, reaper_stub;

/*
 * Zeroes the stack below this frame: the library's frames of the call
 * that reaps will lie on it, and their slots not yet written would
 * otherwise hold what earlier calls left there (the stub addresses among
 * it), which the conservative scan takes for live words.
 */
__attribute__((noinline)) static void scrub_stack(void)
{
	volatile uint8_t junk[64 * 1024];

	memset((void *)junk, 0, sizeof(junk));
	__asm__ volatile("" : : "r"(junk) : "memory");
}

static void reap(const struct t_sites *t)
{
	reaper = t->pc[t->n - 1];
	reaper_stub = 0;
	scrub_stack();
	if (fl_site_heal((const void *)(uintptr_t)reaper, NULL) == 0) {
		note_stub(&reaper_stub, reaper);
		t_unheal(reaper);
	}
}

/* 1 if the reaper's own stub page is still mapped (a zombie), else 0. */
static int reaper_left(void)
{
	return reaper_stub && mapped(reaper_stub);
}

int main(int argc, char **argv)
{
	static uint64_t stubs[T_MAX_SITES];
	static bool healed[T_MAX_SITES];
	struct t_sites t;
	uint64_t ts, te;
	uint8_t *compiled;
	char *want, *got;
	int rounds = argc > 1 ? atoi(argv[1]) : 200, maps0, nhealed = 0, changed = 0;

	t_start(argv);
	t_init_discovering();
	t_enable();
	t_sites_get(&t);
	text_of(t.pc[0], &ts, &te);
	t_check(t.pc[t.n - 1] < te, "the sites span executable mappings");
	compiled = malloc(te - ts);
	t_check(compiled != NULL, "malloc");
	memcpy(compiled, (const void *)(uintptr_t)ts, te - ts);
	want = t_corpus_output(1);
	maps0 = mappings();

	for (size_t i = 0; i < t.n; i++) {
		struct fl_diag d = { 0 };
		int err = fl_site_heal((const void *)(uintptr_t)t.pc[i], &d);

		if (err == -EOPNOTSUPP)
			continue;
		t_check(err == 0, "fl_site_heal(0x%llx): %d %s", (unsigned long long)t.pc[i], err, d.msg);
		healed[i] = true;
		note_stub(&stubs[i], t.pc[i]);
		t_check(stubs[i] && mapped(stubs[i]), "site 0x%llx: its stub 0x%llx is not mapped",
			(unsigned long long)t.pc[i], (unsigned long long)stubs[i]);
		nhealed++;
	}
	for (uint64_t a = ts; a < te; a++)
		changed += ((const uint8_t *)(uintptr_t)a)[0] != compiled[a - ts];
	t_check(changed >= nhealed, "%d sites healed, only %d bytes of code changed", nhealed,
		changed);
	got = t_corpus_output(1);
	t_check(strcmp(got, want) == 0, "healed, the corpus prints something else");
	free(got);
	for (size_t i = 0; i < t.n; i++)
		if (healed[i])
			t_unheal(t.pc[i]);
	reap(&t);
	for (uint64_t a = ts; a < te; a++)
		t_check(((const uint8_t *)(uintptr_t)a)[0] == compiled[a - ts],
			"unhealed, the byte at 0x%llx is 0x%02x, compiled 0x%02x",
			(unsigned long long)a, ((const uint8_t *)(uintptr_t)a)[0], compiled[a - ts]);
	for (size_t i = 0; i < t.n; i++)
		t_check(!healed[i] || t.pc[i] == reaper || !mapped(stubs[i]),
			"unhealed, the stub page of 0x%llx (0x%llx) is still mapped",
			(unsigned long long)t.pc[i], (unsigned long long)stubs[i]);
	t_check(mappings() == maps0 + reaper_left(), "unhealed, %d anonymous executable mappings, %d before healing", mappings(), maps0);
	printf("%s: %d sites healed (%d bytes of code changed), unhealed: the %llu bytes of code "
	       "as compiled, every stub page unmapped\n", t_name, nhealed, changed,
	       (unsigned long long)(te - ts));

	for (int r = 0; r < rounds; r++) {
		for (size_t i = 0; i < t.n; i++)
			if (healed[i])
				t_heal(t.pc[i]);
		for (size_t i = 0; i < t.n; i++)
			if (healed[i])
				t_unheal(t.pc[i]);
	}
	reap(&t);
	t_check(memcmp(compiled, (const void *)(uintptr_t)ts, te - ts) == 0,
		"after %d rounds, the code is not as compiled", rounds);
	t_check(mappings() == maps0 + reaper_left(), "after %d rounds, %d anonymous executable mappings, %d before", rounds, mappings(),
		maps0);
	got = t_corpus_output(1);
	t_check(strcmp(got, want) == 0, "after the rounds, the corpus prints something else");
	free(got);
	printf("%s: %d rounds of healing and unhealing all: the same code, no mapping left\n",
	       t_name, rounds);
	free(want);
	free(compiled);
	printf("PASS %s\n", t_name);
	return 0;
}
