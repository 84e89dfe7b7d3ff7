// SPDX-License-Identifier: MIT
/*
 * The helper thread of an FL_REGION_HELPER_THREAD region: it reads the
 * region's userfaultfd, so that threads touching committed memory wait in
 * the kernel for a moment instead of taking a signal.
 *
 * For each page fault message:
 *  - Below the committed limit: populate the page (UFFDIO_COPY or
 *    UFFDIO_ZEROPAGE, which wake the waiting threads).  EEXIST: another
 *    thread's message for the same page came first; wake explicitly, in
 *    case this thread queued after that wake.
 *  - Past the limit: the fault is forwarded to the faulting thread as a
 *    SIGBUS it handles like the kernel's SIGBUS of the default mode.  The
 *    signal wakes the thread out of its wait (user faults wait
 *    interruptibly); it returns to user mode at the faulting instruction
 *    and runs the handler there.
 *
 * Forwarding, step by step (struct fl_region_forward in dispatch.h):
 *  1. Read /proc/self/task/TID/syscall.  For a thread blocked in a user
 *     page fault it reads "-1 SP PC": the registers the handler will find
 *     in its ucontext.  Anything else means the thread is not waiting any
 *     more (another signal woke it); when it re-executes the access it
 *     faults again and a new message comes, so nothing is sent.
 *  2. Read what else the userfaultfd has queued.  The thread queued its
 *     message before it went to sleep, so if it is waiting in a newer
 *     fault, that message is queued by now: then this one is stale.
 *  3. rt_tgsigqueueinfo(SIGBUS, si_code SI_QUEUE) with the address, the
 *     write bit, SP and PC, and the region's cookie.  fl_region_forwarded
 *     checks them in the handler, and counts the forwards it took.
 *  4. Later, off the faulting thread's path: if the thread blocks SIGBUS,
 *     no signal can wake it, and the kernel would have killed the process
 *     (force_sig_fault), so faultline does.  When CHECK_MS after a forward
 *     the threads have not taken as many as were sent, the helper reads
 *     the SigBlk of each thread it sent one to since the last check.
 * Without /proc, steps 1, 2 and 4 are skipped and PC and SP sent as 0:
 * only the cookie is checked, and a thread that blocks SIGBUS waits for
 * ever.
 *
 * Where a forward's time goes (bench_region, 6.18 in a VM, before step 4
 * moved off the path and the /proc files were kept open): reading
 * /proc/TID/status 11.7 us, opening and reading /proc/TID/syscall 8 us,
 * rt_tgsigqueueinfo 3.5 us (it wakes the thread), reading the
 * userfaultfd 1.2 us; the rest is the kernel's: the fault, two wake-ups
 * across CPUs, the signal's delivery.
 *
 * What is left: a thread woken out of the fault by another signal whose
 * handler then waits in some other page fault (I/O, not this userfaultfd)
 * just when step 1 looks.  Step 1 then reads that fault's PC and SP, and
 * the forward is taken for a fault there.  It matters only if that PC is
 * a registered faulting PC, and the window is the few microseconds
 * between the helper's read of the message and step 1.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/ownfd.h"
#include "core/log.h"
#include "region/internal.h"

#define BATCH 64
#define HELPER_STACK (256 * 1024)
/* /proc/self/task/TID/syscall files kept open: opening costs more than reading. */
#define PROC_FDS 16
/* Threads sent a forward since the last check of step 4, at most. */
#define PENDING 64
/* Step 4's delay: a thread that does not block SIGBUS has taken it by then. */
#define CHECK_MS 10

/* Messages read from the userfaultfd and not handled yet. */
struct backlog {
	struct uffd_msg msg[BATCH];
	size_t head, tail;
};

/* The helper's own state, besides the backlog. */
struct helper {
	uint32_t proc_tid[PROC_FDS];
	int proc_fd[PROC_FDS];
	unsigned proc_next;
	/* Step 4: forwards sent since the last check, and the counts at it. */
	struct {
		uint32_t tid;
		bool write;
		uint64_t addr;
	} pending[PENDING];
	size_t num_pending;
	uint64_t sent;		/* forwards sent */
	uint64_t deficit;	/* sent - taken after the last check */
	uint64_t check_at;	/* CLOCK_MONOTONIC ms of the next check, with pending */
};

/* Reads what is queued into b.  Returns 0 or -errno. */
static int fetch(int uffd, struct backlog *b)
{
	ssize_t n;

	if (b->head) {
		memmove(b->msg, b->msg + b->head, (b->tail - b->head) * sizeof(b->msg[0]));
		b->tail -= b->head;
		b->head = 0;
	}
	if (b->tail == BATCH)
		return 0;
	n = read(uffd, b->msg + b->tail, (BATCH - b->tail) * sizeof(b->msg[0]));
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -errno;
	b->tail += (size_t)n / sizeof(b->msg[0]);
	return 0;
}

/* Reads a /proc file into buf (NUL-terminated).  Returns false if it cannot. */
static bool read_proc(const char *path, char *buf, size_t size)
{
	ssize_t n;
	int fd = fl_ownfd_transient(open(path, O_RDONLY | O_CLOEXEC));

	if (fd < 0)
		return false;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	return true;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * Reads /proc/self/task/TID/syscall into buf (NUL-terminated) through a
 * file kept open; a file of a thread that exited reads nothing, and is
 * opened again (the tid may be another thread's now).  Returns false if
 * it cannot.
 */
static bool read_syscall(struct helper *h, uint32_t tid, char *buf, size_t size)
{
	char path[64];
	unsigned i;
	ssize_t n;

	for (i = 0; i < PROC_FDS; i++)
		if (h->proc_fd[i] >= 0 && h->proc_tid[i] == tid)
			break;
	if (i < PROC_FDS) {
		n = pread(h->proc_fd[i], buf, size - 1, 0);
		if (n > 0) {
			buf[n] = 0;
			return true;
		}
		close(h->proc_fd[i]);
		h->proc_fd[i] = -1;
	} else {
		i = h->proc_next++ % PROC_FDS;
		if (h->proc_fd[i] >= 0)
			close(h->proc_fd[i]);
		h->proc_fd[i] = -1;
	}
	snprintf(path, sizeof(path), "/proc/self/task/%" PRIu32 "/syscall", tid);
	h->proc_fd[i] = open(path, O_RDONLY | O_CLOEXEC);
	if (h->proc_fd[i] < 0)
		return false;
	h->proc_tid[i] = tid;
	n = pread(h->proc_fd[i], buf, size - 1, 0);
	if (n <= 0)
		return false;
	buf[n] = 0;
	return true;
}

enum waiting { WAITING, NOT_WAITING, UNKNOWN };

/* Step 1: is tid blocked in a user page fault, and where. */
static enum waiting task_waiting(struct helper *h, uint32_t tid, uint64_t *sp, uint64_t *pc)
{
	char buf[256], *end;

	if (!read_syscall(h, tid, buf, sizeof(buf)))
		return UNKNOWN;
	if (strncmp(buf, "-1 ", 3) != 0)
		return NOT_WAITING;	/* "running", or in a syscall */
	*sp = strtoull(buf + 3, &end, 16);
	*pc = strtoull(end, &end, 16);
	return *pc ? WAITING : UNKNOWN;
}

/* Step 4: does tid block SIGBUS.  False when unknown. */
static bool task_blocks_sigbus(uint32_t tid)
{
	char path[64], buf[4096], *line;

	snprintf(path, sizeof(path), "/proc/self/task/%" PRIu32 "/status", tid);
	if (!read_proc(path, buf, sizeof(buf)))
		return false;
	line = strstr(buf, "\nSigBlk:");
	if (!line)
		return false;
	return (strtoull(line + 8, NULL, 16) >> (SIGBUS - 1)) & 1;
}

/* Step 2: a newer message of tid in b (past the one being handled). */
static bool newer_fault(const struct backlog *b, uint32_t tid)
{
	for (size_t i = b->head; i < b->tail; i++)
		if (b->msg[i].event == UFFD_EVENT_PAGEFAULT &&
		    b->msg[i].arg.pagefault.feat.ptid == tid)
			return true;
	return false;
}

static long tgsigqueueinfo(pid_t tid, const struct fl_region_forward *f)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	memcpy(&si, f, sizeof(*f));
	return syscall(SYS_rt_tgsigqueueinfo, getpid(), tid, SIGBUS, &si);
}

/*
 * What the kernel does with a SIGBUS the faulting thread blocks: default
 * action, the process dies (and dumps core).  The helper sends it to
 * itself, with the faulting thread's siginfo, so that the core shows what
 * the kernel's would (a thread may send itself si_code > 0).
 */
static __attribute__((noreturn)) void die_of_sigbus(uint32_t tid, uint64_t addr, bool write)
{
	struct fl_region_forward f = {
		.signo = SIGBUS, .code = BUS_ADRERR, .addr = addr, .write = write,
	};
	sigset_t set;

	fl_log(FL_LOG_ERROR,
	       "region: thread %" PRIu32 " touched %#" PRIx64 " past the committed limit "
	       "with SIGBUS blocked: the process dies of SIGBUS, as the kernel would have it",
	       tid, addr);
	fl_chain_restore_default(SIGBUS);
	tgsigqueueinfo((pid_t)syscall(SYS_gettid), &f);
	sigemptyset(&set);
	sigaddset(&set, SIGBUS);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	abort();	/* not reached */
}

/*
 * Step 4, CHECK_MS after the first forward since the last check: when the
 * threads took fewer forwards than were sent, one may wait for ever in a
 * fault with SIGBUS blocked.  (A forward may also have been lost: a SIGBUS
 * already pending in the thread.  The deficit then stays, and is not
 * looked at again.)
 */
static void check_pending(struct fl_region_priv *p, struct helper *h)
{
	uint64_t taken = atomic_load_explicit(&p->r.forwards_taken, memory_order_relaxed);

	if (h->sent - taken != h->deficit) {
		for (size_t i = 0; i < h->num_pending; i++) {
			uint64_t sp, pc;

			if (task_waiting(h, h->pending[i].tid, &sp, &pc) == WAITING &&
			    task_blocks_sigbus(h->pending[i].tid))
				die_of_sigbus(h->pending[i].tid, h->pending[i].addr,
					      h->pending[i].write);
		}
		/* Taken since the load above: counted at the next check. */
		h->deficit = h->sent - taken;
	}
	h->num_pending = 0;
}

static void forward(struct fl_region_priv *p, const struct uffd_msg *m, struct backlog *b,
		    struct helper *h)
{
	uint32_t tid = m->arg.pagefault.feat.ptid;
	struct fl_region_forward f = {
		.signo = SIGBUS,
		.code = SI_QUEUE,
		.write = (m->arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WRITE) != 0,
		.addr = m->arg.pagefault.address,
		.cookie = p->r.forward_cookie,
	};
	enum waiting w = task_waiting(h, tid, &f.sp, &f.pc);
	int err;

	if (w == NOT_WAITING)
		return;
	if (w == WAITING) {
		err = fetch(p->r.uffd, b);
		if (err)
			fl_log(FL_LOG_ERROR, "region helper: read: %s", strerror(-err));
		if (newer_fault(b, tid))
			return;
		/* No room to wait for step 4: do it now, as the kernel would. */
		if (h->num_pending == PENDING && task_blocks_sigbus(tid))
			die_of_sigbus(tid, f.addr, f.write);
	} else {
		f.sp = f.pc = 0;
	}
	if (tgsigqueueinfo((pid_t)tid, &f) != 0) {
		if (errno != ESRCH)
			fl_log(FL_LOG_ERROR, "region helper: rt_tgsigqueueinfo to %" PRIu32 ": %s",
			       tid, strerror(errno));
		return;
	}
	h->sent++;
	if (w == WAITING && h->num_pending < PENDING) {
		if (!h->num_pending)
			h->check_at = now_ms() + CHECK_MS;
		h->pending[h->num_pending].tid = tid;
		h->pending[h->num_pending].addr = f.addr;
		h->pending[h->num_pending].write = f.write;
		h->num_pending++;
	}
}

static void handle(struct fl_region_priv *p, const struct uffd_msg *m, struct backlog *b,
		   struct helper *h)
{
	struct fl_region *r = &p->r;
	uint64_t off, page, limit;
	int err;

	if (m->event != UFFD_EVENT_PAGEFAULT)
		return;	/* no other event was asked for */
	off = m->arg.pagefault.address - r->start;
	page = off & ~(r->page_size - 1);
	/*
	 * Acquire: pairs with the release store of fl_region_commit and
	 * fl_region_reset (region.c).
	 */
	limit = atomic_load_explicit(&r->limit, memory_order_acquire);
	if (off < limit) {
		err = fl_region_populate(r, page, true);
		if (err == -EEXIST || err == -EAGAIN) {
			/* EAGAIN: the woken thread faults again, a new message comes. */
			struct uffdio_range range = { .start = r->start + page, .len = r->page_size };

			if (ioctl(r->uffd, UFFDIO_WAKE, &range) == 0)
				return;
			err = -errno;
		}
		if (err == 0)
			return;
		/*
		 * The thread's own handler tries again and, failing too, gives
		 * the fault to the application's SIGBUS action.
		 */
		fl_log(FL_LOG_ERROR, "region helper: populating %#" PRIx64 ": %s",
		       r->start + page, strerror(-err));
	}
	forward(p, m, b, h);
}

static void *serve(struct fl_region_priv *p)
{
	struct backlog *b = calloc(1, sizeof(*b));
	struct helper *h = calloc(1, sizeof(*h));
	struct pollfd pfd[2] = {
		{ .fd = p->r.uffd, .events = POLLIN },
		{ .fd = p->stop_fd, .events = POLLIN },
	};

	if (!b || !h) {
		fl_log(FL_LOG_ERROR, "region helper: out of memory");
		free(b);
		free(h);
		return NULL;
	}
	for (unsigned i = 0; i < PROC_FDS; i++)
		h->proc_fd[i] = -1;
	for (;;) {
		int err, timeout = -1;

		if (h->num_pending) {
			uint64_t now = now_ms();

			if (now >= h->check_at)
				check_pending(p, h);
			else
				timeout = (int)(h->check_at - now);
		}
		err = poll(pfd, 2, h->num_pending ? timeout : -1);
		if (err < 0) {
			if (errno == EINTR)
				continue;
			fl_log(FL_LOG_ERROR, "region helper: poll: %s", strerror(errno));
			break;
		}
		if (err == 0 || pfd[1].revents) {
			if (pfd[1].revents)
				break;
			continue;
		}
		err = fetch(p->r.uffd, b);
		if (err) {
			fl_log(FL_LOG_ERROR, "region helper: read: %s", strerror(-err));
			break;
		}
		while (b->head < b->tail) {
			struct uffd_msg m = b->msg[b->head++];

			handle(p, &m, b, h);
		}
	}
	for (unsigned i = 0; i < PROC_FDS; i++)
		if (h->proc_fd[i] >= 0)
			close(h->proc_fd[i]);
	free(b);
	free(h);
	return NULL;
}

/* The helper never runs code that can be patched: no handshake stops it. */
static void *helper_main(void *arg)
{
	serve(arg);
	return NULL;
}

int fl_region_helper_start(struct fl_region_priv *p)
{
	pthread_attr_t attr;
	sigset_t all;
	int err;

	p->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (p->stop_fd < 0)
		return -errno;
	/*
	 * All signals blocked from its first instruction: a signal meant for
	 * the application must not land here, and a SIGBUS the helper itself
	 * took in a fault would wait for itself.
	 */
	sigfillset(&all);
	err = pthread_attr_init(&attr);
	if (err)
		return -err;
	err = pthread_attr_setsigmask_np(&attr, &all);
	/* One per region: not the default 8 MiB; room for the log callback. */
	if (!err)
		err = pthread_attr_setstacksize(&attr, HELPER_STACK);
	/* Marked exempt from the handshake before this returns. */
	if (!err)
		err = -fl_park_exempt_thread(&p->helper, &attr, helper_main, p);
	pthread_attr_destroy(&attr);
	if (err == ENOSPC)
		fl_log(FL_LOG_WARN, "region helper: %s: patches that move instruction "
		       "boundaries are refused while it runs", strerror(ENOSPC));
	else if (err)
		return -err;
	pthread_setname_np(p->helper, "fl-region");
	p->helper_running = true;
	return 0;
}

void fl_region_helper_stop(struct fl_region_priv *p)
{
	uint64_t one = 1;

	if (p->helper_running) {
		if (write(p->stop_fd, &one, sizeof(one)) != (ssize_t)sizeof(one))
			fl_log(FL_LOG_ERROR, "region helper: eventfd: %s", strerror(errno));
		pthread_join(p->helper, NULL);
		p->helper_running = false;
	}
	if (p->stop_fd >= 0) {
		close(p->stop_fd);
		p->stop_fd = -1;
	}
}
