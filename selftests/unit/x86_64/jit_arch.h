/* SPDX-License-Identifier: MIT */
/*
 * The unit tests' hand-made JIT code and signal context, x86-64 (the same
 * names in selftests/unit/ARCH/jit_arch.h for every architecture):
 *   +0   load:  mov (%rdi),%eax; ret        handler +3:  mov $-1,%eax; ret
 *   +16  store: movl $1,(%rdi); xor %eax,%eax; ret
 *                                            handler +25: mov $-2,%eax; ret
 */
#ifndef FL_TEST_JIT_ARCH_H
#define FL_TEST_JIT_ARCH_H

#include <stdint.h>
#include <ucontext.h>

static const unsigned char jit_code_bytes[] = {
	0x8b, 0x07, 0xc3, 0xb8, 0xff, 0xff, 0xff, 0xff, 0xc3,
	0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90,
	0xc7, 0x07, 0x01, 0x00, 0x00, 0x00, 0x31, 0xc0, 0xc3,
	0xb8, 0xfe, 0xff, 0xff, 0xff, 0xc3,
};

/* Offsets in the page: each function's start, its faulting PC's and its handler's. */
#define JIT_LOAD_FN 0
#define JIT_LOAD_FAULT 0
#define JIT_LOAD_HANDLER 3
#define JIT_STORE_FN 16
#define JIT_STORE_FAULT 16
#define JIT_STORE_HANDLER 25
/* The load's length: what an application's handler skips to go on after it. */
#define JIT_LOAD_BYTES 2

static inline uintptr_t test_uc_pc(const ucontext_t *uc)
{
	return (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
}

static inline uintptr_t test_uc_sp(const ucontext_t *uc)
{
	return (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
}

static inline void test_uc_skip(ucontext_t *uc, unsigned bytes)
{
	uc->uc_mcontext.gregs[REG_RIP] += bytes;
}

#endif /* FL_TEST_JIT_ARCH_H */
