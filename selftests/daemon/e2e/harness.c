// SPDX-License-Identifier: MIT
/*
 * faultlined end to end (make check-daemon-e2e): the daemon, the preload
 * shim and programs with implicit null checks (prog.c, load.c), and raw
 * protocol clients built with lib/proto.
 *
 *   e2e GROUP OUTDIR DIR FAULTLINED PRELOAD PROG LOAD
 *
 * GROUP is counts, churn, restart, request, security, load or kernel (run.sh
 * runs them all, each in a driver of its own).  This file is the harness
 * (harness.h: what the groups use) and the driver; each group is a file,
 * group-GROUP.c, and starts from nothing: its own daemon, on a socket and a
 * state directory (DIR/state-GROUP) that the driver removes first, so that
 * no group depends on what a group or a run before it left.
 *
 * DIR is a directory every user can traverse (the socket, state
 * directories and the copies of PROG and PRELOAD that "nobody" runs; churn
 * loads libe2e-sites.so from PROG's directory); daemon and program logs go
 * to OUTDIR.  Prints "ok - NAME" or "FAIL - NAME: DETAIL" per check, then
 * "GROUP: P passed, F failed"; exits 1 when a check failed.
 *
 * No check depends on how fast the machine is: every wait is for an event
 * (a daemon listening, a count reached, a reply, a line from a program),
 * ended by it, and bounded by WAIT_S only so that a broken daemon cannot
 * hang the test; times are printed as figures ("# ..."), never compared.
 * Every process the driver starts dies with it, also when it dies early.
 */
#include <ftw.h>

#include "harness.h"

const char *group, *outdir, *dir, *fld, *preload, *prog, *loadprog;
char sock_path[108], state_dir[PATH_MAX];
pid_t dpid = -1;
static int dlogs;
char dlog[PATH_MAX];
static int passed, failed;

/* ------------------------------------------------------------------------
 * Reporting
 */

void ok(const char *fmt, ...)
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

void fail(const char *name, const char *fmt, ...)
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

double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

void sleep_ms(int ms)
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
void die_with(pid_t parent)
{
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
		_exit(125);
}

/* The daemons and programs started and not reaped yet, for the end. */
static pid_t running[64];

void kid_add(pid_t pid)
{
	for (size_t i = 0; i < sizeof(running) / sizeof(running[0]); i++)
		if (running[i] <= 0) {
			running[i] = pid;
			return;
		}
}

void kid_gone(pid_t pid)
{
	for (size_t i = 0; i < sizeof(running) / sizeof(running[0]); i++)
		if (running[i] == pid)
			running[i] = 0;
}

/*
 * Waits up to WAIT_S for pid to exit, then kills it; returns its wait
 * status (-1 when it had to be killed).
 */
int reap(pid_t pid)
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
void kill_kids(void)
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

bool log_has(const char *path, const char *needle)
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
bool log_wait(const char *needle, const char *needle2)
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

const char *daemon_extra;
uid_t daemon_uid;

void daemon_kill9(void)
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
int daemon_start(void)
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
void wait_stopped(pid_t pid)
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
int daemon_stop(void)
{
	int status;

	if (dpid <= 0)
		return -1;
	kill(dpid, SIGTERM);
	status = reap(dpid);
	dpid = -1;
	return status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

bool daemon_alive(void)
{
	return dpid > 0 && waitpid(dpid, NULL, WNOHANG) == 0 && kill(dpid, 0) == 0;
}

int daemon_nfds(void)
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

int conn(void)
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

int xsend(int fd, const void *buf, size_t len, const int *fds, size_t nfds, int flags)
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
ssize_t xrecv(int fd, void *buf, size_t size, int timeout_ms)
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
int dropped_by(int fd, int *err, double end)
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
int dropped(int fd, int *err)
{
	return dropped_by(fd, err, now() + WAIT_S);
}

size_t mk_query(void *buf, uint32_t what, uint32_t pid, uint64_t arg)
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

size_t mk_request(void *buf, uint32_t pid, uint32_t kind, uint64_t arg)
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
int read_reply(int fd, char **text, int timeout_ms)
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
int exchange(const void *msg, size_t len, char **text)
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
int exchange_as(uid_t uid, const void *msg, size_t len, char **text)
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
int query(uid_t uid, uint32_t what, uint32_t pid, uint64_t arg, json_object **doc)
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
int request(uid_t uid, uint32_t pid, uint32_t kind, uint64_t arg, uint64_t *value)
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

/* A region for a fake process: capacity slots, sealed as asked. */
uint32_t fake_ring = 8;	/* request ring entries of the next fake region */

int fake_region(struct fake *f, uint32_t capacity, int seals, pid_t pid)
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

/* ------------------------------------------------------------------------
 * What the daemon says about a process
 */

const char *const site_fn[S_N] = { "e2e_load", "e2e_store", "e2e_rmw" };
const char *const site_kind[S_N] = { "load", "store", "load-store" };

json_object *get(json_object *o, const char *key)
{
	json_object *v = NULL;

	return o && json_object_object_get_ex(o, key, &v) ? v : NULL;
}

size_t nprocs(json_object *doc)
{
	json_object *a = get(doc, "processes");

	return a && json_object_is_type(a, json_type_array) ? json_object_array_length(a) : 0;
}

json_object *proc_at(json_object *doc, size_t i)
{
	return json_object_array_get_idx(get(doc, "processes"), i);
}

/* How often pid is listed. */
int ps_entries(json_object *doc, pid_t pid)
{
	int n = 0;

	for (size_t i = 0; i < nprocs(doc); i++)
		n += json_object_get_int(get(proc_at(doc, i), "pid")) == pid;
	return n;
}

void pstat_of(json_object *doc, pid_t pid, struct pstat *s)
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

void pstat_str(const struct pstat *s, char *buf, size_t size)
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
bool expect_counts(const char *name, pid_t pid, bool exited, uint64_t l, uint64_t s,
			  uint64_t r)
{
	double end = now() + WAIT_S;
	struct pstat st = { 0 };
	char detail[512];
	int err = 0;
	/*
	 * Named sites are owed by a process that failed a check, or still
	 * runs.  One that failed none and exited may have gone before its
	 * fl-agent thread named its sites (the shim registers its modules
	 * beside the program, and an exit waits for that only when a check
	 * failed: fl_init(3), FL_INIT_DEFER_DISCOVERY): its sites may be
	 * unnamed, their counts still 0.
	 */
	bool names_owed = !exited || l + s + r > 0;

	for (;;) {
		json_object *doc;

		err = query(0, FL_QUERY_STATS, 0, 0, &doc);
		if (!err) {
			pstat_of(doc, pid, &st);
			json_object_put(doc);
			if (st.entries == 1 && st.exited == exited && st.faults[S_LOAD] == l &&
			    st.faults[S_STORE] == s && st.faults[S_RMW] == r &&
			    (st.other_sites == 0 || !names_owed) && st.total == l + s + r) {
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

/*
 * The first line of each of the daemon's records (state_dir/proc.N.json),
 * the process's header, as a JSON array of them.
 */
json_object *record_headers(void)
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
bool state_lists_exited(const char *name, const pid_t *pids, size_t n)
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

/* ------------------------------------------------------------------------
 * Programs
 */

/* Starts argv[0] (prog or load) as uid, with FAULTLINE_SOCKET; preload: LD_PRELOAD. */
int proc_spawn(struct proc *p, uid_t uid, bool with_preload, const char *const argv[])
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
int proc_line(struct proc *p, char *line, size_t size, int timeout_ms)
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
pid_t proc_expect_pid(struct proc *p, const char *word, const char *name)
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

int proc_say(struct proc *p, const char *fmt, ...)
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
int proc_end(struct proc *p)
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
pid_t start_waiter(struct proc *p, uid_t uid, int l, int s, int r, const char *name)
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
bool waiter_fail(struct proc *p, int l, int s, int r, const char *name)
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
pid_t run_prog(const char *const argv[], const char *word, const char *name)
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

/* ------------------------------------------------------------------------
 * The driver: one group a run
 */

static const struct {
	const char *name;
	void (*run)(void);
} groups[] = {
	{ "counts", group_counts },
	{ "churn", group_churn },
	{ "restart", group_restart },
	{ "persist", group_persist },
	{ "request", group_request },
	{ "security", group_security },
	{ "load", group_load },
	{ "kernel", group_kernel },
	{ "bell", group_bell },
};

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return (flag == FTW_DP ? rmdir(path) : unlink(path)) && errno != ENOENT ? -1 : 0;
}

/*
 * A group starts from nothing: no socket and no state directory of a run
 * before (of this group, also one killed halfway), whatever ran before it.
 */
static int fresh_start(void)
{
	if (unlink(sock_path) && errno != ENOENT) {
		fail("fresh start", "cannot remove %s: %s", sock_path, strerror(errno));
		return -1;
	}
	if (nftw(state_dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS) && errno != ENOENT) {
		fail("fresh start", "cannot remove %s: %s", state_dir, strerror(errno));
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct rlimit rl = { 8192, 8192 };
	void (*run)(void) = NULL;

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
	for (size_t i = 0; i < sizeof(groups) / sizeof(groups[0]); i++)
		if (!strcmp(group, groups[i].name))
			run = groups[i].run;
	if (!run) {
		fprintf(stderr, "e2e: unknown group %s\n", group);
		return 2;
	}
	setrlimit(RLIMIT_NOFILE, &rl);
	/* What a group leaves running is killed and reaped, also on an early return. */
	driver_pid = getpid();
	atexit(kill_kids);
	snprintf(sock_path, sizeof(sock_path), "%s/d.sock", dir);
	snprintf(state_dir, sizeof(state_dir), "%s/state-%s", dir, group);

	if (fresh_start() == 0)
		run();
	daemon_kill9();
	kill_kids();
	printf("%s: %d passed, %d failed\n", group, passed, failed);
	return failed ? 1 : 0;
}
