// SPDX-License-Identifier: MIT
/*
 * A module that goes away takes its heals with it (fl_site_heal(3)): a
 * shared object with implicit checks (nullchecks.ll, pic) is loaded, one
 * of its sites healed, the object closed and loaded again (at the same
 * address, as the loader does with nothing else mapped meanwhile).  The
 * site then starts as compiled: fl_site_heal_info says implicit, its
 * bytes are the file's, a null faults and reaches the handler, and
 * fl_site_heal heals it again for real (the bytes change, a null costs
 * no fault), fl_site_unheal gives the compiled bytes back.
 *   argv[1]: the shared object.
 */
#include <dlfcn.h>

#include "common.h"
#include "dispatch/dispatch.h"

static _Atomic unsigned long npes;

/* The objects' null path calls it (-rdynamic). */
void throw_npe(void);
void throw_npe(void)
{
	atomic_fetch_add(&npes, 1);
}

struct found {
	uint64_t lo, hi, pc;
};

static int first_in(const struct fl_site *s, void *ctx)
{
	struct found *f = ctx;

	if (s->faulting_pc >= f->lo && s->faulting_pc < f->hi && !f->pc)
		f->pc = s->faulting_pc;
	return 0;
}

static int state_of(uint64_t pc)
{
	struct fl_heal_info info = { .sz = sizeof(info) };
	int err = fl_site_heal_info((const void *)(uintptr_t)pc, &info);

	t_check(err == 0, "fl_site_heal_info(0x%llx): %d", (unsigned long long)pc, err);
	return info.state;
}

/* Loads the object; its load_i64 and the site in it. */
static void *load(const char *path, int64_t (**fn)(int64_t *), uint64_t *site)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	struct found f = { 0 };
	Dl_info di;

	t_check(h != NULL, "dlopen %s: %s", path, dlerror());
	*fn = (int64_t (*)(int64_t *))dlsym(h, "load_i64");
	t_check(*fn != NULL, "no load_i64 in %s", path);
	t_check(fl_refresh() >= 0, "fl_refresh");
	t_check(dladdr((void *)*fn, &di) != 0, "dladdr");
	f.lo = (uint64_t)(uintptr_t)*fn;
	f.hi = f.lo + 64;
	t_check(fl_site_for_each(first_in, &f) == 0, "fl_site_for_each");
	t_check(f.pc != 0, "no registered site in load_i64 of %s", path);
	*site = f.pc;
	return h;
}

static void calls_work(int64_t (*fn)(int64_t *), const char *when)
{
	int64_t v = 42;
	unsigned long before = atomic_load(&npes);

	t_check(fn(&v) == 42, "%s: load_i64(&42) is not 42", when);
	t_check(fn(NULL) == -1, "%s: load_i64(NULL) is not -1", when);
	t_check(atomic_load(&npes) == before + 1, "%s: the null did not reach throw_npe", when);
}

int main(int argc, char **argv)
{
	struct fl_diag d = { 0 };
	int64_t (*fn)(int64_t *);
	uint64_t site, site2;
	uint8_t compiled[16], now[16];
	void *h;
	int err;

	t_start(argv);
	t_check(argc == 2, "usage: %s SHARED_OBJECT", argv[0]);
	t_init_discovering();
	t_enable();

	h = load(argv[1], &fn, &site);
	memcpy(compiled, (void *)(uintptr_t)site, sizeof(compiled));
	calls_work(fn, "as loaded");
	err = fl_site_heal((const void *)(uintptr_t)site, &d);
	t_check(err == 0, "fl_site_heal: %d %s", err, d.msg);
	t_check(state_of(site) == FL_HEAL_HEALED, "healed: not FL_HEAL_HEALED");
	t_check(memcmp(compiled, (void *)(uintptr_t)site, sizeof(compiled)) != 0,
		"healed: the bytes did not change");
	calls_work(fn, "healed");

	t_check(fl_poked_has(site), "healed: the site is not among the addresses patched");
	t_check(dlclose(h) == 0, "dlclose: %s", dlerror());
	t_check(fl_refresh() == 1, "fl_refresh after dlclose: not one module gone");
	/* A trap there is the application's now, whatever is loaded there. */
	t_check(!fl_poked_has(site), "closed: the site is still among the addresses patched");
	h = load(argv[1], &fn, &site2);
	printf("  site at 0x%llx, then at 0x%llx after dlclose and dlopen\n",
	       (unsigned long long)site, (unsigned long long)site2);
	if (site2 != site)
		t_skip("the loader put the object elsewhere the second time: nothing to prove");
	t_check(state_of(site) == FL_HEAL_IMPLICIT, "loaded again: the site is not as compiled");
	memcpy(now, (void *)(uintptr_t)site, sizeof(now));
	t_check(memcmp(now, compiled, sizeof(now)) == 0, "loaded again: the bytes are not the file's");
	calls_work(fn, "loaded again");

	err = fl_site_heal((const void *)(uintptr_t)site, &d);
	t_check(err == 0, "fl_site_heal again: %d %s", err, d.msg);
	t_check(state_of(site) == FL_HEAL_HEALED, "healed again: not FL_HEAL_HEALED");
	t_check(memcmp(compiled, (void *)(uintptr_t)site, sizeof(compiled)) != 0,
		"healed again: the bytes did not change (a heal that changed nothing)");
	calls_work(fn, "healed again");
	err = fl_site_unheal((const void *)(uintptr_t)site, &d);
	t_check(err == 0, "fl_site_unheal: %d %s", err, d.msg);
	t_check(memcmp(compiled, (void *)(uintptr_t)site, sizeof(compiled)) == 0,
		"unhealed: the bytes are not the compiled ones");
	calls_work(fn, "unhealed");
	dlclose(h);
	printf("PASS %s\n", t_name);
	return 0;
}
