// SPDX-License-Identifier: MIT
/*
 * stub_frames_unwind_to_main: a thread inside a healed site's new code is
 * interrupted by a signal whose handler walks its stack with libunwind
 * (unw_step) and with glibc's backtrace() (libgcc_s): both walks step out
 * of the new code and reach main.  Twice: load_i8's site healed in place
 * (its stub), and healed by relocating its function (FAULTLINE_HEAL_TACTICS
 * =REL: the copy).  The main thread calls load_i8 with null and valid
 * pointers in a loop, and another thread signals it until enough signals
 * have landed in the new code (at most 20 s); every such walk must reach
 * main, by both unwinders.  And the process's perf map (written by
 * faultline: the test has none of its own) names the new code
 * faultline:heal:load_i8+0x..., at the address and with the size the stub
 * or the copy has.
 */
#define UNW_LOCAL_ONLY
#include <dlfcn.h>
#include <libunwind.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <ucontext.h>

#include "common.h"

#define FRAMES 64
#define WANT 20

int8_t load_i8(int8_t *p);
void throw_npe(void);

void throw_npe(void)
{
}

static int (*glibc_backtrace)(void **, int);
static uint64_t code_lo, code_hi;
static uint64_t main_lo, main_hi;
static _Atomic int stop;
static _Atomic long inside, reached[2], missed[2];

static bool in_main(uint64_t ip)
{
	return ip > main_lo && ip <= main_hi;
}

/* The handler: in the new code? then both walks, each must reach main. */
static void on_signal(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	uint64_t pc = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
	void *bt[FRAMES];
	unw_context_t ctx;
	unw_cursor_t c;
	unw_word_t ip;
	bool found = false;
	int n;

	(void)sig;
	(void)si;
	if (pc < code_lo || pc >= code_hi)
		return;
	inside++;
	unw_getcontext(&ctx);
	if (unw_init_local(&c, &ctx) == 0) {
		for (int i = 0; i < FRAMES && unw_step(&c) > 0; i++)
			if (unw_get_reg(&c, UNW_REG_IP, &ip) == 0 && in_main((uint64_t)ip))
				found = true;
	}
	found ? reached[0]++ : missed[0]++;
	found = false;
	n = glibc_backtrace(bt, FRAMES);
	for (int i = 0; i < n; i++)
		if (in_main((uint64_t)(uintptr_t)bt[i]))
			found = true;
	found ? reached[1]++ : missed[1]++;
}

static pthread_t main_thread;

/* Signals the main thread until WANT signals have landed in the new code, 20 s at most. */
static void *signaller(void *arg)
{
	struct timespec t0, t;

	(void)arg;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		pthread_kill(main_thread, SIGUSR1);
		nanosleep(&(struct timespec){ .tv_nsec = 50000 }, NULL);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (inside < WANT && t.tv_sec - t0.tv_sec < 20);
	atomic_store(&stop, 1);
	return NULL;
}

/* The perf map's line for the new code at at: its name, or the test fails. */
static void perf_map_names(const char *how, uint64_t at)
{
	char path[64], line[512], name[256];
	unsigned long long start, size;
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	f = fopen(path, "r");
	t_check(f != NULL, "%s: %s: %s", how, path, strerror(errno));
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx %llx %255s", &start, &size, name) == 3 && start == at) {
			found = strncmp(name, "faultline:heal:load_i8+0x", 25) == 0 && size > 0;
			printf("%s: %s: %s", t_name, path, line);
		}
	fclose(f);
	t_check(found, "%s: %s has no faultline:heal:load_i8 line at 0x%llx", how, path,
		(unsigned long long)at);
}

/* One round: heal, call until WANT signals landed in the new code, unheal. */
static void round_of(const char *how, uint64_t site)
{
	struct fl_heal_info info;
	int8_t v = 7;
	pthread_t th;

	t_heal(site);
	info = t_heal_info(site);
	/* The new code is in a page of its own (stubs.c): the page is its range. */
	code_lo = info.stub & ~(uint64_t)4095;
	code_hi = code_lo + 4096;
	inside = reached[0] = reached[1] = missed[0] = missed[1] = 0;
	atomic_store(&stop, 0);
	t_check(pthread_create(&th, NULL, signaller, NULL) == 0, "pthread_create");
	while (!atomic_load(&stop)) {
		load_i8(NULL);
		load_i8(&v);
	}
	pthread_join(th, NULL);
	printf("%s: %s (%s, new code at 0x%llx): %ld signals in it; libunwind reached main %ld "
	       "times, missed %ld; backtrace() %ld, missed %ld\n", t_name, how, info.tactic,
	       (unsigned long long)info.stub, (long)inside, (long)reached[0], (long)missed[0],
	       (long)reached[1], (long)missed[1]);
	t_check(inside >= WANT, "%s: only %ld signals landed in the new code", how, (long)inside);
	perf_map_names(how, info.stub);
	t_check(!missed[0] && !missed[1], "%s: a walk from the new code did not reach main", how);
	t_unheal(site);
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_sigaction = on_signal, .sa_flags = SA_SIGINFO | SA_RESTART };
	struct t_sites t;
	uint64_t site = 0, fn = (uint64_t)(uintptr_t)load_i8;
	unw_proc_info_t pi;
	unw_cursor_t c;
	unw_context_t ctx;
	void *warm[4];

	(void)argc;
	t_start(argv);
	glibc_backtrace = (int (*)(void **, int))dlsym(dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD),
						       "backtrace");
	t_check(glibc_backtrace, "glibc's backtrace not found: %s", dlerror());
	/* backtrace() loads libgcc_s at its first call: not in the handler. */
	glibc_backtrace(warm, 4);
	/* main's extent, from its unwind entry. */
	unw_getcontext(&ctx);
	t_check(unw_init_local(&c, &ctx) == 0 && unw_get_proc_info(&c, &pi) == 0,
		"main has no unwind entry");
	main_lo = pi.start_ip;
	main_hi = pi.end_ip;
	t_init_discovering();
	t_enable();
	t_sites_get(&t);
	for (size_t i = 0; i < t.n && !site; i++)
		if (t.pc[i] >= fn && t.pc[i] < fn + 16)
			site = t.pc[i];
	t_check(site, "load_i8 has no registered site");
	t_check(sigaction(SIGUSR1, &sa, NULL) == 0, "sigaction");
	main_thread = pthread_self();
	round_of("healed in place", site);
	setenv("FAULTLINE_HEAL_TACTICS", "REL", 1);
	round_of("healed by relocation", site);
	printf("PASS %s\n", t_name);
	return 0;
}
