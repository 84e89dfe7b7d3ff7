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
struct fld_kproc;	/* kbpf.c */

struct fld_site {
	uint64_t faulting_pc;
	uint64_t handler_pc;
	uint32_t kind;
	uint32_t slot;		/* counter slot in the process's region */
	char *function;		/* from SYMBOLS, or NULL */
	uint64_t frozen;	/* the count once it can no longer change */
	uint64_t kernel_frozen;	/* the eBPF program's, once the process exited (kbpf.c) */
};

struct fld_module {
	uint32_t id;
	char *name;
	uint64_t code_start;
	uint64_t code_size;
	uint32_t first_counter;
	uint32_t num_sites;
	struct fld_site *sites;
	bool removed;		/* counts frozen */
	/* Sites mirrored into the eBPF program's map (the first ones: kbpf.c). */
	uint32_t kernel_sites;
	/* Loaded when its process exited: its sites' kernel_frozen are set. */
	bool kernel_counted;
	/* Stack map: the sealed bytes (mapped), parsed, and runtime PCs. */
	void *sections;
	size_t sections_size;
	struct fl_stackmap *sm;
	uint64_t *record_pc;	/* per record, in section order */
};

struct fld_job;

/* A process's record file in the state directory, proc.SERIAL.json (state.c). */
struct fld_record {
	struct fld_job *writer;	/* the job writing it now, or NULL */
	bool written;		/* the file holds it as of written_gen */
	bool written_exited;	/* ...written after it exited: its counts are final */
	uint32_t gen;		/* bumped by every change but the counts (session.c) */
	uint32_t written_gen;
	uint64_t written_sum;	/* the sum of the counts written */
	uint64_t soonest_ms;	/* CLOCK_MONOTONIC: not written again before */
	uint64_t next_ms;	/* ...nor a live one's counts checked */
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
	uint64_t exited_ms;
	uint64_t exit_seq;		/* exits seen by this daemon: 1, 2...; 0 restored */
	struct fld_client *client;	/* NULL once exited */
	void *region;			/* NULL once exited (counts frozen) */
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
	struct fld_kproc *k;		/* the eBPF program's view (kbpf.c), or NULL */
};

/* All processes, live and exited, in registration order (restored ones first). */
extern struct fld_proc **fld_procs;
extern size_t fld_num_procs;

/* Returns the count of a site now (frozen or read from the region). */
uint64_t fld_site_faults(const struct fld_proc *p, const struct fld_module *m,
			 const struct fld_site *s);

/* Appends a new process, with the next serial.  NULL when out of memory. */
struct fld_proc *fld_proc_add(pid_t pid, uid_t uid, const char *comm);
/* Serials given from now on are above serial (restored processes keep theirs). */
void fld_proc_serial_above(uint64_t serial);
struct fld_proc *fld_proc_find_live(pid_t pid);
/* The process with that serial, or NULL when it is gone. */
struct fld_proc *fld_proc_by_serial(uint64_t serial);
struct fld_module *fld_proc_module(struct fld_proc *p, uint32_t id);

/* Freezes a module's counts; its slots may be reused by the process. */
void fld_module_freeze(struct fld_proc *p, struct fld_module *m);

/*
 * The process is gone (disconnected): freeze every count, unmap its
 * region, and drop the exited processes of its uid that exited first
 * (restored ones before any this daemon saw exit) beyond max_exited.
 */
void fld_proc_exit(struct fld_proc *p, size_t max_exited);

void fld_module_free(struct fld_module *m);

/* Removes p from the list and frees it. */
void fld_proc_remove(struct fld_proc *p);

/* Called for each process about to be freed, when set (state.c: its record goes). */
extern void (*fld_proc_on_free)(struct fld_proc *p);

/*
 * Removes and frees uid's process that exited first (see fld_proc_exit).
 * Returns false when uid has no exited process.
 */
bool fld_proc_drop_oldest_exited(uid_t uid);

/* Whether a client with uid may see (or change) p. */
bool fld_proc_visible(const struct fld_proc *p, uid_t uid);

#endif /* FLD_PROCS_H */
