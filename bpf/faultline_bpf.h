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
 * fl_faults entry can keep what the program found in fl_sites for its ip
 * (struct fl_fault_counts' sites_gen) and look it up again only when
 * fl_sites may have changed since: one hash lookup per fault, not two.
 */

/* fl_faults (LRU): per (tgid, ip) user-mode fault counts. */
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
