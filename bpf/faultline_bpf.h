/*
 * The ABI between bpf/faultline.bpf.c and its loader: map keys, map values
 * and ring buffer records.  Shared by the BPF object and user space, so only
 * __u32/__u64 types (user space includes <linux/types.h> first; the BPF side
 * has them from vmlinux.h).  Every struct is padded explicitly: the two
 * compilers must agree on the layout byte for byte.
 */
#ifndef FAULTLINE_BPF_H
#define FAULTLINE_BPF_H

/* x86 page fault error code bits (arch/x86/include/asm/trap_pf.h). */
#define FL_PF_PROT  (1u << 0)	/* 0: page not present, 1: protection */
#define FL_PF_WRITE (1u << 1)	/* 0: read, 1: write */
#define FL_PF_USER  (1u << 2)	/* fault in user mode */
#define FL_PF_INSTR (1u << 4)	/* instruction fetch */

/* fl_registered: tgid -> struct fl_registration, filled by the loader. */

/*
 * fl_tgid_bits (the program's .bss): bit tgid % 64 of word tgid / 64 is
 * set while fl_registered has tgid, so that every page fault on the host
 * is filtered by one load, with no map lookup.  Sized for PID_MAX_LIMIT
 * (4,194,304 on 64-bit): 512 KiB.  Written through registered.h (user
 * space) and by the fork program.
 */
#define FL_TGID_LIMIT (1u << 22)
#define FL_TGID_WORDS (FL_TGID_LIMIT / 64)
struct fl_registration {
	__u32 flags;	/* FL_REG_* */
	__u32 pad;
};

/* A process this registration's process forks is registered too, from the
 * fork on (so that its first faults are counted before it registers itself);
 * its entry carries FL_REG_INHERIT | FL_REG_INHERITED until the loader
 * replaces it. */
#define FL_REG_INHERIT   (1u << 0)
#define FL_REG_INHERITED (1u << 1)

/* fl_sites: the faulting PCs the daemon mirrors (implicit-check sites). */
struct fl_site_key {
	__u32 tgid;
	__u32 pad;	/* must be 0 */
	__u64 pc;	/* runtime address of the faulting instruction */
};

struct fl_site_value {
	__u64 id;	/* the daemon's site id, opaque to the program */
};

/*
 * fl_sites_gen (the program's .bss): changed by every writer of fl_sites
 * after its change (registered.h's fl_bpf_sites_changed), so that an
 * fl_faults slot can keep what the program found in fl_sites for its ip
 * (struct fl_fault_counts' sites_gen) and look it up again only when
 * fl_sites may have changed since: no hash lookup per fault at all.
 */

/* Per (tgid, ip) user-mode fault counts: fl_faults' slots, and the records
 * user space makes of them (faults.h). */
struct fl_fault_key {
	__u32 tgid;
	__u32 pad;	/* 0 */
	__u64 ip;
};

struct fl_fault_counts {
	__u64 implicit;	/* ip is a registered faulting PC */
	__u64 stray;	/* ip is not */
	__u64 read;	/* neither write nor instruction fetch */
	__u64 write;
	__u64 ifetch;
	/* The program's: fl_sites_gen << 1 | 1 if ip was in fl_sites then. */
	__u64 sites_gen;
};

/*
 * fl_faults: an open-addressed table in an mmap-able array, not a hash
 * map: a page fault of a registered process finds its (tgid, ip) with a
 * multiplication and a few loads (the verifier inlines an array's lookup),
 * where a BPF hash map costs a helper call that hashes the key and, for an
 * LRU, marks the entry.  User space reads it as memory (faults.h).
 *
 * A key's slot is the first of fl_fault_hash(tgid, ip) + 0, 1, ...
 * FL_FAULT_PROBES - 1 (modulo FL_FAULT_SLOTS) whose tag is FL_SLOT_LIVE(tgid)
 * and whose ip is ip.  The program takes a new one with a compare-and-swap
 * of the tag from FL_SLOT_EMPTY or FL_SLOT_DEAD to FL_SLOT_BUSY, fills it
 * in, then stores the live tag: a slot read live has its ip (x86 keeps
 * stores in order, and loads too).  Two CPUs that take a new key's first
 * fault at once can take a slot each: user space sums the slots of one key,
 * so every count stays exact.  A fault that finds no slot for a new key
 * (none free in its window, or the free ones taken by other CPUs in two
 * tries) is not counted, and counts FL_STAT_MAP_FULL.  User space marks
 * an exited process's slots FL_SLOT_DEAD (never FL_SLOT_EMPTY: a probe
 * goes past a dead slot, and stops at an empty one).
 */
#define FL_FAULT_SLOTS_LOG2 17
#define FL_FAULT_SLOTS (1u << FL_FAULT_SLOTS_LOG2)
#define FL_FAULT_PROBES 32
#define FL_SLOT_EMPTY 0ull
#define FL_SLOT_BUSY 1ull
#define FL_SLOT_DEAD 2ull
#define FL_SLOT_LIVE(tgid) ((__u64)(tgid) << 32 | 3)

struct fl_fault_slot {
	__u64 tag;	/* FL_SLOT_* */
	__u64 ip;
	struct fl_fault_counts c;
};

/* The first slot a key probes (Fibonacci hashing: the top bits of the product). */
static inline __u32 fl_fault_hash(__u32 tgid, __u64 ip)
{
	return (__u32)(((ip ^ ((__u64)tgid << 47 | tgid)) * 0x9e3779b97f4a7c15ull) >>
		       (64 - FL_FAULT_SLOTS_LOG2));
}

/* fl_signals: which faults became signals, per (tgid, signal, si_code, ip);
 * ip is the user-mode instruction pointer the signal is delivered at, which
 * for a fault is the faulting instruction.  A plain hash, not an LRU: these
 * are the counts the daemon compares with dispatch's, and nothing may evict
 * them; the loader deletes a process's entries when it is done with it. */
struct fl_signal_key {
	__u32 tgid;
	__s32 sig;
	__s32 code;	/* si_code */
	__u32 pad;	/* 0 */
	__u64 ip;
};

struct fl_signal_counts {
	__u64 count;
	__u64 last_addr;	/* si_addr of the last one */
};

/* fl_samples ring buffer records. */
enum fl_sample_kind {
	FL_SAMPLE_FAULT = 1,
	FL_SAMPLE_SIGNAL = 2,
};

struct fl_sample {
	__u32 kind;	/* enum fl_sample_kind */
	__u32 tgid;
	__u32 tid;
	__s32 sig;	/* FL_SAMPLE_SIGNAL: signal number */
	__s32 code;	/* FL_SAMPLE_SIGNAL: si_code */
	__u32 implicit;	/* FL_SAMPLE_FAULT: 1 if ip is a registered site */
	__u64 ip;	/* faulting instruction (signal: where it is delivered) */
	__u64 addr;	/* fault address / si_addr */
	__u64 error_code;	/* FL_SAMPLE_FAULT */
	__u64 time_ns;	/* bpf_ktime_get_ns() */
};

/* fl_stats: per-CPU counters, indexed by these. */
enum fl_stat {
	FL_STAT_COUNTED,	/* page faults counted (registered processes) */
	FL_STAT_SIGNALS,	/* signals recorded */
	FL_STAT_SAMPLES,	/* samples written to the ring buffer */
	FL_STAT_RB_DROPS,	/* bpf_ringbuf_reserve failures */
	FL_STAT_MAP_FULL,	/* map updates that failed (never silent) */
	FL_STAT_INHERITED,	/* forked processes registered by inheritance */
	FL_STAT_SIGNALS_LOST,	/* fault signals not counted: fl_signals was full */
	FL_STAT_NR,
};

#endif
