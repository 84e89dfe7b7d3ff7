// SPDX-License-Identifier: GPL-2.0
/*
 * faultline's eBPF program: user-mode page faults of registered processes,
 * counted per (tgid, ip) and classified against the faulting PCs the daemon
 * registered (implicit-check fault) or not (stray fault); and which of them
 * became signals.  Samples go to a ring buffer.
 *
 * One object must load on Debian 12's 6.1 and on 6.18: CO-RE, and nothing
 * newer than 6.1 (bpf_ringbuf_* since 5.8, tp_btf since 5.5).  Every attach
 * point is a BTF-typed raw tracepoint (tp_btf): attaching one needs only the
 * kernel's BTF, where a classic tracepoint ("tp/...") needs its id from
 * tracefs, which a fresh machine or a container does not have mounted.  The
 * arguments are the tracepoint's TP_PROTO, the same on 6.1 and 6.18.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "faultline_bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* Set by the loader before load.  sample_every: one fault sample in every N
 * counted faults per CPU (0: no fault samples).  profile_all: count every
 * process, registered or not (the profiling mode). */
const volatile __u32 sample_every = 64;
const volatile __u32 profile_all = 0;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct fl_registration);
} fl_registered SEC(".maps");

/* fl_registered's keys as bits (faultline_bpf.h): the filter. */
__u64 fl_tgid_bits[FL_TGID_WORDS];

/* Changed after every change of fl_sites (faultline_bpf.h). */
__u64 fl_sites_gen;

/*
 * Room for a runtime's 10^6 implicit checks.  Not preallocated: an entry
 * is allocated when the daemon adds it, so only the buckets (16 MiB) are
 * held while it is empty; a fault looks it up only at an ip's first fault
 * and after a change of fl_sites (is_site).
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1 << 20);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct fl_site_key);
	__type(value, struct fl_site_value);
} fl_sites SEC(".maps");

/* An open-addressed table (faultline_bpf.h): 8 MiB, allocated at load. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, FL_FAULT_SLOTS);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct fl_fault_slot);
} fl_faults SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct fl_signal_key);
	__type(value, struct fl_signal_counts);
} fl_signals SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, FL_STAT_NR);
	__type(key, __u32);
	__type(value, __u64);
} fl_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} fl_samples SEC(".maps");

/* Returns the new value of this CPU's counter (0 if the index is bad). */
static __always_inline __u64 stat_inc(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&fl_stats, &idx);

	if (!v)
		return 0;
	/* Per-CPU and a program does not nest in itself on one CPU: no atomic. */
	return ++*v;
}

/*
 * Whether the nth counted fault of this CPU is sampled.  sample_every is
 * read-only data the verifier knows: for a power of two (the default, 64)
 * only the mask is left, not a 64-bit division.
 */
static __always_inline bool sampled(__u64 n)
{
	if (!(sample_every & (sample_every - 1)))
		return (n & (sample_every - 1)) == 0;
	return n % sample_every == 0;
}

/* One load, no helper call: page_fault_user runs on every fault on the host. */
static __always_inline bool tgid_wanted(__u32 tgid)
{
	/* A tgid is below PID_MAX_LIMIT: the mask is for the verifier. */
	return profile_all ||
	       (fl_tgid_bits[(tgid / 64) & (FL_TGID_WORDS - 1)] & (1ull << (tgid % 64)));
}

/*
 * Whether ip is a registered faulting PC of tgid: what its entry (c, or
 * NULL for a new one) found while fl_sites has not changed since, else
 * fl_sites asked again.  *keep is what the entry keeps of it (its
 * sites_gen).  The generation is read before the lookup: a change of
 * fl_sites after that is seen at the next fault.
 */
static __always_inline bool is_site(__u32 tgid, __u64 ip, const struct fl_fault_counts *c,
				    __u64 *keep)
{
	__u64 gen = *(volatile __u64 *)&fl_sites_gen;
	struct fl_site_key skey = { .tgid = tgid, .pc = ip };

	if (c) {
		*keep = *(volatile const __u64 *)&c->sites_gen;
		if (*keep >> 1 == gen)
			return *keep & 1;
	}
	*keep = gen << 1 | (bpf_map_lookup_elem(&fl_sites, &skey) != NULL);
	return *keep & 1;
}

static __always_inline void add_counts(struct fl_fault_counts *c, bool implicit,
				       unsigned long err)
{
	/* Several threads of one process can fault at one ip at once. */
	if (implicit)
		__sync_fetch_and_add(&c->implicit, 1);
	else
		__sync_fetch_and_add(&c->stray, 1);
	if (err & FL_PF_INSTR)
		__sync_fetch_and_add(&c->ifetch, 1);
	else if (err & FL_PF_WRITE)
		__sync_fetch_and_add(&c->write, 1);
	else
		__sync_fetch_and_add(&c->read, 1);
}

/* A new entry's counts: one fault, of its class and access. */
static __always_inline void first_counts(struct fl_fault_counts *d, bool implicit,
					 unsigned long err, __u64 sites_gen)
{
	d->implicit = implicit;
	d->stray = !implicit;
	d->ifetch = !!(err & FL_PF_INSTR);
	d->write = !d->ifetch && !!(err & FL_PF_WRITE);
	d->read = !d->ifetch && !d->write;
	d->sites_gen = sites_gen;
}

/*
 * Takes a slot for a new key at idx, whose tag was seen to be old
 * (FL_SLOT_EMPTY or FL_SLOT_DEAD), with its first fault's counts.  Returns
 * false when another CPU took it first.
 */
static __always_inline bool take_slot(__u32 idx, __u64 old, __u32 tgid, __u64 ip,
				      bool implicit, unsigned long err, __u64 keep)
{
	struct fl_fault_slot *s = bpf_map_lookup_elem(&fl_faults, &idx);

	if (!s || __sync_val_compare_and_swap(&s->tag, old, FL_SLOT_BUSY) != old)
		return false;
	s->ip = ip;
	first_counts(&s->c, implicit, err, keep);
	/* The tag last: a probe that reads it live reads the ip above (x86
	 * keeps stores in order; the probe loads the tag before the ip). */
	asm volatile("" ::: "memory");
	*(volatile __u64 *)&s->tag = FL_SLOT_LIVE(tgid);
	return true;
}

/*
 * A registered process's page fault: counted per (tgid, ip), classified
 * against its registered faulting PCs, one in sample_every sampled.  The
 * common case, an ip that faulted before while fl_sites stayed as it was,
 * is a probe of fl_faults (an inlined array lookup and two loads, a few
 * times at most) and two atomic adds: no helper call but the counter's.
 * Inlined (a BPF-to-BPF call costs a call and a return): none of it, not
 * even the zeroing of the keys, comes before the filter's branch in the
 * verified code (bpftool prog dump xlated).
 */
static __always_inline int count_fault(__u64 *ctx, __u64 pid_tgid)
{
	/* page_fault_user's TP_PROTO(address, regs, error_code). */
	unsigned long addr = ctx[0], err = ctx[2];
	struct pt_regs *regs = (struct pt_regs *)ctx[1];
	__u32 tgid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	__u64 ip = regs->ip, tag = FL_SLOT_LIVE(tgid);
	__u32 h = fl_fault_hash(tgid, ip);
	struct fl_fault_slot *s = NULL;
	bool implicit = false;
	__u64 n, keep;

	n = stat_inc(FL_STAT_COUNTED);
	/* Twice at most: a new key's slot can be taken by another CPU first. */
	for (int round = 0; round < 2 && !s; round++) {
		__u32 free_idx = 0;
		__u64 free_tag = FL_SLOT_BUSY;	/* none found */

		for (__u32 i = 0; i < FL_FAULT_PROBES; i++) {
			__u32 idx = (h + i) & (FL_FAULT_SLOTS - 1);
			struct fl_fault_slot *e = bpf_map_lookup_elem(&fl_faults, &idx);
			__u64 t;

			if (!e)
				break;
			t = *(volatile __u64 *)&e->tag;
			if (t == tag && *(volatile __u64 *)&e->ip == ip) {
				s = e;
				break;
			}
			if (t == FL_SLOT_DEAD && free_tag == FL_SLOT_BUSY) {
				free_idx = idx;
				free_tag = t;
			}
			if (t == FL_SLOT_EMPTY) {
				if (free_tag == FL_SLOT_BUSY) {
					free_idx = idx;
					free_tag = t;
				}
				break;
			}
		}
		if (s || free_tag == FL_SLOT_BUSY)
			break;
		implicit = is_site(tgid, ip, NULL, &keep);
		if (take_slot(free_idx, free_tag, tgid, ip, implicit, err, keep))
			goto counted;
	}
	if (!s) {
		/* Not counted, and never silently: nothing free in its window,
		 * or the slots it found taken by other CPUs twice. */
		stat_inc(FL_STAT_MAP_FULL);
		goto counted;
	}
	implicit = is_site(tgid, ip, &s->c, &keep);
	/* A plain store: a racing CPU that keeps an older one costs the next
	 * fault a lookup, nothing more. */
	if (s->c.sites_gen != keep)
		s->c.sites_gen = keep;
	add_counts(&s->c, implicit, err);
counted:
	if (sample_every && sampled(n)) {
		struct fl_sample *r = bpf_ringbuf_reserve(&fl_samples, sizeof(*r), 0);

		if (!r) {
			stat_inc(FL_STAT_RB_DROPS);
			return 0;
		}
		r->kind = FL_SAMPLE_FAULT;
		r->tgid = tgid;
		r->tid = tid;
		r->sig = 0;
		r->code = 0;
		r->implicit = implicit;
		r->ip = ip;
		r->addr = addr;
		r->error_code = err;
		r->time_ns = bpf_ktime_get_ns();
		bpf_ringbuf_submit(r, 0);
		stat_inc(FL_STAT_SAMPLES);
	}
	return 0;
}

/*
 * exceptions:page_fault_user, TP_PROTO(unsigned long address, struct pt_regs
 * *regs, unsigned long error_code): regs are the user registers at the fault.
 * Attaching it enables the kernel's page fault tracing (its regfunc flips
 * trace_pagefault_key), so every user page fault on the host runs this: a
 * process that is not registered leaves after one helper call (its tgid)
 * and one load (its bit in fl_tgid_bits), before anything else is read or
 * written.  Not BPF_PROG: its arguments would be loaded first.
 */
SEC("tp_btf/page_fault_user")
int fl_page_fault_user(__u64 *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();

	if (!tgid_wanted(pid_tgid >> 32))
		return 0;
	return count_fault(ctx, pid_tgid);
}

/*
 * signal_deliver fires in get_signal(), in the task the signal is delivered
 * to, once the action is chosen (handler, default, or ignored), before the
 * signal frame is built: the task's user registers are still those of the
 * interrupted instruction, which for a fault is the faulting one (x86 does
 * not advance the ip past an instruction that faults).  Every synchronous
 * fault signal of a registered process is counted, and sampled: they are
 * rare next to page faults.
 */
SEC("tp_btf/signal_deliver")
int BPF_PROG(fl_signal_deliver, int sig, struct kernel_siginfo *info,
	     struct k_sigaction *ka)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	struct fl_signal_key key = {};
	struct fl_signal_counts one = { .count = 1 }, *c;
	struct pt_regs *regs;
	__u64 addr;

	if (sig != 11 /* SIGSEGV */ && sig != 7 /* SIGBUS */ &&
	    sig != 4 /* SIGILL */ && sig != 8 /* SIGFPE */)
		return 0;
	if (!info || !tgid_wanted(tgid))
		return 0;
	stat_inc(FL_STAT_SIGNALS);

	regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	key.tgid = tgid;
	key.sig = sig;
	key.code = BPF_CORE_READ(info, si_code);
	key.ip = regs ? BPF_CORE_READ(regs, ip) : 0;
	addr = (__u64)BPF_CORE_READ(info, _sifields._sigfault._addr);

	one.last_addr = addr;
	c = bpf_map_lookup_elem(&fl_signals, &key);
	if (c) {
		__sync_fetch_and_add(&c->count, 1);
		c->last_addr = addr;
	} else if (bpf_map_update_elem(&fl_signals, &key, &one, BPF_NOEXIST)) {
		c = bpf_map_lookup_elem(&fl_signals, &key);
		if (c) {
			__sync_fetch_and_add(&c->count, 1);
			c->last_addr = addr;
		} else {
			/* The loader then knows its counts are not complete. */
			stat_inc(FL_STAT_MAP_FULL);
			stat_inc(FL_STAT_SIGNALS_LOST);
		}
	}

	struct fl_sample *s = bpf_ringbuf_reserve(&fl_samples, sizeof(*s), 0);

	if (!s) {
		stat_inc(FL_STAT_RB_DROPS);
		return 0;
	}
	s->kind = FL_SAMPLE_SIGNAL;
	s->tgid = tgid;
	s->tid = tid;
	s->sig = sig;
	s->code = key.code;
	s->implicit = 0;
	s->ip = key.ip;
	s->addr = addr;
	s->error_code = 0;
	s->time_ns = bpf_ktime_get_ns();
	bpf_ringbuf_submit(s, 0);
	stat_inc(FL_STAT_SAMPLES);
	return 0;
}

/*
 * A registered process that forks: the child is registered from the fork on
 * when the parent's registration says FL_REG_INHERIT, so that the faults it
 * takes before it registers itself with the daemon are counted too.  A new
 * thread (same tgid) changes nothing.  The loader replaces the entry when the
 * child registers, and deletes it if the child never does.
 */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(fl_process_fork, struct task_struct *parent, struct task_struct *child)
{
	struct fl_registration *preg, creg = {};
	__u32 ptgid = BPF_CORE_READ(parent, tgid);
	__u32 ctgid = BPF_CORE_READ(child, tgid);

	if (ctgid == ptgid || ctgid != (__u32)BPF_CORE_READ(child, pid))
		return 0;
	preg = bpf_map_lookup_elem(&fl_registered, &ptgid);
	if (!preg || !(preg->flags & FL_REG_INHERIT))
		return 0;
	creg.flags = FL_REG_INHERIT | FL_REG_INHERITED;
	if (bpf_map_update_elem(&fl_registered, &ctgid, &creg, BPF_NOEXIST)) {
		stat_inc(FL_STAT_MAP_FULL);
		return 0;
	}
	/* After the entry, as the loader does (registered.h). */
	__sync_fetch_and_or(&fl_tgid_bits[(ctgid / 64) & (FL_TGID_WORDS - 1)],
			    1ull << (ctgid % 64));
	stat_inc(FL_STAT_INHERITED);
	return 0;
}
