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
	struct fld_kfault *faults;
	size_t nfaults;
	struct fld_ksig *sigs;
	size_t nsigs;
};

/*
 * A snapshot of the kernel's maps, taken once per query: the entries of
 * process only (0: of every process); the page fault counts only
 * with_faults (they can be 65,536 entries: only for a query about one
 * process).  NULL when the program does not run, no process's view needs
 * the maps (no live one), or the snapshot failed (logged).
 */
struct fld_kview *fld_kview_take(pid_t only, bool with_faults);
void fld_kview_free(struct fld_kview *v);

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
