/* SPDX-License-Identifier: MIT */
/*
 * Queries from the command line (faultline stats, ps, sites, stackmaps):
 * one JSON document each (docs/protocol.md), sent as REPLY messages.  A
 * client sees only the processes of its uid (root sees all), and of those
 * only the ones it could ptrace (access.h) in an answer that gives
 * addresses (every query but PS); a process it may not see reads as "no
 * such process".
 *
 * An answer is built a slice at a time by a job of the asking user
 * (work.h), and sent as it is built, no faster than the client reads it:
 * a query about a process with 2,000,000 sites holds neither the daemon
 * nor its memory.  Between slices the processes may change: each is found
 * again by its serial, and one dropped meanwhile is ended where it stood.
 * A query about every process (no pid) lists at most LIST_MAX sites of
 * each, those with the most faults, and says how many it left out.  A
 * STATS query's arg may ask for only the sites that failed, and for at
 * most a number of them a process (proto.h); it counts those that never
 * failed.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include <faultline/format.h>

#include "format/smindex.h"

#include "access.h"
#include "dlog.h"
#include "kbpf_json.h"
#include "kbpf_load.h"
#include "kbpf_view.h"
#include "procs.h"
#include "query.h"
#include "reply.h"
#include "requests.h"
#include "work.h"

#ifndef FL_VERSION
#define FL_VERSION "unknown"
#endif

/* Sites listed per process in an answer about every process. */
#define LIST_MAX 4096
/* Queries of one user other than root under way at a time. */
#define QUERIES_PER_UID 16
/* Bytes queued to a client before the answer waits for it to read. */
#define QUEUE_HIGH (256u << 10)
/* Text gathered before a REPLY goes: what fits in one message. */
#define CHUNK (FL_PROTO_MAX_MESSAGE - sizeof(struct fl_msg_reply))

enum phase {
	HEAD,		/* the process's own fields */
	SCAN,		/* its counts: totals (and the sites to list, for a bounded list) */
	LIST,		/* each site, with the totals */
	PICKED,		/* the sites picked while scanning */
	RECORDS,	/* stack map records */
	TAIL,		/* the totals and the kernel's view */
};

struct pick {
	uint32_t mod, site;
	uint64_t faults;
	uint64_t failures;	/* the order: faults and failures sent to a heal stub */
};

struct query {
	struct fld_job job;
	struct query *next;		/* in the list of queries under way */
	struct fld_client *c;		/* NULL: the daemon's own (internal) */
	/* The daemon's own query: the whole text goes to done (fld_query_internal). */
	bool internal;
	fld_query_done_fn *done;	/* NULL once cancelled */
	void *done_ctx;
	struct fld_job **slot;		/* the owner's pointer to it, NULL once cancelled */
	uint32_t seq, what;
	uint64_t arg;
	bool one;			/* about one process (a pid was given) */
	bool failed;			/* a send failed: the client is gone */
	bool sent;			/* the answer's first message is sent */
	bool emitted_any;		/* a process is in the answer */
	struct fld_kview *v;
	uint64_t *serials;		/* the processes to answer about, in order */
	size_t n, i;
	/* Where it stands in serials[i]. */
	enum phase phase;
	size_t mod;
	uint32_t site;
	bool first;			/* no element in the current array yet */
	/* The sites of the current process to list: all, or picked (PICKED), at most limit. */
	uint32_t limit;
	bool failed_only;		/* only those that failed (site_failed) */
	uint64_t faults, num_sites, modules, never_failed;
	struct pick *top;		/* a min-heap of at most LIST_MAX, then sorted */
	size_t ntop, emitted;
	/*
	 * STATS: the faults of the current process's modules, of every site
	 * listed or not (module_faults): one per module that has any, the
	 * last one the module being scanned.
	 */
	struct mod_sum { uint32_t mod; uint64_t faults; } *mod_sums;
	size_t num_mod_sums, cap_mod_sums;
	char *text;			/* not sent yet */
	size_t len, cap;
};

static struct query *under_way;

/*
 * Whether q's text fills a message: time to send it before going on.  The
 * daemon's own query keeps its whole text (nothing is sent): never.
 */
static bool full(const struct query *q)
{
	return !q->internal && q->len >= CHUNK;
}

static const char *kind_name(uint32_t kind)
{
	const char *label = fl_fault_kind_label(kind);

	return label ? label : "?";
}

static void add(json_object *o, const char *key, json_object *v)
{
	json_object_object_add(o, key, v);
}

/* ------------------------------------------------------------------------
 * The text, and sending it
 */

/* Room for n more bytes of text.  Returns false when out of memory (q failed). */
static __attribute__((noinline)) bool grow(struct query *q, size_t n)
{
	size_t cap = q->cap ? q->cap : 2 * CHUNK;
	char *grown;

	while (cap < q->len + n)
		cap *= 2;
	grown = realloc(q->text, cap);
	if (!grown) {
		q->failed = true;
		return false;
	}
	q->text = grown;
	q->cap = cap;
	return true;
}

/* Inlined: an answer about 1,000 processes puts some 40,000 pieces. */
static inline void put(struct query *q, const char *s, size_t n)
{
	if (q->len + n > q->cap && !grow(q, n))
		return;
	memcpy(q->text + q->len, s, n);
	q->len += n;
}

static void put_str(struct query *q, const char *s)
{
	put(q, s, strlen(s));
}

/* o serialized; with open, without its closing brace (more keys follow).  Drops o. */
static void put_json(struct query *q, json_object *o, bool open)
{
	const char *t = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	size_t n = t ? strlen(t) : 0;

	if (!t)
		q->failed = true;
	else
		put(q, t, open && n ? n - 1 : n);
	json_object_put(o);
}

/*
 * The keys every process has in an answer are written here as text, not
 * built as json-c objects: with 1,000 processes, building, printing (its
 * integers through snprintf) and freeing them was most of the answer's
 * time (perf).  The text is what json-c prints for them.
 */

/* ",KEY:" */
static void put_key(struct query *q, const char *key)
{
	put(q, ",\"", 2);
	put_str(q, key);
	put(q, "\":", 2);
}

/* v in decimal. */
static void put_num(struct query *q, uint64_t v)
{
	char buf[20];
	size_t i = sizeof(buf);

	do {
		buf[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	put(q, buf + i, sizeof(buf) - i);
}

static void put_i64(struct query *q, int64_t v)
{
	if (v < 0)
		put(q, "-", 1);
	put_num(q, v < 0 ? -(uint64_t)v : (uint64_t)v);
}

static void put_u64(struct query *q, const char *key, uint64_t v)
{
	put_key(q, key);
	put_num(q, v);
}

static void put_bool(struct query *q, const char *key, bool v)
{
	put_key(q, key);
	put_str(q, v ? "true" : "false");
}

/* s as a JSON string, escaped as json-c escapes (JSON_C_TO_STRING_PLAIN). */
static void put_jstr(struct query *q, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	char out[64];
	size_t n = 0;

	/* In pieces of at most 64 bytes: an escape is 6 at most. */
	out[n++] = '"';
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		const char *e = NULL;
		char u[6];

		switch (c) {
		case '\b': e = "\\b"; break;
		case '\n': e = "\\n"; break;
		case '\r': e = "\\r"; break;
		case '\t': e = "\\t"; break;
		case '\f': e = "\\f"; break;
		case '"': e = "\\\""; break;
		case '\\': e = "\\\\"; break;
		case '/': e = "\\/"; break;
		default:
			break;
		}
		if (n > sizeof(out) - 6) {
			put(q, out, n);
			n = 0;
		}
		if (e) {
			memcpy(out + n, e, 2);
			n += 2;
		} else if (c < ' ') {
			memcpy(u, "\\u00", 4);
			u[4] = hex[c >> 4];
			u[5] = hex[c & 15];
			memcpy(out + n, u, 6);
			n += 6;
		} else {
			out[n++] = (char)c;
		}
	}
	if (n > sizeof(out) - 1) {
		put(q, out, n);
		n = 0;
	}
	out[n++] = '"';
	put(q, out, n);
}

/* A comma before every element of an array but its first. */
static void put_sep(struct query *q)
{
	if (!q->first)
		put(q, ",", 1);
	q->first = false;
}

/* Sends full messages of text; with last, all of it, the final one without MORE. */
static void send_text(struct query *q, bool last)
{
	static char buf[FL_PROTO_MAX_MESSAGE];
	struct fld_client *c = q->c;	/* a failed send drops it: q->c becomes NULL */
	size_t off = 0;

	while (!q->failed && (q->len - off >= CHUNK || (last && (off < q->len || !off)))) {
		struct fl_msg_reply r;
		size_t n = q->len - off > CHUNK ? CHUNK : q->len - off;
		bool more = !last || off + n < q->len;

		memset(&r, 0, sizeof(r));
		fl_proto_header(&r, FL_MSG_REPLY, sizeof(r) + n, q->seq);
		r.flags = more ? FL_REPLY_MORE : 0;
		r.len = (uint32_t)n;
		memcpy(buf, &r, sizeof(r));
		memcpy(buf + sizeof(r), q->text + off, n);
		/*
		 * The queue limits: for the first message; the answer then waits
		 * for the client to read (QUEUE_HIGH) instead.
		 */
		fld_client_bulk(c, q->sent);
		q->failed = fld_client_send(c, buf, sizeof(r) + n, NULL, 0) != 0;
		fld_client_bulk(c, 0);
		q->sent = true;
		off += n;
		if (!more)
			break;
	}
	memmove(q->text, q->text + off, q->len - off);
	q->len -= off;
}

/* ------------------------------------------------------------------------
 * One process
 */

/* m's name in the documents: its path (a process too old to name its program gave none). */
static const char *module_name(const struct fld_module *m)
{
	return m->name[0] ? m->name : "(main program)";
}

/* pc's offset in m (a module whose base is known, at or below pc), or NULL. */
static json_object *module_offset(const struct fld_module *m, uint64_t pc)
{
	return m->has_base && pc >= m->base ? json_object_new_uint64(pc - m->base) : NULL;
}

static json_object *site_json(const struct fld_proc *p, const struct fld_module *m,
			      const struct fld_site *s, uint64_t faults, const struct fld_kview *v)
{
	json_object *o = json_object_new_object();
	struct fl_shm_heal h;
	uint64_t kernel;

	add(o, "module", json_object_new_string(module_name(m)));
	add(o, "module_offset", module_offset(m, s->faulting_pc));
	add(o, "function", s->function ? json_object_new_string(fld_site_function(m, s)) : NULL);
	add(o, "function_offset", s->function && s->function_offset != FL_SYMBOL_NO_OFFSET ?
	    json_object_new_uint64(s->function_offset) : NULL);
	add(o, "faulting_pc", json_object_new_uint64(s->faulting_pc));
	add(o, "handler_pc", json_object_new_uint64(s->handler_pc));
	add(o, "kind", json_object_new_string(kind_name(s->kind)));
	add(o, "faults", json_object_new_uint64(faults));
	add(o, "populations", json_object_new_uint64(fld_site_populations(p, m, s)));
	add(o, "unloaded", json_object_new_boolean(m->removed && !p->exited));
	fld_site_heal(p, m, s, &h);
	add(o, "healed", json_object_new_uint64(h.failures));
	add(o, "state", json_object_new_string(h.state == FL_SHM_HEAL_HEALED ? "healed" :
					       h.state == FL_SHM_HEAL_UNHEALABLE ? "unhealable" :
					       "implicit"));
	add(o, "tactic", h.state == FL_SHM_HEAL_HEALED && fl_shm_tactic_name(h.tactic) ?
	    json_object_new_string(fl_shm_tactic_name(h.tactic)) : NULL);
	add(o, "why", h.state == FL_SHM_HEAL_UNHEALABLE ?
	    json_object_new_string(fl_shm_why_text(h.why)) : NULL);
	add(o, "healed_at", h.healed_at ? json_object_new_uint64(h.healed_at) : NULL);
	if (fld_kview_site_faults(v, p, m, s, &kernel))
		add(o, "kernel_faults", json_object_new_uint64(kernel));
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

static json_object *record_json(const struct fld_module *m, const struct fl_stackmap_record *r)
{
	json_object *ro = json_object_new_object(), *locs = json_object_new_array();

	add(ro, "module", json_object_new_string(module_name(m)));
	add(ro, "id", json_object_new_uint64(r->id));
	add(ro, "pc", json_object_new_uint64(r->pc));
	add(ro, "module_offset", module_offset(m, r->pc));
	add(ro, "stack_size", json_object_new_uint64(r->stack_size));
	for (uint16_t j = 0; j < r->num_locations; j++)
		json_object_array_add(locs, location_json(&r->locations[j]));
	add(ro, "locations", locs);
	add(ro, "live_outs", json_object_new_int(r->num_live_outs));
	return ro;
}

/* Whether pick a goes before b in the min-heap: fewer faults, or as many and later. */
static bool below(const struct pick *a, const struct pick *b)
{
	if (a->failures != b->failures)
		return a->failures < b->failures;
	return a->mod != b->mod ? a->mod > b->mod : a->site > b->site;
}

static void sift_down(struct pick *h, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, least = i;
		struct pick t;

		if (l < n && below(&h[l], &h[least]))
			least = l;
		if (r < n && below(&h[r], &h[least]))
			least = r;
		if (least == i)
			return;
		t = h[i];
		h[i] = h[least];
		h[least] = t;
		i = least;
	}
}

/* Keeps site (mod, site) when it is among the q->limit that failed most so far. */
static void consider(struct query *q, uint32_t mod, uint32_t site, uint64_t faults,
		     uint64_t failures)
{
	struct pick k = { mod, site, faults, failures };

	if (!q->limit)
		return;
	if (q->ntop < q->limit) {
		size_t i = q->ntop++;

		/* Sift up. */
		q->top[i] = k;
		while (i && below(&q->top[i], &q->top[(i - 1) / 2])) {
			struct pick t = q->top[i];

			q->top[i] = q->top[(i - 1) / 2];
			q->top[(i - 1) / 2] = t;
			i = (i - 1) / 2;
		}
	} else if (below(&q->top[0], &k)) {
		q->top[0] = k;
		sift_down(q->top, q->ntop, 0);
	}
}

static int cmp_pick(const void *a, const void *b)
{
	const struct pick *x = a, *y = b;

	if (x->mod != y->mod)
		return x->mod < y->mod ? -1 : 1;
	return x->site < y->site ? -1 : x->site > y->site;
}

static bool sites_query(const struct query *q)
{
	return q->what == FL_QUERY_STATS || q->what == FL_QUERY_SITES;
}

/*
 * Which sites a process's object lists: SITES every one; STATS those that
 * failed, when the arg asks for only those; at most the number it gives,
 * and at most LIST_MAX in an answer about every process (limit UINT32_MAX:
 * no bound).
 */
static void list_bounds(struct query *q)
{
	uint32_t top = 0;

	q->failed_only = false;
	if (q->what == FL_QUERY_STATS) {
		top = (uint32_t)(q->arg & FL_QUERY_TOP);
		q->failed_only = q->arg & FL_QUERY_FAILED_ONLY;
	}
	if (!top && q->one)
		q->limit = UINT32_MAX;
	else
		q->limit = top && top < LIST_MAX ? top : LIST_MAX;
}

/*
 * Whether site s failed: claimed faults, failures its heal stub sent, or
 * healed or found unhealable.  *failures: the first two.
 */
static bool site_failed(const struct fld_proc *p, const struct fld_module *m,
			const struct fld_site *s, uint64_t faults, uint64_t *failures)
{
	struct fl_shm_heal h;

	fld_site_heal(p, m, s, &h);
	*failures = faults + h.failures;
	return *failures || h.state != FL_SHM_HEAL_IMPLICIT;
}

static bool stackmaps_query(const struct query *q)
{
	return q->what == FL_QUERY_STACKMAPS || q->what == FL_QUERY_STACKMAP_PC;
}

static void head(struct query *q, const struct fld_proc *p)
{
	char comm[sizeof(p->comm) + 1];

	/* NUL-terminated, as json_object_new_string read it. */
	memcpy(comm, p->comm, sizeof(p->comm));
	comm[sizeof(p->comm)] = 0;
	put_str(q, "{\"pid\":");
	put_i64(q, p->pid);
	put_str(q, ",\"comm\":");
	put_jstr(q, comm);
	q->mod = q->site = 0;
	q->faults = q->num_sites = q->modules = q->never_failed = 0;
	q->ntop = q->emitted = 0;
	q->num_mod_sums = 0;
	q->first = true;
	if (stackmaps_query(q)) {
		put_key(q, "records");
		put(q, "[", 1);
		q->phase = RECORDS;
		return;
	}
	put_key(q, "uid");
	put_i64(q, p->uid);
	put_bool(q, "exited", p->exited);
	/*
	 * Its counts are final once it is gone: one that disconnected (or
	 * was given back by the keeper) and lives on still counts in its
	 * region, until check_lingering sees it gone.
	 */
	put_bool(q, "final", p->exited && !p->region);
	put_u64(q, "registered_ms", p->registered_ms);
	if (p->exited)
		put_u64(q, "exited_ms", p->exited_ms);
	for (size_t i = 0; i < p->num_mods; i++)
		q->modules += !p->mods[i]->removed || p->exited;
	if (sites_query(q) &&
	    (q->limit == UINT32_MAX || (!q->failed_only && p->num_sites <= q->limit))) {
		/* In site order, every one (that failed, when only those are asked for). */
		put_key(q, "sites");
		put(q, "[", 1);
		q->phase = LIST;
	} else {
		q->phase = SCAN;
	}
}

/* STATS: faults at a site of module mod, for its module_faults (q->failed: out of memory). */
static void add_mod_faults(struct query *q, uint32_t mod, uint64_t faults)
{
	struct mod_sum *last = q->num_mod_sums ? &q->mod_sums[q->num_mod_sums - 1] : NULL;

	if (!faults || q->what != FL_QUERY_STATS)
		return;
	if (last && last->mod == mod) {
		last->faults += faults;
		return;
	}
	if (q->num_mod_sums == q->cap_mod_sums) {
		size_t cap = q->cap_mod_sums ? 2 * q->cap_mod_sums : 8;
		struct mod_sum *grown = realloc(q->mod_sums, cap * sizeof(*grown));

		if (!grown) {
			q->failed = true;
			return;
		}
		q->mod_sums = grown;
		q->cap_mod_sums = cap;
	}
	q->mod_sums[q->num_mod_sums++] = (struct mod_sum){ mod, faults };
}

/*
 * p's "module_faults": each module with faults, and how many, of all its
 * sites (listed or not), so that sums by module need no site list.
 */
static void put_module_faults(struct query *q, const struct fld_proc *p)
{
	put_key(q, "module_faults");
	put(q, "[", 1);
	for (size_t i = 0; i < q->num_mod_sums; i++) {
		const struct fld_module *m = p->mods[q->mod_sums[i].mod];

		put_str(q, i ? ",{\"module\":" : "{\"module\":");
		put_jstr(q, module_name(m));
		put_u64(q, "faults", q->mod_sums[i].faults);
		put(q, "}", 1);
	}
	put(q, "]", 1);
}

/* Ends p's object: the totals, the kernel's view. */
static void tail(struct query *q, const struct fld_proc *p)
{
	struct fld_ksummary ks;
	json_object *kernel;

	if (!stackmaps_query(q)) {
		put_u64(q, "modules", q->modules);
		put_u64(q, "num_sites", q->num_sites);
		put_u64(q, "faults", q->faults);
		if (sites_query(q) && q->emitted < q->num_sites)
			put_u64(q, "sites_unlisted", q->num_sites - q->emitted);
		if (q->what == FL_QUERY_STATS) {
			put_u64(q, "sites_never_failed", q->never_failed);
			if (p)
				put_module_faults(q, p);
		}
		if (p && sites_query(q) && !q->one && fld_kview_proc_summary(q->v, p, &ks)) {
			/* fld_kview_proc_json's keys without the detail. */
			put_key(q, "kernel");
			put_str(q, "{");
			put_str(q, "\"complete\":");
			put_str(q, ks.complete ? "true" : "false");
			put_u64(q, "fault_signals", ks.fault_signals);
			put_u64(q, "stray_fault_signals", ks.stray_fault_signals);
			put_u64(q, "signal_samples", ks.signal_samples);
			put_str(q, "}");
		} else if (p && sites_query(q) && q->one &&
			   (kernel = fld_kview_proc_json(q->v, p, true))) {
			put_key(q, "kernel");
			put_json(q, kernel, false);
		}
	}
	put(q, "}", 1);
}

/*
 * Goes on with p for at most *budget units.  Returns true when p's object
 * is complete.
 */
static bool proc_step(struct query *q, const struct fld_proc *p, unsigned *budget)
{
	if (q->phase == HEAD)
		head(q, p);
	if (q->phase == SCAN || q->phase == LIST) {
		bool list = q->phase == LIST, pick = sites_query(q) && !list;

		for (; q->mod < p->num_mods; q->mod++, q->site = 0) {
			const struct fld_module *m = p->mods[q->mod];

			for (; q->site < m->num_sites; q->site++) {
				const struct fld_site *s = &m->sites[q->site];
				unsigned cost = list ? FLD_UNITS_JSON : 1;
				uint64_t faults, failures;

				if (*budget < cost || (list && full(q)))
					return false;
				*budget -= cost;
				faults = fld_site_faults(p, m, s);
				q->faults += faults;
				add_mod_faults(q, (uint32_t)q->mod, faults);
				q->num_sites++;
				failures = faults;
				if (q->what == FL_QUERY_STATS && !site_failed(p, m, s, faults, &failures)) {
					q->never_failed++;
					if (q->failed_only)
						continue;
				}
				if (pick) {
					consider(q, (uint32_t)q->mod, q->site, faults, failures);
				} else if (list) {
					put_sep(q);
					put_json(q, site_json(p, m, s, faults, q->v), false);
					q->emitted++;
				}
			}
		}
		if (list) {
			put(q, "]", 1);
		} else if (pick) {
			/* Listed in site order, with the counts the totals were made of. */
			qsort(q->top, q->ntop, sizeof(*q->top), cmp_pick);
			put_key(q, "sites");
			put(q, "[", 1);
			q->phase = PICKED;
		}
		if (q->phase != PICKED)
			q->phase = TAIL;
	}
	while (q->phase == PICKED) {
		const struct pick *k = &q->top[q->emitted];
		const struct fld_module *m;

		if (q->emitted == q->ntop) {
			put(q, "]", 1);
			q->phase = TAIL;
			break;
		}
		if (*budget < FLD_UNITS_JSON || full(q))
			return false;
		*budget -= FLD_UNITS_JSON;
		m = p->mods[k->mod];
		put_sep(q);
		put_json(q, site_json(p, m, &m->sites[k->site], k->faults, q->v), false);
		q->emitted++;
	}
	for (; q->phase == RECORDS && q->mod < p->num_mods; q->mod++, q->site = 0) {
		const struct fld_module *m = p->mods[q->mod];
		uint32_t n = m->stackmaps ? fl_smindex_count(m->stackmaps) : 0;

		if ((m->removed && !p->exited) || !n)
			continue;
		if (q->what == FL_QUERY_STACKMAP_PC) {
			/* The process's own lookup: the record fl_stackmap_record_at finds. */
			uint64_t function, stack_size;
			const struct fl_stackmap_record *r;

			if (!*budget || full(q))
				return false;
			--*budget;
			r = fl_smindex_find(m->stackmaps, q->arg, &function, &stack_size);
			if (r) {
				*budget -= *budget < FLD_UNITS_JSON ? *budget : FLD_UNITS_JSON;
				put_sep(q);
				put_json(q, record_json(m, r), false);
			}
			continue;
		}
		for (; q->site < n; q->site++) {
			const struct fl_stackmap_record *r = fl_smindex_record(m->stackmaps, q->site);

			if (!*budget || full(q))
				return false;
			--*budget;
			if (q->arg != UINT64_MAX && r->id != q->arg)
				continue;
			*budget -= *budget < FLD_UNITS_JSON ? *budget : FLD_UNITS_JSON;
			put_sep(q);
			put_json(q, record_json(m, r), false);
		}
	}
	if (q->phase == RECORDS) {
		put(q, "]", 1);
		q->phase = TAIL;
	}
	tail(q, p);
	return true;
}

/* p is gone in the middle of its object: ended with what was gathered. */
static void proc_gone(struct query *q)
{
	if (q->phase == LIST || q->phase == PICKED || q->phase == RECORDS)
		put(q, "]", 1);
	tail(q, NULL);
}

/* ------------------------------------------------------------------------
 * The job
 */

static struct query *query_of(struct fld_job *j)
{
	return (struct query *)((char *)j - offsetof(struct query, job));
}

/*
 * The daemon's own query ends: its text, NUL-terminated, goes to done (NULL
 * when out of memory).
 */
static enum fld_step internal_done(struct query *q)
{
	fld_query_done_fn *done = q->done;
	char *text = NULL;
	size_t len = q->len;

	if (!q->failed)
		put(q, "", 1);
	if (!q->failed) {
		text = q->text;
		q->text = NULL;
	}
	q->done = NULL;
	/*
	 * Over before done hears of it: what done does (a scrape that comes
	 * meanwhile, http.c) must not find this query under way and wait for
	 * an answer already given.
	 */
	if (q->slot)
		*q->slot = NULL;
	q->slot = NULL;
	if (done)
		done(q->done_ctx, text, text ? len : 0);
	else
		free(text);
	return FLD_STEP_DONE;
}

static enum fld_step query_step(struct fld_job *j, unsigned budget)
{
	struct query *q = query_of(j);
	struct fld_client *c = q->c;

	if (q->internal ? !q->done : !c)
		return FLD_STEP_DONE;
	if (q->failed)
		return q->internal ? internal_done(q) : FLD_STEP_DONE;
	/* The client reads slower than the answer is built: wait for it (on_drained). */
	if (!q->internal && fld_client_queued(c) >= QUEUE_HIGH)
		return FLD_STEP_WAIT;
	while (q->i < q->n && !q->failed) {
		const struct fld_proc *p = fld_proc_by_serial(q->serials[q->i]);

		if (!p && q->phase == HEAD) {
			q->i++;		/* dropped before its turn: not listed */
			continue;
		}
		if (q->phase == HEAD && q->emitted_any)
			put(q, ",", 1);
		if (!p)
			proc_gone(q);
		else if (!proc_step(q, p, &budget))
			goto out;
		q->emitted_any = true;
		q->phase = HEAD;
		q->i++;
		/* The daemon's own query too: the loop's other work gets its turn. */
		if (q->len >= CHUNK)
			goto out;
	}
	if (q->i == q->n && !q->failed) {
		put(q, "]}", 2);
		if (q->internal)
			return internal_done(q);
		send_text(q, true);
		if (!q->failed)
			fld_debug("client %lu (uid %u): query %u answered", fld_client_id(c),
				  (unsigned)fld_client_uid(c), q->what);
		return FLD_STEP_DONE;
	}
out:
	if (q->internal)
		return q->failed ? internal_done(q) : FLD_STEP_MORE;
	send_text(q, false);
	return q->failed ? FLD_STEP_DONE : FLD_STEP_MORE;
}

static void query_free(struct fld_job *j)
{
	struct query *q = query_of(j);

	for (struct query **at = &under_way; *at; at = &(*at)->next) {
		if (*at == q) {
			*at = q->next;
			break;
		}
	}
	if (q->slot)
		*q->slot = NULL;
	fld_kview_free(q->v);
	free(q->serials);
	free(q->top);
	free(q->mod_sums);
	free(q->text);
	free(q);
}

void fld_query_cancel(struct fld_job *j)
{
	struct query *q = query_of(j);

	q->slot = NULL;
	q->c = NULL;
	q->done = NULL;
	fld_job_cancel(j);
}

/* A query of what with arg, about only (NULL: every process uid may see). */
static struct query *query_new(uint32_t what, uint64_t arg, const struct fld_proc *only)
{
	struct query *q = calloc(1, sizeof(*q));

	if (!q)
		return NULL;
	q->what = what;
	q->one = only != NULL;
	q->serials = calloc(fld_num_procs ? fld_num_procs : 1, sizeof(*q->serials));
	q->arg = arg;
	list_bounds(q);
	/* The sites to list, for a bounded list. */
	if (sites_query(q) && q->limit != UINT32_MAX)
		q->top = malloc(LIST_MAX * sizeof(*q->top));
	if (!q->serials || (sites_query(q) && q->limit != UINT32_MAX && !q->top)) {
		free(q->serials);
		free(q->top);
		free(q);
		return NULL;
	}
	return q;
}

/*
 * Whether a query of what from uid and gid is about p: PS, statistics
 * without addresses, about every process of one's uid; the others give
 * runtime addresses, which only whoever could ptrace p may read.
 */
static bool sees(uint32_t what, struct fld_proc *p, uid_t uid, gid_t gid)
{
	return what == FL_QUERY_PS ? fld_proc_visible(p, uid) : fld_access_traceable(p, uid, gid);
}

/* Starts q as the job of uid (and gid): its processes, the document's head. */
static void query_start(struct query *q, uid_t uid, gid_t gid, const struct fld_proc *only,
			struct fld_job **slot)
{
	q->job = (struct fld_job){ .uid = uid, .step = query_step, .free = query_free };
	q->slot = slot;
	for (size_t i = 0; i < fld_num_procs; i++)
		if ((!only || fld_procs[i] == only) && sees(q->what, fld_procs[i], uid, gid))
			q->serials[q->n++] = fld_procs[i]->serial;
	/*
	 * Page fault counts only about one process: all of them is one map
	 * dump.  Shared with the queries of the last FLD_KVIEW_MAX_AGE_MS.
	 */
	if (sites_query(q))
		q->v = fld_kview_share(only ? only->pid : 0, only != NULL);
	/* The document's schema (docs/json.md) and who wrote it. */
	put_str(q, "{\"schema\":1,\"version\":\"" FL_VERSION "\",");
	if (q->what == FL_QUERY_STATS) {
		json_object *st = fld_bpf_stats_json(q->v);

		put_str(q, fld_bpf_on() ? "\"bpf\":true" : "\"bpf\":false");
		if (st) {
			put_key(q, "bpf_stats");
			put_json(q, st, false);
		}
		put(q, ",", 1);
	}
	put_str(q, "\"processes\":[");
	q->next = under_way;
	under_way = q;
	*slot = &q->job;
	fld_job_start(&q->job);
}

void fld_query(struct fld_client *c, const struct fl_msg *m, struct fld_job **slot)
{
	uid_t uid = fld_client_uid(c);
	gid_t gid = fld_client_gid(c);
	pid_t pid = (pid_t)m->query.pid;
	const struct fld_proc *only = NULL;
	struct query *q;
	size_t mine = 0;

	if (uid != 0) {
		for (struct query *u = under_way; u; u = u->next)
			mine += u->c && fld_client_uid(u->c) == uid;
		if (mine >= QUERIES_PER_UID) {
			fld_send_error(c, m->seq, -EBUSY, "%d queries of uid %u under way",
				       QUERIES_PER_UID, (unsigned)uid);
			return;
		}
	}
	fld_requests_poll();
	/* A pid means the live process, else its latest exited one. */
	for (size_t i = 0; pid && i < fld_num_procs; i++) {
		struct fld_proc *p = fld_procs[i];

		if (p->pid != pid || !sees(m->query.what, p, uid, gid))
			continue;
		if (!p->exited) {
			only = p;
			break;
		}
		if (!only || p->exit_seq > only->exit_seq ||
		    (p->exit_seq == only->exit_seq && p->exited_ms >= only->exited_ms))
			only = p;
	}
	if (pid && !only) {
		fld_send_error(c, m->seq, -ESRCH, "no registered process %d", (int)pid);
		return;
	}
	q = query_new(m->query.what, m->query.arg, only);
	if (!q) {
		fld_send_error(c, m->seq, -ENOMEM, "out of memory");
		return;
	}
	q->c = c;
	q->seq = m->seq;
	query_start(q, uid, gid, only, slot);
}

int fld_query_internal(uint32_t what, uint64_t arg, fld_query_done_fn *done, void *ctx,
		       struct fld_job **slot)
{
	struct query *q;

	fld_requests_poll();
	q = query_new(what, arg, NULL);
	if (!q)
		return -ENOMEM;
	q->internal = true;
	q->done = done;
	q->done_ctx = ctx;
	query_start(q, 0, 0, NULL, slot);
	return 0;
}
