// SPDX-License-Identifier: MIT
/*
 * main of the startup benchmark's program (startup-prog.sh): it only
 * starts and exits, so that the run measures loading the program, and
 * with libfaultline-preload.so, fl_init.  With an argument it stays a
 * second first: long enough for the shim's fl-agent thread to register
 * the fault map and say how many checks it found (run.sh's count).
 */
#include <stdlib.h>
#include <unistd.h>

void throw_npe(void);

/* What the generated functions call when a check fails: never, here. */
void throw_npe(void)
{
	abort();
}

int main(int argc, char **argv)
{
	(void)argv;
	if (argc > 1)
		sleep(1);
	return 0;
}
