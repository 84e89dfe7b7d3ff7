/* SPDX-License-Identifier: MIT */
/*
 * What the region tests share.  Each test is one program about one
 * feature: it exits 0 (pass), 77 (skip, with the reason printed) or 1
 * (fail, with what went wrong).  Tests that run in both modes take the
 * mode as argv[1]: "sigbus" (the default mode) or "helper"
 * (FL_REGION_HELPER_THREAD).
 *
 * Implicit checks past the committed limit need code with a faulting PC
 * that faultline knows: t_code below is hand-written assembly, registered
 * with fl_jit_register through a fault map built here (the v1 layout of
 * include/faultline/format.h).
 */
#ifndef FL_SELFTESTS_REGION_COMMON_H
#define FL_SELFTESTS_REGION_COMMON_H

#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <faultline/dispatch.h>
#include <faultline/log.h>
#include <faultline/region.h>

#include "../common/t.h"

/*
 * How long something that must happen may take before the test calls it
 * a hang: minutes, for QEMU's TCG on a busy machine (run.sh's limit for a
 * whole test is longer).  No test is timed.
 */
#define T_HANG_S 300

static size_t t_page;

/* Names the test (argv[0]'s base name) and returns the mode's flags. */
static inline uint32_t t_start(int argc, char **argv)
{
	const char *slash = strrchr(argv[0], '/');

	t_name = slash ? slash + 1 : argv[0];
	t_page = (size_t)sysconf(_SC_PAGESIZE);
	setvbuf(stdout, NULL, _IOLBF, 0);
	fl_set_log(t_log, NULL);
	if (argc < 2)
		return 0;
	if (strcmp(argv[1], "sigbus") == 0)
		return 0;
	if (strcmp(argv[1], "helper") == 0)
		return FL_REGION_HELPER_THREAD;
	t_fail("unknown mode %s (sigbus or helper)", argv[1]);
}

static inline void t_init(void)
{
	struct fl_init_opts o = { .sz = sizeof(o), .flags = FL_INIT_NO_DISCOVERY };
	int err = fl_init(&o);

	t_check(err == 0, "fl_init: %s", strerror(-err));
}

/* A region, or a skip when this kernel cannot give one. */
static inline struct fl_region *t_region(size_t size, size_t commit, const void *tmpl, uint32_t flags)
{
	struct fl_region_opts o = {
		.sz = sizeof(o), .flags = flags, .template_page = tmpl, .commit = commit,
	};
	struct fl_region *r;
	int err = fl_region_create(size, &o, &r);

	if (err == -ENOSYS || err == -EPERM || err == -EOPNOTSUPP) {
		char why[128];

		snprintf(why, sizeof(why), "no userfaultfd for a %s region here: %s",
			 flags ? "helper-thread" : "SIGBUS", strerror(-err));
		t_skip(why);
	}
	t_check(err == 0, "fl_region_create: %s", strerror(-err));
	return r;
}

/* Returns the faulted count of the site at pc (fl_site_for_each). */
struct t_site_find { uint64_t pc; uint64_t faults; int found; };

static inline int t_site_cb(const struct fl_site *s, void *ctx)
{
	struct t_site_find *f = ctx;

	if (s->faulting_pc == f->pc) {
		f->faults = s->faults;
		f->found = 1;
		return 1;
	}
	return 0;
}

static inline uint64_t t_site_faults(const void *pc)
{
	struct t_site_find f = { .pc = (uint64_t)(uintptr_t)pc };

	fl_site_for_each(t_site_cb, &f);
	t_check(f.found, "no registered site at %p", pc);
	return f.faults;
}

static inline uint64_t t_stat_claimed(void)
{
	struct fl_stats st = { .sz = sizeof(st) };

	t_check(fl_stats_get(&st) == 0, "fl_stats_get");
	return st.claimed;
}

/*
 * The code.  Each function has one faulting instruction (its _fault
 * label) and a handler block (_handler) that returns a value the normal
 * path never does:
 *   t_load(p)          returns *p;            handler: T_LOAD_FAILED
 *   t_store(p, v)      *p = v, returns 0;     handler: T_STORE_FAILED
 *   t_store_as_load    t_store, but registered as FaultingLoad (a write
 *                      there must never be claimed)
 */
#define T_LOAD_FAILED 0x5e471e1ull
#define T_STORE_FAILED 0xdeadull

#define T_STR_(x) #x
#define T_STR(x) T_STR_(x)
#define T_FN(name)							\
	"	.globl " #name "\n	.hidden " #name "\n	.type " #name ",@function\n" \
	#name ":\n"
#define T_LABEL(name) "	.globl " #name "\n	.hidden " #name "\n" #name ":\n"

__asm__(
	"	.text\n"
	"	.p2align 4\n"
	T_LABEL(t_code_start)
	T_FN(t_load)
	T_LABEL(t_load_fault)
	"	movq (%rdi), %rax\n"
	"	ret\n"
	T_LABEL(t_load_handler)
	"	movabsq $" T_STR(T_LOAD_FAILED) ", %rax\n"
	"	ret\n"
	"	.size t_load, .-t_load\n"
	T_FN(t_store)
	T_LABEL(t_store_fault)
	"	movq %rsi, (%rdi)\n"
	"	xorl %eax, %eax\n"
	"	ret\n"
	T_LABEL(t_store_handler)
	"	movq $" T_STR(T_STORE_FAILED) ", %rax\n"
	"	ret\n"
	"	.size t_store, .-t_store\n"
	T_FN(t_store_as_load)
	T_LABEL(t_store_as_load_fault)
	"	movq %rsi, (%rdi)\n"
	"	xorl %eax, %eax\n"
	"	ret\n"
	T_LABEL(t_store_as_load_handler)
	"	movq $" T_STR(T_STORE_FAILED) ", %rax\n"
	"	ret\n"
	"	.size t_store_as_load, .-t_store_as_load\n"
	T_LABEL(t_code_end)
);

uint64_t t_load(const volatile uint64_t *p);
uint64_t t_store(volatile uint64_t *p, uint64_t v);
uint64_t t_store_as_load(volatile uint64_t *p, uint64_t v);
extern const char t_code_start[], t_code_end[];
extern const char t_load_fault[], t_load_handler[];
extern const char t_store_fault[], t_store_handler[];
extern const char t_store_as_load_fault[], t_store_as_load_handler[];

static inline uint8_t *t_put(uint8_t *p, const void *v, size_t n)
{
	memcpy(p, v, n);	/* fault maps are little-endian, like x86-64 */
	return p + n;
}

static inline uint8_t *t_put_function(uint8_t *p, const void *fn, uint32_t kind,
			       const char *fault, const char *handler)
{
	uint64_t addr = (uint64_t)(uintptr_t)fn;
	uint32_t one = 1, zero = 0;
	uint32_t fault_off = (uint32_t)(fault - (const char *)fn);
	uint32_t handler_off = (uint32_t)(handler - (const char *)fn);

	p = t_put(p, &addr, 8);
	p = t_put(p, &one, 4);		/* NumFaultingPCs */
	p = t_put(p, &zero, 4);
	p = t_put(p, &kind, 4);
	p = t_put(p, &fault_off, 4);
	return t_put(p, &handler_off, 4);
}

/* Registers t_code; returns the module id. */
static inline int t_register_code(void)
{
	uint8_t map[8 + 3 * 28], *p = map;
	uint8_t hdr[4] = { 1, 0, 0, 0 };
	uint32_t nfunc = 3;
	struct fl_diag diag;
	int id;

	p = t_put(p, hdr, 4);
	p = t_put(p, &nfunc, 4);
	p = t_put_function(p, (const void *)t_load, FL_FAULT_LOAD, t_load_fault, t_load_handler);
	p = t_put_function(p, (const void *)t_store, FL_FAULT_STORE, t_store_fault,
			   t_store_handler);
	p = t_put_function(p, (const void *)t_store_as_load, FL_FAULT_LOAD,
			   t_store_as_load_fault, t_store_as_load_handler);

	struct fl_jit_reg reg = {
		.sz = sizeof(reg),
		.name = "region-selftest",
		.faultmap = map,
		.faultmap_size = (size_t)(p - map),
		.code_start = (uint64_t)(uintptr_t)t_code_start,
		.code_size = (uint64_t)(t_code_end - t_code_start),
	};
	id = fl_jit_register(&reg, &diag);
	t_check(id > 0, "fl_jit_register: %s: %s", strerror(-id), diag.msg);
	return id;
}

/*
 * An application SIGBUS handler (recorded with fl_sigaction, so it is
 * what faultline chains to): it records the siginfo and jumps back to
 * T_CAUGHT.
 */
static sigjmp_buf t_jmp;
static volatile sig_atomic_t t_armed;
static volatile sig_atomic_t t_caught_count;
static siginfo_t t_caught;

static inline void t_app_handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	t_caught = *si;
	t_caught_count++;
	if (!t_armed) {
		char msg[160];
		int n = snprintf(msg, sizeof(msg),
				 "FAIL %s: a SIGBUS reached the application outside T_TRY "
				 "(si_code %d, si_addr %p)\n", t_name, si->si_code, si->si_addr);

		if (write(2, msg, (size_t)n) < 0)
			_exit(1);
		_exit(1);
	}
	t_armed = 0;
	siglongjmp(t_jmp, 1);
}

static inline void t_catch_sigbus(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = t_app_handler;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	t_check(fl_sigaction(SIGBUS, &sa, NULL) == 0, "fl_sigaction: %s", strerror(errno));
}

/* Runs stmt; sets caught (volatile) to 1 when it ended in the application's handler. */
#define T_TRY(caught, stmt)						\
	do {								\
		if (sigsetjmp(t_jmp, 1)) {				\
			(caught) = 1;					\
		} else {						\
			t_armed = 1;					\
			stmt;						\
			t_armed = 0;					\
			(caught) = 0;					\
		}							\
	} while (0)

/*
 * Runs fn in a child without core dumps and with a T_HANG_S alarm (a hang
 * ends as SIGALRM), killed if the test dies first; returns its wait status.
 */
static inline int t_child(void (*fn)(void *), void *arg)
{
	struct rlimit no_core = { 0, 0 };
	pid_t pid, parent = getpid();
	int status;

	fflush(NULL);
	pid = fork();
	t_check(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		/* The test's main thread forks: the signal follows it. */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
			_exit(125);
		setrlimit(RLIMIT_CORE, &no_core);
		alarm(T_HANG_S);
		fn(arg);
		_exit(0);
	}
	t_check(waitpid(pid, &status, 0) == pid, "waitpid: %s", strerror(errno));
	return status;
}

static inline const char *t_status(int status)
{
	static char buf[64];

	if (WIFSIGNALED(status))
		snprintf(buf, sizeof(buf), "killed by %s", strsignal(WTERMSIG(status)));
	else
		snprintf(buf, sizeof(buf), "exit %d", WEXITSTATUS(status));
	return buf;
}

#endif /* FL_SELFTESTS_REGION_COMMON_H */
