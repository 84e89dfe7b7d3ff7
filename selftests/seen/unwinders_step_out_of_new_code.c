// SPDX-License-Identifier: MIT
/*
 * unwinders_step_out_of_new_code: a thread inside new code registered with
 * fl_seen_add (seen_test.h's, with 144 bytes of a null path's pushes on
 * the stack), and inside a function the new code called (16 more bytes),
 * is interrupted by a signal whose handler walks its stack with libunwind
 * (unw_step) and with glibc's backtrace() (libgcc_s): both walks pass
 * through the new code and reach main.  After fl_seen_remove the same
 * walks stop at the new code: without the registration the test fails.
 */
#define UNW_LOCAL_ONLY
#include <dlfcn.h>
#include <libunwind.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "seen_test.h"

#define FRAMES 64

static struct seen_flags flags;
static uint64_t code_lo, code_hi;
static void *main_ret;		/* where run_case returns into main */
static pthread_t main_thread;
static volatile int walked;
/*
 * glibc's backtrace() (libgcc_s's _Unwind_Backtrace), found in libc by
 * name: libunwind.so.8, which the test links, defines a weak backtrace of
 * its own (unw_backtrace) that would take its place.
 */
static int (*glibc_backtrace)(void **, int);

/* What each walk found: [stage 1, stage 3][libunwind, backtrace]. */
static struct walk {
	int frames;
	bool new_code;		/* a frame in [code_lo, code_hi) */
	bool main;		/* then one that returns into main */
	uint64_t ip[FRAMES];
} seen[2][2];

static void note(struct walk *w, uint64_t ip)
{
	w->ip[w->frames++] = ip;
	if (ip >= code_lo && ip < code_hi)
		w->new_code = true;
	else if (w->new_code && ip == (uint64_t)(uintptr_t)main_ret)
		w->main = true;
}

static void on_signal(int sig)
{
	struct walk *w = seen[flags.stage == 3];
	void *bt[FRAMES];
	unw_context_t uc;
	unw_cursor_t c;
	unw_word_t ip;
	int n;

	(void)sig;
	memset(w, 0, 2 * sizeof(*w));
	unw_getcontext(&uc);
	if (unw_init_local(&c, &uc) == 0) {
		do {
			if (unw_get_reg(&c, UNW_REG_IP, &ip) < 0)
				break;
			note(&w[0], ip);
		} while (w[0].frames < FRAMES && unw_step(&c) > 0);
	}
	n = glibc_backtrace(bt, FRAMES);
	for (int i = 0; i < n; i++)
		note(&w[1], (uint64_t)(uintptr_t)bt[i]);
	walked++;
}

static void callee(struct seen_flags *f)
{
	f->stage = 3;
	while (!f->go2)
		__builtin_ia32_pause();
}

static void *interrupter(void *arg)
{
	(void)arg;
	while (flags.stage != 1)
		__builtin_ia32_pause();
	pthread_kill(main_thread, SIGUSR1);
	while (walked != 1)
		__builtin_ia32_pause();
	flags.go = 1;
	while (flags.stage != 3)
		__builtin_ia32_pause();
	pthread_kill(main_thread, SIGUSR1);
	while (walked != 2)
		__builtin_ia32_pause();
	flags.go2 = 1;
	return NULL;
}

static __attribute__((noinline)) void run_case(uint8_t *code)
{
	pthread_t t;

	main_ret = __builtin_return_address(0);
	memset((void *)&flags, 0, sizeof(flags));
	walked = 0;
	t_check(!pthread_create(&t, NULL, interrupter, NULL), "pthread_create failed");
	orig_fn(&flags, callee, code);
	pthread_join(t, NULL);
	__asm__ volatile("" ::: "memory");
}

static void show(const char *when)
{
	static const char *const where[2] = { "in the new code (144 bytes pushed)",
					      "in its callee (16 bytes pushed)" };
	static const char *const how[2] = { "libunwind", "backtrace()" };

	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 2; j++)
			printf("  %s, %s, %s: %d frames, new code %s, main %s\n", when, where[i],
			       how[j], seen[i][j].frames, seen[i][j].new_code ? "seen" : "not seen",
			       seen[i][j].main ? "reached" : "not reached");
	if (getenv("SEEN_FRAMES"))
		for (int i = 0; i < 2; i++)
			for (int j = 0; j < 2; j++)
				for (int k = 0; k < seen[i][j].frames; k++)
					printf("    [%d][%d] #%d %#llx\n", i, j, k,
					       (unsigned long long)seen[i][j].ip[k]);
}

int main(void)
{
	struct sigaction sa = { .sa_handler = on_signal };
	char name[256];
	struct fl_seen *s;
	uint8_t *code;
	void *warm[4];

	t_name = "unwinders_step_out_of_new_code";
	fl_set_log(t_log, NULL);
	main_thread = pthread_self();
	sigemptyset(&sa.sa_mask);
	t_check(!sigaction(SIGUSR1, &sa, NULL), "sigaction failed");
	glibc_backtrace = (int (*)(void **, int))dlsym(dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD),
						       "backtrace");
	t_check(glibc_backtrace, "glibc's backtrace not found: %s", dlerror());
	/* backtrace() loads libgcc_s at its first call: not in the handler. */
	glibc_backtrace(warm, 4);
	code = seen_copy_nc();
	code_lo = (uint64_t)(uintptr_t)code;
	code_hi = code_lo + seen_nc_len();
	s = seen_add_nc(code, name, sizeof(name));
	t_check(fl_seen_unwindable(s), "registered, but not with both unwinders");
	printf("  %s at %p, %zu bytes\n", name, (void *)code, seen_nc_len());
	run_case(code);
	show("registered");
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 2; j++)
			t_check(seen[i][j].new_code && seen[i][j].main,
				"registered: a walk %s did not reach main through the new code",
				i ? "from the callee" : "from the new code");
	fl_seen_remove(s);
	run_case(code);
	show("removed");
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 2; j++)
			t_check(!seen[i][j].main, "removed: a walk still reached main: the "
				"registration is not what made it pass");
	printf("PASS %s\n", t_name);
	return 0;
}
