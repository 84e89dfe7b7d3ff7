/* SPDX-License-Identifier: MIT */
/*
 * The unit tests' hand-made JIT code and signal context, AArch64 (the same
 * names in selftests/unit/ARCH/jit_arch.h for every architecture):
 *   +0   load:  ldr w0, [x0]; ret           handler +8:  mov w0, #-1; ret
 *   +16  store: mov w1, #1; str w1, [x0]; mov w0, wzr; ret
 *                                            handler +32: mov w0, #-2; ret
 */
#ifndef FL_TEST_JIT_ARCH_H
#define FL_TEST_JIT_ARCH_H

#include <stdint.h>
#include <ucontext.h>

/* Little-endian A64 words. */
#define A64(w) (w) & 0xff, ((w) >> 8) & 0xff, ((w) >> 16) & 0xff, ((w) >> 24) & 0xff
static const unsigned char jit_code_bytes[] = {
	A64(0xb9400000u),	/* ldr w0, [x0] */
	A64(0xd65f03c0u),	/* ret */
	A64(0x12800000u),	/* mov w0, #-1 */
	A64(0xd65f03c0u),	/* ret */
	A64(0x52800021u),	/* mov w1, #1 */
	A64(0xb9000001u),	/* str w1, [x0] */
	A64(0x2a1f03e0u),	/* mov w0, wzr */
	A64(0xd65f03c0u),	/* ret */
	A64(0x12800020u),	/* mov w0, #-2 */
	A64(0xd65f03c0u),	/* ret */
};
#undef A64

/* Offsets in the page: each function's start, its faulting PC's and its handler's. */
#define JIT_LOAD_FN 0
#define JIT_LOAD_FAULT 0
#define JIT_LOAD_HANDLER 8
#define JIT_STORE_FN 16
#define JIT_STORE_FAULT 20
#define JIT_STORE_HANDLER 32
/* The load's length: what an application's handler skips to go on after it. */
#define JIT_LOAD_BYTES 4

static inline uintptr_t test_uc_pc(const ucontext_t *uc)
{
	return (uintptr_t)uc->uc_mcontext.pc;
}

static inline uintptr_t test_uc_sp(const ucontext_t *uc)
{
	return (uintptr_t)uc->uc_mcontext.sp;
}

static inline void test_uc_skip(ucontext_t *uc, unsigned bytes)
{
	uc->uc_mcontext.pc += bytes;
}

#endif /* FL_TEST_JIT_ARCH_H */
