/* SPDX-License-Identifier: MIT */
/*
 * Healing by relocating the function (FL_HEAL_RELOC, heal_plan.h): the
 * tactic tried when no in-place one fits.
 *
 * The whole function is copied somewhere a jump reaches, with every
 * implicit check of it made explicit there (each as a site's stub is,
 * inline: the test, the instruction, a jump over the null path), and its
 * first five bytes become a jmp rel32 to the copy.  In the copy:
 *   - relative branches and calls are re-encoded (rel32 forms) to the
 *     copy's instruction when their target is in the function, to the
 *     same address otherwise;
 *   - RIP-relative operands get the displacement of the new address;
 *   - everything else is the same bytes.
 * Threads already in the old code finish there: its bytes are unchanged
 * but for the entry's five, which no thread can be inside when they
 * change (patch.c's handshake: the change moves instruction boundaries)
 * and no branch of the function lands inside (checked here).  Returns
 * into the old code stay correct, since it is unchanged; a null there
 * still faults and is dispatched as before.
 *
 * Refused, with the reason (FL_SHM_WHY_*):
 *   - no known extent: the environment knows the function's end (its
 *     symbol's size or its unwind entry's range), or it cannot be copied;
 *   - exception tables (an LSDA): their call-site ranges are offsets in
 *     the old code, so an exception through the copy would miss its
 *     landing pads;
 *   - a computed jump (jmp through a register or memory: a jump table
 *     whose table is not rebuilt here, an indirect tail call);
 *   - code that reads its own bytes (a RIP-relative operand into the
 *     function, a lea of one of its addresses: a table, a landing pad);
 *   - an entry that cannot take the jump: the function is shorter than
 *     five bytes, a branch of it lands in its first five, or a heal
 *     changed or relies on them (one of its own sites healed in place
 *     there too: a thread in that stub would come back inside the jump);
 *   - an instruction that cannot move (loop, jrcxz: rel8 only; a branch
 *     into the middle of an instruction; bytes that do not decode, or
 *     that do not end exactly at the function's end);
 *   - a copy that would not fit in a page (stubs.c's unit);
 *   - stack map records in the function (env->records): deoptimization
 *     finds its frame by the return address, and patch points and their
 *     shadows are rewritten at their address, which a copy would move;
 *   - a handler inside the entry's first five bytes, or an implicit check
 *     that does not start an instruction of the decoding.
 * Branches into the function's first five bytes from outside it (a .cold
 * part) cannot be seen here: LLVM emits none into an entry block.
 * The program's own faulting instructions other than faultline's sites
 * fault at new addresses in the copy: a program that recognises such a
 * PC (a safepoint poll, another runtime's checks) should keep relocation
 * off (FAULTLINE_HEAL_RELOCATE=0, heal.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <Zydis/Zydis.h>

#include "patch/heal_plan.h"
#include "proto/proto.h"

/* The largest copy: stubs.c's page. */
#define COPY_MAX 4096u
/* The most instructions of a function that is copied. */
#define INSNS_MAX 2048u
#define USER_START 0x10000ull
#define USER_END 0x7ffffffff000ull
#define JMP32 0xe9
#define CALL32 0xe8

/* One instruction of the function, and what it becomes. */
struct insn {
	uint32_t off;		/* in the function */
	uint32_t copy_off;	/* in the copy */
	uint8_t len;
	uint8_t size;		/* in the copy */
	uint8_t kind;
	int8_t member;		/* its index in members, or -1 */
	uint64_t target;	/* a branch's or a RIP-relative operand's */
	ZydisDecodedInstruction d;
};

enum { COPIED, BRANCH, RIPREL, CHECK };

struct work {
	const struct fl_heal_env *env;
	struct fl_heal_reloc *r;
	uint8_t *code;		/* the function as compiled */
	struct insn *insns;
	size_t n;
	struct fl_heal_plan *checks;	/* one per member */
};

static bool refuse(struct fl_heal_plan *p, int code, const char *fmt, const char *what)
{
	snprintf(p->why, sizeof(p->why), fmt, what);
	p->why_code = code;
	return false;
}

static bool in_code(const struct fl_heal_env *env, uint64_t a, size_t len)
{
	return a >= env->base && a - env->base <= env->len && len <= env->len - (a - env->base);
}

/* The index of the instruction that starts at a, or -1. */
static long insn_at(const struct work *w, uint64_t a)
{
	size_t lo = 0, hi = w->n;

	if (a < w->r->fn || a >= w->r->end)
		return -1;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (w->r->fn + w->insns[mid].off < a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < w->n && w->r->fn + w->insns[lo].off == a ? (long)lo : -1;
}

static bool inside(const struct work *w, uint64_t a)
{
	return a >= w->r->fn && a < w->r->end;
}

/* Where address a of the function is in the copy (a an instruction's start). */
static uint64_t moved(const struct work *w, uint64_t a)
{
	long i = insn_at(w, a);

	return i < 0 ? a : w->r->copy + w->insns[i].copy_off;
}

/*
 * Decodes the function, classifies each instruction and sizes it in the
 * copy.  Returns false with the plan's reason set.
 */
static bool classify(struct work *w, struct fl_heal_plan *p)
{
	struct fl_heal_reloc *r = w->r;
	ZydisDecoder d;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	size_t m = 0, len = r->end - r->fn;
	uint32_t off = 0;

	ZydisDecoderInit(&d, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
	while (off < len) {
		struct insn *x = &w->insns[w->n];
		uint64_t a = r->fn + off;

		if (w->n == INSNS_MAX)
			return refuse(p, FL_SHM_WHY_TOO_LARGE, "%s", "more than 2048 instructions");
		if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(&d, w->code + off, len - off < 15 ?
							 len - off : 15, &x->d, ops)))
			return refuse(p, FL_SHM_WHY_UNMOVABLE, "%s", "bytes that do not decode");
		x->off = off;
		x->len = x->d.length;
		x->member = -1;
		x->kind = COPIED;
		x->size = x->len;
		while (m < r->nmembers && r->members[m].pc < a)
			m++;
		if (m < r->nmembers && r->members[m].pc == a) {
			struct fl_heal_plan *c = &w->checks[m];
			uint8_t probe[FL_HEAL_STUB_MAX];

			if (fl_heal_site_of(w->code + off, len - off, a, c) != 0)
				return refuse(p, FL_SHM_WHY_UNMOVABLE, "a check not made explicit: %.30s",
					      c->why);
			c->flags_dead = fl_heal_flags_dead(w->env, r->members[m].handler);
			c->back = 1;	/* sized with its jump over the null path */
			x->kind = CHECK;
			x->member = (int8_t)m;
			x->size = (uint8_t)fl_heal_site_stub(c, 0, 0, probe);
		} else if (x->d.meta.branch_type != ZYDIS_BRANCH_TYPE_NONE) {
			bool rel = ops[0].type == ZYDIS_OPERAND_TYPE_IMMEDIATE && ops[0].imm.is_relative;

			if (!rel && (x->d.meta.category == ZYDIS_CATEGORY_UNCOND_BR ||
				     x->d.meta.category == ZYDIS_CATEGORY_COND_BR))
				return refuse(p, FL_SHM_WHY_COMPUTED_JUMP, "%s",
					      "a computed jump (jump table, indirect tail call)");
			if (rel) {
				if (x->d.mnemonic == ZYDIS_MNEMONIC_JRCXZ ||
				    x->d.mnemonic == ZYDIS_MNEMONIC_JECXZ ||
				    x->d.mnemonic == ZYDIS_MNEMONIC_JCXZ ||
				    x->d.mnemonic == ZYDIS_MNEMONIC_LOOP ||
				    x->d.mnemonic == ZYDIS_MNEMONIC_LOOPE ||
				    x->d.mnemonic == ZYDIS_MNEMONIC_LOOPNE)
					return refuse(p, FL_SHM_WHY_UNMOVABLE, "a %s (no 32-bit form)",
						      ZydisMnemonicGetString(x->d.mnemonic));
				if (!ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(&x->d, &ops[0], a, &x->target)))
					return refuse(p, FL_SHM_WHY_UNMOVABLE, "%s", "a branch it cannot follow");
				x->kind = BRANCH;
				x->size = x->d.mnemonic == ZYDIS_MNEMONIC_JMP ||
					  x->d.mnemonic == ZYDIS_MNEMONIC_CALL ? 5 : 6;
			}
			/* Far branches, calls and returns through registers or memory: copied. */
			if (!rel && x->d.meta.category == ZYDIS_CATEGORY_CALL &&
			    (x->d.attributes & ZYDIS_ATTRIB_IS_RELATIVE)) {
				/* call *disp(%rip): its displacement moves, like any operand's. */
				x->kind = RIPREL;
			}
		} else if (x->d.attributes & ZYDIS_ATTRIB_IS_RELATIVE) {
			x->kind = RIPREL;
		}
		if (x->kind == RIPREL) {
			bool found = false;

			if (x->d.raw.disp.size != 32)
				return refuse(p, FL_SHM_WHY_UNMOVABLE, "%s", "a relative operand without "
					      "a 32-bit displacement");
			for (unsigned i = 0; i < x->d.operand_count && !found; i++)
				if (ops[i].type == ZYDIS_OPERAND_TYPE_MEMORY &&
				    ops[i].mem.base == ZYDIS_REGISTER_RIP &&
				    ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(&x->d, &ops[i], a, &x->target)))
					found = true;
			if (!found)
				return refuse(p, FL_SHM_WHY_UNMOVABLE, "%s", "a relative operand it "
					      "cannot follow");
			if (inside(w, x->target))
				return refuse(p, FL_SHM_WHY_SELF_READ, "%s",
					      "it reads or takes the address of its own code");
		}
		off += x->len;
		w->n++;
	}
	if (off != len)
		return refuse(p, FL_SHM_WHY_UNMOVABLE, "%s", "its last instruction ends past its end");
	/* Every check matched an instruction: one left implicit in the copy would fault there. */
	for (size_t i = 0, k = 0; i < r->nmembers; i++) {
		while (k < w->n && r->fn + w->insns[k].off < r->members[i].pc)
			k++;
		if (k == w->n || r->fn + w->insns[k].off != r->members[i].pc)
			return refuse(p, FL_SHM_WHY_UNMOVABLE, "%s",
				      "a check inside an instruction of its decoding");
	}
	return true;
}

/* Branch targets inside the function: instruction starts, none inside the entry's jump. */
static bool targets_ok(const struct work *w, struct fl_heal_plan *p)
{
	for (size_t i = 0; i < w->n; i++) {
		const struct insn *x = &w->insns[i];

		if (x->kind != BRANCH || !inside(w, x->target))
			continue;
		if (insn_at(w, x->target) < 0)
			return refuse(p, FL_SHM_WHY_UNMOVABLE, "%s", "a branch into an instruction");
		if (x->target > w->r->fn && x->target < w->r->fn + 5)
			return refuse(p, FL_SHM_WHY_ENTRY, "%s",
				      "a branch lands in its first five bytes");
	}
	for (size_t m = 0; m < w->r->nmembers; m++) {
		uint64_t h = w->r->members[m].handler;

		if (inside(w, h) && insn_at(w, h) < 0)
			return refuse(p, FL_SHM_WHY_UNMOVABLE, "%s", "a handler inside an instruction");
		if (h > w->r->fn && h < w->r->fn + 5)
			return refuse(p, FL_SHM_WHY_ENTRY, "%s", "a handler in its first five bytes");
	}
	return true;
}

/* Every address the copy reaches with 32 bits, and the entry's jump: the copy's window. */
static bool window(const struct work *w, size_t size, uint64_t *lo, uint64_t *hi)
{
	uint64_t min = w->r->fn + 5, max = w->r->fn + 5;

	for (size_t i = 0; i < w->n; i++) {
		const struct insn *x = &w->insns[i];
		uint64_t t = x->target;

		if ((x->kind != BRANCH && x->kind != RIPREL) || inside(w, t))
			continue;
		min = t < min ? t : min;
		max = t > max ? t : max;
	}
	for (size_t m = 0; m < w->r->nmembers; m++) {
		uint64_t h = w->r->members[m].handler;

		if (!inside(w, h)) {
			min = h < min ? h : min;
			max = h > max ? h : max;
		}
	}
	/* Any byte of the copy to any target, with a margin for the instruction's own length. */
	*lo = max > (1ull << 31) - 64 ? max - ((1ull << 31) - 64) : 0;
	*hi = min + ((1ull << 31) - 64) - size;
	if (*lo < USER_START)
		*lo = USER_START;
	if (*hi > USER_END - size)
		*hi = USER_END - size;
	return *lo <= *hi;
}

static size_t rel32(uint8_t op1, int op2, uint64_t from, size_t len, uint64_t to, uint8_t *out)
{
	int32_t rel = (int32_t)(to - (from + len));
	size_t n = 0;

	out[n++] = op1;
	if (op2 >= 0)
		out[n++] = (uint8_t)op2;
	memcpy(out + n, &rel, 4);
	return n + 4;
}

/* Writes the copy into r->bytes and its unwind rows.  Returns false with the reason set. */
static bool emit(struct work *w, struct fl_heal_plan *p)
{
	struct fl_heal_reloc *r = w->r;
	size_t nrows = 0, cap = w->n + r->nmembers * FL_HEAL_STUB_ROWS;

	r->bytes = calloc(1, r->size);
	r->rows = calloc(cap, sizeof(*r->rows));
	if (!r->bytes || !r->rows)
		return refuse(p, FL_SHM_WHY_OTHER, "%s", "out of memory");
	for (size_t i = 0; i < w->n; i++) {
		const struct insn *x = &w->insns[i];
		uint64_t from = r->fn + x->off, to = r->copy + x->copy_off;
		uint8_t *out = r->bytes + x->copy_off;

		r->rows[nrows++] = (struct fl_seen_row){ to, from, 0 };
		switch (x->kind) {
		case CHECK: {
			struct fl_heal_plan *c = &w->checks[x->member];
			const struct fl_heal_member *mb = &r->members[x->member];
			uint64_t counter = w->env->counter ? w->env->counter(w->env->ctx, mb->pc) : 0;
			struct fl_seen_row rows[FL_HEAL_STUB_ROWS];
			size_t k;

			c->stub = to;
			c->back = to + x->size;
			fl_heal_site_stub(c, moved(w, mb->handler), counter, out);
			k = fl_heal_stub_rows(w->env, c, rows);
			/* Its jump over the null path goes on at the next instruction's rule. */
			for (size_t j = 0; j < k; j++)
				if (rows[j].orig == c->back)
					rows[j].orig = from + x->len < r->end ? from + x->len : from;
			/* The first row is the instruction's own, written above. */
			memcpy(r->rows + nrows, rows + 1, (k - 1) * sizeof(*rows));
			nrows += k - 1;
			break;
		}
		case BRANCH: {
			uint64_t t = moved(w, x->target);
			int64_t d;

			if (x->d.mnemonic == ZYDIS_MNEMONIC_JMP)
				rel32(JMP32, -1, to, 5, t, out);
			else if (x->d.mnemonic == ZYDIS_MNEMONIC_CALL)
				rel32(CALL32, -1, to, 5, t, out);
			else
				/* 7x rel8 and 0F 8x rel32 share the condition in the low nibble. */
				rel32(0x0f, 0x80 | (x->d.opcode & 0x0f), to, 6, t, out);
			d = (int64_t)(t - (to + x->size));
			if (d != (int32_t)d)
				return refuse(p, FL_SHM_WHY_NO_ROOM, "%s", "a branch out of reach");
			break;
		}
		case RIPREL: {
			int64_t disp = (int64_t)(x->target - (to + x->len));
			int32_t d32 = (int32_t)disp;

			if (disp != d32)
				return refuse(p, FL_SHM_WHY_NO_ROOM, "%s", "an operand out of reach");
			memcpy(out, w->code + x->off, x->len);
			memcpy(out + x->d.raw.disp.offset, &d32, 4);
			break;
		}
		default:
			memcpy(out, w->code + x->off, x->len);
		}
	}
	r->nrows = nrows;
	return true;
}

/* The entry's change: its first five bytes a jump to the copy. */
static bool entry(struct work *w, struct fl_heal_plan *p)
{
	struct fl_heal_reloc *r = w->r;
	const struct fl_heal_env *env = w->env;
	const uint8_t *live = env->code + (r->fn - env->base);

	if (env->entry_free) {
		if (!env->entry_free(env->ctx, r->fn, 5))
			return refuse(p, FL_SHM_WHY_ENTRY, "%s", "another heal relies on its first "
				      "five bytes");
	} else {
		/* Bytes a heal changed (live ones not as compiled), or pinned. */
		if (memcmp(live, w->code, 5) != 0)
			return refuse(p, FL_SHM_WHY_ENTRY, "%s", "a heal changed its first five bytes");
		for (size_t i = 0; i < w->n && w->insns[i].off < 5; i++) {
			const struct insn *x = &w->insns[i];
			size_t end = x->off + x->len < 5 ? x->off + x->len : 5;

			/* A site of its own is a member: only the others' bytes ask. */
			if (x->kind != CHECK && env->busy &&
			    env->busy(env->ctx, r->fn + x->off, end - x->off))
				return refuse(p, FL_SHM_WHY_ENTRY, "%s", "another patch relies on "
					      "its first five bytes");
		}
	}
	r->entry.addr = r->fn;
	r->entry.len = 5;
	memcpy(r->entry.old, live, 5);
	rel32(JMP32, -1, r->fn, 5, r->copy, r->entry.new);
	return true;
}

int fl_heal_reloc_plan(const struct fl_heal_env *env, uint64_t site, uint64_t fn,
		       struct fl_heal_plan *p)
{
	struct work w = { .env = env };
	struct fl_heal_reloc *r;
	uint64_t end, lo, hi;
	size_t members;
	bool lsda = false, ok = false;
	uint32_t off = 0;

	if (!env->extent || !env->sites) {
		refuse(p, FL_SHM_WHY_RELOCATE_OFF, "%s", "relocation is off");
		return 0;
	}
	if (!env->extent(env->ctx, fn, &end, &lsda) || end <= site || !in_code(env, fn, end - fn)) {
		refuse(p, FL_SHM_WHY_NO_EXTENT, "%s", "no symbol or unwind entry gives its extent");
		return 0;
	}
	/* The copy is at least as long: nothing shrinks. */
	if (end - fn > COPY_MAX) {
		refuse(p, FL_SHM_WHY_TOO_LARGE, "%s", "its copy would not fit in a page");
		return 0;
	}
	if (env->records && env->records(env->ctx, fn, end)) {
		refuse(p, FL_SHM_WHY_RECORDS, "%s", "it has stack map records");
		return 0;
	}
	if (lsda) {
		refuse(p, FL_SHM_WHY_EH_TABLES, "%s", "it has exception tables");
		return 0;
	}
	if (end - fn < 5) {
		refuse(p, FL_SHM_WHY_ENTRY, "%s", "it is shorter than a jump");
		return 0;
	}
	r = calloc(1, sizeof(*r));
	w.code = malloc(end - fn);
	w.insns = calloc(INSNS_MAX, sizeof(*w.insns));
	w.checks = calloc(FL_HEAL_RELOC_SITES, sizeof(*w.checks));
	if (!r || !w.code || !w.insns || !w.checks) {
		free(r);
		free(w.code);
		free(w.insns);
		free(w.checks);
		return -ENOMEM;
	}
	w.r = r;
	r->fn = fn;
	r->end = end;
	if (env->original)
		env->original(env->ctx, fn, end - fn, w.code);
	else
		memcpy(w.code, env->code + (fn - env->base), end - fn);
	members = env->sites(env->ctx, fn, end, r->members, FL_HEAL_RELOC_SITES);
	if (members > FL_HEAL_RELOC_SITES) {
		refuse(p, FL_SHM_WHY_TOO_LARGE, "%s", "more than 64 implicit checks");
		goto out;
	}
	r->nmembers = members;
	if (!classify(&w, p) || !targets_ok(&w, p))
		goto out;
	for (size_t i = 0; i < w.n; i++) {
		w.insns[i].copy_off = off;
		off += w.insns[i].size;
	}
	r->size = off;
	if (r->size > COPY_MAX) {
		refuse(p, FL_SHM_WHY_TOO_LARGE, "%s", "its copy would not fit in a page");
		goto out;
	}
	if (!window(&w, r->size, &lo, &hi) || !env->place(env->ctx, lo, hi, r->size, &r->copy)) {
		refuse(p, FL_SHM_WHY_NO_ROOM, "%s", "no free place for its copy in reach");
		goto out;
	}
	if (!entry(&w, p) || !emit(&w, p))
		goto out;
	p->tactic = FL_HEAL_RELOC;
	p->reloc = r;
	p->stub = r->copy;
	p->stub_size = r->size;
	p->why[0] = 0;
	p->why_code = 0;
	ok = true;
out:
	if (!ok) {
		free(r->bytes);
		free(r->rows);
		free(r);
	}
	free(w.code);
	free(w.insns);
	free(w.checks);
	return 0;
}
