// SPDX-License-Identifier: MIT
/*
 * cxx_exception_through_healed_null_path: load_i8's null path calls
 * throw_npe, which throws a C++ exception that main catches.  With the
 * site healed, the null path is reached through the stub (in place: the
 * handler is the function's own code) or in the function's copy
 * (FAULTLINE_HEAL_TACTICS=REL: the handler is the copy's, whose unwind
 * information faultline registered with libgcc): each time the exception
 * reaches main's catch, the healed failures count it (no fault), and the
 * valid calls give their value.
 */
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <faultline/dispatch.h>
#include <faultline/faultline.h>
#include <faultline/patch.h>

extern "C" int8_t load_i8(int8_t *p);

struct npe {
	int n;
};

extern "C" void throw_npe(void)
{
	throw npe{ 7 };
}

static const char *name = "cxx_exception_through_healed_null_path";
static uint64_t site;

[[noreturn]] static void fail(const char *what, const char *more)
{
	std::printf("FAIL %s: %s%s%s\n", name, what, more ? ": " : "", more ? more : "");
	std::exit(1);
}

static int find(const struct fl_site *s, void *)
{
	uint64_t fn = (uint64_t)(uintptr_t)load_i8;

	if (s->faulting_pc >= fn && s->faulting_pc < fn + 16 && !site)
		site = s->faulting_pc;
	return 0;
}

static void round_of(const char *how)
{
	struct fl_diag d = {};
	struct fl_heal_info info = {};
	int8_t v = 5;
	long caught = 0, right = 0, n = 1000;
	uint64_t before;

	if (fl_site_heal((const void *)(uintptr_t)site, &d) != 0)
		fail("fl_site_heal", d.msg);
	info.sz = sizeof(info);
	fl_site_heal_info((const void *)(uintptr_t)site, &info);
	before = info.healed_failures;
	for (long i = 0; i < n; i++) {
		try {
			load_i8(nullptr);
		} catch (const npe &e) {
			caught += e.n == 7;
		}
		right += load_i8(&v) == 5;
	}
	fl_site_heal_info((const void *)(uintptr_t)site, &info);
	std::printf("%s: %s (%s): %ld of %ld exceptions caught in main, %llu healed failures, "
		    "%ld right values\n", name, how, info.tactic, caught, n,
		    (unsigned long long)(info.healed_failures - before), right);
	if (caught != n || right != n || info.healed_failures - before != (uint64_t)n)
		fail(how, "an exception or a value went astray");
	if (fl_site_unheal((const void *)(uintptr_t)site, &d) != 0)
		fail("fl_site_unheal", d.msg);
}

int main()
{
	FL_OPTS(fl_init_opts, o, .flags = FL_INIT_NO_AGENT);
	struct fl_diag d = {};
	int err;

	if ((err = fl_init(&o)) != 0)
		fail("fl_init", std::strerror(-err));
	if ((err = fl_patch_enable(&d)) != 0)
		fail("fl_patch_enable", d.msg);
	fl_site_for_each(find, nullptr);
	if (!site)
		fail("load_i8 has no registered site", nullptr);
	round_of("healed in place");
	setenv("FAULTLINE_HEAL_TACTICS", "REL", 1);
	round_of("healed by relocation");
	std::printf("PASS %s\n", name);
	return 0;
}
