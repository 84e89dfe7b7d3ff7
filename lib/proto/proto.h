/* SPDX-License-Identifier: MIT */
/*
 * The faultline protocol (docs/protocol.md): messages on the daemon's
 * SOCK_SEQPACKET socket and the shared region's layout.  Encoding,
 * decoding and validation, no allocation; the only I/O is fl_proto_send
 * (sock.c).  Shared by the process side (lib/agent/), the command-line
 * tool and the daemon, which decodes what any client sends with this code
 * (fuzzed: selftests/fuzz/fuzz_proto.c).
 */
#ifndef FL_PROTO_PROTO_H
#define FL_PROTO_PROTO_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <faultline/format.h>

#define FL_PROTO_MAGIC 0x504c4c46u	/* "FLLP" */
#define FL_PROTO_VERSION 1
#define FL_PROTO_MAX_MESSAGE 65536u
#define FL_PROTO_MAX_FDS 4u
#define FL_PROTO_MAX_REGION (256ull << 20)
#define FL_PROTO_MAX_NAME 4096u
#define FL_PROTO_COMM 16u

enum fl_msg_type {
	FL_MSG_HELLO = 1,
	FL_MSG_MODULE_ADD = 2,
	FL_MSG_MODULE_REMOVE = 3,
	FL_MSG_SYMBOLS = 4,
	FL_MSG_SYNC = 5,
	FL_MSG_COMPLETE = 6,
	FL_MSG_DONE = 7,
	FL_MSG_DUMPABLE = 8,
	FL_MSG_QUERY = 16,
	FL_MSG_REQUEST = 17,
	FL_MSG_POINT = 18,
	FL_MSG_WELCOME = 64,
	FL_MSG_ERROR = 65,
	FL_MSG_REPLY = 66,
};

enum fl_query_what {
	FL_QUERY_STATS = 1,
	FL_QUERY_PS = 2,
	FL_QUERY_SITES = 3,
	FL_QUERY_STACKMAPS = 4,
	FL_QUERY_STACKMAP_PC = 5,	/* the records at runtime PC arg */
};

/*
 * STATS's arg: bits 0-31 (FL_QUERY_TOP) the most sites listed a process,
 * those that failed most (0: no number; the daemon then lists at most
 * 4,096 a process in an answer about every process, all of them in one
 * about one process), and FL_QUERY_FAILED_ONLY to leave out the sites that
 * never failed (they are counted).  Other bits: refused (-EINVAL).
 */
#define FL_QUERY_TOP 0xffffffffull
#define FL_QUERY_FAILED_ONLY (1ull << 32)

enum fl_request_kind {
	FL_REQ_PING = 1,
	/*
	 * The heal policy: arg bits 0-31 heal after N failures (0: never),
	 * bits 32-62 within SECONDS (0: ever), bit 63 FL_HEAL_DEFAULT (the
	 * daemon's --heal-after: a policy the process set itself wins).  The
	 * completion's value: the policy before, in the same form.
	 */
	FL_REQ_HEAL_THRESHOLD = 2,
	/*
	 * The patch point and stack map record requests: sent as POINT
	 * messages (struct fl_msg_point), with a payload slot in the rings.
	 */
	FL_REQ_PATCHPOINT_WRITE = 3,	/* raw bytes: root, to a process that opted in */
	FL_REQ_PATCHPOINT_RESET = 4,
	FL_REQ_STACKMAP_INVALIDATE = 5,
	/*
	 * Healing, sent as REQUEST messages: heal or unheal the site whose
	 * faulting PC is arg (completion value: the tactic, 1 B1 2 B2 3 T1
	 * 4 T3 5 T2 6 REL; refused -EOPNOTSUPP: the reason's code, FL_SHM_WHY_*); heal
	 * every site with more than arg trapped failures (value: healed, and
	 * unhealable << 32); unheal a healed site quiet for arg seconds (bits
	 * 0-31; 0: never; bit 63 FL_HEAL_DEFAULT: a default, which the
	 * process's own setting overrides; value: the setting before).
	 */
	FL_REQ_HEAL = 6,
	FL_REQ_UNHEAL = 7,
	FL_REQ_HEAL_OVER = 8,
	FL_REQ_UNHEAL_AFTER = 9,
};

/* FL_REQ_HEAL_THRESHOLD's arg: a default, which the process's own policy overrides. */
#define FL_HEAL_DEFAULT (1ull << 63)

/* The largest patch point region or stack map shadow (points.h's FL_POINT_MAX_SIZE). */
#define FL_PROTO_POINT_MAX 256u

#define FL_REPLY_MORE 1u

/*
 * HELLO flags.  FL_HELLO_FIRST: this registration is made before fl_init
 * (or fork, in a child) returns, while the process has dispatched no fault:
 * whatever the daemon counts from here on sees every fault the process's own
 * counters do.  A re-registration (after a daemon restart, or a dropped
 * connection) does not carry it.
 */
#define FL_HELLO_FIRST 1u
/*
 * FL_HELLO_SYNC: the client knows WELCOME's flags and SYNC.  The daemon sets
 * WELCOME flags only for such a client: one built before they existed
 * decodes them as a reserved field that must be 0, and would refuse every
 * WELCOME of a daemon whose eBPF program runs.
 */
#define FL_HELLO_SYNC 2u
/*
 * FL_HELLO_ALLOW_PATCH: the process opted in to raw code bytes from the
 * daemon (FAULTLINE_ALLOW_PATCH=1 or FL_INIT_ALLOW_PATCH): root may write
 * its patch points.  Without it the daemon refuses such a request, and the
 * process refuses it too.
 */
#define FL_HELLO_ALLOW_PATCH 4u
/*
 * FL_HELLO_DONE: the process sends DONE on this connection when it pushes
 * a completion while the region's completion_bell is set (it clears the
 * bell as it does): the daemon then learns of a completion when it is
 * written, not at its next look at the rings.  The daemon sets the bell
 * only for such a process, and takes DONE only from one.
 */
#define FL_HELLO_DONE 8u
/*
 * FL_HELLO_DUMP: the process reports whether it is dumpable
 * (prctl(PR_GET_DUMPABLE) is 1, SUID_DUMP_USER), which ptrace's rule and
 * the daemon's (docs/protocol.md, "Who may do what") ask of a process
 * served to a requester other than root: FL_HELLO_DUMPABLE says it is
 * now, and a DUMPABLE message follows each time that changes.  The daemon
 * takes DUMPABLE only from such a process; FL_HELLO_DUMPABLE without
 * FL_HELLO_DUMP is a violation.
 */
#define FL_HELLO_DUMP 16u
#define FL_HELLO_DUMPABLE 32u

struct fl_msg_header {
	uint32_t magic;
	uint16_t version;
	uint16_t type;
	uint32_t length;	/* the whole message */
	uint32_t seq;
};

struct fl_msg_hello {
	struct fl_msg_header h;
	uint32_t pid;
	uint32_t flags;		/* FL_HELLO_* */
	uint64_t region_size;
	char comm[FL_PROTO_COMM];
};

/*
 * MODULE_ADD flags.  FL_MODULE_BASE: base is known.  A module's addresses
 * are given from base as module+offset (faultline stats): a loaded ELF
 * module's load bias (runtime address = its ELF address + base, so the
 * offset is what objdump and addr2line take), JIT code's start.
 */
#define FL_MODULE_BASE 1u

struct fl_msg_module_add {
	struct fl_msg_header h;
	uint32_t module;
	uint32_t flags;		/* FL_MODULE_* */
	uint64_t code_start;
	uint64_t code_size;
	uint32_t first_counter;
	uint32_t num_sites;
	uint32_t faultmap_size;
	uint32_t stackmap_size;
	uint32_t name_len;
	/*
	 * Runtime addresses (u64) of the stack map's functions, in cursor
	 * order, after the two sections in the memfd: the process resolved
	 * them (discovery layer); the stored values may be link-time ones.
	 */
	uint32_t sm_functions;
	uint64_t base;		/* FL_MODULE_BASE: at most code_start; else 0 */
	/* name_len bytes of name follow */
};

struct fl_msg_module_remove {
	struct fl_msg_header h;
	uint32_t module;
	uint32_t reserved;
};

struct fl_msg_symbols {
	struct fl_msg_header h;
	uint32_t module;
	uint32_t count;
	/*
	 * count entries: site u32, offset u32 (of its faulting PC from the
	 * function's start), len u16, len bytes of the function's name
	 * (fl_symbols_put)
	 */
};

struct fl_msg_query {
	struct fl_msg_header h;
	uint32_t what;
	uint32_t pid;
	uint64_t arg;
};

struct fl_msg_request {
	struct fl_msg_header h;
	uint32_t pid;
	uint32_t kind;
	uint64_t arg;
};

/*
 * POINT: a request about a patch point or a stack map record (kind
 * FL_REQ_PATCHPOINT_*, FL_REQ_STACKMAP_INVALIDATE).  The record is named by
 * pc when it is not 0, else by id.  len bytes of new code (WRITE only: 1 to
 * FL_PROTO_POINT_MAX), then expect_len bytes that must be there now (WRITE
 * only, 0: no check) follow.  target: INVALIDATE's call target (not 0),
 * else 0.
 */
struct fl_msg_point {
	struct fl_msg_header h;
	uint32_t pid;
	uint32_t kind;
	uint64_t id;
	uint64_t pc;
	uint64_t target;
	uint32_t len;
	uint32_t expect_len;
	/* len bytes, then expect_len bytes */
};

/*
 * WELCOME flags.  FL_WELCOME_BPF: the daemon's eBPF program counts this
 * process's faults; a registration that wants its modules' sites known to
 * it before going on sends SYNC and waits for the answer.
 */
#define FL_WELCOME_BPF 1u

struct fl_msg_welcome {
	struct fl_msg_header h;
	uint32_t daemon_pid;
	uint32_t flags;		/* FL_WELCOME_* */
};

/* SYNC: answered by an empty REPLY once every message before it is handled. */
struct fl_msg_sync {
	struct fl_msg_header h;
};

/*
 * COMPLETE: after a HELLO with FL_HELLO_FIRST, its WELCOME, and the REPLY
 * to a SYNC that followed the modules, while fl_init still waited: the
 * process has run nothing since HELLO, so what the daemon (its eBPF
 * program) counts covers the process's whole life.  A process whose
 * fl_init gave up waiting first never sends it.
 */
struct fl_msg_complete {
	struct fl_msg_header h;
};

/*
 * DONE: after a HELLO with FL_HELLO_DONE: completions are in the ring,
 * and the bell was set (docs/protocol.md, "Rings").  The header alone, its
 * seq the one of the completion whose push took the bell (for the
 * reader: the daemon collects every completion there is); no answer.
 */
struct fl_msg_done {
	struct fl_msg_header h;
};

/*
 * DUMPABLE: after a HELLO with FL_HELLO_DUMP, whether the process is
 * dumpable now (1) or not (0), sent when that changed since its last
 * report; no answer.
 */
struct fl_msg_dumpable {
	struct fl_msg_header h;
	uint32_t dumpable;	/* 0 or 1 */
	uint32_t reserved;	/* 0 */
};

struct fl_msg_error {
	struct fl_msg_header h;
	int32_t err;
	uint32_t len;
	/* len bytes of text */
};

struct fl_msg_reply {
	struct fl_msg_header h;
	uint32_t flags;
	uint32_t len;
	/* len bytes of JSON text */
};

/*
 * A decoded message: the fixed part copied out of the buffer (aligned,
 * checked), variable parts as pointers into it.
 */
struct fl_msg {
	enum fl_msg_type type;
	uint32_t seq;
	union {
		struct fl_msg_hello hello;
		struct fl_msg_module_add module_add;
		struct fl_msg_module_remove module_remove;
		struct fl_msg_symbols symbols;
		struct fl_msg_query query;
		struct fl_msg_request request;
		struct fl_msg_point point;
		struct fl_msg_welcome welcome;
		struct fl_msg_sync sync;
		struct fl_msg_complete complete;
		struct fl_msg_done done;
		struct fl_msg_dumpable dumpable;
		struct fl_msg_error error;
		struct fl_msg_reply reply;
	};
	const char *name;	/* MODULE_ADD: name_len bytes, no NUL inside */
	const char *text;	/* ERROR, REPLY: len bytes */
	const unsigned char *entries;	/* SYMBOLS: checked, walk with fl_symbols_next */
	const unsigned char *bytes;	/* POINT: len bytes */
	const unsigned char *expect;	/* POINT: expect_len bytes */
	size_t entries_size;
	size_t nfds;		/* fds the message must carry */
};

/*
 * Decodes and validates one message of len bytes that came with nfds file
 * descriptors.  Returns 0 with *m filled in, or -EBADMSG / -EPROTO /
 * -EPROTONOSUPPORT / -EMSGSIZE with *diag saying what is wrong.  Never
 * reads outside buf.  Async-signal-safe.
 */
int fl_proto_decode(const void *buf, size_t len, size_t nfds, struct fl_msg *m,
		    struct fl_diag *diag);

/* One SYMBOLS entry. */
struct fl_symbol {
	uint32_t site;
	uint32_t offset;	/* the faulting PC's from the function's start */
	uint16_t len;
	const char *name;	/* len bytes, no NUL inside */
};

/*
 * Walks the entries of a decoded SYMBOLS message (already validated by
 * fl_proto_decode).  *pos starts at 0.  Returns 1 with *s filled in, 0 at
 * the end.
 */
int fl_symbols_next(const struct fl_msg *m, size_t *pos, struct fl_symbol *s);

/* The bytes of one SYMBOLS entry before its name. */
#define FL_SYMBOL_ENTRY_HEAD 10u
/* A SYMBOLS entry's offset when the function's start is not known. */
#define FL_SYMBOL_NO_OFFSET UINT32_MAX

/*
 * Writes one SYMBOLS entry at at (FL_SYMBOL_ENTRY_HEAD + len bytes): site,
 * offset, then len bytes of name.  Returns the bytes written.
 */
size_t fl_symbols_put(void *at, uint32_t site, uint32_t offset, const char *name,
		      uint16_t len);

/*
 * Fills in a header for a message of type and total length.  Returns
 * length.
 */
size_t fl_proto_header(void *buf, enum fl_msg_type type, size_t length, uint32_t seq);

/*
 * Connects to the daemon's socket at path without ever blocking: the
 * socket is non-blocking (a daemon that is stopped, or whose backlog is
 * full, gives -EAGAIN at once instead of a connect() that waits), and stays
 * so.  Then checks who listens there (SO_PEERCRED): only root or this
 * process's own effective uid is the daemon; anyone else may have bound the
 * path first to read what a process hands over.  Returns the connected
 * socket (SOCK_CLOEXEC | SOCK_NONBLOCK), or -errno:
 * -ENAMETOOLONG, -EPERM for a peer of another uid (its uid in *peer_uid when
 * not NULL), or connect's error.  Thread-safe; not async-signal-safe.
 */
int fl_proto_connect(const char *path, uint32_t *peer_uid);

/*
 * Sends one message of len bytes on the protocol socket fd, with nfds (at
 * most FL_PROTO_MAX_FDS) descriptors attached; flags are added to
 * MSG_NOSIGNAL (MSG_DONTWAIT for a non-blocking sender).  Retries on EINTR.
 * Returns 0 on success, -errno on failure (-EAGAIN: the socket is full,
 * -EINVAL: too many descriptors).  Thread-safe; not async-signal-safe.
 */
int fl_proto_send(int fd, const void *buf, size_t len, const int *fds, size_t nfds,
		  int flags);

/* ------------------------------------------------------------------------
 * The shared region
 */

#define FL_SHM_MAGIC 0x484c4c46u	/* "FLLH" */
#define FL_SHM_VERSION 3
#define FL_SHM_HEADER_SIZE 256u
#define FL_SHM_ALIGN 64u
/*
 * Version 3: the dirty summary, one byte per block of this many counter
 * slots (fl_shm_dirty_blocks of them).  Whoever changes a slot's counter,
 * populations or heal slot then sets its block's byte (fl_shm_mark_dirty);
 * the daemon exchanges a set byte for 0 and then reads the block, so that
 * persisting costs what changed (daemon/faultlined/state.c).  128: a
 * block of the daemon's counts file is then one 4 KiB page (32 bytes a
 * slot), and the summary it reads every period is capacity / 128 bytes.
 */
#define FL_SHM_DIRTY_SLOTS 128u

/* The dirty summary's bytes for capacity slots. */
static inline uint32_t fl_shm_dirty_blocks(uint32_t capacity)
{
	return (uint32_t)(((uint64_t)capacity + FL_SHM_DIRTY_SLOTS - 1) / FL_SHM_DIRTY_SLOTS);
}

/*
 * Marks slot's block dirty after a change to the slot (its counter,
 * populations or heal slot), made before the call.  A plain check, then
 * a plain store: no cache line is written while the byte is set already.
 * The fence keeps the check after the change: without it the change may
 * still sit in this CPU's store buffer while the check reads 1, the daemon
 * exchanges the byte for 0 and reads the old value, and the change is
 * never marked (the store-buffer case).  With it either this fence comes
 * first in the single total order, and the daemon's read after its
 * exchange and fence sees the change; or the daemon's comes first, and
 * the check sees its 0 and sets the byte again.  Pairs with the daemon's
 * seq_cst exchange and fence (state.c, take_dirty).  Lock-free, no
 * allocation: async-signal-safe.
 */
static inline void fl_shm_mark_dirty(_Atomic uint8_t *dirty, uint32_t slot)
{
	_Atomic uint8_t *b = &dirty[slot / FL_SHM_DIRTY_SLOTS];

	atomic_thread_fence(memory_order_seq_cst);
	if (!atomic_load_explicit(b, memory_order_relaxed))
		atomic_store_explicit(b, 1, memory_order_relaxed);
}

/*
 * The completion bell's two sides (docs/protocol.md, "Rings"), so that no
 * completion is left unannounced and none is announced for nothing.  The
 * daemon, waiting for completions of a process that sends DONE, sets the
 * bell (fl_shm_bell_set), then pops the ring; the process pushes a
 * completion, then takes the bell (fl_shm_bell_take) and sends DONE when it
 * was set.  Either the process's fence comes first in the single total
 * order of seq_cst fences, and the daemon's pop after its own fence sees
 * the completion; or the daemon's comes first, and the process's load
 * sees the 1 and DONE goes.  Without the fences each side's store could
 * still sit in its CPU's store buffer while its load reads the other's
 * old value: the completion unseen, and no DONE sent (the store-buffer
 * case, as in fl_shm_mark_dirty).  Lock-free, no allocation.
 */
static inline void fl_shm_bell_set(_Atomic uint32_t *bell)
{
	atomic_store_explicit(bell, 1, memory_order_relaxed);
	/* Pairs with the fence in fl_shm_bell_take. */
	atomic_thread_fence(memory_order_seq_cst);
}

/*
 * Returns whether the bell was set, and clears it: the caller, which has
 * just pushed a completion, sends DONE then.
 */
static inline bool fl_shm_bell_take(_Atomic uint32_t *bell)
{
	/* Pairs with the fence in fl_shm_bell_set; after the push's release of head. */
	atomic_thread_fence(memory_order_seq_cst);
	/* A plain load first: the line is not written while the bell is clear. */
	if (!atomic_load_explicit(bell, memory_order_relaxed))
		return false;
	return atomic_exchange_explicit(bell, 0, memory_order_relaxed) != 0;
}

struct fl_shm_header {
	uint32_t magic;
	uint16_t version;
	uint16_t header_size;
	uint32_t pid;
	uint32_t capacity;
	uint64_t size;
	uint32_t sites_offset;
	uint32_t counters_offset;
	uint32_t requests_offset;
	uint32_t request_entries;
	uint32_t completions_offset;
	uint32_t completion_entries;
	/*
	 * Written by the process (release, after the slots' site table
	 * entries): every slot it has described is below it; it only grows.
	 * The daemon reads the site table up to here (capped at capacity,
	 * acquire) to find modules it was never told of.
	 */
	_Atomic uint32_t sites_high;
	/*
	 * Version 2: the payload slots, one per ring entry (entry i's slot is
	 * i & (entries - 1) too), written by the producer before the entry.
	 */
	uint32_t request_slots_offset;		/* struct fl_shm_point_req each */
	uint32_t completion_slots_offset;	/* struct fl_shm_point_done each */
	/* Version 2: per site slot, its healing (struct fl_shm_heal each). */
	uint32_t heal_offset;
	/* 64: the daemon's cache line */
	_Atomic uint32_t request_head;
	_Atomic uint32_t request_tail;	/* written by the process */
	_Atomic uint32_t doorbell;
	uint8_t pad1[52];
	/* 128: the process's cache line */
	_Atomic uint32_t completion_head;
	_Atomic uint32_t completion_tail;	/* written by the daemon */
	_Atomic uint32_t heal_threshold;
	/* Version 3: the dirty summary (fl_shm_dirty_blocks(capacity) bytes). */
	uint32_t dirty_offset;
	/*
	 * The completion bell (in padding until then: 0, never set, is what
	 * an older daemon leaves).  The daemon stores 1 (then fences) while it
	 * waits for completions of a process whose HELLO set FL_HELLO_DONE;
	 * the process, after pushing a completion and a fence, exchanges it
	 * for 0 and sends DONE when it was set (fl_shm_bell_*).
	 */
	_Atomic uint32_t completion_bell;
	uint8_t pad2[108];
};

/*
 * A site table entry's state (docs/protocol.md, "Unregistered modules").
 * LIVE: the handler may count in the slot.  RETIRED (the process, once no
 * handler can count there any more): the module was unregistered and the
 * slot holds its final count; the process neither clears nor reuses it.
 * SAVED (the daemon, once that count is in its state file): the process
 * may clear the slot and reuse it.
 */
#define FL_SHM_SITE_LIVE 0u
#define FL_SHM_SITE_RETIRED 1u
#define FL_SHM_SITE_SAVED 2u

struct fl_shm_site {
	uint64_t faulting_pc;
	uint64_t handler_pc;
	uint32_t module;
	uint32_t kind;		/* 0: slot unused */
	_Atomic uint32_t state;	/* FL_SHM_SITE_* */
	/*
	 * Written by the handler (relaxed increments, modulo 2^32): the
	 * region pages the instruction at faulting_pc touched first, which
	 * the handler populated.  The kernel counts those as fault signals at
	 * the site; they are not failed checks.
	 */
	_Atomic uint32_t populations;
};

/*
 * A site slot's healing (lib/patch/heal.c writes it, the daemon reads it):
 * one per slot, cleared with the slot's counter.  failures is bumped by
 * the healed site's stub (lock incq: exact), the other fields by the
 * process when the state changes: the daemon reads state (acquire) before
 * the rest, which the process writes before it (release).
 */
#define FL_SHM_HEAL_IMPLICIT 0u
#define FL_SHM_HEAL_HEALED 1u
#define FL_SHM_HEAL_UNHEALABLE 2u

/* Why a site is unhealable (the planner's reasons, heal_plan.h). */
enum fl_shm_unhealable {
	FL_SHM_WHY_NONE = 0,
	FL_SHM_WHY_UNDECODED = 1,	/* no instruction decodes at the site */
	FL_SHM_WHY_NO_BASE = 2,		/* the access has no base register to test */
	FL_SHM_WHY_BRANCH = 3,		/* the site is a branch */
	FL_SHM_WHY_PINNED = 4,		/* its bytes are pinned by another patch */
	FL_SHM_WHY_NO_ROOM = 5,		/* no free place for a stub in reach, no neighbour to evict */
	FL_SHM_WHY_OTHER = 6,
	/* Relocating the function, the last tactic, was refused too: */
	FL_SHM_WHY_NO_EXTENT = 7,	/* the function has no known extent (symbol, unwind entry) */
	FL_SHM_WHY_COMPUTED_JUMP = 8,	/* a computed jump (a jump table, an indirect tail call) */
	FL_SHM_WHY_SELF_READ = 9,	/* the function reads its own bytes */
	FL_SHM_WHY_EH_TABLES = 10,	/* the function has exception tables (an LSDA) */
	FL_SHM_WHY_ENTRY = 11,		/* the function's entry cannot take a jump */
	FL_SHM_WHY_TOO_LARGE = 12,	/* the copy would not fit in a page */
	FL_SHM_WHY_UNMOVABLE = 13,	/* an instruction of the function cannot be moved */
	FL_SHM_WHY_RECORDS = 14,	/* stack map records: faultline finds them by address */
	FL_SHM_WHY_RELOCATE_OFF = 15,	/* FAULTLINE_HEAL_RELOCATE=0 */
	FL_SHM_WHY_LAST = FL_SHM_WHY_RELOCATE_OFF,
};

/* "B1", "B2", "T1", "T3", "T2", "REL" for a tactic code (1..6), NULL otherwise. */
const char *fl_shm_tactic_name(unsigned tactic);
/* The words for an FL_SHM_WHY_* code ("" for FL_SHM_WHY_NONE, "?" unknown). */
const char *fl_shm_why_text(unsigned why);

struct fl_shm_heal {
	_Atomic uint64_t failures;	/* nulls the stub sent to the handler */
	uint32_t healed_at;		/* CLOCK_REALTIME seconds of the last heal */
	_Atomic uint8_t state;		/* FL_SHM_HEAL_* */
	uint8_t tactic;			/* enum fl_heal_tactic: 1 B1 2 B2 3 T1 4 T3 5 T2 6 REL */
	uint8_t why;			/* enum fl_shm_unhealable */
	uint8_t reserved;
};

struct fl_shm_entry {
	uint32_t seq;
	int32_t status;		/* requests: the kind; completions: 0 or -errno */
	uint64_t value;		/* requests: arg; completions: the result */
	uint64_t reserved[2];
};

/*
 * A point request's payload slot (the request entry's kind is
 * FL_REQ_PATCHPOINT_* or FL_REQ_STACKMAP_INVALIDATE, its value 0): the
 * fields of struct fl_msg_point, checked by the daemon before it wrote
 * them, and by the process again on its copy (fl_shm_point_req_check).
 */
struct fl_shm_point_req {
	uint64_t id;
	uint64_t pc;		/* 0: the record is named by id */
	uint64_t target;
	uint32_t len;
	uint32_t expect_len;
	uint64_t reserved[4];
	uint8_t bytes[FL_PROTO_POINT_MAX];
	uint8_t expect[FL_PROTO_POINT_MAX];
};

/* A record's region or shadow in a completion (struct fl_point's fields). */
struct fl_shm_point {
	uint64_t id;
	uint64_t pc;
	uint32_t size;		/* 1 .. FL_PROTO_POINT_MAX */
	uint32_t flags;		/* FL_POINT_* of points.h */
	uint8_t bytes[FL_PROTO_POINT_MAX];	/* size of them count */
};

/* What the record held before the request */
#define FL_SHM_POINT_BEFORE 1u
/* and after it (both: when the process could read it). */
#define FL_SHM_POINT_NOW 2u
#define FL_SHM_POINT_DIAG 200u

/* A point request's completion slot. */
struct fl_shm_point_done {
	uint32_t have;		/* FL_SHM_POINT_BEFORE | FL_SHM_POINT_NOW */
	uint32_t reserved;
	struct fl_shm_point before;
	struct fl_shm_point now;
	/* Why the process refused, NUL-terminated ("" when it did not). */
	char diag[FL_SHM_POINT_DIAG];
};

/* The layout of a region, as computed by fl_shm_layout or checked. */
struct fl_shm_layout {
	uint64_t size;
	uint32_t capacity;
	uint32_t sites_offset;
	uint32_t counters_offset;
	uint32_t requests_offset;
	uint32_t request_entries;
	uint32_t completions_offset;
	uint32_t completion_entries;
	uint32_t request_slots_offset;
	uint32_t completion_slots_offset;
	uint32_t heal_offset;
	uint32_t dirty_offset;
};

/*
 * Computes the layout for capacity sites and rings of the given sizes
 * (powers of 2).  Returns 0 or -EINVAL (too large, not a power of 2).
 */
int fl_shm_layout(uint32_t capacity, uint32_t request_entries,
		  uint32_t completion_entries, struct fl_shm_layout *l);

/* Writes the writer-once header fields of a new region. */
void fl_shm_init(void *region, const struct fl_shm_layout *l, uint32_t pid);

/*
 * Checks a copy of a region's header against the region's real size and
 * the pid the peer really has.  Returns 0 with *l filled in, -EBADMSG
 * with *diag set otherwise.
 */
int fl_shm_check(const struct fl_shm_header *copy, uint64_t real_size, uint32_t pid,
		 struct fl_shm_layout *l, struct fl_diag *diag);

/*
 * Rings (single producer, single consumer).  push: returns 0, or -EAGAIN
 * when full.  pop: returns 1 with *e filled in (a copy), 0 when empty,
 * -EBADMSG when the producer's head is not plausible (more entries than
 * the ring holds): a protocol violation.
 */
int fl_ring_push(_Atomic uint32_t *head, _Atomic uint32_t *tail, void *entries,
		 uint32_t n, const struct fl_shm_entry *e);
int fl_ring_pop(_Atomic uint32_t *head, _Atomic uint32_t *tail, const void *entries,
		uint32_t n, struct fl_shm_entry *e);

/*
 * The same with the entry's payload slot (slots: n of slot_size bytes):
 * push writes *slot into the entry's slot before it publishes the entry;
 * pop copies the slot into *slot before it gives the entry back.  slot may
 * be NULL (push leaves the slot as it is, pop does not copy it).
 */
int fl_ring_push_slot(_Atomic uint32_t *head, _Atomic uint32_t *tail, void *entries,
		      uint32_t n, const struct fl_shm_entry *e, void *slots, size_t slot_size,
		      const void *slot);
int fl_ring_pop_slot(_Atomic uint32_t *head, _Atomic uint32_t *tail, const void *entries,
		     uint32_t n, struct fl_shm_entry *e, const void *slots, size_t slot_size,
		     void *slot);

/*
 * The fields a point request of kind carries, whether in a POINT message
 * or a request slot: NULL when they fit the kind (WRITE: 1 ..
 * FL_PROTO_POINT_MAX bytes, at most as many expected ones, no target;
 * RESET: no bytes, no target; INVALIDATE: no bytes, a target), else what
 * is wrong.  Async-signal-safe.
 */
const char *fl_point_args_why(uint32_t kind, uint64_t target, uint32_t len,
			      uint32_t expect_len);

/*
 * Checks a process's copy of a request entry of a point kind and its slot
 * (the entry's value and reserved fields, the slot's reserved fields, the
 * lengths for the kind).  Returns 0, or -EINVAL with *diag saying what is
 * wrong.  Async-signal-safe.
 */
int fl_shm_point_req_check(const struct fl_shm_entry *e, const struct fl_shm_point_req *r,
			   struct fl_diag *diag);

/*
 * Checks the daemon's copy of a point completion's slot (have, sizes,
 * reserved fields, a terminated diag).  Returns 0, or -EBADMSG with *diag
 * saying what is wrong.  Async-signal-safe.
 */
int fl_shm_point_done_check(const struct fl_shm_point_done *d, struct fl_diag *diag);

#endif /* FL_PROTO_PROTO_H */
