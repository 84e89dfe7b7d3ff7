// SPDX-License-Identifier: MIT
/*
 * Regions come and go: 20 at once, touched, destroyed, 10 times over.
 * Afterwards the process has the file descriptors and threads it had
 * before (each region holds a userfaultfd, and in helper mode an eventfd
 * and a thread), and no region is mapped any more.  (Not the count of
 * mappings: glibc keeps exited threads' stacks for reuse, and ASan keeps
 * more per thread.  Nor the exact count of every descriptor: under ASan
 * on a busy machine the runtime's own may come and go, so the
 * userfaultfds and eventfds are counted apart, and the rest must not grow.
 * Nor threads the moment a helper was joined: pthread_join returns when the
 * thread has cleared its tid, a moment before the kernel drops it from
 * /proc/self/task, so the counts wait for the ones on their way out.)
 */
#include <sys/mman.h>
#include <dirent.h>
#include <time.h>

#include "common.h"

#define AT_ONCE 20
#define ROUNDS 10

/* Descriptors whose link reads target ("anon_inode:[userfaultfd]"). */
static int count_fds_of(const char *target)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	t_check(d != NULL, "/proc/self/fd: %s", strerror(errno));
	while ((e = readdir(d))) {
		char path[300], link[128];
		ssize_t len;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		len = readlink(path, link, sizeof(link) - 1);
		if (len < 0)
			continue;
		link[len] = 0;
		n += strcmp(link, target) == 0;
	}
	closedir(d);
	return n;
}

static int count_dir(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	int n = 0;

	t_check(d != NULL, "%s: %s", path, strerror(errno));
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/*
 * The threads of the process once those on their way out are gone: the
 * count as soon as it is at most below, or once it has not changed for
 * 50 ms (T_HANG_S at most; below 0: the latter).
 */
static int settled_threads(int below)
{
	struct timespec ms10 = { 0, 10 * 1000 * 1000 };
	int n = count_dir("/proc/self/task"), same = 0;

	for (int i = 0; i < T_HANG_S * 100 && n > below && same < 5; i++) {
		int again;

		nanosleep(&ms10, NULL);
		again = count_dir("/proc/self/task");
		same = again == n ? same + 1 : 0;
		n = again;
	}
	return n;
}

int main(int argc, char **argv)
{
	uint32_t flags = t_start(argc, argv);
	struct fl_region *r[AT_ONCE];
	int fds, uffds, efds, threads;
	uint8_t tmpl[1 << 16];

	t_init();
	memset(tmpl, 0x3c, sizeof(tmpl));
	/* One region first: whatever the first use sets up once is not a leak. */
	fl_region_destroy(t_region(t_page, t_page, tmpl, flags));
	fds = count_dir("/proc/self/fd");
	uffds = count_fds_of("anon_inode:[userfaultfd]");
	efds = count_fds_of("anon_inode:[eventfd]");
	threads = settled_threads(0);

	for (int round = 0; round < ROUNDS; round++) {
		void *base[AT_ONCE];

		for (int i = 0; i < AT_ONCE; i++) {
			r[i] = t_region((size_t)(i + 1) << 20, 4 * t_page, i % 2 ? tmpl : NULL, flags);
			base[i] = fl_region_base(r[i]);
			((volatile uint8_t *)base[i])[t_page] = 1;
		}
		for (int i = 0; i < AT_ONCE; i++)
			fl_region_destroy(r[i]);
		for (int i = 0; i < AT_ONCE; i++)
			t_check(msync(base[i], t_page, MS_ASYNC) == -1 && errno == ENOMEM,
				"round %d: region %d is still mapped", round, i);
	}
	t_check(count_fds_of("anon_inode:[userfaultfd]") == uffds, "userfaultfds: %d, were %d",
		count_fds_of("anon_inode:[userfaultfd]"), uffds);
	t_check(count_fds_of("anon_inode:[eventfd]") == efds, "eventfds: %d, were %d",
		count_fds_of("anon_inode:[eventfd]"), efds);
	t_check(count_dir("/proc/self/fd") <= fds, "file descriptors: %d, were %d",
		count_dir("/proc/self/fd"), fds);
	t_check(settled_threads(threads) <= threads, "threads: %d, were %d",
		count_dir("/proc/self/task"), threads);
	printf("PASS %s (%s): %d regions\n", t_name, flags ? "helper" : "sigbus", AT_ONCE * ROUNDS);
	return 0;
}
