/* SPDX-License-Identifier: MIT */
/*
 * The collector of the statepoint example (collector.h).
 *
 * A gc.statepoint's stack map record (LLVM's Statepoints documentation,
 * "Stack Map Format"), in order:
 *   locations 0..2   constants: the calling convention, the flags, and the
 *                    number N of deopt locations
 *   the next N       the deopt values ("deopt" operand bundle)
 *   then pairs       (base, derived) per relocated reference: the object's
 *                    base reference, and the reference to update, which
 *                    may point inside the object (an interior pointer)
 * A location may appear several times (a base is often its own derived).
 * So every pair is read before any is written, and a derived reference
 * keeps its offset from its base: new base + (derived - base).
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>

#include <faultline/deopt.h>
#include <faultline/opts.h>

#include "collector.h"
#include "heap.h"

/* Pairs per record this collector handles; workload.ll's have a few. */
#define MAX_PAIRS 64

void (*safepoint_fn)(void);

static struct {
	bool on;		/* between gc_begin and gc_end */
	unsigned frames;	/* yielded by the walk */
	unsigned last_index;
	uint64_t last_sp;
	uint64_t first_sp;	/* the innermost frame's: the context is below it */
} walk;

void gc_begin(void)
{
	if (walk.on)
		gc_die("a collection inside a collection");
	memset(&walk, 0, sizeof(walk));
	walk.on = true;
	gc_flip();
}

void gc_end(int walk_result)
{
	if (walk_result != 0)
		gc_die("fl_stack_walk: %d (%s)", walk_result, strerror(-walk_result));
	gc_finish();
	gc_stats.frames += walk.frames;
	gc_stats.last_frames = walk.frames;
	walk.on = false;
}

/* Location i of the frame's record, read; dies when it cannot be. */
static uint64_t read_at(const struct fl_walk_frame *f, uint32_t i)
{
	uint64_t v;
	int err = fl_location_read(f->regs, &f->at->record->locations[i], &v);

	if (err)
		gc_die("frame %u (pc 0x%llx): location %u: fl_location_read: %d", f->index,
		       (unsigned long long)f->pc, i, err);
	return v;
}

static void write_at(const struct fl_walk_frame *f, uint32_t i, uint64_t v)
{
	const struct fl_stackmap_location *l = &f->at->record->locations[i];
	int err;

	/* A constant is a null reference, which stays null: nothing to write. */
	if (l->kind == FL_LOC_CONSTANT || l->kind == FL_LOC_CONSTANT_INDEX) {
		if (v != l->constant)
			gc_die("frame %u: location %u is the constant %llu, moved to 0x%llx",
			       f->index, i, (unsigned long long)l->constant,
			       (unsigned long long)v);
		return;
	}
	err = fl_location_write(f->regs, l, v);
	if (err)
		gc_die("frame %u (pc 0x%llx): location %u: fl_location_write: %d", f->index,
		       (unsigned long long)f->pc, i, err);
	gc_stats.roots++;
	if (l->kind == FL_LOC_REGISTER &&
	    (uint64_t)(uintptr_t)f->regs->at[l->dwarf_reg] < walk.first_sp)
		gc_stats.roots_below++;
}

int gc_relocate_frame(const struct fl_walk_frame *f, void *ctx)
{
	const struct fl_stackmap_record *r = f->at->record;
	uint64_t base[MAX_PAIRS], derived[MAX_PAIRS];
	uint32_t first, pairs;

	(void)ctx;
	if (!walk.on)
		gc_die("gc_relocate_frame outside a collection");
	/* Innermost first, each frame above the one before. */
	if (walk.frames && (f->index <= walk.last_index || f->sp <= walk.last_sp))
		gc_die("frame %u (sp 0x%llx) after frame %u (sp 0x%llx)", f->index,
		       (unsigned long long)f->sp, walk.last_index,
		       (unsigned long long)walk.last_sp);
	if (!walk.frames)
		walk.first_sp = f->sp;
	walk.frames++;
	walk.last_index = f->index;
	walk.last_sp = f->sp;
	if (r->id != GC_STATEPOINT_ID || r->num_locations < 3)
		gc_die("frame %u: record ID 0x%llx with %u locations: not a statepoint's",
		       f->index, (unsigned long long)r->id, r->num_locations);
	for (int i = 0; i < 3; i++)
		if (r->locations[i].kind != FL_LOC_CONSTANT)
			gc_die("frame %u: location %d is not a constant", f->index, i);
	first = 3 + (uint32_t)r->locations[2].constant;
	if (first > r->num_locations || (r->num_locations - first) % 2)
		gc_die("frame %u: %u locations, %u deopt values: no whole pairs after them",
		       f->index, r->num_locations, first - 3);
	pairs = (r->num_locations - first) / 2;
	if (pairs > MAX_PAIRS)
		gc_die("frame %u: %u references", f->index, pairs);
	for (uint32_t k = 0; k < pairs; k++) {
		base[k] = read_at(f, first + 2 * k);
		derived[k] = read_at(f, first + 2 * k + 1);
		if (!base[k] && derived[k])
			gc_die("frame %u: pair %u: 0x%llx derived from null", f->index, k,
			       (unsigned long long)derived[k]);
	}
	for (uint32_t k = 0; k < pairs; k++) {
		uint64_t to = gc_forward(base[k]);

		write_at(f, first + 2 * k + 1, to ? to + (derived[k] - base[k]) : 0);
		write_at(f, first + 2 * k, to);
	}
	return 0;
}

void gc_collect(void)
{
	gc_begin();
	gc_end(fl_stack_walk(NULL, gc_relocate_frame, NULL));
}

static void on_signal(int sig, siginfo_t *si, void *uc)
{
	FL_OPTS(fl_walk_start, start, .signal_context = uc);

	(void)sig;
	(void)si;
	gc_begin();
	gc_end(fl_stack_walk(&start, gc_relocate_frame, NULL));
}

void gc_collect_by_signal(void)
{
	raise(SIGUSR1);
}

void gc_collector_init(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO;
	if (sigaction(SIGUSR1, &sa, NULL))
		gc_die("sigaction: %m");
}
