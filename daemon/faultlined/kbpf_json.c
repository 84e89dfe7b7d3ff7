/* SPDX-License-Identifier: MIT */
/* What the eBPF program counted, as JSON: see kbpf_json.h. */
#include <stdlib.h>

#include <bpf/libbpf.h>

#include "kbpf_json.h"
#include "kbpf_load.h"
#include "kbpf_procs.h"
#include "kbpf_ring.h"
#include "kbpf_view.h"

/*
 * Which of pv's entries are at one of p's sites: one walk of the sites,
 * each looked up in pv (sorted by PC), not a walk of the sites per entry
 * (2,000,000 sites times 4,096 entries).  NULL when there are none to
 * mark, or out of memory (then none reads as at a site).
 */
static bool *at_sites(const struct fld_proc *p, const struct fld_pview *pv)
{
	bool *at = pv->nsigs ? calloc(pv->nsigs, sizeof(*at)) : NULL;

	for (size_t i = 0; at && i < p->num_mods; i++) {
		for (uint32_t k = 0; k < p->mods[i]->num_sites; k++) {
			uint64_t pc = p->mods[i]->sites[k].faulting_pc;
			size_t lo = fld_kview_first_at(pv, pc);

			for (; lo < pv->nsigs && pv->sigs[lo].k.ip == pc; lo++)
				at[lo] = true;
		}
	}
	return at;
}

static void add(json_object *o, const char *key, json_object *v)
{
	json_object_object_add(o, key, v);
}

static json_object *u64(uint64_t v)
{
	return json_object_new_uint64(v);
}

/* The summary of pv, p's view; at as at_sites made it. */
static void summary(const struct fld_kview *v, const struct fld_proc *p,
		    const struct fld_pview *pv, const bool *at, struct fld_ksummary *out)
{
	const struct fld_kproc *k = fld_kproc_of(p);
	uint64_t at_site = 0;

	for (size_t i = 0; at && i < pv->nsigs; i++)
		if (fld_ksig_is_fault(&pv->sigs[i].k) && at[i])
			at_site += pv->sigs[i].c.count;
	out->complete = fld_kview_complete(v, k);
	out->fault_signals = pv->fault_signals;
	out->stray_fault_signals = pv->fault_signals - at_site;
	out->signal_samples = k->samples.signal_samples;
}

bool fld_kview_proc_summary(const struct fld_kview *v, const struct fld_proc *p,
			    struct fld_ksummary *out)
{
	struct fld_pview scratch;
	const struct fld_pview *pv = fld_kview_for(v, p, &scratch);
	bool *at;

	if (!pv)
		return false;
	at = at_sites(p, pv);
	summary(v, p, pv, at, out);
	free(at);
	return true;
}

json_object *fld_kview_proc_json(const struct fld_kview *v, const struct fld_proc *p,
				 bool detail)
{
	struct fld_pview scratch;
	const struct fld_pview *pv = fld_kview_for(v, p, &scratch);
	const struct fld_kproc *k = fld_kproc_of(p);
	struct fld_ksummary sum;
	json_object *o, *arr;
	bool *at;

	if (!pv)
		return NULL;
	at = at_sites(p, pv);
	summary(v, p, pv, at, &sum);
	o = json_object_new_object();
	add(o, "complete", json_object_new_boolean(sum.complete));
	add(o, "fault_signals", u64(sum.fault_signals));
	add(o, "stray_fault_signals", u64(sum.stray_fault_signals));
	add(o, "signal_samples", u64(sum.signal_samples));
	if (!detail) {
		free(at);
		return o;
	}
	if (!k->frozen && !v->with_faults)
		goto signals;
	add(o, "page_faults", u64(pv->total.implicit + pv->total.stray));
	add(o, "implicit", u64(pv->total.implicit));
	add(o, "stray", u64(pv->total.stray));
	arr = json_object_new_array();
	for (size_t i = 0; i < pv->ntop; i++) {
		const struct fld_kfault *f = &pv->top[i];
		json_object *e = json_object_new_object();

		add(e, "ip", u64(f->k.ip));
		add(e, "faults", u64(f->c.stray));
		add(e, "read", u64(f->c.read));
		add(e, "write", u64(f->c.write));
		add(e, "ifetch", u64(f->c.ifetch));
		json_object_array_add(arr, e);
	}
	add(o, "stray_faults", arr);
signals:
	arr = json_object_new_array();
	for (size_t i = 0; i < pv->nsigs; i++) {
		const struct fld_ksig *s = &pv->sigs[i];
		json_object *e = json_object_new_object();

		add(e, "ip", u64(s->k.ip));
		add(e, "signal", json_object_new_int(s->k.sig));
		add(e, "code", json_object_new_int(s->k.code));
		add(e, "count", u64(s->c.count));
		add(e, "last_addr", u64(s->c.last_addr));
		add(e, "site", json_object_new_boolean(at && at[i]));
		json_object_array_add(arr, e);
	}
	add(o, "signals", arr);
	add(o, "fault_samples", u64(k->samples.fault_samples));
	arr = json_object_new_array();
	for (unsigned i = 0; i < k->samples.nrecent; i++) {
		const struct fld_ksamples *ks = &k->samples;
		/* Oldest first. */
		const struct fld_ksample *r =
			&ks->recent[(ks->next_recent + FLD_KRECENT - ks->nrecent + i) % FLD_KRECENT];
		json_object *e = json_object_new_object();

		add(e, "time_ns", u64(r->time_ns));
		add(e, "tid", json_object_new_int((int32_t)r->tid));
		add(e, "signal", json_object_new_int(r->sig));
		add(e, "code", json_object_new_int(r->code));
		add(e, "ip", u64(r->ip));
		add(e, "addr", u64(r->addr));
		json_object_array_add(arr, e);
	}
	add(o, "recent_signals", arr);
	free(at);
	return o;
}

json_object *fld_bpf_stats_json(const struct fld_kview *v)
{
	static const char *const names[FL_STAT_NR] = {
		[FL_STAT_COUNTED] = "page_faults_counted",
		[FL_STAT_SIGNALS] = "signals",
		[FL_STAT_SAMPLES] = "samples",
		[FL_STAT_RB_DROPS] = "ring_buffer_drops",
		[FL_STAT_MAP_FULL] = "map_update_failures",
		[FL_STAT_INHERITED] = "inherited",
		[FL_STAT_SIGNALS_LOST] = "signals_lost",
	};
	int ncpu = libbpf_num_possible_cpus();
	json_object *o;

	if (!fld_kskel() || ncpu <= 0)
		return NULL;
	o = json_object_new_object();
	for (__u32 i = 0; i < FL_STAT_NR; i++)
		add(o, names[i], u64(v ? v->stats[i] : fld_kstat_sum(i)));
	add(o, "samples_received", u64(fld_kring_received()));
	return o;
}
