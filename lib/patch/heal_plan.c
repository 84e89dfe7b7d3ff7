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
 *   T3  a 2-byte jmp rel8 to a neighbour within reach that is evicted:
 *       the neighbour (6 bytes or more) becomes a jmp rel32 to a stub of
 *       its own (itself, relocated, and a jump back), and the bytes after
 *       that jump hold the site's jump (punned in turn when they are
 *       fewer than 5).
 * The bytes a punned jump reads beyond what it changes are pinned: they
 * must stay as they are for as long as the site is healed (heal.c keeps
 * the list, env->busy says what is taken).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

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
	[FL_HEAL_T1] = "T1", [FL_HEAL_T3] = "T3",
};

const char *fl_heal_tactic_name(enum fl_heal_tactic t)
{
	return (unsigned)t < FL_HEAL_TACTICS ? names[t] : "?";
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
 * The site's stub, laid out (R: the base register; the xchgs only when it
 * is not %rcx; jecxz, 67 E3, for 32-bit addressing):
 *
 *         xchg %R, %rcx
 *         jrcxz null            neither reads nor writes the flags
 *         xchg %R, %rcx
 *         <the instruction>     relocated
 *         jmp site + len
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
	n += jmp32(p->stub + n, p->site.addr + p->site.len, out + n);
	out[jrcxz] = (uint8_t)(n - (jrcxz + 1));
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

void fl_heal_site_stub(const struct fl_heal_plan *p, uint64_t handler, uint64_t counter,
		       uint8_t *out)
{
	/* The site's instruction has no RIP-relative operand: its base is a register. */
	site_stub(p, p->site.old, handler, counter, out);
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

/* ------------------------------------------------------------------------
 * Jumps
 */

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
	int64_t first, last;

	if (nfree < 4) {
		if (!in_code(env, rel_at + nfree, 4 - nfree) || busy(env, rel_at + nfree, 4 - nfree))
			return false;
		for (unsigned k = nfree; k < 4; k++)
			fixed |= (uint32_t)at(env, rel_at + k)[0] << (8 * k);
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
 * Checks what a thread will decode at j once the bytes are written: a
 * jmp to target, of the expected length.  A guard against an error in the
 * arithmetic above, which would send threads to a wrong place.
 */
static bool jump_checks(const struct fl_heal_env *env, uint64_t j, const uint8_t *mine,
			size_t nmine, uint64_t target)
{
	uint8_t buf[16];
	ZydisDecoder d;
	ZydisDecodedInstruction insn;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	uint64_t dest;
	size_t total = 0;

	memcpy(buf, mine, nmine);
	total = nmine;
	while (total < 16 && in_code(env, j + total, 1)) {
		buf[total] = at(env, j + total)[0];
		total++;
	}
	decoder(&d);
	return ZYAN_SUCCESS(ZydisDecoderDecodeFull(&d, buf, total, &insn, ops)) &&
	       insn.mnemonic == ZYDIS_MNEMONIC_JMP && ops[0].type == ZYDIS_OPERAND_TYPE_IMMEDIATE &&
	       ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(&insn, &ops[0], j, &dest)) && dest == target;
}

/* ------------------------------------------------------------------------
 * Tactics
 */

/* The site's own jump: B1, B2 or T1.  Returns true with the plan made. */
static bool direct(const struct fl_heal_env *env, struct fl_heal_plan *p)
{
	uint64_t a = p->site.addr, lo, hi, stub;
	unsigned len = p->site.len;

	for (unsigned prefixes = 0; prefixes + 1 <= len && prefixes <= 3; prefixes++) {
		enum fl_heal_tactic t = len >= 5 + prefixes ? FL_HEAL_B1 :
			prefixes ? FL_HEAL_T1 : FL_HEAL_B2;
		uint64_t end = a + prefixes + 5;

		/* A B1 jump needs no prefix; more of them only narrow the window. */
		if (prefixes && len >= 5)
			break;
		if (!jump_window(env, a, prefixes, a + len, &lo, &hi) ||
		    !env->place(env->ctx, lo, hi, p->stub_size, &stub))
			continue;
		memcpy(p->site.new, p->site.old, len);
		jump_bytes(a, prefixes, a + len, stub, p->site.new);
		if (!jump_checks(env, a, p->site.new, len, stub))
			continue;
		p->tactic = t;
		p->stub = stub;
		p->pin = a + len;
		p->pin_len = end > a + len ? (uint8_t)(end - (a + len)) : 0;
		return true;
	}
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

	if (p->site.len < 2 || fn > a)
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

int fl_heal_plan(const struct fl_heal_env *env, uint64_t site, uint64_t fn,
		 struct fl_heal_plan *p)
{
	ZydisDecoder d;
	ZydisDecodedInstruction insn;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	const ZydisDecodedOperand *mem = NULL;
	size_t avail;
	uint8_t probe[FL_HEAL_STUB_MAX];
	const char *why;

	memset(p, 0, sizeof(*p));
	if (!in_code(env, site, 1) || !in_code(env, fn, 1))
		return -EINVAL;
	avail = env->len - (site - env->base);
	decoder(&d);
	if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(&d, at(env, site), avail < 15 ? avail : 15,
						 &insn, ops))) {
		snprintf(p->why, sizeof(p->why), "no instruction decodes at the site");
		p->why_code = FL_SHM_WHY_UNDECODED;
		return 0;
	}
	p->site.addr = site;
	p->site.len = insn.length;
	memcpy(p->site.old, at(env, site), insn.length);
	for (unsigned i = 0; i < insn.operand_count_visible; i++)
		if (ops[i].type == ZYDIS_OPERAND_TYPE_MEMORY && ops[i].mem.type == ZYDIS_MEMOP_TYPE_MEM)
			mem = &ops[i];
	if (!mem || mem->mem.base == ZYDIS_REGISTER_NONE || mem->mem.base == ZYDIS_REGISTER_RIP ||
	    mem->mem.base == ZYDIS_REGISTER_RSP || mem->mem.base == ZYDIS_REGISTER_ESP ||
	    mem->mem.segment == ZYDIS_REGISTER_FS || mem->mem.segment == ZYDIS_REGISTER_GS) {
		snprintf(p->why, sizeof(p->why), "%s has no base register to test",
			 ZydisMnemonicGetString(insn.mnemonic));
		p->why_code = FL_SHM_WHY_NO_BASE;
		return 0;
	}
	if (!relocatable(&insn, &why)) {
		snprintf(p->why, sizeof(p->why), "the site is %s", why);
		p->why_code = FL_SHM_WHY_BRANCH;
		return 0;
	}
	if (busy(env, site, insn.length)) {
		snprintf(p->why, sizeof(p->why), "its bytes are pinned by another patch");
		p->why_code = FL_SHM_WHY_PINNED;
		return 0;
	}
	p->base_reg = ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, mem->mem.base);
	p->addr32 = insn.address_width == 32;
	/* The stubs' sizes do not depend on where they go. */
	p->stub = 0;
	p->stub_size = site_stub(p, p->site.old, 0, 0, probe);

	if (direct(env, p) || evict(env, fn, p))
		return 0;
	p->tactic = FL_HEAL_NONE;
	snprintf(p->why, sizeof(p->why), "a %u-byte instruction: no free place for a stub in "
		 "reach of a punned jump, and no neighbour to evict", (unsigned)insn.length);
	p->why_code = FL_SHM_WHY_NO_ROOM;
	return 0;
}
