/* SPDX-License-Identifier: MIT */
/*
 * FAULTLINE_SUMMARY=1 (faultline run --summary): at exit, the sites whose
 * implicit checks failed, on stderr, without a daemon.
 *
 *   faultline: pid 4242 (app): 3 implicit checks failed at 2 sites
 *   faultline:          2  app+0x401136 (load_field+0x6)
 *   faultline:          1  libx.so+0x1156 (store_field+0x6)  healed (T1)
 *
 * Most failures first.  A site is named as faultline profile names an
 * address: its module's file name and the address as the file has it
 * (what objdump and addr2line take), then the function and the offset in
 * it, from the file's symbol table.  Nothing is printed when no check
 * failed: a summary is asked for in the environment, which every child
 * inherits, and a line from each process of a build that failed nothing
 * would bury the one that did (faultline(1)).
 *
 * When: a destructor of the preload library, so at exit(3) or the return
 * from main, not at _exit(2) nor at a death by signal; in each process
 * (a forked child's counts are its own).
 *
 * How, safely at exit, while other threads may still run and in a child
 * forked from a threaded parent:
 *   - the sites are copied, under the registry lock (fl_site_for_each),
 *     into static storage: nothing allocated, no stdio, no other lock
 *     taken while it is held (the table's fork handlers keep that lock
 *     usable in a child);
 *   - they are named after the lock is released: dladdr1 (the loader's
 *     lock, which exit does not hold while destructors run) and libelf,
 *     which allocates with malloc, fork-safe in glibc;
 *   - the text goes out with write(2) on fd 2, never through stdio
 *     (stderr's FILE lock may be another thread's at that moment).
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <faultline/discovery.h>
#include <faultline/dispatch.h>
#include <faultline/patch.h>

#include "core/fmt.h"
#include "preload/summary.h"

/* The sites shown, at most: the ones with the most failures. */
#define MAX_SHOWN 64

struct failed {
	uint64_t pc;
	uint64_t faults;
	char module[256];	/* fl_site's module_name (a JIT module's name) */
};

static bool enabled;
static struct failed shown[MAX_SHOWN];
static unsigned num_shown;
static uint64_t failed_sites, failures;	/* all of them, shown or not */

int fl_preload_summary_env(const char *value)
{
	if (!value || !*value || !strcmp(value, "0")) {
		enabled = false;
		return 0;
	}
	if (!strcmp(value, "1")) {
		enabled = true;
		return 0;
	}
	return -EINVAL;
}

/* fl_site_for_each's callback, under the registry lock: copies only. */
static int collect(const struct fl_site *site, void *ctx)
{
	unsigned at;

	(void)ctx;
	if (!site->faults)
		return 0;
	failed_sites++;
	failures += site->faults;
	/* Kept in order, most failures first; the least goes when full. */
	at = num_shown;
	while (at > 0 && shown[at - 1].faults < site->faults)
		at--;
	if (at == MAX_SHOWN)
		return 0;
	if (num_shown < MAX_SHOWN)
		num_shown++;
	memmove(&shown[at + 1], &shown[at], (num_shown - 1 - at) * sizeof(shown[0]));
	shown[at].pc = site->faulting_pc;
	shown[at].faults = site->faults;
	fl_fmt(shown[at].module, sizeof(shown[at].module), "%s",
	       site->module_name ? site->module_name : "");
	return 0;
}

static void put(const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(STDERR_FILENO, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		buf += n;
		len -= (size_t)n;
	}
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash && slash[1] ? slash + 1 : path;
}

/* The program's file, read once (a static buffer: nothing allocated). */
static const char *exe_path(void)
{
	static char exe[4096];
	ssize_t n;

	if (exe[0])
		return exe;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return "/proc/self/exe";
	exe[n] = 0;
	return exe;
}

/*
 * Formats site s's address into buf: "FILE+0xADDR (FUNCTION+0xOFF)" for a
 * loaded module, "[jit] NAME 0xPC" for code that is not one.
 */
/* The file last opened for naming, kept for the next site in it. */
static struct fl_elf *elf;
static const char *elf_file;

static void name_site(const struct failed *s, char *buf, size_t size)
{
	struct link_map *lm = NULL;
	struct fl_diag d;
	const char *file, *fn = NULL;
	uint64_t addr, off = 0;
	Dl_info info;

	if (!dladdr1((void *)(uintptr_t)s->pc, &info, (void **)&lm, RTLD_DL_LINKMAP) || !lm) {
		fl_fmt(buf, size, "[jit] %s 0x%llx", s->module[0] ? s->module : "?",
		       (unsigned long long)s->pc);
		return;
	}
	/* The main program's link map has no name. */
	file = lm->l_name && lm->l_name[0] ? lm->l_name : exe_path();
	addr = s->pc - lm->l_addr;
	if (file != elf_file) {
		fl_elf_close(elf);
		elf = NULL;
		elf_file = file;
		if (fl_elf_open(file, NULL, &elf, &d) != 0)
			elf = NULL;
	}
	if (elf)
		fn = fl_elf_function_containing(elf, addr, &off);
	if (fn && *fn)
		fl_fmt(buf, size, "%s+0x%llx (%s+0x%llx)", base_name(file),
		       (unsigned long long)addr, fn, (unsigned long long)off);
	else
		fl_fmt(buf, size, "%s+0x%llx", base_name(file), (unsigned long long)addr);
}

/* ", healed (T1)" or ", unhealable: WHY" when healing touched the site. */
static void heal_state(const struct failed *s, char *buf, size_t size)
{
	struct fl_heal_info hi = { .sz = sizeof(hi) };

	buf[0] = 0;
	if (fl_site_heal_info((const void *)(uintptr_t)s->pc, &hi) != 0)
		return;
	if (hi.state == FL_HEAL_HEALED)
		fl_fmt(buf, size, "  healed (%s), %llu more failed in its stub", hi.tactic,
		       (unsigned long long)hi.healed_failures);
	else if (hi.state == FL_HEAL_UNHEALABLE)
		fl_fmt(buf, size, "  unhealable: %s", hi.reason);
}

static void __attribute__((destructor)) summary_at_exit(void)
{
	static char line[1024], where[640], heal[160];
	static const char pad[] = "          ";
	char comm[17] = "?", count[24];
	int saved_errno = errno;
	size_t n;

	if (!enabled)
		return;
	num_shown = 0;
	failed_sites = failures = 0;
	fl_site_for_each(collect, NULL);
	if (!failed_sites)
		goto out;
	(void)prctl(PR_GET_NAME, comm);
	comm[16] = 0;
	n = fl_fmt(line, sizeof(line), "faultline: pid %d (%s): %llu implicit check%s failed "
		   "at %llu site%s\n", (int)getpid(), comm, (unsigned long long)failures,
		   failures == 1 ? "" : "s", (unsigned long long)failed_sites,
		   failed_sites == 1 ? "" : "s");
	put(line, n);
	for (unsigned i = 0; i < num_shown; i++) {
		name_site(&shown[i], where, sizeof(where));
		heal_state(&shown[i], heal, sizeof(heal));
		n = fl_fmt(count, sizeof(count), "%llu", (unsigned long long)shown[i].faults);
		/* Right-aligned in 10 columns (fl_fmt has no widths). */
		n = fl_fmt(line, sizeof(line), "faultline: %s%s  %s%s\n",
			   pad + (n < 10 ? n : 10), count, where, heal);
		put(line, n);
	}
	fl_elf_close(elf);
	elf = NULL;
	elf_file = NULL;
	if (failed_sites > num_shown) {
		uint64_t rest = failures;

		for (unsigned i = 0; i < num_shown; i++)
			rest -= shown[i].faults;
		n = fl_fmt(line, sizeof(line), "faultline: and %llu more sites (%llu failures)\n",
			   (unsigned long long)(failed_sites - num_shown), (unsigned long long)rest);
		put(line, n);
	}
out:
	errno = saved_errno;
}
