// SPDX-License-Identifier: MIT
/*
 * End-to-end tests of libfaultline-preload.so (make check-shim).
 *
 *   shim_test PRELOAD_SO DIR LLVM_OBJDUMP [FILTER]
 *
 * DIR holds the programs the Makefile built from this directory (see the
 * "shim tests" section there).  Every program runs as a child with its own
 * environment (LD_PRELOAD=PRELOAD_SO or no LD_PRELOAD at all, no inherited
 * FAULTLINE_*), in DIR/work-PID (where core files land: removed after each
 * run, since the kernel does not overwrite one), and its wait status is
 * compared exactly: exit code, signal and core flag.  Only the tests whose
 * name contains FILTER run.
 *
 *  - the fault maps: the implicit build has every kind, the explicit none;
 *  - link modes: in each, the implicit build under the shim prints what
 *    the explicit build prints without it, and dies by SIGSEGV without it;
 *    dlopen, dlclose + reopen elsewhere, and a copy of unloaded code at the
 *    old address (its faults must not be claimed);
 *  - FAULTLINE_SUMMARY=1: in each link mode, the summary at exit names each
 *    site as its file and symbol table have it, with the driver's counts;
 *  - unclaimed faults (unclaimed.c): same status with and without the shim;
 *  - the chaining matrix (chain.c): each case, with the action installed
 *    before the shim's constructor (preinit, ctor) and after it (main),
 *    the implicit build under the shim against the explicit one without;
 *  - the signal mask (mask.c): what a program that blocks SIGSEGV, SIGBUS
 *    and SIGTRAP sees and how it ends are the same with and without the
 *    shim, while under the shim the kernel blocks none of the three.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/*
 * A program still running after this long is hung (it dies of SIGALRM):
 * minutes, for QEMU's TCG on a busy machine.  No test is timed.
 */
#define HANG_S 300

static const char *preload_so;
static const char *dir;
static const char *objdump;
static const char *filter;
static char workdir[4096];
static bool core_is_pipe;
static int passed, failed;

struct result {
	int status;
	char *out;
	size_t out_len;
	char *err;
	size_t err_len;
};

static void result_free(struct result *r)
{
	free(r->out);
	free(r->err);
	memset(r, 0, sizeof(*r));
}

static char *path(const char *name)
{
	static char buf[8][4096];
	static int next;
	char *p = buf[next++ % 8];

	snprintf(p, sizeof(buf[0]), "%s/%s", dir, name);
	return p;
}

static bool selected(const char *name)
{
	return !filter || strstr(name, filter);
}

static void ok(const char *name)
{
	printf("ok - %s\n", name);
	passed++;
}

static void fail(const char *name, const char *fmt, ...)
{
	va_list ap;

	printf("FAIL - %s: ", name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	failed++;
}

static void describe(int status, char *buf, size_t len)
{
	if (WIFEXITED(status))
		snprintf(buf, len, "exit %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, len, "signal %d (%s)%s", WTERMSIG(status),
			 strsignal(WTERMSIG(status)), WCOREDUMP(status) ? ", core dumped" : "");
	else
		snprintf(buf, len, "status %#x", status);
}

static void remove_cores(void)
{
	DIR *d = opendir(workdir);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, "core", 4)) {
			char p[8192];

			snprintf(p, sizeof(p), "%s/%s", workdir, e->d_name);
			unlink(p);
		}
	closedir(d);
}

static void drain(int fd, char **buf, size_t *len, size_t *cap)
{
	char chunk[4096];
	ssize_t n = read(fd, chunk, sizeof(chunk));

	if (n <= 0)
		return;
	if (*len + (size_t)n + 1 > *cap) {
		*cap = (*len + (size_t)n + 1) * 2;
		*buf = realloc(*buf, *cap);
		if (!*buf)
			abort();
	}
	memcpy(*buf + *len, chunk, (size_t)n);
	*len += (size_t)n;
	(*buf)[*len] = 0;
}

/*
 * Runs argv (argv[0] a path) with or without the shim, with extra
 * environment entries env (NULL-terminated, may be NULL).  core: the child's
 * RLIMIT_CORE is unlimited (else 0).
 */
static void run(struct result *r, char *const argv[], bool shim, char *const env[], bool core)
{
	int out[2], err[2];
	size_t out_cap = 0, err_cap = 0;
	pid_t pid, parent = getpid();

	memset(r, 0, sizeof(*r));
	r->out = calloc(1, 1);
	r->err = calloc(1, 1);
	if (pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC))
		abort();
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		abort();
	if (pid == 0) {
		struct rlimit rl = { core ? RLIM_INFINITY : 0, core ? RLIM_INFINITY : 0 };
		char *envp[256], preload[4200];
		int n = 0;

		dup2(out[1], STDOUT_FILENO);
		dup2(err[1], STDERR_FILENO);
		setrlimit(RLIMIT_CORE, &rl);
		if (chdir(workdir) != 0)
			_exit(126);
		for (char **e = environ; *e && n < 200; e++)
			if (strncmp(*e, "LD_PRELOAD=", 11) && strncmp(*e, "FAULTLINE_", 10))
				envp[n++] = *e;
		if (shim) {
			snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", preload_so);
			envp[n++] = preload;
		}
		for (; env && *env && n < 250; env++)
			envp[n++] = *env;
		envp[n] = NULL;
		/* Killed if shim_test dies first (its main thread forks). */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
			_exit(125);
		alarm(HANG_S);
		execve(argv[0], argv, envp);
		_exit(127);
	}
	close(out[1]);
	close(err[1]);
	for (;;) {
		struct pollfd p[2] = { { out[0], POLLIN, 0 }, { err[0], POLLIN, 0 } };
		int open_fds = 0;

		for (int i = 0; i < 2; i++)
			open_fds += p[i].fd >= 0;
		if (!open_fds)
			break;
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			abort();
		}
		for (int i = 0; i < 2; i++) {
			size_t before;

			if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			before = i ? r->err_len : r->out_len;
			if (i)
				drain(err[0], &r->err, &r->err_len, &err_cap);
			else
				drain(out[0], &r->out, &r->out_len, &out_cap);
			if ((i ? r->err_len : r->out_len) == before) {
				close(i ? err[0] : out[0]);
				if (i)
					err[0] = -1;
				else
					out[0] = -1;
			}
		}
	}
	while (waitpid(pid, &r->status, 0) < 0 && errno == EINTR)
		;
	remove_cores();
}

static bool exited_0(int status)
{
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static bool killed_by(int status, int sig)
{
	return WIFSIGNALED(status) && WTERMSIG(status) == sig;
}

/* The first line where a and b differ, for messages. */
static void first_difference(const char *a, const char *b, char *buf, size_t len)
{
	int line = 1;
	const char *la = a, *lb = b;

	while (*a && *a == *b) {
		if (*a == '\n') {
			line++;
			la = a + 1;
			lb = b + 1;
		}
		a++;
		b++;
	}
	snprintf(buf, len, "line %d: shim \"%.*s\" vs \"%.*s\"", line,
		 (int)strcspn(la, "\n"), la, (int)strcspn(lb, "\n"), lb);
}

/* ------------------------------------------------------------------------
 * Fault maps
 */

static void count_kinds(const char *file, int *load, int *store, int *loadstore, int *notfound)
{
	char cmd[8192], line[512];
	FILE *f;

	*load = *store = *loadstore = *notfound = 0;
	snprintf(cmd, sizeof(cmd), "%s --fault-map-section '%s' 2>&1", objdump, file);
	f = popen(cmd, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		*load += strstr(line, "Fault kind: FaultingLoad,") != NULL;
		*store += strstr(line, "Fault kind: FaultingStore,") != NULL;
		*loadstore += strstr(line, "Fault kind: FaultingLoadStore,") != NULL;
		*notfound += strstr(line, "<not found>") != NULL;
	}
	pclose(f);
}

static void test_fault_maps(void)
{
	static const char *const models[] = { "static", "pic" };
	char name[256], file[256];
	int l, s, ls, nf;

	for (int i = 0; i < 2; i++) {
		snprintf(name, sizeof(name), "implicit_%s_build_has_every_fault_kind", models[i]);
		if (selected(name)) {
			snprintf(file, sizeof(file), "sites-imp-%s.o", models[i]);
			count_kinds(path(file), &l, &s, &ls, &nf);
			if (l == 4 && s == 2 && ls == 1)
				ok(name);
			else
				fail(name, "%s: %d FaultingLoad (want 4), %d FaultingStore (2), "
				     "%d FaultingLoadStore (1)", file, l, s, ls);
		}
		snprintf(name, sizeof(name), "explicit_%s_build_has_no_fault_map", models[i]);
		if (selected(name)) {
			snprintf(file, sizeof(file), "sites-exp-%s.o", models[i]);
			count_kinds(path(file), &l, &s, &ls, &nf);
			if (nf == 1 && l + s + ls == 0)
				ok(name);
			else
				fail(name, "%s has a fault map", file);
		}
	}
}

/* ------------------------------------------------------------------------
 * Link modes
 */

/*
 * imp under the shim against exp without it: same stdout, both exit 0, no
 * stderr.  Then imp without the shim must die by SIGSEGV.
 */
static void compare_builds(const char *mode, char *const imp[], char *const exp[],
			   const char *const must_print[])
{
	struct result ri, re, rn;
	char name[256], a[128], b[128], diff[512];

	snprintf(name, sizeof(name), "link_%s_implicit_under_shim_prints_what_explicit_prints",
		 mode);
	if (selected(name)) {
		run(&re, exp, false, NULL, false);
		run(&ri, imp, true, NULL, false);
		describe(ri.status, a, sizeof(a));
		describe(re.status, b, sizeof(b));
		if (!exited_0(re.status))
			fail(name, "explicit build: %s; stderr: %s", b, re.err);
		else if (!exited_0(ri.status))
			fail(name, "implicit build under the shim: %s; stderr: %s", a, ri.err);
		else if (ri.err_len)
			fail(name, "the shim wrote to stderr: %s", ri.err);
		else if (strcmp(ri.out, re.out)) {
			first_difference(ri.out, re.out, diff, sizeof(diff));
			fail(name, "stdout differs at %s", diff);
		} else {
			const char *missing = NULL;

			for (; must_print && *must_print; must_print++)
				if (!strstr(ri.out, *must_print))
					missing = *must_print;
			if (missing)
				fail(name, "no \"%s\" in the output", missing);
			else
				ok(name);
		}
		result_free(&ri);
		result_free(&re);
	}

	snprintf(name, sizeof(name), "link_%s_implicit_without_shim_dies_by_sigsegv", mode);
	if (selected(name)) {
		run(&rn, imp, false, NULL, false);
		describe(rn.status, a, sizeof(a));
		if (killed_by(rn.status, SIGSEGV))
			ok(name);
		else
			fail(name, "%s", a);
		result_free(&rn);
	}
}

static void test_link_modes(void)
{
	static const char *const exe_modes[] = {
		"nopie-gnu", "pie-gnu", "so-gnu", "nopie-lld", "pie-lld", "pie-lld-notext",
		"so-lld-notext",
	};
	static const char *const so_modes[] = { "so-gnu", "so-lld-notext" };
	static const char *const reopen_prints[] = {
		"A unloaded: yes", "A reloaded at another address: yes", NULL,
	};
	char imp_path[4096], exp_path[4096], mode[64], lib_a[2][4096], lib_b[2][4096];

	for (size_t i = 0; i < sizeof(exe_modes) / sizeof(exe_modes[0]); i++) {
		snprintf(imp_path, sizeof(imp_path), "%s/sites-imp-%s", dir, exe_modes[i]);
		snprintf(exp_path, sizeof(exp_path), "%s/sites-exp-%s", dir, exe_modes[i]);
		compare_builds(exe_modes[i], (char *[]){ imp_path, "run", NULL },
			       (char *[]){ exp_path, "run", NULL }, NULL);
	}

	for (size_t i = 0; i < sizeof(so_modes) / sizeof(so_modes[0]); i++) {
		snprintf(imp_path, sizeof(imp_path), "%s/libsites-imp-%s.so", dir, so_modes[i]);
		snprintf(exp_path, sizeof(exp_path), "%s/libsites-exp-%s.so", dir, so_modes[i]);
		snprintf(mode, sizeof(mode), "dlopen-%s", so_modes[i]);
		compare_builds(mode, (char *[]){ path("driver-dl"), "dlopen", imp_path, NULL },
			       (char *[]){ path("driver-dl"), "dlopen", exp_path, NULL }, NULL);
	}

	/* A = the GNU ld library, B = the lld one. */
	for (int k = 0; k < 2; k++) {
		const char *b = k ? "exp" : "imp";

		snprintf(lib_a[k], sizeof(lib_a[k]), "%s/libsites-%s-so-gnu.so", dir, b);
		snprintf(lib_b[k], sizeof(lib_b[k]), "%s/libsites-%s-so-lld-notext.so", dir, b);
	}
	compare_builds("dlclose-reopen-elsewhere",
		       (char *[]){ path("driver-dl"), "reopen", lib_a[0], lib_b[0], NULL },
		       (char *[]){ path("driver-dl"), "reopen", lib_a[1], lib_b[1], NULL },
		       reopen_prints);

	{
		const char *name = "dlclose_drops_sites_before_the_range_is_reused";
		struct result r;
		char st[128];

		if (selected(name)) {
			run(&r, (char *[]){ path("driver-dl"), "stale", lib_a[0], NULL }, true,
			    NULL, false);
			describe(r.status, st, sizeof(st));
			if (!strstr(r.out, "before dlclose: -7\ncalling the copy"))
				fail(name, "%s; stdout: %s; stderr: %s", st, r.out, r.err);
			else if (strstr(r.out, "the copy returned"))
				fail(name, "a fault in the copy was claimed after dlclose");
			else if (!killed_by(r.status, SIGSEGV))
				fail(name, "%s (want SIGSEGV)", st);
			else
				ok(name);
			result_free(&r);
		}
	}
}

/* ------------------------------------------------------------------------
 * FAULTLINE_SUMMARY=1: the sites that failed, named in every link mode
 */

/*
 * The value of function symbol name in file, or UINT64_MAX: readelf's
 * view of .symtab, which llvm-objdump -t prints as 0 where the value
 * belongs to an undefined symbol (lld's -pie link of the static-model
 * sites records them so, at the functions' addresses).  The readelf of
 * objdump's LLVM (llvm-objdump-14: llvm-readelf-14), which make vmtest
 * copies into its guest too.
 */
static uint64_t symbol_value(const char *file, const char *name)
{
	char cmd[8192], line[512], sym[256], type[32], readelf[256];
	unsigned long long v, found = UINT64_MAX;
	const char *at = strstr(objdump, "objdump");
	FILE *f;

	if (!at)
		return UINT64_MAX;
	snprintf(readelf, sizeof(readelf), "%.*sreadelf%s", (int)(at - objdump), objdump, at + 7);
	snprintf(cmd, sizeof(cmd), "%s -sW '%s' 2>/dev/null", readelf, file);
	f = popen(cmd, "r");
	if (!f)
		return UINT64_MAX;
	/* "    48: 0000000000002670     0 FUNC    GLOBAL DEFAULT  UND site_load_i32" */
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, " %*u: %llx %*u %31s %*s %*s %*s %255s", &v, type, sym) == 3 &&
		    !strcmp(type, "FUNC") && v && !strcmp(sym, name))
			found = v;
	}
	pclose(f);
	return found;
}

/*
 * Checks one summary (r's stderr) of a driver run whose sites are in
 * module (a file in dir): the header's total is the sum of 7 site lines,
 * each "MODULE+0xADDR (FUNCTION+0xOFF)" with FUNCTION's value + OFF =
 * ADDR in the file, and each null block count the driver printed among the
 * counts.  Returns NULL or what is wrong (in why).
 */
static const char *check_summary(const struct result *r, const char *module, char *why,
				 size_t len)
{
	unsigned long long total = 0, sum = 0, counts[16];
	unsigned sites = 0, lines = 0, blocks = 0;
	const char *p = r->err;
	char file[4096];

	if (sscanf(p, "faultline: pid %*d (%*[^)]): %llu implicit checks failed at %u sites\n",
		   &total, &sites) != 2)
		return snprintf(why, len, "no header: %.200s", p), why;
	while ((p = strchr(p, '\n')) && *++p) {
		unsigned long long count, addr, off;
		char mod[256], fn[256];
		uint64_t value;

		if (sscanf(p, "faultline: %llu %255[^+]+0x%llx (%255[^+]+0x%llx)", &count, mod,
			   &addr, fn, &off) != 5)
			return snprintf(why, len, "not a site line: %.200s", p), why;
		if (strcmp(mod, module))
			return snprintf(why, len, "site in %s, not %s", mod, module), why;
		snprintf(file, sizeof(file), "%s/%s", dir, mod);
		value = symbol_value(file, fn);
		if (value == UINT64_MAX || value + off != addr)
			return snprintf(why, len, "%s+0x%llx is not 0x%llx in %s (its value: 0x%llx)",
					fn, off, addr, mod, (unsigned long long)value), why;
		if (lines < 16)
			counts[lines] = count;
		lines++;
		sum += count;
	}
	if (sites != 7 || lines != 7 || sum != total)
		return snprintf(why, len, "%u sites, %u lines, %llu failures, lines sum to %llu",
				sites, lines, total, sum), why;
	/* "site K: N null calls, null block ran N times", for sites 1 to 6 */
	for (p = r->out; (p = strstr(p, "null block ran ")); p++, blocks++) {
		unsigned long long n = strtoull(p + 15, NULL, 10);
		bool seen = false;

		for (unsigned i = 0; i < lines && i < 16; i++)
			seen |= counts[i] == n;
		if (!seen)
			return snprintf(why, len, "the driver's null block ran %llu times: no "
					"site with that count", n), why;
	}
	if (blocks != 6)
		return snprintf(why, len, "the driver said %u times that a null block ran, "
				"not 6", blocks), why;
	return NULL;
}

static void test_summary(void)
{
	static const char *const modes[] = {
		"nopie-gnu", "pie-gnu", "so-gnu", "nopie-lld", "pie-lld", "pie-lld-notext",
		"so-lld-notext",
	};
	char *const env[] = { "FAULTLINE_SUMMARY=1",
			      "FAULTLINE_SOCKET=/nonexistent/faultlined.sock", NULL };
	char name[128], exe[4096], module[256], why[1024], st[128];

	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		const char *wrong;
		struct result r;

		snprintf(name, sizeof(name), "summary_names_the_sites_that_failed_%s", modes[i]);
		if (!selected(name))
			continue;
		snprintf(exe, sizeof(exe), "%s/sites-imp-%s", dir, modes[i]);
		if (!strncmp(modes[i], "so-", 3))
			snprintf(module, sizeof(module), "libsites-imp-%s.so", modes[i]);
		else
			snprintf(module, sizeof(module), "sites-imp-%s", modes[i]);
		run(&r, (char *[]){ exe, "run", NULL }, true, env, false);
		describe(r.status, st, sizeof(st));
		if (!exited_0(r.status))
			fail(name, "%s; stderr: %s", st, r.err);
		else if ((wrong = check_summary(&r, module, why, sizeof(why))))
			fail(name, "%s; stderr: %s", wrong, r.err);
		else
			ok(name);
		result_free(&r);
	}
}

/* ------------------------------------------------------------------------
 * Same status with and without the shim
 */

/*
 * Runs argv under the shim (shim_argv, or argv when NULL) and argv without;
 * both must end the same way, printing the same, and that way must be
 * want_sig (0: exit 0).  A signal with a core dump by default must dump
 * core unless core_pattern is a pipe.  shim_stderr: what the shim run's
 * stderr must contain (NULL: the same stderr as without the shim).
 */
/*
 * Whether the run under the shim (rs) ended as the one without it (rn):
 * the same status and stdout, and that status want_sig (0: exit 0), with
 * a core dump for a signal that dumps core unless core_pattern is a pipe.
 * If not, the test fails, saying why.
 */
static bool ended_alike(const char *name, const struct result *rs, const struct result *rn,
			int want_sig)
{
	char a[128], b[128], diff[512];

	describe(rs->status, a, sizeof(a));
	describe(rn->status, b, sizeof(b));
	if (rs->status != rn->status)
		fail(name, "under the shim: %s; without: %s; shim stdout: %s; shim stderr: %s", a,
		     b, rs->out, rs->err);
	else if (strcmp(rs->out, rn->out)) {
		first_difference(rs->out, rn->out, diff, sizeof(diff));
		fail(name, "stdout differs at %s", diff);
	} else if (want_sig ? !killed_by(rn->status, want_sig) : !exited_0(rn->status))
		fail(name, "both: %s; want %s %d; stdout: %s; stderr: %s", b,
		     want_sig ? "signal" : "exit", want_sig, rn->out, rn->err);
	else if (want_sig && !core_is_pipe && !WCOREDUMP(rn->status))
		fail(name, "both: %s; want a core dump (core_pattern is a file)", b);
	else
		return true;
	return false;
}

static void compare_runs(const char *name, char *const shim_argv[], char *const argv[],
			 char *const env[], int want_sig, const char *shim_stderr)
{
	struct result rs, rn;

	if (!selected(name))
		return;
	run(&rn, argv, false, env, true);
	run(&rs, shim_argv ? shim_argv : argv, true, env, true);
	if (!ended_alike(name, &rs, &rn, want_sig))
		;
	else if (!shim_stderr && strcmp(rs.err, rn.err))
		fail(name, "stderr: \"%s\" under the shim, \"%s\" without", rs.err, rn.err);
	else if (shim_stderr && !strstr(rs.err, shim_stderr))
		fail(name, "no \"%s\" in the shim's stderr: \"%s\"", shim_stderr, rs.err);
	else
		ok(name);
	result_free(&rs);
	result_free(&rn);
}

static void test_unclaimed(void)
{
	static const struct {
		const char *name;
		int sig;
	} cases[] = {
		{ "wild_pointer_at_registered_load", SIGSEGV },
		{ "wild_pointer_at_registered_store", SIGSEGV },
		{ "wild_pointer_at_registered_rmw", SIGSEGV },
		{ "address_at_null_bound_is_not_null", SIGSEGV },
		{ "null_store_at_unregistered_pc", SIGSEGV },
		{ "null_load_at_unregistered_pc", SIGSEGV },
		{ "kill_segv", SIGSEGV },
		{ "raise_segv", SIGSEGV },
		{ "sigqueue_segv", SIGSEGV },
		{ "kill_bus", SIGBUS },
		{ "truncated_mapping_sigbus", SIGBUS },
		{ "truncated_mapping_sigbus_at_registered_pc", SIGBUS },
		{ "stack_overflow", SIGSEGV },
	};
	char name[256];
	struct result r;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(name, sizeof(name), "unclaimed_%s_ends_as_without_shim", cases[i].name);
		compare_runs(name, NULL, (char *[]){ path("unclaimed"), (char *)cases[i].name, NULL },
			     NULL, cases[i].sig, NULL);
	}

	/* Site 3 faults at address 4000: outside a null area of 4000 bytes. */
	compare_runs("unclaimed_null_bound_env_narrows_null_area", NULL,
		     (char *[]){ path("unclaimed"), "null_bound_env_narrows_null_area", NULL },
		     (char *[]){ "FAULTLINE_NULL_BOUND=4000", NULL }, SIGSEGV, NULL);
	snprintf(name, sizeof(name), "null_bound_env_claims_below_the_bound");
	if (selected(name)) {
		run(&r, (char *[]){ path("unclaimed"), "null_bound_env_narrows_null_area", NULL },
		    true, (char *[]){ "FAULTLINE_NULL_BOUND=4001", NULL }, false);
		if (exited_0(r.status) && strstr(r.out, "survived"))
			ok(name);
		else
			fail(name, "status %#x, stderr: %s", r.status, r.err);
		result_free(&r);
	}
}

/* ------------------------------------------------------------------------
 * The chaining matrix
 */

static void test_chain(void)
{
	static const char *const whens[] = { "preinit", "ctor", "main" };
	struct result list;
	char *line, *save;

	run(&list, (char *[]){ path("chain-exp"), "list", NULL }, false, NULL, false);
	if (!exited_0(list.status) || !list.out_len) {
		fail("chain_list", "chain-exp list failed: %s", list.err);
		result_free(&list);
		return;
	}
	for (line = strtok_r(list.out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char cname[200], scope[16];

		if (sscanf(line, "%199s %15s", cname, scope) != 2)
			continue;
		for (int w = 0; w < 3; w++) {
			const char *when = whens[w];
			char name[300], imp[4096], exp[4096];
			/* Cases named for dying die by SIGSEGV, the others exit 0. */
			int sig = strstr(cname, "kills") || strstr(cname, "core_dump") ||
				  strstr(cname, "dies") ? SIGSEGV : 0;
			bool raw = !strcmp(cname, "raw_rt_sigaction_replaces_handler");

			if (!strcmp(scope, "main") && strcmp(when, "main"))
				continue;
			snprintf(name, sizeof(name), "chain_%s_installed_in_%s", cname, when);
			snprintf(imp, sizeof(imp), "%s/chain-imp", dir);
			snprintf(exp, sizeof(exp), "%s/chain-exp", dir);
			compare_runs(name, (char *[]){ imp, cname, (char *)when, NULL },
				     (char *[]){ exp, cname, (char *)when, NULL },
				     raw ? (char *[]){ "FAULTLINE_LOG=error", NULL } : NULL, sig,
				     raw ? "before dlopen\nfaultline: error: the SIGSEGV or SIGBUS "
					   "handler is no longer faultline's" : NULL);
			/*
			 * With a heal policy SIGTRAP is faultline's too: nested
			 * signals again, through faultline's handler for both.
			 */
			if (!strstr(cname, "nested") && !strstr(cname, "sigtrap"))
				continue;
			snprintf(name, sizeof(name), "chain_%s_installed_in_%s_with_healing", cname,
				 when);
			compare_runs(name, (char *[]){ imp, cname, (char *)when, NULL },
				     (char *[]){ exp, cname, (char *)when, NULL },
				     (char *[]){ "FAULTLINE_HEAL_AFTER=1000000",
						 "FAULTLINE_SOCKET=/nonexistent/faultlined.sock", NULL },
				     sig, NULL);
		}
	}
	result_free(&list);
}

/* ------------------------------------------------------------------------
 * The signal mask
 */

/*
 * Whether every "WHEN: kernel blocks: ..." line of err says none (or, for
 * the lines of an executed program, want_exec), and there is one at least.
 * Returns NULL or the first line that does not.
 */
static const char *kernel_lines(const char *err, const char *want_exec, char *bad, size_t len)
{
	const char *p = err;
	int lines = 0;

	for (; (p = strstr(p, ": kernel blocks:")); p++) {
		const char *start = p, *end = strchr(p, '\n');
		const char *want = " none";

		while (start > err && start[-1] != '\n')
			start--;
		if (!strncmp(start, "executed program:", 17) && want_exec)
			want = want_exec;
		lines++;
		if (strncmp(p + 16, want, strlen(want)) || (p[16 + strlen(want)] != '\n' &&
							    p[16 + strlen(want)] != 0)) {
			snprintf(bad, len, "%.*s", end ? (int)(end - start) : (int)strlen(start),
				 start);
			return bad;
		}
	}
	if (!lines)
		return "no \"kernel blocks\" line";
	return NULL;
}

/*
 * mask CASE under the shim (imp: the implicit build; else the explicit one)
 * against the explicit build without it: the same status and stdout, and
 * that status want_sig (0: exit 0); under the shim the kernel blocks none
 * of the three (want_exec: what an executed program without the shim must
 * show, NULL: none either).
 */
static void mask_compare(const char *name, const char *mcase, bool imp, int want_sig,
			 const char *want_exec)
{
	struct result ri;
	/* SIGTRAP is faultline's once code patching is on: a heal policy turns it on. */
	char *const env[] = { "FAULTLINE_HEAL_AFTER=1000000",
			      "FAULTLINE_SOCKET=/nonexistent/faultlined.sock", NULL };
	struct result rs, rn;
	char a[128], bad[512];
	const char *wrong;

	if (!selected(name))
		return;
	run(&rn, (char *[]){ path("mask-exp"), (char *)mcase, NULL }, false, env, true);
	run(&rs, (char *[]){ path(imp ? "mask-imp" : "mask-exp"), (char *)mcase, NULL }, true,
	    env, true);
	if (!ended_alike(name, &rs, &rn, want_sig))
		;
	else if ((wrong = kernel_lines(rs.err, want_exec, bad, sizeof(bad))))
		fail(name, "under the shim: %s; stderr: %s", wrong, rs.err);
	else if (imp) {
		/* And the implicit build without the shim: killed by the kernel. */
		run(&ri, (char *[]){ path("mask-imp"), (char *)mcase, NULL }, false, env, false);
		describe(ri.status, a, sizeof(a));
		if (killed_by(ri.status, SIGSEGV))
			ok(name);
		else
			fail(name, "the implicit build without the shim: %s (want SIGSEGV)", a);
		result_free(&ri);
	} else
		ok(name);
	result_free(&rs);
	result_free(&rn);
}

static void test_mask(void)
{
	static const char *const three = " SEGV BUS TRAP";

	mask_compare("mask_set_by_every_call_reads_back_while_the_kernel_blocks_none",
		     "readback", false, 0, NULL);
	mask_compare("mask_a_thread_that_blocks_sigsegv_still_has_its_null_checks_handled",
		     "null_check", true, 0, NULL);
	mask_compare("mask_own_int3_while_sigtrap_is_blocked_kills_by_sigtrap", "int3", false,
		     SIGTRAP, NULL);
	mask_compare("mask_own_null_store_while_sigsegv_is_blocked_kills_by_sigsegv", "segv",
		     false, SIGSEGV, NULL);
	mask_compare("mask_signals_sent_while_blocked_are_pending_until_unblocked", "pending",
		     false, 0, NULL);
	mask_compare("mask_a_forked_child_keeps_the_mask_and_has_nothing_pending", "fork", false,
		     0, NULL);
	mask_compare("mask_a_new_thread_starts_with_its_creators_mask", "thread", false, 0, NULL);
	mask_compare("mask_a_thread_that_unblocks_by_the_raw_system_call_gets_its_faults",
		     "raw_unblock", false, 0, NULL);
	mask_compare("mask_an_executed_program_starts_with_the_mask_set", "exec", false, 0, three);
	mask_compare("mask_a_spawned_program_starts_with_the_mask_set", "spawn", false, 0, three);
	mask_compare("mask_an_executed_program_under_the_shim_sees_the_mask_set", "exec-shim",
		     false, 0, NULL);
	mask_compare("mask_a_spawned_program_under_the_shim_sees_the_mask_set", "spawn-shim",
		     false, 0, NULL);
	mask_compare("mask_a_program_run_by_system_starts_with_the_mask_set", "system", false, 0,
		     three);
	mask_compare("mask_a_program_run_by_popen_starts_with_the_mask_set", "popen", false, 0,
		     three);
	mask_compare("mask_signals_sent_while_blocked_are_taken_by_sigwait", "sigwait", false, 0,
		     NULL);
	mask_compare("mask_a_bad_how_is_einval_and_changes_nothing", "bad_how", false, 0, NULL);
	mask_compare("mask_a_handler_sees_and_sets_the_mask_as_without_shim", "handler_mask",
		     false, 0, NULL);
	mask_compare("mask_another_signals_handler_blocking_all_keeps_the_three_virtual",
		     "other_handler", true, 0, NULL);
}

static void read_core_pattern(void)
{
	char buf[512] = "";
	FILE *f = fopen("/proc/sys/kernel/core_pattern", "r");

	if (f) {
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = 0;
		fclose(f);
	}
	buf[strcspn(buf, "\n")] = 0;
	core_is_pipe = buf[0] == '|';
	printf("# core_pattern: %s (%s)\n", buf,
	       core_is_pipe ? "a pipe: the core flag is compared, not required"
			    : "a file: signals that dump core must set the core flag");
}

/* ------------------------------------------------------------------------
 * faultline's threads and descriptors out of the program's way (alone.c)
 */

static void alone_compare(const char *name, const char *acase, bool heal)
{
	char *const env[] = { "FAULTLINE_HEAL_AFTER=1000000",
			      "FAULTLINE_SOCKET=/nonexistent/faultlined.sock", NULL };

	compare_runs(name, (char *[]){ path("alone-imp"), (char *)acase, NULL },
		     (char *[]){ path("alone-exp"), (char *)acase, NULL }, heal ? env : NULL, 0,
		     NULL);
}

static void test_alone(void)
{
	alone_compare("alone_main_calling_pthread_exit_ends_with_its_last_thread",
		      "main-pthread-exits", false);
	alone_compare("alone_main_calling_pthread_exit_ends_with_its_last_thread_with_healing",
		      "main-pthread-exits", true);
	alone_compare("alone_every_thread_calling_pthread_exit_ends_the_process",
		      "every-thread-pthread-exits", true);
	alone_compare("alone_a_parent_waits_for_a_child_whose_main_calls_pthread_exit",
		      "parent-waits", false);
	alone_compare("alone_unshare_of_a_user_namespace_succeeds", "unshare-user", true);
	alone_compare("alone_setns_into_a_mount_namespace_succeeds", "setns-mount", true);
	alone_compare("alone_executed_programs_see_only_the_descriptors_passed", "exec-fds",
		      false);
	alone_compare("alone_a_vfork_childs_handlers_and_mask_are_its_own", "vfork-child", true);
}

int main(int argc, char **argv)
{
	if (argc < 4 || argc > 5) {
		fprintf(stderr, "usage: %s PRELOAD_SO DIR LLVM_OBJDUMP [FILTER]\n", argv[0]);
		return 2;
	}
	/* Absolute: the children run in DIR/work. */
	preload_so = realpath(argv[1], NULL);
	dir = realpath(argv[2], NULL);
	objdump = argv[3];
	filter = argc == 5 ? argv[4] : NULL;
	if (!preload_so || !dir) {
		fprintf(stderr, "%s: %s\n", preload_so ? argv[2] : argv[1], strerror(errno));
		return 2;
	}
	snprintf(workdir, sizeof(workdir), "%s/work-%d", dir, (int)getpid());
	if (mkdir(workdir, 0755) != 0 && errno != EEXIST) {
		fprintf(stderr, "%s: %s\n", workdir, strerror(errno));
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	{
		/* make vmtest's guest init sets VMTEST_WHERE. */
		struct utsname u;
		const char *where = getenv("VMTEST_WHERE");

		if (uname(&u) == 0)
			printf("kernel: %s (%s)\n", u.release, where ? where : "host");
	}
	read_core_pattern();

	test_fault_maps();
	test_link_modes();
	test_summary();
	test_unclaimed();
	test_chain();
	test_mask();
	test_alone();

	remove_cores();
	rmdir(workdir);
	printf("check-shim: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
