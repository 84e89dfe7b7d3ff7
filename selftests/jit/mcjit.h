/* SPDX-License-Identifier: MIT */
/*
 * A test JIT: LLVM IR text compiled by MCJIT (LLVM-C API of LLVM 14) into
 * memory this helper owns, with the .llvm_faultmaps, .llvm_stackmaps and
 * .eh_frame sections captured the way a runtime would capture them for
 * fl_jit_register.
 *
 * What MCJIT does with the sections (measured with LLVM 14.0.6, x86-64):
 *  - both are SHF_ALLOC, so RuntimeDyld loads them like any read-only data
 *    section, through the allocate-data-section callback, by name;
 *  - it applies their relocations in place: after finalization every
 *    FunctionAddress holds the function's final runtime address (the same
 *    value LLVMGetFunctionAddress returns);
 *  - there is no .llvm_faultmaps without -enable-implicit-null-checks (a
 *    command-line option: LLVMParseCommandLineOptions, which jit_setup
 *    calls) or at OptLevel 0.
 *
 * Not thread-safe between modules compiled at the same time; one thread
 * compiles at a time (the tests need no more).
 */
#ifndef FL_SELFTESTS_JIT_MCJIT_H
#define FL_SELFTESTS_JIT_MCJIT_H

#include <stddef.h>
#include <stdint.h>

struct jit_module {
	void *engine;			/* LLVMExecutionEngineRef */
	void *context;			/* LLVMContextRef */
	/* One mapping: code, read-only data, read-write data areas. */
	unsigned char *mem;
	size_t area_size;
	size_t used[3];
	/* The span of the code sections. */
	uint64_t code_start;
	uint64_t code_size;
	/* The captured sections, in the mapping (read-only once finalized). */
	const void *faultmap;
	size_t faultmap_size;
	const void *stackmap;
	size_t stackmap_size;
	/*
	 * .eh_frame: RuntimeDyld allocates it 4 bytes longer than the
	 * object's section and leaves them zero (the terminator that libgcc's
	 * __register_frame, to which MCJIT gives it, expects).
	 */
	const void *eh_frame;
	size_t eh_frame_size;
	/* Set before jit_compile: the mapping goes there, or the compilation fails. */
	void *place;
	int finalize_calls;
	char err[256];
};

/*
 * Once per process, before any other thread uses LLVM: initializes the
 * native target and passes -enable-implicit-null-checks to LLVM's command
 * line.  Returns 0.
 */
int jit_setup(void);

/*
 * Compiles ir (a NUL-terminated LLVM IR module) with MCJIT at OptLevel 2,
 * large code model, and finalizes it.  Returns 0 with *m filled in, -1 with
 * m->err set.  m must be zeroed.  Free with jit_free in any case.
 */
int jit_compile(struct jit_module *m, const char *ir, const char *name);

/* Returns the runtime address of a compiled function, or 0. */
uint64_t jit_function(struct jit_module *m, const char *name);

/*
 * fl_jit_register's options for m: its name, code and captured sections.
 * Declared here, defined in mcjit.c: <faultline/dispatch.h> is not needed
 * to include this header.
 */
struct fl_jit_reg;
void jit_reg(const struct jit_module *m, const char *name, struct fl_jit_reg *out);

/* Disposes the engine and unmaps the code (after fl_jit_unregister). */
void jit_free(struct jit_module *m);

/*
 * A whole file (IR text, for jit_compile), NUL-terminated, malloc'ed; NULL
 * when it cannot be read.
 */
char *jit_read_file(const char *path);

#endif /* FL_SELFTESTS_JIT_MCJIT_H */
