/* SPDX-License-Identifier: MIT */
/*
 * The patcher's census of the process's threads (threads.h): read from
 * /proc/self/task with getdents64, openat and read into buffers on the
 * stack, never malloc (some threads may be stopped holding its lock).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/ownfd.h"
#include "core/fmt.h"
#include "patch/threads.h"

/* Reads NAME/file of the task directory into buf (NUL-terminated). */
static int read_file(const struct fl_census *c, int32_t name, const char *file, char *buf,
		     size_t len)
{
	char path[48];
	ssize_t n;
	int fd, err;

	fl_fmt(path, sizeof(path), "%d/%s", (int)name, file);
	fd = fl_ownfd_transient(openat(c->taskfd, path, O_RDONLY | O_CLOEXEC));
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	n = read(fd, buf, len - 1);
	err = n < 0 ? (errno == ESRCH ? -ESRCH : -errno) : 0;
	close(fd);
	if (err)
		return err;
	buf[n] = '\0';
	return n > 0 ? 0 : -ESRCH;
}

/* The text after "\nKEY:\t" in a status buffer, or NULL. */
static const char *field(const char *buf, const char *key)
{
	char pat[40];
	const char *at;

	fl_fmt(pat, sizeof(pat), "\n%s:\t", key);
	at = strstr(buf, pat);
	return at ? at + strlen(pat) : NULL;
}

/* The last number of an NSpid line: the id in the innermost namespace. */
static int32_t last_id(const char *at)
{
	long v = -1;

	while (at && *at && *at != '\n') {
		char *end;
		long x = strtol(at, &end, 10);

		if (end == at)
			break;
		v = x;
		at = end;
		while (*at == '\t' || *at == ' ')
			at++;
	}
	return v > 0 && v <= INT32_MAX ? (int32_t)v : -1;
}

int fl_thread_status(const struct fl_census *c, struct fl_thread *t)
{
	char buf[4096];
	const char *st, *blk, *vol;
	struct fl_nap_seen seen = { 0 };
	uint32_t park;
	int err = read_file(c, t->name, "status", buf, sizeof(buf));

	if (err)
		return err;
	st = field(buf, "State");
	blk = field(buf, "SigBlk");
	if (!st || !blk)
		return -EPROTO;
	t->state = *st;
	if (t->state == 'Z' || t->state == 'X')
		return -ESRCH;
	t->blocked = strtoull(blk, NULL, 16);
	if (t->tid == 0) {
		t->tid = c->foreign ? last_id(field(buf, "NSpid")) : t->name;
		if (t->tid <= 0)
			return -ENOTSUP;
	}
	vol = field(buf, "voluntary_ctxt_switches");
	t->slept = vol ? strtoull(vol, NULL, 10) : 0;
	/* After the kernel's count (nap.c says why) and the mask. */
	t->naps_known = fl_naps_of(t->tid, &seen) && vol;
	t->naps = seen.count;
	t->stops = seen.stops;
	park = seen.park;
	/*
	 * In the handshake's handler (an earlier try's stop, on its way out):
	 * the mask read is the handler's.  The one it goes back to lets the
	 * handshake's signal through, which it therefore takes once out.
	 */
	if (park) {
		t->blocked &= ~(1ull << (fl_park.signo - 1));
		if (park == FL_NAP_PARKED_TRAP_BLOCKED)
			t->blocked |= 1ull << (SIGTRAP - 1);
		else
			t->blocked &= ~(1ull << (SIGTRAP - 1));
	}
	return 0;
}

int fl_thread_stat(const struct fl_census *c, struct fl_thread *t)
{
	char buf[1024], *at;
	int err = read_file(c, t->name, "stat", buf, sizeof(buf));

	if (err)
		return err;
	/* "PID (COMM) STATE ...": the name may hold spaces and parentheses. */
	at = strrchr(buf, ')');
	if (!at || at[1] != ' ' || !at[2])
		return -EPROTO;
	at += 2;
	t->state = *at;
	if (t->state == 'Z' || t->state == 'X')
		return -ESRCH;
	/* Field 32, blocked: the 29th after the state. */
	for (int k = 0; k < 29; k++) {
		at = strchr(at, ' ');
		if (!at)
			return -EPROTO;
		at++;
	}
	t->blocked = strtoull(at, NULL, 10);
	t->tid = t->name;
	return 0;
}

int fl_thread_look(const struct fl_census *c, struct fl_thread *t)
{
	char buf[256], *at, *end;
	unsigned long long last[2] = { 0, 0 };
	int err = read_file(c, t->name, "syscall", buf, sizeof(buf)), k = 0;

	if (err)
		return err;
	t->waiting = false;
	if (strncmp(buf, "running", 7) == 0)
		return 0;
	/*
	 * "NR ARG1..ARG6 SP PC" in a system call, "-1 SP PC" waiting
	 * elsewhere (a page fault, stopped): the last two are the ones.
	 */
	for (at = buf; *at && *at != '\n'; at = end, k++) {
		unsigned long long x = strtoull(at, &end, 0);

		if (end == at)
			return -EPROTO;
		last[0] = last[1];
		last[1] = x;
		while (*end == ' ')
			end++;
	}
	if (k < 3)
		return -EPROTO;
	t->sp = last[0];
	t->pc = last[1];
	t->waiting = true;
	return 0;
}

int fl_thread_runs(const struct fl_census *c, struct fl_thread *t)
{
	char buf[96], *at;
	int err = read_file(c, t->name, "schedstat", buf, sizeof(buf));

	if (err)
		return err;
	/* "TIME_ON_CPU WAIT_TIME TIMES_RUN"; "0 0 0" without CONFIG_SCHED_INFO. */
	t->on_cpu_ns = strtoull(buf, &at, 10);
	t->queued_ns = strtoull(at, &at, 10);
	t->runs = strtoull(at, NULL, 10);
	/* Every thread has been on a CPU once: 0 is a kernel that does not count. */
	return t->runs ? 0 : -ENOTSUP;
}

int fl_census_open(struct fl_census *c, char *why, size_t why_len)
{
	char link[64];
	ssize_t n;
	long pid, tid;
	char *end;

	c->n = 0;
	c->taskfd = fl_ownfd_transient(open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	if (c->taskfd < 0) {
		int err = -errno;

		fl_fmt(why, why_len, "/proc/self/task: %s (is /proc mounted?)", strerror(-err));
		return err;
	}
	/* "PID/task/TID", in /proc's pid namespace. */
	n = readlink("/proc/thread-self", link, sizeof(link) - 1);
	if (n <= 0) {
		int err = n < 0 ? -errno : -EPROTO;

		fl_fmt(why, why_len, "/proc/thread-self: %s", strerror(-err));
		fl_census_close(c);
		return err;
	}
	link[n] = '\0';
	pid = strtol(link, &end, 10);
	tid = strncmp(end, "/task/", 6) == 0 ? strtol(end + 6, NULL, 10) : -1;
	if (pid <= 0 || tid <= 0) {
		fl_fmt(why, why_len, "/proc/thread-self is '%s'", link);
		fl_census_close(c);
		return -EPROTO;
	}
	c->self_name = (int32_t)tid;
	c->foreign = pid != getpid() || tid != gettid();
	if (c->foreign) {
		/* This thread's NSpid must end in its own id, or nothing can be known. */
		struct fl_thread self = { .name = c->self_name };
		int err = fl_thread_status(c, &self);

		if (err || self.tid != gettid()) {
			fl_fmt(why, why_len, "/proc is another pid namespace's (it names this "
			       "thread %d, not %d) and does not say which of its threads is which",
			       (int)tid, (int)gettid());
			fl_census_close(c);
			return -ENOTSUP;
		}
	}
	return 0;
}

void fl_census_close(struct fl_census *c)
{
	if (c->taskfd >= 0)
		close(c->taskfd);
	c->taskfd = -1;
}

static bool known(const struct fl_census *c, int32_t name)
{
	for (size_t i = 0; i < c->n; i++)
		if (c->t[i].name == name)
			return true;
	return false;
}

/*
 * The memo: what the last census read of each thread, by its name (a
 * cache: one entry per name modulo its size, the newest kept).  The key
 * is the whole schedstat: its time on a CPU and waiting for one, in ns,
 * with its run count, the same only for a thread that has not been put on
 * a CPU since (and not for another thread that got the name since).
 * Its status is remembered from the listing on; where it waits (waiting,
 * pc, sp) only once it was looked at (where).  Written and read by the
 * patcher only, under the patch lock.
 */
struct memo {
	int32_t name, tid;
	uint64_t runs, on_cpu_ns, queued_ns;
	uint64_t blocked;
	char state;
	uint64_t slept;
	uint32_t naps, stops;
	bool naps_known;
	bool where, waiting;
	uint64_t pc, sp;
};

static struct memo memos[FL_PARK_MAX];

static void remember(const struct fl_thread *t, bool where)
{
	memos[(uint32_t)t->name % FL_PARK_MAX] = (struct memo){
		.name = t->name, .tid = t->tid, .runs = t->runs, .on_cpu_ns = t->on_cpu_ns,
		.queued_ns = t->queued_ns, .blocked = t->blocked, .state = t->state,
		.slept = t->slept, .naps = t->naps, .stops = t->stops,
		.naps_known = t->naps_known,
		.where = where, .waiting = t->waiting, .pc = t->pc, .sp = t->sp,
	};
}

void fl_thread_remember(const struct fl_thread *t)
{
	remember(t, true);
}

void fl_threads_forget(void)
{
	memset(memos, 0, sizeof(memos));
}

/*
 * t (its name and schedstat read) as remembered, if it is: its status,
 * and where it waits if that was looked at (t->remembered).
 */
static bool recall(struct fl_thread *t)
{
	const struct memo *m = &memos[(uint32_t)t->name % FL_PARK_MAX];

	if (m->name != t->name || m->runs != t->runs || m->on_cpu_ns != t->on_cpu_ns ||
	    m->queued_ns != t->queued_ns)
		return false;
	t->tid = m->tid;
	t->blocked = m->blocked;
	t->state = m->state;
	t->slept = m->slept;
	t->naps = m->naps;
	t->stops = m->stops;
	t->naps_known = m->naps_known;
	t->waiting = m->waiting;
	t->pc = m->pc;
	t->sp = m->sp;
	t->remembered = m->where;
	return true;
}

/*
 * Whether t (its schedstat, then its status read now) computes, against
 * what an earlier census read of it.  It does when every sleep the kernel
 * counted since then was a wait of faultline's (nap.c), and since then it
 * has either been on a CPU for FL_COMPUTES_NS or been stopped by the
 * handshake.  Why that is enough: a thread on its way out of a blocking
 * call (woken, not yet back in user space) went to sleep in that call,
 * and the kernel counted that sleep.  If the sleep came after the earlier
 * read, it is in the count.  If it came before, the thread has since been
 * on a CPU far longer than any way out of a call takes, or it has run
 * the handshake's handler, which only a thread out of its call does.
 * The time on a CPU is the kernel's as of the thread's last tick or
 * switch: it can only be less than the truth, the safe side.
 */
static bool computes(const struct fl_thread *t)
{
	const struct memo *m = &memos[(uint32_t)t->name % FL_PARK_MAX];
	int32_t naps = (int32_t)(t->naps - m->naps);

	if (m->name != t->name || m->tid != t->tid || !m->naps_known || !t->naps_known ||
	    t->runs < m->runs || t->on_cpu_ns < m->on_cpu_ns || t->slept < m->slept ||
	    naps < 0 || t->slept - m->slept != (uint64_t)naps)
		return false;
	return t->on_cpu_ns >= m->on_cpu_ns + FL_COMPUTES_NS || t->stops != m->stops;
}

int fl_census_list(struct fl_census *c, bool light, char *why, size_t why_len)
{
	char buf[4096];
	bool self_seen = false;
	int added = 0;
	long r;

	if (lseek(c->taskfd, 0, SEEK_SET) < 0) {
		int err = -errno;

		fl_fmt(why, why_len, "listing /proc/self/task: %s", strerror(-err));
		return err;
	}
	while ((r = syscall(SYS_getdents64, c->taskfd, buf, sizeof(buf))) > 0) {
		for (long off = 0; off < r;) {
			struct dirent64 *d = (struct dirent64 *)(buf + off);
			char *end;
			long name = strtol(d->d_name, &end, 10);
			struct fl_thread *t;
			int err;

			off += d->d_reclen;
			if (name <= 0 || *end)
				continue;
			if (name == c->self_name) {
				self_seen = true;
				continue;
			}
			if (known(c, (int32_t)name))
				continue;
			if (c->n == FL_PARK_MAX) {
				fl_fmt(why, why_len, "more than %d threads", FL_PARK_MAX);
				return -E2BIG;
			}
			t = &c->t[c->n];
			memset(t, 0, sizeof(*t));
			t->name = (int32_t)name;
			/*
			 * light: the caller needs only whether SIGTRAP is blocked,
			 * which stat says for less than status; one that blocks it
			 * is read in full (its other signals matter then).
			 */
			if (light && !c->foreign) {
				err = fl_thread_stat(c, t);
				if (err == -ESRCH)
					continue;	/* it has exited */
				if (!err && !fl_sigset_has(t->blocked, SIGTRAP)) {
					c->n++;
					added++;
					continue;
				}
				memset(t, 0, sizeof(*t));
				t->name = (int32_t)name;
			}
			err = fl_thread_runs(c, t);
			if (err == -ESRCH)
				continue;	/* it has exited */
			/* Not remembered (or no schedstat: said when it is looked at). */
			if (err || !recall(t)) {
				bool counted = !err;

				err = fl_thread_status(c, t);
				if (!err && counted) {
					t->computes = computes(t);
					remember(t, false);
				}
			}
			if (err == -ESRCH)
				continue;	/* it has exited */
			if (err) {
				fl_fmt(why, why_len, "thread %ld: its status: %s%s", name,
				       strerror(-err), err == -ENOTSUP ?
				       " (/proc is another pid namespace's, with no NSpid)" : "");
				return err;
			}
			c->n++;
			added++;
		}
	}
	if (r < 0) {
		int err = -errno;

		fl_fmt(why, why_len, "listing /proc/self/task: %s", strerror(-err));
		return err;
	}
	/* A listing without this thread is not this process's. */
	if (!self_seen) {
		fl_fmt(why, why_len, "/proc/self/task does not list this thread (%d)",
		       (int)c->self_name);
		return -EPROTO;
	}
	return added;
}
