// SPDX-License-Identifier: MIT
/*
 * faultlined end to end (make check-daemon-e2e): the daemon, the preload
 * shim and programs with implicit null checks (prog.c, load.c), and raw
 * protocol clients built with lib/proto.
 *
 *   e2e GROUP OUTDIR DIR FAULTLINED PRELOAD PROG LOAD
 *
 * GROUP is counts, churn, restart, request, security or load (run.sh runs
 * them all).  DIR is a directory every user can traverse (the socket, state
 * directories and the copies of PROG and PRELOAD that "nobody" runs; churn
 * loads libe2e-sites.so from PROG's directory); daemon and program logs go
 * to OUTDIR.  Prints "ok - NAME" or
 * "FAIL - NAME: DETAIL" per check, then "GROUP: P passed, F failed";
 * exits 1 when a check failed.
 *
 * No check depends on how fast the machine is: every wait is for an event
 * (a daemon listening, a count reached, a reply, a line from a program),
 * ended by it, and bounded by WAIT_S only so that a broken daemon cannot
 * hang the test; times are printed as figures ("# ..."), never compared.
 * Every process the driver starts dies with it, also when it dies early.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "proto/proto.h"

#define NOBODY 65534

/*
 * How long to wait for something that must happen: minutes, for QEMU's TCG
 * on a busy 2-core machine.  A slow machine only makes a wait longer.
 */
#define WAIT_S 300
#define WAIT_MS (WAIT_S * 1000)

static const char *group, *outdir, *dir, *fld, *preload, *prog, *loadprog;
static char sock_path[108], state_dir[PATH_MAX];
static pid_t dpid = -1;
static int dlogs;
static char dlog[PATH_MAX];
static int passed, failed;

/* ------------------------------------------------------------------------
 * Reporting
 */

static void ok(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void ok(const char *fmt, ...)
{
	va_list ap;

	printf("ok - ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	passed++;
}

static void fail(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(const char *name, const char *fmt, ...)
{
	va_list ap;

	printf("FAIL - %s: ", name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	failed++;
}

/* check(cond, name, detail...): ok or FAIL with the detail. */
#define check(cond, name, ...) do {				\
		if (cond)					\
			ok("%s", name);				\
		else						\
			fail(name, __VA_ARGS__);		\
	} while (0)

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* ------------------------------------------------------------------------
 * The processes the driver starts
 */

/*
 * In a child forked by parent, after any change of uid (a change of
 * credentials clears the setting): SIGKILL when the parent dies, however
 * it dies, so that a driver ended by a failed check, a crash or a kill
 * leaves no daemon or program behind.  A parent already gone (before the
 * prctl) ends the child here.  Only the main thread forks: the signal
 * follows the thread that forked, not the process.
 */
static void die_with(pid_t parent)
{
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
		_exit(125);
}

/* The daemons and programs started and not reaped yet, for the end. */
static pid_t running[64];

static void kid_add(pid_t pid)
{
	for (size_t i = 0; i < sizeof(running) / sizeof(running[0]); i++)
		if (running[i] <= 0) {
			running[i] = pid;
			return;
		}
}

static void kid_gone(pid_t pid)
{
	for (size_t i = 0; i < sizeof(running) / sizeof(running[0]); i++)
		if (running[i] == pid)
			running[i] = 0;
}

/*
 * Waits up to WAIT_S for pid to exit, then kills it; returns its wait
 * status (-1 when it had to be killed).
 */
static int reap(pid_t pid)
{
	double end = now() + WAIT_S;
	int status = -1;

	while (waitpid(pid, &status, WNOHANG) == 0) {
		if (now() > end) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			status = -1;
			break;
		}
		sleep_ms(10);
	}
	kid_gone(pid);
	return status;
}

static pid_t driver_pid;

/* At the driver's end, however it returns: what is still running is killed. */
static void kill_kids(void)
{
	if (getpid() != driver_pid)
		return;	/* a forked child that called exit() */
	for (size_t i = 0; i < sizeof(running) / sizeof(running[0]); i++)
		if (running[i] > 0) {
			kill(running[i], SIGKILL);
			waitpid(running[i], NULL, 0);
			running[i] = 0;
		}
}

/* ------------------------------------------------------------------------
 * The daemon
 */

static bool log_has(const char *path, const char *needle)
{
	FILE *f = fopen(path, "r");
	char line[1024];
	bool found = false;

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, needle) != NULL;
	fclose(f);
	return found;
}

/*
 * Waits until a line of the daemon's log holds needle (and needle2, when
 * not NULL); false after WAIT_S.
 */
static bool log_wait(const char *needle, const char *needle2)
{
	double end = now() + WAIT_S;

	for (;;) {
		FILE *f = fopen(dlog, "r");
		char line[1024];
		bool found = false;

		while (f && !found && fgets(line, sizeof(line), f))
			found = strstr(line, needle) && (!needle2 || strstr(line, needle2));
		if (f)
			fclose(f);
		if (found)
			return true;
		if (now() > end)
			return false;
		sleep_ms(50);
	}
}

/* The kernel group's other daemons: an extra option, another user. */
static const char *daemon_extra;
static uid_t daemon_uid;

static void daemon_kill9(void)
{
	if (dpid > 0) {
		kill(dpid, SIGKILL);
		waitpid(dpid, NULL, 0);
		kid_gone(dpid);
	}
	dpid = -1;
}

/*
 * Starts faultlined on sock_path with state_dir; waits for it to listen.
 * A daemon that does not is killed: the next start must not orphan it.
 */
static int daemon_start(void)
{
	pid_t parent = getpid();
	double end = now() + WAIT_S;
	daemon_kill9();
	snprintf(dlog, sizeof(dlog), "%s/%s-daemon.%d.log", outdir, group, ++dlogs);
	/*
	 * Here, not only by the child's O_TRUNC: the log of an earlier run
	 * says "listening on" already, and read before the child truncates it
	 * let the test on before the daemon had bound its socket.
	 */
	unlink(dlog);
	dpid = fork();
	if (dpid < 0)
		return -1;
	if (dpid == 0) {
		int fd = open(dlog, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (fd < 0)
			_exit(127);
		dup2(fd, 1);
		dup2(fd, 2);
		if (daemon_uid && (setgroups(0, NULL) || setgid(daemon_uid) || setuid(daemon_uid)))
			_exit(126);
		die_with(parent);
		execl(fld, fld, "--socket", sock_path, "--state-dir", state_dir,
		      "--log-level", "debug", daemon_extra, (char *)NULL);
		_exit(127);
	}
	kid_add(dpid);
	while (now() < end) {
		if (log_has(dlog, "listening on"))
			return 0;
		if (waitpid(dpid, NULL, WNOHANG) == dpid) {
			kid_gone(dpid);
			dpid = -1;
			break;
		}
		sleep_ms(25);
	}
	daemon_kill9();
	fail("daemon start", "faultlined did not start listening (log: %s)", dlog);
	return -1;
}

/* Waits (up to WAIT_S) until every thread of pid is stopped ('T' or 't'). */
static void wait_stopped(pid_t pid)
{
	double end = now() + WAIT_S;
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	while (now() < end) {
		DIR *d = opendir(path);
		struct dirent *e;
		int moving = 0;

		if (!d)
			return;
		while ((e = readdir(d))) {
			char stat[400], buf[256], *p;
			FILE *f;

			if (e->d_name[0] == '.')
				continue;
			snprintf(stat, sizeof(stat), "%s/%s/stat", path, e->d_name);
			f = fopen(stat, "r");
			if (!f)
				continue;
			p = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
			fclose(f);
			moving += p && p[1] == ' ' && p[2] != 'T' && p[2] != 't';
		}
		closedir(d);
		if (!moving)
			return;
		sleep_ms(10);
	}
}

/* SIGTERM; returns the exit status, or -1 (killed when it did not exit). */
static int daemon_stop(void)
{
	int status;

	if (dpid <= 0)
		return -1;
	kill(dpid, SIGTERM);
	status = reap(dpid);
	dpid = -1;
	return status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static bool daemon_alive(void)
{
	return dpid > 0 && waitpid(dpid, NULL, WNOHANG) == 0 && kill(dpid, 0) == 0;
}

static int daemon_nfds(void)
{
	char path[64];
	DIR *d;
	struct dirent *e;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)dpid);
	d = opendir(path);
	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* ------------------------------------------------------------------------
 * Raw protocol clients
 */

static int conn(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	double end = now() + WAIT_S;
	int fd;

	memcpy(sa.sun_path, sock_path, sizeof(sa.sun_path));
	for (;;) {
		fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			return fd;
		close(fd);
		if (now() > end)
			return -errno;
		sleep_ms(20);
	}
}

static int xsend(int fd, const void *buf, size_t len, const int *fds, size_t nfds, int flags)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * 16)];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { (void *)buf, len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (nfds) {
		struct cmsghdr *c;

		memset(&ctl, 0, sizeof(ctl));
		mh.msg_control = ctl.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
	}
	if (sendmsg(fd, &mh, MSG_NOSIGNAL | flags) != (ssize_t)len)
		return -errno;
	return 0;
}

/* One message: len bytes, 0 at EOF, -ETIMEDOUT or -errno. */
static ssize_t xrecv(int fd, void *buf, size_t size, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	ssize_t n;

	if (poll(&p, 1, timeout_ms) != 1)
		return -ETIMEDOUT;
	n = recv(fd, buf, size, MSG_DONTWAIT);
	if (n < 0)
		return errno == ECONNRESET ? 0 : -errno;
	return n;
}

/*
 * Reads until the daemon closes the connection (by end, a now() time);
 * returns 1 when it did, 0 when it did not.  *err: the code of an ERROR
 * received, or 0.
 */
static int dropped_by(int fd, int *err, double end)
{
	static char buf[FL_PROTO_MAX_MESSAGE];

	if (err)
		*err = 0;
	while (now() < end) {
		struct fl_msg m;
		ssize_t n = xrecv(fd, buf, sizeof(buf), 100);

		if (n == 0)
			return 1;
		if (n == -ETIMEDOUT)
			continue;
		if (n < 0)
			return 1;
		if (err && fl_proto_decode(buf, (size_t)n, 0, &m, NULL) == 0 &&
		    m.type == FL_MSG_ERROR)
			*err = m.error.err;
	}
	return 0;
}

/* The same within WAIT_S. */
static int dropped(int fd, int *err)
{
	return dropped_by(fd, err, now() + WAIT_S);
}

static size_t mk_query(void *buf, uint32_t what, uint32_t pid, uint64_t arg)
{
	struct fl_msg_query q;

	memset(&q, 0, sizeof(q));
	fl_proto_header(&q, FL_MSG_QUERY, sizeof(q), 7);
	q.what = what;
	q.pid = pid;
	q.arg = arg;
	memcpy(buf, &q, sizeof(q));
	return sizeof(q);
}

static size_t mk_request(void *buf, uint32_t pid, uint32_t kind, uint64_t arg)
{
	struct fl_msg_request r;

	memset(&r, 0, sizeof(r));
	fl_proto_header(&r, FL_MSG_REQUEST, sizeof(r), 9);
	r.pid = pid;
	r.kind = kind;
	r.arg = arg;
	memcpy(buf, &r, sizeof(r));
	return sizeof(r);
}

/*
 * Reads REPLY messages until one without MORE.  Returns 0 with *text (malloc'd,
 * NUL-terminated), the ERROR's code, or -ETIMEDOUT / -ECONNRESET / -EPROTO.
 */
static int read_reply(int fd, char **text, int timeout_ms)
{
	static char buf[FL_PROTO_MAX_MESSAGE];
	char *acc = NULL;
	size_t len = 0;

	*text = NULL;
	for (;;) {
		struct fl_msg m;
		ssize_t n = xrecv(fd, buf, sizeof(buf), timeout_ms);
		char *grown;

		if (n <= 0) {
			free(acc);
			return n == 0 ? -ECONNRESET : (int)n;
		}
		if (fl_proto_decode(buf, (size_t)n, 0, &m, NULL) != 0) {
			free(acc);
			return -EPROTO;
		}
		if (m.type == FL_MSG_ERROR) {
			free(acc);
			return m.error.err;
		}
		if (m.type != FL_MSG_REPLY || m.seq == 0) {
			free(acc);
			return -EPROTO;
		}
		grown = realloc(acc, len + m.reply.len + 1);
		if (!grown) {
			free(acc);
			return -ENOMEM;
		}
		acc = grown;
		memcpy(acc + len, m.text, m.reply.len);
		len += m.reply.len;
		acc[len] = 0;
		if (!(m.reply.flags & FL_REPLY_MORE))
			break;
	}
	*text = acc;
	return 0;
}

/* One exchange as this process: QUERY or REQUEST in buf. */
static int exchange(const void *msg, size_t len, char **text)
{
	int fd = conn(), err;

	*text = NULL;
	if (fd < 0)
		return fd;
	err = xsend(fd, msg, len, NULL, 0, 0);
	if (!err)
		err = read_reply(fd, text, WAIT_MS);
	close(fd);
	return err;
}

/*
 * The same as uid: in a child that drops to uid (root's own uid: here).
 * The child passes the result back through a pipe.
 */
static int exchange_as(uid_t uid, const void *msg, size_t len, char **text)
{
	int pfd[2], err = -EIO;
	pid_t pid;
	size_t cap = 4096, n = 0;
	char *buf;
	pid_t parent = getpid();

	if (uid == geteuid())
		return exchange(msg, len, text);
	*text = NULL;
	if (pipe(pfd))
		return -errno;
	pid = fork();
	if (pid == 0) {
		char *t = NULL;
		int r;

		close(pfd[0]);
		if (setgroups(0, NULL) || setgid(uid) || setuid(uid))
			_exit(1);
		die_with(parent);
		r = exchange(msg, len, &t);
		(void)!write(pfd[1], &r, sizeof(r));
		if (t)
			for (size_t off = 0, l = strlen(t); off < l;) {
				ssize_t w = write(pfd[1], t + off, l - off);

				if (w <= 0)
					break;
				off += (size_t)w;
			}
		_exit(0);
	}
	close(pfd[1]);
	buf = malloc(cap);
	if (pid > 0 && buf && read(pfd[0], &err, sizeof(err)) == sizeof(err)) {
		for (;;) {
			ssize_t r;

			if (n + 1 >= cap) {
				char *g = realloc(buf, cap *= 2);

				if (!g)
					break;
				buf = g;
			}
			r = read(pfd[0], buf + n, cap - n - 1);
			if (r <= 0)
				break;
			n += (size_t)r;
		}
		buf[n] = 0;
		if (!err)
			*text = buf, buf = NULL;
	}
	free(buf);
	close(pfd[0]);
	if (pid > 0)
		waitpid(pid, NULL, 0);
	return err;
}

/* A QUERY as uid; returns 0 with *doc, or the error. */
static int query(uid_t uid, uint32_t what, uint32_t pid, uint64_t arg, json_object **doc)
{
	char msg[64], *text;
	int err = exchange_as(uid, msg, mk_query(msg, what, pid, arg), &text);

	*doc = NULL;
	if (err)
		return err;
	*doc = json_tokener_parse(text);
	free(text);
	return *doc ? 0 : -EPROTO;
}

/* A REQUEST as uid; returns 0 with *value, or the error. */
static int request(uid_t uid, uint32_t pid, uint32_t kind, uint64_t arg, uint64_t *value)
{
	char msg[64], *text;
	int err = exchange_as(uid, msg, mk_request(msg, pid, kind, arg), &text);
	json_object *doc, *v, *p;

	if (err)
		return err;
	doc = json_tokener_parse(text);
	free(text);
	if (!doc || !json_object_object_get_ex(doc, "value", &v) ||
	    !json_object_object_get_ex(doc, "pid", &p) || json_object_get_int(p) != (int)pid) {
		json_object_put(doc);
		return -EPROTO;
	}
	*value = json_object_get_uint64(v);
	json_object_put(doc);
	return 0;
}

/* ------------------------------------------------------------------------
 * What the daemon says about a process
 */

enum { S_LOAD, S_STORE, S_RMW, S_N };
static const char *const site_fn[S_N] = { "e2e_load", "e2e_store", "e2e_rmw" };
static const char *const site_kind[S_N] = { "load", "store", "load-store" };

struct pstat {
	int entries;		/* how often the pid is listed */
	int exited;		/* of the last entry */
	uint64_t faults[S_N];
	int other_sites;	/* sites not of sites.ll, or of the wrong kind */
	uint64_t total;		/* the process's "faults" */
	char comm[32];
};

static json_object *get(json_object *o, const char *key)
{
	json_object *v = NULL;

	return o && json_object_object_get_ex(o, key, &v) ? v : NULL;
}

static size_t nprocs(json_object *doc)
{
	json_object *a = get(doc, "processes");

	return a && json_object_is_type(a, json_type_array) ? json_object_array_length(a) : 0;
}

static json_object *proc_at(json_object *doc, size_t i)
{
	return json_object_array_get_idx(get(doc, "processes"), i);
}

static void pstat_of(json_object *doc, pid_t pid, struct pstat *s)
{
	memset(s, 0, sizeof(*s));
	s->exited = -1;
	for (size_t i = 0; i < nprocs(doc); i++) {
		json_object *p = proc_at(doc, i), *sites;

		if (json_object_get_int(get(p, "pid")) != pid)
			continue;
		s->entries++;
		s->exited = json_object_get_boolean(get(p, "exited"));
		s->total = json_object_get_uint64(get(p, "faults"));
		snprintf(s->comm, sizeof(s->comm), "%s", json_object_get_string(get(p, "comm")));
		memset(s->faults, 0, sizeof(s->faults));
		s->other_sites = 0;
		sites = get(p, "sites");
		for (size_t k = 0; sites && k < json_object_array_length(sites); k++) {
			json_object *site = json_object_array_get_idx(sites, k);
			const char *fn = json_object_get_string(get(site, "function"));
			const char *kind = json_object_get_string(get(site, "kind"));
			int which = -1;

			for (int j = 0; j < S_N; j++)
				if (fn && !strcmp(fn, site_fn[j]) && kind &&
				    !strcmp(kind, site_kind[j]))
					which = j;
			if (which < 0)
				s->other_sites++;
			else
				s->faults[which] += json_object_get_uint64(get(site, "faults"));
		}
	}
}

static void pstat_str(const struct pstat *s, char *buf, size_t size)
{
	snprintf(buf, size, "listed %d times, exited %d, faults load %" PRIu64 " store %" PRIu64
		 " load-store %" PRIu64 " (total %" PRIu64 "), %d other sites", s->entries,
		 s->exited, s->faults[S_LOAD], s->faults[S_STORE], s->faults[S_RMW], s->total,
		 s->other_sites);
}

/*
 * Waits until stats says pid is listed once, exited or not as given, with
 * exactly these counts; ok or FAIL with what it says (after WAIT_S).
 */
static bool expect_counts(const char *name, pid_t pid, bool exited, uint64_t l, uint64_t s,
			  uint64_t r)
{
	double end = now() + WAIT_S;
	struct pstat st = { 0 };
	char detail[512];
	int err = 0;

	for (;;) {
		json_object *doc;

		err = query(0, FL_QUERY_STATS, 0, 0, &doc);
		if (!err) {
			pstat_of(doc, pid, &st);
			json_object_put(doc);
			if (st.entries == 1 && st.exited == exited && st.faults[S_LOAD] == l &&
			    st.faults[S_STORE] == s && st.faults[S_RMW] == r &&
			    st.other_sites == 0 && st.total == l + s + r) {
				ok("%s (pid %d: %" PRIu64 "/%" PRIu64 "/%" PRIu64 ", %s)", name,
				   (int)pid, l, s, r, exited ? "exited" : "live");
				return true;
			}
		}
		if (now() > end)
			break;
		sleep_ms(50);
	}
	if (err) {
		fail(name, "stats query: %s", strerror(-err));
		return false;
	}
	pstat_str(&st, detail, sizeof(detail));
	fail(name, "pid %d: want listed once, %s, %" PRIu64 "/%" PRIu64 "/%" PRIu64
	     "; stats says: %s", (int)pid, exited ? "exited" : "live", l, s, r, detail);
	return false;
}

/* ------------------------------------------------------------------------
 * Programs
 */

struct proc {
	pid_t pid;
	int in, out;
	char buf[8192];
	size_t len;
};

/* Starts argv[0] (prog or load) as uid, with FAULTLINE_SOCKET; preload: LD_PRELOAD. */
static int proc_spawn(struct proc *p, uid_t uid, bool with_preload, const char *const argv[])
{
	pid_t parent = getpid();
	int in[2], out[2];

	memset(p, 0, sizeof(*p));
	if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC))
		return -errno;
	p->pid = fork();
	if (p->pid < 0)
		return -errno;
	if (p->pid == 0) {
		char log[PATH_MAX];
		int fd;

		snprintf(log, sizeof(log), "%s/%s-progs.log", outdir, group);
		fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
		dup2(in[0], 0);
		dup2(out[1], 1);
		if (fd >= 0)
			dup2(fd, 2);
		if (uid != geteuid() && (setgroups(0, NULL) || setgid(uid) || setuid(uid)))
			_exit(126);
		die_with(parent);
		setenv("FAULTLINE_SOCKET", sock_path, 1);
		/*
		 * fl_init waits for the daemon's whole handshake (10 ms by
		 * default): the kernel's counts then cover every process, which
		 * the kernel group checks, however slow this machine is today.
		 */
		setenv("FAULTLINE_REGISTER_WAIT_MS", "300000", 1);
		if (with_preload)
			setenv("LD_PRELOAD", preload, 1);
		else
			unsetenv("LD_PRELOAD");
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	kid_add(p->pid);
	close(in[0]);
	close(out[1]);
	p->in = in[1];
	p->out = out[0];
	return 0;
}

/* The next line (without '\n') within timeout_ms: 0, -ETIMEDOUT, or -EPIPE. */
static int proc_line(struct proc *p, char *line, size_t size, int timeout_ms)
{
	double end = now() + timeout_ms / 1000.0;

	for (;;) {
		char *nl = memchr(p->buf, '\n', p->len);
		struct pollfd pf = { .fd = p->out, .events = POLLIN };
		ssize_t n;
		int left;

		if (nl) {
			size_t l = (size_t)(nl - p->buf);

			snprintf(line, size, "%.*s", (int)l, p->buf);
			memmove(p->buf, nl + 1, p->len - l - 1);
			p->len -= l + 1;
			return 0;
		}
		left = (int)((end - now()) * 1000);
		if (left <= 0 || poll(&pf, 1, left) != 1) {
			snprintf(line, size, "(timed out)");
			return -ETIMEDOUT;
		}
		n = read(p->out, p->buf + p->len, sizeof(p->buf) - p->len - 1);
		if (n <= 0) {
			snprintf(line, size, "(end of output)");
			return -EPIPE;
		}
		p->len += (size_t)n;
	}
}

/* Expects a line "WORD PID" (the process's pid, or another); returns it or -1. */
static pid_t proc_expect_pid(struct proc *p, const char *word, const char *name)
{
	char line[256];
	int pid;

	if (proc_line(p, line, sizeof(line), WAIT_MS) != 0 ||
	    strncmp(line, word, strlen(word)) || line[strlen(word)] != ' ' ||
	    sscanf(line + strlen(word), "%d", &pid) != 1) {
		fail(name, "expected \"%s PID\" from the program, got \"%s\"", word, line);
		return -1;
	}
	return pid;
}

static int proc_say(struct proc *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int proc_say(struct proc *p, const char *fmt, ...)
{
	char line[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	return write(p->in, line, (size_t)n) == n ? 0 : -EPIPE;
}

/* Closes stdin and waits; returns the exit status (or -1, also when killed). */
static int proc_end(struct proc *p)
{
	int status;

	if (p->pid <= 0)
		return -1;
	if (p->in >= 0)
		close(p->in);
	p->in = -1;
	status = reap(p->pid);
	close(p->out);
	p->pid = -1;
	return status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* prog wait L S R as uid: returns the pid (ready), or -1. */
static pid_t start_waiter(struct proc *p, uid_t uid, int l, int s, int r, const char *name)
{
	char a[3][16];
	const char *argv[] = { prog, "wait", a[0], a[1], a[2], NULL };

	snprintf(a[0], sizeof(a[0]), "%d", l);
	snprintf(a[1], sizeof(a[1]), "%d", s);
	snprintf(a[2], sizeof(a[2]), "%d", r);
	if (proc_spawn(p, uid, true, argv) != 0) {
		fail(name, "cannot start %s", prog);
		return -1;
	}
	return proc_expect_pid(p, "ready", name);
}

/* Tells a waiter to fail more checks; true when it did. */
static bool waiter_fail(struct proc *p, int l, int s, int r, const char *name)
{
	char line[256];

	if (proc_say(p, "fail %d %d %d\n", l, s, r) != 0 ||
	    proc_line(p, line, sizeof(line), WAIT_MS) != 0 || strcmp(line, "ok")) {
		fail(name, "the program did not fail its checks: %s", line);
		return false;
	}
	return true;
}

/* Runs prog with args to its end; returns the pid it printed after word, or -1. */
static pid_t run_prog(const char *const argv[], const char *word, const char *name)
{
	struct proc p;
	pid_t pid;
	int rc;

	if (proc_spawn(&p, geteuid(), true, argv) != 0) {
		fail(name, "cannot start %s", prog);
		return -1;
	}
	pid = proc_expect_pid(&p, word, name);
	rc = proc_end(&p);
	if (pid > 0 && rc != 0) {
		fail(name, "%s exited with %d", prog, rc);
		return -1;
	}
	return pid;
}

static int ps_entries(json_object *doc, pid_t pid);
static void state_file_checked(void);

/* ------------------------------------------------------------------------
 * Group: counts
 */

static void group_counts(void)
{
	struct proc p;
	pid_t pid, child;
	char line[256];
	json_object *doc;
	int rc;

	if (daemon_start())
		return;

	/* Short-lived: registers, fails a few checks, exits. */
	{
		const char *argv[] = { prog, "run", "3", "5", "7", NULL };

		pid = run_prog(argv, "pid", "short-lived");
		if (pid > 0)
			expect_counts("short-lived process: exact counts after exit", pid, true, 3, 5,
				      7);
	}
	{
		int bad = 0;
		pid_t pids[20];
		char detail[512] = "";
		double end;

		for (int i = 0; i < 20; i++) {
			char a[3][16];
			const char *argv[] = { prog, "run", a[0], a[1], a[2], NULL };

			snprintf(a[0], sizeof(a[0]), "%d", i);
			snprintf(a[1], sizeof(a[1]), "%d", i + 1);
			snprintf(a[2], sizeof(a[2]), "%d", 2 * i);
			pids[i] = run_prog(argv, "pid", "20 short-lived processes");
		}
		/* One deadline for the 20: a failing run does not wait 20 times. */
		end = now() + WAIT_S;
		for (int i = 0; i < 20; i++) {
			struct pstat st;

			for (;;) {
				if (query(0, FL_QUERY_STATS, 0, 0, &doc) == 0) {
					pstat_of(doc, pids[i], &st);
					json_object_put(doc);
				} else {
					st.entries = 0;
				}
				if (st.entries == 1 && st.exited == 1 && st.faults[S_LOAD] == (uint64_t)i &&
				    st.faults[S_STORE] == (uint64_t)i + 1 &&
				    st.faults[S_RMW] == 2 * (uint64_t)i)
					break;
				if (now() > end) {
					bad++;
					pstat_str(&st, detail, sizeof(detail));
					break;
				}
				sleep_ms(50);
			}
		}
		check(!bad, "20 short-lived processes in a row: every one counted exactly",
		      "%d wrong, e.g. %s", bad, detail);
	}

	/* Long-lived: queried while it runs, then after it exits. */
	pid = start_waiter(&p, 0, 10, 20, 30, "long-lived");
	if (pid > 0) {
		expect_counts("long-lived process: counts while it runs", pid, false, 10, 20, 30);
		if (waiter_fail(&p, 1, 2, 3, "long-lived"))
			expect_counts("long-lived process: counts grow while it runs", pid, false, 11,
				      22, 33);

		/* Sites and stack maps of a live process. */
		if (query(0, FL_QUERY_SITES, (uint32_t)pid, 0, &doc) == 0) {
			struct pstat st;

			pstat_of(doc, pid, &st);
			check(nprocs(doc) == 1 && st.entries == 1 && st.faults[S_LOAD] == 11 &&
			      st.other_sites == 0, "sites PID: the process's three sites, named",
			      "%zu processes, %d entries, %d other sites", nprocs(doc), st.entries,
			      st.other_sites);
			json_object_put(doc);
		} else {
			fail("sites PID", "query failed");
		}
		if (query(0, FL_QUERY_STACKMAPS, (uint32_t)pid, UINT64_MAX, &doc) == 0) {
			json_object *recs = get(proc_at(doc, 0), "records");
			json_object *r0 = recs ? json_object_array_get_idx(recs, 0) : NULL;
			json_object *locs = get(r0, "locations");
			json_object *l0 = locs ? json_object_array_get_idx(locs, 0) : NULL;

			check(recs && json_object_array_length(recs) == 1 &&
			      json_object_get_uint64(get(r0, "id")) == 4242 &&
			      json_object_get_uint64(get(r0, "pc")) != 0 && locs &&
			      json_object_array_length(locs) == 2 &&
			      json_object_get_uint64(get(l0, "constant")) == 7,
			      "stackmaps PID: record 4242 with its constant and register",
			      "%s", json_object_to_json_string(doc));
			json_object_put(doc);
		} else {
			fail("stackmaps PID", "query failed");
		}
		if (query(0, FL_QUERY_STACKMAPS, (uint32_t)pid, 4242, &doc) == 0) {
			json_object *recs = get(proc_at(doc, 0), "records");
			size_t n1 = recs ? json_object_array_length(recs) : 99, n2 = 99;

			json_object_put(doc);
			if (query(0, FL_QUERY_STACKMAPS, (uint32_t)pid, 4243, &doc) == 0) {
				recs = get(proc_at(doc, 0), "records");
				n2 = recs ? json_object_array_length(recs) : 99;
				json_object_put(doc);
			}
			check(n1 == 1 && n2 == 0, "stackmaps PID --id: by record ID",
			      "id 4242: %zu records, id 4243: %zu", n1, n2);
		}
		rc = proc_end(&p);
		check(rc == 0, "long-lived process exits cleanly", "exit %d", rc);
		expect_counts("long-lived process: final counts after exit", pid, true, 11, 22, 33);
	}

	/* Multi-threaded: 4 threads. */
	{
		const char *argv[] = { prog, "threads", "100", "200", "300", NULL };

		pid = run_prog(argv, "pid", "multi-threaded");
		if (pid > 0)
			expect_counts("multi-threaded process (4 threads): exact counts", pid, true,
				      400, 800, 1200);
	}

	/* Forking: the child is a process of its own, with its own counts. */
	{
		const char *argv[] = { prog, "fork", "4", "5", "6", "7", "8", "9", NULL };

		if (proc_spawn(&p, 0, true, argv) == 0) {
			double ms = -1;

			child = -1;
			/* The child registers before fork returns: a round trip, a figure. */
			if (proc_line(&p, line, sizeof(line), WAIT_MS) != 0 ||
			    sscanf(line, "child %d %lf", &child, &ms) != 2)
				fail("forking process", "expected \"child PID MS\", got \"%s\"", line);
			printf("# fork in a registered process: %.1f ms in the child\n", ms);
			pid = proc_expect_pid(&p, "parent", "forking process");
			rc = proc_end(&p);
			if (pid > 0 && child > 0 && rc == 0) {
				check(child != pid, "fork: the child has a pid of its own",
				      "child %d, parent %d", (int)child, (int)pid);
				expect_counts("forking process: the parent's own counts (before and after fork)",
					      pid, true, 8, 10, 12);
				expect_counts("forking process: the child listed as its own process, with its own counts",
					      child, true, 7, 8, 9);
			} else {
				fail("forking process", "exit %d", rc);
			}
		}
	}

	rc = daemon_stop();
	check(rc == 0, "SIGTERM: faultlined exits 0", "exit %d", rc);
}

/* ------------------------------------------------------------------------
 * Group: churn (fork while another thread loads and unloads a library)
 */

static void group_churn(void)
{
	char lib[PATH_MAX], line[256];
	const char *argv[] = { prog, "churn", lib, "1000", NULL };
	struct proc p;
	int pid = -1, hung = -1, rc, err;
	double t0 = now();
	json_object *doc;

	snprintf(lib, sizeof(lib), "%s", prog);
	snprintf(strrchr(lib, '/') + 1, sizeof(lib) - (size_t)(strrchr(lib, '/') + 1 - lib),
		 "libe2e-sites.so");
	if (daemon_start())
		return;
	if (proc_spawn(&p, 0, true, argv)) {
		fail("churn", "cannot start %s", prog);
		return;
	}
	/* 1,000 forks (up to a minute under TCG), the whole of them bounded. */
	if (proc_line(&p, line, sizeof(line), 4 * WAIT_MS) != 0 ||
	    sscanf(line, "churn %d %d", &pid, &hung) != 2) {
		fail("churn", "expected \"churn PID HUNG\", got \"%s\"", line);
		kill(p.pid, SIGKILL);
	}
	/*
	 * Asked while it lives: once it has exited, the thousand children
	 * the daemon reads after it (they do not wait for it in fork) push it
	 * out of the exited processes the daemon keeps (256).
	 */
	err = query(0, FL_QUERY_PS, 0, 0, &doc);
	check(!err && ps_entries(doc, pid) == 1,
	      "the process is listed once (re-registrations after drops replace its entry)",
	      "listed %d times", err ? -1 : ps_entries(doc, pid));
	if (!err)
		json_object_put(doc);
	rc = proc_end(&p);
	check(rc == 0, "1,000 forks while a thread loads and unloads a library: no crash",
	      "exit %d (a signal: %s)", rc, rc < 0 ? "yes" : "no");
	check(hung == 0, "no child hangs in fork (the agent's lock is held across fork)",
	      "%d children hung", hung);
	check(!log_has(dlog, "does not describe the module: dropped"),
	      "a module unloaded before the daemon read its MODULE_ADD does not drop the process",
	      "dropped for its site table (%s)", dlog);
	err = query(0, FL_QUERY_PS, 0, 0, &doc);
	check(daemon_alive() && !err, "the daemon serves on", "alive %d, err %d",
	      daemon_alive(), err);
	if (!err)
		json_object_put(doc);
	printf("# churn: the process was dropped for its message rate: %s\n",
	       log_has(dlog, "flooding") ? "yes" : "no");
	printf("# churn: %.1f s\n", now() - t0);
	check(daemon_stop() == 0, "SIGTERM: faultlined exits 0", "bad exit");
}

/* ------------------------------------------------------------------------
 * Group: restart (kill -9, same state directory)
 */

static int ps_entries(json_object *doc, pid_t pid)
{
	int n = 0;

	for (size_t i = 0; i < nprocs(doc); i++)
		n += json_object_get_int(get(proc_at(doc, i), "pid")) == pid;
	return n;
}

/*
 * The first line of each of the daemon's records (state_dir/proc.N.json),
 * the process's header, as a JSON array of them.
 */
static json_object *record_headers(void)
{
	json_object *all = json_object_new_array();
	DIR *d = opendir(state_dir);
	struct dirent *e;

	while (d && (e = readdir(d))) {
		char path[PATH_MAX + 300], line[8192];
		size_t len = strlen(e->d_name);
		FILE *f;

		/* Written to a temporary file and renamed: never half a file. */
		if (strncmp(e->d_name, "proc.", 5) || len < 10 || strcmp(e->d_name + len - 5, ".json"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", state_dir, e->d_name);
		f = fopen(path, "r");
		if (f && fgets(line, sizeof(line), f)) {
			json_object *h = json_tokener_parse(line);

			if (h)
				json_object_array_add(all, h);
		}
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	return all;
}

/*
 * Waits until the daemon's records list each of the n pids as exited:
 * what a daemon killed then leaves to the next one.  FAIL after WAIT_S.
 */
static bool state_lists_exited(const char *name, const pid_t *pids, size_t n)
{
	double end = now() + WAIT_S;
	size_t found;

	for (;;) {
		json_object *procs = record_headers();

		found = 0;
		for (size_t i = 0; i < n; i++)
			for (size_t k = 0; k < json_object_array_length(procs); k++) {
				json_object *p = json_object_array_get_idx(procs, k);

				if (json_object_get_int(get(p, "pid")) == pids[i] &&
				    json_object_get_boolean(get(p, "exited"))) {
					found++;
					break;
				}
			}
		json_object_put(procs);
		if (found == n)
			return true;
		if (now() > end)
			break;
		sleep_ms(50);
	}
	fail(name, "the records in %s list %zu of the %zu processes as exited", state_dir, found,
	     n);
	return false;
}

/* Removes the daemon's records: a state.json written next is the whole state. */
static void remove_records(void)
{
	DIR *d = opendir(state_dir);
	struct dirent *e;

	while (d && (e = readdir(d))) {
		char path[PATH_MAX + 300];

		if (strncmp(e->d_name, "proc.", 5))
			continue;
		snprintf(path, sizeof(path), "%s/%s", state_dir, e->d_name);
		unlink(path);
	}
	if (d)
		closedir(d);
}

static void group_restart(void)
{
	struct proc a, c;
	pid_t apid, bpid, cpid = -1;
	json_object *doc;
	int rc;

	if (daemon_start())
		return;
	apid = start_waiter(&a, 0, 5, 6, 7, "restart");
	{
		const char *argv[] = { prog, "run", "1", "2", "3", NULL };

		bpid = run_prog(argv, "pid", "restart");
	}
	if (apid < 0 || bpid < 0)
		return;
	expect_counts("before kill -9: the running process", apid, false, 5, 6, 7);
	expect_counts("before kill -9: the exited process", bpid, true, 1, 2, 3);
	state_lists_exited("before kill -9: state.json", &bpid, 1);
	daemon_kill9();

	/* While the daemon is down: counts go on in the process; a new one starts. */
	waiter_fail(&a, 1, 1, 1, "restart: fails checks while the daemon is down");
	cpid = start_waiter(&c, 0, 2, 2, 2, "started while the daemon is down");

	if (daemon_start())
		return;
	expect_counts("after kill -9 and restart: the running process re-registered, counts intact",
		      apid, false, 6, 7, 8);
	expect_counts("after kill -9 and restart: the exited process restored from state.json",
		      bpid, true, 1, 2, 3);
	if (cpid > 0)
		expect_counts("a process started while the daemon was down registers when it comes up",
			      cpid, false, 2, 2, 2);
	if (query(0, FL_QUERY_PS, 0, 0, &doc) == 0) {
		int na = ps_entries(doc, apid), nb = ps_entries(doc, bpid);

		check(na == 1 && nb == 1, "ps after restart: each process listed once",
		      "running process listed %d times, exited one %d times", na, nb);
		json_object_put(doc);
	}
	if (query(0, FL_QUERY_STATS, (uint32_t)apid, 0, &doc) == 0) {
		check(nprocs(doc) == 1, "stats --pid after restart: one entry",
		      "%zu entries", nprocs(doc));
		json_object_put(doc);
	}

	/* A second kill -9 with both exited: everything from state.json. */
	waiter_fail(&a, 10, 0, 0, "restart");
	rc = proc_end(&a);
	check(rc == 0, "the re-registered process exits cleanly", "exit %d", rc);
	expect_counts("the re-registered process's final counts", apid, true, 16, 7, 8);
	if (cpid > 0)
		proc_end(&c);
	if (cpid > 0)
		expect_counts("the late process's final counts", cpid, true, 2, 2, 2);
	{
		pid_t gone[3] = { apid, bpid, cpid };

		state_lists_exited("second kill -9: state.json", gone, cpid > 0 ? 3 : 2);
	}
	daemon_kill9();
	if (daemon_start())
		return;
	expect_counts("second kill -9: the re-registered process's final counts restored", apid,
		      true, 16, 7, 8);
	expect_counts("second kill -9: the first exited process still there", bpid, true, 1, 2,
		      3);
	if (cpid > 0)
		expect_counts("second kill -9: the late process restored", cpid, true, 2, 2, 2);
	rc = daemon_stop();
	check(rc == 0, "SIGTERM: faultlined exits 0", "exit %d", rc);
	state_file_checked();
}

/*
 * Writes text as state.json (of the daemons before records, version 1),
 * the records removed, starts the daemon on it; returns ps's entries or -1.
 */
static int restored_from(const char *text)
{
	char path[PATH_MAX + 16];
	json_object *doc;
	FILE *f;
	int n = -1;

	remove_records();
	snprintf(path, sizeof(path), "%s/state.json", state_dir);
	f = fopen(path, "w");
	if (!f || fputs(text, f) < 0 || fclose(f)) {
		fail("state.json", "cannot write %s", path);
		return -1;
	}
	if (daemon_start())
		return -1;
	if (query(0, FL_QUERY_PS, 0, 0, &doc) == 0) {
		n = (int)nprocs(doc);
		if (n == 1 && json_object_get_int(get(proc_at(doc, 0), "pid")) != 12345)
			n = -1;
		json_object_put(doc);
	}
	daemon_stop();
	return n;
}

/*
 * state.json is read back, not trusted: a file of another version is not
 * guessed at, and an entry whose pid or uid no process can have (the uid
 * decides who sees it) is left out.
 */
static void state_file_checked(void)
{
	int n;

	n = restored_from("{\"version\":2,\"processes\":[{\"pid\":12345,\"uid\":0}]}");
	check(n == 0, "state.json of version 2 (there is none: records are): starting empty",
	      "%d processes restored", n);
	n = restored_from("{\"version\":1,\"processes\":[{\"pid\":0,\"uid\":0},"
			  "{\"pid\":-5,\"uid\":0},{\"pid\":1099511627776,\"uid\":0},"
			  "{\"pid\":777,\"uid\":4294967295},{\"pid\":778,\"uid\":-1},7,"
			  "{\"pid\":12345,\"uid\":0,\"comm\":\"valid\"}]}");
	check(n == 1, "state.json entries with no valid pid or uid left out, the valid one "
	      "restored", "%d processes restored (want 1, pid 12345)", n);
}

/* ------------------------------------------------------------------------
 * Group: request
 */

static void group_request(void)
{
	struct proc a, n;
	pid_t apid, npid, bpid;
	uint64_t v = 0;
	int err;

	if (daemon_start())
		return;
	apid = start_waiter(&a, 0, 0, 0, 0, "request");
	npid = start_waiter(&n, NOBODY, 1, 0, 0, "request (process of nobody)");
	if (apid < 0 || npid < 0)
		return;
	expect_counts("request: root's process registered", apid, false, 0, 0, 0);
	expect_counts("request: nobody's process registered", npid, false, 1, 0, 0);

	err = request(0, (uint32_t)apid, FL_REQ_PING, 12345, &v);
	check(!err && v == 12345, "ping: REPLY with the value", "err %d value %" PRIu64, err, v);
	err = request(0, (uint32_t)apid, FL_REQ_HEAL_THRESHOLD, 17, &v);
	check(!err && v == 0, "heal threshold set: returns the old value (0)",
	      "err %d value %" PRIu64, err, v);
	err = request(0, (uint32_t)apid, FL_REQ_HEAL_THRESHOLD, 5, &v);
	check(!err && v == 17, "heal threshold set again: returns the old value (17)",
	      "err %d value %" PRIu64, err, v);

	err = request(NOBODY, (uint32_t)apid, FL_REQ_HEAL_THRESHOLD, 99, &v);
	check(err == -ESRCH, "heal threshold from another uid (nobody): -ESRCH", "err %d", err);
	err = request(NOBODY, (uint32_t)apid, FL_REQ_PING, 1, &v);
	check(err == -ESRCH, "ping from another uid (nobody): -ESRCH", "err %d", err);
	err = request(0, (uint32_t)apid, FL_REQ_HEAL_THRESHOLD, 5, &v);
	check(!err && v == 5, "the refused request did not reach the process (threshold still 5)",
	      "err %d value %" PRIu64, err, v);

	err = request(NOBODY, (uint32_t)npid, FL_REQ_PING, 777, &v);
	check(!err && v == 777, "nobody pings its own process", "err %d value %" PRIu64, err, v);
	err = request(NOBODY, (uint32_t)npid, FL_REQ_HEAL_THRESHOLD, 3, &v);
	check(!err && v == 0, "nobody sets its own process's heal threshold",
	      "err %d value %" PRIu64, err, v);
	err = request(0, (uint32_t)npid, FL_REQ_HEAL_THRESHOLD, 4, &v);
	check(!err && v == 3, "root sets nobody's process's heal threshold",
	      "err %d value %" PRIu64, err, v);

	err = request(0, (uint32_t)apid, FL_REQ_HEAL_THRESHOLD, 1ull << 40, &v);
	check(err == -EINVAL, "heal threshold out of range: the process answers -EINVAL",
	      "err %d", err);
	{
		const char *argv[] = { prog, "run", "0", "0", "0", NULL };

		bpid = run_prog(argv, "pid", "request");
		if (bpid > 0) {
			expect_counts("request: a process that exited", bpid, true, 0, 0, 0);
			err = request(0, (uint32_t)bpid, FL_REQ_PING, 1, &v);
			check(err == -ESRCH, "ping to an exited process: -ESRCH", "err %d", err);
		}
	}
	err = request(0, 0x3fffffff, FL_REQ_PING, 1, &v);
	check(err == -ESRCH, "ping to an unknown pid: -ESRCH", "err %d", err);

	/* Many requests on one connection, and several in flight. */
	{
		int fd = conn(), bad = 0;
		char msg[64], *text;

		/* Completions are collected on the daemon's tick (50 ms). */
		for (int i = 0; fd >= 0 && i < 40; i++) {
			json_object *doc;

			if (xsend(fd, msg, mk_request(msg, (uint32_t)apid, FL_REQ_PING, 1000 + i), NULL,
				  0, 0) || read_reply(fd, &text, WAIT_MS)) {
				bad++;
				break;
			}
			doc = json_tokener_parse(text);
			bad += json_object_get_uint64(get(doc, "value")) != (uint64_t)(1000 + i);
			json_object_put(doc);
			free(text);
		}
		check(fd >= 0 && !bad, "40 pings in a row on one connection", "%d wrong", bad);
		for (int i = 0; fd >= 0 && i < 8; i++)
			xsend(fd, msg, mk_request(msg, (uint32_t)apid, FL_REQ_PING, 50 + i), NULL, 0,
			      0);
		bad = 0;
		for (int i = 0; fd >= 0 && i < 8; i++) {
			json_object *doc;

			if (read_reply(fd, &text, WAIT_MS)) {
				bad += 8 - i;
				break;
			}
			doc = json_tokener_parse(text);
			bad += json_object_get_uint64(get(doc, "value")) < 50;
			json_object_put(doc);
			free(text);
		}
		check(!bad, "8 pings in flight at once: all answered", "%d missing", bad);
		if (fd >= 0)
			close(fd);
	}
	/* A process that does not take requests: timed out, the daemon serves on. */
	{
		char line[64];
		int rc;

		kill(a.pid, SIGSTOP);
		/* Stopped is a moment later for every thread (fl-requests too). */
		wait_stopped(apid);
		err = request(0, (uint32_t)apid, FL_REQ_PING, 5, &v);
		check(err == -ETIMEDOUT, "a stopped process's request times out (-ETIMEDOUT)",
		      "err %d", err);
		kill(a.pid, SIGCONT);
		err = request(0, (uint32_t)apid, FL_REQ_PING, 6, &v);
		check(!err && v == 6, "after SIGCONT it answers again", "err %d value %" PRIu64,
		      err, v);
		(void)line;
		rc = proc_end(&a);
		check(rc == 0, "request: root's process exits cleanly", "exit %d", rc);
		rc = proc_end(&n);
		check(rc == 0, "request: nobody's process exits cleanly", "exit %d", rc);
	}
	check(daemon_stop() == 0, "SIGTERM: faultlined exits 0", "bad exit");
}

/* ------------------------------------------------------------------------
 * Group: security
 */

/* A region for a fake process: capacity slots, sealed as asked. */
struct fake {
	int fd;
	void *region;
	struct fl_shm_layout l;
};

static uint32_t fake_ring = 8;	/* request ring entries of the next fake region */

static int fake_region(struct fake *f, uint32_t capacity, int seals, pid_t pid)
{
	memset(f, 0, sizeof(*f));
	if (fl_shm_layout(capacity, fake_ring, 8, &f->l) != 0)
		return -EINVAL;
	f->fd = memfd_create("e2e-region", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (f->fd < 0 || ftruncate(f->fd, (off_t)f->l.size))
		return -errno;
	f->region = mmap(NULL, f->l.size, PROT_READ | PROT_WRITE, MAP_SHARED, f->fd, 0);
	if (f->region == MAP_FAILED)
		return -errno;
	fl_shm_init(f->region, &f->l, (uint32_t)pid);
	if (seals && fcntl(f->fd, F_ADD_SEALS, seals))
		return -errno;
	return 0;
}

static size_t mk_hello(void *buf, pid_t pid, uint64_t size)
{
	struct fl_msg_hello h;

	memset(&h, 0, sizeof(h));
	fl_proto_header(&h, FL_MSG_HELLO, sizeof(h), 1);
	h.pid = (uint32_t)pid;
	h.region_size = size;
	snprintf(h.comm, sizeof(h.comm), "e2e-fake");
	memcpy(buf, &h, sizeof(h));
	return sizeof(h);
}

#define ALL_SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)

/* HELLO with f's region; returns the WELCOME'd socket or -errno. */
static int fake_hello(struct fake *f)
{
	char msg[256], buf[512];
	struct fl_msg m;
	int fd = conn();
	ssize_t n;

	if (fd < 0)
		return fd;
	if (xsend(fd, msg, mk_hello(msg, getpid(), f->l.size), &f->fd, 1, 0) ||
	    (n = xrecv(fd, buf, sizeof(buf), WAIT_MS)) <= 0 ||
	    fl_proto_decode(buf, (size_t)n, 0, &m, NULL) || m.type != FL_MSG_WELCOME) {
		close(fd);
		return -EPROTO;
	}
	return fd;
}

/* Fault map v1 bytes for n sites of one function at code offset 0. */
static size_t mk_faultmap(unsigned char *b, uint64_t fn, uint32_t n)
{
	size_t o = 0;
	uint32_t u;
	uint64_t q;

	b[o++] = 1;
	b[o++] = 0;
	b[o++] = 0;
	b[o++] = 0;
	u = 1;
	memcpy(b + o, &u, 4), o += 4;
	q = fn;
	memcpy(b + o, &q, 8), o += 8;
	memcpy(b + o, &n, 4), o += 4;
	u = 0;
	memcpy(b + o, &u, 4), o += 4;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t e[3] = { 1, 16 * i, 16 * i + 8 };

		memcpy(b + o, e, sizeof(e));
		o += sizeof(e);
	}
	return o;
}

#define FAKE_CODE 0x10000000ull
#define FAKE_SITES 3

/* The site table entries of module 1 at slots 2.. (PCs in the fake code). */
static void fake_sites(struct fake *f, uint32_t module)
{
	struct fl_shm_site *t = (struct fl_shm_site *)((char *)f->region + f->l.sites_offset);

	for (uint32_t i = 0; i < FAKE_SITES; i++)
		t[2 + i] = (struct fl_shm_site){
			.faulting_pc = FAKE_CODE + 16 * i, .handler_pc = FAKE_CODE + 16 * i + 8,
			.module = module, .kind = 1,
		};
}

/* A sections memfd holding bytes, sealed with seals. */
static int sections_fd(const void *bytes, size_t len, int seals)
{
	int fd = memfd_create("e2e-sections", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd < 0 || write(fd, bytes, len) != (ssize_t)len ||
	    (seals && fcntl(fd, F_ADD_SEALS, seals))) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

static size_t mk_module_add(void *buf, uint32_t module, uint32_t first, uint32_t nsites,
			    uint32_t fm_size)
{
	struct fl_msg_module_add a;

	memset(&a, 0, sizeof(a));
	fl_proto_header(&a, FL_MSG_MODULE_ADD, sizeof(a) + 4, 2);
	a.module = module;
	a.code_start = FAKE_CODE;
	a.code_size = 4096;
	a.first_counter = first;
	a.num_sites = nsites;
	a.faultmap_size = fm_size;
	a.name_len = 4;
	memcpy(buf, &a, sizeof(a));
	memcpy((char *)buf + sizeof(a), "fake", 4);
	return sizeof(a) + 4;
}

enum mod_case {
	MOD_VALID, MOD_UNSEALED, MOD_NO_WRITE_SEAL, MOD_WRONG_SIZE, MOD_GARBAGE_FM,
	MOD_FM_COUNT, MOD_SLOT_KIND0, MOD_SLOT_MODULE, MOD_SLOT_PC, MOD_SLOTS_OUTSIDE,
	MOD_TWICE, MOD_SYMBOLS_RANGE, MOD_REMOVE_UNKNOWN, MOD_HELLO_AGAIN, MOD_QUERY,
	MOD_RING, MOD_HEADER_SCRIBBLE, MOD_REREGISTER, MOD_REREGISTER_UID, MOD_COMPLETIONS,
};

static const char *const mod_case_name[] = {
	"valid fake process", "MODULE_ADD: sections memfd without seals",
	"MODULE_ADD: sections memfd not sealed against writes",
	"MODULE_ADD: sections memfd of the wrong size", "MODULE_ADD: garbage fault map",
	"MODULE_ADD: fault map entries != num_sites",
	"MODULE_ADD: site table slot unused (kind 0, as after an unload): module left out",
	"MODULE_ADD: site table slot of another module (reused after an unload): module left out",
	"MODULE_ADD: site table slot PC outside the code range: module left out",
	"MODULE_ADD: counter slots outside the region", "MODULE_ADD: the same module twice",
	"SYMBOLS: site index out of range", "MODULE_REMOVE: unknown module",
	"HELLO twice on one connection", "QUERY from a registered process",
	"completion ring: implausible head",
	"region header scribbled after HELLO (never read again)",
	"dropped, then registered again: listed once, live, its counts intact",
	"dropped, then registered again as nobody: stats --pid shows the live registration",
	"completion ring: a status that is no errno, a head kept moving",
};

/* SYMBOLS naming site (index in the module) "abc". */
static void send_symbols(int fd, uint32_t module, uint32_t site)
{
	struct fl_msg_symbols s;
	unsigned char b[sizeof(s) + 16] = { 0 };
	uint16_t l = 3;

	memset(&s, 0, sizeof(s));
	fl_proto_header(&s, FL_MSG_SYMBOLS, sizeof(s) + 4 + 2 + 3, 3);
	s.module = module;
	s.count = 1;
	memcpy(b, &s, sizeof(s));
	memcpy(b + sizeof(s), &site, 4);
	memcpy(b + sizeof(s) + 4, &l, 2);
	memcpy(b + sizeof(s) + 6, "abc", 3);
	xsend(fd, b, sizeof(s) + 9, NULL, 0, 0);
}

static void send_remove(int fd, uint32_t module)
{
	struct fl_msg_module_remove r;

	memset(&r, 0, sizeof(r));
	fl_proto_header(&r, FL_MSG_MODULE_REMOVE, sizeof(r), 3);
	r.module = module;
	xsend(fd, &r, sizeof(r), NULL, 0, 0);
}

/*
 * The completion ring is the process's to write: a status that is no errno
 * reaches the requester as -EPROTO, and a head kept moving past the tail
 * (completions, forever, none the one awaited) does not hold the daemon:
 * the request times out and a query is answered meanwhile.
 */
static int fake_completions(struct fake *f)
{
	struct fl_shm_header *h = f->region;
	struct fl_shm_entry *c = (void *)((char *)f->region + f->l.completions_offset);
	json_object *doc;
	uint64_t v;
	pid_t spin, parent;
	int err, qerr;

	/* The first request's seq is 1: its completion is there before it is asked. */
	c[0] = (struct fl_shm_entry){ .seq = 1, .status = INT32_MIN };
	atomic_store_explicit(&h->completion_head, 1, memory_order_release);
	err = request(0, (uint32_t)getpid(), FL_REQ_PING, 1, &v);
	if (err != -EPROTO) {
		printf("a completion of status INT32_MIN answered %d (want %d)", err, -EPROTO);
		return 1;
	}
	c[0].seq = 0;
	parent = getpid();
	spin = fork();
	if (spin == 0) {
		die_with(parent);
		for (;;)
			atomic_store(&h->completion_head, atomic_load(&h->completion_tail) + 1);
	}
	if (spin < 0) {
		printf("fork: %s", strerror(errno));
		return 1;
	}
	err = request(0, (uint32_t)getpid(), FL_REQ_PING, 2, &v);
	qerr = query(0, FL_QUERY_PS, (uint32_t)getpid(), 0, &doc);
	json_object_put(doc);
	kill(spin, SIGKILL);
	waitpid(spin, NULL, 0);
	if (err != -ETIMEDOUT || qerr) {
		printf("with the head kept moving: the request answered %d (want %d), "
		       "a query %d", err, -ETIMEDOUT, qerr);
		return 1;
	}
	printf("-EPROTO; with the head kept moving, the request timed out and a query "
	       "was answered");
	return 0;
}

/*
 * In a child (a pid of its own): registers a fake process, then does what
 * the case says.  Exit 0: the daemon behaved (dropped the client, or for
 * MOD_VALID and MOD_HEADER_SCRIBBLE kept it and showed its counts);
 * stdout: detail.
 */
static int fake_child(enum mod_case mc)
{
	unsigned char fm[256];
	char msg[512];
	struct fake f;
	size_t fm_size, len;
	int fd, sfd = -1, err, seals = F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;
	uint32_t nsites = FAKE_SITES, first = 2;
	struct pstat st;
	json_object *doc;
	int hp[2], hr[2];
	pid_t helper = -1;

	if (fake_region(&f, 16, ALL_SEALS, getpid())) {
		printf("cannot make a region");
		return 1;
	}
	fake_sites(&f, 1);
	fd = fake_hello(&f);
	if (fd < 0) {
		printf("the valid HELLO was refused");
		return 1;
	}
	fm_size = mk_faultmap(fm, FAKE_CODE, FAKE_SITES);
	switch (mc) {
	case MOD_UNSEALED:
		seals = 0;
		break;
	case MOD_NO_WRITE_SEAL:
		seals = F_SEAL_SHRINK | F_SEAL_GROW;
		break;
	case MOD_GARBAGE_FM:
		for (size_t i = 0; i < fm_size; i++)
			fm[i] = (unsigned char)(i * 37 + 11);
		break;
	case MOD_FM_COUNT:
		fm_size = mk_faultmap(fm, FAKE_CODE, FAKE_SITES - 1);
		break;
	case MOD_SLOT_KIND0:
		((struct fl_shm_site *)((char *)f.region + f.l.sites_offset))[3].kind = 0;
		break;
	case MOD_SLOT_MODULE:
		((struct fl_shm_site *)((char *)f.region + f.l.sites_offset))[3].module = 2;
		break;
	case MOD_SLOT_PC:
		((struct fl_shm_site *)((char *)f.region + f.l.sites_offset))[4].handler_pc =
			FAKE_CODE + 8192;
		break;
	case MOD_SLOTS_OUTSIDE:
		first = 15;
		break;
	default:
		break;
	}
	sfd = sections_fd(fm, fm_size, seals);
	len = mk_module_add(msg, 1, first, nsites, (uint32_t)fm_size);
	if (mc == MOD_WRONG_SIZE) {
		((struct fl_msg_module_add *)msg)->faultmap_size = (uint32_t)fm_size + 8;
		/* The fault map's size claims 8 more bytes than the memfd holds. */
	}
	if (sfd < 0 || xsend(fd, msg, len, &sfd, 1, 0)) {
		printf("cannot send MODULE_ADD");
		return 1;
	}
	close(sfd);

	switch (mc) {
	case MOD_VALID:
	case MOD_HEADER_SCRIBBLE:
	case MOD_REREGISTER:
	case MOD_REREGISTER_UID:
	case MOD_COMPLETIONS:
	case MOD_RING: {
		_Atomic uint64_t *ctr = (_Atomic uint64_t *)((char *)f.region + f.l.counters_offset);
		double end = now() + WAIT_S;

		ctr[2] = 41;
		ctr[3] = 42;
		ctr[4] = 43;
		for (int round = 0; round < 2; round++) {
			if (round == 1) {
				struct fl_shm_header *h = f.region;

				if (mc != MOD_HEADER_SCRIBBLE)
					break;
				/*
				 * Registered: now the writer-once fields and the
				 * whole site table change under the daemon.
				 */
				h->counters_offset = 0xfffffff0u;
				h->sites_offset = 0x7fffffffu;
				h->capacity = 0xffffffffu;
				h->size = 1ull << 60;
				h->request_entries = 3;
				memset((char *)f.region + f.l.sites_offset, 0xff,
				       16 * sizeof(struct fl_shm_site));
				sleep_ms(200);
			}
			end = now() + WAIT_S;
			for (;;) {
				err = query(0, FL_QUERY_STATS, (uint32_t)getpid(), 0, &doc);
				memset(&st, 0, sizeof(st));
				if (!err) {
					json_object *p0 = proc_at(doc, 0);
					json_object *sites = get(p0, "sites");
					uint64_t sum = 0;

					for (size_t i = 0; sites && i < json_object_array_length(sites); i++)
						sum = sum * 100 + json_object_get_uint64(
							get(json_object_array_get_idx(sites, i), "faults"));
					st.total = sum;
					st.exited = json_object_get_boolean(get(p0, "exited"));
					json_object_put(doc);
				}
				if ((st.total == 414243 && !st.exited) || now() > end)
					break;
				sleep_ms(50);
			}
			if (st.total != 414243 || st.exited) {
				printf("stats of the fake process: err %d, counts %" PRIu64 ", exited %d",
				       err, st.total, st.exited);
				return 1;
			}
		}
		if (mc == MOD_REREGISTER || mc == MOD_REREGISTER_UID) {
			json_object *p0;
			int n = 0;

			/* A violation: dropped.  Then the same process again. */
			xsend(fd, "garbage!", 8, NULL, 0, 0);
			if (!dropped(fd, NULL)) {
				printf("not dropped for garbage");
				return 1;
			}
			close(fd);
			/*
			 * As another user: a registration of its own, listed
			 * beside the old one.  A helper that stays root asks
			 * for stats --pid later.
			 */
			if (mc == MOD_REREGISTER_UID) {
				pid_t me = getpid();

				if (pipe(hp) || pipe(hr))
					return 1;
				helper = fork();
				if (helper == 0) {
					int res[2] = { -1, -1 };
					char c;

					/*
					 * Its parent turns nobody, which cannot
					 * signal root: EOF on hp ends it too.
					 */
					die_with(me);
					close(hp[1]);
					close(hr[0]);
					(void)!read(hp[0], &c, 1);
					if (query(0, FL_QUERY_STATS, (uint32_t)me, 0, &doc) == 0) {
						res[0] = (int)nprocs(doc);
						res[1] = json_object_get_boolean(
							get(proc_at(doc, 0), "exited"));
						json_object_put(doc);
					}
					(void)!write(hr[1], res, sizeof(res));
					_exit(0);
				}
				if (setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY)) {
					printf("cannot become nobody");
					return 1;
				}
			}
			fd = fake_hello(&f);
			sfd = sections_fd(fm, fm_size, seals);
			if (fd < 0 || sfd < 0 || xsend(fd, msg, len, &sfd, 1, 0)) {
				printf("the second registration failed");
				return 1;
			}
			close(sfd);
			end = now() + WAIT_S;
			do {
				sleep_ms(50);
				err = query(geteuid(), FL_QUERY_STATS, (uint32_t)getpid(), 0, &doc);
				if (err)
					continue;
				p0 = proc_at(doc, 0);
				n = (int)nprocs(doc);
				st.exited = json_object_get_boolean(get(p0, "exited"));
				st.total = json_object_get_uint64(get(p0, "faults"));
				json_object_put(doc);
				if (n == 1 && !st.exited && st.total == 41 + 42 + 43) {
					printf("listed once, live, 126 faults");
					break;
				}
			} while (now() < end);
			if (n == 1 && !st.exited && st.total == 41 + 42 + 43 && mc == MOD_REREGISTER)
				return 0;
			/* Root sees both registrations; --pid picks the live one. */
			if (n == 1 && !st.exited && st.total == 41 + 42 + 43) {
				int res[2] = { -1, -1 };

				(void)!write(hp[1], "x", 1);
				(void)!read(hr[0], res, sizeof(res));
				waitpid(helper, NULL, 0);
				printf(" (as nobody); root's stats --pid: %d entries, exited %d", res[0],
				       res[1]);
				return res[0] == 1 && res[1] == 0 ? 0 : 1;
			}
			printf("stats --pid: err %d, %d entries, exited %d, %" PRIu64 " faults",
			       err, n, st.exited, st.total);
			return 1;
		}
		if (mc == MOD_COMPLETIONS)
			return fake_completions(&f);
		if (mc != MOD_RING) {
			printf("counts 41/42/43 read from its region");
			return 0;
		}
		/* A request is pending; its completion ring's head is implausible. */
		{
			struct fl_shm_header *h = f.region;
			uint64_t v;

			atomic_store(&h->completion_head, 1000);
			err = request(0, (uint32_t)getpid(), FL_REQ_PING, 1, &v);
			if (err != -ESRCH && err != -ETIMEDOUT) {
				printf("the request to it answered %d", err);
				return 1;
			}
		}
		break;
	}
	case MOD_TWICE:
		sfd = sections_fd(fm, fm_size, seals);
		xsend(fd, msg, len, &sfd, 1, 0);
		close(sfd);
		break;
	case MOD_SLOT_KIND0:
	case MOD_SLOT_MODULE:
	case MOD_SLOT_PC: {
		/*
		 * The process may have unloaded the module since it sent
		 * MODULE_ADD: the daemon leaves the module out but keeps the
		 * process, and takes the module's SYMBOLS and MODULE_REMOVE.
		 */
		double end = now() + WAIT_S;
		bool listed = false;

		send_symbols(fd, 1, 0);
		send_remove(fd, 1);
		while (!listed && now() < end) {
			err = query(0, FL_QUERY_STATS, (uint32_t)getpid(), 0, &doc);
			if (!err) {
				json_object *p0 = proc_at(doc, 0);

				listed = !json_object_get_boolean(get(p0, "exited")) &&
					 json_object_get_int(get(p0, "num_sites")) == 0;
				json_object_put(doc);
			}
			if (!listed)
				sleep_ms(50);
		}
		if (!listed) {
			printf("not listed live without sites (err %d)", err);
			return 1;
		}
		printf("kept (live, no sites); SYMBOLS and MODULE_REMOVE taken; ");
		/* The module is forgotten now: a second MODULE_REMOVE is a violation. */
		send_remove(fd, 1);
		break;
	}
	case MOD_SYMBOLS_RANGE:
		send_symbols(fd, 1, 3);
		break;
	case MOD_REMOVE_UNKNOWN:
		send_remove(fd, 9);
		break;
	case MOD_HELLO_AGAIN:
		xsend(fd, msg, mk_hello(msg, getpid(), f.l.size), &f.fd, 1, 0);
		break;
	case MOD_QUERY:
		xsend(fd, msg, mk_query(msg, FL_QUERY_STATS, 0, 0), NULL, 0, 0);
		break;
	default:
		break;
	}
	if (!dropped(fd, &err)) {
		printf("not dropped");
		return 1;
	}
	printf("dropped");
	/* Registered, then dropped: listed as exited (with its counts, if any). */
	err = query(0, FL_QUERY_PS, (uint32_t)getpid(), 0, &doc);
	if (err || !json_object_get_boolean(get(proc_at(doc, 0), "exited"))) {
		printf(", but not listed as exited (err %d)", err);
		json_object_put(doc);
		return 1;
	}
	json_object_put(doc);
	printf(", listed as exited");
	return 0;
}

/* Runs fake_child(mc) in a child process; ok or FAIL. */
static void fake_case(enum mod_case mc)
{
	int pfd[2], status;
	char detail[512] = { 0 };
	ssize_t n;
	pid_t pid, parent = getpid();

	if (pipe(pfd))
		return;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		die_with(parent);
		close(pfd[0]);
		dup2(pfd[1], 1);
		setvbuf(stdout, NULL, _IONBF, 0);
		_exit(fake_child(mc));
	}
	close(pfd[1]);
	for (size_t got = 0; got < sizeof(detail) - 1; got += (size_t)n) {
		n = read(pfd[0], detail + got, sizeof(detail) - 1 - got);
		if (n <= 0)
			break;
	}
	close(pfd[0]);
	waitpid(pid, &status, 0);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		ok("%s: %s", mod_case_name[mc], detail);
	else
		fail(mod_case_name[mc], "%s", detail);
}

/* A raw message on a new connection: dropped, with the ERROR code wanted (1: any). */
static void bad_message(const char *name, const void *msg, size_t len, const int *fds,
			size_t nfds, int want_err)
{
	int fd = conn(), err = 0, gone;

	if (fd < 0) {
		fail(name, "connect: %s", strerror(-fd));
		return;
	}
	if (xsend(fd, msg, len, fds, nfds, 0)) {
		fail(name, "send: %s", strerror(errno));
		close(fd);
		return;
	}
	gone = dropped(fd, &err);
	close(fd);
	if (!gone)
		fail(name, "the daemon did not drop the client");
	else if (want_err != 1 && err != want_err)
		fail(name, "dropped with ERROR %d, want %d", err, want_err);
	else
		ok("%s: dropped%s", name, err ? " after an ERROR" : "");
}

/* The daemon is up and a fresh client gets an answer. */
static void still_serving(const char *after)
{
	json_object *doc;
	int err = query(0, FL_QUERY_PS, 0, 0, &doc);
	char name[256];

	snprintf(name, sizeof(name), "daemon up and serving after %s", after);
	check(daemon_alive() && !err, name, "alive %d, query: %d", daemon_alive(), err);
	json_object_put(doc);
}

static void forged_hello(const char *name, pid_t claim, pid_t header_pid, uint64_t size_delta,
			 int seals, int want_err)
{
	struct fake f;
	char msg[256];

	if (fake_region(&f, 16, seals, header_pid)) {
		fail(name, "cannot make a region");
		return;
	}
	bad_message(name, msg, mk_hello(msg, claim, f.l.size + size_delta), &f.fd, 1, want_err);
	munmap(f.region, f.l.size);
	close(f.fd);
}

static long daemon_rss_kib(void)
{
	char path[64], line[256];
	long kib = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)dpid);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld", &kib) == 1)
			break;
	if (f)
		fclose(f);
	return kib;
}

/*
 * A stack map (v3) of one function with nrec records, no locations: 24
 * bytes a record, the smallest there is.
 */
static unsigned char *mk_big_stackmap(size_t nrec, size_t *size)
{
	size_t n = 16 + 24 + 24 * nrec;
	unsigned char *b = calloc(1, n);
	uint32_t u;
	uint64_t q;

	if (!b)
		return NULL;
	b[0] = 3;
	u = 1;
	memcpy(b + 4, &u, 4);
	u = (uint32_t)nrec;
	memcpy(b + 12, &u, 4);
	q = FAKE_CODE;
	memcpy(b + 16, &q, 8);
	q = 16;
	memcpy(b + 24, &q, 8);
	q = nrec;
	memcpy(b + 32, &q, 8);
	for (size_t i = 0; i < nrec; i++) {
		unsigned char *r = b + 40 + 24 * i;

		q = i;
		memcpy(r, &q, 8);
		u = (uint32_t)(i % 4096);
		memcpy(r + 8, &u, 4);
	}
	*size = n;
	return b;
}

/*
 * In a child, as nobody: a fake process that takes requests off its ring
 * and never answers them, and a client of the same uid that keeps pinging
 * it, one ping every 2 ms (under the rate limit), reading the answers
 * (-EBUSY at once, -ETIMEDOUT after the daemon's request timeout): the
 * uid's 64 requests in flight, the most it may have, are kept at 64 for
 * as long as the parent needs, however slow the machine.  Writes one byte
 * to ready at the first -EBUSY, and goes on until EOF on go.  Exit 0 when
 * it got that far.
 */
static int pending_flood_child(int ready, int go, pid_t parent)
{
	struct pollfd pg = { .fd = go, .events = POLLIN };
	struct fl_shm_header *h;
	struct fake f;
	char msg[64], buf[512], c = 1;
	bool full = false;
	uint64_t i = 0;
	int fd, q;

	if (setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY))
		return 1;
	die_with(parent);
	if (fake_region(&f, 16, ALL_SEALS, getpid()) || (fd = fake_hello(&f)) < 0)
		return 2;
	h = f.region;
	q = conn();
	if (q < 0)
		return 3;
	while (poll(&pg, 1, 2) == 0) {
		struct fl_msg m;
		ssize_t n;

		/* Taken off the ring, never answered: the ring never fills. */
		atomic_store(&h->request_tail, atomic_load(&h->request_head));
		if (xsend(q, msg, mk_request(msg, (uint32_t)getpid(), FL_REQ_PING, i++), NULL, 0,
			  0))
			return 4;
		while ((n = recv(q, buf, sizeof(buf), MSG_DONTWAIT)) > 0)
			if (!full && fl_proto_decode(buf, (size_t)n, 0, &m, NULL) == 0 &&
			    m.type == FL_MSG_ERROR && m.error.err == -EBUSY) {
				full = true;
				(void)!write(ready, &c, 1);
			}
	}
	close(q);
	close(fd);
	return full ? 0 : 5;
}

/*
 * In a child, as nobody: opens connections until the daemon closes them at
 * once (up to 5,000), writes how many stayed to ready, and waits for EOF
 * on go.
 */
static int conns_child(int ready, int go, pid_t parent)
{
	struct rlimit rl = { 8192, 8192 };
	char msg[64];
	int n = 0;
	char c;

	setrlimit(RLIMIT_NOFILE, &rl);
	if (setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY))
		return 1;
	die_with(parent);
	mk_query(msg, FL_QUERY_PS, (uint32_t)getpid(), 0);
	for (int i = 0; i < 5000; i++) {
		int fd = conn();
		char *text = NULL;
		int err;

		if (fd < 0)
			break;
		/*
		 * A query tells a connection kept (an answer: -ESRCH, no such
		 * process of ours) from one refused (closed at accept).
		 */
		err = xsend(fd, msg, sizeof(struct fl_msg_query), NULL, 0, 0);
		if (!err)
			err = read_reply(fd, &text, WAIT_MS);
		free(text);
		if (err != 0 && err != -ESRCH) {
			close(fd);
			break;
		}
		n++;
	}
	(void)!write(ready, &n, sizeof(n));
	(void)!read(go, &c, 1);
	return 0;
}

/* In a child, as nobody: n fake processes that register and exit. */
static int exits_child(int n, pid_t parent)
{
	int ok_n = 0;

	if (setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY))
		return 1;
	die_with(parent);
	for (int i = 0; i < n; i++) {
		pid_t pid = fork();
		int status;

		if (pid == 0) {
			struct fake f;

			_exit(fake_region(&f, 16, ALL_SEALS, getpid()) || fake_hello(&f) < 0);
		}
		if (pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
		    WEXITSTATUS(status) == 0)
			ok_n++;
	}
	return ok_n == n ? 0 : 2;
}

/*
 * In a child: a fake process sends modules with 16 MiB stack maps, up to
 * 24 of them (384 MiB).  Exit 0 when the daemon dropped it before its own
 * memory grew by 1 GiB; stdout: detail.
 */
static int big_sections_child(long rss0)
{
	unsigned char fm[256];
	size_t fm_size = mk_faultmap(fm, FAKE_CODE, 1), sm_size, total;
	size_t nrec = (16u << 20) / 24;
	unsigned char *sm = mk_big_stackmap(nrec, &sm_size), *all;
	struct fake f;
	struct fl_shm_site *t;
	char msg[512];
	uint64_t fn = FAKE_CODE;
	long peak = rss0;
	int fd, k, err;

	total = fm_size + sm_size + 8;
	all = malloc(total);
	if (!sm || !all || fake_region(&f, 64, ALL_SEALS, getpid())) {
		printf("cannot build the sections");
		return 1;
	}
	memcpy(all, fm, fm_size);
	memcpy(all + fm_size, sm, sm_size);
	memcpy(all + fm_size + sm_size, &fn, 8);
	t = (struct fl_shm_site *)((char *)f.region + f.l.sites_offset);
	for (uint32_t i = 0; i < 64; i++)
		t[i] = (struct fl_shm_site){ .faulting_pc = FAKE_CODE, .handler_pc = FAKE_CODE + 8,
					     .module = i + 1, .kind = 1 };
	fd = fake_hello(&f);
	if (fd < 0) {
		printf("HELLO refused");
		return 1;
	}
	for (k = 0; k < 24; k++) {
		struct fl_msg_module_add *a = (struct fl_msg_module_add *)msg;
		size_t len = mk_module_add(msg, (uint32_t)k + 1, (uint32_t)k, 1, (uint32_t)fm_size);
		int sfd = sections_fd(all, total, F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW);
		struct fl_msg_sync y;
		bool kept = false;
		ssize_t n = 0;
		long rss;

		a->stackmap_size = (uint32_t)sm_size;
		a->sm_functions = 1;
		err = sfd < 0 ? -EIO : xsend(fd, msg, len, &sfd, 1, 0);
		if (sfd >= 0)
			close(sfd);
		if (err)
			break;
		/*
		 * SYNC: its REPLY says the daemon has handled the module and
		 * kept us; an ERROR and the end of the connection, that it
		 * dropped us.
		 */
		memset(&y, 0, sizeof(y));
		fl_proto_header(&y, FL_MSG_SYNC, sizeof(y), 100 + (uint32_t)k);
		if (xsend(fd, &y, sizeof(y), NULL, 0, 0))
			break;
		while (!kept) {
			char buf[1024];
			struct fl_msg m;

			n = xrecv(fd, buf, sizeof(buf), WAIT_MS);
			if (n <= 0 || fl_proto_decode(buf, (size_t)n, 0, &m, NULL) != 0)
				break;
			if (m.type == FL_MSG_ERROR)
				printf("ERROR %d after %d modules (%.*s); ", m.error.err, k + 1,
				       (int)m.error.len, m.text);
			kept = m.type == FL_MSG_REPLY && m.seq == 100 + (uint32_t)k;
		}
		if (n == -ETIMEDOUT) {
			printf("no answer to SYNC after %d modules in %d s", k + 1, WAIT_S);
			return 1;
		}
		if (!kept)
			break;
		rss = daemon_rss_kib();
		if (rss > peak)
			peak = rss;
	}
	printf("daemon RSS %ld MiB -> peak %ld MiB", rss0 / 1024, peak / 1024);
	if (k == 24) {
		printf("; all 24 modules (384 MiB of stack maps) taken");
		return 1;
	}
	printf("; dropped after %d modules", k + 1);
	return peak - rss0 < (1l << 20) ? 0 : 1;
}

static void group_security(void)
{
	struct proc a, n;
	pid_t apid, npid;
	json_object *doc;
	char msg[FL_PROTO_MAX_MESSAGE + 8192];
	int err, before, after = -1;

	if (daemon_start())
		return;
	apid = start_waiter(&a, 0, 3, 4, 5, "security");
	npid = start_waiter(&n, NOBODY, 6, 7, 8, "security (process of nobody)");
	if (apid < 0 || npid < 0)
		return;
	expect_counts("security: root's process registered", apid, false, 3, 4, 5);
	expect_counts("security: nobody's process registered", npid, false, 6, 7, 8);

	/* What nobody sees. */
	for (uint32_t what = FL_QUERY_STATS; what <= FL_QUERY_STACKMAPS; what++) {
		static const char *const names[] = { "", "stats", "ps", "sites", "stackmaps" };
		char name[128];
		int seen_a = -1, seen_n = -1;

		err = query(NOBODY, what, 0, UINT64_MAX, &doc);
		if (!err) {
			seen_a = ps_entries(doc, apid);
			seen_n = ps_entries(doc, npid);
			json_object_put(doc);
		}
		snprintf(name, sizeof(name), "nobody: %s lists its own process, not root's",
			 names[what]);
		check(!err && seen_a == 0 && seen_n == 1, name, "err %d, root's listed %d, own %d",
		      err, seen_a, seen_n);
		err = query(NOBODY, what, (uint32_t)apid, UINT64_MAX, &doc);
		snprintf(name, sizeof(name), "nobody: %s of root's process: -ESRCH", names[what]);
		check(err == -ESRCH, name, "err %d: %s", err,
		      err ? "" : json_object_to_json_string(doc));
		if (!err)
			json_object_put(doc);
	}
	err = query(0, FL_QUERY_STATS, 0, 0, &doc);
	if (!err) {
		check(ps_entries(doc, apid) == 1 && ps_entries(doc, npid) == 1,
		      "root sees both processes", "root's %d, nobody's %d",
		      ps_entries(doc, apid), ps_entries(doc, npid));
		json_object_put(doc);
	}
	{
		uint64_t v;

		err = request(NOBODY, (uint32_t)apid, FL_REQ_HEAL_THRESHOLD, 9, &v);
		check(err == -ESRCH, "nobody: request to root's process: -ESRCH", "err %d", err);
	}

	/*
	 * A client that has just left may still hold a descriptor here: at
	 * the end the daemon may have fewer than counted now, never more.
	 */
	sleep_ms(200);
	before = daemon_nfds();

	/* Registration. */
	forged_hello("forged HELLO (another pid, region of that pid)", getpid() + 1,
		     getpid() + 1, 0, ALL_SEALS, -EPERM);
	forged_hello("forged HELLO (pid 1)", 1, 1, 0, ALL_SEALS, -EPERM);
	if (query(0, FL_QUERY_PS, (uint32_t)getpid() + 1, 0, &doc) == 0) {
		fail("forged HELLO not registered", "the claimed pid is listed");
		json_object_put(doc);
	} else {
		ok("forged HELLO: the claimed pid is not registered");
	}
	forged_hello("HELLO: region without seals", getpid(), getpid(), 0, 0, -EPERM);
	forged_hello("HELLO: region sealed against shrink and grow, not F_SEAL_SEAL", getpid(),
		     getpid(), 0, F_SEAL_SHRINK | F_SEAL_GROW, -EPERM);
	forged_hello("HELLO: region sealed against shrink only", getpid(), getpid(), 0,
		     F_SEAL_SHRINK | F_SEAL_SEAL, -EPERM);
	forged_hello("HELLO: region_size larger than the memfd", getpid(), getpid(), 4096,
		     ALL_SEALS, -EINVAL);
	forged_hello("HELLO: region_size smaller than the memfd", getpid(), getpid(),
		     (uint64_t)-64, ALL_SEALS, -EINVAL);
	forged_hello("HELLO: region header of another pid", getpid(), getpid() + 1, 0, ALL_SEALS,
		     -EINVAL);
	{
		struct fake f;

		if (fake_region(&f, 16, 0, getpid()) == 0) {
			((struct fl_shm_header *)f.region)->magic = 0xdeadbeef;
			fcntl(f.fd, F_ADD_SEALS, ALL_SEALS);
			bad_message("HELLO: region header with a bad magic", msg,
				    mk_hello(msg, getpid(), f.l.size), &f.fd, 1, -EINVAL);
			((struct fl_shm_header *)f.region)->magic = FL_SHM_MAGIC;
			((struct fl_shm_header *)f.region)->counters_offset = (uint32_t)f.l.size - 8;
			bad_message("HELLO: region header with parts overlapping", msg,
				    mk_hello(msg, getpid(), f.l.size), &f.fd, 1, -EINVAL);
			munmap(f.region, f.l.size);
			close(f.fd);
		}
	}
	{
		char path[PATH_MAX];
		int pf;

		snprintf(path, sizeof(path), "%s/plain-file", dir);
		pf = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (pf >= 0 && ftruncate(pf, 65536) == 0) {
			bad_message("HELLO: a plain file instead of a memfd", msg,
				    mk_hello(msg, getpid(), 65536), &pf, 1, 1);
			close(pf);
			unlink(path);
		}
		pf = open("/dev/null", O_RDWR | O_CLOEXEC);
		bad_message("HELLO: /dev/null instead of a memfd", msg,
			    mk_hello(msg, getpid(), 65536), &pf, 1, 1);
		close(pf);
		bad_message("HELLO without a descriptor", msg, mk_hello(msg, getpid(), 65536), NULL,
			    0, 1);
	}

	/* SYNC is a registered process's: before HELLO, or flooded, it drops the client. */
	{
		struct fl_msg_sync y;
		struct fake f;
		int fd, sent = 0;

		memset(&y, 0, sizeof(y));
		fl_proto_header(&y, FL_MSG_SYNC, sizeof(y), 3);
		bad_message("SYNC before HELLO", &y, sizeof(y), NULL, 0, 1);
		if (fake_region(&f, 16, ALL_SEALS, getpid()) == 0 && (fd = fake_hello(&f)) >= 0) {
			for (int i = 0; i < 3000; i++) {
				if (xsend(fd, &y, sizeof(y), NULL, 0, 0))
					break;
				sent++;
			}
			check(dropped(fd, NULL), "SYNC flood",
			      "a registered client sending %d SYNCs at once is not dropped", sent);
			close(fd);
			munmap(f.region, f.l.size);
			close(f.fd);
		} else {
			fail("SYNC flood", "cannot register a fake process");
		}
		still_serving("a SYNC flood");
	}

	/* Malformed messages. */
	for (size_t i = 0; i < 100; i++)
		msg[i] = (char)(i * 131 + 7);
	bad_message("random bytes", msg, 100, NULL, 0, 1);
	bad_message("a 3-byte message", msg, 3, NULL, 0, 1);
	mk_query(msg, FL_QUERY_STATS, 0, 0);
	bad_message("truncated QUERY (20 of 32 bytes)", msg, 20, NULL, 0, 1);
	mk_hello(msg, getpid(), 4096);
	bad_message("truncated HELLO", msg, 30, NULL, 0, 1);
	mk_query(msg, FL_QUERY_STATS, 0, 0);
	((struct fl_msg_header *)msg)->version = 2;
	bad_message("wrong version (2): -EPROTONOSUPPORT", msg, sizeof(struct fl_msg_query), NULL,
		    0, -EPROTONOSUPPORT);
	mk_query(msg, FL_QUERY_STATS, 0, 0);
	((struct fl_msg_header *)msg)->magic = 0x12345678;
	bad_message("wrong magic", msg, sizeof(struct fl_msg_query), NULL, 0, 1);
	mk_query(msg, 9, 0, 0);
	bad_message("QUERY of an unknown kind", msg, sizeof(struct fl_msg_query), NULL, 0, 1);
	mk_request(msg, (uint32_t)apid, 77, 0);
	bad_message("REQUEST of an unknown kind", msg, sizeof(struct fl_msg_request), NULL, 0, 1);
	mk_query(msg, FL_QUERY_STATS, 0, 0);
	((struct fl_msg_header *)msg)->type = FL_MSG_WELCOME;
	bad_message("a daemon's message type from a client", msg, sizeof(struct fl_msg_query),
		    NULL, 0, 1);
	memset(msg, 'x', sizeof(msg));
	fl_proto_header(msg, FL_MSG_QUERY, 70000, 1);
	bad_message("oversized message (70,000 bytes)", msg, 70000, NULL, 0, 1);
	fl_proto_header(msg, FL_MSG_QUERY, FL_PROTO_MAX_MESSAGE, 1);
	bad_message("a message of exactly 65,536 bytes (bad QUERY size)", msg,
		    FL_PROTO_MAX_MESSAGE, NULL, 0, 1);
	{
		struct fl_msg_module_remove r;

		memset(&r, 0, sizeof(r));
		fl_proto_header(&r, FL_MSG_MODULE_REMOVE, sizeof(r), 3);
		r.module = 1;
		bad_message("MODULE_REMOVE before HELLO", &r, sizeof(r), NULL, 0, 1);
	}
	still_serving("malformed messages");

	/* A registered fake process: MODULE_ADD and shared region abuse. */
	for (int mc = MOD_VALID; mc <= MOD_COMPLETIONS; mc++)
		fake_case((enum mod_case)mc);
	still_serving("MODULE_ADD and region abuse");

	/* fd floods: many connections, each sending messages with 4 fds. */
	{
		int fds[4], conns[100], sent = 0, gone = 0;
		double end;

		for (int i = 0; i < 4; i++)
			fds[i] = memfd_create("e2e-flood", MFD_CLOEXEC);
		mk_query(msg, FL_QUERY_STATS, 0, 0);
		for (int c = 0; c < 100; c++) {
			conns[c] = conn();
			for (int k = 0; conns[c] >= 0 && k < 20; k++) {
				if (xsend(conns[c], msg, sizeof(struct fl_msg_query), fds, 4,
					  MSG_DONTWAIT))
					break;
				sent++;
			}
		}
		/* One deadline for the 100: a failing run does not wait 100 times. */
		end = now() + WAIT_S;
		for (int c = 0; c < 100; c++) {
			if (conns[c] >= 0) {
				gone += dropped_by(conns[c], NULL, end);
				close(conns[c]);
			}
		}
		for (int i = 0; i < 4; i++)
			close(fds[i]);
		check(gone == 100, "fd flood: 100 clients sending messages with 4 fds each dropped",
		      "%d of 100 dropped (%d messages sent)", gone, sent);
		/* A registered process sending 4 fds with its messages. */
		{
			struct fake f;
			int fd;

			if (fake_region(&f, 16, ALL_SEALS, getpid()) == 0 &&
			    (fd = fake_hello(&f)) >= 0) {
				int four[4] = { f.fd, f.fd, f.fd, f.fd };
				int k = 0;

				mk_module_add(msg, 1, 2, 0, 0);
				while (k < 50 && xsend(fd, msg, sizeof(struct fl_msg_module_add) + 4,
						      four, 4, MSG_DONTWAIT) == 0)
					k++;
				check(dropped(fd, NULL), "fd flood from a registered process: dropped",
				      "not dropped after %d messages", k);
				close(fd);
				munmap(f.region, f.l.size);
				close(f.fd);
			}
		}
		still_serving("fd floods");
	}

	/* Sections: the bytes a process may make the daemon hold are bounded. */
	{
		long rss0 = daemon_rss_kib();
		int pfd[2], status;
		char detail[512] = { 0 };
		ssize_t got = 0, r;
		pid_t pid;

		if (pipe(pfd) == 0) {
			fflush(stdout);
			pid = fork();
			if (pid == 0) {
				close(pfd[0]);
				dup2(pfd[1], 1);
				setvbuf(stdout, NULL, _IONBF, 0);
				_exit(big_sections_child(rss0));
			}
			close(pfd[1]);
			while ((r = read(pfd[0], detail + got, sizeof(detail) - 1 - (size_t)got)) > 0)
				got += r;
			close(pfd[0]);
			waitpid(pid, &status, 0);
			check(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			      "16 MiB stack maps, module after module: the process is dropped at its limit",
			      "%s", detail);
			printf("# big stack maps: %s\n", detail);
		}
		still_serving("big stack maps");
	}
	/* Sites: a module of more sites than a process may have. */
	{
		struct fake f;
		int fd, e = 0;

		if (fake_region(&f, 3u << 20, ALL_SEALS, getpid()) == 0 && (fd = fake_hello(&f)) >= 0) {
			mk_module_add(msg, 1, 0, (3u << 20) - 1, 0);
			xsend(fd, msg, sizeof(struct fl_msg_module_add) + 4, NULL, 0, 0);
			check(dropped(fd, &e) && e == -ENOSPC,
			      "a module of 3M sites (over the 2M a process may have): -ENOSPC, dropped",
			      "error %d", e);
			close(fd);
			munmap(f.region, f.l.size);
			close(f.fd);
		} else {
			fail("a module of 3M sites", "cannot register the fake process");
		}
	}

	/*
	 * A large answer: a process with 30,000 sites (about 5 MB of stats
	 * --pid); stats about every process lists 4,096 of them.
	 */
	{
		struct fake f;
		int fd;

		if (fake_region(&f, 32768, ALL_SEALS, getpid()) == 0) {
			struct fl_shm_site *t =
				(struct fl_shm_site *)((char *)f.region + f.l.sites_offset);
			double t0;
			size_t bytes = 0;
			char *text = NULL;

			for (uint32_t i = 0; i < 30000; i++)
				t[i] = (struct fl_shm_site){ .faulting_pc = FAKE_CODE + i,
							     .handler_pc = FAKE_CODE + i,
							     .module = 1, .kind = 1 };
			fd = fake_hello(&f);
			if (fd >= 0) {
				mk_module_add(msg, 1, 0, 30000, 0);
				((struct fl_msg_module_add *)msg)->code_size = 1 << 20;
				xsend(fd, msg, sizeof(struct fl_msg_module_add) + 4, NULL, 0, 0);
				sleep_ms(300);
				t0 = now();
				err = exchange(msg, mk_query(msg, FL_QUERY_STATS, (uint32_t)getpid(), 0),
					       &text);
				bytes = text ? strlen(text) : 0;
				check(!err && bytes > 1000000,
				      "stats of a process with 30,000 sites: the whole answer arrives",
				      "err %d (%s), %zu bytes", err, strerror(-err), bytes);
				printf("# stats of 30,000 sites: %zu bytes in %.0f ms\n", bytes,
				       (now() - t0) * 1000);
				free(text);
				text = NULL;
				err = exchange(msg, mk_query(msg, FL_QUERY_STATS, 0, 0), &text);
				{
					json_object *all = text ? json_tokener_parse(text) : NULL;
					json_object *p = NULL, *procs = get(all, "processes");
					size_t listed = 0;

					for (size_t i = 0; procs && i < json_object_array_length(procs); i++)
						if (json_object_get_int(get(json_object_array_get_idx(procs, i),
									    "pid")) == getpid())
							p = json_object_array_get_idx(procs, i);
					if (get(p, "sites"))
						listed = json_object_array_length(get(p, "sites"));
					check(!err && listed == 4096 &&
					      json_object_get_int64(get(p, "sites_unlisted")) == 30000 - 4096 &&
					      json_object_get_int64(get(p, "num_sites")) == 30000,
					      "stats about every process: 4,096 of its 30,000 sites listed, the "
					      "others counted", "err %d, %zu listed", err, listed);
					json_object_put(all);
				}
				free(text);
				close(fd);
			}
			munmap(f.region, f.l.size);
			close(f.fd);
		}
		still_serving("a large answer");
	}

	/* One user's connections do not keep the others out. */
	{
		int rp[2], gp[2], held = -1, status;
		uint64_t v = 0;
		pid_t pid, parent = getpid();

		if (pipe(rp) == 0 && pipe(gp) == 0) {
			fflush(stdout);
			pid = fork();
			if (pid == 0) {
				close(rp[0]);
				close(gp[1]);
				_exit(conns_child(rp[1], gp[0], parent));
			}
			close(rp[1]);
			close(gp[0]);
			if (read(rp[0], &held, sizeof(held)) == sizeof(held)) {
				check(held == 2048 - 1, "nobody holds at most half of the 4,096 clients",
				      "%d connections stayed open (plus its registered process)",
				      held);
				err = request(0, (uint32_t)apid, FL_REQ_PING, 99, &v);
				check(!err && v == 99, "with those open, root is served",
				      "err %d", err);
			}
			close(gp[1]);
			close(rp[0]);
			waitpid(pid, &status, 0);
		}
		still_serving("a user holding half of the clients");
	}

	/* One user's exits do not push out another's exited processes. */
	{
		const char *argv[] = { prog, "run", "2", "2", "2", NULL };
		pid_t bpid = run_prog(argv, "pid", "exited root process"), pid, parent = getpid();
		int status, nob = -1;
		double end;

		if (bpid > 0)
			expect_counts("root's exited process", bpid, true, 2, 2, 2);
		fflush(stdout);
		pid = fork();
		if (pid == 0)
			_exit(exits_child(300, parent));
		waitpid(pid, &status, 0);
		check(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "nobody: 300 processes registered and exited", "status %d", status);
		end = now() + WAIT_S;
		do {
			nob = 0;
			if (query(0, FL_QUERY_PS, 0, 0, &doc) == 0) {
				for (size_t i = 0; i < nprocs(doc); i++) {
					json_object *p = proc_at(doc, i);

					nob += json_object_get_int(get(p, "uid")) == NOBODY &&
					       json_object_get_boolean(get(p, "exited"));
				}
				json_object_put(doc);
			}
			if (nob == 256)
				break;
			sleep_ms(100);
		} while (now() < end);
		check(nob == 256, "nobody's exited processes: 256 kept", "%d kept", nob);
		if (bpid > 0)
			expect_counts("root's exited process still kept after nobody's 300 exits", bpid,
				      true, 2, 2, 2);
	}

	/* One user's requests in flight do not keep the others' out. */
	{
		int rp[2], gp[2], status;
		uint64_t v = 0;
		char c;
		pid_t pid, parent = getpid();
		struct pollfd pr = { .events = POLLIN };
		double end;

		if (pipe(rp) == 0 && pipe(gp) == 0) {
			fflush(stdout);
			pid = fork();
			if (pid == 0) {
				close(rp[0]);
				close(gp[1]);
				_exit(pending_flood_child(rp[1], gp[0], parent));
			}
			close(rp[1]);
			close(gp[0]);
			pr.fd = rp[0];
			if (poll(&pr, 1, WAIT_MS) == 1 && read(rp[0], &c, 1) == 1) {
				err = request(0, (uint32_t)apid, FL_REQ_PING, 31337, &v);
				check(!err && v == 31337,
				      "64 requests in flight from nobody (to a process that never answers): root's ping still answered",
				      "err %d (%s)", err, strerror(-err));
				/*
				 * A slot freed by the daemon's request timeout is
				 * taken again within 2 ms: a request that got in
				 * there is answered, and asked again.
				 */
				end = now() + WAIT_S;
				do
					err = request(NOBODY, (uint32_t)npid, FL_REQ_PING, 4711, &v);
				while (err != -EBUSY && now() < end);
				check(err == -EBUSY,
				      "nobody's next request: -EBUSY (64 of one uid in flight)",
				      "err %d", err);
			}
			close(gp[1]);
			close(rp[0]);
			waitpid(pid, &status, 0);
			check(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			      "nobody's requests kept in flight until refused with -EBUSY",
			      "status %d", status);
		}
		still_serving("64 requests in flight");
	}

	/* A client that never reads its replies. */
	{
		int fd = conn(), k = 0, e = 0;
		double end = now() + WAIT_S;

		mk_query(msg, FL_QUERY_STATS, 0, 0);
		while (fd >= 0 && now() < end) {
			e = xsend(fd, msg, sizeof(struct fl_msg_query), NULL, 0, MSG_DONTWAIT);
			if (e && e != -EAGAIN)
				break;
			k += !e;
			/* Under the rate limit (1,000 a second): dropped for not reading. */
			sleep_ms(2);
		}
		check(e == -EPIPE || e == -ECONNRESET,
		      "a client that never reads its replies is dropped",
		      "after %d queries: %s", k, strerror(-e));
		if (fd >= 0)
			close(fd);
		check(log_wait("not reading", NULL), "the daemon logged the slow reader",
		      "no \"not reading\" line in %s", dlog);
		still_serving("a client that never reads");
	}

	/* The others kept their data. */
	expect_counts("root's process keeps its data after all of this", apid, false, 3, 4, 5);
	expect_counts("nobody's process keeps its data after all of this", npid, false, 6, 7, 8);
	if (waiter_fail(&a, 1, 1, 1, "security"))
		expect_counts("root's process still counted live", apid, false, 4, 5, 6);
	{
		uint64_t v = 0;

		err = request(0, (uint32_t)apid, FL_REQ_PING, 4242, &v);
		check(!err && v == 4242, "root's process still answers requests", "err %d", err);
	}

	/* No descriptor leaked (the fake processes and their memfds are gone). */
	{
		double end = now() + WAIT_S;

		while ((after = daemon_nfds()) > before && now() < end)
			sleep_ms(50);
	}
	check(after <= before, "the daemon's descriptors do not grow",
	      "%d open before the attacks, %d after", before, after);

	proc_end(&a);
	proc_end(&n);
	check(daemon_stop() == 0, "SIGTERM: faultlined exits 0", "bad exit");
}

/* ------------------------------------------------------------------------
 * Group: load
 */

#define LOAD_MAX 1000
#define LOAD_KEEP 256	/* the daemon's max_exited */

/*
 * How many processes: 1,000, or E2E_LOAD_N (make vmtest: QEMU's TCG runs
 * 1,000 processes and the daemon too slowly).  At least 2 * LOAD_KEEP, so
 * that the first release leaves LOAD_KEEP live and more than LOAD_KEEP
 * exited.
 */
static int load_count(void)
{
	const char *env = getenv("E2E_LOAD_N");
	int n = env ? atoi(env) : LOAD_MAX;

	if (n < 2 * LOAD_KEEP || n > LOAD_MAX) {
		printf("# E2E_LOAD_N=%s: not from %d to %d: %d processes\n", env, 2 * LOAD_KEEP,
		       LOAD_MAX, LOAD_MAX);
		n = LOAD_MAX;
	}
	return n;
}

struct lchild {
	pid_t pid;
	int loads, stores;
};

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

/* ps: counts of live and exited entries of pids in set (sorted). */
static int load_ps(const pid_t *set, size_t n, int *live, int *exited, int *outside)
{
	json_object *doc;
	int err = query(0, FL_QUERY_PS, 0, 0, &doc);

	*live = *exited = *outside = 0;
	if (err)
		return err;
	for (size_t i = 0; i < nprocs(doc); i++) {
		json_object *p = proc_at(doc, i);
		pid_t pid = json_object_get_int(get(p, "pid"));

		if (!bsearch(&pid, set, n, sizeof(*set), cmp_pid))
			*outside += 1;
		else if (json_object_get_boolean(get(p, "exited")))
			*exited += 1;
		else
			*live += 1;
	}
	json_object_put(doc);
	return 0;
}

static void group_load(void)
{
	static struct lchild kids[LOAD_MAX];
	static pid_t all[LOAD_MAX], last[LOAD_KEEP];
	const int n = load_count();
	struct proc p;
	char line[256], n_s[16], k_s[16], name[128];
	const char *argv[] = { loadprog, n_s, k_s, NULL };
	int reported = 0, live, exited, outside, err, base;
	double t0 = now(), t;
	json_object *doc;

	if (daemon_start())
		return;
	base = daemon_nfds();
	snprintf(n_s, sizeof(n_s), "%d", n);
	snprintf(k_s, sizeof(k_s), "%d", LOAD_KEEP);
	if (proc_spawn(&p, 0, false, argv)) {
		fail("load", "cannot start %s", loadprog);
		return;
	}
	while (proc_line(&p, line, sizeof(line), WAIT_MS) == 0) {
		int i, pid, l, s;

		if (!strcmp(line, "ready"))
			break;
		if (sscanf(line, "child %d %d %d %d", &i, &pid, &l, &s) == 4 && i >= 0 &&
		    i < n) {
			kids[i] = (struct lchild){ pid, l, s };
			reported++;
		} else {
			fail("load", "%s", line);
		}
	}
	snprintf(name, sizeof(name), "%d processes started (fl_init, checks failed)", n);
	check(reported == n, name, "%d reported: %s", reported, line);
	if (reported != n) {
		proc_end(&p);
		daemon_kill9();
		return;
	}
	t = now();
	for (int i = 0; i < n; i++)
		all[i] = kids[i].pid;
	qsort(all, (size_t)n, sizeof(*all), cmp_pid);
	for (int i = 0; i < LOAD_KEEP; i++)
		last[i] = kids[i].pid;
	qsort(last, LOAD_KEEP, sizeof(*last), cmp_pid);
	do {
		err = load_ps(all, (size_t)n, &live, &exited, &outside);
		if (!err && live == n)
			break;
		sleep_ms(100);
	} while (now() - t < WAIT_S);
	snprintf(name, sizeof(name), "ps lists all %d live processes", n);
	check(!err && live == n && exited == 0, name,
	      "err %d: %d live, %d exited (started in %.1f s)", err, live, exited, t - t0);

	/* stats: every process with its own exact counts. */
	{
		double q0 = now();
		int bad = 0, missing = 0;
		char detail[512] = "";

		err = query(0, FL_QUERY_STATS, 0, 0, &doc);
		t = now() - q0;
		for (int i = 0; !err && i < n; i++) {
			struct pstat st;

			pstat_of(doc, kids[i].pid, &st);
			if (st.entries != 1) {
				missing++;
			} else if (st.exited != 0 || st.faults[S_LOAD] != (uint64_t)kids[i].loads ||
				   st.faults[S_STORE] != (uint64_t)kids[i].stores ||
				   st.faults[S_RMW] != 0) {
				if (!bad++)
					pstat_str(&st, detail, sizeof(detail));
			}
		}
		if (!err)
			json_object_put(doc);
		snprintf(name, sizeof(name), "stats with %d live processes: every count exact", n);
		check(!err && !bad && !missing, name, "err %d, %d missing, %d wrong (%s)", err,
		      missing, bad, detail);
		printf("# stats query with %d live processes: %.0f ms\n", n, t * 1000);
	}
	{
		int nfds = daemon_nfds();

		check(nfds - base <= n + 8, "daemon descriptors: one per registered process",
		      "%d before, %d with %d processes", base, nfds, n);
	}

	/*
	 * Release all but the first 256 (the first to register), then those:
	 * the 256 kept are the last to exit, not the last to register.
	 */
	proc_say(&p, "release 1\n");
	if (proc_line(&p, line, sizeof(line), WAIT_MS) || strcmp(line, "done 1"))
		fail("load: release 1", "%s", line);
	t = now();
	do {
		err = load_ps(all, (size_t)n, &live, &exited, &outside);
		if (!err && live == LOAD_KEEP && exited == LOAD_KEEP)
			break;
		sleep_ms(100);
	} while (now() - t < WAIT_S);
	snprintf(name, sizeof(name), "%d exit: 256 live, exactly 256 exited kept", n - LOAD_KEEP);
	check(!err && live == LOAD_KEEP && exited == LOAD_KEEP, name,
	      "err %d: %d live, %d exited", err, live, exited);
	proc_say(&p, "release 2\n");
	if (proc_line(&p, line, sizeof(line), WAIT_MS) || strcmp(line, "done 2"))
		fail("load: release 2", "%s", line);
	t = now();
	do {
		err = load_ps(all, (size_t)n, &live, &exited, &outside);
		if (!err && live == 0)
			break;
		sleep_ms(100);
	} while (now() - t < WAIT_S);
	snprintf(name, sizeof(name), "all %d exited: exactly 256 kept (max_exited)", n);
	check(!err && live == 0 && exited == LOAD_KEEP, name,
	      "err %d: %d live, %d exited", err, live, exited);
	/* The 256 kept are the last to exit, with their final counts. */
	err = query(0, FL_QUERY_STATS, 0, 0, &doc);
	if (!err) {
		int kept_last = 0, bad = 0;

		for (int i = 0; i < LOAD_KEEP; i++) {
			struct pstat st;

			pstat_of(doc, kids[i].pid, &st);
			kept_last += st.entries == 1 && st.exited == 1;
			bad += st.entries == 1 && (st.faults[S_LOAD] != (uint64_t)kids[i].loads ||
						   st.faults[S_STORE] != (uint64_t)kids[i].stores);
		}
		json_object_put(doc);
		check(kept_last == LOAD_KEEP && !bad,
		      "the oldest exited were dropped first: the 256 kept are the last to exit, with final counts",
		      "%d of the last 256 kept, %d with wrong counts", kept_last, bad);
	}
	proc_end(&p);
	/* The same 256 after kill -9 and a restart (state.json). */
	state_lists_exited("load: state.json before kill -9", last, LOAD_KEEP);
	daemon_kill9();
	if (daemon_start())
		return;
	err = load_ps(last, LOAD_KEEP, &live, &exited, &outside);
	check(!err && exited == LOAD_KEEP && outside == 0 && live == 0,
	      "after kill -9 and restart: the same 256 exited processes",
	      "err %d: %d of them exited, %d others", err, exited, outside);
	/* As many as the daemon had before the first process, once ps's client is gone. */
	{
		double end = now() + WAIT_S;
		int nfds;

		while ((nfds = daemon_nfds()) > base && now() < end)
			sleep_ms(50);
		check(nfds <= base, "daemon descriptors back to where they were",
		      "%d before the processes, %d after the restart", base, nfds);
	}
	printf("# load: %.1f s\n", now() - t0);
	check(daemon_stop() == 0, "SIGTERM: faultlined exits 0", "bad exit");
}

/* ------------------------------------------------------------------------ */

/* ------------------------------------------------------------------------
 * Group: kernel (the daemon with its eBPF program)
 */

/* check(), saying what passed too. */
#define kcheck(cond, name, ...) do {				\
		if (cond)					\
			ok(__VA_ARGS__);			\
		else						\
			fail(name, __VA_ARGS__);		\
	} while (0)

/* The last entry of pid in a stats document, or NULL. */
static json_object *proc_of(json_object *doc, pid_t pid)
{
	json_object *found = NULL;

	for (size_t i = 0; i < nprocs(doc); i++)
		if (json_object_get_int(get(proc_at(doc, i), "pid")) == pid)
			found = proc_at(doc, i);
	return found;
}

/*
 * Waits (up to WAIT_S) until pid is listed, exited or not as given, with
 * every site's "kernel_faults" equal to its "faults", a complete kernel
 * view, as many fault signals at sites as dispatched faults, and as many
 * implicit-check page faults: exact equality of the kernel's and the
 * process's counts.  Returns the process's total faults, or -1.
 */
static int64_t expect_kernel_equal(const char *name, pid_t pid, bool exited)
{
	double end = now() + WAIT_S;
	char why[512] = "not listed";

	for (;;) {
		json_object *doc, *p, *k, *sites;
		uint64_t total = 0, at_sites = 0;
		bool good = true;

		/* About pid alone: the kernel view in detail. */
		if (query(0, FL_QUERY_STATS, (uint32_t)pid, 0, &doc) != 0) {
			snprintf(why, sizeof(why), "stats query failed");
			goto again;
		}
		p = proc_of(doc, pid);
		k = get(p, "kernel");
		sites = get(p, "sites");
		if (!p || json_object_get_boolean(get(p, "exited")) != exited || !k || !sites) {
			snprintf(why, sizeof(why), "%s", p ? json_object_to_json_string(p) : "not listed");
			good = false;
		}
		for (size_t i = 0; good && i < json_object_array_length(sites); i++) {
			json_object *s = json_object_array_get_idx(sites, i);
			json_object *kf = get(s, "kernel_faults");
			uint64_t f = json_object_get_uint64(get(s, "faults"));

			if (!kf || json_object_get_uint64(kf) != f) {
				snprintf(why, sizeof(why), "site %s: faults %" PRIu64 ", kernel_faults %s",
					 json_object_get_string(get(s, "function")), f,
					 kf ? json_object_get_string(kf) : "missing");
				good = false;
			}
			total += f;
		}
		if (good) {
			json_object *sigs = get(k, "signals");

			for (size_t i = 0; sigs && i < json_object_array_length(sigs); i++) {
				json_object *e = json_object_array_get_idx(sigs, i);

				if (json_object_get_boolean(get(e, "site")))
					at_sites += json_object_get_uint64(get(e, "count"));
			}
			if (!json_object_get_boolean(get(k, "complete")) || at_sites != total ||
			    json_object_get_uint64(get(k, "implicit")) != total) {
				snprintf(why, sizeof(why), "faults %" PRIu64 "; kernel: %s", total,
					 json_object_to_json_string(k));
				good = false;
			}
		}
		json_object_put(doc);
		if (good) {
			ok("%s: pid %d (%s): kernel_faults == faults at every site, %" PRIu64
			   " in all; as many SIGSEGVs and implicit-check page faults", name,
			   (int)pid, exited ? "exited" : "live", total);
			return (int64_t)total;
		}
again:
		if (now() > end)
			break;
		sleep_ms(100);
	}
	fail(name, "pid %d: %s", (int)pid, why);
	return -1;
}

/* The daemon's "bpf_stats" counter key now (-1 when there is none). */
static int64_t bpf_stat(const char *key)
{
	json_object *doc;
	int64_t v = -1;

	if (query(0, FL_QUERY_STATS, 0, 0, &doc) == 0) {
		json_object *o = get(get(doc, "bpf_stats"), key);

		if (o)
			v = (int64_t)json_object_get_uint64(o);
		json_object_put(doc);
	}
	return v;
}

/* How many lines of the daemon's log contain needle. */
static int log_count(const char *needle)
{
	FILE *f = fopen(dlog, "r");
	char line[1024];
	int n = 0;

	while (f && fgets(line, sizeof(line), f))
		n += strstr(line, needle) != NULL;
	if (f)
		fclose(f);
	return n;
}

/* A daemon without the program still serves exact stats, as uid. */
static void kernel_without_bpf(const char *name, uid_t uid, const char *why_logged)
{
	const char *argv[] = { prog, "run", "3", "2", "1", NULL };
	struct proc p;
	pid_t pid;
	json_object *doc, *pj;

	if (daemon_start())
		return;
	kcheck(log_count(why_logged) == 1, name, "the daemon says once why it has no eBPF: "
	      "\"%s\" %d times (log %s)", why_logged, log_count(why_logged), dlog);
	kcheck(log_has(dlog, "eBPF off"), name, "the daemon's start line says eBPF off");
	if (proc_spawn(&p, uid, true, argv) != 0) {
		fail(name, "cannot start %s", prog);
		daemon_stop();
		return;
	}
	pid = proc_expect_pid(&p, "pid", name);
	kcheck(proc_end(&p) == 0, name, "the program exits 0");
	if (pid > 0) {
		double end = now() + WAIT_S;
		struct pstat st = { 0 };

		do {
			if (query(uid, FL_QUERY_STATS, 0, 0, &doc) != 0)
				doc = NULL;
			pstat_of(doc, pid, &st);
			if (st.faults[S_LOAD] == 3 && st.faults[S_STORE] == 2 &&
			    st.faults[S_RMW] == 1)
				break;
			json_object_put(doc);
			doc = NULL;
			sleep_ms(50);
		} while (now() < end);
		pj = proc_of(doc, pid);
		kcheck(st.faults[S_LOAD] == 3 && st.faults[S_STORE] == 2 && st.faults[S_RMW] == 1,
		      name, "stats (queried as uid %u) counts 3/2/1", (unsigned)uid);
		kcheck(doc && json_object_get_boolean(get(doc, "bpf")) == 0 && !get(doc, "bpf_stats"),
		      name, "\"bpf\": false and no bpf_stats");
		kcheck(pj && !get(pj, "kernel") && pj && !get(json_object_array_get_idx(
			get(pj, "sites"), 0), "kernel_faults"), name,
		      "no kernel view and no kernel_faults");
		json_object_put(doc);
	}
	kcheck(daemon_stop() == 0, name, "SIGTERM: faultlined exits 0");
}

/*
 * The WELCOME flags a new process (a child) gets for a HELLO with
 * hello_flags, or -1 when it gets no WELCOME.
 */
static int64_t welcome_flags(uint32_t hello_flags)
{
	int p[2];
	int64_t flags = -1;
	pid_t child, parent = getpid();

	if (pipe(p))
		return -1;
	child = fork();
	if (child == 0) {
		struct fake f;
		struct fl_msg_hello h;
		struct fl_msg m;
		char buf[512];
		int fd = conn();
		ssize_t n;

		die_with(parent);
		flags = -1;
		memset(&h, 0, sizeof(h));
		fl_proto_header(&h, FL_MSG_HELLO, sizeof(h), 1);
		h.pid = (uint32_t)getpid();
		h.flags = hello_flags;
		snprintf(h.comm, sizeof(h.comm), "e2e-fake");
		if (fd >= 0 && !fake_region(&f, 16, ALL_SEALS, getpid())) {
			h.region_size = f.l.size;
			if (!xsend(fd, &h, sizeof(h), &f.fd, 1, 0) &&
			    (n = xrecv(fd, buf, sizeof(buf), WAIT_MS)) > 0 &&
			    !fl_proto_decode(buf, (size_t)n, 0, &m, NULL) && m.type == FL_MSG_WELCOME)
				flags = m.welcome.flags;
		}
		(void)!write(p[1], &flags, sizeof(flags));
		_exit(0);
	}
	close(p[1]);
	if (child < 0 || read(p[0], &flags, sizeof(flags)) != sizeof(flags))
		flags = -1;
	close(p[0]);
	if (child > 0)
		waitpid(child, NULL, 0);
	return flags;
}

static void group_kernel(void)
{
	struct utsname un;
	struct proc w;
	pid_t pid;
	char line[256];

	uname(&un);
	printf("# kernel %s\n", un.release);
	if (daemon_start())
		return;
	kcheck(log_has(dlog, "eBPF: faultline.bpf.o attached") && log_has(dlog, "eBPF on"),
	      "loaded", "the daemon (root) attached its eBPF program (log %s)", dlog);

	/* WELCOME's flags go only to a client that says it knows them. */
	{
		int64_t old = welcome_flags(0), knows = welcome_flags(FL_HELLO_SYNC);

		kcheck(old == 0, "welcome flags", "HELLO without FL_HELLO_SYNC (a client from "
		      "before WELCOME had flags, which it reads as reserved): WELCOME flags 0 "
		      "(got %" PRId64 ")", old);
		kcheck(knows == FL_WELCOME_BPF, "welcome flags", "HELLO with FL_HELLO_SYNC: "
		      "WELCOME flags BPF (got %" PRId64 ")", knows);
	}

	/* N faults at several sites, exact, for short-lived processes. */
	{
		static const char *const counts[][3] = {
			{ "7", "11", "13" }, { "1", "0", "0" }, { "0", "0", "0" }, { "250", "3", "40" },
		};

		for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
			const char *argv[] = { prog, "run", counts[i][0], counts[i][1], counts[i][2],
					       NULL };
			char name[64];

			snprintf(name, sizeof(name), "short-lived %s/%s/%s", counts[i][0],
				 counts[i][1], counts[i][2]);
			pid = run_prog(argv, "pid", name);
			if (pid > 0 && expect_counts(name, pid, true, atoi(counts[i][0]),
						     atoi(counts[i][1]), atoi(counts[i][2])))
				expect_kernel_equal(name, pid, true);
		}
	}

	/*
	 * The first answer that shows a process exited already has its kernel
	 * counts (its view is frozen at the next tick, up to 50 ms later).
	 */
	{
		const char *argv[] = { prog, "run", "3", "3", "3", NULL };
		json_object *doc = NULL, *p = NULL;
		double end;

		pid = run_prog(argv, "pid", "just exited");
		end = now() + WAIT_S;
		while (pid > 0 && now() < end) {
			json_object_put(doc);
			doc = NULL;
			p = NULL;
			if (query(0, FL_QUERY_STATS, (uint32_t)pid, 0, &doc) == 0)
				p = proc_of(doc, pid);
			if (p && json_object_get_boolean(get(p, "exited")))
				break;
			sleep_ms(2);
		}
		if (pid > 0) {
			json_object *site = json_object_array_get_idx(get(p, "sites"), 0);

			kcheck(p && json_object_get_boolean(get(p, "exited")) &&
			       get(site, "kernel_faults") &&
			       json_object_get_uint64(get(site, "kernel_faults")) ==
			       json_object_get_uint64(get(site, "faults")), "just exited",
			       "the first answer showing the process exited has kernel_faults "
			       "(%s)", p ? json_object_to_json_string(site) : "not listed");
		}
		json_object_put(doc);
	}

	/* A live process, read while it runs, then after it exits. */
	pid = start_waiter(&w, 0, 5, 5, 5, "live");
	if (pid > 0) {
		expect_kernel_equal("live", pid, false);
		if (waiter_fail(&w, 1000, 300, 20, "live"))
			expect_kernel_equal("live, 1,325 faults more", pid, false);
		{
			json_object *doc, *p, *k;

			/* About every process: counts only, no map of page faults read. */
			if (query(0, FL_QUERY_STATS, 0, 0, &doc) == 0) {
				p = proc_of(doc, pid);
				k = get(p, "kernel");
				kcheck(k && json_object_get_uint64(get(k, "fault_signals")) == 1335 &&
				       json_object_get_uint64(get(k, "stray_fault_signals")) == 0 &&
				       !get(k, "signals") && !get(k, "page_faults") &&
				       get(json_object_array_get_idx(get(p, "sites"), 0), "kernel_faults"),
				       "all processes", "stats of every process: the kernel's counts "
				       "(1,335 fault signals, kernel_faults) without the detail");
				json_object_put(doc);
			} else {
				fail("all processes", "stats query failed");
			}
		}
		{
			json_object *doc, *k;

			/*
			 * Every fault signal is sampled: the last RECENT are
			 * listed.  The daemon reads the ring buffer as it comes
			 * in, a query may come first: waited for.
			 */
			double end = now() + WAIT_S;
			int got;

			while ((got = query(0, FL_QUERY_STATS, pid, 0, &doc)) == 0) {
				k = get(proc_of(doc, pid), "kernel");
				if (json_object_get_uint64(get(k, "signal_samples")) >= 1335 ||
				    now() >= end)
					break;
				json_object_put(doc);
				sleep_ms(20);
			}
			if (got == 0) {
				k = get(proc_of(doc, pid), "kernel");
				kcheck(json_object_get_uint64(get(k, "signal_samples")) == 1335,
				      "ring buffer", "1,335 signal samples received for the process "
				      "(got %s)", json_object_get_string(get(k, "signal_samples")));
				kcheck(json_object_array_length(get(k, "recent_signals")) == 8,
				      "ring buffer", "the last 8 signal samples are listed");
				for (size_t i = 0; i < 8; i++) {
					json_object *r = json_object_array_get_idx(
						get(k, "recent_signals"), i);

					kcheck(json_object_get_int(get(r, "signal")) == SIGSEGV &&
					      json_object_get_uint64(get(r, "addr")) < 4096,
					      "ring buffer", "sample %zu: SIGSEGV near NULL", i);
				}
				json_object_put(doc);
			} else {
				fail("ring buffer", "stats query failed");
			}
		}
		kcheck(proc_end(&w) == 0, "live", "the program exits 0");
		expect_kernel_equal("live, after exit", pid, true);
	}

	/* Four threads. */
	{
		const char *argv[] = { prog, "threads", "50", "20", "10", NULL };

		pid = run_prog(argv, "pid", "threads");
		if (pid > 0 && expect_counts("threads", pid, true, 200, 80, 40))
			expect_kernel_equal("threads", pid, true);
	}

	/* fork: the child is counted by the kernel from the fork on. */
	{
		const char *argv[] = { prog, "fork", "4", "0", "0", "2", "1", "1", NULL };
		int64_t before = bpf_stat("inherited");
		struct proc p;
		pid_t parent, child;

		if (proc_spawn(&p, 0, true, argv) == 0) {
			child = proc_expect_pid(&p, "child", "fork");
			parent = proc_expect_pid(&p, "parent", "fork");
			kcheck(proc_end(&p) == 0, "fork", "the program exits 0");
			if (child > 0 && expect_counts("fork: child", child, true, 2, 1, 1))
				expect_kernel_equal("fork: child", child, true);
			if (parent > 0 && expect_counts("fork: parent", parent, true, 8, 0, 0))
				expect_kernel_equal("fork: parent", parent, true);
			kcheck(bpf_stat("inherited") == before + 1, "fork",
			      "the program registered the child at fork (inherited %" PRId64
			      " -> %" PRId64 ")", before, bpf_stat("inherited"));
		} else {
			fail("fork", "cannot start %s", prog);
		}
	}

	/* Stray faults: NULL reads at a PC that is not a site. */
	{
		const char *argv[] = { prog, "stray", "6", "2", "1", NULL };
		struct proc p;
		unsigned long long pc = 0;
		int spid = -1;

		if (proc_spawn(&p, 0, true, argv) == 0 &&
		    proc_line(&p, line, sizeof(line), WAIT_MS) == 0 &&
		    sscanf(line, "stray %d %llu", &spid, &pc) == 2) {
			kcheck(proc_end(&p) == 0, "stray", "the program exits 0");
			if (expect_counts("stray", spid, true, 6, 2, 1) &&
			    expect_kernel_equal("stray: the sites", spid, true) == 9) {
				json_object *doc, *k, *e;
				uint64_t sig_count = 0, pf = 0;
				bool sig_site = true;

				query(0, FL_QUERY_STATS, (uint32_t)spid, 0, &doc);
				k = get(proc_of(doc, spid), "kernel");
				for (size_t i = 0; i < json_object_array_length(get(k, "signals")); i++) {
					e = json_object_array_get_idx(get(k, "signals"), i);
					if (json_object_get_uint64(get(e, "ip")) == pc) {
						sig_count = json_object_get_uint64(get(e, "count"));
						sig_site = json_object_get_boolean(get(e, "site"));
					}
				}
				for (size_t i = 0; i < json_object_array_length(get(k, "stray_faults"));
				     i++) {
					e = json_object_array_get_idx(get(k, "stray_faults"), i);
					if (json_object_get_uint64(get(e, "ip")) == pc)
						pf = json_object_get_uint64(get(e, "read"));
				}
				kcheck(sig_count == 6 && !sig_site, "stray",
				      "6 SIGSEGVs at %#llx, not a site (got %" PRIu64 ")", pc, sig_count);
				kcheck(pf == 6, "stray", "6 stray read page faults listed at %#llx "
				      "(got %" PRIu64 ")", pc, pf);
				kcheck(json_object_get_uint64(get(k, "fault_signals")) == 15, "stray",
				      "15 fault signals: 9 at sites, 6 stray");
				json_object_put(doc);
			}
		} else {
			fail("stray", "the program said \"%s\"", line);
			proc_end(&p);
		}
	}
	kcheck(bpf_stat("ring_buffer_drops") == 0 && bpf_stat("map_update_failures") == 0,
	      "bpf_stats", "no ring buffer drops, no failed map updates");

	/*
	 * More signal entries than the daemon keeps for an exited process
	 * (4,096), at PCs that sort before the sites': the sites' kernel counts
	 * and the fault signal total are still whole once it is frozen.
	 */
	{
		const char *argv[] = { prog, "strays", "5", "3", "2", "5000", NULL };

		pid = run_prog(argv, "strays", "strays");
		if (pid > 0 && expect_counts("5,000 stray PCs", pid, true, 5, 3, 2) &&
		    expect_kernel_equal("5,000 stray PCs", pid, true) == 10) {
			json_object *doc, *k;

			query(0, FL_QUERY_STATS, pid, 0, &doc);
			k = get(proc_of(doc, pid), "kernel");
			kcheck(json_object_get_uint64(get(k, "fault_signals")) == 5010, "strays",
			      "5,010 fault signals: 10 at sites, 5,000 stray (got %s)",
			      json_object_get_string(get(k, "fault_signals")));
			json_object_put(doc);
		}
	}

	/*
	 * The kernel's signal map full (65,536 entries: 70,000 stray PCs): the
	 * signals it could not count make every view that was counting then
	 * incomplete (no kernel_faults, no false mismatch), and only those.
	 */
	{
		const char *argv[] = { prog, "strays", "5", "3", "2", "70000", NULL };
		int64_t lost = bpf_stat("signals_lost");
		json_object *doc;
		char needle[32];
		bool frozen;
		pid_t live;

		live = start_waiter(&w, 0, 2, 0, 0, "map full");
		/* 70,000 signals: 2 s here, 22 s under QEMU's TCG. */
		pid = run_prog(argv, "strays", "map full");
		/*
		 * Frozen (and its map entries purged) at the daemon's next tick,
		 * which logs why its counts are not complete.
		 */
		snprintf(needle, sizeof(needle), "pid %d (", (int)pid);
		frozen = pid > 0 && log_wait(needle, "signal map was full");
		if (pid > 0 && live > 0 && expect_counts("map full", pid, true, 5, 3, 2)) {
			kcheck(bpf_stat("signals_lost") > lost, "map full",
			       "signals_lost counted (%" PRId64 " -> %" PRId64 ")", lost,
			       bpf_stat("signals_lost"));
			if (query(0, FL_QUERY_STATS, 0, 0, &doc) == 0) {
				json_object *a = proc_of(doc, pid), *b = proc_of(doc, live);

				kcheck(!json_object_get_boolean(get(get(a, "kernel"), "complete")) &&
				       !get(json_object_array_get_idx(get(a, "sites"), 0),
					    "kernel_faults"),
				       "map full", "the process that filled it: not complete, no "
				       "kernel_faults");
				kcheck(!json_object_get_boolean(get(get(b, "kernel"), "complete")) &&
				       !get(json_object_array_get_idx(get(b, "sites"), 0),
					    "kernel_faults"),
				       "map full", "a process live meanwhile: not complete either");
				json_object_put(doc);
			}
			kcheck(frozen, "map full", "the daemon logs why");
		}
		if (live > 0)
			proc_end(&w);
		/* Purged with the freeze above: the next process counts completely. */
		{
			const char *argv2[] = { prog, "run", "2", "2", "2", NULL };

			pid = run_prog(argv2, "pid", "after map full");
			if (pid > 0 && expect_counts("after map full", pid, true, 2, 2, 2))
				expect_kernel_equal("after the map was purged", pid, true);
		}
	}

	/* After a daemon restart the kernel did not see everything: no claim. */
	pid = start_waiter(&w, 0, 4, 0, 0, "restart");
	if (pid > 0) {
		json_object *doc = NULL, *p = NULL;
		double end;

		daemon_kill9();
		if (daemon_start() == 0) {
			end = now() + WAIT_S;
			do {
				json_object_put(doc);
				doc = NULL;
				sleep_ms(100);
				if (query(0, FL_QUERY_STATS, pid, 0, &doc) == 0)
					p = proc_of(doc, pid);
			} while ((!p || json_object_get_boolean(get(p, "exited"))) && now() < end);
			kcheck(p && !json_object_get_boolean(get(p, "exited")) &&
			      json_object_get_uint64(get(p, "faults")) == 4, "restart",
			      "the live process registered again with its 4 faults");
			kcheck(p && get(p, "kernel") &&
			      !json_object_get_boolean(get(get(p, "kernel"), "complete")) &&
			      !get(json_object_array_get_idx(get(p, "sites"), 0), "kernel_faults"),
			      "restart", "its kernel view is not complete: no kernel_faults");
			json_object_put(doc);
		}
		proc_end(&w);
	}
	kcheck(daemon_stop() == 0, "kernel", "SIGTERM: faultlined exits 0");

	/* Without the program: --no-bpf, and a daemon that is not root. */
	daemon_extra = "--no-bpf";
	kernel_without_bpf("--no-bpf", 0, "eBPF: off (--no-bpf)");
	daemon_extra = NULL;
	{
		char home[80], saved_sock[sizeof(sock_path)], saved_state[PATH_MAX];

		if ((size_t)snprintf(home, sizeof(home), "%s/nd", dir) >= sizeof(home)) {
			fail("nobody", "%s: path too long", dir);
			return;
		}
		mkdir(home, 0755);
		if (chown(home, NOBODY, NOBODY) != 0) {
			fail("nobody", "chown %s: %s", home, strerror(errno));
			return;
		}
		memcpy(saved_sock, sock_path, sizeof(sock_path));
		memcpy(saved_state, state_dir, sizeof(state_dir));
		snprintf(sock_path, sizeof(sock_path), "%.80s/s", home);
		snprintf(state_dir, sizeof(state_dir), "%.80s/state", home);
		daemon_uid = NOBODY;
		kernel_without_bpf("as nobody", NOBODY,
				   "not loaded: faultlined runs as uid 65534 without CAP_BPF");
		daemon_uid = 0;
		memcpy(sock_path, saved_sock, sizeof(sock_path));
		memcpy(state_dir, saved_state, sizeof(state_dir));
	}
}

int main(int argc, char **argv)
{
	struct rlimit rl = { 8192, 8192 };

	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	/* Ended with run.sh, however it ends: and with the driver, all it started. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (argc != 8) {
		fprintf(stderr, "usage: e2e GROUP OUTDIR DIR FAULTLINED PRELOAD PROG LOAD\n");
		return 2;
	}
	group = argv[1];
	outdir = argv[2];
	dir = argv[3];
	fld = argv[4];
	preload = argv[5];
	prog = argv[6];
	loadprog = argv[7];
	if (geteuid() != 0) {
		printf("skip - %s: the end-to-end tests run as root (they drop to nobody)\n",
		       group);
		return 0;
	}
	setrlimit(RLIMIT_NOFILE, &rl);
	/* What a group leaves running is killed and reaped, also on an early return. */
	driver_pid = getpid();
	atexit(kill_kids);
	snprintf(sock_path, sizeof(sock_path), "%s/d.sock", dir);
	snprintf(state_dir, sizeof(state_dir), "%s/state-%s", dir, group);

	if (!strcmp(group, "counts"))
		group_counts();
	else if (!strcmp(group, "churn"))
		group_churn();
	else if (!strcmp(group, "restart"))
		group_restart();
	else if (!strcmp(group, "request"))
		group_request();
	else if (!strcmp(group, "security"))
		group_security();
	else if (!strcmp(group, "load"))
		group_load();
	else if (!strcmp(group, "kernel"))
		group_kernel();
	else {
		fprintf(stderr, "e2e: unknown group %s\n", group);
		return 2;
	}
	daemon_kill9();
	kill_kids();
	printf("%s: %d passed, %d failed\n", group, passed, failed);
	return failed ? 1 : 0;
}
