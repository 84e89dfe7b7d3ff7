// SPDX-License-Identifier: MIT
/*
 * registers_and_flags_survive_the_stub: a healed site leaves every general
 * register, the flags and the red zone exactly as the compiled instruction
 * does, on the null path and the other.
 *
 * The sites are hand-made machine code (JIT code, fl_jit_register with a
 * fault map of our own): shapes llc-14 does not emit or emits only by
 * chance.  Each function is
 *   plain:  <site>; ret                      handler: ret
 *   flags:  cmp %rsi, %rdx; <site>; jl 1f; mov $1, %r11d; ret;
 *           1: mov $2, %r11d; ret            handler: jl 1f; mov $3, %r11d;
 *                                            ret; 1: mov $4, %r11d; ret
 *   pushf:  <site>; ret                      handler: pushfq; pop %r11; ret
 * The plain handler's ret leaves the status flags dead (the SysV ABI keeps
 * none across a call): the stub's null path may then skip saving them,
 * and they are not compared there (OF SF ZF AF PF; CF and the rest are).
 * The flags and pushf handlers read them (jl, pushfq): the stub must save
 * them, and everything is compared.
 * with these sites:
 *   mov (%rdi),%eax      mov (%rcx),%eax       mov (%rcx),%rcx (load into the base)
 *   mov (%rdi),%rdi      mov (%ecx),%eax (addr32: jecxz)
 *   mov (%edi),%eax (addr32, via rcx)          mov (%r8),%eax    mov (%r15),%r15
 *   decl (%rdi) (sets the flags)               mov 8(%rdi,%rcx),%rax (rcx the index)
 *   mov 4000(%rdi),%rax (7 bytes: B1)
 * A trampoline loads all 15 general registers and the flags from a
 * struct, writes a pattern into the callee's red zone, calls the function
 * and stores the registers, the flags and the red zone back.  Inputs: the
 * base valid or null (for 32-bit addressing: ecx or edi zero with the upper
 * half not, which only jecxz tells from valid), every other register a
 * distinct value, the arithmetic flags all set, all clear, and mixed.
 * Each input runs as compiled (a null faults: the signal path, which
 * preserves everything but rip: the reference) and healed; the outputs
 * must be equal, byte for byte.
 */
#include "common.h"

/* The trampoline's view of the registers (order of the offsets below). */
struct regs {
	uint64_t rax, rbx, rcx, rdx, rsi, rdi, rbp, r8, r9, r10, r11, r12, r13, r14, r15;
	uint64_t flags;
	uint64_t red[16];	/* out: the callee's red zone after the call */
};

static const char *const reg_names[] = {
	"rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "r8", "r9", "r10", "r11", "r12",
	"r13", "r14", "r15", "flags",
};

void t_run_regs(const struct regs *in, struct regs *out, const void *fn);

/*
 * t_run_regs(in, out, fn): callee-saved registers kept; out and fn on the
 * stack, so that every register can carry an input.  The callee's red zone
 * is [its rsp - 128, its rsp), its rsp being ours - 8 at the call.
 */
__asm__(
	".text\n"
	".globl t_run_regs\n"
	".type t_run_regs, @function\n"
	"t_run_regs:\n"
	"	push %rbp\n	push %rbx\n	push %r12\n	push %r13\n	push %r14\n	push %r15\n"
	"	push %rsi\n"			/* out: 8(%rsp) */
	"	push %rdx\n"			/* fn: 0(%rsp) */
	"	movabs $0x5a5a5a5a5a5a5a5a, %rax\n"
	"	.irp i, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15\n"
	"	add $0x0101010101010101 & 0x7fffffff, %rax\n"
	"	mov %rax, -16-8*\\i(%rsp)\n"
	"	.endr\n"
	"	push 120(%rdi)\n	popfq\n"
	"	mov 0(%rdi), %rax\n	mov 8(%rdi), %rbx\n	mov 16(%rdi), %rcx\n"
	"	mov 24(%rdi), %rdx\n	mov 32(%rdi), %rsi\n	mov 48(%rdi), %rbp\n"
	"	mov 56(%rdi), %r8\n	mov 64(%rdi), %r9\n	mov 72(%rdi), %r10\n"
	"	mov 80(%rdi), %r11\n	mov 88(%rdi), %r12\n	mov 96(%rdi), %r13\n"
	"	mov 104(%rdi), %r14\n	mov 112(%rdi), %r15\n	mov 40(%rdi), %rdi\n"
	"	call *0(%rsp)\n"
	"	xchg %rdi, 8(%rsp)\n"		/* rdi: out; the slot: the callee's rdi */
	"	mov %rax, 0(%rdi)\n	mov %rbx, 8(%rdi)\n	mov %rcx, 16(%rdi)\n"
	"	mov %rdx, 24(%rdi)\n	mov %rsi, 32(%rdi)\n	mov %rbp, 48(%rdi)\n"
	"	mov %r8, 56(%rdi)\n	mov %r9, 64(%rdi)\n	mov %r10, 72(%rdi)\n"
	"	mov %r11, 80(%rdi)\n	mov %r12, 88(%rdi)\n	mov %r13, 96(%rdi)\n"
	"	mov %r14, 104(%rdi)\n	mov %r15, 112(%rdi)\n"
	"	pushfq\n"			/* at the call's return address: not the red zone */
	"	pop %rax\n	mov %rax, 120(%rdi)\n"
	"	mov 8(%rsp), %rax\n	mov %rax, 40(%rdi)\n"
	"	.irp i, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15\n"
	"	mov -16-8*\\i(%rsp), %rax\n	mov %rax, 128+8*\\i(%rdi)\n"
	"	.endr\n"
	"	add $16, %rsp\n"
	"	pop %r15\n	pop %r14\n	pop %r13\n	pop %r12\n	pop %rbx\n	pop %rbp\n"
	"	ret\n"
	".size t_run_regs, .-t_run_regs\n");

struct site {
	const char *name;
	uint8_t bytes[8];
	uint8_t len;
	uint32_t kind;
	int base;		/* index in struct regs of the base register */
	bool addr32;
	int index;		/* index register, or -1 */
};

enum { RAX, RBX, RCX, RDX, RSI, RDI, RBP, R8, R9, R10, R11, R12, R13, R14, R15 };

static const struct site sites[] = {
	{ "mov (%rdi),%eax", { 0x8b, 0x07 }, 2, FL_FAULT_LOAD, RDI, false, -1 },
	{ "mov (%rcx),%eax", { 0x8b, 0x01 }, 2, FL_FAULT_LOAD, RCX, false, -1 },
	{ "mov (%rcx),%rcx", { 0x48, 0x8b, 0x09 }, 3, FL_FAULT_LOAD, RCX, false, -1 },
	{ "mov (%rdi),%rdi", { 0x48, 0x8b, 0x3f }, 3, FL_FAULT_LOAD, RDI, false, -1 },
	{ "mov (%ecx),%eax", { 0x67, 0x8b, 0x01 }, 3, FL_FAULT_LOAD, RCX, true, -1 },
	{ "mov (%edi),%eax", { 0x67, 0x8b, 0x07 }, 3, FL_FAULT_LOAD, RDI, true, -1 },
	{ "mov (%r8),%eax", { 0x41, 0x8b, 0x00 }, 3, FL_FAULT_LOAD, R8, false, -1 },
	{ "mov (%r15),%r15", { 0x4d, 0x8b, 0x3f }, 3, FL_FAULT_LOAD, R15, false, -1 },
	{ "decl (%rdi)", { 0xff, 0x0f }, 2, FL_FAULT_LOAD_STORE, RDI, false, -1 },
	{ "mov 8(%rdi,%rcx),%rax", { 0x48, 0x8b, 0x44, 0x0f, 0x08 }, 5, FL_FAULT_LOAD, RDI, false, RCX },
	{ "mov 4000(%rdi),%rax", { 0x48, 0x8b, 0x87, 0xa0, 0x0f, 0x00, 0x00 }, 7, FL_FAULT_LOAD, RDI,
	  false, -1 },
};
#define NSITES (sizeof(sites) / sizeof(sites[0]))
#define SLOT 64

enum shape { PLAIN, FLAGS, PUSHF, SHAPES };
static const char *const shape_names[SHAPES] = { "plain", "flags", "pushf" };

struct fn {
	const struct site *s;
	enum shape shape;
	uint8_t *code;
	uint64_t pc, handler;
};

static void put(uint8_t **p, const void *b, size_t n)
{
	memcpy(*p, b, n);
	*p += n;
}

/* Writes the function for s into slot; sets f's pcs. */
static void emit(struct fn *f, uint8_t *slot)
{
	static const uint8_t cmp[] = { 0x48, 0x39, 0xf2 };		/* cmp %rsi,%rdx */
	static const uint8_t jl[] = { 0x7c, 0x07 };			/* jl +7 */
	static const uint8_t mov1[] = { 0x41, 0xbb, 1, 0, 0, 0, 0xc3 };	/* mov $1,%r11d; ret */
	static const uint8_t mov2[] = { 0x41, 0xbb, 2, 0, 0, 0, 0xc3 };
	static const uint8_t mov3[] = { 0x41, 0xbb, 3, 0, 0, 0, 0xc3 };
	static const uint8_t mov4[] = { 0x41, 0xbb, 4, 0, 0, 0, 0xc3 };
	static const uint8_t pushf[] = { 0x9c, 0x41, 0x5b, 0xc3 };	/* pushfq; pop %r11; ret */
	uint8_t *p = slot;

	f->code = slot;
	if (f->shape == FLAGS)
		put(&p, cmp, sizeof(cmp));
	f->pc = (uint64_t)(uintptr_t)p;
	put(&p, f->s->bytes, f->s->len);
	switch (f->shape) {
	case FLAGS:
		put(&p, jl, sizeof(jl));
		put(&p, mov1, sizeof(mov1));
		put(&p, mov2, sizeof(mov2));
		f->handler = (uint64_t)(uintptr_t)p;
		put(&p, jl, sizeof(jl));
		put(&p, mov3, sizeof(mov3));
		put(&p, mov4, sizeof(mov4));
		break;
	case PUSHF:
		*p++ = 0xc3;
		f->handler = (uint64_t)(uintptr_t)p;
		put(&p, pushf, sizeof(pushf));
		break;
	default:
		*p++ = 0xc3;
		f->handler = (uint64_t)(uintptr_t)p;
		*p++ = 0xc3;
		break;
	}
}

static uint8_t map[4096];
static size_t map_len;

static void put_map(const void *b, size_t n)
{
	memcpy(map + map_len, b, n);
	map_len += n;
}

/* A fault map (version 1) with one function per fn. */
static void make_map(const struct fn *fns, size_t n)
{
	uint8_t hdr[4] = { 1, 0, 0, 0 };
	uint32_t nf = (uint32_t)n;

	put_map(hdr, 4);
	put_map(&nf, 4);
	for (size_t i = 0; i < n; i++) {
		uint64_t addr = (uint64_t)(uintptr_t)fns[i].code;
		uint32_t one = 1, zero = 0, kind = fns[i].s->kind;
		uint32_t pc_off = (uint32_t)(fns[i].pc - addr), h_off = (uint32_t)(fns[i].handler - addr);

		put_map(&addr, 8);
		put_map(&one, 4);
		put_map(&zero, 4);
		put_map(&kind, 4);
		put_map(&pc_off, 4);
		put_map(&h_off, 4);
	}
}

/* The inputs: base valid or null, flags pattern. */
static void input(struct regs *in, const struct site *s, int v, uint32_t *valid32,
		  uint64_t *valid64)
{
	static const uint64_t flag_sets[] = { 0x8d5 | 0x2, 0x2, 0x801 | 0x40 | 0x2 };
	bool null = v & 1;
	uint64_t *r = (uint64_t *)in;

	memset(in, 0, sizeof(*in));
	for (int i = 0; i < 15; i++)
		r[i] = 0x1111111111111111ull * (uint64_t)(i + 1) ^ 0x8000000000000000ull;
	/* cmp %rsi,%rdx: less on some inputs, not on others. */
	if (v & 2)
		in->rdx = in->rsi - 5;
	in->flags = flag_sets[(v >> 1) % 3];
	if (s->index >= 0)
		r[s->index] = 16;
	if (s->addr32)
		/* Only the low half is the address: null with the upper half set. */
		r[s->base] = null ? 0xdead000000000000ull : 0xdead000000000000ull |
			(uint64_t)(uintptr_t)valid32;
	else
		r[s->base] = null ? 0 : (uint64_t)(uintptr_t)valid64 - (s->index >= 0 ? 16 : 0);
}

/* The status flags a ret leaves dead, but for CF, which lock incq keeps. */
#define DEAD_FLAGS 0x8d4ull

/* Whether a equals b; ignore: bits of the flags not compared. */
static bool same(const struct regs *a, const struct regs *b, uint64_t ignore, char *why,
		 size_t len)
{
	const uint64_t *x = (const uint64_t *)a, *y = (const uint64_t *)b;

	for (int i = 0; i < 16; i++)
		if ((x[i] ^ y[i]) & ~(i == 15 ? ignore : 0)) {
			snprintf(why, len, "%s: 0x%llx, as compiled 0x%llx", reg_names[i],
				 (unsigned long long)x[i], (unsigned long long)y[i]);
			return false;
		}
	for (int i = 0; i < 16; i++)
		if (a->red[i] != b->red[i]) {
			snprintf(why, len, "the red zone at rsp-%d: 0x%llx, as compiled 0x%llx",
				 8 * (i + 1), (unsigned long long)a->red[i],
				 (unsigned long long)b->red[i]);
			return false;
		}
	return true;
}

#define NFNS (SHAPES * NSITES)
#define NINPUTS 12

int main(int argv_n, char **argv)
{
	static struct fn fns[NFNS];
	static struct regs want[NFNS][NINPUTS];
	uint8_t *code, *low;
	uint64_t *valid64;
	uint32_t *valid32;
	struct fl_diag d = { 0 };
	int id, healed = 0, runs = 0;

	(void)argv_n;
	t_start(argv);
	t_init();
	t_enable();
	/* The memory the valid bases point at: one 64-bit, one below 4 GiB. */
	valid64 = calloc(1024, 8);
	low = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT,
		   -1, 0);
	t_check(valid64 && low != MAP_FAILED, "memory for the valid pointers");
	valid32 = (uint32_t *)(void *)low;
	t_check((uintptr_t)valid32 < (1ull << 32), "MAP_32BIT gave %p", (void *)valid32);

	code = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	t_check(code != MAP_FAILED, "mmap");
	memset(code, 0xcc, 8192);
	for (size_t i = 0; i < NFNS; i++) {
		fns[i].s = &sites[i / SHAPES];
		fns[i].shape = (enum shape)(i % SHAPES);
		emit(&fns[i], code + SLOT * i);
	}
	t_check(mprotect(code, 8192, PROT_READ | PROT_EXEC) == 0, "mprotect");
	make_map(fns, NFNS);
	{
		FL_OPTS(fl_jit_reg, reg, .name = "registers", .faultmap = map,
			.faultmap_size = map_len, .code_start = (uint64_t)(uintptr_t)code,
			.code_size = 8192);

		id = fl_jit_register(&reg, &d);
		t_check(id > 0, "fl_jit_register: %d %s", id, d.msg);
	}

	/* As compiled: the reference. */
	for (size_t f = 0; f < NFNS; f++)
		for (int v = 0; v < NINPUTS; v++) {
			struct regs in;

			valid64[0] = valid64[1] = valid64[3] = valid64[500] = 0x0123456789abcdefull;
			valid32[0] = 1;
			input(&in, fns[f].s, v, valid32, valid64);
			t_run_regs(&in, &want[f][v], fns[f].code);
		}
	for (size_t f = 0; f < NFNS; f++) {
		struct fl_heal_info info;
		int err;

		d = (struct fl_diag){ 0 };
		err = fl_site_heal((const void *)(uintptr_t)fns[f].pc, &d);
		t_check(err == 0, "fl_site_heal(%s, %s): %d %s", fns[f].s->name,
			shape_names[fns[f].shape], err, d.msg);
		info = t_heal_info(fns[f].pc);
		printf("%s: %-24s %-6s healed with %s\n", t_name, fns[f].s->name,
		       shape_names[fns[f].shape], info.tactic);
		healed++;
	}
	for (size_t f = 0; f < NFNS; f++) {
		uint64_t h0 = t_heal_info(fns[f].pc).healed_failures, nulls = 0;

		for (int v = 0; v < NINPUTS; v++) {
			struct regs in, got;
			char why[160];

			valid64[0] = valid64[1] = valid64[3] = valid64[500] = 0x0123456789abcdefull;
			valid32[0] = 1;
			input(&in, fns[f].s, v, valid32, valid64);
			t_run_regs(&in, &got, fns[f].code);
			t_check(same(&got, &want[f][v],
				     fns[f].shape == PLAIN && (v & 1) ? DEAD_FLAGS : 0, why,
				     sizeof(why)),
				"%s (%s), base %s, flags in 0x%llx: healed, %s", fns[f].s->name,
				shape_names[fns[f].shape], v & 1 ? "null" : "valid",
				(unsigned long long)in.flags, why);
			nulls += v & 1;
			runs++;
		}
		t_check(t_heal_info(fns[f].pc).healed_failures - h0 == nulls,
			"%s: %llu healed failures, %llu null runs", fns[f].s->name,
			(unsigned long long)(t_heal_info(fns[f].pc).healed_failures - h0),
			(unsigned long long)nulls);
		t_unheal(fns[f].pc);
	}
	printf("%s: %d sites healed, %d runs: registers, flags and red zone as compiled\n",
	       t_name, healed, runs);
	printf("PASS %s\n", t_name);
	return 0;
}
