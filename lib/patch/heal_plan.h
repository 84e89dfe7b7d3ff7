/* SPDX-License-Identifier: MIT */
/*
 * How an implicit null check is healed in place (heal_plan.c): which
 * bytes change, where the stubs go and what they hold.  Pure: it reads
 * the code it is given and asks its caller where stubs may go, so the
 * same plan serves the running process (heal.c) and `faultline healable`
 * on a file.
 */
#ifndef FL_PATCH_HEAL_PLAN_H
#define FL_PATCH_HEAL_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The unwind rows of new code (struct fl_seen_row): the plan gives them, seen.c registers them. */
#include "patch/seen.h"

/* The tactics, after E9Patch's names; the values are the heal slots' (proto.h). */
enum fl_heal_tactic {
	FL_HEAL_NONE = 0,
	FL_HEAL_B1,	/* jmp rel32 over the site (5 bytes or more) */
	FL_HEAL_B2,	/* punned jmp: its rel32 runs into the next bytes */
	FL_HEAL_T1,	/* punned jmp behind redundant prefixes */
	FL_HEAL_T3,	/* jmp rel8 into an evicted neighbour's bytes */
	FL_HEAL_T2,	/* punned jmp whose rel32 runs into the evicted successor's new jump */
	FL_HEAL_RELOC,	/* the whole function copied, the site explicit there (heal_reloc.c) */
	FL_HEAL_TACTICS,
};

/* "B1", "B2", "T1", "T3", "T2", "REL", or "none". */
const char *fl_heal_tactic_name(enum fl_heal_tactic t);

/*
 * A list of tactic names ("B1,T3,REL", any case, commas or spaces) as
 * the bits of fl_heal_env.tactics: returns them, or 0 when a name is not
 * a tactic's (or the list is empty).
 */
unsigned fl_heal_tactics_parse(const char *list);

/* The most bytes of a stub's tail (struct fl_heal_plan). */
#define FL_HEAL_TAIL_MAX 32
/* The largest stub the plans ask for. */
#define FL_HEAL_STUB_MAX 112

/* One instruction's change. */
struct fl_heal_change {
	uint64_t addr;
	uint8_t len;
	uint8_t old[15];
	uint8_t new[15];
};

/* An implicit-check site, for relocation. */
struct fl_heal_member {
	uint64_t pc;
	uint64_t handler;
};


/* The most implicit-check sites of one relocated function. */
#define FL_HEAL_RELOC_SITES 64

/*
 * A relocated function (FL_HEAL_RELOC): its copy, with every implicit
 * check of it made explicit, and the jump at its entry.
 */
struct fl_heal_reloc {
	uint64_t fn, end;		/* the original function: [fn, end) */
	uint64_t copy;			/* the copy: size bytes at copy */
	size_t size;
	uint8_t *bytes;
	struct fl_heal_change entry;	/* fn's first 5 bytes: jmp copy */
	struct fl_heal_member members[FL_HEAL_RELOC_SITES];
	size_t nmembers;
	/* The copy's unwind rows: each instruction's original. */
	struct fl_seen_row *rows;
	size_t nrows;
};

/* What the planner may look at and ask. */
struct fl_heal_env {
	/* The code: len bytes at runtime address base (a whole text segment). */
	uint64_t base;
	const uint8_t *code;
	size_t len;
	/*
	 * Finds where a stub of size bytes may start, somewhere in [lo, hi]:
	 * returns true with *at set.  It does not take the place yet.
	 */
	bool (*place)(void *ctx, uint64_t lo, uint64_t hi, size_t size, uint64_t *at);
	/*
	 * Whether [addr, addr + len) may neither change nor be relied on as
	 * it is (another implicit-check site, bytes another patch changed or
	 * relies on).  May be NULL: nothing is.
	 */
	bool (*busy)(void *ctx, uint64_t addr, size_t len);
	/*
	 * For relocation, the last tactic (all may be NULL: no function is
	 * relocated).  extent: whether the function that starts at fn has a
	 * known end (its symbol's size, its unwind entry's range): true with
	 * *end set, and *lsda when it has exception tables.
	 */
	bool (*extent)(void *ctx, uint64_t fn, uint64_t *end, bool *lsda);
	/*
	 * The implicit-check sites in [lo, hi), in address order: up to max
	 * of them into out; returns how many there are.
	 */
	size_t (*sites)(void *ctx, uint64_t lo, uint64_t hi, struct fl_heal_member *out, size_t max);
	/*
	 * The bytes [addr, addr + len) as compiled, before any heal changed
	 * them, into out.  NULL: the code is as compiled.
	 */
	void (*original)(void *ctx, uint64_t addr, size_t len, uint8_t *out);
	/*
	 * Whether the relocation's entry jump may overwrite [fn, fn + len):
	 * nothing relies on those bytes but heals of sites inside them.
	 * NULL: the bytes must be as compiled and not busy.
	 */
	bool (*entry_free)(void *ctx, uint64_t fn, size_t len);
	/*
	 * Whether [lo, hi) holds code that faultline finds by address besides
	 * its implicit checks (stack map records: deoptimization, patch points
	 * and their shadows), which a copy would move.  NULL: none.
	 */
	bool (*records)(void *ctx, uint64_t lo, uint64_t hi);
	/* Where the failures of the site at pc are counted (0 when only planning). */
	uint64_t (*counter)(void *ctx, uint64_t pc);
	/* The tactics the planner may use: bits 1u << FL_HEAL_*; 0: all. */
	unsigned tactics;
	void *ctx;
};

struct fl_heal_plan {
	enum fl_heal_tactic tactic;
	/* FL_HEAL_NONE: why, in words, and as a code (FL_SHM_WHY_* of proto.h). */
	char why[112];
	int why_code;
	/* The site: the faulting instruction, and what it becomes. */
	struct fl_heal_change site;
	/* The site's stub: where, and its size (fl_heal_site_stub writes it). */
	uint64_t stub;
	size_t stub_size;
	/*
	 * Where the stub goes back to once the site's instruction has run:
	 * after it, or after its tail; 0 when the tail ends in a ret or a
	 * jmp of its own.
	 */
	uint64_t back;
	/*
	 * B2/T1: the instructions after the site that the jump's rel32
	 * overlaps, up to the first boundary at or after the jump's end,
	 * copied into the stub after the site's (for address plan->stub),
	 * so that the path that does not fail runs none of the overlapped
	 * bytes; tail_len 0 when there is none.
	 */
	uint8_t tail[FL_HEAL_TAIL_MAX];
	uint8_t tail_len;
	/*
	 * Bytes that do not change but must stay as they are while the site
	 * is healed (a punned jump's rel32, the instructions of the tail):
	 * [pin, pin + pin_len).
	 */
	uint64_t pin;
	uint8_t pin_len;
	/*
	 * T3: the evicted neighbour, its change and its stub.  T2: the
	 * evicted successor (the instruction right after the site), whose
	 * new first bytes the site's jump reads: written first, its own
	 * change (heal.c), and given back last.
	 */
	bool evicts;
	struct fl_heal_change nb;
	uint64_t nb_stub;
	size_t nb_stub_size;
	/* For the stub: the register tested, 32-bit addressing. */
	int base_reg;		/* a ZydisRegister, 64-bit */
	bool addr32;
	/*
	 * The handler's code writes the status flags before it reads any
	 * (flags_dead(), heal_plan.c): the null path bumps the counter
	 * without saving them, and without the stack.  Otherwise it saves
	 * them (pushfq) below the red zone.
	 */
	bool flags_dead;
	/* FL_HEAL_RELOC: the copy (fl_heal_plan_release frees it). */
	struct fl_heal_reloc *reloc;
};

/*
 * Plans the healing of the implicit-check site at runtime address site,
 * in the function that starts at fn (instruction boundaries are found by
 * decoding from there), whose null path goes to handler.  Returns 0 with
 * *plan filled in (plan->tactic FL_HEAL_NONE and plan->why when it
 * cannot be healed in place), or -EINVAL when site or fn is not in env's
 * code.
 */
int fl_heal_plan(const struct fl_heal_env *env, uint64_t site, uint64_t fn, uint64_t handler,
		 struct fl_heal_plan *plan);

/* Frees what the plan holds (its relocation); the plan is FL_HEAL_NONE after. */
void fl_heal_plan_release(struct fl_heal_plan *plan);

/*
 * The unwind rows of the site's stub (out: room for FL_HEAL_STUB_ROWS):
 * returns how many.  The evicted neighbour's stub has one row: its
 * instruction's.
 */
#define FL_HEAL_STUB_ROWS 16
size_t fl_heal_stub_rows(const struct fl_heal_env *env, const struct fl_heal_plan *plan,
			 struct fl_seen_row *out);

/*
 * Writes the site's stub (plan->stub_size bytes, for address plan->stub)
 * into out: a null base register bumps the 64-bit counter at counter
 * (atomically) and goes to handler; any other runs the site's instruction
 * (and its tail) and goes back after it.  Every register is preserved on
 * both paths, and the flags too (on the null path, unless the handler's
 * code is proved to overwrite them first); the red zone is not touched.
 */
size_t fl_heal_site_stub(const struct fl_heal_plan *plan, uint64_t handler, uint64_t counter,
			 uint8_t *out);

/* Writes the evicted neighbour's stub (plan->nb_stub_size bytes) into out. */
void fl_heal_nb_stub(const struct fl_heal_plan *plan, uint8_t *out);

/* ------------------------------------------------------------------------
 * Between heal_plan.c and heal_reloc.c
 */

/*
 * The implicit-check site at site, whose bytes (avail of them) are at
 * bytes: plan->site, base_reg and addr32 set.  Returns 0, or -EINVAL with
 * plan->why and plan->why_code set (no base register to test, a branch).
 */
int fl_heal_site_of(const uint8_t *bytes, size_t avail, uint64_t site, struct fl_heal_plan *plan);

/* Whether the status flags are dead at handler (heal_plan.c's flags_dead). */
bool fl_heal_flags_dead(const struct fl_heal_env *env, uint64_t handler);

/*
 * Relocation, the last tactic: returns 0 with plan->tactic FL_HEAL_RELOC
 * and plan->reloc set, or 0 with plan->why and plan->why_code set when
 * the function cannot be relocated; -ENOMEM.
 */
int fl_heal_reloc_plan(const struct fl_heal_env *env, uint64_t site, uint64_t fn,
		       struct fl_heal_plan *plan);

#endif /* FL_PATCH_HEAL_PLAN_H */
