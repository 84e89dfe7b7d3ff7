/* SPDX-License-Identifier: MIT */
/*
 * A live process's counts between its records: STATE_DIR/proc.SERIAL.counts
 * (counts.c; the format: docs/state.md), written a block of slots at a time
 * as the region's dirty summary says they changed.  state.c decides when.
 */
#ifndef FLD_COUNTS_H
#define FLD_COUNTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "procs.h"

#define FLD_COUNTS_MAGIC 0x434c4c46u	/* "FLLC" */
#define FLD_COUNTS_VERSION 1u
/* Slots a block holds: the region's dirty summary's (proto.h). */
#define FLD_COUNTS_BLOCK FL_SHM_DIRTY_SLOTS

struct fld_counts_header {
	uint32_t magic;
	uint32_t version;
	uint64_t serial;	/* the record's, and the file name's */
	uint64_t stamp;		/* the record's "stamp": the file goes with that record only */
	uint32_t slots;		/* slots 0 .. slots - 1 follow */
	uint32_t slot_size;	/* sizeof(struct fld_counts_slot) */
	uint8_t reserved[32];	/* 0 */
};

/* A slot as the region held it (struct fld_slot_now). */
struct fld_counts_slot {
	uint64_t faults;
	uint64_t populations;
	uint64_t failures;
	uint32_t healed_at;
	uint8_t state;
	uint8_t tactic;
	uint8_t why;
	uint8_t reserved;	/* 0 */
};

_Static_assert(sizeof(struct fld_counts_header) == 64, "counts file header layout");
_Static_assert(sizeof(struct fld_counts_slot) == 32, "counts file slot layout");

/* "proc.SERIAL.counts", or with ".tmp" after it. */
void fld_counts_name(char *buf, size_t size, uint64_t serial, bool tmp);

/*
 * The slots p's counts file is to hold: up to the highest slot of a live
 * module's site, within p's region.  p has a region.
 */
uint32_t fld_counts_slots(const struct fld_proc *p);

/*
 * Reads block b of p's region (slots b * FLD_COUNTS_BLOCK up to
 * p->rec.counts_slots) into out, and notes whether it holds a healed slot
 * (p->rec.watched).  With take, the block's dirty byte is exchanged for 0
 * first: a change after that marks it again.  Returns the slots read.
 */
uint32_t fld_counts_block(struct fld_proc *p, uint32_t b, bool take, struct fld_counts_slot *out);

/*
 * Sizes p's watched blocks for p->rec.counts_slots (a new counts file is
 * being written).  Returns 0 or -ENOMEM.
 */
int fld_counts_watch_init(struct fld_proc *p);

/*
 * Writes the blocks of p's counts file (in dir_fd, valid for the record
 * on disk) that changed since they were written: those the dirty summary
 * marks, and those holding a healed slot whose failures moved.  At most
 * *budget blocks (taken off it); with sync, the file is synced after.
 * Returns the blocks written (0: nothing changed, the file untouched), or
 * -errno (then the file is no longer trusted: p->rec.counts_stamp 0).
 * *more is set when the budget ran out first.  Not thread-safe (the
 * daemon's loop).
 */
int fld_counts_flush(struct fld_proc *p, int dir_fd, unsigned *budget, bool sync, bool *more);

/*
 * Reads p's counts file from fd (size bytes), restored from its record
 * just now (p->serial, p->rec.stamp set): when it is the record's, its
 * slots replace the counts and healing of the record's live modules.
 * Returns 1 when applied, 0 when it belongs to another write of the
 * record (left over by a daemon that died between the two: the record
 * says more), or -EINVAL with *why set (to keep aside; p is unchanged),
 * -ENOMEM or -EIO.
 */
int fld_counts_load(struct fld_proc *p, int fd, size_t size, const char **why);

/* Frees what p's counts file needs in memory. */
void fld_counts_forget(struct fld_proc *p);

#endif /* FLD_COUNTS_H */
