// SPDX-License-Identifier: MIT
/*
 * Workers that block every signal (sigfillset + pthread_sigmask: "signals
 * go to one thread"), calling the code in a loop, while the main thread
 * changes it, within one instruction and moving boundaries: the process
 * lives (today a worker that runs into a patch's int3 is killed by the
 * forced SIGTRAP, and the process with it), and each change is made (0,
 * the bytes new) or refused with -EBUSY by a message that says a thread
 * blocks SIGTRAP or the handshake's signal (the bytes unchanged).
 * masked_workers.h has the rest.
 */
#include "masked_workers.h"

static bool says_blocked(const char *msg)
{
	return strstr(msg, "block") && (strstr(msg, "SIGTRAP") || strstr(msg, "signal"));
}

int main(int argc, char **argv)
{
	static const struct mw_expect e = {
		.one_may_refuse = true, .move_may_refuse = true, .reason_ok = says_blocked,
		.reason = "that a thread blocks SIGTRAP or the handshake's signal",
	};
	sigset_t all;

	sigfillset(&all);
	return mw_run(argc, argv, &all, &e);
}
