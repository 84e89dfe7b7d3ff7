/* SPDX-License-Identifier: MIT */
/*
 * The protocol's daemon side (docs/protocol.md): what each client message
 * does.  Every message is decoded and validated by lib/proto first; the
 * shared region and the section memfds are checked (seals, sizes) before
 * they are mapped, and what is read from them is copied once and checked.
 * A violation drops that client only.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <faultline/format.h>

#include "format/smindex.h"

#include "access.h"
#include "budget.h"
#include "dlog.h"
#include "keeper.h"
#include "loop.h"
#include "procs.h"
#include "kbpf.h"
#include "kbpf_mirror.h"
#include "query.h"
#include "reply.h"
#include "requests.h"
#include "session.h"
#include "state.h"
#include "work.h"

/* What a connection is: nothing yet, a registered process, or a CLI. */
struct session {
	struct fld_proc *proc;
	bool first;		/* its HELLO had FL_HELLO_FIRST */
	bool querier;
	struct fld_job *query;		/* its answer being built (query.c), or NULL */
};

static struct fld_session_opts opts;

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void drop(struct fld_client *c, const char *what, const char *detail)
{
	char why[320];

	snprintf(why, sizeof(why), "%s: %s", what, detail);
	fld_client_drop(c, why);
}

/*
 * The most sites p may hold once its site table's sites the daemon was
 * not told of are added (fld_proc_scan): its own limit, and what its
 * user's budget has room for (budget.h: nothing is dropped for them).
 */
static size_t scan_limit(const struct fld_proc *p)
{
	uint64_t untold = fld_proc_untold(p, opts.max_sites);

	return (size_t)(p->num_sites + fld_budget_room_sites(p, untold));
}

/* fld_proc_final and fld_proc_scan within scan_limit. */
static void proc_final(struct fld_proc *p)
{
	fld_proc_final(p, opts.max_modules, scan_limit(p));
}

static void proc_scan(struct fld_proc *p)
{
	fld_proc_scan(p, opts.max_modules, scan_limit(p));
}

/* ------------------------------------------------------------------------
 * HELLO
 */

static bool sealed(int fd, int need)
{
	int seals = fcntl(fd, F_GET_SEALS);

	return seals >= 0 && (seals & need) == need;
}

static void on_hello(struct fld_client *c, struct session *s, const struct fl_msg *m, int *fds)
{
	struct fl_shm_header copy;
	struct fl_shm_layout l;
	struct fl_diag d;
	struct fld_proc *p, *old;
	struct stat st;
	void *region;
	pid_t pid = fld_client_pid(c);
	uint64_t start;

	if (s->proc || s->querier) {
		drop(c, "HELLO", "not the first message of the connection");
		return;
	}
	if ((pid_t)m->hello.pid != pid) {
		fld_send_error(c, m->seq, -EPERM, "HELLO for pid %u from pid %d",
			       m->hello.pid, (int)pid);
		drop(c, "HELLO", "forged pid");
		return;
	}
	if (fstat(fds[0], &st) != 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size != m->hello.region_size) {
		fld_send_error(c, m->seq, -EINVAL, "region: not a memfd of the size given");
		drop(c, "HELLO", "region size");
		return;
	}
	if (!sealed(fds[0], F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)) {
		fld_send_error(c, m->seq, -EPERM, "region: not sealed against shrink and grow");
		drop(c, "HELLO", "region seals");
		return;
	}
	region = mmap(NULL, st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
	if (region == MAP_FAILED) {
		fld_send_error(c, m->seq, -errno, "region: cannot map it");
		drop(c, "HELLO", "mmap");
		return;
	}
	memcpy(&copy, region, sizeof(copy));
	if (fl_shm_check(&copy, (uint64_t)st.st_size, (uint32_t)pid, &l, &d) != 0) {
		munmap(region, st.st_size);
		fld_send_error(c, m->seq, -EINVAL, "%s", d.msg);
		drop(c, "HELLO", d.msg);
		return;
	}
	start = fld_proc_start_time(pid);
	p = fld_proc_match(pid, fld_client_uid(c), start, st.st_ino);
	if (p && p->conn > fld_client_id(c)) {
		/*
		 * An earlier connection of this process, read late (a daemon
		 * that was stopped): the process has registered again since.
		 */
		munmap(region, st.st_size);
		fld_client_drop(c, "HELLO: the process registered again since, on a newer connection");
		return;
	}
	/* One registration per process: another one of this pid is refused. */
	old = fld_proc_find_live(pid);
	if (old && old != p) {
		munmap(region, st.st_size);
		fld_send_error(c, m->seq, -EEXIST, "pid %d is already registered", (int)pid);
		drop(c, "HELLO", "pid already registered");
		return;
	}
	if (p && p->client) {
		/* The same process on a newer connection: the agent gave the old one up. */
		struct session *os = fld_client_get_data(p->client);
		struct fld_client *oc = p->client;

		if (os)
			os->proc = NULL;
		p->client = NULL;
		fld_client_drop(oc, "superseded by a newer registration of the same process");
	}
	/* Another program in this pid (exec): what the last one counted is final. */
	for (size_t i = 0; i < fld_num_procs; i++)
		if (fld_procs[i] != p && fld_procs[i]->pid == pid && fld_procs[i]->region)
			proc_final(fld_procs[i]);
	if (!p) {
		p = fld_proc_add(pid, fld_client_uid(c), m->hello.comm);
		if (!p) {
			munmap(region, st.st_size);
			drop(c, "HELLO", "out of memory");
			return;
		}
	}
	/*
	 * The region it still had (it lingered, or reconnects) is the same
	 * memfd: kept, and its modules looked at again (some may have been
	 * unregistered meanwhile).
	 */
	if (p->region && p->region_ino == (uint64_t)st.st_ino) {
		munmap(region, st.st_size);
		region = p->region;
		l = p->layout;
	}
	fld_proc_attach(p, region, &l);
	p->region_ino = st.st_ino;
	if (!p->start_time)
		p->start_time = start;
	if (p->exited) {
		/* Registered again: the same entry, live again. */
		p->exited = false;
		p->restored_live = false;
		fld_bpf_proc_again(p);
	}
	memcpy(p->comm, m->hello.comm, sizeof(p->comm));
	p->comm[sizeof(p->comm) - 1] = 0;
	p->client = c;
	p->conn = fld_client_id(c);
	/* Its connection stays open for its lifetime, silent as it may be. */
	fld_client_keep(c);
	s->proc = p;
	s->first = m->hello.flags & FL_HELLO_FIRST;
	p->allow_patch = m->hello.flags & FL_HELLO_ALLOW_PATCH;
	p->rings = m->hello.flags & FL_HELLO_DONE;
	/* Who could ptrace it (access.h): an agent that does not report leaves it to /proc. */
	p->dump_reports = m->hello.flags & FL_HELLO_DUMP;
	p->agent_dumpable = !p->dump_reports || (m->hello.flags & FL_HELLO_DUMPABLE);
	fld_access_look(p);
	/* Counted by the kernel before the process hears WELCOME. */
	if (!fld_bpf_proc_counted(p))
		fld_bpf_proc_add(p, m->hello.flags & FL_HELLO_FIRST);
	/* Kept by the keeper before the process hears WELCOME too (keeper.h). */
	if (fld_keeper_hold(p, fds[0]) == 0)
		p->kept = true;
	{
		struct fl_msg_welcome w;

		memset(&w, 0, sizeof(w));
		fl_proto_header(&w, FL_MSG_WELCOME, sizeof(w), m->seq);
		w.daemon_pid = (uint32_t)getpid();
		/* Only to a client that knows the flags (proto.h, FL_HELLO_SYNC). */
		w.flags = fld_bpf_proc_counted(p) && (m->hello.flags & FL_HELLO_SYNC) ?
			  FL_WELCOME_BPF : 0;
		fld_client_send(c, &w, sizeof(w), NULL, 0);
	}
	fld_info("pid %d (%s, uid %u) registered%s", (int)pid, p->comm, (unsigned)p->uid,
		 p->num_mods ? " again" : "");
	fld_request_policy(p);
	fld_state_changed(p);
}

/* ------------------------------------------------------------------------
 * MODULE_ADD, MODULE_REMOVE, SYMBOLS
 */

/*
 * Module id is left out: its SYMBOLS and MODULE_REMOVE, which follow, are
 * ignored.  Returns false when too many are (the client was dropped).
 */
static bool leave_out(struct fld_client *c, struct fld_proc *p, uint32_t id)
{
	uint32_t *ids = p->num_gone < opts.max_modules ?
		realloc(p->gone, (p->num_gone + 1) * sizeof(*p->gone)) : NULL;

	if (!ids) {
		drop(c, "MODULE_ADD", "too many modules left out");
		return false;
	}
	p->gone = ids;
	p->gone[p->num_gone++] = id;
	return true;
}

static void on_module_add(struct fld_client *c, struct session *s, const struct fl_msg *m,
			  int *fds)
{
	const struct fl_msg_module_add *a = &m->module_add;
	struct fld_proc *p = s->proc;
	struct fld_module *mod;
	struct fld_module **grown;
	struct fl_diag d = { 0 };
	struct fl_shm_site *table;
	size_t want = (size_t)a->faultmap_size + a->stackmap_size + 8ull * a->sm_functions;
	/*
	 * The module as the daemon knows it already: from an earlier
	 * connection (a registration again), from the state file, or found in
	 * the region.
	 */
	struct fld_module *had = p ? fld_proc_module_any(p, a->module) : NULL;
	bool live = had && !had->removed, retired = false;
	unsigned nsm;
	char why[256];
	struct stat st;
	int err;

	if (!p) {
		drop(c, "MODULE_ADD", "before HELLO");
		return;
	}
	if (had && had->conn == fld_client_id(c)) {
		drop(c, "MODULE_ADD", "module id already registered");
		return;
	}
	if (!had && p->num_mods >= opts.max_modules) {
		fld_send_error(c, m->seq, -ENOSPC, "more than %zu modules", opts.max_modules);
		drop(c, "MODULE_ADD", "too many modules");
		return;
	}
	if ((uint64_t)a->first_counter + a->num_sites > p->layout.capacity) {
		drop(c, "MODULE_ADD", "counter slots outside the region");
		return;
	}
	if (p->num_sites - (live ? had->num_sites : 0) + a->num_sites > opts.max_sites ||
	    p->section_bytes - (live ? had->sections_size : 0) + want > opts.max_section_bytes) {
		fld_send_error(c, m->seq, -ENOSPC, "more than %zu sites or %zu bytes of sections",
			       opts.max_sites, opts.max_section_bytes);
		drop(c, "MODULE_ADD", "over its limit of sites or section bytes");
		return;
	}
	/*
	 * Over its user's budget: refused, the process stays registered (its
	 * program does not depend on the daemon; its other modules count on).
	 * A module described again is held already (within the per-process
	 * limits above): it is not refused what it had.
	 */
	if (!had && fld_budget_admit(p->uid, a->num_sites, want, why, sizeof(why)) != 0) {
		fld_send_error(c, m->seq, -EDQUOT, "module %u (%.*s, %u sites) not registered: %s",
			       a->module, (int)(a->name_len > 64 ? 64 : a->name_len), m->name,
			       a->num_sites, why);
		leave_out(c, p, a->module);
		return;
	}
	mod = calloc(1, sizeof(*mod));
	if (!mod || !(mod->name = strndup(m->name, a->name_len)) ||
	    !(mod->sites = calloc(a->num_sites ? a->num_sites : 1, sizeof(*mod->sites)))) {
		fld_module_free(mod);
		drop(c, "MODULE_ADD", "out of memory");
		return;
	}
	mod->id = a->module;
	mod->code_start = a->code_start;
	mod->code_size = a->code_size;
	mod->base = a->base;
	mod->has_base = a->flags & FL_MODULE_BASE;
	mod->first_counter = a->first_counter;
	mod->num_sites = a->num_sites;

	/* The sites: the process's own table, copied once, then checked. */
	table = (struct fl_shm_site *)((char *)p->region + p->layout.sites_offset);
	for (uint32_t i = 0; i < a->num_sites; i++) {
		/*
		 * The state first, with acquire: pairs with the process's
		 * release store of RETIRED (the module is unregistered already,
		 * its counts final, not reused before we say SAVED).
		 */
		uint64_t state = atomic_load_explicit(&table[a->first_counter + i].state,
						      memory_order_acquire);
		struct fl_shm_site e = {
			.faulting_pc = table[a->first_counter + i].faulting_pc,
			.handler_pc = table[a->first_counter + i].handler_pc,
			.module = table[a->first_counter + i].module,
			.kind = table[a->first_counter + i].kind,
		};

		retired |= state == FL_SHM_SITE_RETIRED;
		if (state > FL_SHM_SITE_RETIRED || !fl_fault_kind_label(e.kind) || e.module != a->module ||
		    e.faulting_pc - a->code_start >= a->code_size ||
		    e.handler_pc - a->code_start >= a->code_size) {
			/*
			 * Not necessarily a violation: the process may have
			 * unloaded the module (and cleared or reused its
			 * slots, perhaps while this copy was made) since it
			 * sent MODULE_ADD.  The module is left out; its
			 * SYMBOLS and MODULE_REMOVE will be ignored.
			 */
			fld_module_free(mod);
			/* What the daemon had of it stays (its SYMBOLS and MODULE_REMOVE too). */
			if (had)
				return;
			if (!leave_out(c, p, a->module))
				return;
			fld_debug("pid %d: module %u: its site table slots do not describe it "
				 "(unloaded since?): left out", (int)p->pid, a->module);
			return;
		}
		mod->sites[i] = (struct fld_site){
			.faulting_pc = e.faulting_pc, .handler_pc = e.handler_pc,
			.kind = e.kind, .slot = a->first_counter + i,
		};
	}

	if (want) {
		const char *bytes;
		ssize_t count;

		if (fstat(fds[0], &st) != 0 || (uint64_t)st.st_size != want ||
		    !sealed(fds[0], F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW)) {
			fld_module_free(mod);
			drop(c, "MODULE_ADD", "sections memfd: wrong size or not sealed");
			return;
		}
		mod->sections = mmap(NULL, want, PROT_READ, MAP_SHARED, fds[0], 0);
		if (mod->sections == MAP_FAILED) {
			mod->sections = NULL;
			fld_module_free(mod);
			drop(c, "MODULE_ADD", "sections memfd: cannot map");
			return;
		}
		mod->sections_size = want;
		bytes = mod->sections;
		count = fl_faultmap_validate(bytes, a->faultmap_size, 0, &d);
		if (a->faultmap_size && count != (ssize_t)a->num_sites) {
			fld_module_free(mod);
			drop(c, "MODULE_ADD", count < 0 ? d.msg :
			     "fault map entries do not match the sites");
			return;
		}
		if (a->stackmap_size) {
			/*
			 * Indexed as the process indexes it: faultline stackmaps
			 * --pc finds the record fl_stackmap_record_at would.
			 * Its records must be in the module's code.
			 */
			const struct fl_smindex_code code = {
				.lo = a->code_start, .hi = a->code_start + a->code_size,
			};
			uint64_t *funcs = malloc(8ull * (a->sm_functions ? a->sm_functions : 1));

			err = -ENOMEM;
			if (funcs) {
				memcpy(funcs, bytes + a->faultmap_size + a->stackmap_size,
				       8ull * a->sm_functions);
				err = fl_smindex_build(mod->name, bytes + a->faultmap_size,
						       a->stackmap_size, 0,
						       a->sm_functions ? funcs : NULL,
						       a->sm_functions, &code, &mod->stackmaps, &d);
			}
			free(funcs);
			if (err) {
				fld_module_free(mod);
				drop(c, "MODULE_ADD", d.msg[0] ? d.msg : "stack map: out of memory");
				return;
			}
		}
	}

	/*
	 * Nothing reads the fault map once it is checked (the sites are the
	 * region's), and the stack map index keeps what it needs of its own
	 * (format/smindex.h): the bytes go now, their size still counts
	 * toward the limits as long as the module is registered.
	 */
	if (mod->sections && !mod->stackmaps) {
		munmap(mod->sections, mod->sections_size);
		mod->sections = NULL;
	}
	mod->conn = fld_client_id(c);
	if (had && had->removed) {
		/* Frozen already: its counts stay; its name, if it had none, is this. */
		if (had->anonymous) {
			free(had->name);
			had->name = mod->name;
			mod->name = NULL;
			had->anonymous = false;
		}
		had->conn = mod->conn;
		fld_module_free(mod);
		fld_state_changed(p);
		return;
	}
	if (had) {
		/* Registered again: this description replaces the one it had. */
		for (size_t i = 0; i < p->num_mods; i++)
			if (p->mods[i] == had)
				p->mods[i] = mod;
		p->num_sites -= had->num_sites;
		p->section_bytes -= had->sections_size;
		fld_bpf_sites_remove(p, had);
		fld_module_free(had);
	} else {
		grown = realloc(p->mods, (p->num_mods + 1) * sizeof(*p->mods));
		if (!grown) {
			fld_module_free(mod);
			drop(c, "MODULE_ADD", "out of memory");
			return;
		}
		p->mods = grown;
		p->mods[p->num_mods++] = mod;
	}
	p->num_sites += mod->num_sites;
	p->section_bytes += mod->sections_size;
	if (retired)
		/* Unregistered before we read this: its counts are final now. */
		fld_module_freeze(p, mod);
	else
		fld_bpf_sites_add(p, mod);
	nsm = mod->stackmaps ? fl_smindex_count(mod->stackmaps) : 0;
	fld_debug("pid %d: module %u %s: %u site%s, %u stack map record%s",
		(int)p->pid, mod->id, mod->name, mod->num_sites, mod->num_sites == 1 ? "" : "s",
		nsm, nsm == 1 ? "" : "s");
	fld_state_changed(p);
}

/* Whether module id was left out at MODULE_ADD (and forget it when remove). */
static bool gone(struct fld_proc *p, uint32_t id, bool remove)
{
	for (size_t i = 0; p && i < p->num_gone; i++) {
		if (p->gone[i] == id) {
			if (remove)
				p->gone[i] = p->gone[--p->num_gone];
			return true;
		}
	}
	return false;
}

static void on_module_remove(struct fld_client *c, struct session *s, const struct fl_msg *m)
{
	struct fld_module *mod = s->proc ? fld_proc_module_any(s->proc, m->module_remove.module) :
				 NULL;

	if (!mod && gone(s->proc, m->module_remove.module, true))
		return;
	if (!mod) {
		drop(c, "MODULE_REMOVE", s->proc ? "unknown module" : "before HELLO");
		return;
	}
	/* Frozen already: found RETIRED at MODULE_ADD, or at a registration again. */
	if (mod->removed)
		return;
	fld_bpf_sites_remove(s->proc, mod);
	fld_module_freeze(s->proc, mod);
	/* Its counts stay; its stack maps are no longer shown: let them go. */
	s->proc->section_bytes -= mod->sections_size;
	fl_smindex_free(mod->stackmaps);
	mod->stackmaps = NULL;
	if (mod->sections)
		munmap(mod->sections, mod->sections_size);
	mod->sections = NULL;
	mod->sections_size = 0;
	fld_state_changed(s->proc);
}

static void on_symbols(struct fld_client *c, struct session *s, const struct fl_msg *m)
{
	struct fld_module *mod = s->proc ? fld_proc_module_any(s->proc, m->symbols.module) : NULL;
	struct fld_proc *p = s->proc;
	struct fl_symbol sym;
	size_t pos = 0;
	uint64_t bytes = 0;
	char why[256];

	if (!mod && gone(s->proc, m->symbols.module, false))
		return;
	if (!mod) {
		drop(c, "SYMBOLS", s->proc ? "unknown module" : "before HELLO");
		return;
	}
	while (fl_symbols_next(m, &pos, &sym)) {
		if (sym.site >= mod->num_sites) {
			drop(c, "SYMBOLS", "site index out of range");
			return;
		}
		bytes += sym.len;
	}
	/*
	 * Names are held like sections: over the process's limit or its
	 * user's budget, its sites stay unnamed (the process stays).
	 */
	if (p->name_bytes + bytes > opts.max_section_bytes) {
		fld_debug("pid %d: names over its limit of %zu bytes: left out", (int)p->pid,
			  opts.max_section_bytes);
		return;
	}
	if (fld_budget_admit(p->uid, 0, bytes, why, sizeof(why)) != 0)
		return;
	pos = 0;
	while (fl_symbols_next(m, &pos, &sym)) {
		struct fld_site *site = &mod->sites[sym.site];
		const char *had = fld_site_function(mod, site);
		size_t had_len = had ? strlen(had) : 0;

		if (fld_site_name(mod, sym.site, sym.name, sym.len) != 0)
			return;
		/* A function starts in the module's code: another offset is not known. */
		site->function_offset = sym.offset <= site->faulting_pc - mod->code_start ?
					sym.offset : FL_SYMBOL_NO_OFFSET;
		p->name_bytes += sym.len - had_len;
	}
	fld_state_changed(p);
}

/* ------------------------------------------------------------------------
 * The loop's callbacks
 */

static void on_connect(struct fld_client *c, void *ctx)
{
	struct session *s = calloc(1, sizeof(*s));

	(void)ctx;
	if (!s) {
		fld_client_drop(c, "out of memory");
		return;
	}
	fld_client_set_data(c, s);
}

static void on_message(struct fld_client *c, const void *buf, size_t len, int *fds,
		       size_t nfds, void *ctx)
{
	struct session *s = fld_client_get_data(c);
	struct fl_msg m;
	struct fl_diag d;

	(void)ctx;
	if (!s)
		return;
	if (fl_proto_decode(buf, len, nfds, &m, &d) != 0) {
		fld_send_error(c, m.seq, d.err, "%s", d.msg);
		drop(c, "protocol", d.msg);
		return;
	}
	switch (m.type) {
	case FL_MSG_HELLO:
		/* Mapped or refused: the loop closes the fd (a mapping needs none). */
		on_hello(c, s, &m, fds);
		break;
	case FL_MSG_MODULE_ADD:
		on_module_add(c, s, &m, fds);
		break;
	case FL_MSG_MODULE_REMOVE:
		on_module_remove(c, s, &m);
		break;
	case FL_MSG_SYMBOLS:
		on_symbols(c, s, &m);
		break;
	case FL_MSG_SYNC:
		if (!s->proc) {
			drop(c, "SYNC", "before HELLO");
			return;
		}
		/*
		 * A registration's modules and names are in when it asks: what
		 * the names grew by beyond them goes back (a million sites'
		 * names are megabytes).
		 */
		for (size_t i = 0; i < s->proc->num_mods; i++)
			fld_module_fit(s->proc->mods[i]);
		/* Everything before it is handled: messages are handled in order. */
		fld_send_reply(c, m.seq, "", 0);
		break;
	case FL_MSG_COMPLETE:
		if (!s->proc || !s->first) {
			drop(c, "COMPLETE", s->proc ? "after a HELLO without FIRST" : "before HELLO");
			return;
		}
		fld_bpf_proc_complete(s->proc);
		break;
	case FL_MSG_DONE:
		if (!s->proc || !s->proc->rings) {
			drop(c, "DONE", s->proc ? "after a HELLO without DONE" : "before HELLO");
			return;
		}
		/*
		 * One that answered requests in flight was asked for (the bell):
		 * it does not count against the client's message rate, which
		 * the requesters' rate would set otherwise.  Any other does.
		 */
		if (fld_requests_done(s->proc) > 0)
			fld_client_refund(c);
		break;
	case FL_MSG_DUMPABLE:
		if (!s->proc || !s->proc->dump_reports) {
			drop(c, "DUMPABLE", s->proc ? "after a HELLO without DUMP" : "before HELLO");
			return;
		}
		if (s->proc->agent_dumpable != (bool)m.dumpable.dumpable) {
			s->proc->agent_dumpable = m.dumpable.dumpable;
			fld_debug("pid %d: %sdumpable", (int)s->proc->pid,
				  s->proc->agent_dumpable ? "" : "not ");
			/* Its record says who may read it once it is gone. */
			fld_state_changed(s->proc);
		}
		break;
	case FL_MSG_QUERY:
		if (s->proc) {
			drop(c, "QUERY", "from a registered process");
			return;
		}
		s->querier = true;
		/* One answer at a time: they would interleave. */
		if (s->query) {
			fld_send_error(c, m.seq, -EBUSY, "this connection's last query is still "
				       "being answered");
			return;
		}
		fld_query(c, &m, &s->query);
		break;
	case FL_MSG_REQUEST:
	case FL_MSG_POINT:
		if (s->proc) {
			drop(c, m.type == FL_MSG_POINT ? "POINT" : "REQUEST", "from a registered process");
			return;
		}
		if (s->query) {
			fld_send_error(c, m.seq, -EBUSY, "this connection's last query is still "
				       "being answered");
			return;
		}
		s->querier = true;
		if (m.type == FL_MSG_POINT)
			fld_request_point(c, &m, opts.request_timeout_ms);
		else
			fld_request(c, &m, opts.request_timeout_ms);
		break;
	default:
		drop(c, "protocol", "a daemon's message from a client");
		break;
	}
}

static void on_disconnect(struct fld_client *c, void *ctx)
{
	struct session *s = fld_client_get_data(c);

	(void)ctx;
	fld_requests_forget(c);
	if (s && s->query)
		fld_query_cancel(s->query);
	if (s && s->proc) {
		struct fld_proc *p = s->proc;

		fld_info("pid %d (%s) unregistered", (int)p->pid, p->comm);
		fld_bpf_proc_exit(p);
		fld_proc_exit(p, opts.max_exited);
		/*
		 * Gone (its connection closes at exit): its counts are final.
		 * Still running (its agent gave the connection up, or we dropped
		 * it): it counts on in its region, and registers again (the same
		 * entry) or exits (check_lingering).
		 */
		if (!fld_proc_alive(p))
			proc_final(p);
		else
			proc_scan(p);
		/*
		 * Its final counts exist nowhere else now (but in the region
		 * the keeper holds until they are saved): its record is written.
		 */
		fld_state_exited(p);
	}
	free(s);
	fld_client_set_data(c, NULL);
}

/*
 * Once a second: the processes that disconnected and lived on, and the
 * ones the keeper gave back, are looked at; those gone have their final
 * counts now.
 * at_once: now, whatever the time (a stop).
 */
static void check_lingering(bool at_once)
{
	static uint64_t last;
	uint64_t now = mono_ms();

	if (now - last < 1000 && !at_once)
		return;
	last = now;
	for (size_t i = 0; i < fld_num_procs; i++) {
		struct fld_proc *p = fld_procs[i];

		if (p->exited && p->region && !fld_proc_alive(p)) {
			proc_final(p);
			fld_state_changed(p);
		}
	}
}

void fld_session_adopt(struct fld_kept *k, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct fld_proc *p, gone = { .pid = k[i].pid, .region_ino = k[i].ino };
		struct fl_shm_header copy;
		struct fl_shm_layout l;
		struct fl_diag d;
		struct stat st;
		void *region = MAP_FAILED;

		if (fstat(k[i].fd, &st) == 0 && S_ISREG(st.st_mode) &&
		    (uint64_t)st.st_size <= FL_PROTO_MAX_REGION &&
		    (uint64_t)st.st_size >= sizeof(copy) && sealed(k[i].fd, F_SEAL_SHRINK | F_SEAL_GROW))
			region = mmap(NULL, st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, k[i].fd, 0);
		close(k[i].fd);
		if (region != MAP_FAILED) {
			memcpy(&copy, region, sizeof(copy));
			if (fl_shm_check(&copy, (uint64_t)st.st_size, (uint32_t)k[i].pid, &l, &d)) {
				munmap(region, st.st_size);
				region = MAP_FAILED;
			}
		}
		p = region == MAP_FAILED ? NULL :
		    fld_proc_match(k[i].pid, k[i].uid, k[i].start_time, k[i].ino);
		if (region != MAP_FAILED && !p &&
		    (p = fld_proc_add(k[i].pid, k[i].uid, k[i].comm))) {
			/* Registered after the last save: known from the keeper only. */
			p->exited = true;
			p->restored_live = true;
		}
		if (!p) {
			if (region != MAP_FAILED)
				munmap(region, st.st_size);
			fld_keeper_release(&gone);
			continue;
		}
		fld_proc_attach(p, region, &l);
		p->region_ino = k[i].ino;
		p->kept = true;
		if (!p->start_time)
			p->start_time = k[i].start_time;
		if (!p->exited_ms)
			p->exited_ms = (uint64_t)time(NULL) * 1000;
		/* Gone meanwhile: its final counts, now (else when it is: check_lingering). */
		if (!fld_proc_alive(p))
			proc_final(p);
	}
	/*
	 * Their records are written by the tick's jobs (fld_state_tick): the
	 * keeper holds each region until its record is on disk.
	 */
}

static void on_tick(void *ctx)
{
	(void)ctx;
	check_lingering(false);
	fld_requests_poll();
	fld_state_tick();
	fld_bpf_tick();
}

/* The work left over from callbacks: one slice per user (work.h). */
static int on_work(void *ctx)
{
	(void)ctx;
	return fld_work_round();
}

static void on_drained(struct fld_client *c, void *ctx)
{
	struct session *s = fld_client_get_data(c);

	(void)ctx;
	if (s && s->query)
		fld_job_wake(s->query);
}

const struct fld_loop_ops fld_session_ops = {
	.on_connect = on_connect,
	.on_message = on_message,
	.on_disconnect = on_disconnect,
	.on_tick = on_tick,
	.on_work = on_work,
	.on_drained = on_drained,
};

void fld_session_stop(void)
{
	check_lingering(true);
}

void fld_session_init(const struct fld_session_opts *o)
{
	struct fld_budget_opts b = { .max_sites = o->max_user_sites, .max_bytes = o->max_user_bytes,
				     .max_state_bytes = o->max_user_state_bytes };

	static const struct fld_proc_observer keeper_observer = { .let_go = fld_keeper_release };

	opts = *o;
	fld_budget_init(&b);
	/* A kept region the process's entry no longer needs goes back. */
	fld_proc_observe(&keeper_observer);
}
