// SPDX-License-Identifier: MIT
/*
 * heal_unheal_while_threads_call [CYCLES]: two threads call implicit-check
 * sites with null and valid pointers, mixed, while the main thread heals
 * and unheals those sites CYCLES times in all (default 100,000), round
 * robin (every 8th change waits until both callers have called).  The sites (nullchecks.ll, -no-pie) and the tactics they heal
 * with: load_i8's movzbl (%rdi) and load_i32's movslq (%rdi) (short:
 * punned jumps), load_far_field's 6-byte load (B1), store_i64's 3-byte
 * store (T3, a neighbour evicted), each printed.
 *
 * No call may crash or return a wrong value: a valid pointer gives its
 * value, null the function's null result (throw_npe counted once).  And
 * the counts are exact, per site: the failures trapped (the site's
 * counter, fl_site_for_each) plus the failures healed (healed_failures,
 * fl_site_heal_info) equal the null calls the threads made there.  Both
 * ways must have happened.  At the end every site is as compiled.
 *
 * Beside them, threads blocked in the kernel all along: nanosleep, poll,
 * epoll_wait and a futex wait with a timeout (200 ms each, again and
 * again).  No call may return EINTR or before its time: a heal or an
 * unheal (a relocation's entry moves boundaries: the handshake looks at
 * these threads, never signals them) must not show in a blocking call.
 * Then one more thread, blocking every signal, asleep in nanosleep: it
 * could wake into an int3 and cannot be stopped, so a heal must be
 * refused (-EBUSY, saying why) with the site as compiled, never written
 * on a guess; once it has gone, the site heals.
 */
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <sched.h>
#include <sys/resource.h>
#include <time.h>

#include "common.h"

#define THREADS 2
#define SITES 4

int8_t load_i8(int8_t *p);
int64_t load_i32(int32_t *p);
int32_t load_far_field(int32_t *p);
void store_i64(int64_t *p);
void throw_npe(void);

static _Thread_local uint64_t npes;

void throw_npe(void)
{
	npes++;
}

static const char *const names[SITES] = { "load_i8", "load_i32", "load_far_field", "store_i64" };
static void *const fns[SITES] = { (void *)load_i8, (void *)load_i32, (void *)load_far_field,
				  (void *)store_i64 };
static _Atomic uint64_t nulls[SITES], calls, wrong, progress[THREADS];
static _Atomic int stop;
static uint64_t site_pcs[SITES];

/* One call of site s with p (NULL or a thread's buffer): whether it was right. */
static bool call(int s, int32_t *buf, bool null)
{
	uint64_t before = npes;
	bool ok;

	switch (s) {
	case 0:
		buf[0] = 0x5a;
		ok = load_i8(null ? NULL : (int8_t *)buf) == (null ? 0 : 0x5a);
		break;
	case 1:
		buf[0] = -12345;
		ok = load_i32(null ? NULL : buf) == (null ? -1 : -12345);
		break;
	case 2:
		buf[1000] = 777;
		ok = load_far_field(null ? NULL : buf) == (null ? -1 : 777);
		break;
	default:
		buf[0] = buf[1] = 0;
		store_i64(null ? NULL : (int64_t *)(void *)buf);
		ok = null || *(int64_t *)(void *)buf == 81985529216486895ll;
		break;
	}
	return ok && npes - before == (null ? 1u : 0u);
}

static void *caller(void *arg)
{
	static _Thread_local int32_t buf[1024];
	int me = (int)(uintptr_t)arg;
	uint64_t x = (uint64_t)(me + 1) * 0x9e3779b97f4a7c15ull, n = 0;

	/*
	 * Nice 19: three busy threads on two cores, and the healer would
	 * wait out the callers' time slices (a few ms) at every change (2.7
	 * ms a cycle, against 1.5).
	 */
	setpriority(PRIO_PROCESS, (id_t)gettid(), 19);

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		int s;
		bool null;

		/* xorshift: the site and whether the pointer is null. */
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		s = (int)(x % SITES);
		null = (x >> 8) % 3 == 0;
		if (null)
			atomic_fetch_add_explicit(&nulls[s], 1, memory_order_relaxed);
		if (!call(s, buf, null) && atomic_fetch_add(&wrong, 1) < 5)
			fprintf(stderr, "%s: %s(%s) gave a wrong result\n", t_name, names[s],
				null ? "NULL" : "valid");
		n++;
		atomic_store_explicit(&progress[me], n, memory_order_relaxed);
	}
	atomic_fetch_add(&calls, n);
	return NULL;
}

/* The blocked threads: one per kind, each counting its calls and what went wrong. */
enum { NANOSLEEP, POLL, EPOLL, FUTEX, SLEEPERS };
static const char *const sleep_names[SLEEPERS] = { "nanosleep", "poll", "epoll_wait", "futex" };
static _Atomic long slept[SLEEPERS], short_or_eintr[SLEEPERS];
static _Atomic int sleepers_stop;
static _Atomic uint32_t never_woken;

static double mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *sleeper(void *arg)
{
	int kind = (int)(uintptr_t)arg, ep = -1, pipefd[2];

	t_check(pipe(pipefd) == 0, "pipe");
	if (kind == EPOLL) {
		struct epoll_event ev = { .events = EPOLLIN };

		ep = epoll_create1(EPOLL_CLOEXEC);
		t_check(ep >= 0 && epoll_ctl(ep, EPOLL_CTL_ADD, pipefd[0], &ev) == 0, "epoll");
	}
	while (!atomic_load(&sleepers_stop)) {
		double t0 = mono();
		struct timespec ts = { 0, 200 * 1000 * 1000 };
		struct pollfd pfd = { .fd = pipefd[0], .events = POLLIN };
		struct epoll_event out;
		long r;
		int err;

		errno = 0;
		switch (kind) {
		case NANOSLEEP:
			r = nanosleep(&ts, NULL);
			break;
		case POLL:
			r = poll(&pfd, 1, 200);
			break;
		case EPOLL:
			r = epoll_wait(ep, &out, 1, 200);
			break;
		default:
			r = syscall(SYS_futex, &never_woken, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
			if (r < 0 && errno == ETIMEDOUT)
				r = 0;
			break;
		}
		err = errno;
		/* Its timeout, whole: 0 (nothing ready) after 200 ms, never EINTR. */
		if (r != 0 || mono() - t0 < 0.199) {
			if (atomic_fetch_add(&short_or_eintr[kind], 1) < 3)
				fprintf(stderr, "%s: %s returned %ld (%s) after %.1f ms\n", t_name,
					sleep_names[kind], r, strerror(err), (mono() - t0) * 1e3);
		}
		slept[kind]++;
	}
	close(pipefd[0]);
	close(pipefd[1]);
	if (ep >= 0)
		close(ep);
	return NULL;
}

static _Atomic int masked_stop;

/* Every signal blocked, asleep in nanosleep until told to stop. */
static void *masked_sleeper(void *arg)
{
	sigset_t all;

	(void)arg;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, NULL);
	while (!atomic_load(&masked_stop))
		nanosleep(&(struct timespec){ 0, 50 * 1000 * 1000 }, NULL);
	return NULL;
}

/*
 * Waits (a millisecond at most) until each caller has made a few calls:
 * healed and unhealed, the sites are run between the changes.
 */
static void let_them_call(void)
{
	uint64_t from[THREADS];
	struct timespec t0, t1;

	for (int i = 0; i < THREADS; i++)
		from[i] = atomic_load_explicit(&progress[i], memory_order_relaxed);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		int done = 0;

		for (int i = 0; i < THREADS; i++)
			done += atomic_load_explicit(&progress[i], memory_order_relaxed) > from[i];
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (done == THREADS ||
		    (t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec) > 1000000)
			return;
		nanosleep(&(struct timespec){ .tv_nsec = 20000 }, NULL);
	}
}

/*
 * A T3 site's unheal moves instruction boundaries as the patcher sees them
 * (the healed jmp rel8 is shorter than the instruction it restores): it
 * stops every thread and scans their stacks, and a stale word pointing
 * inside the site (an int3 trap's PC, the site + 1, left in a signal
 * frame's unwritten bytes) refuses it, -EBUSY after 100 tries.  Tried
 * again here, and counted (busy), as selftests/points does.
 */
static long busy;

static int retried(int (*op)(const void *, struct fl_diag *), uint64_t pc, struct fl_diag *d)
{
	int err = 0;

	for (int t = 0; t < 50; t++) {
		err = op((const void *)(uintptr_t)pc, d);
		if (err != -EBUSY)
			break;
		busy++;
	}
	return err;
}

/*
 * A fault faultline did not claim (a call gone wrong): where, before the
 * process dies of it (async-signal-safe: snprintf of integers, write).
 */
static void on_unclaimed(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	char msg[256];
	int n = snprintf(msg, sizeof(msg), "FAIL %s: signal %d not claimed: pc 0x%llx, address %p, "
			 "code %d (sites: 0x%llx 0x%llx 0x%llx 0x%llx)\n", t_name, sig,
			 (unsigned long long)uc->uc_mcontext.gregs[REG_RIP], si->si_addr,
			 si->si_code, (unsigned long long)site_pcs[0],
			 (unsigned long long)site_pcs[1], (unsigned long long)site_pcs[2],
			 (unsigned long long)site_pcs[3]);

	if (write(2, msg, (size_t)n) < 0)
		_exit(3);
	_exit(2);
}

int main(int argc, char **argv)
{
	long cycles = argc > 1 ? atol(argv[1]) : 100000;
	uint64_t pc[SITES], trapped0[SITES], healed0[SITES];
	pthread_t th[THREADS], sleepers[SLEEPERS];
	struct t_sites t;
	bool ever_trapped = false, ever_healed = false;

	t_start(argv);
	t_init_discovering();
	t_enable();
	{
		struct sigaction sa = { .sa_sigaction = on_unclaimed, .sa_flags = SA_SIGINFO };

		t_check(fl_sigaction(SIGSEGV, &sa, NULL) == 0 && fl_sigaction(SIGBUS, &sa, NULL) == 0 &&
			fl_sigaction(SIGILL, &sa, NULL) == 0 && fl_sigaction(SIGTRAP, &sa, NULL) == 0,
			"fl_sigaction");
	}
	t_sites_get(&t);
	/* Each function's one site. */
	for (int s = 0; s < SITES; s++) {
		uint64_t f = (uint64_t)(uintptr_t)fns[s];

		pc[s] = 0;
		for (size_t i = 0; i < t.n; i++)
			if (t.pc[i] >= f && t.pc[i] < f + 16 && !pc[s])
				pc[s] = t.pc[i];
		t_check(pc[s], "%s: no registered site in its first 16 bytes", names[s]);
		site_pcs[s] = pc[s];
		trapped0[s] = t_trapped(pc[s]);
		healed0[s] = t_heal_info(pc[s]).healed_failures;
		t_heal(pc[s]);
		printf("%s: %s's site heals with %s\n", t_name, names[s], t_heal_info(pc[s]).tactic);
		t_unheal(pc[s]);
	}

	for (uintptr_t i = 0; i < SLEEPERS; i++)
		t_check(pthread_create(&sleepers[i], NULL, sleeper, (void *)i) == 0, "pthread_create");
	for (uintptr_t i = 0; i < THREADS; i++)
		t_check(pthread_create(&th[i], NULL, caller, (void *)i) == 0, "pthread_create");
	for (long i = 0; i < cycles; i++) {
		int s = (int)(i % SITES);
		struct fl_diag d = { 0 };
		int err = retried(fl_site_heal, pc[s], &d);

		/* Every 8th change waits for calls (each a few ms on 2 cores). */
		if (!err) {
			if (i % 8 == 0)
				let_them_call();
			err = retried(fl_site_unheal, pc[s], &d);
		}
		if (i % 8 == 4)
			let_them_call();
		if (err) {
			atomic_store(&stop, 1);
			t_fail("cycle %ld, %s: %d %s", i, names[s], err, d.msg);
		}
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	atomic_store(&sleepers_stop, 1);
	for (int i = 0; i < SLEEPERS; i++) {
		pthread_join(sleepers[i], NULL);
		printf("  %-33s %ld blocking calls, %ld short or EINTR\n", sleep_names[i],
		       (long)slept[i], (long)short_or_eintr[i]);
		t_check(slept[i] > 0, "%s never returned", sleep_names[i]);
		t_check(short_or_eintr[i] == 0, "%s: %ld calls returned early or with EINTR",
			sleep_names[i], (long)short_or_eintr[i]);
	}

	printf("%s: %ld heals and unheals (%ld refused -EBUSY first), %llu calls, %llu wrong\n",
	       t_name, cycles, busy, (unsigned long long)calls, (unsigned long long)wrong);
	t_check(wrong == 0, "%llu calls gave a wrong result", (unsigned long long)wrong);
	for (int s = 0; s < SITES; s++) {
		struct fl_heal_info info = t_heal_info(pc[s]);
		uint64_t trapped = t_trapped(pc[s]) - trapped0[s];
		uint64_t healed = info.healed_failures - healed0[s];

		printf("  %-15s %s: %llu null calls: %llu trapped + %llu healed\n", names[s],
		       info.tactic, (unsigned long long)nulls[s], (unsigned long long)trapped,
		       (unsigned long long)healed);
		t_check(trapped + healed == nulls[s], "%s: %llu trapped + %llu healed != %llu null calls",
			names[s], (unsigned long long)trapped, (unsigned long long)healed,
			(unsigned long long)nulls[s]);
		t_check(info.state == FL_HEAL_IMPLICIT, "%s: state %d at the end", names[s], info.state);
		ever_trapped |= trapped > 0;
		ever_healed |= healed > 0;
	}
	/* A thread that blocks every signal, asleep: refused, the site as compiled. */
	{
		struct fl_diag d = { 0 };
		uint8_t before[16];
		pthread_t m;
		int err;

		memcpy(before, (const void *)(uintptr_t)pc[0], sizeof(before));
		t_check(pthread_create(&m, NULL, masked_sleeper, NULL) == 0, "pthread_create");
		nanosleep(&(struct timespec){ 0, 20 * 1000 * 1000 }, NULL);
		err = fl_site_heal((const void *)(uintptr_t)pc[0], &d);
		printf("%s: with a thread that blocks every signal asleep: %d: %s\n", t_name, err,
		       err ? d.msg : "(healed)");
		t_check(err == -EBUSY && strstr(d.msg, "SIGTRAP"), "a heal with a thread that blocks "
			"every signal asleep: %d %s", err, d.msg);
		t_check(t_heal_info(pc[0]).state != FL_HEAL_HEALED &&
			memcmp(before, (const void *)(uintptr_t)pc[0], sizeof(before)) == 0,
			"a refused heal changed the code");
		atomic_store(&masked_stop, 1);
		pthread_join(m, NULL);
		t_heal(pc[0]);
		t_unheal(pc[0]);
	}
	t_check(cycles < 100 || (ever_trapped && ever_healed),
		"the failures were not both trapped and healed: the test did not race");
	printf("PASS %s\n", t_name);
	return 0;
}
