/* SPDX-License-Identifier: MIT */
/*
 * faultlined's eBPF side (kbpf.c): loads bpf/faultline.bpf.c through its
 * skeleton when it can, mirrors the registered processes and their faulting
 * PCs into the program's maps, consumes its ring buffer from the event loop,
 * and answers what the kernel counted for a process and each of its sites.
 *
 * The kernel's count of a site ("kernel_faults") is the number of fault
 * signals (SIGSEGV or SIGBUS with a kernel si_code) delivered to the process
 * at the site's faulting PC: exactly the faults dispatch must claim there.
 * It counts from the daemon's HELLO on, so it covers the process's whole
 * life only when that HELLO carried FL_HELLO_FIRST and the program was
 * running ("complete"); otherwise no per-site kernel count is reported.
 *
 * Loop thread only, like the rest of the daemon.
 */
#ifndef FLD_KBPF_H
#define FLD_KBPF_H

#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>

#include "loop.h"
#include "procs.h"

/*
 * Loads and attaches the program unless !wanted, and watches its ring
 * buffer on loop.  When it cannot (no CAP_BPF and CAP_PERFMON, no BTF,
 * ...) it says why once, at info level, and the daemon goes on
 * without it.  Returns true when the program runs.
 */
bool fld_bpf_start(struct fld_loop *loop, bool wanted);
bool fld_bpf_on(void);
void fld_bpf_stop(void);

/*
 * A process registered (HELLO): counted from now on.  first: its HELLO had
 * FL_HELLO_FIRST.  Its counts are complete from the start when the
 * program counted it already, from its fork by a registered parent on;
 * else only once the process says COMPLETE (fld_bpf_proc_complete).
 */
void fld_bpf_proc_add(struct fld_proc *p, bool first);
/* COMPLETE: p ran nothing since its FL_HELLO_FIRST HELLO (proto.h). */
void fld_bpf_proc_complete(struct fld_proc *p);
/* Its module's faulting PCs, for the implicit/stray split of page faults. */
void fld_bpf_sites_add(const struct fld_proc *p, struct fld_module *m);
void fld_bpf_sites_remove(const struct fld_proc *p, struct fld_module *m);
/*
 * The process is gone: its kernel view is frozen in p->k (every site's
 * count too), and its entries leave the maps.
 */
void fld_bpf_proc_exit(struct fld_proc *p);
/* Frees p->k (procs.c, when p is freed). */
void fld_kproc_free(struct fld_kproc *k);
/* Once a tick: forgets inherited registrations nobody claimed, purges. */
void fld_bpf_tick(void);

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
 * p's "kernel" object for stats --json, or NULL when there is none: the
 * counts only, or with detail (for a query about p alone) the signal
 * entries, recent signal samples and, when v has them or p has exited, the
 * page fault counts and the top stray PCs.
 */
json_object *fld_kview_proc_json(const struct fld_kview *v, const struct fld_proc *p,
				 bool detail);
/* The program's own counters ("bpf_stats"), or NULL when it does not run. */
json_object *fld_bpf_stats_json(void);

#endif /* FLD_KBPF_H */
