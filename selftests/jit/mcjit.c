// SPDX-License-Identifier: MIT
/*
 * The test JIT of mcjit.h: MCJIT with a memory manager of our own
 * (LLVMCreateSimpleMCJITMemoryManager), so that the tests see every section
 * RuntimeDyld loads, by name, and own the memory the code lives in.
 *
 * Memory: one mapping per module, three fixed areas (code, read-only data,
 * read-write data) handed out by bumping.  One mapping keeps every section
 * within 2 GiB of every other, so the PC-relative relocations RuntimeDyld
 * applies (.eh_frame to .text) always fit.  The code area becomes
 * read+execute and the read-only area read-only when MCJIT finalizes (W^X:
 * nothing is writable and executable at once).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <llvm-c/Core.h>
#include <llvm-c/ExecutionEngine.h>
#include <llvm-c/IRReader.h>
#include <llvm-c/Support.h>
#include <llvm-c/Target.h>

#include <faultline/dispatch.h>
#include <faultline/format.h>

#include "mcjit.h"

enum { AREA_CODE, AREA_RO, AREA_RW };

/* Each area: the test modules are a few hundred bytes per section. */
#define JIT_AREA_SIZE (256u << 10)

int jit_setup(void)
{
	/*
	 * The implicit null check pass runs only when this option is set; it
	 * is a cl::opt of libLLVM, so it goes through LLVM's command line.
	 */
	const char *argv[] = { "faultline-jit-test", "-enable-implicit-null-checks" };

	LLVMLinkInMCJIT();
	LLVMInitializeNativeTarget();
	LLVMInitializeNativeAsmPrinter();
	/* Inline assembly in the IR (a test's padding) needs the parser. */
	LLVMInitializeNativeAsmParser();
	LLVMParseCommandLineOptions(2, argv, NULL);
	return 0;
}

static uint8_t *area_alloc(struct jit_module *m, int area, uintptr_t size,
			   unsigned align)
{
	size_t off;

	if (align == 0)
		align = 16;
	off = (m->used[area] + align - 1) & ~((size_t)align - 1);
	if (off > JIT_AREA_SIZE || size > JIT_AREA_SIZE - off) {
		snprintf(m->err, sizeof(m->err), "area %d full (%zu + %zu bytes)",
			 area, off, (size_t)size);
		return NULL;
	}
	m->used[area] = off + size;
	return m->mem + (size_t)area * JIT_AREA_SIZE + off;
}

static uint8_t *alloc_code(void *opaque, uintptr_t size, unsigned align,
			   unsigned id, const char *name)
{
	struct jit_module *m = opaque;
	uint8_t *p = area_alloc(m, AREA_CODE, size, align);
	uint64_t start = (uint64_t)(uintptr_t)p, end = start + size;

	(void)id;
	(void)name;
	if (!p)
		return NULL;
	if (m->code_size == 0) {
		m->code_start = start;
		m->code_size = size;
	} else {
		uint64_t lo = start < m->code_start ? start : m->code_start;
		uint64_t old_end = m->code_start + m->code_size;
		uint64_t hi = end > old_end ? end : old_end;

		m->code_start = lo;
		m->code_size = hi - lo;
	}
	return p;
}

static uint8_t *alloc_data(void *opaque, uintptr_t size, unsigned align,
			   unsigned id, const char *name, LLVMBool read_only)
{
	struct jit_module *m = opaque;
	uint8_t *p = area_alloc(m, read_only ? AREA_RO : AREA_RW, size, align);

	(void)id;
	if (!p || !name)
		return p;
	/*
	 * Captured as allocated: RuntimeDyld copies the section's bytes here
	 * and relocates them in place before finalizing.
	 */
	if (strcmp(name, FL_FAULTMAP_SECTION) == 0) {
		m->faultmap = p;
		m->faultmap_size = size;
	} else if (strcmp(name, FL_STACKMAP_SECTION) == 0) {
		m->stackmap = p;
		m->stackmap_size = size;
	} else if (strcmp(name, ".eh_frame") == 0) {
		m->eh_frame = p;
		m->eh_frame_size = size;
	}
	return p;
}

/* Called by every LLVMGetFunctionAddress; protecting twice is harmless. */
static LLVMBool finalize(void *opaque, char **errmsg)
{
	struct jit_module *m = opaque;

	m->finalize_calls++;
	if (mprotect(m->mem, JIT_AREA_SIZE, PROT_READ | PROT_EXEC) ||
	    mprotect(m->mem + JIT_AREA_SIZE, JIT_AREA_SIZE, PROT_READ)) {
		snprintf(m->err, sizeof(m->err), "mprotect: %s", strerror(errno));
		*errmsg = strdup(m->err);
		return 1;
	}
	return 0;
}

/* The engine owns the memory manager: called by LLVMDisposeExecutionEngine. */
static void destroy(void *opaque)
{
	struct jit_module *m = opaque;

	if (m->mem)
		munmap(m->mem, 3 * (size_t)JIT_AREA_SIZE);
	m->mem = NULL;
}

int jit_compile(struct jit_module *m, const char *ir, const char *name)
{
	struct LLVMMCJITCompilerOptions opts;
	LLVMMemoryBufferRef buf;
	LLVMModuleRef mod;
	LLVMExecutionEngineRef ee;
	LLVMValueRef fn;
	char *msg = NULL;

	m->area_size = JIT_AREA_SIZE;
	m->mem = mmap(m->place, 3 * (size_t)JIT_AREA_SIZE, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | (m->place ? MAP_FIXED_NOREPLACE : 0), -1, 0);
	if (m->mem == MAP_FAILED || (m->place && m->mem != m->place)) {
		snprintf(m->err, sizeof(m->err), "mmap at %p: %s", m->place,
			 m->mem == MAP_FAILED ? strerror(errno) : "placed elsewhere");
		if (m->mem != MAP_FAILED)
			munmap(m->mem, 3 * (size_t)JIT_AREA_SIZE);
		m->mem = NULL;
		return -1;
	}
	m->context = LLVMContextCreate();
	buf = LLVMCreateMemoryBufferWithMemoryRangeCopy(ir, strlen(ir), name);
	/* Takes the buffer, in success and failure. */
	if (LLVMParseIRInContext(m->context, buf, &mod, &msg)) {
		snprintf(m->err, sizeof(m->err), "parse %s: %s", name, msg);
		LLVMDisposeMessage(msg);
		return -1;
	}

	LLVMInitializeMCJITCompilerOptions(&opts, sizeof(opts));
	/* Implicit null checks need OptLevel >= 1 (none at 0, measured). */
	opts.OptLevel = 2;
	/*
	 * Large: calls from JIT code to the test program's functions use
	 * absolute addresses, wherever the mapping landed.
	 */
	opts.CodeModel = LLVMCodeModelLarge;
	opts.MCJMM = LLVMCreateSimpleMCJITMemoryManager(m, alloc_code, alloc_data,
							 finalize, destroy);
	/* Takes the module and the memory manager, also on failure. */
	if (LLVMCreateMCJITCompilerForModule(&ee, mod, &opts, sizeof(opts), &msg)) {
		snprintf(m->err, sizeof(m->err), "MCJIT %s: %s", name, msg);
		LLVMDisposeMessage(msg);
		return -1;
	}
	m->engine = ee;

	/* Code generation and finalization happen on the first lookup. */
	for (fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn))
		if (!LLVMIsDeclaration(fn))
			break;
	if (!fn || !LLVMGetFunctionAddress(ee, LLVMGetValueName2(fn, &(size_t){ 0 }))) {
		if (!m->err[0])
			snprintf(m->err, sizeof(m->err), "%s: no function compiled", name);
		return -1;
	}
	if (m->err[0])
		return -1;
	return 0;
}

void jit_reg(const struct jit_module *m, const char *name, struct fl_jit_reg *out)
{
	FL_OPTS(fl_jit_reg, r, .name = name, .faultmap = m->faultmap,
		.faultmap_size = m->faultmap_size, .stackmap = m->stackmap,
		.stackmap_size = m->stackmap_size, .code_start = m->code_start,
		.code_size = m->code_size, .eh_frame = m->eh_frame,
		.eh_frame_size = m->eh_frame_size);

	*out = r;
}

uint64_t jit_function(struct jit_module *m, const char *name)
{
	return m->engine ? LLVMGetFunctionAddress(m->engine, name) : 0;
}

void jit_free(struct jit_module *m)
{
	if (m->engine)
		LLVMDisposeExecutionEngine(m->engine);	/* calls destroy */
	else
		destroy(m);
	if (m->context)
		LLVMContextDispose(m->context);
	memset(m, 0, sizeof(*m));
}

char *jit_read_file(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
	    (buf = calloc(1, (size_t)n + 1)) && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}
