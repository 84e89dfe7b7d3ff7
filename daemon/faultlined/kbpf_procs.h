/* SPDX-License-Identifier: MIT */
/*
 * The eBPF side's own state of the processes (kbpf_procs.c): a view per
 * registered process (struct fld_kproc) and, per module, what went into
 * the kernel's map and the counts frozen at exit (struct fld_kmod, held
 * by the module's opaque kbpf pointer).  procs.c tells (fld_proc_observe)
 * when a process or a module is gone, and its state goes with it.  Loop
 * thread only.
 */
#ifndef FLD_KBPF_PROCS_H
#define FLD_KBPF_PROCS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <linux/types.h>

#include "faultline_bpf.h"
#include "procs.h"

#define FLD_KRECENT 8		/* signal samples kept per process */
#define FLD_KTOP_STRAYS 16	/* stray fault PCs listed per process */

/* A {key, value} of fl_signals, and of fl_faults, as read from the map. */
struct fld_ksig {
	struct fl_signal_key k;
	struct fl_signal_counts c;
};

struct fld_kfault {
	struct fl_fault_key k;
	struct fl_fault_counts c;
};

struct fld_ksample {
	uint64_t time_ns;
	uint32_t tid;
	int32_t sig, code;
	uint64_t ip, addr;
};

/* What the ring buffer brought of one process (kbpf_ring.c). */
struct fld_ksamples {
	uint64_t fault_samples, signal_samples;
	struct fld_ksample recent[FLD_KRECENT];
	unsigned nrecent, next_recent;
};

/* One process's part of the kernel's maps. */
struct fld_pview {
	struct fl_fault_counts total;
	struct fld_kfault top[FLD_KTOP_STRAYS];	/* by stray count, descending */
	size_t ntop;
	const struct fld_ksig *sigs;
	size_t nsigs;
	uint64_t fault_signals;	/* over all of sigs, even those a frozen view drops */
};

/* The kernel's view of one registration of a process. */
struct fld_kproc {
	struct fld_proc *p;	/* whose: procs.c's entry, until it is gone */
	pid_t pid;
	bool complete;
	uint64_t lost_base;	/* FL_STAT_SIGNALS_LOST when it registered */
	bool exit_pending;	/* exited; frozen at the next tick */
	bool frozen;
	struct fld_pview view;	/* frozen: sigs points at own_sigs */
	struct fld_ksig *own_sigs;
	struct fld_ksamples samples;
};

/* A site's kernel count, frozen (struct fld_kmod). */
struct fld_kcount {
	uint32_t site;		/* its index in the module's sites */
	uint64_t count;		/* not 0 */
};

/* The kernel's side of one module of a process. */
struct fld_kmod {
	/* Sites mirrored into the program's fl_sites (the first ones). */
	uint32_t kernel_sites;
	/*
	 * Loaded when its process exited: frozen[] holds the counts of its
	 * sites that have one (nfrozen of them, in site order: most sites
	 * of a million-site module have none); any other site's is 0.
	 */
	bool counted;
	struct fld_kcount *frozen;
	uint32_t nfrozen;
};

/* From now on the state of a process or module goes with it (procs.h's observers). */
void fld_kprocs_init(void);

/* p's view, or NULL when it has none. */
struct fld_kproc *fld_kproc_of(const struct fld_proc *p);
/* A new view for p (any one it had goes).  NULL when out of memory. */
struct fld_kproc *fld_kproc_new(struct fld_proc *p);
/* p's view goes, if it has one. */
void fld_kproc_forget(const struct fld_proc *p);

/* Every view, in the order they were made: fld_kprocs[0 .. fld_num_kprocs). */
extern struct fld_kproc **fld_kprocs;
extern size_t fld_num_kprocs;
/*
 * Changed whenever a view is made or goes: a snapshot of the maps taken
 * before may hold entries of a tgid that is another process's now
 * (kbpf_view.c's shared snapshots are taken again after a change).
 */
extern uint64_t fld_kprocs_gen;

/* m's state, or NULL when it has none. */
struct fld_kmod *fld_kmod_of(const struct fld_module *m);
/* m's state, made (zeroed) when it has none.  NULL when out of memory. */
struct fld_kmod *fld_kmod_get(struct fld_module *m);
/* The entries uid's modules have in fl_sites. */
uint64_t fld_kmod_sites_of(uid_t uid);

#endif /* FLD_KBPF_PROCS_H */
