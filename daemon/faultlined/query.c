/* SPDX-License-Identifier: MIT */
/*
 * Queries from the command line (faultline stats, ps, sites, stackmaps):
 * one JSON document each (schemas in docs/json.md), built with json-c and
 * sent as REPLY messages.  A client sees only the processes of its uid
 * (root sees all), and a process it may not see reads as "no such process".
 */
#include <errno.h>
#include <string.h>

#include <json-c/json.h>

#include "kbpf.h"
#include "procs.h"
#include "session.h"

static const char *kind_name(uint32_t kind)
{
	switch (kind) {
	case 1:
		return "load";
	case 2:
		return "load-store";
	case 3:
		return "store";
	default:
		return "?";
	}
}

static void add(json_object *o, const char *key, json_object *v)
{
	json_object_object_add(o, key, v);
}

static json_object *site_json(const struct fld_proc *p, const struct fld_module *m,
			      const struct fld_site *s, const struct fld_kview *v)
{
	json_object *o = json_object_new_object();
	uint64_t kernel;

	add(o, "module", json_object_new_string(m->name[0] ? m->name : "(main program)"));
	add(o, "function", s->function ? json_object_new_string(s->function) : NULL);
	add(o, "faulting_pc", json_object_new_uint64(s->faulting_pc));
	add(o, "handler_pc", json_object_new_uint64(s->handler_pc));
	add(o, "kind", json_object_new_string(kind_name(s->kind)));
	add(o, "faults", json_object_new_uint64(fld_site_faults(p, m, s)));
	add(o, "populations", json_object_new_uint64(fld_site_populations(p, m, s)));
	add(o, "unloaded", json_object_new_boolean(m->removed && !p->exited));
	if (fld_kview_site_faults(v, p, m, s, &kernel))
		add(o, "kernel_faults", json_object_new_uint64(kernel));
	return o;
}

static json_object *proc_json(const struct fld_proc *p, bool sites, const struct fld_kview *v,
			      bool detail)
{
	json_object *o = json_object_new_object();
	json_object *arr = sites ? json_object_new_array() : NULL;
	json_object *kernel;
	uint64_t faults = 0;
	size_t num_sites = 0, modules = 0;

	add(o, "pid", json_object_new_int(p->pid));
	add(o, "comm", json_object_new_string(p->comm));
	add(o, "uid", json_object_new_int64(p->uid));
	add(o, "exited", json_object_new_boolean(p->exited));
	add(o, "registered_ms", json_object_new_uint64(p->registered_ms));
	if (p->exited)
		add(o, "exited_ms", json_object_new_uint64(p->exited_ms));
	for (size_t i = 0; i < p->num_mods; i++) {
		const struct fld_module *m = p->mods[i];

		modules += !m->removed || p->exited;
		for (uint32_t k = 0; k < m->num_sites; k++) {
			faults += fld_site_faults(p, m, &m->sites[k]);
			num_sites++;
			if (arr)
				json_object_array_add(arr, site_json(p, m, &m->sites[k], v));
		}
	}
	add(o, "modules", json_object_new_uint64(modules));
	add(o, "num_sites", json_object_new_uint64(num_sites));
	add(o, "faults", json_object_new_uint64(faults));
	if (arr)
		add(o, "sites", arr);
	if (sites && (kernel = fld_kview_proc_json(v, p, detail)))
		add(o, "kernel", kernel);
	return o;
}

static json_object *location_json(const struct fl_stackmap_location *l)
{
	json_object *o = json_object_new_object();
	const char *kind = fl_location_kind_name(l->kind);

	add(o, "kind", json_object_new_string(kind ? kind : "?"));
	add(o, "size", json_object_new_int(l->size));
	add(o, "dwarf_reg", json_object_new_int(l->dwarf_reg));
	add(o, "offset", json_object_new_int(l->offset));
	if (l->kind == FL_LOC_CONSTANT || l->kind == FL_LOC_CONSTANT_INDEX)
		add(o, "constant", json_object_new_uint64(l->constant));
	return o;
}

static json_object *stackmaps_json(const struct fld_proc *p, uint64_t id, bool by_pc)
{
	json_object *o = json_object_new_object();
	json_object *recs = json_object_new_array();

	add(o, "pid", json_object_new_int(p->pid));
	add(o, "comm", json_object_new_string(p->comm));
	for (size_t i = 0; i < p->num_mods; i++) {
		const struct fld_module *m = p->mods[i];
		size_t n = m->sm ? fl_stackmap_count(m->sm) : 0;

		if (m->removed && !p->exited)
			continue;
		for (size_t k = 0; k < n; k++) {
			const struct fl_stackmap_record *r = fl_stackmap_record(m->sm, k);
			json_object *ro, *locs;

			if (by_pc ? m->record_pc[k] != id : (id != UINT64_MAX && r->id != id))
				continue;
			ro = json_object_new_object();
			locs = json_object_new_array();
			add(ro, "module", json_object_new_string(m->name[0] ? m->name :
								 "(main program)"));
			add(ro, "id", json_object_new_uint64(r->id));
			add(ro, "pc", json_object_new_uint64(m->record_pc[k]));
			add(ro, "stack_size", json_object_new_uint64(r->stack_size));
			for (uint16_t j = 0; j < r->num_locations; j++)
				json_object_array_add(locs, location_json(&r->locations[j]));
			add(ro, "locations", locs);
			add(ro, "live_outs", json_object_new_int(r->num_live_outs));
			json_object_array_add(recs, ro);
		}
	}
	add(o, "records", recs);
	return o;
}

void fld_query(struct fld_client *c, const struct fl_msg *m)
{
	uid_t uid = fld_client_uid(c);
	pid_t pid = (pid_t)m->query.pid;
	json_object *doc = json_object_new_object();
	json_object *procs = json_object_new_array();
	const char *text;
	const struct fld_proc *only = NULL;
	struct fld_kview *v = NULL;
	bool found = false;

	fld_session_poll_completions();
	/* Page fault counts only about one process: all of them is one map dump. */
	if (m->query.what == FL_QUERY_STATS || m->query.what == FL_QUERY_SITES)
		v = fld_kview_take(pid, pid != 0);
	/* A pid means the live process, else its latest exited one. */
	for (size_t i = 0; pid && i < fld_num_procs; i++) {
		const struct fld_proc *p = fld_procs[i];

		if (p->pid != pid || !fld_proc_visible(p, uid))
			continue;
		if (!p->exited) {
			only = p;
			break;
		}
		if (!only || p->exit_seq > only->exit_seq ||
		    (p->exit_seq == only->exit_seq && p->exited_ms >= only->exited_ms))
			only = p;
	}
	for (size_t i = 0; i < fld_num_procs; i++) {
		const struct fld_proc *p = fld_procs[i];

		if (!fld_proc_visible(p, uid) || (pid && p != only))
			continue;
		found = true;
		switch (m->query.what) {
		case FL_QUERY_STACKMAPS:
		case FL_QUERY_STACKMAP_PC:
			json_object_array_add(procs, stackmaps_json(p, m->query.arg,
					m->query.what == FL_QUERY_STACKMAP_PC));
			break;
		default:
			json_object_array_add(procs, proc_json(p, m->query.what != FL_QUERY_PS, v,
							       pid != 0));
			break;
		}
	}
	fld_kview_free(v);
	if (pid && !found) {
		json_object_put(doc);
		json_object_put(procs);
		fld_send_error(c, m->seq, -ESRCH, "no registered process %d", (int)pid);
		return;
	}
	if (m->query.what == FL_QUERY_STATS) {
		json_object *st = fld_bpf_stats_json();

		add(doc, "bpf", json_object_new_boolean(fld_bpf_on()));
		if (st)
			add(doc, "bpf_stats", st);
	}
	add(doc, "processes", procs);
	text = json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN);
	fld_send_reply(c, m->seq, text, strlen(text));
	json_object_put(doc);
}
