// SPDX-License-Identifier: MIT
/*
 * DWARF register numbers of x86-64, as stack map locations use them
 * (System V psABI for AMD64, "DWARF Register Number Mapping").  Note the
 * order of the first eight: rax, rdx, rcx, rbx, not the encoding's.
 */
#include <stddef.h>

#include "dwarf_regs.h"

static const char *const names[] = {
	"rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp",
	"r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15",
	"rip",
	"xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7",
	"xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15",
	"st0", "st1", "st2", "st3", "st4", "st5", "st6", "st7",
	"mm0", "mm1", "mm2", "mm3", "mm4", "mm5", "mm6", "mm7",
	"rflags", "es", "cs", "ss", "ds", "fs", "gs", NULL, NULL,
	"fs.base", "gs.base", NULL, NULL, "tr", "ldtr", "mxcsr", "fcw", "fsw",
	"xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", "xmm23",
	"xmm24", "xmm25", "xmm26", "xmm27", "xmm28", "xmm29", "xmm30", "xmm31",
};

const char *cli_dwarf_reg_name(unsigned reg)
{
	static const char *const k[] = { "k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7" };

	if (reg < sizeof(names) / sizeof(names[0]))
		return names[reg];
	if (reg >= 118 && reg <= 125)
		return k[reg - 118];
	return NULL;
}
