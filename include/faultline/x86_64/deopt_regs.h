/* SPDX-License-Identifier: MIT */
/*
 * <faultline/deopt.h>'s x86-64 part (included by it; do not include this
 * directly): the DWARF register numbers stack map locations use, the
 * registers of the intrinsic's arguments and of the deoptimized function's
 * return.  <faultline/aarch64/deopt_regs.h> is the AArch64 one; each
 * defines its part only when compiled for its architecture.
 *
 * These are the names and the layouts of the first x86-64 release, and
 * stay so: struct fl_frame_regs is 33 slots (264 bytes), struct
 * fl_deopt_return 32 bytes.
 */
#ifndef FAULTLINE_X86_64_DEOPT_REGS_H
#define FAULTLINE_X86_64_DEOPT_REGS_H

#if defined(__x86_64__)

#define FL_DEOPT_ARCH_KNOWN 1

/* DWARF register numbers of x86-64, as stack map locations name them. */
enum {
	FL_DWARF_RAX = 0, FL_DWARF_RDX, FL_DWARF_RCX, FL_DWARF_RBX,
	FL_DWARF_RSI, FL_DWARF_RDI, FL_DWARF_RBP, FL_DWARF_RSP,
	FL_DWARF_R8, FL_DWARF_R9, FL_DWARF_R10, FL_DWARF_R11,
	FL_DWARF_R12, FL_DWARF_R13, FL_DWARF_R14, FL_DWARF_R15,
	FL_DWARF_RA = 16,	/* the return address */
	FL_DWARF_XMM0 = 17,	/* xmm0..xmm15: 17..32 */
	FL_DWARF_REGS = 33,	/* struct fl_frame_regs's slots */
};

/*
 * struct fl_deopt_state's arguments: the integer and pointer ones in rdi,
 * rsi, rdx, rcx, r8, r9, the floating-point ones in xmm0..xmm7 (SysV).
 */
#define FL_DEOPT_INT_ARGS 6
#define FL_DEOPT_FP_ARGS 8

/*
 * What the deoptimized function returns to its caller: rax for an integer
 * or a pointer, xmm0 for a float or a double (a two-register result uses
 * rdx and xmm1 too).  Every one of them is loaded; the handler sets the
 * one the function's type returns in.  Zeroed before the handler's call.
 */
struct fl_deopt_return {
	uint64_t rax;
	uint64_t rdx;
	union fl_xmm xmm0;
	union fl_xmm xmm1;
};

#endif /* __x86_64__ */

#endif /* FAULTLINE_X86_64_DEOPT_REGS_H */
