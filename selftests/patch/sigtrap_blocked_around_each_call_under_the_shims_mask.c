// SPDX-License-Identifier: MIT
/*
 * Under the shim's signal mask (issue 26): workers that block SIGTRAP
 * around every call of code that the main thread changes 10,000 times
 * (argv[1]) within one instruction.  A block reaches only the shim's
 * virtual set, never the kernel (the workers' SigBlk never names
 * SIGTRAP), so no worker is ever killed by a patch's int3, whenever it
 * blocks: every change is made, every call returns 1 or 2, the process
 * lives.
 *
 * A program cannot both call fl_patch_text and run under
 * libfaultline-preload.so (which hides the library), so the shim's
 * interposers (lib/preload/mask.c) are linked into this one with the
 * library, and fl_preload_mask_start is called as the shim's constructor
 * does.  The workers block SIGTRAP from libtoggle.so: the interposers pass
 * to the kernel the calls made from their own module, here this program.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "common.h"
#include "preload/mask.h"
#include "toggle/toggle.h"

#define WORKERS 2
#define CHANGES 10000
#define LIMIT_S 600

static struct t_site site;
static _Atomic int stop, ready;
static _Atomic uint64_t calls, wrong, looked, kernel_blocked;

/* Whether the kernel blocks SIGTRAP for this thread (its SigBlk). */
static bool kernel_blocks_sigtrap(void)
{
	char line[256];
	unsigned long long blk = 0;
	FILE *f = fopen("/proc/thread-self/status", "r");

	t_check(f != NULL, "/proc/thread-self/status: %s", strerror(errno));
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "SigBlk: %llx", &blk) == 1)
			break;
	fclose(f);
	return blk & (1ull << (SIGTRAP - 1));
}

static void *worker(void *arg)
{
	uint64_t n = 0;

	(void)arg;
	atomic_fetch_add(&ready, 1);
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		int r;

		t_check(toggle_sigtrap(1) == 0, "pthread_sigmask");
		r = site.fn();
		if ((n & 1023) == 0) {
			atomic_fetch_add(&looked, 1);
			if (kernel_blocks_sigtrap())
				atomic_fetch_add(&kernel_blocked, 1);
		}
		t_check(toggle_sigtrap(0) == 0, "pthread_sigmask");
		if (r != 1 && r != 2 && atomic_fetch_add(&wrong, 1) < 5)
			fprintf(stderr, "%s: a call returned 0x%x\n", t_name, r);
		n++;
	}
	atomic_fetch_add(&calls, n);
	return NULL;
}

static void child(long changes) __attribute__((noreturn));
static void child(long changes)
{
	pthread_t th[WORKERS];

	t_in_child = 1;
	t_init();
	t_enable();
	/* SIGTRAP is faultline's now: the shim's mask takes it over. */
	fl_preload_mask_start();
	site = t_one_site();
	for (int i = 0; i < WORKERS; i++)
		t_check(pthread_create(&th[i], NULL, worker, NULL) == 0, "pthread_create");
	while (atomic_load(&ready) < WORKERS)
		sched_yield();
	for (long i = 0; i < changes; i++) {
		struct fl_diag d;
		int err = t_flip(&site, &d);

		t_check(err == 0, "change %ld: %d (%s): %s", i, err, strerror(-err), d.msg);
		t_check(t_site_is_whole(&site), "change %ld returned 0, and the bytes are not its "
			"new version", i);
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < WORKERS; i++)
		pthread_join(th[i], NULL);
	printf("  %ld changes; the workers: %llu calls, %llu wrong; SigBlk looked at %llu times "
	       "while SIGTRAP was blocked, the kernel blocked it %llu times\n", changes,
	       (unsigned long long)calls, (unsigned long long)wrong,
	       (unsigned long long)looked, (unsigned long long)kernel_blocked);
	t_check(wrong == 0, "%llu calls returned a mix of versions", (unsigned long long)wrong);
	t_check(looked > 0 && kernel_blocked == 0, "the kernel blocked SIGTRAP %llu times of %llu",
		(unsigned long long)kernel_blocked, (unsigned long long)looked);
	_exit(0);
}

int main(int argc, char **argv)
{
	long changes = argc > 1 && atol(argv[1]) > 0 ? atol(argv[1]) : CHANGES;
	pid_t pid;

	t_start(argv);
	fflush(stdout);
	pid = fork();
	t_check(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0)
		child(changes);
	t_child_exits_0(pid, LIMIT_S);
	printf("PASS %s\n", t_name);
	return 0;
}
