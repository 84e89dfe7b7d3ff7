/* SPDX-License-Identifier: MIT */
/*
 * Hand-made JIT code with a fault map, for the tests of the table and of
 * dispatch: one page of machine code (jit_arch.h, one per architecture), a
 * load and a store, each with a handler, and a fault map naming the load
 * and the store with the kinds asked for.
 */
#ifndef FL_TEST_JITCODE_H
#define FL_TEST_JITCODE_H

#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include <check.h>

#include <faultline/dispatch.h>

#include "jit_arch.h"
#include "vec.h"

typedef int (*fn_t)(int *p);

struct jit {
	unsigned char *code;
	fn_t load;
	fn_t store;
	struct vec map;
};

/* fl_init for tests of JIT code alone (no discovery of loaded modules). */
static inline void jit_init_only(void)
{
	struct fl_init_opts o = { .sz = sizeof(o), .flags = FL_INIT_NO_DISCOVERY };

	ck_assert_int_eq(fl_init(&o), 0);
}

/* The code, in a page of its own. */
static inline void jit_make(struct jit *j)
{
	j->code = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(j->code, MAP_FAILED);
	memcpy(j->code, jit_code_bytes, sizeof(jit_code_bytes));
	__builtin___clear_cache((char *)j->code, (char *)j->code + sizeof(jit_code_bytes));
	j->load = (fn_t)(void *)(j->code + JIT_LOAD_FN);
	j->store = (fn_t)(void *)(j->code + JIT_STORE_FN);
}

/* A fault map for j: the load as load_kind, the store as store_kind. */
static inline void jit_map(struct jit *j, uint32_t load_kind, uint32_t store_kind)
{
	struct vec *v = &j->map;

	vec_init(v, 0);
	put8(v, 1); put8(v, 0); put16(v, 0); put32(v, 2);
	put64(v, (uint64_t)(uintptr_t)j->code + JIT_LOAD_FN); put32(v, 1); put32(v, 0);
	put32(v, load_kind); put32(v, JIT_LOAD_FAULT - JIT_LOAD_FN);
	put32(v, JIT_LOAD_HANDLER - JIT_LOAD_FN);
	put64(v, (uint64_t)(uintptr_t)j->code + JIT_STORE_FN); put32(v, 1); put32(v, 0);
	put32(v, store_kind); put32(v, JIT_STORE_FAULT - JIT_STORE_FN);
	put32(v, JIT_STORE_HANDLER - JIT_STORE_FN);
}

/* fl_jit_register of j's page and map, under name. */
static inline int jit_register_as(struct jit *j, const char *name, struct fl_diag *d)
{
	FL_OPTS(fl_jit_reg, reg,
		.name = name,
		.faultmap = j->map.buf,
		.faultmap_size = j->map.len,
		.code_start = (uint64_t)(uintptr_t)j->code,
		.code_size = 4096);

	return fl_jit_register(&reg, d);
}

#endif /* FL_TEST_JITCODE_H */
