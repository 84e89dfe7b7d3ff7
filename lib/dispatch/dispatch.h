/* SPDX-License-Identifier: MIT */
/*
 * The signal-context room: everything the SIGSEGV/SIGBUS/SIGTRAP handler
 * can reach lives in lib/dispatch/ and keeps these rules.
 *
 *  - No allocation, no locks, no stdio, no lazy TLS (initial-exec only),
 *    errno preserved, a few hundred bytes of stack.
 *  - Globals it may read: fl_dispatch (below), the snapshot it entered,
 *    the chain records of chain.c (the relay's too, relay.c), fl_pokes, fl_poked, fl_park,
 *    fl_heal_trigger, fl_naps and the shim's mask state (mask.c).
 *    It writes only the site counters (and their dirty summary), the
 *    statistics, for SA_RESETHAND a
 *    chain or relay record, the patcher's handshake slots, the thread's
 *    entry of fl_naps (nap.c), and the heal policy's
 *    per-site watch and wanted bits, the thread's fl_mask_virtual and the
 *    held signals of mask.c; in a child forked in the middle of
 *    a patch, the code that patch had half written (trap.c).
 *  - Syscalls: ioctl on a region's userfaultfd, mprotect on a region's
 *    guard tail and (that forked child) on the pages it puts back,
 *    rt_sigprocmask,
 *    rt_sigaction (to restore a default action), tgkill,
 *    rt_tgsigqueueinfo (to itself: a held signal raised again), getpid, gettid,
 *    sigaltstack (to read: whether a stopped thread is on its alternate
 *    stack),
 *    sched_yield (a thread stopped for the patcher's handshake lets the
 *    patcher go on), futex (a thread at an instruction being patched
 *    waits for the patch, FUTEX_WAIT with a timeout;
 *    (a site to heal wakes the healer thread, and waits for it a moment:
 *    FUTEX_WAKE, FUTEX_WAIT with a timeout), clock_gettime
 *    (the vDSO's: the heal policy's window).
 *
 * The writers (lib/table/, lib/region/) build immutable snapshots and
 * publish them here; see "Snapshots" below for the protocol.  The patcher
 * (lib/patch/) publishes the sites it is changing in fl_pokes.
 */
#ifndef FL_DISPATCH_DISPATCH_H
#define FL_DISPATCH_DISPATCH_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <faultline/patch.h>
#include <faultline/region.h>

/* The kernel's flag for sa_restorer (x86-64); glibc does not export it. */
#ifndef SA_RESTORER
#define SA_RESTORER 0x04000000
#endif

/* One registered implicit check: 32 bytes, sorted by faulting_pc. */
struct fl_site_entry {
	uint64_t faulting_pc;
	uint64_t handler_pc;
	uint32_t kind;		/* enum fl_fault_kind */
	uint32_t counter;	/* index into fl_dispatch.counters */
	uint64_t function;	/* the start of its function (healing decodes from there) */
};

/* One module's sites; [start, end) covers all its faulting PCs. */
struct fl_snap_module {
	uint64_t start;
	uint64_t end;
	const struct fl_site_entry *sites;
	uint32_t num_sites;
	int id;
};

/*
 * A userfaultfd region as the handler sees it.  The region owns it; it
 * lives until the region is destroyed, which happens only after a
 * snapshot without it has been published and every reader of the old
 * one has left (fl_snapshot_synchronize).
 */
struct fl_region {
	uint64_t start;
	uint64_t size;
	uint64_t page_size;
	/*
	 * The committed limit in bytes from start.  fl_region_commit stores
	 * it (release); the handler loads it (acquire) before populating, so
	 * a page is never populated past a limit that was lowered before the
	 * fault.
	 */
	_Atomic uint64_t limit;
	int uffd;
	/*
	 * FL_REGION_*.  With FL_REGION_HELPER_THREAD, a fault past the limit
	 * reaches the faulting thread as a SIGBUS the helper thread forwarded
	 * (struct fl_region_forward below); once fl_region_forwarded has
	 * accepted it, it reads as the kernel's would: si_code BUS_ADRERR,
	 * si_addr the exact address.  Its REG_ERR is stale (it is no page
	 * fault of this thread), so si_errno carries the write bit of the
	 * userfaultfd message instead: 1 for a write, 0 for a read.
	 */
	uint32_t flags;
	const void *template_page;	/* NULL: zero pages */
	/*
	 * Helper-thread mode: random, set before the region is published;
	 * a forwarded SIGBUS carries it (only this process can know it).
	 */
	uint64_t forward_cookie;
	/*
	 * Forwarded SIGBUSes a thread took (fl_region_forwarded found the
	 * cookie), relaxed: the helper compares it with the ones it sent to
	 * learn that none waits in a thread that blocks SIGBUS.
	 */
	_Atomic uint64_t forwards_taken;
	/*
	 * The guard tail (region_fault.c): from this offset to the end, pages
	 * may be PROT_NONE (size: none may).  Lowered before an mprotect
	 * makes pages PROT_NONE, so that a handler that sees their SIGSEGV
	 * knows them for faultline's.
	 */
	_Atomic uint64_t guard_from;
	/*
	 * Guard faults claimed through the userfaultfd since the region was
	 * created or reset (relaxed): the tail is made at FL_GUARD_AFTER.
	 */
	_Atomic uint32_t uffd_guards;
	/* Writer-side state (lib/region/), never read by the handler. */
	void *priv;
};

struct fl_snap_region {
	uint64_t start;
	uint64_t end;
	struct fl_region *region;
};

/*
 * A module's stack map records (lib/table/stackmaps.h), for
 * fl_stackmap_record_at (lib/deopt/); [start, end) spans its records.
 * The handler never reads them: they share the snapshot for its
 * publication and grace period.
 */
struct fl_smindex;
struct fl_snap_stackmap {
	uint64_t start;
	uint64_t end;
	const struct fl_smindex *index;
	const char *name;	/* the module's: "" for the main program */
	int id;
};

/*
 * An immutable snapshot of the handler table: modules sorted by start,
 * non-overlapping; regions sorted by start, non-overlapping; stack maps
 * sorted by start, non-overlapping.
 */
struct fl_snapshot {
	uint32_t num_modules;
	uint32_t num_regions;
	uint32_t num_stackmaps;
	const struct fl_snap_module *modules;
	const struct fl_snap_region *regions;
	const struct fl_snap_stackmap *stackmaps;
};

/*
 * Snapshots: the one current snapshot is fl_dispatch.current.  A reader
 * (the handler) enters by reading the epoch, incrementing
 * readers[epoch & 1], then loading current; it leaves by decrementing the
 * same counter.  A writer publishes a new snapshot with one store to
 * current, then waits for a grace period (fl_snapshot_synchronize in
 * lib/table/publish.c): it flips the epoch and waits until the old parity's
 * counter drains, twice, so that every reader that could have loaded the
 * old pointer has left.  All five operations are seq_cst: the reader's
 * increment must be ordered before its load of current, and the writer's
 * store to current before its reads of the counters.
 */
struct fl_dispatch_state {
	_Atomic(const struct fl_snapshot *) current;
	_Atomic uint64_t epoch;
	_Atomic uint64_t readers[2];

	/* Set once by fl_init before the handler is installed. */
	_Atomic int ready;
	uint64_t null_bound;
	/* Per-site counters (relaxed increments), in the counters memfd. */
	_Atomic uint64_t *counters;
	uint32_t max_sites;
	/*
	 * Per site, the region pages populated at its PC (relaxed
	 * increments): slot i's is populations[i * populations_stride], in
	 * the same memfd's site table.
	 */
	_Atomic uint32_t *populations;
	uint32_t populations_stride;
	/*
	 * The region's dirty summary: one byte per FL_DISPATCH_DIRTY_SLOTS
	 * slots, set after a change to a slot's counter or populations
	 * (fl_dispatch_mark_dirty), cleared by the daemon.
	 */
	_Atomic uint8_t *dirty;

	/*
	 * [guard_lo, guard_hi): a span holding every region's guard tail
	 * (only ever widened, relaxed; region_fault.c).
	 */
	_Atomic uint64_t guard_lo;
	_Atomic uint64_t guard_hi;

	/*
	 * 1 while the first rescan of the loaded modules, which fl_init left
	 * to the fl-agent thread (FL_INIT_DEFER_DISCOVERY), has not published
	 * them; then 0 for good.  A futex word (scan_wait.c).  scanner: the
	 * thread doing that rescan.
	 */
	_Atomic uint32_t scan_pending;
	_Atomic int32_t scanner;

	/* Statistics (relaxed). */
	_Atomic uint64_t claimed;
	_Atomic uint64_t chained;
	_Atomic uint64_t populated;
	_Atomic uint64_t wrong_pid_sigbus;
};

extern struct fl_dispatch_state fl_dispatch;

/* Enters a read-side section; returns the parity to leave with. */
static inline unsigned fl_snapshot_enter(const struct fl_snapshot **snap)
{
	unsigned parity = (unsigned)(atomic_load(&fl_dispatch.epoch) & 1);

	atomic_fetch_add(&fl_dispatch.readers[parity], 1);
	*snap = atomic_load(&fl_dispatch.current);
	return parity;
}

static inline void fl_snapshot_leave(unsigned parity)
{
	atomic_fetch_sub(&fl_dispatch.readers[parity], 1);
}

/* Returns the site at pc, or NULL.  Two binary searches. */
const struct fl_site_entry *fl_snapshot_lookup(const struct fl_snapshot *s, uint64_t pc);

/* Returns the region containing addr, or NULL. */
const struct fl_snap_region *fl_snapshot_region(const struct fl_snapshot *s, uint64_t addr);

/*
 * Returns the module whose stack map records span pc, or NULL (for
 * fl_stackmap_record_at, lib/deopt/; the handler never calls it).
 */
const struct fl_snap_stackmap *fl_snapshot_stackmap(const struct fl_snapshot *s, uint64_t pc);

/*
 * Region fault (handler side, region_fault.c): addr is inside r.  Below
 * the committed limit populates the page and returns 1 (the access
 * retries; also when another thread populated it first, or the kernel
 * asked to try again); past it returns 0 (a guard fault: dispatch by PC).
 * Returns -1 when the page could not be populated.  Either mode: in
 * helper-thread mode the limit may have been raised since the helper
 * forwarded the fault.
 */
int fl_region_fault(const struct fl_region *r, uint64_t addr);

/*
 * The guard tail of a region: after a guard fault that went through the
 * userfaultfd (the kernel's SIGBUS, or the helper's) was claimed, the
 * handler makes the pages past the committed limit PROT_NONE, so that the
 * next guard fault there is a plain access fault (SIGSEGV, SEGV_ACCERR),
 * as cheap as an mprotect guard page's: no userfaultfd, no helper thread.
 * Committing more stays an atomic store: a page of the tail below the
 * limit goes back to read-write at its first access (fl_region_unguard),
 * and so does the rest of the tail when a fault there cannot be claimed,
 * so that the access faults again through the userfaultfd, as it would
 * have without the tail.  mprotect in signal context (async-signal-safe).
 */

/*
 * The guard fault through the userfaultfd after which the tail is made: not
 * the first, so that a region that takes one guard fault (and is reset, or
 * committed past it) pays no mprotect; the second shows they repeat.
 */
#define FL_GUARD_AFTER 2

/* Makes [the limit, the end) of r PROT_NONE.  Returns 0 or -errno. */
int fl_region_guard(struct fl_region *r);

/*
 * Makes [off's page, to) of r read-write again (to: an offset, rounded up
 * to a page; r->size for the whole rest).  Returns 0 or -errno.
 */
int fl_region_unguard(struct fl_region *r, uint64_t off, uint64_t to);

/*
 * Whether addr, the address of a SEGV_ACCERR, may be in a guard tail:
 * a lock-free check of the span of every tail so far (fl_dispatch), so
 * that other access faults do not enter the snapshot.
 */
bool fl_region_maybe_guarded(uint64_t addr);

/*
 * Populates the page at offset off (page-aligned) of r: UFFDIO_COPY from
 * the template, else UFFDIO_ZEROPAGE.  wake: also wake threads waiting in
 * the userfaultfd for that page (helper-thread mode; in SIGBUS mode nobody
 * waits).  Returns 0 or -errno (-EEXIST: the page is there already).
 * Async-signal-safe; the helper thread uses it too.
 */
int fl_region_populate(const struct fl_region *r, uint64_t off, bool wake);

/*
 * Helper-thread mode, how a fault past the limit reaches the faulting
 * thread.  The helper cannot send it a SIGBUS that looks like the
 * kernel's: rt_tgsigqueueinfo accepts si_code >= 0 only when the target is
 * the calling thread itself (EPERM otherwise, measured on 6.18).  So it
 * sends si_code SI_QUEUE, and this is the siginfo's first 48 bytes (the
 * kernel's struct kernel_siginfo: what it keeps of a queued siginfo).
 */
struct fl_region_forward {
	int32_t signo;		/* SIGBUS */
	int32_t write;		/* at si_errno: 1 for a write fault, 0 for a read */
	int32_t code;		/* SI_QUEUE */
	int32_t pad;
	uint64_t addr;		/* at si_addr: the exact fault address */
	/*
	 * The thread's user PC and stack pointer while it waited in the
	 * fault (/proc/self/task/TID/syscall), 0 when unknown.
	 */
	uint64_t pc;
	uint64_t sp;
	uint64_t cookie;	/* the region's forward_cookie */
};

/*
 * Handler side of the above, for a SIGBUS with si_code SI_QUEUE, before
 * rule 1 (it enters and leaves the snapshot itself).  Returns 1 when si is
 * a fault a region's helper thread forwarded to this thread, for the
 * context uc was interrupted in: si is rewritten in place to what the
 * kernel would have sent (si_code BUS_ADRERR, si_addr the address, the
 * rest zero but si_errno, the write bit), and the handler goes on as for
 * a kernel SIGBUS at si_addr.  Returns -1 when it was forwarded for a
 * context this is not (the thread took another signal while it waited in
 * the fault, and runs its handler now): the handler must return without
 * claiming or chaining; the access re-executes later and faults again if
 * it must.  Returns 0 for any other signal: chain it unchanged.
 */
int fl_region_forwarded(siginfo_t *si, const void *uc);

/*
 * Code being patched (lib/patch/, the writer; trap.c, the handler side).
 *
 * While the patcher changes an instruction, an int3 stands at its first
 * byte, and a thread that runs into it takes SIGTRAP at addr + 1.  Each
 * site of a patch is a slot here, published (addr, release) before its
 * int3 is written and freed (addr 0) after its new first byte is written
 * and every thread was serialized.  Every address that was ever a slot's
 * is also in fl_poked, for good: a SIGTRAP of a thread that ran into the
 * int3 just before it went may reach the handler any time later (the
 * thread may be preempted between the trap and its handler), and is then
 * known by its address and by the int3 being gone (see trap.c).
 */
#define FL_POKE_SLOTS 256
#define FL_POKE_MAX_LEN FL_PATCH_MAX_LEN
#define FL_TRAP_WAITING 64
#define FL_TRAP_WAIT_US 2000

struct fl_poke_slot {
	_Atomic uint64_t addr;		/* 0: free */
	/* What a forked child that inherited the change half made puts back. */
	uint32_t len;
	int32_t prot[2];		/* of the pages of addr and of addr + len - 1 */
	uint8_t old[FL_POKE_MAX_LEN];
};

struct fl_pokes {
	/* Statistics: traps at a site being patched, resumed. */
	_Atomic uint64_t trapped;
	/*
	 * A thread at a busy slot's int3 waits for the patch to end: FUTEX_WAIT
	 * on done (incremented, and woken when waiters is not 0, by the
	 * patcher after each batch), at most FL_TRAP_WAIT_US, recorded in
	 * waiting[] meanwhile.  The patcher, looking at a thread that waits
	 * in the kernel there, takes where it goes on (the int3's address, its
	 * stack as the trap found it) from waiting[]: the handler may run on
	 * the alternate stack.
	 */
	_Atomic uint32_t done;
	_Atomic uint32_t waiters;
	struct fl_trap_wait {
		_Atomic int32_t tid;		/* 0: free */
		_Atomic uint64_t pc, sp;
	} waiting[FL_TRAP_WAITING];

	/*
	 * 1 while a patch is under way, in a page of its own that fork wipes
	 * (MADV_WIPEONFORK; fl_pokes_here_init): a child forked without
	 * glibc's fork (no atfork handler waits for the patch) finds its
	 * slots busy and this 0, and knows that no thread of its own will
	 * finish them.  A child that shares the memory (vfork, CLONE_VM)
	 * sees the 1: the parent's patcher finishes.
	 */
	_Atomic uint32_t *here;
	/* A forked child putting the old bytes back: one thread at a time. */
	_Atomic uint32_t orphan_lock;
	struct fl_poke_slot slots[FL_POKE_SLOTS];
};

extern struct fl_pokes fl_pokes;

/*
 * The addresses patched (int3s written there): a set of tables, table k
 * with FL_POKED_FIRST << k entries, open addressing.  The patcher adds
 * (under its lock), the code of a module that goes away is forgotten
 * (FL_POKED_GONE written over its addresses: a tombstone, never an
 * address of code), and the handler looks up.
 */
#define FL_POKED_TABLES 24
#define FL_POKED_FIRST 1024
#define FL_POKED_GONE 1

struct fl_poked {
	_Atomic(_Atomic uint64_t *) table[FL_POKED_TABLES];
	size_t used[FL_POKED_TABLES];	/* the writer's */
};

extern struct fl_poked fl_poked;

/*
 * In a child forked in the middle of a patch (fl_pokes.here is 0 and a
 * slot is busy): puts every busy slot's old bytes back, gives their pages
 * their protection back, and frees the slots.  The trap handler calls it,
 * and the child's own first patch.  Async-signal-safe.
 */
void fl_trap_orphans_undo(void);

/*
 * Whether tid waits at a busy slot's int3 (fl_pokes.waiting): then *pc
 * and *sp are where it goes on.  Lock-free.
 */
bool fl_trap_waiting(int32_t tid, uint64_t *pc, uint64_t *sp);

/* Whether addr was patched (and its module is not gone).  Async-signal-safe, lock-free. */
bool fl_poked_has(uint64_t addr);

/*
 * The thread handshake (lib/patch/, the writer; trap.c, the handler side):
 * before a change that moves instruction boundaries, the patcher stops
 * the other threads that run (it only looks at those that wait in the
 * kernel: see lib/patch/patch.c) where they are and looks at their PC and
 * stack.  It sends each the handshake's signal (fl_park.signo) with
 * si_code SI_QUEUE and the value key + gen (key: random, this process's;
 * gen: this handshake's).  The thread's handler writes its PC, stack
 * pointer and thread pointer into a slot of who[] and waits until gen is
 * no longer the one running; then it returns, to code that may have
 * changed meanwhile (sigreturn serializes).  A late signal of an earlier
 * handshake only returns.
 */
#define FL_PARK_MAX 1024
/* Yields a stopped thread makes before it sleeps until let go. */
#define FL_PARK_YIELDS 50
/*
 * The handshake's signal: SIGRTMAX - 1 unless FAULTLINE_HANDSHAKE_SIGNAL
 * names another real-time signal.  The application's own actions for it
 * are chained as SIGTRAP's are.
 */
#define FL_PARK_SIGNAL_FROM_MAX 1

struct fl_park_slot {
	_Atomic int32_t tid;		/* 0 until pc, sp, tp and gen are written */
	/* The handshake it stopped for (a late stop of an earlier one is not counted). */
	_Atomic uint64_t gen;
	_Atomic uint64_t pc;
	_Atomic uint64_t sp;
	/* Its thread pointer: glibc's thread block, above its stack's frames. */
	_Atomic uint64_t tp;
	/*
	 * 1: stopped on its alternate signal stack, in a handler that is not
	 * faultline's: the context it interrupted, and its stack, are not
	 * known (the patcher tries again later).
	 */
	_Atomic uint32_t unknown;
};

/*
 * The context a handler of ours (fl_dispatch_handler) interrupted, while
 * it runs: this thread's, NULL outside.
 */
extern __thread const ucontext_t *fl_handler_uc __attribute__((tls_model("initial-exec")));
extern __thread int fl_handler_sig __attribute__((tls_model("initial-exec")));

/*
 * At most this many of faultline's own threads (the agent's, the region
 * helpers') are exempt from the handshake.
 */
#define FL_PARK_EXEMPT 64

struct fl_park {
	uint64_t key;			/* set once by fl_patch_enable */
	/*
	 * The handshake's signal, set once by fl_patch_enable before its
	 * handler is installed: a real-time one (FL_PARK_SIGNAL), not SIGTRAP,
	 * because a thread that runs into a patch's int3 while a handshake's
	 * SIGTRAP is pending would lose the int3's (a standard signal is
	 * pending once) and go on past the int3, into the middle of an
	 * instruction.
	 */
	int signo;
	_Atomic uint64_t running;	/* the gen of the handshake under way, 0: none */
	/*
	 * Futex words.  bell: bumped by the patcher each time running goes
	 * back to 0 (the stopped threads wait on it); reported: bumped by a
	 * stopped thread once its slot is written (the patcher waits on it).
	 */
	_Atomic uint32_t bell;
	_Atomic uint32_t reported;
	_Atomic uint32_t arrived;
	/*
	 * Threads in the handshake's handler now (stopped, or on their way
	 * out with the handshake's signal still blocked).
	 */
	_Atomic uint32_t inside;
	struct fl_park_slot who[FL_PARK_MAX];
	/* Threads the handshake does not stop (fl_park_exempt), 0: free. */
	_Atomic int32_t exempt[FL_PARK_EXEMPT];
};

extern struct fl_park fl_park;

/*
 * The futex waits of faultline's in each thread of the application
 * (nap.c says why they are counted): an entry per thread id, claimed by
 * its first wait (open addressing from a hash of the id), never freed.
 */
#define FL_NAPS (4 * FL_PARK_MAX)

struct fl_nap {
	_Atomic int32_t tid;		/* 0: free */
	_Atomic uint32_t count;
	/*
	 * FL_NAP_PARKED (or FL_NAP_PARKED_TRAP_BLOCKED) while the thread is in
	 * the handshake's handler, which blocks the handshake's signal: then
	 * the signal mask that status shows is the handler's, and the one it
	 * goes back to lets the handshake's signal through and blocks SIGTRAP
	 * or not, as said.  Set after the handler blocked the signal, cleared
	 * before it returns.
	 */
	_Atomic uint32_t park;
	/* Times the handshake stopped it (counted as it enters the handler). */
	_Atomic uint32_t stops;
};

/* What fl_naps_of read of a thread's entry. */
struct fl_nap_seen {
	uint32_t count, park, stops;
};

#define FL_NAP_PARKED 1
#define FL_NAP_PARKED_TRAP_BLOCKED 2

extern struct fl_nap fl_naps[FL_NAPS];

/* This thread's entry, claimed if it has none; NULL when the table is full. */
struct fl_nap *fl_nap_self(void);

/*
 * FUTEX_WAIT_PRIVATE on word while it holds val, counted in this thread's
 * entry of fl_naps.  Returns as syscall(2) does, errno the futex's.
 * Async-signal-safe, lock-free.
 */
long fl_nap_wait(_Atomic uint32_t *word, uint32_t val, const struct timespec *timeout);

/*
 * tid's entry: the count of its waits, its park (0, FL_NAP_PARKED...) and
 * its stops, into *seen.  Returns false when tid has no entry (it never
 * waited nor was stopped, or the table was full).  Lock-free.
 */
bool fl_naps_of(int32_t tid, struct fl_nap_seen *seen);

/*
 * The handshake's side of the handler, for a SIGTRAP (trap.c), before
 * anything else: returns true when si is a handshake's (then this thread
 * has been stopped and let go, or that handshake was over).  It may stop a
 * thread that is in another handler of ours (a fault being claimed), so it
 * comes before the handler's recursion guard; it blocks SIGTRAP while the
 * thread waits, so handshakes do not nest.
 */
bool fl_trap_park(int sig, const siginfo_t *si, const ucontext_t *uc);

/*
 * Set while this thread's handler of ours decides where a SIGSEGV or
 * SIGBUS goes on (handler.c): a stop that comes meanwhile is deferred
 * until fl_trap_park_deferred, called with the decision made (the
 * context's PC the handler's, when the fault is claimed).
 */
extern __thread int fl_dispatch_claiming __attribute__((tls_model("initial-exec")));
void fl_trap_park_deferred(const ucontext_t *uc);

/*
 * The handler side of patching, for a SIGTRAP (trap.c): returns true when
 * the trap was at an int3 of a patch, and uc resumes at the instruction
 * (which is then the old one or the new one, whole); false: chain it,
 * as without faultline (the application's own int3, int $3, int1, a
 * breakpoint at an address patched long ago).
 */
bool fl_trap_claim(const siginfo_t *si, ucontext_t *uc);

/*
 * Not signal context.  The calling thread is (on) or is no longer (off)
 * one of faultline's own threads that block every signal and never run
 * code that can be patched (the agent's threads, a region's helper): the
 * handshake leaves it running instead of waiting for it to stop.  A
 * thread marks itself first thing, and unmarks itself before it exits (a
 * later thread may get its tid).  Returns 0, or -ENOSPC (on, with
 * FL_PARK_EXEMPT threads marked: then handshakes are refused while the
 * thread runs, as for any thread that blocks SIGTRAP).
 */
int fl_park_exempt(bool on);
/*
 * Not signal context.  Starts fn(arg) in a thread of faultline's own:
 * every signal blocked from its first instruction, marked exempt before
 * this returns (a handshake right after must not wait for it), unmarked
 * when fn returns.  attr: the thread's attributes, or NULL.  Returns 0
 * with *t set, -errno when the thread could not be created, or -ENOSPC
 * when it runs but could not be marked (fl_park_exempt).
 */
int fl_park_exempt_thread(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *),
			  void *arg);
/* Whether tid is marked.  Allocation-free. */
bool fl_park_is_exempt(int32_t tid);
/* In a forked child (the table's fork handler): no thread is marked. */
void fl_park_fork_child(void);

/*
 * The heal policy's signal side (heal_note.c; the healer thread is
 * lib/patch/heal_policy.c's): a claimed fault at a site counts in its
 * watch; a fault that makes `after` failures or more within window_s
 * seconds (0: ever) sets the site's wanted bit and wakes the healer (so a
 * threshold lowered below a site's count, or a site unhealed, heals at
 * its next failure).  Never in signal
 * context: the healing itself.
 */
struct fl_heal_watch {
	_Atomic uint32_t start;		/* the window's start, CLOCK_MONOTONIC_COARSE seconds */
	_Atomic uint32_t count;		/* failures in it */
};

/*
 * A watch's count from which the site is not asked for any more (set by
 * the healer when it cannot be healed in place; a new window or an unheal
 * starts again from 0).
 */
#define FL_HEAL_GAVE_UP 0x80000000u

struct fl_heal_trigger {
	/*
	 * Set by the healer, watch and wanted before after (release; the
	 * handler's acquire of after pairs with it); 0: no policy.
	 */
	_Atomic uint32_t after;
	_Atomic uint32_t window_s;
	struct fl_heal_watch *watch;	/* per counter slot */
	_Atomic uint64_t *wanted;	/* a bit per counter slot */
	uint32_t slots;
	/* The healer's futex word: incremented after a wanted bit is set. */
	_Atomic uint32_t bell;
	/*
	 * The healer's rounds: started is incremented before a round looks at
	 * the wanted bits, done set to it (and woken) after the round.  The
	 * thread whose failure made a site wanted waits (at most
	 * FL_HEAL_WAIT_MS) for the first round that starts after its bit was
	 * set, so that the site fails no more than `after` times.
	 */
	_Atomic uint32_t started;
	_Atomic uint32_t done;
};

#define FL_HEAL_WAIT_MS 100

extern struct fl_heal_trigger fl_heal_trigger;

/* A claimed fault at counter slot slot: counts it for the heal policy. */
void fl_heal_note(uint32_t slot);

/* The handler, installed by fl_dispatch_install. */
void fl_dispatch_handler(int sig, siginfo_t *si, void *uc);

/*
 * scan_wait.c.  A fault no site claimed while fl_dispatch.scan_pending is
 * set waits for the first rescan (at most a few seconds; not a signal
 * someone sent, not in the scanning thread): true when the rescan has
 * published the modules since, and the fault is to be looked up again.
 */
bool fl_dispatch_scan_wait(const siginfo_t *si);
/* Waits while scan_pending is set, at most ms milliseconds: whether it was cleared (also by an exit's wait). */
bool fl_dispatch_scan_wait_ms(long ms);
/* The first rescan has published its modules: clears scan_pending, wakes the waiters. */
void fl_dispatch_scan_done(void);

/*
 * Installs fl_dispatch_handler for SIGSEGV and SIGBUS, recording the
 * actions in place as the chain.  Returns 0 or -errno.  Not signal context;
 * called once by fl_init.
 */
int fl_dispatch_install(void);

/*
 * Installs fl_dispatch_handler for SIGTRAP and the handshake's signal
 * (fl_park.signo, set before) too, with the same chain (code patching
 * needs them: lib/patch/).  Idempotent.  Returns 0 or -errno.  Not signal
 * context.
 */
int fl_dispatch_install_trap(void);

/* Returns true when the kernel's action for sig is still ours. */
bool fl_dispatch_installed(int sig);

/*
 * Installs again the mirror of each of SIGSEGV, SIGBUS and SIGTRAP that is
 * faultline's (fl_chain_mirror), after what it is made of changed: the
 * handshake's signal known, the shim's mask taken over.  Async-signal-safe.
 */
void fl_dispatch_remirror(void);

/* Chain (chain.c). */

/*
 * Delivers an unclaimed fault to the recorded action, as the kernel would.
 * restorer: the handler's return address (the sa_restorer the kernel
 * used), which tells which mirror of the action the kernel applied.
 */
void fl_chain_deliver(int sig, siginfo_t *si, void *uc, uintptr_t restorer);

/*
 * Puts in the kernel, for SIGSEGV or SIGBUS, faultline's handler with the
 * mask and the flags (SA_NODEFER, SA_RESTART) of the recorded action, so
 * that an unclaimed fault reaches the application's handler with no
 * sigprocmask of ours; it names one of chain.c's restorers, by which the
 * handler knows the mirror a delivery used.  Returns 0 or -errno.
 * Async-signal-safe (fl_sigaction calls it).
 */
int fl_chain_mirror(int sig);

/*
 * Makes sig (SIGTRAP or fl_park.signo) part of the chain and installs ours
 * for it (see chain.c); returns 0 or -errno.
 */
int fl_chain_take(int sig, const struct sigaction *ours);

/* Sets the recorded action (the initial one, from fl_dispatch_install). */
void fl_chain_record(int sig, const struct sigaction *act);

/* Remembers libc's SA_RESTORER restorer, reported in recorded actions. */
void fl_chain_set_restorer(void (*restorer)(void));

/*
 * Sets SIG_DFL for sig in the kernel, so that its next delivery acts as
 * without faultline (dies, with the core dump).  The recorded action is
 * left alone.  Async-signal-safe.
 */
void fl_chain_restore_default(int sig);

/*
 * Whether fl_chain_restore_default has run: faultline's own handler is
 * gone because the process is dying by the default action (a check that
 * finds another handler must not blame a raw rt_sigaction).  Lock-free.
 */
bool fl_chain_restored_default(void);

/* An action as chain.c records it. */
struct fl_chain_act {
	uintptr_t handler;	/* sa_handler / sa_sigaction */
	int flags;
	uint64_t mask;		/* the kernel's 64-bit sigset */
	uintptr_t restorer;
};

/*
 * *a: act as the kernel would store it and report it back (no SIGKILL nor
 * SIGSTOP in the mask, only the flags it knows, libc's restorer).
 * Async-signal-safe.
 */
void fl_chain_act_of(const struct sigaction *act, struct fl_chain_act *a);

/* *out: a as sigaction reports it.  Async-signal-safe. */
void fl_chain_act_show(const struct fl_chain_act *a, struct sigaction *out);

/*
 * The records of the signals relay.c relays, sig in [1, 64]: read the one
 * in effect; publish act, with *old (when not NULL) the one it replaced.
 * Async-signal-safe, lock-free.
 */
void fl_chain_other_read(int sig, struct fl_chain_act *out);
void fl_chain_other_publish(int sig, const struct fl_chain_act *act, struct fl_chain_act *old);

/* The kernel's signal frame (frame.c). */

/*
 * The mirrors' restorers (64 copies of libc's rt_sigreturn sequence,
 * FL_RESTORER_BYTES apart; see fl_chain_mirror) and the shim's, which
 * runs fl_mask_handler_leave on the ucontext before rt_sigreturn.  All
 * carry the CFI of a signal frame.
 */
#define FL_RESTORER_BYTES 16
extern const char fl_chain_restorers[] __attribute__((visibility("hidden")));
extern const char fl_frame_leave_restorer[] __attribute__((visibility("hidden")));

/*
 * Runs the application's handler for a signal faultline's handler got
 * (si and uc as the kernel gave them, returns_to its return address) from
 * the frame the kernel would have given it: on the stack its action
 * (onstack: SA_ONSTACK) chooses, returning to restorer.  Does not return
 * when it ran it.  Returns true when it did not because the interrupted
 * stack cannot take the frame: it did what the kernel does then (a
 * SIGSEGV by its default action).  Returns false, having changed nothing,
 * when faultline's frame is not laid out as it knows; the caller calls
 * the handler instead.  synchronous: the kernel raised sig.
 */
bool fl_frame_enter(int sig, siginfo_t *si, void *uc, uintptr_t returns_to, uintptr_t handler,
		    bool onstack, uintptr_t restorer, bool synchronous);

/*
 * The process whose records chain.c and relay.c keep: fl_chain_owner
 * notes it (at start, and in a forked child); fl_chain_vforked says
 * whether the caller is another process that shares this memory (a child
 * of vfork, or of clone with CLONE_VM, before it executes something),
 * whose signal calls must go to the kernel as they are.  Async-signal-safe.
 */
void fl_chain_owner(void);
bool fl_chain_vforked(void);

/* Relay (relay.c). */

/*
 * sigaction for a signal not of the chain (fl_sigaction calls it for
 * them): under the shim, an application's handler for any other signal
 * but SIGKILL, SIGSTOP, glibc's internal ones and the handshake's is put
 * in the kernel as fl_relay_handler, its mask without the signals of
 * fl_mask_hidden(), and recorded; oldact reads back the recorded one.
 * Otherwise (SIG_DFL, SIG_IGN, no shim) libc's sigaction.  Returns 0, or
 * -1 with errno set.  Async-signal-safe.
 */
int fl_relay_sigaction(int sig, const struct sigaction *act, struct sigaction *oldact);

/*
 * The kernel's action for a relayed handler: runs the recorded one with
 * the signals of fl_mask_hidden() its mask names blocked in
 * fl_mask_virtual, as the chain runs an application's handler.
 */
void fl_relay_handler(int sig, siginfo_t *si, void *uc);

/* *out: the application's action relayed for sig.  Async-signal-safe. */
void fl_relay_read(int sig, struct sigaction *out);

/* libc's sigaction, never the shim's interposer. */
int fl_real_sigaction(int sig, const struct sigaction *act, struct sigaction *old);

/*
 * Whether sig's action in the kernel is faultline's and recorded in the
 * chain: SIGSEGV and SIGBUS always, SIGTRAP and the handshake's signal
 * from fl_dispatch_install_trap on.  Lock-free.
 */
bool fl_chain_taken(int sig);

/*
 * The signal mask under the preload shim (mask.c): the application blocks
 * SIGSEGV, SIGBUS and SIGTRAP (while their action is faultline's) in
 * fl_mask_virtual only, never in the kernel.  The shim's interposers
 * (lib/preload/mask.c) keep it; the chain does with it what the kernel
 * does with a blocked signal.  Without the shim, the library leaves the
 * mask alone: fl_mask_hidden() is 0 and fl_mask_virtual stays 0.
 */

/*
 * The bits (the kernel's 64-bit set) of the signals this thread blocks,
 * as the application sees its mask, that are not blocked in the kernel.
 * Only this thread writes it (the shim's interposers, the chain around an
 * application's handler).
 */
extern __thread _Atomic uint64_t fl_mask_virtual __attribute__((tls_model("initial-exec")));

/*
 * Not signal context.  The shim takes over the mask: from now on
 * fl_mask_hidden() names the signals it keeps out of the kernel's mask, and
 * the mirrors of SIGSEGV's and SIGBUS's actions leave them unblocked.
 * Called once, after fl_init.
 */
void fl_mask_enable(void);

/* The signals the application may block only in fl_mask_virtual; 0 without the shim. */
uint64_t fl_mask_hidden(void);

/*
 * Holds sig (one of the three), sent by someone (si_code <= 0) to this
 * thread (SI_TKILL) or to the process while this thread blocks it.
 * Async-signal-safe, lock-free.
 */
void fl_mask_hold(int sig, const siginfo_t *si);

/*
 * Raises again, to this thread, each held signal that fl_mask_virtual no
 * longer blocks (the thread's own, then the process's).  Returns how many.
 * Async-signal-safe, lock-free.
 */
int fl_mask_release(void);

/* The held signals' bits (this thread's and the process's).  Async-signal-safe. */
uint64_t fl_mask_held(void);

/*
 * Takes one held signal of set (this thread's first, then the process's,
 * the lowest number first, as the kernel dequeues), blocked or not, into
 * *si (its signal and what was kept of its info).  Returns the signal, or
 * 0 when none of set is held.  Async-signal-safe, lock-free.
 */
int fl_mask_take(uint64_t set, siginfo_t *si);

/* How many signals this thread has held (fl_mask_hold), ever. */
uint64_t fl_mask_holds(void);

/*
 * The chain calls fl_mask_enter(fl_mask_virtual as it found it) before an
 * application's handler and fl_mask_leave after it returns.  A jump out
 * of handlers that restores the mask (siglongjmp, the shim's) calls
 * fl_mask_jump: fl_mask_virtual goes back to what the outermost of them
 * found, the mask the code it jumps to most likely had (glibc's
 * sigsetjmp saves the kernel's mask only).  Async-signal-safe.
 */
void fl_mask_enter(uint64_t shown);
void fl_mask_leave(void);
void fl_mask_jump(void);

/*
 * Around an application's handler under the shim (the chain's, the
 * relay's), uc its ucontext_t: enter adds blocks (of fl_mask_hidden()) to
 * fl_mask_virtual and shows the handler in uc_sigmask the mask it
 * interrupted as the application had it (with fl_mask_virtual's);
 * leave splits uc_sigmask as the handler left it, the mask sigreturn
 * restores, into the kernel's part and the virtual one, and raises the
 * held signals that unblocks.  Async-signal-safe.
 */
void fl_mask_handler_enter(void *uc, uint64_t blocks);
void fl_mask_handler_leave(void *uc);

/*
 * The kernel's mask as the shim last set it for this thread (its own
 * rt_sigprocmask calls, the return of the chain's outermost handler, a
 * siglongjmp's saved mask): fl_mask_kernel_note.  A program may change
 * its mask with the raw system call (Go's runtime does, in each thread
 * cgo creates with every signal blocked by pthread_sigmask): then the
 * interrupted mask a fault finds differs from the noted one outside the
 * signals of fl_mask_hidden(), and fl_mask_resync takes the kernel's word
 * for all of them, the three included (the kernel could deliver the
 * fault: the raw mask does not block it).  Returns whether it did.  Not
 * inside a handler of the chain, whose mask is the handler's.
 * Async-signal-safe.
 */
void fl_mask_kernel_note(uint64_t kernel);
bool fl_mask_resync(const void *uc);

/*
 * In a forked child (the shim's fork handler): nothing held, as the kernel
 * gives a child no pending signal; fl_mask_virtual stays (the mask does).
 */
void fl_mask_fork_child(void);

/* Slots per dirty summary byte: FL_SHM_DIRTY_SLOTS (lib/proto/proto.h, which checks it). */
#define FL_DISPATCH_DIRTY_SLOTS 128u

/*
 * Marks slot's block in the dirty summary after a change to the slot's
 * counter or populations: fl_shm_mark_dirty (proto.h) again, kept here
 * because this room depends on nothing outside it.  The seq_cst fence
 * orders the change before the check: a check that read a 1 the daemon
 * was about to exchange for 0 while the change still sat in the store
 * buffer would lose it.  Pairs with the daemon's seq_cst exchange of the
 * byte and the fence after it (daemon/faultlined/counts.c).  A plain check
 * then a plain store: the byte's line is written once per daemon period
 * at most, not once per fault.
 */
static inline void fl_dispatch_mark_dirty(uint32_t slot)
{
	_Atomic uint8_t *b;

	if (!fl_dispatch.dirty)
		return;
	b = &fl_dispatch.dirty[slot / FL_DISPATCH_DIRTY_SLOTS];
	atomic_thread_fence(memory_order_seq_cst);
	if (!atomic_load_explicit(b, memory_order_relaxed))
		atomic_store_explicit(b, 1, memory_order_relaxed);
}

#endif /* FL_DISPATCH_DISPATCH_H */
