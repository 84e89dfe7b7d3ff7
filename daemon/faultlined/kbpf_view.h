/* SPDX-License-Identifier: MIT */
/*
 * Snapshots of the eBPF program's maps (kbpf_view.c), and what they say
 * of one process: its page faults, its signal entries, the kernel's count
 * of each of its sites.
 *
 * The kernel's count of a site ("kernel_faults") is the number of fault
 * signals (SIGSEGV or SIGBUS with a kernel si_code) delivered to the process
 * at the site's faulting PC: exactly the faults dispatch must claim there.
 * It counts from the daemon's HELLO on, so it covers the process's whole
 * life only when that HELLO carried FL_HELLO_FIRST and the program was
 * running ("complete"); otherwise no per-site kernel count is reported.
 *
 * Loop thread only.
 */
#ifndef FLD_KBPF_VIEW_H
#define FLD_KBPF_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "procs.h"

struct bpf_map;
struct fl_signal_key;	/* faultline_bpf.h */
struct fld_kfault;	/* kbpf_procs.h */
struct fld_kproc;
struct fld_ksig;
struct fld_pview;

struct fld_kview {
	bool with_faults;	/* fl_faults was read (else only fl_signals) */
	uint64_t lost;		/* FL_STAT_SIGNALS_LOST when it was read */
	/* fl_stats summed over the CPUs, then: FL_STAT_NR of them (kbpf_view.c
	 * asserts they fit; query.c does not see faultline_bpf.h). */
	uint64_t stats[16];
	unsigned refs;		/* fld_kview_free frees it at 0 */
	uint64_t taken_ms;	/* CLOCK_MONOTONIC */
	uint64_t kprocs_gen;	/* fld_kprocs_gen then */
	struct fld_kfault *faults;
	size_t nfaults;
	struct fld_ksig *sigs;
	size_t nsigs;
};

/*
 * A snapshot of the kernel's maps, read now (queries share one:
 * fld_kview_share): the entries of process only (0: of every process);
 * the page fault counts only with_faults (a walk of fl_faults' 131,072
 * slots, 8 MiB: not for a query about every process).  NULL when the
 * program does not run, no process's view needs the maps (no live one),
 * or the snapshot failed (logged).
 */
struct fld_kview *fld_kview_take(pid_t only, bool with_faults);
/* Lets go of a view of fld_kview_take or fld_kview_share. */
void fld_kview_free(struct fld_kview *v);

/*
 * How old a shared snapshot may be.  A stats answer reads the maps as
 * they were at most this long before (docs/json.md): a burst of queries
 * shares one read of the maps instead of each dumping them (with 1,000
 * processes the dump was a third of the answer).  Never older than the
 * latest view made or gone (fld_kprocs_gen): a tgid's entries are never
 * read as another process's.
 */
#define FLD_KVIEW_MAX_AGE_MS 50

/*
 * A snapshot of every process's entries, shared by the queries and taken
 * again when it is older than FLD_KVIEW_MAX_AGE_MS; with_faults as for
 * fld_kview_take (the two kinds are kept apart).  NULL as for
 * fld_kview_take about only.  Let go of it with fld_kview_free.
 */
struct fld_kview *fld_kview_share(pid_t only, bool with_faults);
/* The shared snapshots go (the program is stopped). */
void fld_kview_unshare(void);

/*
 * The kernel's count of site s (of module m) of p, into *n.  Returns false
 * when there is none to report: no program, p's kernel view is not
 * complete, or m was unloaded before p exited (the kernel counts by PC, and
 * another module may have been loaded at the same address since).
 */
bool fld_kview_site_faults(const struct fld_kview *v, const struct fld_proc *p,
			   const struct fld_module *m, const struct fld_site *s, uint64_t *n);

/*
 * Whether k counted every fault signal of its process: its first
 * registration, and no fault signal (of any process) was lost to a full
 * map since, as of v (a frozen view was checked when it froze).
 */
bool fld_kview_complete(const struct fld_kview *v, const struct fld_kproc *k);
/*
 * p's part of v, into *pv; a page fault at a faulting PC of p's modules
 * counts as an implicit check's, even when the kernel counted it
 * before that PC was in its map.
 */
void fld_kview_of(const struct fld_kview *v, const struct fld_proc *p, struct fld_pview *pv);
/* The view to report for p: frozen, or p's part of v (in *scratch).  NULL when none. */
const struct fld_pview *fld_kview_for(const struct fld_kview *v, const struct fld_proc *p,
				      struct fld_pview *scratch);
/* The first of pv's entries at pc or above (they are sorted by PC). */
size_t fld_kview_first_at(const struct fld_pview *pv, uint64_t pc);
/* The fault signals of pv's entries at pc. */
uint64_t fld_kview_site_count(const struct fld_pview *pv, uint64_t pc);
/* A fault signal: SIGSEGV or SIGBUS with a kernel si_code, not kill's or sigqueue's. */
bool fld_ksig_is_fault(const struct fl_signal_key *k);
/* qsort's order of signal entries: tgid, PC, signal, si_code. */
int fld_ksig_cmp(const void *a, const void *b);

/*
 * Every entry of a hash map, with lookup batches.  Returns the number read
 * (keys and values in *keys, *vals, malloc'ed), or -errno.
 */
ssize_t fld_kmap_dump(struct bpf_map *map, size_t ksz, size_t vsz, void **keys, void **vals);
/* The sum over CPUs of the program's counter idx (0 when unreadable or not loaded). */
uint64_t fld_kstat_sum(uint32_t idx);

#endif /* FLD_KBPF_VIEW_H */
