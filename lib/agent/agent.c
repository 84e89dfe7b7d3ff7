/* SPDX-License-Identifier: MIT */
/*
 * The agent's connection: registration with faultlined, module updates,
 * reconnection after a daemon restart, and a fresh registration in a
 * forked child.  See agent.h.
 *
 * State: the list of modules (copies) and a queue of changes not yet sent,
 * under lock.  The registry calls in with its own lock held (order:
 * registry, then this lock); nothing here calls back into the registry.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <faultline/dispatch.h>

#include "agent/agent.h"
#include "agent/internal.h"
#include "core/fmt.h"
#include "core/log.h"
#include "core/ownfd.h"
#include "proto/proto.h"
#include "table/table.h"

struct amod {
	int id;
	char *name;
	uint64_t code_start;
	uint64_t code_size;
	uint32_t first_counter;
	uint32_t num_sites;
	uint64_t *pcs;		/* faulting PCs, for SYMBOLS */
	char **names;		/* per site, or NULL: dladdr then */
	void *sections;		/* agent.h; or NULL */
	size_t sections_size;
	uint32_t faultmap_size;
	uint32_t stackmap_size;
	uint32_t sm_functions;
	bool sent;		/* MODULE_ADD sent on the current connection */
	/*
	 * Unregistered before its MODULE_ADD went: it still goes, followed by
	 * MODULE_REMOVE (the daemon names its sites and saves its counts).
	 */
	bool removed;
	/*
	 * References, under lock: the list holds one, and flush one while it
	 * sends without the lock.  Every other field is fixed at creation.
	 */
	int refs;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct amod **mods;
static size_t num_mods;
static int *removed;		/* ids to send MODULE_REMOVE for */
static size_t num_removed;
static char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
/*
 * The queue changed: a datagram on wake_pair[1] wakes the fl-agent thread in
 * poll on wake_pair[0].  A socket pair rather than an eventfd, so that ownfd
 * can tell it from any other (eventfds share one inode), and written with
 * send(), which cannot write into a file the program put at that number.
 */
static struct fl_ownfd wake_pair[2] = { FL_OWNFD_NONE, FL_OWNFD_NONE };
static struct fl_ownfd sock = FL_OWNFD_NONE;	/* owned by the fl-agent thread */
static uint32_t seq;
static bool started;
/* Registered: WELCOME came on the connection in sock (read at exit). */
static _Atomic bool welcomed;
static size_t num_unsent_removed;
/* Modules kept for an ADD and REMOVE at most: a process without a daemon keeps none for ever. */
#define MAX_UNSENT_REMOVED 256
/* The process's name, read in the thread that started the agent. */
static char comm[FL_PROTO_COMM];
static bool warned;
static bool peer_warned;	/* about a daemon of another uid */
static bool sections_warned;	/* about a memfd for the sections */
static bool region_warned;	/* about the region's descriptor */

const char *fl_agent_socket_path(void)
{
	return path;
}

static void amod_free(struct amod *m);

/* Drops a reference; frees the module when it was the last.  Takes lock. */
static void amod_put(struct amod *m)
{
	bool last;

	if (!m)
		return;
	pthread_mutex_lock(&lock);
	last = --m->refs == 0;
	pthread_mutex_unlock(&lock);
	if (last)
		amod_free(m);
}

static void amod_free(struct amod *m)
{
	if (!m)
		return;
	free(m->sections);
	for (uint32_t i = 0; m->names && i < m->num_sites; i++)
		free(m->names[i]);
	free(m->names);
	free(m->name);
	free(m->pcs);
	free(m);
}

/*
 * A sealed memfd holding size bytes, above the descriptor floor: made for
 * one MODULE_ADD and closed once sent.  Returns the fd or -errno.
 */
static int sections_fd(const void *bytes, size_t size)
{
	struct fl_ownfd o;
	int fd, err;

	fd = memfd_create("faultline-sections", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	err = fl_ownfd_adopt(&o, fd);
	if (err)
		return err;
	fd = o.fd;
	if (write(fd, bytes, size) != (ssize_t)size ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL))
		goto fail;
	return fd;
fail:
	err = errno ? -errno : -EIO;
	close(fd);
	return err;
}

static void wake(void)
{
	char one = 1;
	int fd;

	/* Under lock: make_wake_pair may be filling it in. */
	pthread_mutex_lock(&lock);
	fd = fl_ownfd_get(&wake_pair[1]);
	/* Full means already woken. */
	if (fd >= 0)
		(void)!send(fd, &one, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
	pthread_mutex_unlock(&lock);
}

/* Empties the wake socket. */
static void drain_wake(void)
{
	char buf[64];
	int fd = fl_ownfd_get(&wake_pair[0]);

	while (fd >= 0 && recv(fd, buf, sizeof(buf), MSG_DONTWAIT) > 0)
		;
}

void fl_agent_module_added(const struct fl_agent_module *m)
{
	struct amod *a = calloc(1, sizeof(*a));
	struct amod **grown;

	if (!a) {
		free(m->sections);
		return;
	}
	a->refs = 1;
	a->sections = m->sections;
	a->sections_size = m->sections_size;
	a->id = m->id;
	a->name = strdup(m->name ? m->name : "");
	a->code_start = m->code_start;
	a->code_size = m->code_size;
	a->first_counter = m->first_counter;
	a->num_sites = m->num_sites;
	a->pcs = calloc(m->num_sites ? m->num_sites : 1, sizeof(*a->pcs));
	a->faultmap_size = m->faultmap_size;
	a->stackmap_size = m->stackmap_size;
	a->sm_functions = m->sm_functions;
	if (!a->name || !a->pcs) {
		amod_free(a);
		return;
	}
	for (uint32_t i = 0; i < m->num_sites; i++)
		a->pcs[i] = m->sites[i].faulting_pc;
	if (m->names) {
		a->names = calloc(m->num_sites ? m->num_sites : 1, sizeof(*a->names));
		for (uint32_t i = 0; a->names && i < m->num_sites; i++)
			a->names[i] = m->names[i] ? strdup(m->names[i]) : NULL;
	}

	pthread_mutex_lock(&lock);
	grown = realloc(mods, (num_mods + 1) * sizeof(*mods));
	if (grown) {
		mods = grown;
		mods[num_mods++] = a;
		a = NULL;
	}
	pthread_mutex_unlock(&lock);
	amod_free(a);
	wake();
}

void fl_agent_module_removed(int id)
{
	struct amod *gone = NULL;
	bool was_sent = false;

	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < num_mods; i++) {
		if (mods[i]->id == id) {
			if (!mods[i]->sent && !mods[i]->removed &&
			    num_unsent_removed < MAX_UNSENT_REMOVED) {
				/* Sent all the same, then its removal (flush). */
				mods[i]->removed = true;
				num_unsent_removed++;
				break;
			}
			gone = mods[i];
			was_sent = gone->sent;
			memmove(&mods[i], &mods[i + 1], (num_mods - i - 1) * sizeof(*mods));
			num_mods--;
			break;
		}
	}
	if (was_sent) {
		int *grown = realloc(removed, (num_removed + 1) * sizeof(*removed));

		if (grown) {
			removed = grown;
			removed[num_removed++] = id;
		}
	}
	pthread_mutex_unlock(&lock);
	amod_put(gone);
	wake();
}

/* ------------------------------------------------------------------------
 * The connection
 */

/*
 * The counters' region, to hand to the daemon: its descriptor, or -1 (said
 * once) when there is none: no memfd could be made, or the program closed
 * or reused it.  Then the process cannot register again.
 */
static int region_fd_or_say(void)
{
	int fd = fl_counters_fd();

	if (fd < 0 && !region_warned) {
		region_warned = true;
		fl_log(FL_LOG_WARN, "the counters' region has no descriptor (no memfd, or the "
		       "program closed or reused it): not registering with faultlined");
	}
	return fd;
}

static int send_hello(int fd, uint32_t flags)
{
	struct fl_msg_hello h;
	struct fl_shm_layout l;
	int region_fd = region_fd_or_say();

	if (region_fd < 0)
		return -EBADF;
	memset(&h, 0, sizeof(h));
	fl_counters_region(&l);
	fl_proto_header(&h, FL_MSG_HELLO, sizeof(h), ++seq);
	h.pid = (uint32_t)getpid();
	h.flags = flags | FL_HELLO_SYNC;
	h.region_size = l.size;
	memcpy(h.comm, comm, sizeof(h.comm));
	h.comm[FL_PROTO_COMM - 1] = 0;
	return fl_proto_send(fd, &h, sizeof(h), &region_fd, 1, 0);
}

static int send_module(int fd, struct amod *m)
{
	char buf[sizeof(struct fl_msg_module_add) + FL_PROTO_MAX_NAME];
	struct fl_msg_module_add a;
	size_t name_len = strlen(m->name);
	size_t len;
	int err, sfd;

	if (name_len > FL_PROTO_MAX_NAME)
		name_len = FL_PROTO_MAX_NAME;
	len = sizeof(a) + name_len;
	memset(&a, 0, sizeof(a));
	fl_proto_header(&a, FL_MSG_MODULE_ADD, len, ++seq);
	a.module = (uint32_t)m->id;
	a.code_start = m->code_start;
	a.code_size = m->code_size;
	a.first_counter = m->first_counter;
	a.num_sites = m->num_sites;
	a.faultmap_size = m->faultmap_size;
	a.stackmap_size = m->stackmap_size;
	a.sm_functions = m->sm_functions;
	a.name_len = (uint32_t)name_len;
	memcpy(buf, &a, sizeof(a));
	memcpy(buf + sizeof(a), m->name, name_len);
	sfd = m->sections ? sections_fd(m->sections, m->sections_size) : -1;
	if (sfd < 0 && m->sections) {
		/* The daemon does without them; the sizes say there are none. */
		if (!sections_warned) {
			sections_warned = true;
			fl_log(FL_LOG_WARN, "%s: no memfd for its sections (%s): faultlined gets "
			       "its sites without stack maps", m->name, strerror(-sfd));
		}
		a.faultmap_size = a.stackmap_size = a.sm_functions = 0;
		memcpy(buf, &a, sizeof(a));
	}
	err = fl_proto_send(fd, buf, len, &sfd, sfd >= 0 ? 1 : 0, 0);
	if (sfd >= 0)
		close(sfd);
	if (err)
		return err;
	return fl_agent_send_symbols(fd, (uint32_t)m->id, m->pcs,
				     (const char *const *)m->names, m->num_sites, &seq);
}

static int send_remove(int fd, int id)
{
	struct fl_msg_module_remove r;

	memset(&r, 0, sizeof(r));
	fl_proto_header(&r, FL_MSG_MODULE_REMOVE, sizeof(r), ++seq);
	r.module = (uint32_t)id;
	return fl_proto_send(fd, &r, sizeof(r), NULL, 0, 0);
}

/* Takes m, sent with its removal, off the list.  Under lock. */
static void drop_removed(struct amod *m)
{
	for (size_t i = 0; i < num_mods; i++) {
		if (mods[i] == m) {
			memmove(&mods[i], &mods[i + 1], (num_mods - i - 1) * sizeof(*mods));
			num_mods--;
			num_unsent_removed--;
			m->refs--;	/* the list's; flush holds one */
			return;
		}
	}
}

/*
 * Sends what is queued: removals, then modules not yet sent (and the
 * removal of those unregistered meanwhile).  Sending happens without the
 * lock, holding a reference (a module removed meanwhile gets its
 * MODULE_REMOVE on the next round, as it was marked sent).
 */
static int flush(int fd)
{
	for (;;) {
		struct amod *m = NULL;
		int id = 0, err;

		pthread_mutex_lock(&lock);
		if (num_removed) {
			id = removed[--num_removed];
		} else {
			for (size_t i = 0; i < num_mods && !m; i++) {
				if (!mods[i]->sent) {
					m = mods[i];
					m->sent = true;
					m->refs++;
				}
			}
		}
		pthread_mutex_unlock(&lock);

		if (id)
			err = send_remove(fd, id);
		else if (m)
			err = send_module(fd, m);
		else
			return 0;
		if (!err && m && m->removed) {
			err = send_remove(fd, m->id);
			pthread_mutex_lock(&lock);
			if (!err)
				drop_removed(m);
			pthread_mutex_unlock(&lock);
		}
		amod_put(m);
		if (err)
			return err;
	}
}

/* Marks every module unsent and forgets removals: a new connection. */
static void reset_sent(void)
{
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < num_mods; i++)
		mods[i]->sent = false;
	num_removed = 0;
	pthread_mutex_unlock(&lock);
}

/*
 * SYNC, and waits up to timeout_ms for its REPLY: the daemon has handled
 * the modules sent before it (its eBPF program knows their faulting PCs).
 * Returns 0 or -errno.
 */
static int sync_daemon(int fd, int timeout_ms)
{
	struct fl_msg_sync s;
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char buf[256];
	struct fl_msg m;
	uint32_t want;
	ssize_t n;
	int err;

	memset(&s, 0, sizeof(s));
	want = ++seq;
	fl_proto_header(&s, FL_MSG_SYNC, sizeof(s), want);
	err = fl_proto_send(fd, &s, sizeof(s), NULL, 0, 0);
	if (err)
		return err;
	if (poll(&p, 1, timeout_ms) != 1)
		return -ETIMEDOUT;
	n = recv(fd, buf, sizeof(buf), 0);
	if (n <= 0)
		return n < 0 ? -errno : -ECONNRESET;
	err = fl_proto_decode(buf, (size_t)n, 0, &m, NULL);
	if (err)
		return err;
	if (m.type == FL_MSG_ERROR)
		return m.error.err;
	return m.type == FL_MSG_REPLY && m.seq == want ? 0 : -EPROTO;
}

/* How long a send in the fl-agent thread waits for a busy daemon. */
#define BACKGROUND_SEND_S 10

/*
 * Connects and registers: HELLO (with hello_flags), WELCOME (waited for up
 * to timeout_ms), then every module.  Returns the socket, or -errno.
 */
static int connect_and_register(int timeout_ms, uint32_t hello_flags)
{
	struct timeval tv = { timeout_ms / 1000, (timeout_ms % 1000) * 1000 };
	struct fl_ownfd moved;
	struct pollfd p;
	char buf[256];
	struct fl_msg m;
	uint32_t uid = 0;
	ssize_t n;
	int fd, err;

	if (!path[0])
		return -ENOENT;
	/* Never blocks: a stopped daemon, or one whose backlog is full, is -EAGAIN. */
	fd = fl_proto_connect(path, &uid);
	if (fd == -EPERM) {
		if (!peer_warned) {
			peer_warned = true;
			fl_log(FL_LOG_WARN, "%s is served by uid %u, neither root nor this "
			       "process's uid %u: not registering with it", path, uid,
			       (unsigned)geteuid());
		}
		return fd;
	}
	if (fd < 0)
		return fd;
	/* Up at faultline's numbers (the caller adopts it once registered). */
	err = fl_ownfd_adopt(&moved, fd);
	if (err)
		return err;
	fd = moved.fd;
	/*
	 * Sends block again, for a while: the daemon reads a connection's
	 * messages ten at a time (the socket's queue), so a burst of modules
	 * must wait for it; but never longer than timeout_ms a message.
	 */
	if (fcntl(fd, F_SETFL, 0) != 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) != 0) {
		err = -errno;
		goto fail;
	}
	err = send_hello(fd, hello_flags);
	/*
	 * The modules right behind it, before WELCOME: a process that exits
	 * before the daemon answers (a daemon stopped, or restarting) has them
	 * read with its HELLO, names and all.
	 */
	if (!err) {
		reset_sent();
		err = flush(fd);
	}
	if (err)
		goto fail;
	p = (struct pollfd){ .fd = fd, .events = POLLIN };
	if (poll(&p, 1, timeout_ms) != 1) {
		err = -ETIMEDOUT;
		goto fail;
	}
	n = recv(fd, buf, sizeof(buf), 0);
	if (n <= 0) {
		err = n < 0 ? -errno : -ECONNRESET;
		goto fail;
	}
	err = fl_proto_decode(buf, (size_t)n, 0, &m, NULL);
	if (err)
		goto fail;
	if (m.type != FL_MSG_WELCOME) {
		if (m.type == FL_MSG_ERROR)
			fl_log(FL_LOG_WARN, "faultlined refused the registration: %.*s",
			       (int)m.error.len, m.text);
		err = m.type == FL_MSG_ERROR ? m.error.err : -EPROTO;
		goto fail;
	}
	/* What changed while WELCOME was awaited. */
	err = flush(fd);
	if (!err && (hello_flags & FL_HELLO_FIRST) && (m.welcome.flags & FL_WELCOME_BPF))
		err = sync_daemon(fd, timeout_ms);
	/* From now on in the fl-agent thread: a busy daemon is waited for longer. */
	tv = (struct timeval){ BACKGROUND_SEND_S, 0 };
	if (!err && setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) != 0)
		err = -errno;
	if (err)
		goto fail;
	fl_log(FL_LOG_INFO, "registered with faultlined at %s", path);
	return fd;
fail:
	close(fd);
	return err;
}

/* Reads what the daemon sends; returns -errno when the connection is gone. */
static int read_daemon(int fd)
{
	char buf[FL_PROTO_MAX_MESSAGE];
	struct fl_msg m;
	struct fl_diag d;
	ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);

	if (n == 0)
		return -ECONNRESET;
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -errno;
	if (fl_proto_decode(buf, (size_t)n, 0, &m, &d) != 0) {
		fl_log(FL_LOG_WARN, "faultlined: %s; disconnecting", d.msg);
		return -EPROTO;
	}
	if (m.type == FL_MSG_ERROR)
		fl_log(FL_LOG_WARN, "faultlined: %.*s", (int)m.error.len, m.text);
	return 0;
}

/* Waits ms, doubling *backoff_ms up to a second. */
static void back_off(int *backoff_ms)
{
	struct timespec ts = { *backoff_ms / 1000, (*backoff_ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
	if (*backoff_ms < 1000)
		*backoff_ms *= 2;
}

/*
 * How often the fl-agent thread looks at its descriptors when nothing
 * happens: a program that closed them while the thread waited on them does
 * not wake it.
 */
#define CHECK_FDS_MS 5000

static void *agent_thread(void *arg)
{
	int backoff_ms = 50;
	time_t connected_at = 0;
	bool wake_lost = false, lost_to_program = false;

	(void)arg;
	for (;;) {
		struct pollfd p[2];
		bool had_sock = sock.fd >= 0;
		int fd = fl_ownfd_get(&sock), wfd = fl_ownfd_get(&wake_pair[0]);

		if (wfd < 0 && !wake_lost) {
			wake_lost = true;
			fl_log(FL_LOG_WARN, "the program closed or reused faultline's wake-up "
			       "descriptor: module changes reach faultlined within a second");
		}
		if ((had_sock && fd < 0) || lost_to_program)
			fl_log(FL_LOG_WARN, "the program closed or reused faultline's connection "
			       "to faultlined: registering again");
		lost_to_program = false;
		if (fd < 0 && region_fd_or_say() < 0)
			return NULL;	/* nothing to register with, for good */
		if (fd < 0) {
			/*
			 * In the background: a daemon slow to answer (busy with
			 * many registrations) is waited for, rather than left
			 * and asked again, which only adds to its work.
			 */
			fd = connect_and_register(10000, 0);
			if (fd < 0) {
				if (!warned && fd != -ENOENT && fd != -ECONNREFUSED &&
				    fd != -EPERM && fd != -EBADF) {
					warned = true;
					fl_log(FL_LOG_INFO, "faultlined at %s: %s; retrying", path,
					       strerror(-fd));
				}
				back_off(&backoff_ms);
				/* Queued changes go with the next registration. */
				drain_wake();
				continue;
			}
			if (fl_ownfd_adopt(&sock, fd) != 0)
				continue;
			atomic_store(&welcomed, true);
			connected_at = time(NULL);
		}
		p[0] = (struct pollfd){ .fd = sock.fd, .events = POLLIN };
		p[1] = (struct pollfd){ .fd = wfd, .events = POLLIN };
		if (poll(p, 2, wfd >= 0 ? CHECK_FDS_MS : 1000) < 0)
			continue;
		if (p[1].revents & POLLIN)
			drain_wake();
		fd = fl_ownfd_get(&sock);
		if (fd < 0 || (p[0].revents & POLLNVAL)) {
			/* The program's doing: said next round, the descriptor forgotten. */
			lost_to_program = true;
			sock = FL_OWNFD_NONE;
			atomic_store(&welcomed, false);
			continue;
		}
		if ((p[0].revents & (POLLIN | POLLHUP | POLLERR) && read_daemon(fd) < 0) ||
		    flush(fd) < 0) {
			fl_log(FL_LOG_INFO, "lost faultlined at %s; reconnecting", path);
			fl_ownfd_close(&sock);
			atomic_store(&welcomed, false);
			/* A daemon that drops us at once is not hammered. */
			if (time(NULL) - connected_at >= 10)
				backoff_ms = 50;
			else
				back_off(&backoff_ms);
		}
	}
	return NULL;
}

int fl_agent_thread_start(void *(*fn)(void *), const char *name, size_t stack)
{
	pthread_attr_t attr;
	sigset_t all, old;
	pthread_t t;
	int err;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, stack);
	err = pthread_create(&t, &attr, fn, NULL);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err)
		return -err;
	pthread_setname_np(t, name);
	return 0;
}

static void read_comm(void)
{
	if (prctl(PR_GET_NAME, comm) != 0)
		memcpy(comm, "?", 2);
	comm[sizeof(comm) - 1] = 0;
}

static void resolve_path(const char *given)
{
	const char *env = getenv("FAULTLINE_SOCKET");
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	int n;

	if (given)
		n = fl_fmt(path, sizeof(path), "%s", given);
	else if (env && *env)
		n = fl_fmt(path, sizeof(path), "%s", env);
	else if (geteuid() == 0)
		n = fl_fmt(path, sizeof(path), "/run/faultline/faultlined.sock");
	else if (xdg && *xdg)
		n = fl_fmt(path, sizeof(path), "%s/faultline/faultlined.sock", xdg);
	else
		n = -1;
	if (n < 0 || (size_t)n >= sizeof(path))
		path[0] = 0;
}

/* The wake-up socket pair; none when it cannot be made. */
static void make_wake_pair(void)
{
	struct fl_ownfd pair[2];
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) != 0)
		return;
	if (fl_ownfd_adopt(&pair[0], sv[0]) != 0) {
		close(sv[1]);
		return;
	}
	if (fl_ownfd_adopt(&pair[1], sv[1]) != 0) {
		fl_ownfd_close(&pair[0]);
		return;
	}
	/* Published whole: wake() reads it under the same lock. */
	pthread_mutex_lock(&lock);
	wake_pair[0] = pair[0];
	wake_pair[1] = pair[1];
	pthread_mutex_unlock(&lock);
}

/*
 * fork: the lock is held across it, so that the child never inherits it
 * locked by a thread it does not have (a registry thread adding a module
 * at that moment hung the child in reset_sent).
 */
static void fork_prepare(void)
{
	pthread_mutex_lock(&lock);
}

static void fork_parent(void)
{
	pthread_mutex_unlock(&lock);
}

static void fork_child(void)
{
	pthread_mutex_unlock(&lock);
	if (!started)
		return;
	/*
	 * The parent's connection, wake-up pair and threads are not ours
	 * (closed only where they are still faultline's: the program may
	 * have closed or reused the numbers).
	 */
	fl_ownfd_close(&sock);
	fl_ownfd_close(&wake_pair[0]);
	fl_ownfd_close(&wake_pair[1]);
	atomic_store(&welcomed, false);
	if (fl_counters_fork_child() != 0)
		return;
	make_wake_pair();
	read_comm();
	reset_sent();
	/* As at start: registered before fork returns, when a daemon answers. */
	{
		/* One thread, and its counts start from zero: the first. */
		int fd = connect_and_register(200, FL_HELLO_FIRST);

		if (fd >= 0 && fl_ownfd_adopt(&sock, fd) == 0)
			atomic_store(&welcomed, true);
	}
	if (fl_agent_thread_start(agent_thread, "fl-agent", 256 * 1024) == 0)
		fl_agent_requests_start();
}

static uint32_t first_hello_flags(void)
{
	struct fl_stats st = { .sz = sizeof(st) };

	return fl_stats_get(&st) == 0 && st.claimed == 0 ? FL_HELLO_FIRST : 0;
}

int fl_agent_start(const char *given)
{
	int fd, err;

	resolve_path(given);
	read_comm();
	/* Without it the agent looks for changes every second. */
	make_wake_pair();
	/*
	 * Synchronous first try: a short-lived process is counted too.  It is
	 * the first registration if no other thread has dispatched a fault yet.
	 */
	fd = connect_and_register(1000, first_hello_flags());
	if (fd >= 0 && fl_ownfd_adopt(&sock, fd) == 0)
		atomic_store(&welcomed, true);
	started = true;
	pthread_atfork(fork_prepare, fork_parent, fork_child);
	err = fl_agent_thread_start(agent_thread, "fl-agent", 256 * 1024);
	if (err)
		return err;
	return fl_agent_requests_start();
}

/*
 * At exit, a process whose registration did not go through (the daemon
 * was killed while reading it, or is stopped, or the agent waits to try
 * again) sends its HELLO and modules once more, and a registered one whose
 * agent has not sent everything yet (a JIT module unregistered just before
 * exit) sends what is left: on a connection of their own, without waiting
 * for anything (a socket without room takes nothing).  Whoever listens,
 * the daemon or its keeper, gets the region with the final counts, and
 * the daemon the names.
 */
static void __attribute__((destructor)) agent_at_exit(void)
{
	bool registered = atomic_load(&welcomed), queued;
	uint32_t uid;
	int fd;

	if (!started || !path[0])
		return;
	pthread_mutex_lock(&lock);
	queued = num_removed > 0;
	for (size_t i = 0; i < num_mods && !queued; i++)
		queued = !mods[i]->sent;
	pthread_mutex_unlock(&lock);
	if (registered && !queued)
		return;
	fd = fl_proto_connect(path, &uid);
	if (fd < 0)
		return;
	if (send_hello(fd, 0) == 0) {
		if (!registered)
			reset_sent();
		flush(fd);
	}
	/*
	 * Left open: it closes when the process is gone, which the daemon
	 * then knows from the hangup (closed now, the process would look alive).
	 */
}
