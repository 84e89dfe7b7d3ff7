/* SPDX-License-Identifier: MIT */
/*
 * faultlined's registry of processes: their shared regions, modules, sites
 * (with names) and stack map records, live and exited.  Everything in it
 * was validated when it came in (session.c); nothing here trusts a client.
 */
#ifndef FLD_PROCS_H
#define FLD_PROCS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <faultline/format.h>

#include "proto/proto.h"

struct fld_client;
struct fl_smindex;

/*
 * The first index of arr[0 .. n) (sorted by its member) whose member is
 * key or above: n when none is.  One binary search for the registry's
 * sorted arrays (sites by faulting PC, frozen values by site, the eBPF
 * snapshots by tgid).
 */
#define FLD_LOWER_BOUND(arr, n, member, key) ({				\
	size_t lo_ = 0, hi_ = (n);					\
	while (lo_ < hi_) {						\
		size_t mid_ = lo_ + (hi_ - lo_) / 2;			\
		if ((arr)[mid_].member < (key))				\
			lo_ = mid_ + 1;					\
		else							\
			hi_ = mid_;					\
	}								\
	lo_;								\
})

/*
 * One per site of every module the daemon holds: a million-site process
 * holds a million of them, so nothing goes in here that most sites do not
 * need (what a site held when its counts were frozen is kept apart, for
 * the few sites where it is not zero: fld_site_frozen).  32 bytes.
 */
struct fld_site {
	uint64_t faulting_pc;
	uint64_t handler_pc;
	uint32_t kind;
	uint32_t slot;		/* counter slot in the process's region */
	/*
	 * From SYMBOLS: 1 + its offset in the module's names (a function's
	 * sites share one copy: fld_site_name), or 0 for none.
	 */
	uint32_t function;
	/* With a function: the faulting PC's offset in it, or FL_SYMBOL_NO_OFFSET. */
	uint32_t function_offset;
};

/* What a site held when its module's counts were frozen (fld_site_frozen). */
struct fld_frozen {
	uint64_t faults;	/* the count once it can no longer change */
	uint64_t populations;	/* and its region pages populated (proto.h) */
	struct fl_shm_heal heal;	/* and its heal slot (fld_site_heal) */
};

/* A site's index in its module and its frozen values (procs.c). */
struct fld_frozen_site;

struct fld_module {
	uint32_t id;
	char *name;
	uint64_t code_start;
	uint64_t code_size;
	/*
	 * MODULE_ADD's base, when has_base: a site's module offset is its
	 * faulting PC - base (its ELF address; in JIT code, from the start).
	 */
	uint64_t base;
	bool has_base;
	uint32_t first_counter;
	uint32_t num_sites;
	struct fld_site *sites;
	/* The sites' names, each NUL-terminated (fld_site_function). */
	char *names;
	size_t names_len, names_cap;
	/*
	 * The frozen values of the sites where they are not all zero (the few
	 * that ever failed or healed), in site order: fld_site_frozen.
	 */
	struct fld_frozen_site *frozen;
	uint32_t num_frozen, frozen_cap;
	bool removed;		/* counts frozen */
	/*
	 * Found in the region's site table, never described by a MODULE_ADD
	 * (the process exited first): its name is not known.
	 */
	bool anonymous;
	/*
	 * Frozen from RETIRED slots: they are marked SAVED once a record of
	 * its process written after the freeze is on disk (fld_proc_saved).
	 */
	bool ack;
	/* The connection whose MODULE_ADD made it (fld_client_id), or 0. */
	unsigned long conn;
	/* The sections: the sealed bytes (mapped). */
	void *sections;
	size_t sections_size;
	/*
	 * The stack map's records at their runtime addresses, indexed by
	 * address: the process's own lookup (format/smindex.h), which
	 * fl_stackmap_record_at searches in the process.  NULL: none.
	 */
	struct fl_smindex *stackmaps;
	/*
	 * The eBPF side's own state of this module (struct fld_kmod,
	 * kbpf_procs.c): opaque here; it goes when the module_gone observers
	 * are told.
	 */
	void *kbpf;
};

struct fld_job;

/* A process's record file in the state directory, proc.SERIAL.json (state.c). */
struct fld_record {
	struct fld_job *writer;	/* the job writing it now, or NULL */
	bool written;		/* the file holds it as of written_gen */
	/* ...written once its counts were final (fld_proc_final: exited, no region) */
	bool written_final;
	/*
	 * Bumped by every change but the counts and the healing (session.c,
	 * and procs.c's freezes).
	 */
	uint32_t gen;
	uint32_t written_gen;
	/*
	 * The stamp of the record on disk (its header's "stamp": unique to
	 * each write), 0 for none.  The counts file, proc.SERIAL.counts,
	 * holds the counts of that record's live modules when its stamp is
	 * this one (counts_stamp): counts.c.
	 */
	uint64_t stamp;
	uint64_t counts_stamp;
	uint32_t counts_slots;	/* the slots it holds */
	/*
	 * Per block of its slots: one holds a healed slot (a stub counts
	 * there, marking nothing dirty), and the sum of their failures the
	 * file holds.
	 */
	uint8_t *watched;
	uint64_t *watched_sum;
	/*
	 * The sizes of its record and of its counts file on disk (0: none),
	 * charged to its user's budget of state bytes (budget.h).
	 */
	uint64_t record_bytes;
	uint64_t counts_bytes;
	uint64_t soonest_ms;	/* CLOCK_MONOTONIC: not written again before */
	uint64_t next_ms;	/* ...nor a live one's counts saved */
};

struct fld_proc {
	/* Unique among the processes of this state directory, restored ones too. */
	uint64_t serial;
	pid_t pid;
	uid_t uid;
	char comm[FL_PROTO_COMM];
	bool exited;
	/* Restored from the state file, where it was still live. */
	bool restored_live;
	uint64_t registered_ms;	/* CLOCK_REALTIME */
	/* /proc/PID/stat's starttime (clock ticks after boot): 0 unknown. */
	uint64_t start_time;
	/*
	 * The region's inode (0 unknown).  With the pid and uid it tells a
	 * registration of this process again (a reconnection, after a daemon
	 * restart too) from another process's or another program's (exec).
	 */
	uint64_t region_ino;
	/* The connection of its latest HELLO (fld_client_id), 0 none of this daemon's. */
	unsigned long conn;
	/* The keeper holds its region (keeper.h) until its final counts are saved. */
	bool kept;
	uint64_t exited_ms;
	uint64_t exit_seq;		/* exits seen by this daemon: 1, 2...; 0 restored */
	struct fld_client *client;	/* NULL once exited */
	/*
	 * Mapped while the process may still count: registered, or exited
	 * (disconnected) while the process lives on ("lingering", or given
	 * back by the keeper after a restart).  NULL once its counts are final
	 * (frozen in the modules) or when none was ever had (restored).
	 */
	void *region;
	struct fl_shm_layout layout;
	struct fld_module **mods;
	size_t num_mods;
	/*
	 * Modules already gone when their MODULE_ADD was read (session.c):
	 * their SYMBOLS and MODULE_REMOVE, which follow, are ignored.
	 */
	uint32_t *gone;
	size_t num_gone;
	/*
	 * Limits (session.c): sections of live modules, sites of all modules,
	 * bytes of the names SYMBOLS gave its sites.
	 */
	uint64_t section_bytes;
	uint64_t num_sites;
	uint64_t name_bytes;
	struct fld_record rec;
	uint32_t next_seq;		/* requests */
	/* Its latest HELLO had FL_HELLO_ALLOW_PATCH: root may write its patch points. */
	bool allow_patch;
	/*
	 * Who besides root could ptrace it (access.h), as last seen: its
	 * uids all uid and its gids all gid (ids_one) in /proc/PID/status,
	 * dumpable by the kernel's word there and by its agent's (HELLO's
	 * FL_HELLO_DUMPABLE, then DUMPABLE; true for an agent that does not
	 * report).  All false until seen: a process restored from a record
	 * that says nothing of it is root's alone.
	 */
	gid_t gid;
	bool ids_one;
	bool kernel_dumpable;
	bool agent_dumpable;
	/* Its latest HELLO had FL_HELLO_DUMP: it sends DUMPABLE. */
	bool dump_reports;
	/*
	 * Its latest HELLO had FL_HELLO_DONE: it sends DONE when it pushes a
	 * completion while its completion bell is set (requests.c).
	 */
	bool rings;
};

/* All processes, live and exited, in registration order (restored ones first). */
extern struct fld_proc **fld_procs;
extern size_t fld_num_procs;

/* Returns the count of a site now (frozen or read from the region). */
uint64_t fld_site_faults(const struct fld_proc *p, const struct fld_module *m,
			 const struct fld_site *s);

/*
 * A site's healing now (a copy): its process's heal slot, or what it held
 * when the counts were frozen (or restored from the state file).  A value
 * the process wrote out of range is read as one in range, which a record
 * can hold: state IMPLICIT, tactic none, why OTHER.
 */
void fld_site_heal(const struct fld_proc *p, const struct fld_module *m,
		   const struct fld_site *s, struct fl_shm_heal *out);
/*
 * The region pages the site's instruction touched first (populated by the
 * handler): fault signals the kernel counts at the site, not failed checks.
 */
uint64_t fld_site_populations(const struct fld_proc *p, const struct fld_module *m,
			      const struct fld_site *s);

/*
 * Site i of m's values as frozen (or restored from the state file) into
 * *out: all zero for a site that has none.  A binary search of the few
 * sites that have some.
 */
void fld_site_frozen(const struct fld_module *m, uint32_t i, struct fld_frozen *out);
/*
 * Sets site i of m's frozen values (a record restored): nothing is kept
 * for values all zero.  Sites set in index order are appended, without a
 * search.  Returns 0, or -ENOMEM (the site keeps what it had).
 */
int fld_site_set_frozen(struct fld_module *m, uint32_t i, const struct fld_frozen *v);
/*
 * Gives back what m's growing arrays (its sites' names, its frozen values)
 * hold beyond their length: for a module whose sites are all in, named
 * and restored.
 */
void fld_module_fit(struct fld_module *m);
/* A counter slot of a process's region as it is now (state.c's counts file). */
struct fld_slot_now {
	uint64_t faults;
	uint64_t populations;
	struct fl_shm_heal heal;	/* kept in range, as fld_site_heal's */
};

/*
 * Reads slot of p's region, which must be mapped and have slot below its
 * capacity (p->layout.capacity): the process writes the values, the
 * bounds are the daemon's.
 */
void fld_slot_read(const struct fld_proc *p, uint32_t slot, struct fld_slot_now *out);

/* The name of site s of m, or NULL. */
const char *fld_site_function(const struct fld_module *m, const struct fld_site *s);
/*
 * Names site i of m (len bytes, no NUL inside); the name is kept once when
 * the site before has it too (a function's sites come one after the
 * other).  Returns 0, or -ENOMEM (the site keeps the name it had).
 */
int fld_site_name(struct fld_module *m, uint32_t i, const char *name, size_t len);

/* Appends a new process, with the next serial.  NULL when out of memory. */
struct fld_proc *fld_proc_add(pid_t pid, uid_t uid, const char *comm);
/* Serials given from now on are above serial (restored processes keep theirs). */
void fld_proc_serial_above(uint64_t serial);
struct fld_proc *fld_proc_find_live(pid_t pid);
/* The process with that serial, or NULL when it is gone. */
struct fld_proc *fld_proc_by_serial(uint64_t serial);
/* p's module id, not removed; or NULL. */
struct fld_module *fld_proc_module(struct fld_proc *p, uint32_t id);
/* p's module id, removed or not (the latest); or NULL. */
struct fld_module *fld_proc_module_any(struct fld_proc *p, uint32_t id);

/*
 * The entry of this process, live or exited, if the daemon has one: the
 * same pid and uid, and the same region (region_ino), or, for an entry
 * restored from a file without it, the same start time (or only the pid,
 * from a file without start times).  The latest such entry; NULL when
 * there is none.
 */
struct fld_proc *fld_proc_match(pid_t pid, uid_t uid, uint64_t start_time, uint64_t ino);

/*
 * Freezes a module's counts and its sites' healing (removed); its slots
 * may be reused by the process once they are saved (ack, when they are
 * RETIRED).
 */
void fld_module_freeze(struct fld_proc *p, struct fld_module *m);

/*
 * region (mapped, checked, of layout l) is p's from now on (the one it had,
 * if another, is unmapped): every module of p is checked against its site
 * table.  One
 * whose slots still describe it counts there again; one whose slots are
 * RETIRED is frozen from them (ack); any other keeps its frozen counts.
 */
void fld_proc_attach(struct fld_proc *p, void *region, const struct fl_shm_layout *l);

/*
 * The registration is over (disconnected): exited, and the exited
 * processes of its uid that exited first (restored ones before any this
 * daemon saw exit) are dropped beyond max_exited.  Its region stays
 * mapped: the process may live on (fld_proc_final when it is gone).
 */
void fld_proc_exit(struct fld_proc *p, size_t max_exited);

/*
 * Adds the modules of p's site table (below sites_high) the daemon has no
 * module for, at most up to max_modules and max_sites (what p may hold
 * then: its own limit, and its user's budget, which the caller asks,
 * fld_proc_untold): the sites of one module id in a row make one module,
 * anonymous (its name unknown; a MODULE_ADD for it later names it).
 */
void fld_proc_scan(struct fld_proc *p, size_t max_modules, size_t max_sites);
/*
 * How many sites fld_proc_scan would add with no bound but max_sites
 * (the process may still change its table: the scan's own bound holds).
 * 0 when p has no region.
 */
uint64_t fld_proc_untold(const struct fld_proc *p, size_t max_sites);

/*
 * The process is gone: its counts are final.  Modules its site table
 * holds that the daemon was never told of are added (anonymous, at most
 * up to max_modules and max_sites), every count is frozen, the region
 * unmapped.  Nothing when p has no region.
 */
void fld_proc_final(struct fld_proc *p, size_t max_modules, size_t max_sites);

/*
 * Whether pid runs as the process p registered: started at p->start_time,
 * and not exiting (a thread that is neither a zombie nor exiting).
 */
bool fld_proc_alive(const struct fld_proc *p);

/* /proc/PID/stat's starttime (clock ticks after boot), 0 when it cannot be read. */
uint64_t fld_proc_start_time(pid_t pid);

/*
 * p's record on disk says what p holds now (state.c, after the rename of a
 * record written since p's latest change; or there is no state directory):
 * the RETIRED slots of the modules frozen from them are marked SAVED (the
 * process may reuse them), and the keeper lets go of p's region when its
 * final counts are the ones saved.
 */
void fld_proc_saved(struct fld_proc *p);
/* fld_proc_saved for every process (no state directory: nothing to wait for). */
void fld_procs_saved(void);

void fld_module_free(struct fld_module *m);

/* Removes p from the list and frees it. */
void fld_proc_remove(struct fld_proc *p);

/*
 * What the files above this one are told of the processes: they subscribe
 * (fld_proc_observe), and procs.c names none of them.  Any may be NULL.
 */
struct fld_proc_observer {
	/* p is about to be freed (state.c: its record goes; kbpf_procs.c: its kernel view). */
	void (*gone)(struct fld_proc *p);
	/*
	 * The keeper may let go of p's region (p->kept): its final counts are
	 * saved, or p is freed (session.c subscribes the keeper).
	 */
	void (*let_go)(const struct fld_proc *p);
	/* m is about to be freed (fld_module_free), a module of p or not (yet). */
	void (*module_gone)(struct fld_module *m);
};

#define FLD_PROC_OBSERVERS 4
/*
 * o (kept, not copied) is told from now on, after the observers added
 * before it.  At most FLD_PROC_OBSERVERS; one more is a bug (aborts).
 */
void fld_proc_observe(const struct fld_proc_observer *o);

/*
 * Removes and frees uid's process that exited first (see fld_proc_exit),
 * keep aside (NULL: none).  Returns false when uid has no other exited
 * process.
 */
bool fld_proc_drop_oldest_exited(uid_t uid, const struct fld_proc *keep);

/*
 * Whether a client with uid may see p's statistics without addresses (PS);
 * what gives addresses or changes code asks fld_access_traceable.
 */
bool fld_proc_visible(const struct fld_proc *p, uid_t uid);

#endif /* FLD_PROCS_H */
