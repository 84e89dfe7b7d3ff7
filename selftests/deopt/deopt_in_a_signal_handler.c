// SPDX-License-Identifier: MIT
/*
 * Compiled code called from a signal handler deoptimizes there: the
 * handler's callee gets the handler's value, and the interrupted code goes
 * on after the signal handler returns, its registers intact.
 */
#include <signal.h>
#include <stdio.h>

#include "common.h"

static volatile sig_atomic_t in_signal;
static volatile int64_t got, given;
static unsigned handled;

static void handler(const struct fl_deopt_state *st, struct fl_deopt_return *ret, void *ctx)
{
	char why[256];

	(void)ctx;
	t_check(in_signal, "deoptimized outside the signal handler");
	if (!ret_handle(st, ret, why, sizeof(why)))
		t_fail("handler: %s", why);
	handled++;
}

static void on_usr1(int sig)
{
	(void)sig;
	in_signal = 1;
	got = ret_i64(given, true);
	in_signal = 0;
}

int main(void)
{
	struct sigaction sa = { .sa_handler = on_usr1 };
	volatile double acc = 0;

	t_start("deopt_in_a_signal_handler");
	t_check(fl_deopt_set_handler(handler, NULL) == 0, "fl_deopt_set_handler");
	sigemptyset(&sa.sa_mask);
	t_check(sigaction(SIGUSR1, &sa, NULL) == 0, "sigaction");
	for (int i = 0; i < 1000; i++) {
		double before = acc;

		given = (int64_t)i * 1000003 - 12345;
		raise(SIGUSR1);
		t_check(got == ret_i64_expected(given), "in the signal handler: %lld, not %lld",
			(long long)got, (long long)ret_i64_expected(given));
		acc = before + 1.5;
		t_check(acc == before + 1.5, "the interrupted code's state");
	}
	t_check(handled == 1000, "%u deoptimizations", handled);
	printf("PASS %s: %u deoptimizations in a signal handler\n", t_name, handled);
	return 0;
}
