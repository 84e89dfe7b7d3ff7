/* SPDX-License-Identifier: MIT */
/*
 * What the workers_that_block_* tests share: a child process whose
 * workers block some signals (pthread_sigmask) and call both of common.h's
 * sites in a loop, while its main thread makes 50,000 changes (argv[1]):
 * ten of them move instruction boundaries (t_move_site), the others are
 * within one instruction (t_one_site).  Each change either returns 0, and the bytes
 * are its new version, or, where the test allows, is refused with -EBUSY
 * and a message the test accepts, and the bytes are unchanged.  Every call
 * of the workers returns 1 or 2.  The parent checks how the child ended:
 * exit status 0, not killed (a blocked SIGTRAP raised by an int3 is forced
 * by the kernel, with its default action).  Refusals are timed and the
 * times printed, not asserted.
 */
#ifndef FL_TEST_PATCH_MASKED_WORKERS_H
#define FL_TEST_PATCH_MASKED_WORKERS_H

#include <pthread.h>
#include <stdatomic.h>

#include "common.h"

#define MW_WORKERS 2
/*
 * A worker meets a change's int3 only if it runs in the few microseconds
 * the int3 is there; on a loaded machine of 2 cores that happens in about
 * one change in a thousand.  So: many changes (argv[1] to change it), ten
 * of them moving boundaries.
 */
#define MW_CHANGES 50000
/* The child's whole run: minutes, for TCG on a busy machine. */
#define MW_LIMIT_S 600

struct mw_expect {
	/* Which changes may be refused with -EBUSY. */
	bool one_may_refuse, move_may_refuse;
	/* Whether a refusal's message says the reason the test expects. */
	bool (*reason_ok)(const char *msg);
	const char *reason;	/* that reason, for a failure's message */
};

static sigset_t mw_mask;
static struct t_site mw_one, mw_move;
static long mw_changes = MW_CHANGES;
static _Atomic int mw_stop, mw_ready;
static _Atomic uint64_t mw_calls, mw_wrong;

static void *mw_worker(void *arg)
{
	uint64_t n = 0;

	(void)arg;
	t_check(pthread_sigmask(SIG_BLOCK, &mw_mask, NULL) == 0, "pthread_sigmask");
	atomic_fetch_add(&mw_ready, 1);
	while (!atomic_load_explicit(&mw_stop, memory_order_relaxed)) {
		int a = mw_one.fn(), b = mw_move.fn();

		n++;
		if ((a != 1 && a != 2) || (b != 1 && b != 2))
			if (atomic_fetch_add(&mw_wrong, 1) < 5)
				fprintf(stderr, "%s: a call returned 0x%x, 0x%x\n", t_name, a, b);
	}
	atomic_fetch_add(&mw_calls, n);
	return NULL;
}

/* Made and refused changes of one kind, and the refusals' times. */
struct mw_count {
	int made, refused;
	double fastest, slowest;
};

static void mw_child(const struct mw_expect *e) __attribute__((noreturn));
static void mw_child(const struct mw_expect *e)
{
	struct mw_count count[2] = { { .fastest = 1e9 }, { .fastest = 1e9 } };
	pthread_t th[MW_WORKERS];

	t_in_child = 1;
	t_init();
	t_enable();
	mw_one = t_one_site();
	mw_move = t_move_site();
	for (int i = 0; i < MW_WORKERS; i++)
		t_check(pthread_create(&th[i], NULL, mw_worker, NULL) == 0, "pthread_create");
	while (atomic_load(&mw_ready) < MW_WORKERS)
		sched_yield();

	for (long i = 0; i < mw_changes; i++) {
		struct t_site *s = i % (mw_changes / 10 > 0 ? mw_changes / 10 : 1) == 0 ? &mw_move : &mw_one;
		struct mw_count *c = &count[s->moves];
		const char *kind = s->moves ? "moving boundaries" : "within one instruction";
		struct fl_diag d;
		double t0 = t_now(), dt;
		int err = t_flip(s, &d);

		dt = t_now() - t0;
		if (err == 0) {
			t_check(t_site_is_whole(s), "change %ld (%s) returned 0, and the bytes are not "
				"its new version", i, kind);
			c->made++;
			continue;
		}
		t_check(err == -EBUSY && (s->moves ? e->move_may_refuse : e->one_may_refuse),
			"change %ld (%s): %d (%s), not 0: %s", i, kind, err, strerror(-err), d.msg);
		t_check(e->reason_ok(d.msg), "change %ld (%s) refused, but the message does not say "
			"%s: %s", i, kind, e->reason, d.msg);
		t_check(t_site_is_whole(s), "change %ld (%s) refused, and the bytes changed", i, kind);
		/* Said at once: the process may not live to the summary. */
		if (!c->refused++)
			printf("  change %ld (%s) refused in %.1f ms: %s\n", i, kind, dt * 1e3, d.msg);
		c->fastest = dt < c->fastest ? dt : c->fastest;
		c->slowest = dt > c->slowest ? dt : c->slowest;
	}
	atomic_store(&mw_stop, 1);
	for (int i = 0; i < MW_WORKERS; i++)
		pthread_join(th[i], NULL);

	for (int m = 0; m < 2; m++) {
		printf("  %s: %d made, %d refused", m ? "moving boundaries" : "within one instruction",
		       count[m].made, count[m].refused);
		if (count[m].refused)
			printf(" in %.1f to %.1f ms each", count[m].fastest * 1e3,
			       count[m].slowest * 1e3);
		printf("\n");
	}
	printf("  the workers: %llu calls, %llu wrong\n", (unsigned long long)mw_calls,
	       (unsigned long long)mw_wrong);
	t_check(mw_wrong == 0, "%llu calls returned a mix of versions", (unsigned long long)mw_wrong);
	_exit(0);
}

/*
 * Runs the child with workers that block mask (argv[1]: how many
 * changes); returns main's exit status.
 */
static int mw_run(int argc, char **argv, const sigset_t *mask, const struct mw_expect *e)
{
	pid_t pid;

	t_start(argv);
	if (argc > 1)
		mw_changes = atol(argv[1]) > 0 ? atol(argv[1]) : 1;
	mw_mask = *mask;
	fflush(stdout);
	pid = fork();
	t_check(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0)
		mw_child(e);
	t_child_exits_0(pid, MW_LIMIT_S);
	printf("PASS %s\n", t_name);
	return 0;
}

#endif /* FL_TEST_PATCH_MASKED_WORKERS_H */
