/* SPDX-License-Identifier: MIT */
/*
 * Signal context (see dispatch.h for the rules), AArch64: the kernel's
 * signal frame, for the application's handlers faultline passes a signal
 * to.  What and why as on x86-64 (lib/dispatch/x86_64/frame.c): the
 * application's handler gets the frame the kernel would have given it, on
 * the stack its own action chooses, and returns through a restorer to
 * rt_sigreturn, which the kernel serves from that frame.
 *
 * The kernel's layout on arm64 (arch/arm64/kernel/signal.c: get_sigframe,
 * setup_sigframe_layout, setup_return), from the interrupted sp down:
 *   1. no red zone (AAPCS64 has none);
 *   2. or, for an action with SA_ONSTACK when the thread has an alternate
 *      stack and is not on it (or it is SS_AUTODISARM), the top of the
 *      alternate stack;
 *   3. a frame record { fp, lr } (the interrupted x29 and x30), at
 *      round_down(top - 16, 16);
 *   4. struct rt_sigframe { siginfo, 128 bytes; struct ucontext, 4560 }
 *      right below it: its __reserved area holds the FPSIMD record, the
 *      ESR record of a fault, SVE's and ZA's where the CPU has them, then
 *      the terminator.  More than __reserved holds (a large SVE state)
 *      goes into an EXTRA record's area after the frame: such a frame is
 *      not moved here (see below);
 *   5. the handler starts with sp at the siginfo, x0 the signal, x1 the
 *      siginfo, x2 the ucontext, x29 the frame record's address, x30 the
 *      action's restorer (SA_RESTORER's, else the vDSO's sigreturn), and
 *      every other register as interrupted.
 *
 * fl_frame_enter first checks that faultline's own frame is where steps 1
 * to 4 put it (for its own action, which has SA_ONSTACK, or for the
 * relay's, with or without), that its frame record holds the interrupted
 * x29 and x30, and that it has no EXTRA record; where any of that fails it
 * changes nothing, and the caller calls the handler as a function instead.
 * Then, as on x86-64, the frame stays where it is when the application's
 * action chooses the same stack, or is copied, with its frame record, to
 * where the kernel would have built it on the interrupted stack (killing
 * the process by SIGSEGV, as the kernel's force_sigsegv, when that stack
 * cannot take it).  fl_frame_jump then moves sp to the frame and branches
 * to the handler with step 5's registers.
 *
 * Not as the kernel does: the vector registers hold what faultline's
 * handler left in them, x16 holds the handler's address (the branch's
 * register: BTI lets "br x16" land on a "bti c"), and PSTATE's flags are
 * faultline's handler's.
 */
#include <stddef.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "dispatch/dispatch.h"
#include "uctx.h"

#define SIGINFO_BYTES 128
#define FRAME_RECORD_BYTES 16
/* struct rt_sigframe: siginfo, then the ucontext (glibc's is the kernel's on arm64). */
#define KERNEL_FRAME_BYTES (SIGINFO_BYTES + sizeof(ucontext_t))
_Static_assert(sizeof(siginfo_t) == SIGINFO_BYTES && sizeof(ucontext_t) == 4560 &&
	       KERNEL_FRAME_BYTES % 16 == 0, "struct rt_sigframe of arm64");
#define UC_REGS_AT (offsetof(ucontext_t, uc_mcontext.regs))
_Static_assert(SIGINFO_BYTES + UC_REGS_AT == 312, "the ucontext offsets in fl_frame_jump");
/* asm/sigcontext.h's (signal.h includes it): records beyond __reserved. */
#ifndef EXTRA_MAGIC
#define EXTRA_MAGIC 0x45585401
#endif
/* The kernel's SS_AUTODISARM (linux/signal.h; not in glibc's headers). */
#define SS_AUTODISARM_FLAG (1u << 31)
#define PAGE_BYTES 4096u

/*
 * The mirrors' restorers and the shim's: CHAIN_SLOTS (64) copies of the
 * vDSO's __kernel_rt_sigreturn (mov x8, #139; svc #0: rt_sigreturn),
 * FL_RESTORER_BYTES apart, then fl_frame_leave_restorer.  Unwinders know a
 * signal frame by these two instructions at the return address (libgcc's
 * aarch64 fallback, libunwind, gdb), with sp at the rt_sigframe.
 */
_Static_assert(FL_RESTORER_BYTES == 16, "the restorers are 16 bytes apart");
__asm__(".text\n"
	".balign 16\n"
	".globl fl_chain_restorers\n"
	".hidden fl_chain_restorers\n"
	".type fl_chain_restorers,%function\n"
	"fl_chain_restorers:\n"
	".rept 64\n"
	"	mov x8, #139\n"
	"	svc #0\n"
	"	nop\n"
	"	nop\n"
	".endr\n"
	".size fl_chain_restorers, .-fl_chain_restorers\n"
	/*
	 * The shim's: the application's handler returns here with sp at
	 * the siginfo, the ucontext 128 bytes above, which fl_frame_leave
	 * reads and changes before rt_sigreturn.  Its call writes below sp.
	 */
	".globl fl_frame_leave_restorer\n"
	".hidden fl_frame_leave_restorer\n"
	".type fl_frame_leave_restorer,%function\n"
	"fl_frame_leave_restorer:\n"
	"	add x0, sp, #128\n"
	"	bl fl_frame_leave\n"
	"	mov x8, #139\n"
	"	svc #0\n"
	"	brk #0x3e8\n"
	".size fl_frame_leave_restorer, .-fl_frame_leave_restorer\n");

void fl_frame_leave(ucontext_t *uc) __attribute__((visibility("hidden"), used));

void fl_frame_leave(ucontext_t *uc)
{
	fl_mask_handler_leave(uc);
}

/*
 * fl_frame_jump(frame, handler, sig, restorer): step 5.  x3..x28 come
 * from the frame's ucontext (regs[i] at frame + 312 + 8 * i, read through
 * x28, loaded last), x29 is the frame record right above the frame (frame
 * + 4688), x30 the restorer.
 */
__attribute__((noreturn)) void fl_frame_jump(uintptr_t frame, uintptr_t handler, int sig,
					     uintptr_t restorer)
	__attribute__((visibility("hidden")));
__asm__(".text\n"
	".globl fl_frame_jump\n"
	".hidden fl_frame_jump\n"
	".type fl_frame_jump,%function\n"
	"fl_frame_jump:\n"
	"	mov sp, x0\n"
	"	mov x16, x1\n"
	"	mov x30, x3\n"
	"	add x28, sp, #312\n"
	"	mov w0, w2\n"
	"	mov x1, sp\n"
	"	add x2, sp, #128\n"
	"	add x29, sp, #4096\n"
	"	add x29, x29, #592\n"
	"	ldr x3, [x28, #24]\n"
	"	ldp x4, x5, [x28, #32]\n"
	"	ldp x6, x7, [x28, #48]\n"
	"	ldp x8, x9, [x28, #64]\n"
	"	ldp x10, x11, [x28, #80]\n"
	"	ldp x12, x13, [x28, #96]\n"
	"	ldp x14, x15, [x28, #112]\n"
	"	ldr x17, [x28, #136]\n"
	"	ldp x18, x19, [x28, #144]\n"
	"	ldp x20, x21, [x28, #160]\n"
	"	ldp x22, x23, [x28, #176]\n"
	"	ldp x24, x25, [x28, #192]\n"
	"	ldp x26, x27, [x28, #208]\n"
	"	ldr x28, [x28, #224]\n"
	"	br x16\n"
	".size fl_frame_jump, .-fl_frame_jump\n");
_Static_assert(KERNEL_FRAME_BYTES == 4688, "fl_frame_jump's x29");

/* The kernel's on_sig_stack() for the configured stack ss (it grows down). */
static bool on_stack(const stack_t *ss, uintptr_t sp)
{
	uintptr_t lo = (uintptr_t)ss->ss_sp;

	return !((unsigned)ss->ss_flags & SS_AUTODISARM_FLAG) && sp > lo &&
	       sp - lo <= ss->ss_size;
}

/* Steps 1 and 2: the top of the stack an action's frame goes below. */
static uintptr_t stack_top(const ucontext_t *uc, bool onstack)
{
	uintptr_t sp = (uintptr_t)fl_uc_sp(uc);
	const stack_t *ss = &uc->uc_stack;

	/* uc_stack is the alternate stack as it was at the delivery (ss_size 0: none). */
	if (onstack && ss->ss_size && !on_stack(ss, sp))
		return (uintptr_t)ss->ss_sp + ss->ss_size;
	return sp;
}

/* Steps 3 and 4: the frame below top (its frame record right above it). */
static uintptr_t frame_below(uintptr_t top)
{
	return ((top - FRAME_RECORD_BYTES) & ~(uintptr_t)15) - KERNEL_FRAME_BYTES;
}

/* Whether uc's records all lie in __reserved (no EXTRA record), ending with the terminator. */
static bool records_inline(const ucontext_t *uc)
{
	const unsigned char *base = (const unsigned char *)uc->uc_mcontext.__reserved;
	size_t room = sizeof(uc->uc_mcontext.__reserved), at = 0;

	while (room - at >= 8) {
		uint32_t head[2];

		memcpy(head, base + at, sizeof(head));
		if (head[0] == 0)
			return true;
		if (head[0] == (uint32_t)EXTRA_MAGIC || head[1] < 8 || head[1] > room - at || head[1] % 8)
			return false;
		at += head[1];
	}
	return false;
}

/*
 * Whether the 8 bytes at addr can be written, asking the kernel to write
 * there (rt_sigprocmask stores the old mask; EFAULT if it cannot).  Only
 * used where the frame is about to go, below the interrupted stack.
 */
static bool writable(uintptr_t addr)
{
	return syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, (void *)addr, 8) == 0;
}

/* Whether every page of [lo, hi) can be written (hi - lo is a few KiB). */
static bool writable_range(uintptr_t lo, uintptr_t hi)
{
	for (uintptr_t a = lo; a < hi; a = (a | (PAGE_BYTES - 1)) + 1)
		if (!writable(a & ~(uintptr_t)7))
			return false;
	return writable((hi - 8) & ~(uintptr_t)7);
}

/* Whether [lo, hi) and the alternate stack ss share a byte. */
static bool meets_stack(const stack_t *ss, uintptr_t lo, uintptr_t hi)
{
	uintptr_t s = (uintptr_t)ss->ss_sp;

	return ss->ss_size && lo < s + ss->ss_size && s < hi;
}

/* Whether the frame record above frame holds uc's x29 and x30. */
static bool record_fits(uintptr_t frame, const ucontext_t *uc)
{
	const uint64_t *r = (const uint64_t *)(frame + KERNEL_FRAME_BYTES);

	return r[0] == uc->uc_mcontext.regs[29] && r[1] == uc->uc_mcontext.regs[30];
}

bool fl_frame_enter(int sig, siginfo_t *si, void *ucv, uintptr_t returns_to, uintptr_t handler,
		    bool onstack, uintptr_t restorer, bool synchronous)
{
	ucontext_t *uc = ucv;
	uintptr_t frame = (uintptr_t)si, top, want;

	/* Faultline's own frame, as steps 1 to 4 lay it out, or nothing is known. */
	(void)returns_to;	/* in x30 at the handler's entry: not in the frame */
	if ((uintptr_t)uc != frame + SIGINFO_BYTES || !records_inline(uc) ||
	    !record_fits(frame, uc))
		return false;
	if (frame_below(stack_top(uc, true)) != frame && frame_below(stack_top(uc, false)) != frame)
		return false;

	top = stack_top(uc, onstack);
	want = frame_below(top);
	if (want != frame) {
		/*
		 * Only from the alternate stack to the interrupted one: a
		 * copy that met the stack this code runs on would overwrite it.
		 */
		if (meets_stack(&uc->uc_stack, want, top) ||
		    !meets_stack(&uc->uc_stack, frame, frame + 1))
			return false;
		if (!writable_range(want, top)) {
			/* force_sigsegv: SIG_DFL, unblocked, and a SIGSEGV. */
			fl_chain_restore_default(SIGSEGV);
			sigdelset(&uc->uc_sigmask, SIGSEGV);
			if (sig != SIGSEGV || !synchronous)
				syscall(SYS_tgkill, getpid(), gettid(), SIGSEGV);
			return true;
		}
		memcpy((void *)want, (const void *)frame, KERNEL_FRAME_BYTES + FRAME_RECORD_BYTES);
		frame = want;
	}
	fl_frame_jump(frame, handler, sig, restorer);
}
