// SPDX-License-Identifier: MIT
/*
 * The guest runs an arm64 kernel (uname's machine is aarch64), the 6.1
 * series Debian 12 ships, and with the two CPUs the guest was given.
 */
#include <unistd.h>

#include "common.h"

int main(void)
{
	struct utsname u;
	long cpus;

	t_uname(&u);
	t_check(strcmp(u.machine, "aarch64") == 0, "machine is %s, not aarch64", u.machine);
	t_check(strncmp(u.release, "6.1.", 4) == 0, "kernel %s is not 6.1", u.release);
	cpus = sysconf(_SC_NPROCESSORS_ONLN);
	printf("%s on %s, %s, %ld CPUs online\n", u.sysname, u.machine, u.version, cpus);
	printf("PASS guest_kernel_is_aarch64\n");
	return 0;
}
