/* SPDX-License-Identifier: MIT */
/*
 * walk_ends_at_a_frame_it_cannot_step_out_of: fl_stack_walk's -ENODATA,
 * made for real by JIT code whose .eh_frame (registered with
 * fl_jit_register) puts its CFA in a register libunwind does not know
 * (DWARF register 99), walked from the signal handler of the ud2 it stops
 * at.  The same code with the CIE's rules (the return address at the
 * stack pointer) is walked to the outermost frame (0): the -ENODATA is
 * the CFI's doing.
 *
 * -ELOOP is walk_gives_up_past_max_frames's.  JIT code whose unwind
 * information returns to the same address with the CFA not moving ends
 * the walk with -ENODATA, not a loop: libunwind 1.6.2 refuses a step that
 * leaves both the pc and the CFA as they were (tried, not kept as a test:
 * two functions returning to each other with the CFA not moving are
 * stepped through, to -ELOOP).
 *
 * Exits 0 (pass) or 1 (fail, with the reason).
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>

#include <faultline/deopt.h>
#include <faultline/dispatch.h>

#include "../common/t.h"
#include "../deopt/handmade.h"

/* ud2; ret: "plain" at 0, "stuck" at STUCK_AT. */
static const uint8_t ud2_ret[] = { 0x0f, 0x0b, 0xc3 };
#define STUCK_AT 16

/* CFA = DWARF register 99 + 8. */
static const uint8_t stuck_cfi[] = { 0x0c, 99, 8 };

static uint8_t *code;
/* In the code's page: libunwind's index reaches the code with 32-bit offsets. */
static struct eh *eh;
static uint8_t map[64];
static volatile int walked;

static int count(const struct fl_walk_frame *f, void *ctx)
{
	(void)f;
	(void)ctx;
	return 0;
}

static void on_sigill(int sig, siginfo_t *si, void *uc_)
{
	ucontext_t *uc = uc_;
	struct fl_walk_start start = { .sz = sizeof(start), .signal_context = uc };

	(void)sig;
	(void)si;
	walked = fl_stack_walk(&start, count, NULL);
	uc->uc_mcontext.gregs[REG_RIP] += 2;	/* past the ud2, to the ret */
}

static int walk_from(const char *what, size_t off)
{
	walked = 1;
	((void (*)(void))(code + off))();
	t_check(walked != 1, "%s: the code did not stop at its ud2", what);
	printf("  %s: %d (%s)\n", what, walked, strerror(-walked));
	return walked;
}

int main(void)
{
	struct fl_init_opts o = { .sz = sizeof(o), .flags = FL_INIT_NO_AGENT };
	struct sigaction sa = { .sa_sigaction = on_sigill, .sa_flags = SA_SIGINFO };
	struct fl_diag d = { 0 };
	size_t cie;
	int err;

	t_name = "walk_ends_at_a_frame_it_cannot_step_out_of";
	t_check(fl_init(&o) == 0, "fl_init failed");
	code = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS,
		    -1, 0);
	t_check(code != MAP_FAILED, "mmap: %s", strerror(errno));
	memcpy(code, ud2_ret, sizeof(ud2_ret));
	memcpy(code + STUCK_AT, ud2_ret, sizeof(ud2_ret));

	eh = (struct eh *)(code + 2048);
	cie = eh_cie(eh, 1, NULL, 0x1b);
	eh_fde(eh, cie, (uint64_t)(uintptr_t)code, sizeof(ud2_ret), NULL, 0);
	eh_fde(eh, cie, (uint64_t)(uintptr_t)code + STUCK_AT, sizeof(ud2_ret), stuck_cfi,
	       sizeof(stuck_cfi));
	eh_put(eh, 0, 4);
	map_one_record(map, (uint64_t)(uintptr_t)code);
	{
		FL_OPTS(fl_jit_reg, r, .name = "stuck", .stackmap = map,
			.stackmap_size = sizeof(map), .code_start = (uint64_t)(uintptr_t)code,
			.code_size = STUCK_AT + sizeof(ud2_ret), .eh_frame = eh->b,
			.eh_frame_size = eh->n);

		err = fl_jit_register(&r, &d);
		t_check(err >= 0, "fl_jit_register: %d %s", err, d.msg);
	}
	t_check(sigaction(SIGILL, &sa, NULL) == 0, "sigaction: %s", strerror(errno));

	t_check(walk_from("stuck", STUCK_AT) == -ENODATA,
		"stuck: the walk ended with %d, not -ENODATA", walked);
	t_check(walk_from("plain", 0) == 0, "plain: the walk ended with %d, not 0", walked);
	printf("PASS %s\n", t_name);
	return 0;
}
