// SPDX-License-Identifier: MIT
/*
 * main of the startup benchmark's program (startup-prog.sh): it only
 * starts and exits, so that the run measures loading the program, and
 * with libfaultline-preload.so, fl_init registering its fault map.
 */
#include <stdlib.h>

void throw_npe(void);

/* What the generated functions call when a check fails: never, here. */
void throw_npe(void)
{
	abort();
}

int main(void)
{
	return 0;
}
