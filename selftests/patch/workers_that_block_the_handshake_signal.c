// SPDX-License-Identifier: MIT
/*
 * Workers that block only the handshake's signal (SIGRTMAX - 1, the
 * default), calling the code in a loop, while the main thread changes it:
 * changes within one instruction are made (0, the bytes new); changes that
 * move boundaries are made, or refused with -EBUSY by a message that names
 * the signal (the bytes unchanged), never written on a guess.  A refusal
 * should come at once, not after the handshake's 2 s wait: the times are
 * printed, not asserted.  masked_workers.h has the rest.
 */
#include "masked_workers.h"

static char signo[16];

static bool names_the_signal(const char *msg)
{
	return strstr(msg, "block") && (strstr(msg, signo) || strstr(msg, "SIGRTMAX"));
}

int main(int argc, char **argv)
{
	static const struct mw_expect e = {
		.move_may_refuse = true, .reason_ok = names_the_signal,
		.reason = "that a thread blocks the handshake's signal, by its number or name",
	};
	sigset_t rt;

	snprintf(signo, sizeof(signo), "%d", SIGRTMAX - 1);
	sigemptyset(&rt);
	sigaddset(&rt, SIGRTMAX - 1);
	return mw_run(argc, argv, &rt, &e);
}
