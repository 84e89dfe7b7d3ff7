/* SPDX-License-Identifier: MIT */
/*
 * Internal to lib/patch/: where the process's other threads are, as the
 * kernel tells the process itself (threads.c), without stopping them.
 *
 * /proc/self/task lists the threads; /proc/self/task/N/status gives each
 * one's state and blocked signals, schedstat how often it was put on a CPU,
 * and /proc/self/task/N/syscall
 * gives the user PC and stack pointer of a thread that waits in the kernel
 * (in a system call, a page fault, or stopped), "running" for one that
 * runs or may run.  The process may read all of them of its own threads
 * (the kernel's ptrace check passes for the same thread group).
 *
 * Nothing here allocates: the patcher reads these while some threads are
 * stopped, one of which may hold the allocator's lock.
 */
#ifndef FL_PATCH_THREADS_H
#define FL_PATCH_THREADS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dispatch/dispatch.h"

struct fl_thread {
	/* The thread's id in this process's pid namespace (for signals). */
	int32_t tid;
	/* Its name in /proc/self/task (another namespace's id: see foreign). */
	int32_t name;
	char state;		/* status's State: R, S, D, T, t, Z, X, I */
	uint64_t blocked;	/* status's SigBlk: the kernel's 64-bit set */
	/* From syscall: the thread waits in the kernel, at pc with sp. */
	bool waiting;
	uint64_t pc, sp;
	/* schedstat's third number: how many times it was put on a CPU. */
	uint64_t runs;
	/* schedstat's first two: its time on a CPU and waiting for one, ns. */
	uint64_t on_cpu_ns, queued_ns;
	/*
	 * status's voluntary_ctxt_switches (each time it went to sleep), and
	 * how many of those were faultline's own waits (fl_naps_of; naps_known
	 * false: not counted), read after it.
	 */
	uint64_t slept;
	uint32_t naps;
	bool naps_known;
	/* How many times the handshake stopped it (fl_naps_of), read with naps. */
	uint32_t stops;
	/*
	 * Set by the census: since an earlier census read it, t has not slept
	 * on its own, and has been on a CPU for FL_COMPUTES_NS or more or been
	 * stopped by the handshake.  So it is not on its way out of a blocking
	 * call, and stopping it now cuts no call short (threads.c says why).
	 */
	bool computes;
	/*
	 * Its status, and where it waits (waiting, pc, sp), came from the
	 * memo of an earlier census (fl_census_list): it has not been on a
	 * CPU since they were read.
	 */
	bool remembered;
	/*
	 * The last time it was seen waiting (seen): where, and its runs read
	 * just before.  While runs stays that, it has not been on a CPU since:
	 * it goes on from there, whatever its state.
	 */
	bool seen;
	uint64_t seen_pc, seen_sp, seen_runs;
	int what;		/* the patcher's decision (patch.c) */
};

struct fl_census {
	int taskfd;		/* /proc/self/task */
	/*
	 * /proc belongs to another pid namespace than this process's (unshare
	 * -p without its own /proc): the names it lists are not the ids that
	 * signals take, and each thread's id is the last of its NSpid.
	 */
	bool foreign;
	int32_t self_name;	/* this thread's name in /proc/self/task */
	size_t n;
	struct fl_thread t[FL_PARK_MAX];
};

/*
 * Opens /proc/self/task and finds this thread in it.  Returns 0, or
 * -errno with the reason in why: /proc missing or not this process's
 * (it does not list this thread as itself), a listing the kernel or a
 * sandbox refuses.
 */
int fl_census_open(struct fl_census *c, char *why, size_t why_len);
void fl_census_close(struct fl_census *c);

/*
 * Lists /proc/self/task and adds each thread that is not yet in c (but
 * this one), its schedstat read (fl_thread_runs) and its status read
 * (fl_thread_status) or remembered (fl_thread_remember); light: its stat
 * only (fl_thread_stat), unless it blocks SIGTRAP.  Returns how many it
 * added, or -errno with the reason in why (a listing that fails, more
 * than FL_PARK_MAX threads, a thread whose id in this namespace cannot
 * be known).  A thread that exits meanwhile is left out.
 */
int fl_census_list(struct fl_census *c, bool light, char *why, size_t why_len);

/*
 * Reads t's stat: its state and the standard signals it blocks (stat
 * gives the first 31: SIGTRAP's, not the real-time ones), its id its name
 * (for a census whose /proc is this process's).  Returns 0, -ESRCH when t
 * has exited, or -errno.
 */
int fl_thread_stat(const struct fl_census *c, struct fl_thread *t);

/*
 * Reads t's status: state, blocked signals, voluntary switches, then the
 * count of faultline's waits in it (and its id, the first time).  Returns
 * 0, -ESRCH when t has exited, or -errno.
 */
int fl_thread_status(const struct fl_census *c, struct fl_thread *t);

/*
 * Reads t's syscall: t->waiting, and where (pc, sp).  The kernel reads
 * them only while t is off its CPU, and twice, so that the pair is one
 * moment's.  Returns 0, -ESRCH when t has exited, or -errno.
 */
int fl_thread_look(const struct fl_census *c, struct fl_thread *t);

/*
 * Remembers what was read of t (its status, then its schedstat, then its
 * syscall, in that order, in this census): a later census that finds the
 * same schedstat takes them from the memo instead of reading them again
 * (a thread not put on a CPU since cannot have changed them).
 */
void fl_thread_remember(const struct fl_thread *t);
/* Forgets every memo (a forked child: its threads are others). */
void fl_threads_forget(void);

/*
 * Reads t's schedstat: t->runs, t->on_cpu_ns, t->queued_ns.  Returns 0, -ESRCH when t has exited, or
 * -errno (-ENOTSUP: a kernel without schedstat's counts).
 */
int fl_thread_runs(const struct fl_census *c, struct fl_thread *t);

/*
 * A thread that has run this long on a CPU without a sleep of its own
 * computes: no blocking call's return takes that long.
 */
#define FL_COMPUTES_NS 50000

/* Whether sig is in a kernel signal set as status gives it. */
static inline bool fl_sigset_has(uint64_t set, int sig)
{
	return sig >= 1 && sig <= 64 && (set >> (sig - 1)) & 1;
}

#endif /* FL_PATCH_THREADS_H */
