// SPDX-License-Identifier: MIT
/*
 * membarrier(MEMBARRIER_CMD_QUERY) lists PRIVATE_EXPEDITED_SYNC_CORE, the
 * command the patcher uses on arm64 to make the other threads see changed
 * code (DESIGN.md, "arm64"), and after registering it the command itself
 * returns 0.
 */
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common.h"

static long membarrier(int cmd)
{
	return syscall(__NR_membarrier, cmd, 0, 0);
}

int main(void)
{
	struct utsname u;
	long mask;

	t_uname(&u);
	mask = membarrier(MEMBARRIER_CMD_QUERY);
	t_check(mask >= 0, "MEMBARRIER_CMD_QUERY: %s", strerror(errno));
	printf("membarrier: commands 0x%lx: PRIVATE_EXPEDITED %s, PRIVATE_EXPEDITED_SYNC_CORE %s, "
	       "PRIVATE_EXPEDITED_RSEQ %s\n", mask,
	       mask & MEMBARRIER_CMD_PRIVATE_EXPEDITED ? "yes" : "no",
	       mask & MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE ? "yes" : "no",
	       mask & MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ ? "yes" : "no");
	t_check(mask & MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE,
		"QUERY does not list PRIVATE_EXPEDITED_SYNC_CORE");
	t_check(membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE) == 0,
		"REGISTER_PRIVATE_EXPEDITED_SYNC_CORE: %s", strerror(errno));
	t_check(membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE) == 0,
		"PRIVATE_EXPEDITED_SYNC_CORE: %s", strerror(errno));
	printf("PASS membarrier_offers_sync_core\n");
	return 0;
}
