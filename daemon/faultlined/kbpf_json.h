/* SPDX-License-Identifier: MIT */
/* What the eBPF program counted, as JSON for stats --json (kbpf_json.c).  Loop thread only. */
#ifndef FLD_KBPF_JSON_H
#define FLD_KBPF_JSON_H

#include <stdbool.h>

#include <json-c/json.h>

#include "kbpf_view.h"
#include "procs.h"

/* The counts of p's "kernel" object (fld_kview_proc_json) without the detail. */
struct fld_ksummary {
	bool complete;
	uint64_t fault_signals, stray_fault_signals, signal_samples;
};

/*
 * p's kernel counts, into *out.  Returns false when p has no kernel view
 * (fld_kview_proc_json's NULL).
 */
bool fld_kview_proc_summary(const struct fld_kview *v, const struct fld_proc *p,
			    struct fld_ksummary *out);
/*
 * p's "kernel" object for stats --json, or NULL when there is none: the
 * counts only, or with detail (for a query about p alone) the signal
 * entries, recent signal samples and, when v has them or p has exited, the
 * page fault counts and the top stray PCs.
 */
json_object *fld_kview_proc_json(const struct fld_kview *v, const struct fld_proc *p,
				 bool detail);
/*
 * The program's own counters ("bpf_stats"), or NULL when it does not run:
 * as v read them, or read now when v is NULL.
 */
json_object *fld_bpf_stats_json(const struct fld_kview *v);

#endif /* FLD_KBPF_JSON_H */
