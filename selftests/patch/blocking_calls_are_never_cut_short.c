// SPDX-License-Identifier: MIT
/*
 * No blocking call of the program is cut short by a change of its code.
 * One thread each sits in nanosleep, clock_nanosleep, sleep, usleep, poll,
 * ppoll, select, epoll_wait, sigtimedwait, a futex wait with a timeout,
 * pthread_cond_timedwait, io_uring_enter's wait (io_uring_wait_cqe_timeout),
 * recv with SO_RCVTIMEO (timeouts of 2 to 2.7 s), read of a pipe and
 * accept (a helper thread writes, or connects, every 2.5 s), and goes back
 * in with a fresh timeout each time the call returns, so that every one of
 * them is blocked throughout.  Meanwhile 2 threads call the code being
 * changed and the main thread makes 1,000 changes (argv[1]), spread over at
 * least 8 s: nine in ten move instruction boundaries (t_move_site), one in
 * ten is within one instruction (t_one_site).
 *
 * Afterwards: every call returned its expected result (its timeout's, the
 * data, the connection) no earlier than its time (the timeout, the write,
 * the connect), none with EINTR; every change returned 0 and the bytes are
 * the last version; the callers saw only 1 or 2.
 */
#include <fcntl.h>
#include <liburing.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>

#include "common.h"

#define CHANGES 1000
/* The change run lasts at least this long: three timeouts. */
#define MIN_RUN_S 8.0
/* The helpers write to the pipe and connect this often. */
#define HELPER_PERIOD_S 2.5
/*
 * recv's SO_RCVTIMEO counts in jiffies (sock_set_timeout rounds up, but
 * the first jiffy is already under way): it may end up to one jiffy early,
 * 10 ms at HZ = 100 or more.  Every other timeout here is an hrtimer's.
 */
#define JIFFY_S 0.010

enum kind {
	NANOSLEEP, CLOCK_NANOSLEEP, SLEEP, USLEEP, POLL, PPOLL, SELECT, EPOLL_WAIT,
	SIGTIMEDWAIT, FUTEX, COND_TIMEDWAIT, IO_URING, RECV, PIPE_READ, ACCEPT, KINDS
};

static const char *const names[KINDS] = {
	"nanosleep", "clock_nanosleep", "sleep", "usleep", "poll", "ppoll", "select",
	"epoll_wait", "sigtimedwait", "futex wait", "pthread_cond_timedwait",
	"io_uring_wait_cqe_timeout", "recv (SO_RCVTIMEO)", "read of a pipe", "accept",
};

/* What a call returned, and the earliest time it could rightly have. */
struct outcome {
	bool expected;		/* the result the call should have */
	bool eintr;		/* EINTR, or sleep's time left */
	double not_before;
	char said[96];		/* the result, for a message */
};

struct blocker {
	enum kind kind;
	double timeout;
	pthread_t th;
	_Atomic pid_t tid;
	int fd;			/* epoll, recv, pipe, listening socket */
	struct io_uring ring;
	char unavailable[128];	/* not tested here, and why */
	_Atomic uint64_t calls, expected, eintr, early, wrong;
	_Atomic int said;
	char first[200];	/* the first call that was not as expected */
};

static struct blocker blockers[KINDS];
static _Atomic int stop, pipe_reader_done, acceptor_done;
static _Atomic uint64_t helper_calls, helper_eintr;
static int pipe_fds[2];
static struct sockaddr_un listen_addr;
static socklen_t listen_len;
static pthread_mutex_t cond_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond;

static struct t_site move, one;
static _Atomic uint64_t calls, wrong;

static struct timespec ts_of(double s)
{
	return (struct timespec){ (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };
}

static void said(struct outcome *o, const char *fmt, long r, int err)
{
	snprintf(o->said, sizeof(o->said), fmt, r);
	if (r < 0 || err) {
		size_t n = strlen(o->said);

		snprintf(o->said + n, sizeof(o->said) - n, " (%s)", strerrorname_np(err) ?
			 strerrorname_np(err) : "?");
	}
}

/* A syscall-style result r (-1 with errno): expected when r == want and errno == want_err. */
static void judge_r(struct outcome *o, long r, int err, long want, int want_err)
{
	o->expected = r == want && (r != -1 || err == want_err);
	o->eintr = r == -1 && err == EINTR;
	said(o, "returned %ld", r, r == -1 ? err : 0);
}

/* A result that is an error number (0 or E...). */
static void judge_e(struct outcome *o, int r, int want)
{
	o->expected = r == want;
	o->eintr = r == EINTR;
	snprintf(o->said, sizeof(o->said), "returned %s", r ? (strerrorname_np(r) ?
		 strerrorname_np(r) : "?") : "0");
}

static struct outcome call(struct blocker *b)
{
	struct outcome o = { .not_before = t_now() + b->timeout };
	struct timespec ts = ts_of(b->timeout), rem;
	struct timeval tv = { (time_t)b->timeout, (long)((b->timeout - (int)b->timeout) * 1e6) };
	int ms = (int)(b->timeout * 1000 + 0.5);
	long r;

	errno = 0;
	switch (b->kind) {
	case NANOSLEEP:
		r = nanosleep(&ts, &rem);
		judge_r(&o, r, errno, 0, 0);
		break;
	case CLOCK_NANOSLEEP:
		judge_e(&o, clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &rem), 0);
		break;
	case SLEEP:
		r = sleep((unsigned)b->timeout);
		o.expected = r == 0;
		o.eintr = r != 0;
		snprintf(o.said, sizeof(o.said), "returned %ld (seconds left)", r);
		break;
	case USLEEP:
		r = usleep((useconds_t)(b->timeout * 1e6));
		judge_r(&o, r, errno, 0, 0);
		break;
	case POLL:
		r = poll(NULL, 0, ms);
		judge_r(&o, r, errno, 0, 0);
		break;
	case PPOLL:
		r = ppoll(NULL, 0, &ts, NULL);
		judge_r(&o, r, errno, 0, 0);
		break;
	case SELECT:
		r = select(0, NULL, NULL, NULL, &tv);
		judge_r(&o, r, errno, 0, 0);
		break;
	case EPOLL_WAIT: {
		struct epoll_event ev;

		r = epoll_wait(b->fd, &ev, 1, ms);
		judge_r(&o, r, errno, 0, 0);
		break;
	}
	case SIGTIMEDWAIT: {
		sigset_t set;

		sigemptyset(&set);
		sigaddset(&set, SIGUSR2);	/* blocked in this thread; never sent */
		r = sigtimedwait(&set, NULL, &ts);
		judge_r(&o, r, errno, -1, EAGAIN);
		break;
	}
	case FUTEX: {
		static _Atomic uint32_t word;	/* 0, never woken */

		r = syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
		judge_r(&o, r, errno, -1, ETIMEDOUT);
		break;
	}
	case COND_TIMEDWAIT: {
		struct timespec abs;

		clock_gettime(CLOCK_MONOTONIC, &abs);
		o.not_before = (double)abs.tv_sec + (double)abs.tv_nsec * 1e-9 + b->timeout;
		abs = ts_of(o.not_before);
		pthread_mutex_lock(&cond_lock);
		r = pthread_cond_timedwait(&cond, &cond_lock, &abs);	/* never signalled */
		pthread_mutex_unlock(&cond_lock);
		judge_e(&o, (int)r, ETIMEDOUT);
		break;
	}
	case IO_URING: {
		struct __kernel_timespec kts = { ts.tv_sec, ts.tv_nsec };
		struct io_uring_cqe *cqe;

		r = io_uring_wait_cqe_timeout(&b->ring, &cqe, &kts);
		o.expected = r == -ETIME;
		o.eintr = r == -EINTR;
		snprintf(o.said, sizeof(o.said), "returned %ld (%s)", r,
			 r < 0 && strerrorname_np((int)-r) ? strerrorname_np((int)-r) : "?");
		break;
	}
	case RECV: {
		char c;

		o.not_before -= JIFFY_S;
		r = recv(b->fd, &c, 1, 0);
		judge_r(&o, r, errno, -1, EAGAIN);
		break;
	}
	case PIPE_READ: {
		double stamp = 0;

		r = read(pipe_fds[0], &stamp, sizeof(stamp));
		judge_r(&o, r, errno, sizeof(stamp), 0);
		o.not_before = stamp;	/* the writer's time, just before it wrote */
		break;
	}
	case ACCEPT: {
		double stamp = 0;
		int fd = accept(b->fd, NULL, NULL);
		int err = errno;

		if (fd < 0) {
			judge_r(&o, fd, err, 0, 0);
			break;
		}
		/* The connector sent its time, taken just before it connected. */
		r = read(fd, &stamp, sizeof(stamp));
		close(fd);
		judge_r(&o, r, errno, sizeof(stamp), 0);
		if (r == sizeof(stamp))
			snprintf(o.said, sizeof(o.said), "a connection");
		o.not_before = stamp;
		break;
	}
	case KINDS:
		break;
	}
	return o;
}

static void *blocker_main(void *arg)
{
	struct blocker *b = arg;
	sigset_t usr2;

	sigemptyset(&usr2);
	sigaddset(&usr2, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &usr2, NULL);
	atomic_store(&b->tid, gettid());
	while (!atomic_load(&stop)) {
		double t0 = t_now();
		struct outcome o = call(b);
		double t1 = t_now();

		atomic_fetch_add(&b->calls, 1);
		if (o.expected && t1 >= o.not_before) {
			atomic_fetch_add(&b->expected, 1);
			continue;
		}
		atomic_fetch_add(o.eintr ? &b->eintr : o.expected ? &b->early : &b->wrong, 1);
		if (atomic_exchange(&b->said, 1) == 0)
			snprintf(b->first, sizeof(b->first), "%s after %.3f s, %.3f s before its time",
				 o.said, t1 - t0, o.not_before - t1);
	}
	if (b->kind == PIPE_READ)
		atomic_store(&pipe_reader_done, 1);
	if (b->kind == ACCEPT)
		atomic_store(&acceptor_done, 1);
	return NULL;
}

/* Sleeps until the absolute time at; an EINTR is counted and slept again. */
static void sleep_until(double at)
{
	struct timespec abs = ts_of(at);

	for (;;) {
		int r = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &abs, NULL);

		atomic_fetch_add(&helper_calls, 1);
		if (r != EINTR)
			return;
		atomic_fetch_add(&helper_eintr, 1);
	}
}

/* Writes its time to the pipe every HELPER_PERIOD_S until the reader is done. */
static void *writer(void *arg)
{
	double next = t_now();

	(void)arg;
	while (!atomic_load(&pipe_reader_done)) {
		double stamp;

		sleep_until(next += HELPER_PERIOD_S);
		stamp = t_now();
		if (write(pipe_fds[1], &stamp, sizeof(stamp)) != sizeof(stamp))
			t_fail("writing to the pipe: %s", strerror(errno));
	}
	return NULL;
}

/* Connects, and sends its time, every HELPER_PERIOD_S until the acceptor is done. */
static void *connector(void *arg)
{
	double next = t_now();

	(void)arg;
	while (!atomic_load(&acceptor_done)) {
		double stamp;
		int fd;

		sleep_until(next += HELPER_PERIOD_S);
		stamp = t_now();
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		t_check(fd >= 0, "socket: %s", strerror(errno));
		t_check(connect(fd, (struct sockaddr *)&listen_addr, listen_len) == 0,
			"connect: %s", strerror(errno));
		t_check(write(fd, &stamp, sizeof(stamp)) == sizeof(stamp), "write: %s", strerror(errno));
		close(fd);
	}
	return NULL;
}

static void *caller(void *arg)
{
	uint64_t n = 0;

	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		int a = move.fn(), b = one.fn();

		n++;
		if ((a != 1 && a != 2) || (b != 1 && b != 2))
			if (atomic_fetch_add(&wrong, 1) < 5)
				fprintf(stderr, "%s: a call returned 0x%x, 0x%x\n", t_name, a, b);
	}
	atomic_fetch_add(&calls, n);
	return NULL;
}

static void setup(struct blocker *b)
{
	switch (b->kind) {
	case EPOLL_WAIT:
		b->fd = epoll_create1(EPOLL_CLOEXEC);
		t_check(b->fd >= 0, "epoll_create1: %s", strerror(errno));
		break;
	case IO_URING: {
		int err = io_uring_queue_init(4, &b->ring, 0);

		if (err)
			snprintf(b->unavailable, sizeof(b->unavailable), "io_uring_queue_init: %s",
				 strerror(-err));
		break;
	}
	case RECV: {
		int sv[2];
		struct timeval tv = { (time_t)b->timeout,
				      (long)((b->timeout - (int)b->timeout) * 1e6) };

		t_check(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv) == 0, "socketpair: %s",
			strerror(errno));
		t_check(setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == 0,
			"SO_RCVTIMEO: %s", strerror(errno));
		b->fd = sv[0];	/* sv[1] stays open, and sends nothing */
		break;
	}
	case ACCEPT:
		/* An abstract name: no file, and no network needed (the guest's). */
		listen_addr.sun_family = AF_UNIX;
		snprintf(listen_addr.sun_path + 1, sizeof(listen_addr.sun_path) - 1,
			 "faultline-%s-%d", t_name, (int)getpid());
		listen_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
					 strlen(listen_addr.sun_path + 1));
		b->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		t_check(b->fd >= 0, "socket: %s", strerror(errno));
		t_check(bind(b->fd, (struct sockaddr *)&listen_addr, listen_len) == 0, "bind: %s",
			strerror(errno));
		t_check(listen(b->fd, 8) == 0, "listen: %s", strerror(errno));
		break;
	default:
		break;
	}
}

/* The thread's state letter in /proc/self/task/TID/stat, or '?'. */
static char thread_state(pid_t tid)
{
	char path[64], buf[512], *p;
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return '?';
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return '?';
	buf[n] = 0;
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : '?';
}

int main(int argc, char **argv)
{
	long changes = argc > 1 ? atol(argv[1]) : CHANGES, moves = 0, ones = 0;
	pthread_t callers[2], helpers[2];
	pthread_condattr_t ca;
	double start, end, deadline;
	bool bad = false;

	t_start(argv);
	t_init();
	t_enable();
	move = t_move_site();
	one = t_one_site();
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&cond, &ca);
	t_check(pipe2(pipe_fds, O_CLOEXEC) == 0, "pipe: %s", strerror(errno));

	for (int k = 0; k < KINDS; k++) {
		struct blocker *b = &blockers[k];

		b->kind = (enum kind)k;
		b->timeout = k == SLEEP ? 2.0 : 2.0 + 0.05 * k;
		setup(b);
		if (b->unavailable[0]) {
			printf("  %s: not tested here: %s\n", names[k], b->unavailable);
			continue;
		}
		t_check(pthread_create(&b->th, NULL, blocker_main, b) == 0, "pthread_create");
	}
	t_check(pthread_create(&helpers[0], NULL, writer, NULL) == 0, "pthread_create");
	t_check(pthread_create(&helpers[1], NULL, connector, NULL) == 0, "pthread_create");
	for (int i = 0; i < 2; i++)
		t_check(pthread_create(&callers[i], NULL, caller, NULL) == 0, "pthread_create");

	/* Every blocker in its call (asleep in the kernel) before the first change. */
	deadline = t_now() + 120;
	for (int k = 0; k < KINDS; k++) {
		struct blocker *b = &blockers[k];
		struct timespec ms = { 0, 1000000 };

		while (!b->unavailable[0] && (!atomic_load(&b->tid) || thread_state(b->tid) != 'S')) {
			t_check(t_now() < deadline, "%s's thread is not asleep after 120 s", names[k]);
			nanosleep(&ms, NULL);
		}
	}

	start = t_now();
	for (long i = 0; i < changes; i++) {
		struct t_site *s = i % 10 == 9 ? &one : &move;
		struct fl_diag d;
		int err;

		sleep_until(start + MIN_RUN_S * (double)i / (double)changes);
		err = t_flip(s, &d);
		if (err)
			t_fail("change %ld (%s): %d %s", i, s->moves ? "moving boundaries" :
			       "within one instruction", err, d.msg);
		s->moves ? moves++ : ones++;
	}
	end = t_now();
	atomic_store(&stop, 1);

	for (int i = 0; i < 2; i++)
		pthread_join(callers[i], NULL);
	/* Each blocker finishes the call it is in: a timeout, or the helpers' next event. */
	for (int k = 0; k < KINDS; k++) {
		struct timespec abs = { time(NULL) + 120, 0 };	/* CLOCK_REALTIME */

		if (!blockers[k].unavailable[0])
			t_check(pthread_timedjoin_np(blockers[k].th, NULL, &abs) == 0,
				"%s's thread did not finish within 120 s of the end", names[k]);
	}
	for (int i = 0; i < 2; i++)
		pthread_join(helpers[i], NULL);

	printf("  %ld changes in %.2f s (%ld moving boundaries, %ld within one instruction); "
	       "the callers made %llu calls, %llu wrong\n", moves + ones, end - start, moves, ones,
	       (unsigned long long)calls, (unsigned long long)wrong);
	printf("  %-26s %8s %6s %9s %6s %6s %6s\n", "call", "timeout", "calls", "expected",
	       "EINTR", "early", "wrong");
	for (int k = 0; k < KINDS; k++) {
		struct blocker *b = &blockers[k];

		if (b->unavailable[0])
			continue;
		printf("  %-26s %6.2f s %6llu %9llu %6llu %6llu %6llu\n", names[k],
		       k == PIPE_READ || k == ACCEPT ? HELPER_PERIOD_S : b->timeout,
		       (unsigned long long)b->calls, (unsigned long long)b->expected,
		       (unsigned long long)b->eintr, (unsigned long long)b->early,
		       (unsigned long long)b->wrong);
		if (b->calls == 0 || b->expected != b->calls)
			bad = true;
	}
	printf("  the helpers' and the main thread's clock_nanosleep(TIMER_ABSTIME): "
	       "%llu calls, %llu EINTR\n",
	       (unsigned long long)helper_calls, (unsigned long long)helper_eintr);
	for (int k = 0; k < KINDS; k++)
		if (blockers[k].said)
			fprintf(stderr, "%s: %s first: %s\n", t_name, names[k], blockers[k].first);
	t_check(!bad, "blocking calls were cut short or returned what they should not (above)");
	t_check(helper_eintr == 0, "the helpers' and the main thread's sleeps were cut short %llu times",
		(unsigned long long)helper_eintr);
	t_check(wrong == 0, "%llu calls of the changed code returned a mix of versions",
		(unsigned long long)wrong);
	t_check(t_site_is_whole(&move) && t_site_is_whole(&one), "the code is not the last version");
	printf("PASS %s\n", t_name);
	return 0;
}
