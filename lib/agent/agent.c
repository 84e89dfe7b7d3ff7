/* SPDX-License-Identifier: MIT */
/*
 * The agent's connection: registration with faultlined, module updates,
 * reconnection after a daemon restart, and a fresh registration in a
 * forked child.  See agent.h.
 *
 * State: the list of modules (copies) and a queue of changes not yet sent,
 * under lock.  The table calls in (the agent is its observer,
 * fl_table_observe) with its own lock held (order: the table's locks,
 * then this lock); nothing here calls back into the table from there.
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
#include "core/env.h"
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
	uint32_t *offsets;	/* per named site, the PC's in its function, or NULL */
	/* A loaded module's file, which names its sites (name_once), or NULL. */
	char *path;
	uint64_t bias;		/* MODULE_ADD's base */
	bool has_bias;
	bool name_tried;	/* name_once ran: names is what the file gave */
	void *sections;		/* agent.h; or NULL */
	size_t sections_size;
	uint32_t faultmap_size;
	uint32_t stackmap_size;
	uint32_t sm_functions;
	bool sent;		/* MODULE_ADD sent on the current connection */
	bool named;		/* and its SYMBOLS */
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
/*
 * Modules unregistered after their MODULE_ADD went, each with the list's
 * reference, kept while their slots hold final counts the daemon has not
 * saved (fl_counters_unsaved): a daemon killed before its record held them
 * knows nothing of them when the process registers again, so the next
 * connection sends them again, MODULE_ADD then MODULE_REMOVE, as a module
 * unregistered before its MODULE_ADD went (reset_sent).  At most
 * MAX_UNSENT_REMOVED; the oldest are let go first.
 */
static struct amod **retiring;
static size_t num_retiring;
/*
 * The queue changed: a datagram on wake_pair[1] wakes the fl-agent thread in
 * poll on wake_pair[0].  A socket pair rather than an eventfd, so that ownfd
 * can tell it from any other (eventfds share one inode), and written with
 * send(), which cannot write into a file the program put at that number.
 */
static struct fl_ownfd wake_pair[2] = { FL_OWNFD_NONE, FL_OWNFD_NONE };
/*
 * The connection: the fl-agent thread connects, reads and closes it; the
 * fl-requests thread sends DONE on it (fl_agent_ring_done).  Both reach
 * the struct under lock only (sock_get, sock_adopt, sock_close), so that
 * the number is never closed, or reused for the next connection, while
 * the other sends on it.  A send of the fl-agent thread's own goes on the
 * number sock_get returned without the lock: it is the only one that
 * closes.
 */
static struct fl_ownfd sock = FL_OWNFD_NONE;
static uint32_t seq;
static bool started;
/* The fl-agent thread was started (fl_agent_scanning). */
static _Atomic bool thread_runs;
/* fl_agent_allow_patch: read by the request thread (started after it is set). */
static _Atomic bool patch_allowed;
/*
 * Registered: the daemon answered the HELLO on the connection in sock with
 * WELCOME (read at exit).  Not when the HELLO only went: the daemon hands
 * the region to its keeper before it answers, so only a WELCOME says the
 * final counts outlive a daemon killed now (keeper.h).
 */
static _Atomic bool welcomed;
static size_t num_unsent_removed;
/* Modules kept for an ADD and REMOVE at most: a process without a daemon keeps none for ever. */
#define MAX_UNSENT_REMOVED 256
/* The process's name, read in the thread that started the agent. */
static char comm[FL_PROTO_COMM];
static bool warned;
static bool sections_warned;	/* about a memfd for the sections */
static bool region_warned;	/* about the region's descriptor */
static bool wake_made;		/* the wake-up pair was made once */
/*
 * Whether the process is dumpable, as the daemon on sock was last told
 * (its HELLO's FL_HELLO_DUMPABLE, then DUMPABLE messages): under lock.
 * hello_dumpable: what the HELLO of the registration under way said,
 * handed to sock_adopt by connect_and_register's callers (which never run
 * at once: fl_init's thread before the fl-agent thread starts, that
 * thread, a forked child before its threads start).
 */
static bool told_dumpable;
static bool hello_dumpable;

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
	free(m->offsets);
	free(m->path);
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

/* sock's descriptor while it is still faultline's, else -1 (forgotten).  Takes lock. */
static int sock_get(void)
{
	int fd;

	pthread_mutex_lock(&lock);
	fd = fl_ownfd_get(&sock);
	pthread_mutex_unlock(&lock);
	return fd;
}

/*
 * DONE on sock, never waiting and never under a send timeout: a socket
 * without room (a daemon that is behind) takes nothing.  Returns 0 or
 * -errno (-ENOTCONN: no connection).  Under lock.
 */
static int send_done_locked(uint32_t completion_seq)
{
	struct fl_msg_done m;
	int fd = fl_ownfd_get(&sock);

	fl_proto_header(&m, FL_MSG_DONE, sizeof(m), completion_seq);
	return fd < 0 ? -ENOTCONN : fl_proto_send(fd, &m, sizeof(m), NULL, 0, MSG_DONTWAIT);
}

/* The region's completion bell, or NULL: no region. */
static _Atomic uint32_t *bell(void)
{
	struct fl_shm_layout l;
	struct fl_shm_header *h = fl_counters_region(&l);

	return h ? &h->completion_bell : NULL;
}

void fl_agent_ring_done(uint32_t completion_seq)
{
	_Atomic uint32_t *b = bell();

	pthread_mutex_lock(&lock);
	/*
	 * Not sent: the bell is set again under lock, so that either this
	 * comes before sock_adopt, which then sends it on the new connection,
	 * or after it, and the send here went on that connection.
	 */
	if (send_done_locked(completion_seq) != 0 && b)
		fl_shm_bell_set(b);
	pthread_mutex_unlock(&lock);
}

/*
 * Whether the process is dumpable (PR_GET_DUMPABLE 1, SUID_DUMP_USER):
 * what ptrace asks of a process its owner traces, and what the daemon
 * asks of one it serves to a requester other than root.  The kernel
 * clears it when a set-id program starts and when the program changes its
 * ids, and the program may change it itself; nothing tells the process,
 * so the agent looks (fl_agent_dumpable_check).
 */
static bool dumpable_now(void)
{
	return prctl(PR_GET_DUMPABLE) == 1;
}

/*
 * DUMPABLE on sock when the process's dumpability is not what the daemon
 * was told, never waiting (a socket without room takes nothing: told
 * again at the next look).  Under lock.
 */
static void report_dumpable_locked(void)
{
	struct fl_msg_dumpable m;
	bool now = dumpable_now();
	int fd = fl_ownfd_get(&sock);

	if (fd < 0 || now == told_dumpable)
		return;
	memset(&m, 0, sizeof(m));
	fl_proto_header(&m, FL_MSG_DUMPABLE, sizeof(m), 0);
	m.dumpable = now;
	if (fl_proto_send(fd, &m, sizeof(m), NULL, 0, MSG_DONTWAIT) == 0)
		told_dumpable = now;
}

void fl_agent_dumpable_check(void)
{
	pthread_mutex_lock(&lock);
	report_dumpable_locked();
	pthread_mutex_unlock(&lock);
}

/*
 * Makes fd (a connection just registered) the connection, and sends on it
 * the DONE the fl-requests thread could not send meanwhile (the bell left
 * set: fl_agent_ring_done), so that a completion pushed while this thread
 * connected is answered at once.  (A bell the daemon has just set for a
 * request still running costs a DONE early: the daemon sets it again,
 * and the completion rings it.)  Returns fd's number (moved above the
 * floor), or -errno and fd is closed.  Takes lock.
 */
static int sock_adopt(int fd)
{
	_Atomic uint32_t *b = bell();
	struct fl_ownfd o;
	int err = fl_ownfd_adopt(&o, fd);

	if (err)
		return err;
	pthread_mutex_lock(&lock);
	sock = o;
	if (b && fl_shm_bell_take(b) && send_done_locked(0) != 0)
		fl_shm_bell_set(b);
	/* A change since the HELLO went, told on this connection. */
	told_dumpable = hello_dumpable;
	report_dumpable_locked();
	pthread_mutex_unlock(&lock);
	return o.fd;
}

/* Closes the connection if it is still faultline's (forget: only forgets it).  Takes lock. */
static void sock_close(bool forget)
{
	pthread_mutex_lock(&lock);
	if (forget)
		sock = FL_OWNFD_NONE;
	else
		fl_ownfd_close(&sock);
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

/*
 * The table published m: queued for the daemon, with the sections and names
 * in data.  A module without sites (stack map records only) is not the
 * daemon's: MODULE_ADD is about counters and sites.
 */
static void module_added(const struct fl_table_module *m, void *data)
{
	struct fl_agent_extra *x = data;
	struct amod *a;
	struct amod **grown;

	/* Sites, or stack map records (the daemon's stackmaps queries) to send. */
	if ((!m->num_sites && !(x && x->stackmap_size)) || !(a = calloc(1, sizeof(*a)))) {
		fl_agent_module_discard(x);
		return;
	}
	a->refs = 1;
	if (x) {
		/* Taken over: the sections and the names. */
		a->sections = x->sections;
		a->sections_size = x->sections_size;
		a->faultmap_size = x->faultmap_size;
		a->stackmap_size = x->stackmap_size;
		a->sm_functions = x->sm_functions;
		if (x->names && x->num_names == m->num_sites) {
			a->names = x->names;
			a->offsets = x->offsets;
			x->names = NULL;
			x->offsets = NULL;
		}
		a->path = x->path;
		a->bias = x->bias;
		a->has_bias = true;
		/* The main program by its file: the loader gives it no name. */
		a->name = x->exe;
		x->path = NULL;
		x->exe = NULL;
		x->sections = NULL;
		fl_agent_module_discard(x);
	}
	a->id = m->id;
	if (!a->name)
		a->name = strdup(m->name ? m->name : "");
	a->code_start = m->code_start;
	a->code_size = m->code_size;
	a->first_counter = m->first_counter;
	a->num_sites = m->num_sites;
	a->pcs = calloc(m->num_sites ? m->num_sites : 1, sizeof(*a->pcs));
	if (!a->name || !a->pcs) {
		amod_free(a);
		return;
	}
	for (uint32_t i = 0; i < m->num_sites; i++)
		a->pcs[i] = m->sites[i].faulting_pc;

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

/* A MODULE_REMOVE to send, under lock. */
static void queue_removal(int id)
{
	int *grown = realloc(removed, (num_removed + 1) * sizeof(*removed));

	if (grown) {
		removed = grown;
		removed[num_removed++] = id;
	}
}

/*
 * m's MODULE_ADD did not go after all: m is unsent again.  If m was
 * unregistered meanwhile (taken off the list, its MODULE_REMOVE queued, as
 * it was marked sent), it goes back on the list as module_removed
 * would have left it unsent: to be sent with its removal, its counts
 * saved.  Under lock.
 */
static void unsend(struct amod *m)
{
	struct amod **grown;

	m->sent = false;
	for (size_t i = 0; i < num_mods; i++)
		if (mods[i] == m)
			return;
	for (size_t i = 0; i < num_removed; i++) {
		if (removed[i] == m->id) {
			removed[i] = removed[--num_removed];
			break;
		}
	}
	if (num_unsent_removed >= MAX_UNSENT_REMOVED)
		return;
	grown = realloc(mods, (num_mods + 1) * sizeof(*mods));
	if (!grown)
		return;
	mods = grown;
	mods[num_mods++] = m;
	m->refs++;		/* the list's again */
	m->removed = true;
	num_unsent_removed++;
}

/*
 * Takes the ones of retiring whose counts the daemon has saved off it (or
 * the oldest, when keep is under their number) into *drop, for amod_put
 * after the lock.  Returns how many went there.  Under lock.
 */
static size_t prune_retiring(size_t keep, struct amod **drop)
{
	size_t kept = 0, n = 0;

	for (size_t i = 0; i < num_retiring; i++) {
		struct amod *m = retiring[i];

		if (fl_counters_unsaved(m->first_counter, m->num_sites, (uint32_t)m->id) &&
		    num_retiring - i <= keep - kept)
			retiring[kept++] = m;
		else
			drop[n++] = m;
	}
	num_retiring = kept;
	return n;
}

/* The table unpublished module id. */
static void module_removed(int id)
{
	struct amod *gone = NULL, *drop[MAX_UNSENT_REMOVED + 1];
	size_t num_drop = 0;
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
		queue_removal(id);
		if (!retiring)
			retiring = calloc(MAX_UNSENT_REMOVED, sizeof(*retiring));
		if (retiring) {
			/* Its counts are final now: kept until the daemon saves them. */
			num_drop = prune_retiring(MAX_UNSENT_REMOVED - 1, drop);
			retiring[num_retiring++] = gone;
			gone = NULL;
		}
	}
	pthread_mutex_unlock(&lock);
	amod_put(gone);
	for (size_t i = 0; i < num_drop; i++)
		amod_put(drop[i]);
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

void fl_agent_allow_patch(void)
{
	atomic_store_explicit(&patch_allowed, true, memory_order_relaxed);
}

bool fl_agent_patch_allowed(void)
{
	/* Set once, before the threads start (their creation orders it). */
	return atomic_load_explicit(&patch_allowed, memory_order_relaxed);
}

/* HELLO; *dumpable: whether it said the process is dumpable. */
static int send_hello(int fd, uint32_t flags, bool *dumpable)
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
	*dumpable = dumpable_now();
	h.flags = flags | FL_HELLO_SYNC | FL_HELLO_DONE | FL_HELLO_DUMP |
		  (*dumpable ? FL_HELLO_DUMPABLE : 0) |
		  (fl_agent_patch_allowed() ? FL_HELLO_ALLOW_PATCH : 0);
	h.region_size = l.size;
	memcpy(h.comm, comm, sizeof(h.comm));
	h.comm[FL_PROTO_COMM - 1] = 0;
	return fl_proto_send(fd, &h, sizeof(h), &region_fd, 1, 0);
}

/*
 * MODULE_ADD.  Returns 0, -EAGAIN when the socket's send timeout passed
 * (nothing was sent: the socket is SOCK_SEQPACKET), or -errno.
 */
static int send_add(int fd, struct amod *m)
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
	if (m->has_bias) {
		a.flags = FL_MODULE_BASE;
		a.base = m->bias;
	}
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
	return err == -EWOULDBLOCK ? -EAGAIN : err;
}

static int send_remove(int fd, int id)
{
	struct fl_msg_module_remove r;
	int err;

	memset(&r, 0, sizeof(r));
	fl_proto_header(&r, FL_MSG_MODULE_REMOVE, sizeof(r), ++seq);
	r.module = (uint32_t)id;
	err = fl_proto_send(fd, &r, sizeof(r), NULL, 0, 0);
	return err == -EWOULDBLOCK ? -EAGAIN : err;
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
 * How long fl_init waits for faultlined by default, in milliseconds
 * (FAULTLINE_REGISTER_WAIT_MS sets it): a daemon that answers takes about
 * a millisecond for the whole handshake; one that is stopped, slow, or
 * never accepts costs the program this much at most, and the registration
 * goes on in the fl-agent thread.  A forked child waits as long.
 */
#define REGISTER_WAIT_MS 10
#define REGISTER_WAIT_MAX_MS 600000
static int register_wait_ms = REGISTER_WAIT_MS;
/*
 * How long an exit waits for the first rescan the fl-agent thread still
 * runs, and then for that thread to send what it queued.
 */
#define EXIT_SCAN_WAIT_MS 5000
#define EXIT_SEND_WAIT_MS 2000

/* How long a send in the fl-agent thread waits for a busy daemon. */
#define BACKGROUND_SEND_S 10

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Lets each send on fd wait until deadline (a millisecond at least). */
static int send_until(int fd, int64_t deadline)
{
	int64_t left = deadline - mono_ms();
	struct timeval tv;

	if (left < 1)
		left = 1;
	tv = (struct timeval){ (time_t)(left / 1000), (suseconds_t)(left % 1000) * 1000 };
	return setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) ? -errno : 0;
}

/*
 * Sends what is queued: removals, then MODULE_ADD and SYMBOLS of the
 * modules not yet sent, and the removal of those unregistered before
 * their MODULE_ADD went.  Sending happens without the lock, holding a
 * reference (a module removed meanwhile gets its MODULE_REMOVE on the next
 * round, as it was marked sent).
 *
 * Returns 0 when everything went; -EAGAIN when the socket's send timeout
 * passed, with nothing half sent that a later flush on the same connection
 * would not finish (a module whose MODULE_ADD did not go is unsent again;
 * one whose SYMBOLS did not all go is sent whole again: the daemon takes
 * a site's name as often as it comes); or -errno, and the connection is
 * lost.  With a deadline (monotonic ms; 0: none), no send waits past it:
 * the rest is -EAGAIN.
 */
/*
 * Names m's sites from its file, once (the first SYMBOLS to go for it):
 * off the module's registration, which a million sites' names would slow
 * down.  m is held (a reference).
 */
static void name_once(struct amod *m)
{
	char **names = NULL;
	uint32_t *offsets = NULL;
	bool tried;

	pthread_mutex_lock(&lock);
	tried = m->name_tried || m->names || !m->path;
	pthread_mutex_unlock(&lock);
	if (tried)
		return;
	names = fl_agent_name_sites(m->path, m->bias, m->pcs, m->num_sites, &offsets);
	pthread_mutex_lock(&lock);
	/* At exit, the main thread's flush may have named it meanwhile. */
	if (!m->name_tried && !m->names) {
		m->names = names;
		m->offsets = offsets;
		names = NULL;
		offsets = NULL;
	}
	m->name_tried = true;
	pthread_mutex_unlock(&lock);
	for (uint32_t i = 0; names && i < m->num_sites; i++)
		free(names[i]);
	free(names);
	free(offsets);
}

/*
 * Sends what is queued: removals, MODULE_ADDs, and the SYMBOLS naming the
 * sites, those of names not yet read from a module's file only when names
 * (the registration fl_init waits for sends the sites, and the names it
 * has, e.g. in a forked child; the fl-agent thread reads the others).
 */
static int flush(int fd, int64_t deadline, bool names)
{
	for (;;) {
		struct amod *m = NULL;
		bool add = false, name = false;
		int id = 0, err;

		if (deadline && mono_ms() >= deadline)
			return -EAGAIN;
		if (deadline && (err = send_until(fd, deadline)) != 0)
			return err;
		pthread_mutex_lock(&lock);
		if (num_removed) {
			id = removed[--num_removed];
		} else {
			for (size_t i = 0; i < num_mods && !m; i++) {
				bool nameable = names || mods[i]->names || !mods[i]->path ||
						mods[i]->name_tried;

				if (!mods[i]->sent || (nameable && !mods[i]->named) || mods[i]->removed) {
					m = mods[i];
					add = !m->sent;
					name = nameable && !m->named;
					m->sent = true;
					m->refs++;
				}
			}
		}
		pthread_mutex_unlock(&lock);

		if (id) {
			err = send_remove(fd, id);
			if (err == -EAGAIN) {
				pthread_mutex_lock(&lock);
				queue_removal(id);
				pthread_mutex_unlock(&lock);
			}
		} else if (m) {
			err = add ? send_add(fd, m) : 0;
			if (err == -EAGAIN) {
				pthread_mutex_lock(&lock);
				unsend(m);
				pthread_mutex_unlock(&lock);
			}
			if (!err && name) {
				name_once(m);
				err = fl_agent_send_symbols(fd, (uint32_t)m->id, m->pcs,
							    (const char *const *)m->names,
							    m->offsets, m->num_sites, &seq);
				if (err == -EWOULDBLOCK)
					err = -EAGAIN;
				if (!err) {
					pthread_mutex_lock(&lock);
					m->named = true;
					pthread_mutex_unlock(&lock);
				}
			}
			/* Unregistered before its MODULE_ADD went: now its removal. */
			if (!err && m->removed) {
				err = send_remove(fd, m->id);
				if (!err) {
					pthread_mutex_lock(&lock);
					drop_removed(m);
					pthread_mutex_unlock(&lock);
				}
			}
		} else {
			return 0;
		}
		amod_put(m);
		if (err)
			return err;
	}
}

/*
 * Marks every module unsent and forgets removals: a new connection.  The
 * modules unregistered since their MODULE_ADD went whose counts the daemon
 * has not saved go back on the list as unregistered before it went (both
 * messages again: the daemon may have died before they reached its record).
 */
static void reset_sent(void)
{
	struct amod *drop[MAX_UNSENT_REMOVED];
	size_t num_drop;

	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < num_mods; i++)
		mods[i]->sent = mods[i]->named = false;
	num_removed = 0;
	num_drop = prune_retiring(MAX_UNSENT_REMOVED, drop);
	for (size_t i = 0; i < num_retiring; i++) {
		struct amod *m = retiring[i];
		struct amod **grown = num_unsent_removed < MAX_UNSENT_REMOVED ?
			realloc(mods, (num_mods + 1) * sizeof(*mods)) : NULL;

		if (!grown) {
			drop[num_drop++] = m;
			continue;
		}
		mods = grown;
		mods[num_mods++] = m;	/* with retiring's reference */
		m->sent = m->named = false;
		m->removed = true;
		num_unsent_removed++;
	}
	num_retiring = 0;
	pthread_mutex_unlock(&lock);
	for (size_t i = 0; i < num_drop; i++)
		amod_put(drop[i]);
}

/*
 * The daemon's next message of type want (answering seq, when seq is not
 * 0), received by deadline into buf and *m.  An ERROR that answers
 * something else (a module the daemon refused) is said and skipped.
 * Returns 0, -EAGAIN when the deadline passed, an ERROR's error, or
 * -errno.
 */
static int receive_by(int fd, int64_t deadline, uint16_t want, uint32_t want_seq,
		      char *buf, size_t size, struct fl_msg *m)
{
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int64_t left = deadline - mono_ms();
		ssize_t n;
		int err;

		if (left < 0)
			return -EAGAIN;
		err = poll(&p, 1, (int)left);
		if (err < 0 && errno == EINTR)
			continue;
		if (err <= 0)
			return err < 0 ? -errno : -EAGAIN;
		n = recv(fd, buf, size, MSG_DONTWAIT);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -ECONNRESET;
		err = fl_proto_decode(buf, (size_t)n, 0, m, NULL);
		if (err)
			return err;
		if (m->type == want && (!want_seq || m->seq == want_seq))
			return 0;
		if (m->type != FL_MSG_ERROR)
			return -EPROTO;
		if (m->seq == want_seq || want == FL_MSG_WELCOME) {
			fl_log(FL_LOG_WARN, "faultlined refused the registration: %.*s",
			       (int)m->error.len, m->text);
			return m->error.err < 0 ? m->error.err : -EPROTO;
		}
		fl_log(FL_LOG_WARN, "faultlined: %.*s", (int)m->error.len, m->text);
	}
}

/* A message of only a header (SYNC, COMPLETE); returns its seq or -errno. */
static int64_t send_header(int fd, uint16_t type)
{
	struct fl_msg_header h;
	int err;

	memset(&h, 0, sizeof(h));
	fl_proto_header(&h, type, sizeof(h), ++seq);
	err = fl_proto_send(fd, &h, sizeof(h), NULL, 0, 0);
	if (err)
		return err == -EWOULDBLOCK ? -EAGAIN : err;
	return seq;
}

/*
 * Connects and registers, in this order:
 *   1. connect, without waiting (a stopped daemon, or one whose backlog
 *      is full, is -EAGAIN at once) to a daemon of root or this uid;
 *   2. HELLO with the counters' region, then every module (MODULE_ADD,
 *      SYMBOLS), sent by deadline (monotonic ms): they wait in the socket
 *      however slow the daemon is to read them.  Names not yet read from
 *      a module's file are read now only with names (flush): fl_init
 *      leaves them to the fl-agent thread; a forked child, which may
 *      _exit at once, reads them before fork returns;
 *   3. with wait only (fl_init): WELCOME; and, for a first registration
 *      with a daemon whose eBPF program runs, SYNC and its REPLY (the
 *      kernel knows every faulting PC sent in 2), then COMPLETE: fl_init
 *      has run nothing since HELLO, so the kernel's count of the process
 *      covers its whole life.  Received by deadline too.
 * What the deadline cuts short goes on in the fl-agent thread on the same
 * connection, never on a second one: the daemon would see the first end
 * and the process registered twice.  Without COMPLETE the daemon takes the
 * kernel's count as partial (unless the kernel counted the process from
 * its fork on, which the daemon can tell for itself).
 *
 * Returns the socket, registered or on its way (*welcome: whether its
 * WELCOME came already), or -errno when there is no connection to go on
 * with.
 */
static int connect_and_register(int64_t deadline, uint32_t hello_flags, bool wait, bool names,
				bool *welcome)
{
	struct fl_ownfd moved;
	char buf[256];
	struct fl_msg m;
	int64_t sync_seq;
	int fd, err;

	*welcome = false;
	fd = fl_agent_connect();
	if (fd < 0)
		return fd;
	/* Up at faultline's numbers (the caller adopts it). */
	err = fl_ownfd_adopt(&moved, fd);
	if (err)
		return err;
	fd = moved.fd;
	/* Sends block again, but each no longer than the deadline's rest. */
	if (fcntl(fd, F_SETFL, 0) != 0) {
		err = -errno;
		goto fail;
	}
	err = send_until(fd, deadline);
	if (!err)
		err = send_hello(fd, hello_flags, &hello_dumpable);
	/* Nothing went: a new connection later is not a second registration. */
	if (err)
		goto fail;
	reset_sent();
	err = flush(fd, deadline, names);
	if (err == -EAGAIN || (!err && !wait))
		goto later;
	if (err)
		goto fail;
	err = receive_by(fd, deadline, FL_MSG_WELCOME, 0, buf, sizeof(buf), &m);
	if (err == -EAGAIN)
		goto later;
	if (err)
		goto fail;
	*welcome = true;
	if ((hello_flags & FL_HELLO_FIRST) && (m.welcome.flags & FL_WELCOME_BPF)) {
		sync_seq = send_header(fd, FL_MSG_SYNC);
		if (sync_seq == -EAGAIN)
			goto later;
		if (sync_seq < 0) {
			err = (int)sync_seq;
			goto fail;
		}
		err = receive_by(fd, deadline, FL_MSG_REPLY, (uint32_t)sync_seq, buf, sizeof(buf), &m);
		if (!err && mono_ms() <= deadline)
			err = (int)send_header(fd, FL_MSG_COMPLETE);
		if (err == -EAGAIN)
			goto later;
		if (err < 0)
			goto fail;
	}
	fl_log(FL_LOG_INFO, "registered with faultlined at %s (%s)", fl_agent_path(),
	       fl_agent_path_what());
later:
	/* The fl-agent thread sets its own, longer, send timeouts (flush). */
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
	/* The WELCOME of a registration the fl-agent thread finished. */
	if (m.type == FL_MSG_WELCOME) {
		atomic_store(&welcomed, true);
		fl_log(FL_LOG_INFO, "registered with faultlined at %s (%s)", fl_agent_path(),
		       fl_agent_path_what());
	}
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
	int backoff_ms = 50, err;
	time_t connected_at = 0;
	bool wake_lost = false, lost_to_program = false, welcome;

	(void)arg;
	/* The modules loaded at start, when fl_init left them to this thread. */
	fl_table_deferred_scan();
	/* Stopped (core/workers.h): what it was doing waits for its start again. */
	while (!fl_workers_stopping()) {
		struct pollfd p[2];
		bool had_sock;
		int fd, wfd = fl_ownfd_get(&wake_pair[0]);

		pthread_mutex_lock(&lock);
		had_sock = sock.fd >= 0;
		fd = fl_ownfd_get(&sock);
		pthread_mutex_unlock(&lock);

		if (fd < 0 && region_fd_or_say() < 0)
			return NULL;	/* nothing to register with, for good */
		if (wfd < 0 && !wake_lost) {
			wake_lost = true;
			if (wake_made)
				fl_log(FL_LOG_WARN, "the program closed or reused faultline's "
				       "wake-up descriptor: module changes reach faultlined "
				       "within a second");
		}
		if ((had_sock && fd < 0) || lost_to_program)
			fl_log(FL_LOG_WARN, "the program closed or reused faultline's connection "
			       "to faultlined: registering again");
		lost_to_program = false;
		if (fd < 0) {
			/*
			 * In the background: a daemon slow to answer (busy with
			 * many registrations) is waited for, rather than left
			 * and asked again, which only adds to its work.
			 */
			fd = connect_and_register(mono_ms() + BACKGROUND_SEND_S * 1000, 0, false, true,
						  &welcome);
			if (fd < 0) {
				if (!warned && fd != -ENOENT && fd != -ECONNREFUSED &&
				    fd != -EPERM && fd != -EBADF) {
					warned = true;
					fl_log(FL_LOG_INFO, "faultlined at %s: %s; retrying",
					       fl_agent_path(), strerror(-fd));
				}
				back_off(&backoff_ms);
				/* Queued changes go with the next registration. */
				drain_wake();
				continue;
			}
			fd = sock_adopt(fd);
			if (fd < 0)
				continue;
			/* Its WELCOME comes later (read_daemon). */
			atomic_store(&welcomed, welcome);
			connected_at = time(NULL);
		}
		p[0] = (struct pollfd){ .fd = fd, .events = POLLIN };
		p[1] = (struct pollfd){ .fd = wfd, .events = POLLIN };
		if (poll(p, 2, wfd >= 0 ? CHECK_FDS_MS : 1000) < 0 || fl_workers_stopping())
			continue;
		fl_agent_dumpable_check();
		if (p[1].revents & POLLIN)
			drain_wake();
		fd = sock_get();
		if (fd < 0 || (p[0].revents & POLLNVAL)) {
			/* The program's doing: said next round, the descriptor forgotten. */
			lost_to_program = true;
			sock_close(true);
			atomic_store(&welcomed, false);
			continue;
		}
		/*
		 * Sends wait up to 10 s for a busy daemon; one that waited
		 * that long for a stopped one sent nothing: the connection
		 * stays, and the rest goes next round.
		 */
		if ((p[0].revents & (POLLIN | POLLHUP | POLLERR) && read_daemon(fd) < 0) ||
		    ((err = flush(fd, mono_ms() + BACKGROUND_SEND_S * 1000, true)) < 0 &&
		     err != -EAGAIN)) {
			fl_log(FL_LOG_INFO, "lost faultlined at %s; reconnecting", fl_agent_path());
			sock_close(false);
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

static struct fl_worker agent_worker = {
	.name = "fl-agent", .stack = 256 * 1024, .main = agent_thread, .wake = wake,
};

int fl_agent_thread_start(struct fl_worker *w)
{
	int err = fl_worker_start(w);

	if (err == -ENOSPC)
		fl_log(FL_LOG_WARN, "agent thread %s: %s: patches that move instruction "
		       "boundaries are refused while it runs", w->name, strerror(-err));
	else if (err)
		return err;
	return 0;
}

static void read_comm(void)
{
	if (prctl(PR_GET_NAME, comm) != 0)
		memcpy(comm, "?", 2);
	comm[sizeof(comm) - 1] = 0;
}

/* FAULTLINE_REGISTER_WAIT_MS, when it is a number of milliseconds. */
static void read_wait(void)
{
	const char *env = fl_env("FAULTLINE_REGISTER_WAIT_MS");
	char *end;
	long v;

	if (!env || !*env)
		return;
	errno = 0;
	v = strtol(env, &end, 10);
	if (errno || *end || v < 0 || v > REGISTER_WAIT_MAX_MS) {
		fl_log(FL_LOG_WARN, "FAULTLINE_REGISTER_WAIT_MS=%s is not a number of milliseconds "
		       "from 0 to %d: waiting %d ms", env, REGISTER_WAIT_MAX_MS, REGISTER_WAIT_MS);
		return;
	}
	register_wait_ms = (int)v;
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
	wake_made = true;
}

/*
 * fork (the table's observer, called from its atfork handlers with its
 * locks held): the lock is held across it, so that the child never
 * inherits it locked by a thread it does not have (a registry thread
 * adding a module at that moment hung the child in reset_sent).
 */
static void fork_prepare(void)
{
	pthread_mutex_lock(&lock);
}

static void fork_parent(void)
{
	pthread_mutex_unlock(&lock);
}

static void fork_child(int counters_err)
{
	/* The parent's unregistered modules are the parent's to send again. */
	size_t n = num_retiring;

	num_retiring = 0;
	pthread_mutex_unlock(&lock);
	for (size_t i = 0; i < n; i++)
		amod_put(retiring[i]);
	if (!started)
		return;
	/*
	 * The parent's connection, wake-up pair and threads are not ours
	 * (closed only where they are still faultline's: the program may
	 * have closed or reused the numbers).
	 */
	sock_close(false);
	fl_ownfd_close(&wake_pair[0]);
	fl_ownfd_close(&wake_pair[1]);
	atomic_store(&welcomed, false);
	/* The table gave the child its own counters, or could not. */
	if (counters_err != 0)
		return;
	make_wake_pair();
	read_comm();
	reset_sent();
	/*
	 * As at start: the registration is sent before fork returns, so that
	 * a child that exits at once is counted, and waited for as long as
	 * fl_init waits (the kernel then knows the child's faulting PCs before
	 * it faults); the kernel counts the child of a registered process
	 * from its fork on, and its counters start from zero (FL_HELLO_FIRST).
	 */
	{
		bool welcome;
		int fd = connect_and_register(mono_ms() + register_wait_ms, FL_HELLO_FIRST, true, true,
					      &welcome);

		if (fd >= 0 && sock_adopt(fd) >= 0)
			atomic_store(&welcomed, welcome);
	}
	if (fl_agent_thread_start(&agent_worker) == 0) {
		wake();
		fl_agent_requests_start();
	}
}

static const struct fl_table_observer observer = {
	.module_prepare = fl_agent_module_prepare,
	.module_added = module_added,
	.module_discard = fl_agent_module_discard,
	.module_removed = module_removed,
	.fork_prepare = fork_prepare,
	.fork_parent = fork_parent,
	.fork_child = fork_child,
};

int fl_agent_subscribe(void)
{
	return fl_table_observe(&observer);
}

static uint32_t first_hello_flags(void)
{
	struct fl_stats st = { .sz = sizeof(st) };

	return fl_stats_get(&st) == 0 && st.claimed == 0 ? FL_HELLO_FIRST : 0;
}

int fl_agent_start(const char *given)
{
	bool welcome;
	int fd, err;

	fl_agent_paths_resolve(given);
	read_wait();
	read_comm();
	/* Without it the agent looks for changes every second. */
	make_wake_pair();
	/*
	 * Synchronous first try: a short-lived process is counted too.  It is
	 * the first registration if no other thread has dispatched a fault yet.
	 */
	fd = connect_and_register(mono_ms() + register_wait_ms, first_hello_flags(), true, false,
				  &welcome);
	if (fd >= 0) {
		if (sock_adopt(fd) >= 0)
			atomic_store(&welcomed, welcome);
	} else if (fd == -ENOENT || fd == -ECONNREFUSED) {
		fl_agent_paths_say_none();
	} else if (fd != -EBADF && fd != -EPERM) {
		fl_log(FL_LOG_INFO, "faultlined at %s: %s; trying again in the background",
		       fl_agent_path(), strerror(-fd));
	}
	started = true;
	err = fl_agent_thread_start(&agent_worker);
	if (err)
		return err;
	atomic_store(&thread_runs, true);
	/* The sites' names, left out of the registration above: the thread sends them. */
	wake();
	return fl_agent_requests_start();
}

/*
 * At exit, a process whose registration was not answered with WELCOME
 * (the daemon was killed while reading it, or is stopped or slow, or the
 * agent waits to try again) sends its HELLO and modules once more, and a
 * registered one whose agent has not sent everything yet (a JIT module
 * unregistered just before exit) sends what is left: on a connection of
 * their own, without waiting for anything (a socket without room takes
 * nothing).  Whoever listens, the daemon or its keeper, gets the region
 * with the final counts, and the daemon the names.
 */
bool fl_agent_scanning(void)
{
	return atomic_load(&thread_runs);
}

/* Whether every module is sent (and, with names, named) and every removal too.  Takes lock. */
static bool all_sent(bool names)
{
	bool queued;

	pthread_mutex_lock(&lock);
	queued = num_removed > 0;
	for (size_t i = 0; i < num_mods && !queued; i++)
		queued = !mods[i]->sent || (names && !mods[i]->named);
	pthread_mutex_unlock(&lock);
	return !queued;
}

static void __attribute__((destructor)) agent_at_exit(void)
{
	struct fl_stats st = { .sz = sizeof(st) };
	bool registered, failed, dumpable;
	int fd = -1;

	if (!started || !fl_agent_paths_any())
		return;
	/* The daemon serves what it keeps of the exited process as it was last told. */
	fl_agent_dumpable_check();
	/*
	 * Whether a check failed: its count is in the region the daemon has
	 * had since the HELLO fl_init sent, and the daemon can tell its site
	 * from the region's site table; the sites' module, names and
	 * sections are worth a wait at exit.  A process that failed none is
	 * counted by that HELLO alone, and exits without waiting.
	 */
	failed = fl_stats_get(&st) != 0 || st.claimed > 0;
	/*
	 * The fl-agent thread is still registering the modules loaded at
	 * start (FL_INIT_DEFER_DISCOVERY): when a daemon listens (it answered
	 * the HELLO fl_init sent, or takes a connection now), they are waited
	 * for, so that a process that exits at once is counted with its
	 * sites' names; without a daemon, nothing is waited for.  (A fault
	 * before the rescan waited for it: a check that failed has its site
	 * in the region.)
	 */
	if (failed && fl_table_scan_pending()) {
		if (!atomic_load(&welcomed) && (fd = fl_agent_connect()) < 0)
			return;
		fl_table_scan_wait(EXIT_SCAN_WAIT_MS);
	}
	/*
	 * Registered on the fl-agent thread's connection: that thread sends
	 * what is queued (the modules of a rescan just done, their names),
	 * and the exit waits for it, as long as a daemon that reads them
	 * needs: a second connection would be a second registration, which
	 * the kernel's counts of the process could not follow.
	 */
	if (failed && atomic_load(&welcomed) && atomic_load(&thread_runs) &&
	    !fl_workers_stopping() && !all_sent(true)) {
		int64_t end = mono_ms() + EXIT_SEND_WAIT_MS;

		wake();
		while (!all_sent(true) && mono_ms() < end)
			usleep(1000);
	}
	registered = atomic_load(&welcomed);
	/* Registered, and nothing queued, or nothing worth a second registration. */
	if (registered && (!failed || all_sent(false))) {
		if (fd >= 0)
			close(fd);
		return;
	}
	if (fd < 0)
		fd = fl_agent_connect();
	if (fd < 0)
		return;
	if (send_hello(fd, 0, &dumpable) == 0) {
		if (!registered)
			reset_sent();
		/*
		 * The socket does not block (fl_proto_connect): what has no
		 * room is not sent.  No deadline, so no send timeout either:
		 * the exit waits for nothing, a stopped daemon's neither.
		 */
		flush(fd, 0, true);
	}
	/*
	 * Left open: it closes when the process is gone, which the daemon
	 * then knows from the hangup (closed now, the process would look alive).
	 */
}
