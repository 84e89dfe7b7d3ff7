// SPDX-License-Identifier: MIT
/*
 * Workers that block SIGTRAP only, calling the code in a loop, while the
 * main thread changes it, within one instruction and moving boundaries:
 * every change is made (0, the bytes new) and the process lives (today a
 * worker that runs into a patch's int3 is killed by the forced SIGTRAP, and
 * the process with it).  masked_workers.h has the rest.
 */
#include "masked_workers.h"

static bool never(const char *msg)
{
	(void)msg;
	return false;
}

int main(int argc, char **argv)
{
	static const struct mw_expect e = { .reason_ok = never, .reason = "(none is allowed)" };
	sigset_t trap;

	sigemptyset(&trap);
	sigaddset(&trap, SIGTRAP);
	return mw_run(argc, argv, &trap, &e);
}
