/* SPDX-License-Identifier: MIT */
/*
 * Signal context (see dispatch.h for the rules): the kernel's signal
 * frame, for the application's handlers faultline passes a signal to.
 *
 * The kernel gives faultline's handler a frame laid out for faultline's
 * action.  The application's handler must get the frame the kernel would
 * have given it: on the stack its own action chooses, with its siginfo and
 * ucontext in that frame (not in faultline's, where a nested signal could
 * land on them), its return address a restorer that unwinders read as a
 * signal frame, and, while it runs, nothing of faultline's below it.  So
 * faultline's handler does not call it: fl_frame_enter makes that frame
 * and jumps into the handler the way the kernel's delivery would have
 * started it, and the handler's return goes through the restorer to
 * rt_sigreturn, which the kernel serves from that frame.
 *
 * The kernel's layout on x86-64 (arch/x86/kernel/signal.c: get_sigframe,
 * align_sigframe, setup_rt_frame; fpu/signal.c: fpu__alloc_mathframe),
 * from the interrupted %rsp down:
 *   1. the red zone: 128 bytes skipped;
 *   2. or, for an action with SA_ONSTACK when the thread has an alternate
 *      stack and is not on it (or it is SS_AUTODISARM, which the kernel
 *      never counts as being on it), the top of the alternate stack;
 *   3. the xsave area, rounded down to 64 bytes: the size the kernel uses
 *      for this task is the extended_size of the area's software-reserved
 *      bytes (magic1 FP_XSTATE_MAGIC1), or 512 without xsave;
 *   4. struct rt_sigframe { pretcode; struct ucontext, 304 bytes (glibc's
 *      ucontext_t up to the kernel's 8-byte uc_sigmask); siginfo, 128 },
 *      at round_down(sp - 440, 16) - 8;
 *   5. the handler starts with %rsp at pretcode (the action's restorer),
 *      %rdi the signal, %rsi the siginfo, %rdx the ucontext, %rax 0, and
 *      every other register as interrupted.
 *
 * fl_frame_enter first checks that faultline's own frame is where steps
 * 1 to 4 put it (for its own action, which has SA_ONSTACK, or for the
 * relay's, with or without), and that its pretcode is the return address
 * the handler was given; where it is not, it changes nothing and says so,
 * and the caller calls the handler as a function instead.  Then:
 *  - the application's action chooses the same stack: faultline's frame
 *    is already the one the kernel would have given the application's
 *    handler; only its pretcode changes;
 *  - it chooses the interrupted stack while faultline's handler runs on
 *    the alternate one (an action without SA_ONSTACK in a thread with an
 *    alternate stack): the frame is copied where the kernel would have
 *    built it, ucontext and siginfo as they are, the xsave area with them
 *    (the ucontext's fpregs moved to the copy).  If the interrupted stack
 *    cannot take it (a stack overflow), the kernel would kill the process
 *    by SIGSEGV (force_sigsegv), and so does this.
 * fl_frame_jump then moves %rsp to the frame and jumps to the handler
 * with step 5's registers.  faultline's own frame and handler are left
 * behind as a siglongjmp leaves them: nothing of them is used again.
 *
 * Not as the kernel does: the vector registers hold what faultline's
 * handler left in them, and the arithmetic flags too (the kernel starts a
 * handler with a clean FPU state; no handler can rely on either).  A task
 * with user shadow stacks enabled (not Debian 12's glibc) would need the
 * restorer on its shadow stack as well.
 */
#include <stddef.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "dispatch/dispatch.h"

#define RED_ZONE 128
/* The kernel's struct ucontext: glibc's ucontext_t up to an 8-byte uc_sigmask. */
#define KERNEL_UC_BYTES (offsetof(ucontext_t, uc_sigmask) + 8)
#define KERNEL_FRAME_BYTES (8 + KERNEL_UC_BYTES + sizeof(siginfo_t))
_Static_assert(KERNEL_UC_BYTES == 304 && KERNEL_FRAME_BYTES == 440,
	       "struct rt_sigframe of x86-64");
/* The fxsave area, and where its software-reserved bytes start (struct _fpx_sw_bytes). */
#define FXSAVE_BYTES 512
#define SW_BYTES_AT 464
#ifndef FP_XSTATE_MAGIC1
#define FP_XSTATE_MAGIC1 0x46505853u
#endif
/* The kernel's SS_AUTODISARM (linux/signal.h; not in glibc's headers). */
#define SS_AUTODISARM_FLAG (1u << 31)
#define PAGE_BYTES 4096u

/*
 * The mirrors' restorers and the shim's: CHAIN_SLOTS (64) copies of what
 * libc's is (glibc's __restore_rt: mov $15,%rax; syscall, rt_sigreturn),
 * FL_RESTORER_BYTES apart, then fl_frame_leave_restorer.  Unwinders know
 * a signal frame by these bytes (gdb, libunwind, libgcc's fallback) or by
 * glibc's CFI for __restore_rt, which libgcc needs once libunwind is
 * loaded too (it is, with libfaultline): the same CFI here, one FDE from
 * the padding before the first copy (libgcc looks up the return address
 * minus one) to the end.  At a restorer %rsp points at the ucontext: the
 * CFA is its saved %rsp, every register is in its gregs.
 */
#define UC_GREG(r) (offsetof(ucontext_t, uc_mcontext.gregs) + 8 * (r))
_Static_assert(UC_GREG(REG_R8) == 0x28 && UC_GREG(REG_R11) == 0x40 &&
	       UC_GREG(REG_RBX) == 0x80 && UC_GREG(REG_RSP) == 0xa0 &&
	       UC_GREG(REG_RIP) == 0xa8, "the ucontext offsets in the restorers' CFI");
_Static_assert(FL_RESTORER_BYTES == 16, "the restorers are 16 bytes apart");
__asm__(".text\n"
	".balign 16\n"
	"	.cfi_startproc simple\n"
	"	.cfi_signal_frame\n"
	/* DW_CFA_def_cfa_expression: *(%rsp + REG_RSP's) */
	"	.cfi_escape 0x0f, 0x04, 0x77, 0xa0, 0x01, 0x06\n"
	/* DW_CFA_expression reg, %rsp + its greg's offset: r8..r15 */
	"	.cfi_escape 0x10, 0x08, 0x02, 0x77, 0x28\n"
	"	.cfi_escape 0x10, 0x09, 0x02, 0x77, 0x30\n"
	"	.cfi_escape 0x10, 0x0a, 0x02, 0x77, 0x38\n"
	"	.cfi_escape 0x10, 0x0b, 0x03, 0x77, 0xc0, 0x00\n"
	"	.cfi_escape 0x10, 0x0c, 0x03, 0x77, 0xc8, 0x00\n"
	"	.cfi_escape 0x10, 0x0d, 0x03, 0x77, 0xd0, 0x00\n"
	"	.cfi_escape 0x10, 0x0e, 0x03, 0x77, 0xd8, 0x00\n"
	"	.cfi_escape 0x10, 0x0f, 0x03, 0x77, 0xe0, 0x00\n"
	/* rdi, rsi, rbp, rbx, rdx, rax, rcx, rip */
	"	.cfi_escape 0x10, 0x05, 0x03, 0x77, 0xe8, 0x00\n"
	"	.cfi_escape 0x10, 0x04, 0x03, 0x77, 0xf0, 0x00\n"
	"	.cfi_escape 0x10, 0x06, 0x03, 0x77, 0xf8, 0x00\n"
	"	.cfi_escape 0x10, 0x03, 0x03, 0x77, 0x80, 0x01\n"
	"	.cfi_escape 0x10, 0x01, 0x03, 0x77, 0x88, 0x01\n"
	"	.cfi_escape 0x10, 0x00, 0x03, 0x77, 0x90, 0x01\n"
	"	.cfi_escape 0x10, 0x02, 0x03, 0x77, 0x98, 0x01\n"
	"	.cfi_escape 0x10, 0x10, 0x03, 0x77, 0xa8, 0x01\n"
	"	.fill 16, 1, 0x90\n"
	".globl fl_chain_restorers\n"
	".hidden fl_chain_restorers\n"
	".type fl_chain_restorers,@function\n"
	"fl_chain_restorers:\n"
	".rept 64\n"
	"	.byte 0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05\n"
	"	.fill 7, 1, 0x90\n"
	".endr\n"
	".size fl_chain_restorers, .-fl_chain_restorers\n"
	/*
	 * The shim's: the application's handler returns here with %rsp at
	 * its ucontext (16-byte aligned, as a call wants it), which
	 * fl_frame_leave reads and changes before rt_sigreturn.  Its call
	 * writes below the ucontext, where the pretcode was.
	 */
	".globl fl_frame_leave_restorer\n"
	".hidden fl_frame_leave_restorer\n"
	".type fl_frame_leave_restorer,@function\n"
	"fl_frame_leave_restorer:\n"
	"	movq %rsp, %rdi\n"
	"	callq fl_frame_leave\n"
	"	movq $15, %rax\n"
	"	syscall\n"
	"	hlt\n"
	".size fl_frame_leave_restorer, .-fl_frame_leave_restorer\n"
	"	.cfi_endproc\n");

void fl_frame_leave(ucontext_t *uc) __attribute__((visibility("hidden"), used));

void fl_frame_leave(ucontext_t *uc)
{
	fl_mask_handler_leave(uc);
}

/*
 * fl_frame_jump(frame, handler, sig): step 5.  The handler's address
 * waits at frame - 8, in the red zone below the new %rsp, which a nested
 * signal's frame never reaches.  The registers come from the frame's
 * ucontext, the greg at UC_GREG(r) of the ucontext at frame + 8.
 */
__attribute__((noreturn)) void fl_frame_jump(uintptr_t frame, uintptr_t handler, int sig)
	__attribute__((visibility("hidden")));
#define FRAME_GREG(r) (8 + UC_GREG(r))
_Static_assert(FRAME_GREG(REG_R8) == 0x30 && FRAME_GREG(REG_R15) == 0x68 &&
	       FRAME_GREG(REG_RBP) == 0x80 && FRAME_GREG(REG_RBX) == 0x88 &&
	       FRAME_GREG(REG_RCX) == 0xa0, "the ucontext offsets in fl_frame_jump");
__asm__(".text\n"
	".globl fl_frame_jump\n"
	".hidden fl_frame_jump\n"
	".type fl_frame_jump,@function\n"
	"fl_frame_jump:\n"
	"	.cfi_startproc\n"
	"	movq %rdi, %rsp\n"
	/* From here the pretcode is the return address, into a restorer. */
	"	.cfi_def_cfa %rsp, 8\n"
	"	movq %rsi, -8(%rsp)\n"
	"	movl %edx, %edi\n"
	"	movq 0x30(%rsp), %r8\n"
	"	movq 0x38(%rsp), %r9\n"
	"	movq 0x40(%rsp), %r10\n"
	"	movq 0x48(%rsp), %r11\n"
	"	movq 0x50(%rsp), %r12\n"
	"	movq 0x58(%rsp), %r13\n"
	"	movq 0x60(%rsp), %r14\n"
	"	movq 0x68(%rsp), %r15\n"
	"	movq 0x80(%rsp), %rbp\n"
	"	movq 0x88(%rsp), %rbx\n"
	"	movq 0xa0(%rsp), %rcx\n"
	"	leaq 8(%rsp), %rdx\n"
	"	leaq 8+304(%rsp), %rsi\n"
	"	xorl %eax, %eax\n"
	"	jmpq *-8(%rsp)\n"
	"	.cfi_endproc\n"
	".size fl_frame_jump, .-fl_frame_jump\n");

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
	uintptr_t sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP] - RED_ZONE;
	const stack_t *ss = &uc->uc_stack;

	/* uc_stack is the alternate stack as it was at the delivery (ss_size 0: none). */
	if (onstack && ss->ss_size && !on_stack(ss, sp))
		return (uintptr_t)ss->ss_sp + ss->ss_size;
	return sp;
}

/* Steps 3 and 4: the frame below top, and its xsave area in *fp. */
static uintptr_t frame_below(uintptr_t top, size_t xsave, uintptr_t *fp)
{
	*fp = (top - xsave) & ~(uintptr_t)63;
	return ((*fp - KERNEL_FRAME_BYTES) & ~(uintptr_t)15) - 8;
}

/* The size of the xsave area the kernel gives this task's frames; 0: none. */
static size_t xsave_bytes(const ucontext_t *uc)
{
	uint32_t sw[2];

	if (!uc->uc_mcontext.fpregs)
		return 0;
	memcpy(sw, (const char *)uc->uc_mcontext.fpregs + SW_BYTES_AT, sizeof(sw));
	return sw[0] == FP_XSTATE_MAGIC1 ? sw[1] : FXSAVE_BYTES;
}

/*
 * Whether the 8 bytes at addr can be written, asking the kernel to write
 * there (rt_sigprocmask stores the old mask; EFAULT if it cannot).  Only
 * used where the frame is about to go, below the interrupted red zone.
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

bool fl_frame_enter(int sig, siginfo_t *si, void *ucv, uintptr_t returns_to, uintptr_t handler,
		    bool onstack, uintptr_t restorer, bool synchronous)
{
	ucontext_t *uc = ucv;
	uintptr_t frame = (uintptr_t)uc - 8, fp, top, want, want_fp;
	size_t xsave = xsave_bytes(uc);

	/* Faultline's own frame, as steps 1 to 4 lay it out, or nothing is known. */
	if (!xsave || (uintptr_t)si != (uintptr_t)uc + KERNEL_UC_BYTES ||
	    *(const uintptr_t *)frame != returns_to)
		return false;
	if ((frame_below(stack_top(uc, true), xsave, &fp) != frame ||
	     fp != (uintptr_t)uc->uc_mcontext.fpregs) &&
	    (frame_below(stack_top(uc, false), xsave, &fp) != frame ||
	     fp != (uintptr_t)uc->uc_mcontext.fpregs))
		return false;

	top = stack_top(uc, onstack);
	want = frame_below(top, xsave, &want_fp);
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
		memcpy((void *)want_fp, uc->uc_mcontext.fpregs, xsave);
		memcpy((void *)(want + 8), uc, KERNEL_UC_BYTES + sizeof(siginfo_t));
		((ucontext_t *)(want + 8))->uc_mcontext.fpregs = (void *)want_fp;
		frame = want;
	}
	*(uintptr_t *)frame = restorer;
	fl_frame_jump(frame, handler, sig);
}
