// SPDX-License-Identifier: MIT
/*
 * A program that loads faultline's preload shim as a library it needs
 * (linked to it, found by its run path /run/fl-setid-lib, which setid.sh
 * fills in its own mount namespace): how the shim comes into a set-id
 * program, which ignores LD_PRELOAD.  Prints "ready PID 0", then reads
 * stdin to its end and exits 0.
 */
#include <stdio.h>
#include <unistd.h>

int main(void)
{
	char line[64];

	printf("ready %d 0\n", (int)getpid());
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin))
		;
	return 0;
}
