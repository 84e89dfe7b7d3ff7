/* SPDX-License-Identifier: MIT */
/* The registered processes, mirrored into the eBPF program's maps: see kbpf_mirror.h. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include <linux/types.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "faultline.skel.h"
#include "registered.h"

#include "dlog.h"
#include "kbpf_freeze.h"
#include "kbpf_load.h"
#include "kbpf_mirror.h"
#include "kbpf_procs.h"
#include "kbpf_ring.h"
#include "kbpf_view.h"

#define INHERIT_TICKS 3		/* ticks an inherited registration waits for HELLO */
/*
 * Sites written (or deleted) by one bpf(2) call: a million sites' mirror
 * took a million calls, most of the daemon's time for a registration.
 */
#define BATCH 512

/* Inherited registrations not claimed yet: pid and the ticks seen. */
static struct inherited {
	pid_t pid;
	unsigned ticks;
} *inh;
static size_t num_inh;

static void forget_inherited(pid_t pid)
{
	for (size_t i = 0; i < num_inh; i++) {
		if (inh[i].pid == pid) {
			inh[i] = inh[--num_inh];
			return;
		}
	}
}

/*
 * Mirrors m's sites into fl_sites, the first ones that fit: the map's
 * room, and for a user other than root a quarter of the map.  The rest
 * are classified as stray page faults; their fault signals still count.
 */
static void sites_add(const struct fld_proc *p, struct fld_module *m)
{
	struct faultline_bpf *skel = fld_kskel();
	uint64_t room = bpf_map__max_entries(skel->maps.fl_sites), mine;
	struct fld_kmod *km = fld_kmod_get(m);
	bool failed = false;

	if (!km) {
		fld_warn("eBPF: pid %d: out of memory: module %u's sites are not told from "
			 "stray faults", (int)p->pid, m->id);
		return;
	}
	if (p->uid != 0) {
		mine = fld_kmod_sites_of(p->uid);
		room = room / 4 > mine ? room / 4 - mine : 0;
	}
	if (room > m->num_sites)
		room = m->num_sites;
	for (uint32_t i = 0; i < room && !failed;) {
		struct fl_site_key keys[BATCH];
		struct fl_site_value vals[BATCH];
		__u32 want = room - i < BATCH ? (__u32)(room - i) : BATCH, count = want;

		for (__u32 k = 0; k < count; k++) {
			keys[k] = (struct fl_site_key){ .tgid = (__u32)p->pid,
							.pc = m->sites[i + k].faulting_pc };
			vals[k] = (struct fl_site_value){ .id = ((uint64_t)m->id << 32) | (i + k) };
		}
		if (bpf_map_update_batch(bpf_map__fd(skel->maps.fl_sites), keys, vals, &count,
					 NULL) < 0) {
			/*
			 * count says how many went in (not after EFAULT).  The
			 * next one alone gives its own error; a kernel without
			 * batches takes it, and each one after, that way.
			 */
			if (errno == EFAULT || count >= want)
				count = 0;
			i += count;
			km->kernel_sites = i;
			if (bpf_map__update_elem(skel->maps.fl_sites, &keys[count], sizeof(keys[0]),
						 &vals[count], sizeof(vals[0]), BPF_ANY)) {
				fld_warn("eBPF: pid %d: site %#llx: %s: its %u sites from here on "
					 "are not told from stray faults", (int)p->pid,
					 (unsigned long long)keys[count].pc, strerror(errno),
					 m->num_sites - i);
				failed = true;
				continue;
			}
			count = 1;
		}
		i += count;
		km->kernel_sites = i;
	}
	/* The process's faults at these PCs so far were stray, and kept so. */
	if (km->kernel_sites)
		fl_bpf_sites_changed(skel);
	if (!failed && km->kernel_sites < m->num_sites)
		fld_info("eBPF: pid %d (uid %u): %u of module %u's %u sites in the kernel's map "
			 "(a user other than root has a quarter of it): the others' page faults "
			 "count as stray", (int)p->pid, (unsigned)p->uid, km->kernel_sites, m->id,
			 m->num_sites);
}

/* Only the ones sites_add put there: deleting 2,000,000 absent keys took seconds. */
static void sites_remove(const struct fld_proc *p, struct fld_module *m)
{
	struct faultline_bpf *skel = fld_kskel();
	struct fld_kmod *km = fld_kmod_of(m);

	for (uint32_t i = 0; km && i < km->kernel_sites;) {
		struct fl_site_key keys[BATCH];
		__u32 want = km->kernel_sites - i < BATCH ? km->kernel_sites - i : BATCH;
		__u32 count = want;

		for (__u32 k = 0; k < count; k++)
			keys[k] = (struct fl_site_key){ .tgid = (__u32)p->pid,
							.pc = m->sites[i + k].faulting_pc };
		if (bpf_map_delete_batch(bpf_map__fd(skel->maps.fl_sites), keys, &count, NULL) < 0) {
			/* As in sites_add: the one that stopped the batch alone (absent is fine). */
			if (errno == EFAULT || count >= want)
				count = 0;
			i += count;
			if (bpf_map__delete_elem(skel->maps.fl_sites, &keys[count], sizeof(keys[0]),
						 0) && errno != ENOENT)
				fld_warn("eBPF: pid %d: site %#llx: %s", (int)p->pid,
					 (unsigned long long)keys[count].pc, strerror(errno));
			count = 1;
		}
		i += count;
	}
	if (km && km->kernel_sites) {
		fl_bpf_sites_changed(skel);
		km->kernel_sites = 0;
	}
}

void fld_bpf_sites_add(const struct fld_proc *p, struct fld_module *m)
{
	if (fld_kskel() && fld_kproc_of(p))
		sites_add(p, m);
}

void fld_bpf_sites_remove(const struct fld_proc *p, struct fld_module *m)
{
	if (fld_kskel() && fld_kproc_of(p))
		sites_remove(p, m);
}

void fld_bpf_proc_add(struct fld_proc *p, bool first)
{
	struct faultline_bpf *skel = fld_kskel();
	struct fl_registration reg = { .flags = FL_REG_INHERIT }, had;
	__u32 pid = (__u32)p->pid;
	struct fld_kproc *k;
	bool since_fork;

	if (!skel)
		return;
	/*
	 * Registered by the program at its fork, by a registered parent (and
	 * not forgotten by the tick since): counted from the fork on, where a
	 * child's counters start from zero.
	 */
	since_fork = bpf_map__lookup_elem(skel->maps.fl_registered, &pid, sizeof(pid), &had,
					  sizeof(had), 0) == 0 &&
		     (had.flags & FL_REG_INHERITED);
	/* A pid used again before the last one's entries were purged. */
	if (fld_kpurging(p->pid))
		fld_kfreeze_tick();
	forget_inherited(p->pid);
	k = fld_kproc_new(p);
	if (!k)
		return;
	k->complete = first && since_fork;
	/* Its samples read before its HELLO was (an orphan's), if any. */
	if (since_fork)
		fld_kring_adopt(k);
	k->lost_base = fld_kstat_sum(FL_STAT_SIGNALS_LOST);
	if (fl_bpf_register(skel, pid, &reg)) {
		fld_warn("eBPF: pid %d: not counted: %s", (int)p->pid, strerror(errno));
		fld_kproc_forget(p);
	}
}

bool fld_bpf_proc_counted(const struct fld_proc *p)
{
	return fld_kproc_of(p) != NULL;
}

void fld_bpf_proc_again(struct fld_proc *p)
{
	fld_kproc_forget(p);
}

void fld_bpf_proc_complete(struct fld_proc *p)
{
	struct fld_kproc *k = fld_kproc_of(p);

	if (k && !p->exited)
		k->complete = true;
}

void fld_bpf_proc_exit(struct fld_proc *p)
{
	struct faultline_bpf *skel = fld_kskel();
	struct fld_kproc *k = fld_kproc_of(p);
	__u32 pid = (__u32)p->pid;

	if (!skel || !k)
		return;
	fl_bpf_unregister(skel, pid);
	for (size_t i = 0; i < p->num_mods; i++) {
		if (!p->mods[i]->removed) {
			struct fld_kmod *km;

			sites_remove(p, p->mods[i]);
			km = fld_kmod_get(p->mods[i]);
			if (km)
				km->counted = true;
		}
	}
	k->exit_pending = true;
	fld_kpurge_later(p->pid);
}

/* Inherited registrations: the program made them; the loop keeps them honest. */
void fld_kmirror_tick(void)
{
	static uint64_t made_seen;
	__u32 key, cur, *prev = NULL, *pids = NULL;
	size_t n = 0, cap = 0, kept = 0;
	struct fl_registration reg;
	struct faultline_bpf *skel = fld_kskel();
	uint64_t made = fld_kstat_sum(FL_STAT_INHERITED);

	/*
	 * Nothing to look at unless the program made a registration since the
	 * last walk (it counts one after its map update: a count read here
	 * means the entry is in the map for the walk below), or one is still
	 * waiting.  The walk costs two system calls per registered process.
	 */
	if (!num_inh && made == made_seen)
		return;
	made_seen = made;

	/* Collected first: deleting while walking would restart the walk. */
	while (bpf_map__get_next_key(skel->maps.fl_registered, prev, &key, sizeof(key)) == 0) {
		if (bpf_map__lookup_elem(skel->maps.fl_registered, &key, sizeof(key), &reg,
					 sizeof(reg), 0) == 0 &&
		    (reg.flags & FL_REG_INHERITED) && !fld_proc_find_live((pid_t)key)) {
			if (n == cap) {
				__u32 *grown = realloc(pids, (cap ? 2 * cap : 16) * sizeof(*pids));

				if (!grown)
					break;
				pids = grown;
				cap = cap ? 2 * cap : 16;
			}
			pids[n++] = key;
		}
		cur = key;
		prev = &cur;
	}
	/* The ones no longer inherited (registered, or gone) leave inh. */
	for (size_t i = 0; i < num_inh; i++) {
		bool still = false;

		for (size_t j = 0; j < n && !still; j++)
			still = (pid_t)pids[j] == inh[i].pid;
		if (still)
			inh[kept++] = inh[i];
	}
	num_inh = kept;
	for (size_t j = 0; j < n; j++) {
		pid_t pid = (pid_t)pids[j];
		size_t i;

		for (i = 0; i < num_inh && inh[i].pid != pid; i++)
			;
		if (i == num_inh) {
			struct inherited *grown = realloc(inh, (num_inh + 1) * sizeof(*inh));

			if (!grown)
				continue;
			inh = grown;
			inh[num_inh++] = (struct inherited){ .pid = pid };
		}
		if (++inh[i].ticks < INHERIT_TICKS && !(kill(pid, 0) != 0 && errno == ESRCH))
			continue;
		fld_debug("eBPF: pid %d, forked by a registered process, never registered: "
			  "forgotten", (int)pid);
		fl_bpf_unregister(skel, pids[j]);
		inh[i] = inh[--num_inh];
		fld_kpurge_later(pid);
	}
	free(pids);
}

void fld_kmirror_stop(void)
{
	free(inh);
	inh = NULL;
	num_inh = 0;
}
