// SPDX-License-Identifier: MIT
/*
 * docs/codegen.md's MCJIT example: an IR file compiled by MCJIT through
 * LLVM 14's C API into memory this program owns, its implicit null checks
 * registered with faultline, and a null item priced through the fault.
 *
 *   mcjit price.ll
 *
 * MCJIT hands every section it loads to the memory manager, by name: the
 * two map sections are SHF_ALLOC, so they arrive through the data-section
 * callback like any read-only data, and RuntimeDyld relocates them in place
 * before finalizing.  After finalization each FunctionAddress holds the
 * function's runtime address, which is what fl_jit_register wants.  The
 * functions are registered too, so that faultlined names the sites.
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

/*
 * One mapping, code first, then read-only data, then writable data,
 * handed out by bumping: everything stays within 2 GiB of everything
 * else, as RuntimeDyld's PC-relative relocations need.
 */
#define AREA (256u << 10)

struct jit_memory {
	unsigned char *mem;
	size_t used[3];			/* code, read-only data, writable data */
	uint64_t code_start, code_end;
	const void *faultmap, *stackmap, *eh_frame;
	size_t faultmap_size, stackmap_size, eh_frame_size;
};

static uint8_t *bump(struct jit_memory *m, int area, uintptr_t size, unsigned align)
{
	size_t off;

	align = align ? align : 16;
	off = (m->used[area] + align - 1) & ~((size_t)align - 1);
	if (off > AREA || size > AREA - off)
		return NULL;
	m->used[area] = off + size;
	return m->mem + (size_t)area * AREA + off;
}

static uint8_t *alloc_code(void *opaque, uintptr_t size, unsigned align, unsigned id,
			   const char *name)
{
	struct jit_memory *m = opaque;
	uint8_t *p = bump(m, 0, size, align);

	(void)id;
	(void)name;
	if (p) {
		uint64_t start = (uint64_t)(uintptr_t)p;

		if (!m->code_start || start < m->code_start)
			m->code_start = start;
		if (start + size > m->code_end)
			m->code_end = start + size;
	}
	return p;
}

static uint8_t *alloc_data(void *opaque, uintptr_t size, unsigned align, unsigned id,
			   const char *name, LLVMBool read_only)
{
	struct jit_memory *m = opaque;
	uint8_t *p = bump(m, read_only ? 1 : 2, size, align);

	(void)id;
	/* Kept by name: RuntimeDyld fills and relocates them here. */
	if (p && strcmp(name, FL_FAULTMAP_SECTION) == 0) {
		m->faultmap = p;
		m->faultmap_size = size;
	} else if (p && strcmp(name, FL_STACKMAP_SECTION) == 0) {
		m->stackmap = p;
		m->stackmap_size = size;
	} else if (p && strcmp(name, ".eh_frame") == 0) {
		m->eh_frame = p;
		m->eh_frame_size = size;
	}
	return p;
}

/* W^X: the code becomes read+execute, the read-only data read-only. */
static LLVMBool finalize(void *opaque, char **errmsg)
{
	struct jit_memory *m = opaque;

	if (mprotect(m->mem, AREA, PROT_READ | PROT_EXEC) ||
	    mprotect(m->mem + AREA, AREA, PROT_READ)) {
		*errmsg = strdup(strerror(errno));
		return 1;
	}
	return 0;
}

static void destroy(void *opaque)
{
	struct jit_memory *m = opaque;

	munmap(m->mem, 3 * (size_t)AREA);
}

static int by_start(const void *a, const void *b)
{
	const struct fl_jit_function *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/*
 * The module's functions, for their names in faultlined: where each one
 * is, from the engine; its size, which LLVM 14's C API does not give for
 * MCJIT code, up to the next function's start (the last: to the code's
 * end), alignment padding included.  Returns how many, at most max.
 */
static size_t functions_of(LLVMExecutionEngineRef ee, LLVMModuleRef mod,
			   const struct jit_memory *m, struct fl_jit_function *out, size_t max)
{
	size_t n = 0;

	for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn && n < max;
	     fn = LLVMGetNextFunction(fn)) {
		const char *name = LLVMGetValueName2(fn, &(size_t){ 0 });

		if (LLVMIsDeclaration(fn))
			continue;
		out[n].name = name;
		out[n].start = LLVMGetFunctionAddress(ee, name);
		if (out[n].start)
			n++;
	}
	qsort(out, n, sizeof(*out), by_start);
	for (size_t i = 0; i < n; i++)
		out[i].size = (i + 1 < n ? out[i + 1].start : m->code_end) - out[i].start;
	return n;
}

static int print_site(const struct fl_site *s, void *ctx)
{
	const struct jit_memory *m = ctx;

	if (strcmp(s->module_name, "mcjit") == 0)
		printf("site %s+%#llx: %s, %llu fault(s)\n", s->module_name,
		       (unsigned long long)(s->faulting_pc - m->code_start),
		       fl_fault_kind_name(s->kind), (unsigned long long)s->faults);
	return 0;
}

int main(int argc, char **argv)
{
	/* The pass is off unless asked for, through LLVM's command line. */
	const char *llvm_argv[] = { "mcjit", "-enable-implicit-null-checks" };
	struct LLVMMCJITCompilerOptions opts;
	struct jit_memory jm = { 0 };
	struct fl_stats st = { .sz = sizeof(st) };
	struct fl_jit_function fns[16];
	struct fl_diag diag;
	LLVMExecutionEngineRef ee;
	LLVMMemoryBufferRef buf;
	LLVMModuleRef mod;
	char *msg = NULL;
	size_t nfns;
	int id, ret;

	if (argc != 2) {
		fprintf(stderr, "usage: mcjit FILE.ll\n");
		return 2;
	}
	ret = fl_init(NULL);
	if (ret < 0) {
		fprintf(stderr, "mcjit: fl_init: %s\n", strerror(-ret));
		return 1;
	}
	LLVMLinkInMCJIT();
	LLVMInitializeNativeTarget();
	LLVMInitializeNativeAsmPrinter();
	LLVMParseCommandLineOptions(2, llvm_argv, NULL);

	if (LLVMCreateMemoryBufferWithContentsOfFile(argv[1], &buf, &msg) ||
	    /* Takes the buffer, in success and failure. */
	    LLVMParseIRInContext(LLVMGetGlobalContext(), buf, &mod, &msg)) {
		fprintf(stderr, "mcjit: %s: %s\n", argv[1], msg);
		return 1;
	}
	jm.mem = mmap(NULL, 3 * (size_t)AREA, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (jm.mem == MAP_FAILED) {
		fprintf(stderr, "mcjit: mmap: %s\n", strerror(errno));
		return 1;
	}
	LLVMInitializeMCJITCompilerOptions(&opts, sizeof(opts));
	opts.OptLevel = 2;	/* no fault map at 0 */
	opts.MCJMM = LLVMCreateSimpleMCJITMemoryManager(&jm, alloc_code, alloc_data,
							 finalize, destroy);
	/* Takes the module and the memory manager, also on failure. */
	if (LLVMCreateMCJITCompilerForModule(&ee, mod, &opts, sizeof(opts), &msg)) {
		fprintf(stderr, "mcjit: %s\n", msg);
		return 1;
	}
	/* The first lookup compiles, relocates and finalizes. */
	int (*price_of)(int *) = (int (*)(int *))LLVMGetFunctionAddress(ee, "price_of");
	int (*set_price)(int *, int) = (int (*)(int *, int))LLVMGetFunctionAddress(ee, "set_price");

	if (!price_of || !set_price || !jm.faultmap) {
		fprintf(stderr, "mcjit: %s\n", jm.faultmap ? "no price_of or set_price"
			: "no " FL_FAULTMAP_SECTION " (was -enable-implicit-null-checks seen?)");
		return 1;
	}

	nfns = functions_of(ee, mod, &jm, fns, sizeof(fns) / sizeof(fns[0]));
	for (size_t i = 0; i < nfns; i++)
		printf("function %s: mcjit+%#llx, %llu bytes\n", fns[i].name,
		       (unsigned long long)(fns[i].start - jm.code_start),
		       (unsigned long long)fns[i].size);

	FL_OPTS(fl_jit_reg, reg, .name = "mcjit",
		.faultmap = jm.faultmap, .faultmap_size = jm.faultmap_size,
		.stackmap = jm.stackmap, .stackmap_size = jm.stackmap_size,
		.eh_frame = jm.eh_frame, .eh_frame_size = jm.eh_frame_size,
		.code_start = jm.code_start, .code_size = jm.code_end - jm.code_start,
		.functions = fns, .num_functions = nfns);
	id = fl_jit_register(&reg, &diag);
	if (id < 0) {
		fprintf(stderr, "mcjit: fl_jit_register: %s\n",
			id == -EINVAL ? diag.msg : strerror(-id));
		return 1;
	}

	int item = 42;

	printf("price_of(&item) = %d\n", price_of(&item));
	printf("price_of(NULL) = %d\n", price_of(NULL));
	printf("set_price(NULL, 7) = %d\n", set_price(NULL, 7));
	ret = set_price(&item, 7);
	printf("set_price(&item, 7) = %d, item = %d\n", ret, item);
	fl_site_for_each(print_site, &jm);
	fl_stats_get(&st);
	printf("faults claimed: %llu\n", (unsigned long long)st.claimed);

	fl_jit_unregister(id);		/* before the code goes away */
	LLVMDisposeExecutionEngine(ee);	/* calls destroy */
	return 0;
}
