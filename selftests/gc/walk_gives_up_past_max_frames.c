/* SPDX-License-Identifier: MIT */
/*
 * walk_gives_up_past_max_frames: fl_stack_walk's -ELOOP, made for real.
 * JIT code registered with fl_jit_register stops at a ud2; its .eh_frame
 * describes an ordinary frame (CFA = rsp + 16, the return address at
 * CFA - 8), and its stack map has a record just after the ud2.  The SIGILL
 * handler points the kernel's context's RSP into a buffer whose 16-byte
 * frames all return to that record, so that every step moves 16 bytes up
 * and lands in the same function again, and walks from the context.  The
 * stack's last frame returns to a second function whose unwind
 * information marks it the outermost (its return address undefined, as
 * _start's is):
 *
 *   - a stack of FL_WALK_MAX_FRAMES frames is walked to its end: 0;
 *   - one of FL_WALK_MAX_FRAMES + 1 frames: -ELOOP.
 *
 * In both, the callback sees every frame of the first function but the
 * first (the ud2 has no record), each at its own 16 bytes of the buffer.
 *
 * Why not a return address of 0 to end the stack: libunwind 1.6.2 steps
 * to it as to one more frame (a stack of FL_WALK_MAX_FRAMES frames ended
 * so is walked to -ELOOP, one of FL_WALK_MAX_FRAMES - 1 frames to 0).
 *
 * Exits 0 (pass) or 1 (fail, with the reason).
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <ucontext.h>

#include <faultline/deopt.h>
#include <faultline/dispatch.h>

#include "../common/t.h"
#include "../deopt/handmade.h"

/*
 * ud2; ret; nops: the record (map_one_record's) is at RECORD_AT.  The
 * outermost function, OUTERMOST_AT, is nops: it is only returned to.
 */
static const uint8_t code_bytes[] = {
	0x0f, 0x0b, 0xc3, 0x90, 0x90, 0x90, 0x90, 0x90,
	0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90,
};
#define RECORD_AT 4
#define OUTERMOST_AT 16
#define FUNCTION_SIZE 16

/* DW_CFA_def_cfa_offset 16; the CIE's return address at CFA - 8 stays. */
static const uint8_t frame_cfi[] = { 0x0e, 16 };
/* The same, then DW_CFA_undefined r16: no return address, the stack's end. */
static const uint8_t outermost_cfi[] = { 0x0e, 16, 0x07, 16 };

#define FRAMES ((size_t)FL_WALK_MAX_FRAMES + 1)

static uint8_t *code;
/* In the code's page: libunwind's index reaches the code with 32-bit offsets. */
static struct eh *eh;
static uint8_t map[64];
/* FRAMES frames of 16 bytes: the return address in each one's second half. */
static uint64_t *stack;

struct seen {
	unsigned n;		/* frames the callback saw */
	int bad;		/* the first one at the wrong place, or -1 */
};

static volatile int walked;
static struct seen seen;

static int count(const struct fl_walk_frame *f, void *ctx)
{
	struct seen *s = ctx;

	if (s->bad < 0 && (f->index != s->n + 1 || f->pc != (uintptr_t)code + RECORD_AT ||
			   f->sp != (uintptr_t)(stack + 2 * (size_t)f->index)))
		s->bad = (int)f->index;
	s->n++;
	return 0;
}

/*
 * Walks from the context with its stack pointer at the buffer's first
 * frame, then puts it back and resumes at the ret.
 */
static void on_sigill(int sig, siginfo_t *si, void *uc_)
{
	ucontext_t *uc = uc_;
	struct fl_walk_start start = { .sz = sizeof(start), .signal_context = uc };
	greg_t sp = uc->uc_mcontext.gregs[REG_RSP];

	(void)sig;
	(void)si;
	uc->uc_mcontext.gregs[REG_RSP] = (greg_t)(uintptr_t)stack;
	seen = (struct seen){ .bad = -1 };
	walked = fl_stack_walk(&start, count, &seen);
	uc->uc_mcontext.gregs[REG_RSP] = sp;
	uc->uc_mcontext.gregs[REG_RIP] += 2;	/* past the ud2, to the ret */
}

/*
 * depth frames: frame i returns to frame i + 1, in the first function but
 * the last one, in the outermost.
 */
static void build_stack(size_t depth)
{
	for (size_t i = 0; i + 2 < depth; i++)
		stack[2 * i + 1] = (uintptr_t)code + RECORD_AT;
	stack[2 * (depth - 2) + 1] = (uintptr_t)code + OUTERMOST_AT + RECORD_AT;
	stack[2 * (depth - 1) + 1] = 0;
}

static int walk_stack(const char *what, size_t depth)
{
	struct timespec t0, t1;

	build_stack(depth);
	walked = 1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	((void (*)(void))code)();
	clock_gettime(CLOCK_MONOTONIC, &t1);
	t_check(walked != 1, "%s: the code did not stop at its ud2", what);
	printf("  %s, %zu frames: %d (%s), %u frames seen, %.2f s\n", what, depth, walked,
	       strerror(-walked), seen.n,
	       (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	t_check(seen.bad < 0, "%s: frame %d is not the record at its 16 bytes of the stack", what,
		seen.bad);
	return walked;
}

int main(void)
{
	struct fl_init_opts o = { .sz = sizeof(o), .flags = FL_INIT_NO_AGENT };
	struct sigaction sa = { .sa_sigaction = on_sigill, .sa_flags = SA_SIGINFO };
	struct fl_diag d = { 0 };
	size_t cie;
	int err;

	t_name = "walk_gives_up_past_max_frames";
	t_check(fl_init(&o) == 0, "fl_init failed");
	code = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS,
		    -1, 0);
	t_check(code != MAP_FAILED, "mmap: %s", strerror(errno));
	memcpy(code, code_bytes, sizeof(code_bytes));
	memset(code + OUTERMOST_AT, 0x90, FUNCTION_SIZE);
	stack = mmap(NULL, FRAMES * 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	t_check(stack != MAP_FAILED, "mmap: %s", strerror(errno));

	eh = (struct eh *)(code + 2048);
	cie = eh_cie(eh, 1, NULL, 0x1b);
	eh_fde(eh, cie, (uint64_t)(uintptr_t)code, FUNCTION_SIZE, frame_cfi, sizeof(frame_cfi));
	eh_fde(eh, cie, (uint64_t)(uintptr_t)code + OUTERMOST_AT, FUNCTION_SIZE, outermost_cfi,
	       sizeof(outermost_cfi));
	eh_put(eh, 0, 4);
	map_one_record(map, (uint64_t)(uintptr_t)code);
	{
		FL_OPTS(fl_jit_reg, r, .name = "deep", .stackmap = map,
			.stackmap_size = sizeof(map), .code_start = (uint64_t)(uintptr_t)code,
			.code_size = OUTERMOST_AT + FUNCTION_SIZE, .eh_frame = eh->b,
			.eh_frame_size = eh->n);

		err = fl_jit_register(&r, &d);
		t_check(err >= 0, "fl_jit_register: %d %s", err, d.msg);
	}
	t_check(sigaction(SIGILL, &sa, NULL) == 0, "sigaction: %s", strerror(errno));

	t_check(walk_stack("at the limit", FL_WALK_MAX_FRAMES) == 0,
		"at the limit: the walk ended with %d, not 0", walked);
	t_check(seen.n == FL_WALK_MAX_FRAMES - 2, "at the limit: the callback saw %u frames, not %u",
		seen.n, FL_WALK_MAX_FRAMES - 2);
	t_check(walk_stack("past it", FRAMES) == -ELOOP,
		"past it: the walk ended with %d, not -ELOOP", walked);
	t_check(seen.n == FL_WALK_MAX_FRAMES - 1, "past it: the callback saw %u frames, not %u",
		seen.n, FL_WALK_MAX_FRAMES - 1);
	printf("PASS %s\n", t_name);
	return 0;
}
