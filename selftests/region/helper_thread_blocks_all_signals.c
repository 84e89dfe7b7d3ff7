// SPDX-License-Identifier: MIT
/*
 * The helper thread blocks every signal it can (all but SIGKILL, SIGSTOP
 * and the two glibc keeps for itself), so that no signal meant for the
 * application lands there, and it is gone after fl_region_destroy.
 */
#include <dirent.h>
#include <sys/syscall.h>

#include "common.h"

/*
 * Returns the SigBlk mask of the thread named fl-region, or false.  Waits
 * until it is in its poll: a new thread runs with every signal blocked
 * until its start routine sets the mask it was created with.
 */
static bool helper_mask(uint64_t *mask)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	bool found = false;

	t_check(d != NULL, "/proc/self/task: %s", strerror(errno));
	while ((e = readdir(d)) && !found) {
		char path[300], buf[4096];
		FILE *f;
		size_t n;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[n] = 0;
		if (strcmp(buf, "fl-region\n") != 0)
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/syscall", e->d_name);
		for (int tries = 0;; tries++) {
			long nr;

			f = fopen(path, "r");
			t_check(f != NULL, "%s", path);
			if (fscanf(f, "%ld", &nr) != 1)
				nr = -1;
			fclose(f);
			if (nr == SYS_poll || nr == SYS_ppoll)
				break;
			t_check(tries < T_HANG_S * 1000, "the helper thread never reached poll");
			usleep(1000);
		}
		snprintf(path, sizeof(path), "/proc/self/task/%s/status", e->d_name);
		f = fopen(path, "r");
		t_check(f != NULL, "%s", path);
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[n] = 0;
		t_check(strstr(buf, "\nSigBlk:") != NULL, "no SigBlk in %s", path);
		*mask = strtoull(strstr(buf, "\nSigBlk:") + 8, NULL, 16);
		found = true;
	}
	closedir(d);
	return found;
}

int main(int argc, char **argv)
{
	struct fl_region *r;
	uint64_t mask = 0;

	t_start(argc, argv);
	t_init();
	r = t_region(16 * t_page, 16 * t_page, NULL, FL_REGION_HELPER_THREAD);
	t_check(helper_mask(&mask), "no thread named fl-region");
	for (int sig = 1; sig <= 64; sig++) {
		bool blocked = (mask >> (sig - 1)) & 1;

		if (sig == SIGKILL || sig == SIGSTOP || sig == 32 || sig == 33)
			continue;
		t_check(blocked, "the helper thread does not block signal %d (SigBlk %016llx)",
			sig, (unsigned long long)mask);
	}
	fl_region_destroy(r);
	t_check(!helper_mask(&mask), "the helper thread outlived fl_region_destroy");
	printf("PASS %s: SigBlk %016llx\n", t_name, (unsigned long long)mask);
	return 0;
}
