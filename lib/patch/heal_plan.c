/* SPDX-License-Identifier: MIT */
/*
 * Planning the healing of an implicit null check in place (heal_plan.h).
 *
 * The faulting instruction becomes a jump to a stub that tests the base
 * register of its access: null goes to the handler (counted), anything
 * else runs the instruction, relocated, and jumps back after it.  Only the
 * bytes of the site change (and, for T3, of one evicted neighbour); no
 * other instruction boundary moves, so the patcher's int3 protocol applies
 * (each change stays within one instruction).
 *
 * Most faulting instructions are shorter than a jmp rel32 (5 bytes): the
 * tactics of E9Patch (Duck, Gao, Roychoudhury, PLDI 2020) put a jump there
 * anyway:
 *   B1  the instruction has 5 bytes or more: jmp rel32, anywhere in reach.
 *   B2  a punned jump: E9 and the rel32 bytes that fit in the instruction;
 *       the rest of the rel32 is the bytes that follow, as they are.  The
 *       stub must then start in the window those bytes allow (256 bytes
 *       for a 2-byte instruction), which must be free.
 *   T1  the same behind 1 to 3 redundant CS prefixes (2E), which move the
 *       rel32 to other bytes, so to another window.
 *   T2  the successor (the instruction right after the site) is evicted:
 *       it becomes a jump of its own, behind CS prefixes, to a stub that
 *       runs it and comes back; the site's punned jump reads those
 *       prefixes (or its E9) as the last bytes of its rel32, whose window
 *       they choose.
 *   T3  a 2-byte jmp rel8 to a neighbour within reach that is evicted:
 *       the neighbour (6 bytes or more) becomes a jmp rel32 to a stub of
 *       its own (itself, relocated, and a jump back), and the bytes after
 *       that jump hold the site's jump (punned in turn when they are
 *       fewer than 5).
 * The instructions a punned jump's rel32 overlaps are copied into the
 * stub after the site's (its tail), so that the stub comes back after the
 * overlap, never into it.  The bytes a punned jump reads beyond what it
 * changes, and those its tail copied, are pinned: they must stay as they
 * are for as long as the site is healed (heal.c keeps the list,
 * env->busy says what is taken).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <Zydis/Zydis.h>

#include "patch/heal_plan.h"
#include "proto/proto.h"

/* The highest user-space address a stub may end below (47-bit). */
#define USER_END 0x7ffffffff000ull
/* The lowest (vm.mmap_min_addr's default). */
#define USER_START 0x10000ull

/* The CS segment override: ignored by jmp rel32 in 64-bit mode. */
#define PREFIX 0x2e
#define JMP32 0xe9
#define JMP8 0xeb
/* stubs.c's chunk: two stubs in one place start in chunks of their own. */
#define STUB_ALIGN 16u
#define STUB_ALIGNED(n) (((n) + STUB_ALIGN - 1) & ~(size_t)(STUB_ALIGN - 1))

static const char *const names[FL_HEAL_TACTICS] = {
	[FL_HEAL_NONE] = "none", [FL_HEAL_B1] = "B1", [FL_HEAL_B2] = "B2",
	[FL_HEAL_T1] = "T1", [FL_HEAL_T3] = "T3", [FL_HEAL_T2] = "T2",
	[FL_HEAL_RELOC] = "REL",
};

const char *fl_heal_tactic_name(enum fl_heal_tactic t)
{
	return (unsigned)t < FL_HEAL_TACTICS ? names[t] : "?";
}

unsigned fl_heal_tactics_parse(const char *list)
{
	unsigned bits = 0;

	while (list && *list) {
		size_t n = strcspn(list, ", ");
		int t;

		for (t = FL_HEAL_B1; t < FL_HEAL_TACTICS; t++)
			if (n && strlen(names[t]) == n && strncasecmp(list, names[t], n) == 0)
				break;
		if (n && t == FL_HEAL_TACTICS)
			return 0;
		if (n)
			bits |= 1u << t;
		list += n;
		list += strspn(list, ", ");
	}
	return bits;
}

static bool allowed(const struct fl_heal_env *env, enum fl_heal_tactic t)
{
	return !env->tactics || (env->tactics & (1u << t));
}

static void decoder(ZydisDecoder *d)
{
	ZydisDecoderInit(d, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
}

static bool in_code(const struct fl_heal_env *env, uint64_t a, size_t len)
{
	return a >= env->base && a - env->base <= env->len && len <= env->len - (a - env->base);
}

static const uint8_t *at(const struct fl_heal_env *env, uint64_t a)
{
	return env->code + (a - env->base);
}

static bool busy(const struct fl_heal_env *env, uint64_t a, size_t len)
{
	return env->busy && env->busy(env->ctx, a, len);
}

/* ------------------------------------------------------------------------
 * Relocation: an instruction copied to another address.
 */

/*
 * Whether insn can run at another address, and how: it may not be a
 * relative branch or call (a call would push the stub's address); a
 * RIP-relative operand has its disp32 adjusted in place.
 */
static bool relocatable(const ZydisDecodedInstruction *insn, const char **why)
{
	if (insn->meta.branch_type != ZYDIS_BRANCH_TYPE_NONE ||
	    insn->meta.category == ZYDIS_CATEGORY_CALL || insn->meta.category == ZYDIS_CATEGORY_RET ||
	    insn->meta.category == ZYDIS_CATEGORY_COND_BR ||
	    insn->meta.category == ZYDIS_CATEGORY_UNCOND_BR) {
		*why = "a branch";
		return false;
	}
	if ((insn->attributes & ZYDIS_ATTRIB_IS_RELATIVE) && insn->raw.disp.size != 32) {
		*why = "a relative operand that is not a 32-bit displacement";
		return false;
	}
	return true;
}

/* Copies insn (len bytes, decoded as insn) from from to to.  Returns false out of reach. */
static bool relocate(const uint8_t *bytes, const ZydisDecodedInstruction *insn, uint64_t from,
		     uint64_t to, uint8_t *out)
{
	memcpy(out, bytes, insn->length);
	if (insn->attributes & ZYDIS_ATTRIB_IS_RELATIVE) {
		int64_t disp = insn->raw.disp.value + (int64_t)(from - to);
		int32_t d32 = (int32_t)disp;

		if (disp != d32)
			return false;
		memcpy(out + insn->raw.disp.offset, &d32, 4);
	}
	return true;
}

/* ------------------------------------------------------------------------
 * Stubs
 */

/* xchg %reg, %rcx (REX.W 87 /r, mod 11, reg rcx, rm reg). */
static size_t xchg_rcx(int reg, uint8_t *out)
{
	int n = ZydisRegisterGetId((ZydisRegister)reg);

	if (reg == ZYDIS_REGISTER_RCX)
		return 0;
	out[0] = 0x48 | (n >= 8 ? 0x01 : 0);
	out[1] = 0x87;
	out[2] = 0xc8 | (n & 7);
	return 3;
}

static size_t jmp32(uint64_t from, uint64_t to, uint8_t *out)
{
	int32_t rel = (int32_t)(to - (from + 5));

	out[0] = JMP32;
	memcpy(out + 1, &rel, 4);
	return 5;
}

/*
 * Whether the status flags are dead at handler: its code, followed
 * through direct jumps for up to 16 instructions, writes each of the
 * flags lock incq writes (OF SF ZF AF PF) before it reads it, or reaches
 * a call or a ret first (the SysV ABI keeps no status flag across
 * either).  Anything else it cannot follow (an indirect or conditional
 * branch, code it cannot decode, the end of the code) and they are live.
 */
static bool flags_dead(const struct fl_heal_env *env, uint64_t handler)
{
	const ZydisAccessedFlagsMask inc = ZYDIS_CPUFLAG_OF | ZYDIS_CPUFLAG_SF | ZYDIS_CPUFLAG_ZF |
					   ZYDIS_CPUFLAG_AF | ZYDIS_CPUFLAG_PF;
	ZydisAccessedFlagsMask open = inc;
	ZydisDecoder d;
	ZydisDecodedInstruction insn;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	uint64_t x = handler;

	decoder(&d);
	for (int i = 0; i < 16 && in_code(env, x, 1); i++) {
		size_t avail = env->len - (x - env->base);
		const ZydisAccessedFlags *f;

		if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(&d, at(env, x), avail < 15 ? avail : 15,
							 &insn, ops)))
			return false;
		f = insn.cpu_flags;
		if (f && (f->tested & open))
			return false;
		if (f)
			open &= ~(f->modified | f->set_0 | f->set_1 | f->undefined);
		if (!open || insn.meta.category == ZYDIS_CATEGORY_CALL ||
		    insn.meta.category == ZYDIS_CATEGORY_RET)
			return true;
		if (insn.mnemonic == ZYDIS_MNEMONIC_JMP && ops[0].type == ZYDIS_OPERAND_TYPE_IMMEDIATE &&
		    ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(&insn, &ops[0], x, &x)))
			continue;
		if (insn.meta.branch_type != ZYDIS_BRANCH_TYPE_NONE)
			return false;
		x += insn.length;
	}
	return false;
}

/*
 * The site's stub, laid out (R: the base register; the xchgs only when it
 * is not %rcx; jecxz, 67 E3, for 32-bit addressing):
 *
 *         xchg %R, %rcx
 *         jrcxz null            neither reads nor writes the flags
 *         xchg %R, %rcx
 *         <the instruction>     relocated
 *         <the tail>            B2/T1: the overlapped instructions (tail())
 *         jmp back              after them (none when the tail ends the flow)
 *   null: xchg %R, %rcx
 *         lea -128(%rsp), %rsp  past the red zone
 *         pushfq
 *         push %rax
 *         movabs $counter, %rax
 *         lock incq (%rax)
 *         pop %rax
 *         popfq
 *         lea 128(%rsp), %rsp
 *         jmp handler
 *
 * and when the flags are dead at the handler and the addressing is
 * 64-bit (R held 0, all of it, so it can be given back as a constant),
 * the null path needs neither the flags nor the stack:
 *
 *   null: movabs $counter, %rcx      R holds %rcx's value meanwhile
 *         lock incq (%rcx)
 *         mov %R, %rcx
 *         mov $0, %R32              zero-extends: R is null again
 *         jmp handler
 */
static size_t site_stub(const struct fl_heal_plan *p, const uint8_t *insn, uint64_t handler,
			uint64_t counter, uint8_t *out)
{
	static const uint8_t down[] = { 0x48, 0x8d, 0x64, 0x24, 0x80 };
	static const uint8_t save[] = { 0x9c, 0x50, 0x48, 0xb8 };
	static const uint8_t bump[] = { 0xf0, 0x48, 0xff, 0x00, 0x58, 0x9d };
	static const uint8_t up[] = { 0x48, 0x8d, 0xa4, 0x24, 0x80, 0x00, 0x00, 0x00 };
	uint8_t x[3];
	size_t nx = xchg_rcx(p->base_reg, x), n = 0, jrcxz;

	memcpy(out + n, x, nx);
	n += nx;
	if (p->addr32)
		out[n++] = 0x67;
	out[n++] = 0xe3;
	jrcxz = n++;
	memcpy(out + n, x, nx);
	n += nx;
	memcpy(out + n, insn, p->site.len);
	n += p->site.len;
	memcpy(out + n, p->tail, p->tail_len);
	n += p->tail_len;
	if (p->back)
		n += jmp32(p->stub + n, p->back, out + n);
	out[jrcxz] = (uint8_t)(n - (jrcxz + 1));
	if (p->flags_dead && !p->addr32) {
		int id = ZydisRegisterGetId((ZydisRegister)p->base_reg);

		out[n++] = 0x48;		/* movabs $counter, %rcx */
		out[n++] = 0xb9;
		memcpy(out + n, &counter, 8);
		n += 8;
		out[n++] = 0xf0;		/* lock incq (%rcx) */
		out[n++] = 0x48;
		out[n++] = 0xff;
		out[n++] = 0x01;
		if (nx) {
			out[n++] = (uint8_t)(0x48 | (id >= 8 ? 0x04 : 0));	/* mov %R, %rcx */
			out[n++] = 0x89;
			out[n++] = (uint8_t)(0xc1 | (id & 7) << 3);
		}
		if (id >= 8)			/* mov $0, %R32 */
			out[n++] = 0x41;
		out[n++] = (uint8_t)(0xb8 | (id & 7));
		memset(out + n, 0, 4);
		n += 4;
		return n + jmp32(p->stub + n, handler, out + n);
	}
	memcpy(out + n, x, nx);
	n += nx;
	memcpy(out + n, down, sizeof(down));
	n += sizeof(down);
	memcpy(out + n, save, sizeof(save));
	n += sizeof(save);
	memcpy(out + n, &counter, 8);
	n += 8;
	memcpy(out + n, bump, sizeof(bump));
	n += sizeof(bump);
	memcpy(out + n, up, sizeof(up));
	n += sizeof(up);
	n += jmp32(p->stub + n, handler, out + n);
	return n;
}

/* Where the tail starts in the site's stub: after the tests and the instruction. */
static size_t tail_offset(const struct fl_heal_plan *p)
{
	size_t nx = p->base_reg == ZYDIS_REGISTER_RCX ? 0 : 3;

	return nx + (p->addr32 ? 1 : 0) + 2 + nx + p->site.len;
}

size_t fl_heal_site_stub(const struct fl_heal_plan *p, uint64_t handler, uint64_t counter,
			 uint8_t *out)
{
	/* The site's instruction has no RIP-relative operand: its base is a register. */
	return site_stub(p, p->site.old, handler, counter, out);
}

void fl_heal_nb_stub(const struct fl_heal_plan *p, uint8_t *out)
{
	ZydisDecoder d;
	ZydisDecodedInstruction insn;

	decoder(&d);
	ZydisDecoderDecodeInstruction(&d, NULL, p->nb.old, p->nb.len, &insn);
	relocate(p->nb.old, &insn, p->nb.addr, p->nb_stub, out);
	jmp32(p->nb_stub + p->nb.len, p->nb.addr + p->nb.len, out + p->nb.len);
}

/*
 * The rows follow site_stub's layout: the tests and the instruction are
 * the site's own row; each instruction of the tail is its original's;
 * the jump back is the row of where it goes; the null path is the site's
 * again, with the bytes
 * the null path puts on the stack (128 past the red zone, then the flags
 * and %rax) while they are there.
 */
size_t fl_heal_stub_rows(const struct fl_heal_env *env, const struct fl_heal_plan *p,
			 struct fl_seen_row *out)
{
	size_t nx = p->base_reg == ZYDIS_REGISTER_RCX ? 0 : 3, n = 0, off = tail_offset(p), k = 0;
	uint64_t x = p->site.addr + p->site.len;
	ZydisDecoder d;
	ZydisDecodedInstruction t, o;

	decoder(&d);
	out[n++] = (struct fl_seen_row){ p->stub, p->site.addr, 0 };
	while (k < p->tail_len && n + 8 < FL_HEAL_STUB_ROWS && in_code(env, x, 1)) {
		size_t avail = env->len - (x - env->base);

		if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&d, NULL, p->tail + k,
								 p->tail_len - k, &t)) ||
		    !ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&d, NULL, at(env, x),
								 avail < 15 ? avail : 15, &o)))
			break;
		out[n++] = (struct fl_seen_row){ p->stub + off + k, x, 0 };
		k += t.length;
		x += o.length;
	}
	off += p->tail_len;
	/* The jump back: where it goes back to. */
	if (p->back) {
		out[n++] = (struct fl_seen_row){ p->stub + off, p->back, 0 };
		off += 5;
	}
	out[n++] = (struct fl_seen_row){ p->stub + off, p->site.addr, 0 };
	if (p->flags_dead && !p->addr32)
		return n;
	/* xchg, lea -128(%rsp), pushfq, push %rax, movabs, lock incq, pop %rax, popfq, lea. */
	off += nx + 5;
	out[n++] = (struct fl_seen_row){ p->stub + off, p->site.addr, 128 };
	out[n++] = (struct fl_seen_row){ p->stub + off + 1, p->site.addr, 136 };
	out[n++] = (struct fl_seen_row){ p->stub + off + 2, p->site.addr, 144 };
	off += 2 + 10 + 4 + 1;
	out[n++] = (struct fl_seen_row){ p->stub + off, p->site.addr, 136 };
	out[n++] = (struct fl_seen_row){ p->stub + off + 1, p->site.addr, 128 };
	out[n++] = (struct fl_seen_row){ p->stub + off + 1 + 8, p->site.addr, 0 };
	return n;
}

/* ------------------------------------------------------------------------
 * Jumps
 */

/*
 * A jmp rel32 placed at j behind prefixes prefixes, whose bytes before
 * free_end may be chosen and whose other bytes are the code's: the range
 * of targets [*lo, *hi] it can have.  Returns false when the bytes it
 * would read are not code, or are busy.
 */
/*
 * The targets [*lo, *hi] of a jmp rel32 that ends at end, whose rel32's
 * first nfree bytes may be chosen and whose others are fixed (the high
 * bytes of fixed, from byte nfree on).  Returns false when none is in
 * user space.
 */
static bool window(uint64_t end, unsigned nfree, uint32_t fixed, uint64_t *lo, uint64_t *hi)
{
	int64_t first, last;

	if (nfree < 4) {
		first = (int64_t)end + (int32_t)fixed;
		last = first + (int64_t)((1ull << (8 * nfree)) - 1);
	} else {
		first = (int64_t)end + INT32_MIN;
		last = (int64_t)end + INT32_MAX;
	}
	/* Stubs live in user space, above mmap_min_addr. */
	if (first < (int64_t)USER_START)
		first = (int64_t)USER_START;
	if (last > (int64_t)(USER_END - FL_HEAL_STUB_MAX))
		last = (int64_t)(USER_END - FL_HEAL_STUB_MAX);
	if (first > last)
		return false;
	*lo = (uint64_t)first;
	*hi = (uint64_t)last;
	return true;
}

/*
 * A jmp rel32 placed at j behind prefixes prefixes, whose bytes before
 * free_end may be chosen and whose other bytes are the code's: the range
 * of targets [*lo, *hi] it can have.  Returns false when the bytes it
 * would read are not code, or are busy.
 */
static bool jump_window(const struct fl_heal_env *env, uint64_t j, unsigned prefixes,
			uint64_t free_end, uint64_t *lo, uint64_t *hi)
{
	uint64_t rel_at = j + prefixes + 1, end = rel_at + 4;
	unsigned nfree = free_end <= rel_at ? 0 : free_end - rel_at >= 4 ? 4 :
		(unsigned)(free_end - rel_at);
	uint32_t fixed = 0;

	if (nfree < 4) {
		if (!in_code(env, rel_at + nfree, 4 - nfree) || busy(env, rel_at + nfree, 4 - nfree))
			return false;
		for (unsigned k = nfree; k < 4; k++)
			fixed |= (uint32_t)at(env, rel_at + k)[0] << (8 * k);
	}
	return window(end, nfree, fixed, lo, hi);
}

/* Writes the jump at j (behind prefixes) to target into out (free bytes only). */
static size_t jump_bytes(uint64_t j, unsigned prefixes, uint64_t free_end, uint64_t target,
			 uint8_t *out)
{
	uint64_t rel_at = j + prefixes + 1;
	int32_t rel = (int32_t)(target - (rel_at + 4));
	uint8_t r[4];
	size_t n = 0;

	memcpy(r, &rel, 4);
	for (unsigned i = 0; i < prefixes; i++)
		out[n++] = PREFIX;
	out[n++] = JMP32;
	for (unsigned k = 0; k < 4 && rel_at + k < free_end; k++)
		out[n++] = r[k];
	return n;
}

/*
 * Checks what a thread will decode at j once the bytes are written (mine
 * at j, then next, T2's successor, right after them): a jmp to target.  A
 * guard against an error in the arithmetic above, which would send
 * threads to a wrong place.
 */
static bool jump_checks_over(const struct fl_heal_env *env, uint64_t j, const uint8_t *mine,
			     size_t nmine, const uint8_t *next, size_t nnext, uint64_t target)
{
	uint8_t buf[32];
	ZydisDecoder d;
	ZydisDecodedInstruction insn;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	uint64_t dest;
	size_t total = 0;

	memcpy(buf, mine, nmine);
	if (nnext)
		memcpy(buf + nmine, next, nnext);
	total = nmine + nnext;
	while (total < 16 && in_code(env, j + total, 1)) {
		buf[total] = at(env, j + total)[0];
		total++;
	}
	decoder(&d);
	return ZYAN_SUCCESS(ZydisDecoderDecodeFull(&d, buf, total < 15 ? total : 15, &insn, ops)) &&
	       insn.mnemonic == ZYDIS_MNEMONIC_JMP && ops[0].type == ZYDIS_OPERAND_TYPE_IMMEDIATE &&
	       ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(&insn, &ops[0], j, &dest)) && dest == target;
}

static bool jump_checks(const struct fl_heal_env *env, uint64_t j, const uint8_t *mine,
			size_t nmine, uint64_t target)
{
	return jump_checks_over(env, j, mine, nmine, NULL, 0, target);
}

/* ------------------------------------------------------------------------
 * Tails
 */

/*
 * Whether the tail may run insn from the stub: an instruction that works
 * the same at any address.  A memory access other than the stack's is
 * refused, since a fault there would carry the stub's PC: the program's
 * own handler may recognise a faulting instruction by its address (a
 * safe-fetch routine, another runtime's implicit checks), and faultline's
 * sites are busy() already.  Traps, system instructions and undefined
 * opcodes stay where a debugger or a handler expects them.
 */
static bool tail_copies(const ZydisDecodedInstruction *insn, const ZydisDecodedOperand *ops)
{
	const char *why;

	switch (insn->meta.category) {
	case ZYDIS_CATEGORY_INTERRUPT:
	case ZYDIS_CATEGORY_SYSCALL:
	case ZYDIS_CATEGORY_SYSTEM:
		return false;
	default:
		break;
	}
	if (insn->mnemonic == ZYDIS_MNEMONIC_UD0 || insn->mnemonic == ZYDIS_MNEMONIC_UD1 ||
	    insn->mnemonic == ZYDIS_MNEMONIC_UD2 || !relocatable(insn, &why))
		return false;
	for (unsigned i = 0; i < insn->operand_count; i++)
		if (ops[i].type == ZYDIS_OPERAND_TYPE_MEMORY && ops[i].mem.type == ZYDIS_MEMOP_TYPE_MEM &&
		    ops[i].mem.base != ZYDIS_REGISTER_RSP)
			return false;
	return true;
}

/*
 * One instruction of the tail, from x (decoded as insn) to the stub at to
 * (0: sizing only, nothing is out of reach).  Writes it into out and
 * returns its size there, 0 when the tail must stop before it; *ends when
 * the flow does not go on after it.
 *   ret          copied;                         the flow ends
 *   jmp rel      jmp rel32 to the same target;   the flow ends
 *   jcc rel      jcc rel32 (0F 8x) to the same target
 *   the others   relocated, when tail_copies() allows it
 * Any other branch or a call stops the tail: a call would push the stub's
 * address, which no unwinder knows and which unheal could not free.
 */
static size_t tail_insn(uint64_t x, const uint8_t *bytes, const ZydisDecodedInstruction *insn,
			const ZydisDecodedOperand *ops, uint64_t to, uint8_t *out, bool *ends)
{
	uint64_t target;
	int64_t rel;
	size_t n;

	*ends = false;
	if (insn->mnemonic == ZYDIS_MNEMONIC_RET && insn->meta.branch_type == ZYDIS_BRANCH_TYPE_NEAR) {
		memcpy(out, bytes, insn->length);
		*ends = true;
		return insn->length;
	}
	if ((insn->meta.category == ZYDIS_CATEGORY_UNCOND_BR ||
	     insn->meta.category == ZYDIS_CATEGORY_COND_BR) &&
	    ops[0].type == ZYDIS_OPERAND_TYPE_IMMEDIATE && ops[0].imm.is_relative) {
		bool jmp = insn->mnemonic == ZYDIS_MNEMONIC_JMP;

		/* jcxz and loop have no rel32 form; xbegin is no jcc. */
		if ((!jmp && insn->meta.category != ZYDIS_CATEGORY_COND_BR) ||
		    insn->mnemonic == ZYDIS_MNEMONIC_XBEGIN ||
		    insn->mnemonic == ZYDIS_MNEMONIC_JRCXZ || insn->mnemonic == ZYDIS_MNEMONIC_JECXZ ||
		    insn->mnemonic == ZYDIS_MNEMONIC_JCXZ || insn->mnemonic == ZYDIS_MNEMONIC_LOOP ||
		    insn->mnemonic == ZYDIS_MNEMONIC_LOOPE || insn->mnemonic == ZYDIS_MNEMONIC_LOOPNE ||
		    !ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(insn, &ops[0], x, &target)))
			return 0;
		if (jmp) {
			n = jmp32(to, target, out);
			*ends = true;
		} else {
			/* 7x rel8 and 0F 8x rel32 share the condition in the low nibble. */
			int32_t r32;

			out[0] = 0x0f;
			out[1] = (uint8_t)(0x80 | (insn->opcode & 0x0f));
			r32 = (int32_t)(target - (to + 6));
			memcpy(out + 2, &r32, 4);
			n = 6;
		}
		rel = (int64_t)(target - (to + n));
		return to && rel != (int32_t)rel ? 0 : n;
	}
	if (!tail_copies(insn, ops))
		return 0;
	if (!relocate(bytes, insn, x, to ? to : x, out))
		return 0;
	return insn->length;
}

/*
 * The tail of a punned jump that ends at end: the instructions from the
 * site's end to the first boundary at or after end, into p->tail (for
 * the stub at to; 0: sizing only), stopping early before an instruction
 * it may not copy (tail_insn) or that is busy.  Sets p->tail, p->tail_len
 * and p->back; returns the end of the code the tail copied (the site's
 * end when it copied nothing).
 */
static uint64_t tail(const struct fl_heal_env *env, struct fl_heal_plan *p, uint64_t end,
		     uint64_t to)
{
	uint64_t x = p->site.addr + p->site.len;
	ZydisDecoder d;
	ZydisDecodedInstruction insn;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	uint8_t buf[16];
	size_t n = 0;

	decoder(&d);
	p->tail_len = 0;
	p->back = x;
	while (x < end && in_code(env, x, 1)) {
		size_t avail = env->len - (x - env->base), k;
		bool ends;

		if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(&d, at(env, x), avail < 15 ? avail : 15,
							 &insn, ops)) ||
		    busy(env, x, insn.length))
			break;
		k = tail_insn(x, at(env, x), &insn, ops, to ? to + n : 0, buf, &ends);
		if (!k || n + k > FL_HEAL_TAIL_MAX)
			break;
		memcpy(p->tail + n, buf, k);
		n += k;
		x += insn.length;
		p->tail_len = (uint8_t)n;
		p->back = ends ? 0 : x;
		if (ends)
			break;
	}
	return x;
}

/* ------------------------------------------------------------------------
 * Tactics
 */

/* The site's own jump: B1, B2 or T1.  Returns true with the plan made. */
static bool direct(const struct fl_heal_env *env, struct fl_heal_plan *p)
{
	uint64_t a = p->site.addr, lo, hi, stub, copied;
	unsigned len = p->site.len;
	size_t base = p->stub_size;
	uint8_t probe[FL_HEAL_STUB_MAX];

	for (unsigned prefixes = 0; prefixes + 1 <= len && prefixes <= 3; prefixes++) {
		enum fl_heal_tactic t = len >= 5 + prefixes ? FL_HEAL_B1 :
			prefixes ? FL_HEAL_T1 : FL_HEAL_B2;
		uint64_t end = a + prefixes + 5;

		/* A B1 jump needs no prefix; more of them only narrow the window. */
		if (prefixes && len >= 5)
			break;
		if (!allowed(env, t))
			continue;
		/*
		 * A punned jump's rel32 overlaps the instructions after the
		 * site: jumping back into them costs the path that does not
		 * fail dearly on some processors (Intel's decoded-instruction
		 * cache keeps one decoding of a byte), so the stub runs them
		 * itself (its tail) and comes back after the overlap.
		 */
		tail(env, p, end, 0);
		p->stub_size = site_stub(p, p->site.old, 0, 0, probe);
		if (!jump_window(env, a, prefixes, a + len, &lo, &hi) ||
		    !env->place(env->ctx, lo, hi, p->stub_size, &stub))
			continue;
		memcpy(p->site.new, p->site.old, len);
		jump_bytes(a, prefixes, a + len, stub, p->site.new);
		if (!jump_checks(env, a, p->site.new, len, stub))
			continue;
		p->tactic = t;
		p->stub = stub;
		/* The tail for this stub: it may stop sooner than the sizing's (reach). */
		copied = tail(env, p, end, stub + tail_offset(p));
		p->stub_size = site_stub(p, p->site.old, 0, 0, probe);
		p->pin = a + len;
		if (copied > end)
			end = copied;
		p->pin_len = end > a + len ? (uint8_t)(end - (a + len)) : 0;
		return true;
	}
	p->tail_len = 0;
	p->back = a + len;
	p->stub_size = base;
	return false;
}

/*
 * T3 for the neighbour at nb (decoded as insn): the site's jmp rel8 lands
 * at j = nb + 5, and the neighbour becomes a jmp rel32 to its own stub
 * followed, at j, by the site's jump (punned when fewer than 5 of its
 * bytes remain).  Both stubs share one place: the site's, then the
 * neighbour's at the next STUB_ALIGN boundary (stubs.c takes and frees
 * memory in chunks of that size: sharing one, the second stub would be
 * refused, -EEXIST, and a free of either would free the other's chunk).
 */
static bool evict_into(const struct fl_heal_env *env, uint64_t nb,
		       const ZydisDecodedInstruction *insn, struct fl_heal_plan *p)
{
	uint64_t a = p->site.addr, j = nb + 5, end = nb + insn->length, lo, hi, stub, nb_stub;
	int64_t rel8 = (int64_t)(j - (a + 2)), reach;
	uint8_t reloc[15];
	const char *why;

	if (insn->length < 6 || rel8 < -128 || rel8 > 127 ||
	    (nb < a + p->site.len && a < end) || busy(env, nb, insn->length) ||
	    !relocatable(insn, &why))
		return false;
	p->nb_stub_size = insn->length + 5u;
	if (!jump_window(env, j, 0, end, &lo, &hi) ||
	    !env->place(env->ctx, lo, hi, STUB_ALIGNED(p->stub_size) + p->nb_stub_size, &stub))
		return false;
	nb_stub = stub + STUB_ALIGNED(p->stub_size);
	reach = (int64_t)(nb_stub - (nb + 5));
	if (reach != (int32_t)reach || !relocate(at(env, nb), insn, nb, nb_stub, reloc))
		return false;
	p->nb.addr = nb;
	p->nb.len = insn->length;
	memcpy(p->nb.old, at(env, nb), insn->length);
	memcpy(p->nb.new, p->nb.old, insn->length);
	jmp32(nb, nb_stub, p->nb.new);
	jump_bytes(j, 0, end, stub, p->nb.new + 5);
	if (!jump_checks(env, nb, p->nb.new, insn->length, nb_stub) ||
	    !jump_checks(env, j, p->nb.new + 5, insn->length - 5, stub))
		return false;
	memcpy(p->site.new, p->site.old, p->site.len);
	p->site.new[0] = JMP8;
	p->site.new[1] = (uint8_t)(int8_t)rel8;
	p->tactic = FL_HEAL_T3;
	p->evicts = true;
	p->stub = stub;
	p->nb_stub = nb_stub;
	p->pin = end;
	p->pin_len = j + 5 > end ? (uint8_t)(j + 5 - end) : 0;
	return true;
}

/*
 * T2 (E9Patch's successor eviction): the successor S, the instruction
 * right after the site, of 5 bytes or more, becomes behind q CS prefixes
 * a jmp rel32 to a stub of its own (S relocated, a jump back after it).
 * The site's punned jump, behind its own prefixes, has nfree bytes of its
 * rel32 in the site and reads the other k = 4 - nfree from S's new first
 * bytes.  With q >= k - 1 those are all prefixes or S's E9, which fix the
 * site's window whatever S's stub is; q >= k (all prefixes, 2E: a
 * positive rel32) is tried first.  Both stubs share one place, the
 * site's first, as T3's do.  The site's stub runs S itself when its tail
 * may copy it, and comes back after S.
 *
 * The site's jump reads bytes of S's change: heal.c writes S's change
 * first and the site's once every thread sees it (two changes), and
 * gives them back in the other order.
 */
static bool evict_successor(const struct fl_heal_env *env, struct fl_heal_plan *p)
{
	uint64_t a = p->site.addr, s = a + p->site.len, lo, hi, stub, nb_stub;
	unsigned len = p->site.len;
	ZydisDecoder d;
	ZydisDecodedInstruction insn;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	uint8_t reloc[15], probe[FL_HEAL_STUB_MAX];
	size_t avail, base = p->stub_size;
	const char *why;

	if (len >= 5 || !in_code(env, s, 1) || !allowed(env, FL_HEAL_T2))
		return false;
	avail = env->len - (s - env->base);
	decoder(&d);
	if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(&d, at(env, s), avail < 15 ? avail : 15, &insn,
						 ops)) ||
	    insn.length < 5 || busy(env, s, insn.length) || !relocatable(&insn, &why))
		return false;
	/* The site's stub: the site's instruction, then S when the tail may copy it. */
	tail(env, p, s + 1, 0);
	if (p->back != s + insn.length) {
		p->tail_len = 0;
		p->back = s;
	}
	p->stub_size = site_stub(p, p->site.old, 0, 0, probe);
	p->nb_stub_size = insn.length + 5u;
	for (unsigned pre = 0; pre + 1 < len && pre <= 3; pre++) {
		unsigned nfree = len - pre - 1, k = 4 - nfree;

		for (int round = 0; round < 2; round++) {
			/* round 0: q = k, all prefixes; round 1: q = k - 1, S's E9 last. */
			unsigned q = round ? k - 1 : k;
			uint8_t snew[15];
			uint32_t fixed = 0;
			int64_t reach;

			if (5 + q > insn.length || q > 3)
				continue;
			memcpy(snew, at(env, s), insn.length);
			memset(snew, PREFIX, q);
			snew[q] = JMP32;
			for (unsigned i = 0; i < k; i++)
				fixed |= (uint32_t)snew[i] << (8 * (nfree + i));
			if (!window(a + pre + 5, nfree, fixed, &lo, &hi) ||
			    !env->place(env->ctx, lo, hi, STUB_ALIGNED(p->stub_size) + p->nb_stub_size,
					&stub))
				continue;
			nb_stub = stub + STUB_ALIGNED(p->stub_size);
			reach = (int64_t)(nb_stub - (s + q + 5));
			if (reach != (int32_t)reach || !relocate(at(env, s), &insn, s, nb_stub, reloc))
				continue;
			{
				int32_t r = (int32_t)reach;

				memcpy(snew + q + 1, &r, 4);
			}
			memcpy(p->site.new, p->site.old, len);
			jump_bytes(a, pre, a + len, stub, p->site.new);
			if (!jump_checks(env, s, snew, insn.length, nb_stub) ||
			    !jump_checks_over(env, a, p->site.new, len, snew, insn.length, stub))
				continue;
			p->nb.addr = s;
			p->nb.len = insn.length;
			memcpy(p->nb.old, at(env, s), insn.length);
			memcpy(p->nb.new, snew, insn.length);
			p->tactic = FL_HEAL_T2;
			p->evicts = true;
			p->stub = stub;
			p->nb_stub = nb_stub;
			/* The tail again, for this stub (reach). */
			if (p->back != s) {
				tail(env, p, s + 1, stub + tail_offset(p));
				if (p->back != s + insn.length) {
					p->tail_len = 0;
					p->back = s;
				}
				p->stub_size = site_stub(p, p->site.old, 0, 0, probe);
			}
			/* The bytes of S's change the site's jump reads. */
			p->pin = s;
			p->pin_len = (uint8_t)k;
			return true;
		}
	}
	p->tail_len = 0;
	p->back = a + len;
	p->stub_size = base;
	return false;
}

/*
 * T3: the instructions are found by decoding from the start of the
 * function (LLVM puts no data in code); the sweep must land on the site,
 * or the boundaries it found are not to be trusted.
 */
static bool evict(const struct fl_heal_env *env, uint64_t fn, struct fl_heal_plan *p)
{
	uint64_t a = p->site.addr, reach_end = a + 2 + 127 - 5 + 1, cand[64];
	ZydisDecodedInstruction insns[64];
	ZydisDecoder d;
	ZydisDecodedInstruction insn;
	bool on_site = false;
	size_t n = 0;

	if (p->site.len < 2 || fn > a || !allowed(env, FL_HEAL_T3))
		return false;
	decoder(&d);
	for (uint64_t x = fn; x < reach_end && in_code(env, x, 1); x += insn.length) {
		size_t avail = env->len - (x - env->base);

		if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&d, NULL, at(env, x),
				  avail < 15 ? avail : 15, &insn)))
			break;
		on_site |= x == a;
		/* j = x + 5 within rel8 of the site's jump. */
		if (x + 5 + 128 >= a + 2 && n < 64) {
			cand[n] = x;
			insns[n++] = insn;
		}
	}
	if (!on_site)
		return false;
	/* In address order. */
	for (size_t i = 0; i < n; i++)
		if (evict_into(env, cand[i], &insns[i], p))
			return true;
	return false;
}

int fl_heal_site_of(const uint8_t *bytes, size_t avail, uint64_t site, struct fl_heal_plan *p)
{
	ZydisDecoder d;
	ZydisDecodedInstruction insn;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	const ZydisDecodedOperand *mem = NULL;
	const char *why;

	decoder(&d);
	if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(&d, bytes, avail < 15 ? avail : 15, &insn, ops))) {
		snprintf(p->why, sizeof(p->why), "no instruction decodes at the site");
		p->why_code = FL_SHM_WHY_UNDECODED;
		return -EINVAL;
	}
	p->site.addr = site;
	p->site.len = insn.length;
	memcpy(p->site.old, bytes, insn.length);
	for (unsigned i = 0; i < insn.operand_count_visible; i++)
		if (ops[i].type == ZYDIS_OPERAND_TYPE_MEMORY && ops[i].mem.type == ZYDIS_MEMOP_TYPE_MEM)
			mem = &ops[i];
	if (!mem || mem->mem.base == ZYDIS_REGISTER_NONE || mem->mem.base == ZYDIS_REGISTER_RIP ||
	    mem->mem.base == ZYDIS_REGISTER_RSP || mem->mem.base == ZYDIS_REGISTER_ESP ||
	    mem->mem.segment == ZYDIS_REGISTER_FS || mem->mem.segment == ZYDIS_REGISTER_GS) {
		snprintf(p->why, sizeof(p->why), "%s has no base register to test",
			 ZydisMnemonicGetString(insn.mnemonic));
		p->why_code = FL_SHM_WHY_NO_BASE;
		return -EINVAL;
	}
	if (!relocatable(&insn, &why)) {
		snprintf(p->why, sizeof(p->why), "the site is %s", why);
		p->why_code = FL_SHM_WHY_BRANCH;
		return -EINVAL;
	}
	p->base_reg = ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, mem->mem.base);
	p->addr32 = insn.address_width == 32;
	return 0;
}

bool fl_heal_flags_dead(const struct fl_heal_env *env, uint64_t handler)
{
	return flags_dead(env, handler);
}

void fl_heal_plan_release(struct fl_heal_plan *p)
{
	if (p->reloc) {
		free(p->reloc->bytes);
		free(p->reloc->rows);
		free(p->reloc);
		p->reloc = NULL;
	}
	p->tactic = FL_HEAL_NONE;
}

int fl_heal_plan(const struct fl_heal_env *env, uint64_t site, uint64_t fn, uint64_t handler,
		 struct fl_heal_plan *p)
{
	uint8_t probe[FL_HEAL_STUB_MAX];
	char in_place[sizeof(p->why)];

	memset(p, 0, sizeof(*p));
	if (!in_code(env, site, 1) || !in_code(env, fn, 1))
		return -EINVAL;
	if (fl_heal_site_of(at(env, site), env->len - (site - env->base), site, p) != 0)
		return 0;
	if (busy(env, site, p->site.len)) {
		snprintf(p->why, sizeof(p->why), "its bytes are pinned by another patch");
		p->why_code = FL_SHM_WHY_PINNED;
		return 0;
	}
	p->flags_dead = flags_dead(env, handler);
	/* The stubs' sizes do not depend on where they go. */
	p->stub = 0;
	p->back = site + p->site.len;
	p->stub_size = site_stub(p, p->site.old, 0, 0, probe);

	if (direct(env, p) || evict_successor(env, p) || evict(env, fn, p))
		return 0;
	/* The last tactic: the whole function moves (heal_reloc.c). */
	snprintf(in_place, sizeof(in_place), "a %u-byte instruction: no free place for a stub "
		 "in reach of a punned jump, and no neighbour to evict", (unsigned)p->site.len);
	p->why_code = 0;
	if (allowed(env, FL_HEAL_RELOC) && fl_heal_reloc_plan(env, site, fn, p) == 0 &&
	    p->tactic == FL_HEAL_RELOC)
		return 0;
	p->tactic = FL_HEAL_NONE;
	if (p->why_code && p->why_code != FL_SHM_WHY_RELOCATE_OFF) {
		char reloc_why[sizeof(p->why)];

		/* The relocation's reasons are short: the whole text fits. */
		snprintf(reloc_why, sizeof(reloc_why), "%s", p->why);
		snprintf(p->why, sizeof(p->why), "a %hhu-byte instruction, no room in place; its "
			 "function: %.50s", p->site.len, reloc_why);
	} else {
		/* No relocation tried (off, or ruled out by FAULTLINE_HEAL_TACTICS): the room. */
		snprintf(p->why, sizeof(p->why), "%s", in_place);
		p->why_code = FL_SHM_WHY_NO_ROOM;
	}
	return 0;
}