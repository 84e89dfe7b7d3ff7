// SPDX-License-Identifier: MIT
/*
 * Regions use UFFD_USER_MODE_ONLY: a fault from kernel mode is not
 * handled.  A syscall that writes into a page nobody touched yet fails
 * with EFAULT (no signal, no wait); into a touched page it works.
 */
#include <fcntl.h>

#include "common.h"

int main(int argc, char **argv)
{
	uint32_t flags = t_start(argc, argv);
	struct fl_region *r;
	uint8_t *base;
	ssize_t n;
	int fd;

	t_init();
	r = t_region(16 * t_page, 16 * t_page, NULL, flags);
	base = fl_region_base(r);
	fd = open("/dev/urandom", O_RDONLY);
	t_check(fd >= 0, "/dev/urandom: %s", strerror(errno));

	n = read(fd, base + 3 * t_page, 64);
	t_check(n == -1 && errno == EFAULT, "read into an untouched page: %zd (%s)", n,
		n < 0 ? strerror(errno) : "no error");
	base[5 * t_page] = 1;
	n = read(fd, base + 5 * t_page, 64);
	t_check(n == 64, "read into a touched page: %zd (%s)", n, n < 0 ? strerror(errno) : "");
	close(fd);
	fl_region_destroy(r);
	printf("PASS %s (%s)\n", t_name, flags ? "helper" : "sigbus");
	return 0;
}
