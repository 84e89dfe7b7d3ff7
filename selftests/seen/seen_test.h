/* SPDX-License-Identifier: MIT */
/*
 * What the seen tests share: the original function and the new code of
 * seen_asm.S, copied to a page of its own and described with fl_seen_add.
 *
 * The new code (nc_*) stands for orig_fn from orig_body on, so every row's
 * orig is orig_body, with what the new code pushed:
 *
 *   nc_begin  lea -128(%rsp),%rsp    0
 *   nc_p128   pushfq               128
 *   nc_p136   push %rax            136
 *   nc_p144   (stage 1, wait)      144
 *   nc_q136   popfq                136
 *   nc_q128   lea 128(%rsp),%rsp   128
 *   nc_sub    sub $16,%rsp           0
 *   nc_call   call *%rsi; add       16
 *   nc_jmp    jmp orig_resume        0
 */
#ifndef FL_SELFTESTS_SEEN_TEST_H
#define FL_SELFTESTS_SEEN_TEST_H

#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include <faultline/format.h>

#include "../common/t.h"

#ifdef __cplusplus
extern "C" {
#endif

#include "patch/seen.h"

struct seen_flags {
	volatile int stage;	/* 1: in the new code's wait; 3: in the callee's */
	volatile int go;	/* the new code's wait ends */
	volatile int go2;	/* the callee's */
};

void orig_fn(struct seen_flags *f, void (*callee)(struct seen_flags *), void *newcode);
void other_fn(void);
void expr_fn(void);
void nocfi_fn(void);
extern const char orig_body[], orig_resume[];
extern const char nc_begin[], nc_p128[], nc_p136[], nc_p144[], nc_q136[], nc_q128[],
	nc_sub[], nc_call[], nc_jmp[], nc_lit[], nc_end[];
extern const char hot_begin[], hot_lit[], hot_end[];

#ifdef __cplusplus
}
#endif

#define SEEN_ROWS 9

/* Copies [begin, end) to a page of its own, its literal at lit set to orig_resume. */
static inline uint8_t *seen_copy(const char *begin, const char *end, const char *lit)
{
	uint64_t back = (uint64_t)(uintptr_t)orig_resume;
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	t_check(p != MAP_FAILED, "mmap failed");
	memcpy(p, begin, (size_t)(end - begin));
	memcpy((char *)p + (lit - begin), &back, sizeof(back));
	t_check(!mprotect(p, 4096, PROT_READ | PROT_EXEC), "mprotect failed");
	return (uint8_t *)p;
}

static inline uint8_t *seen_copy_nc(void)
{
	return seen_copy(nc_begin, nc_end, nc_lit);
}

static inline size_t seen_nc_len(void)
{
	return (size_t)(nc_end - nc_begin);
}

/* The rows of a copy of nc_* at code (the table above). */
static inline void seen_nc_rows(const uint8_t *code, struct fl_seen_row rows[SEEN_ROWS])
{
	const struct { const char *at; uint32_t pushed; } t[SEEN_ROWS] = {
		{ nc_begin, 0 }, { nc_p128, 128 }, { nc_p136, 136 }, { nc_p144, 144 },
		{ nc_q136, 136 }, { nc_q128, 128 }, { nc_sub, 0 }, { nc_call, 16 },
		{ nc_jmp, 0 },
	};

	for (int i = 0; i < SEEN_ROWS; i++)
		rows[i] = (struct fl_seen_row){
			.at = (uint64_t)(uintptr_t)code + (uint64_t)(t[i].at - nc_begin),
			.orig = (uint64_t)(uintptr_t)orig_body,
			.pushed = t[i].pushed,
		};
}

/* Registers a copy of nc_* at code as "faultline:heal:" + fl_seen_name(orig_body). */
static inline struct fl_seen *seen_add_nc(const uint8_t *code, char *name, size_t size)
{
	struct fl_seen_row rows[SEEN_ROWS];
	struct fl_diag diag;
	struct fl_seen *s;
	int n = snprintf(name, size, "faultline:heal:");
	int err;

	memset(&diag, 0, sizeof(diag));
	fl_seen_name((uint64_t)(uintptr_t)orig_body, name + n, size - (size_t)n);
	seen_nc_rows(code, rows);
	err = fl_seen_add((uint64_t)(uintptr_t)code, seen_nc_len(), name, rows, SEEN_ROWS, &s,
			  &diag);
	t_check(!err, "fl_seen_add: %d: %s", err, diag.msg);
	return s;
}

#endif /* FL_SELFTESTS_SEEN_TEST_H */
