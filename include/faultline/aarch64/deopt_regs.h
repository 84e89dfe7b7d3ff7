/* SPDX-License-Identifier: MIT */
/*
 * <faultline/deopt.h>'s AArch64 part (included by it; do not include this
 * directly): the DWARF register numbers stack map locations use, the
 * registers of the intrinsic's arguments and of the deoptimized function's
 * return.  <faultline/x86_64/deopt_regs.h> is the x86-64 one; each defines
 * its part only when compiled for its architecture.
 *
 * The names are FL_DWARF_A64_*: x86-64's FL_DWARF_* names keep their
 * x86-64 meaning and are not defined here.  struct fl_frame_regs has a
 * slot for every DWARF number up to the last vector register (96 slots),
 * struct fl_deopt_return the registers of AAPCS64's returns.
 */
#ifndef FAULTLINE_AARCH64_DEOPT_REGS_H
#define FAULTLINE_AARCH64_DEOPT_REGS_H

#if defined(__aarch64__)

#define FL_DEOPT_ARCH_KNOWN 1

/*
 * DWARF register numbers of AArch64, as stack map locations name them
 * ("DWARF for the Arm 64-bit Architecture"): x0..x30 0..30 (x29 the frame
 * pointer, x30 the link register), sp 31, v0..v31 64..95 (a float or a
 * double kept in one is named by its V register).  32..63 name nothing a
 * location uses: their slots stay NULL.
 */
enum {
	FL_DWARF_A64_X0 = 0,	/* x0..x30: 0..30 */
	FL_DWARF_A64_X19 = 19,	/* x19..x28: callee-saved */
	FL_DWARF_A64_FP = 29,	/* x29 */
	FL_DWARF_A64_LR = 30,	/* x30 */
	FL_DWARF_A64_SP = 31,
	FL_DWARF_A64_V0 = 64,	/* v0..v31: 64..95; v8..v15's low 8 bytes are callee-saved */
	FL_DWARF_REGS = 96,	/* struct fl_frame_regs's slots */
};

/*
 * struct fl_deopt_state's arguments: the integer and pointer ones in
 * x0..x7, the floating-point ones in v0..v7 (their low 8 bytes: d0..d7),
 * the rest on the stack (AAPCS64).
 */
#define FL_DEOPT_INT_ARGS 8
#define FL_DEOPT_FP_ARGS 8

/*
 * What the deoptimized function returns to its caller: x0 for an integer
 * or a pointer, d0 (s0: the union's f) for a double (a float), x1 and
 * d1..d3 for results of two to four registers (a homogeneous aggregate of
 * floats or doubles).  Every one of them is loaded; the handler sets the
 * one the function's type returns in.  Zeroed before the handler's call.
 */
struct fl_deopt_return {
	uint64_t x0;
	uint64_t x1;
	union fl_xmm d0;
	union fl_xmm d1;
	union fl_xmm d2;
	union fl_xmm d3;
};

#endif /* __aarch64__ */

#endif /* FAULTLINE_AARCH64_DEOPT_REGS_H */
