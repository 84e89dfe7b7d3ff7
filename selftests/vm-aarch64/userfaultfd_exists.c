// SPDX-License-Identifier: MIT
/*
 * userfaultfd(2) exists (a descriptor, or EPERM when the caller may not
 * use it; never ENOSYS), and its API handshake names the features
 * faultline's regions use: MISSING faults reported as SIGBUS
 * (UFFD_FEATURE_SIGBUS) and MINOR faults on shmem.  Write-protect mode is
 * reported, not required: Debian's arm64 6.1 has none.
 */
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common.h"

int main(void)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct utsname u;
	int fd;

	t_uname(&u);
	fd = syscall(__NR_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
	t_check(fd >= 0 || errno != ENOSYS, "userfaultfd: ENOSYS (no CONFIG_USERFAULTFD)");
	if (fd < 0) {
		t_check(errno == EPERM, "userfaultfd: %s", strerror(errno));
		printf("userfaultfd: EPERM (exists; this caller may not use it)\n");
		printf("PASS userfaultfd_exists\n");
		return 0;
	}
	t_check(ioctl(fd, UFFDIO_API, &api) == 0, "UFFDIO_API: %s", strerror(errno));
	printf("userfaultfd: fd %d, features 0x%llx: SIGBUS %s, MINOR_SHMEM %s, "
	       "PAGEFAULT_FLAG_WP %s; ioctls 0x%llx\n", fd, (unsigned long long)api.features,
	       api.features & UFFD_FEATURE_SIGBUS ? "yes" : "no",
	       api.features & UFFD_FEATURE_MINOR_SHMEM ? "yes" : "no",
	       api.features & UFFD_FEATURE_PAGEFAULT_FLAG_WP ? "yes" : "no",
	       (unsigned long long)api.ioctls);
	t_check(api.features & UFFD_FEATURE_SIGBUS, "no UFFD_FEATURE_SIGBUS");
	t_check(api.features & UFFD_FEATURE_MINOR_SHMEM, "no UFFD_FEATURE_MINOR_SHMEM");
	close(fd);
	printf("PASS userfaultfd_exists\n");
	return 0;
}
