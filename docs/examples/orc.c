// SPDX-License-Identifier: MIT
/*
 * docs/codegen.md's ORC example: an IR file compiled by ORC's LLJIT through
 * LLVM 14's C API, its implicit null checks registered with faultline, and
 * a null item priced through the fault.
 *
 *   orc price.ll
 *
 * LLVM 14's C API offers no memory-manager callbacks for ORC (OrcEE.h has
 * only LLVMOrcCreateRTDyldObjectLinkingLayerWithSectionMemoryManager, whose
 * memory manager shows no section names), so the sections cannot be
 * captured where they are loaded, as MCJIT's memory manager does
 * (mcjit.c).  What the C API does offer is the object transform layer:
 * every object passes through a transform before it is linked.  The
 * transform keeps a copy of the object; once the code is linked, the copy's
 * .llvm_faultmaps is relocated by hand: each FunctionAddress field gets the
 * runtime address of the function its relocation names, which the JIT's
 * lookup gives.  So every function with implicit checks must be a symbol
 * the JIT can look up (external linkage); this example refuses any other.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Core.h>
#include <llvm-c/Error.h>
#include <llvm-c/IRReader.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Object.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Support.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>

#include <faultline/discovery.h>
#include <faultline/dispatch.h>
#include <faultline/format.h>

#define MAX_FUNCTIONS 64

/* What the transform saw of the object, for after linking. */
struct captured {
	struct fl_elf *elf;		/* the object's copy, or NULL */
	int objects;
	/* The object's symbols with a size: the functions' lengths. */
	int nsyms;
	char *sym_name[MAX_FUNCTIONS];
	uint64_t sym_size[MAX_FUNCTIONS];
	char err[512];
};

static LLVMErrorRef fail(const char *msg)
{
	return LLVMCreateStringError(msg);
}

/*
 * The object transform: sees each object before it is linked, and hands it
 * on unchanged.  The buffer stays the caller's (we do not replace it), so
 * everything needed later is copied here.
 */
static LLVMErrorRef capture(void *ctx, LLVMMemoryBufferRef *obj)
{
	struct captured *c = ctx;
	const char *data = LLVMGetBufferStart(*obj);
	size_t size = LLVMGetBufferSize(*obj);
	struct fl_elf_section sec;
	struct fl_diag diag;
	LLVMSymbolIteratorRef si;
	LLVMBinaryRef bin;
	char *msg = NULL;
	int ret;

	if (++c->objects > 1) {
		/* One module, one object: a second would need a list here. */
		snprintf(c->err, sizeof(c->err), "more than one object");
		return fail(c->err);
	}
	ret = fl_elf_open_mem(data, size, NULL, &c->elf, &diag);
	if (ret < 0) {
		snprintf(c->err, sizeof(c->err), "object: %s", diag.msg);
		return fail(c->err);
	}
	if (fl_elf_section(c->elf, FL_SECTION_FAULTMAP, &sec) < 0)
		return NULL;	/* no implicit checks: nothing to register */

	bin = LLVMCreateBinary(*obj, NULL, &msg);
	if (!bin) {
		snprintf(c->err, sizeof(c->err), "object: %s", msg);
		LLVMDisposeMessage(msg);
		return fail(c->err);
	}
	si = LLVMObjectFileCopySymbolIterator(bin);
	for (; !LLVMObjectFileIsSymbolIteratorAtEnd(bin, si); LLVMMoveToNextSymbol(si)) {
		if (LLVMGetSymbolSize(si) == 0 || c->nsyms == MAX_FUNCTIONS)
			continue;
		c->sym_name[c->nsyms] = strdup(LLVMGetSymbolName(si));
		c->sym_size[c->nsyms++] = LLVMGetSymbolSize(si);
	}
	LLVMDisposeSymbolIterator(si);
	LLVMDisposeBinary(bin);
	return NULL;
}

static uint64_t symbol_size(const struct captured *c, const char *name)
{
	for (int i = 0; i < c->nsyms; i++)
		if (c->sym_name[i] && strcmp(c->sym_name[i], name) == 0)
			return c->sym_size[i];
	return 0;
}

/*
 * The captured .llvm_faultmaps, relocated to where the JIT put each
 * function: returns a malloc'ed copy with *size and the code's span set,
 * or NULL with c->err set.
 */
static void *relocated_faultmap(LLVMOrcLLJITRef jit, struct captured *c, size_t *size,
				uint64_t *code_start, uint64_t *code_size)
{
	struct fl_faultmap_cursor cur;
	struct fl_faultmap_event ev;
	struct fl_elf_section sec;
	struct fl_diag diag;
	uint64_t lo = UINT64_MAX, hi = 0;
	unsigned char *copy;
	int ret;

	if (fl_elf_section(c->elf, FL_SECTION_FAULTMAP, &sec) < 0) {
		snprintf(c->err, sizeof(c->err), "no %s in the object", FL_FAULTMAP_SECTION);
		return NULL;
	}
	copy = malloc(sec.size);
	if (!copy) {
		snprintf(c->err, sizeof(c->err), "out of memory");
		return NULL;
	}
	memcpy(copy, sec.data, sec.size);
	fl_faultmap_cursor_init(&cur, sec.data, sec.size, sec.parse_flags, &diag);
	while ((ret = fl_faultmap_next(&cur, &ev)) > 0) {
		struct fl_elf_reloc rel;
		LLVMOrcExecutorAddress addr = 0;
		LLVMErrorRef err;
		uint64_t len;

		if (ev.type != FL_FM_FUNCTION)
			continue;
		if (fl_elf_reloc(c->elf, FL_SECTION_FAULTMAP, ev.function.address_offset, &rel) < 0 ||
		    !rel.function) {
			snprintf(c->err, sizeof(c->err), "function %u: no relocation names it",
				 ev.function.index);
			goto fail;
		}
		err = LLVMOrcLLJITLookup(jit, &addr, rel.function);
		if (err) {
			char *m = LLVMGetErrorMessage(err);

			snprintf(c->err, sizeof(c->err),
				 "%s: %s (a function with implicit checks needs external linkage)",
				 rel.function, m);
			LLVMDisposeErrorMessage(m);
			goto fail;
		}
		len = symbol_size(c, rel.function);
		if (len == 0) {
			snprintf(c->err, sizeof(c->err), "%s: no size in the object", rel.function);
			goto fail;
		}
		/* Fault maps are little-endian (x86-64): store as the loader would. */
		memcpy(copy + ev.function.address_offset, &addr, sizeof(addr));
		lo = addr < lo ? addr : lo;
		hi = addr + len > hi ? addr + len : hi;
	}
	if (ret < 0) {
		snprintf(c->err, sizeof(c->err), "%s", diag.msg);
		goto fail;
	}
	*size = sec.size;
	*code_start = lo;
	*code_size = hi > lo ? hi - lo : 0;
	return copy;
fail:
	free(copy);
	return NULL;
}

static int print_site(const struct fl_site *s, void *ctx)
{
	uint64_t code_start = *(const uint64_t *)ctx;

	if (strcmp(s->module_name, "orc") == 0)
		printf("site %s+%#llx: %s, %llu fault(s)\n", s->module_name,
		       (unsigned long long)(s->faulting_pc - code_start),
		       fl_fault_kind_name(s->kind), (unsigned long long)s->faults);
	return 0;
}

static int die_llvm(const char *what, LLVMErrorRef err)
{
	char *m = LLVMGetErrorMessage(err);

	fprintf(stderr, "orc: %s: %s\n", what, m);
	LLVMDisposeErrorMessage(m);
	return 1;
}

int main(int argc, char **argv)
{
	/* The pass is off unless asked for, through LLVM's command line. */
	const char *llvm_argv[] = { "orc", "-enable-implicit-null-checks" };
	struct captured cap = { 0 };
	struct fl_stats st = { .sz = sizeof(st) };
	struct fl_diag diag;
	LLVMOrcThreadSafeContextRef tsctx;
	LLVMOrcThreadSafeModuleRef tsm;
	LLVMOrcLLJITBuilderRef builder;
	LLVMOrcLLJITRef jit;
	LLVMTargetMachineRef tm;
	LLVMMemoryBufferRef buf;
	LLVMModuleRef mod;
	LLVMTargetRef target;
	LLVMErrorRef err;
	LLVMOrcExecutorAddress price_addr, set_addr;
	uint64_t code_start, code_size;
	size_t fm_size;
	void *fm;
	char *msg = NULL, *triple;
	int id, ret;

	if (argc != 2) {
		fprintf(stderr, "usage: orc FILE.ll\n");
		return 2;
	}
	ret = fl_init(NULL);
	if (ret < 0) {
		fprintf(stderr, "orc: fl_init: %s\n", strerror(-ret));
		return 1;
	}
	LLVMInitializeNativeTarget();
	LLVMInitializeNativeAsmPrinter();
	LLVMParseCommandLineOptions(2, llvm_argv, NULL);

	/*
	 * The target machine says the optimization level: implicit null checks
	 * need at least -O1 (at -O0 there is no fault map).
	 */
	triple = LLVMGetDefaultTargetTriple();
	if (LLVMGetTargetFromTriple(triple, &target, &msg)) {
		fprintf(stderr, "orc: %s: %s\n", triple, msg);
		return 1;
	}
	tm = LLVMCreateTargetMachine(target, triple, "", "", LLVMCodeGenLevelDefault,
				     LLVMRelocDefault, LLVMCodeModelJITDefault);
	LLVMDisposeMessage(triple);
	builder = LLVMOrcCreateLLJITBuilder();
	/* Both take ownership of what they are given. */
	LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(
		builder, LLVMOrcJITTargetMachineBuilderCreateFromTargetMachine(tm));
	err = LLVMOrcCreateLLJIT(&jit, builder);
	if (err)
		return die_llvm("LLJIT", err);
	LLVMOrcObjectTransformLayerSetTransform(LLVMOrcLLJITGetObjTransformLayer(jit),
						capture, &cap);

	tsctx = LLVMOrcCreateNewThreadSafeContext();
	if (LLVMCreateMemoryBufferWithContentsOfFile(argv[1], &buf, &msg) ||
	    /* Takes the buffer, in success and failure. */
	    LLVMParseIRInContext(LLVMOrcThreadSafeContextGetContext(tsctx), buf, &mod, &msg)) {
		fprintf(stderr, "orc: %s: %s\n", argv[1], msg);
		return 1;
	}
	tsm = LLVMOrcCreateNewThreadSafeModule(mod, tsctx);
	LLVMOrcDisposeThreadSafeContext(tsctx);	/* the module keeps it */
	err = LLVMOrcLLJITAddLLVMIRModule(jit, LLVMOrcLLJITGetMainJITDylib(jit), tsm);
	if (err)
		return die_llvm("add module", err);

	/* The first lookup compiles and links: the transform has run after it. */
	err = LLVMOrcLLJITLookup(jit, &price_addr, "price_of");
	if (err)
		return die_llvm("price_of", err);
	err = LLVMOrcLLJITLookup(jit, &set_addr, "set_price");
	if (err)
		return die_llvm("set_price", err);
	if (cap.err[0]) {
		fprintf(stderr, "orc: %s\n", cap.err);
		return 1;
	}
	fm = relocated_faultmap(jit, &cap, &fm_size, &code_start, &code_size);
	if (!fm) {
		fprintf(stderr, "orc: %s\n", cap.err);
		return 1;
	}

	FL_OPTS(fl_jit_reg, reg, .name = "orc", .faultmap = fm, .faultmap_size = fm_size,
		.code_start = code_start, .code_size = code_size);
	id = fl_jit_register(&reg, &diag);
	free(fm);	/* copied by fl_jit_register */
	if (id < 0) {
		fprintf(stderr, "orc: fl_jit_register: %s\n", id == -EINVAL ? diag.msg : strerror(-id));
		return 1;
	}

	int (*price_of)(int *) = (int (*)(int *))price_addr;
	int (*set_price)(int *, int) = (int (*)(int *, int))set_addr;
	int item = 42;

	printf("price_of(&item) = %d\n", price_of(&item));
	printf("price_of(NULL) = %d\n", price_of(NULL));
	printf("set_price(NULL, 7) = %d\n", set_price(NULL, 7));
	ret = set_price(&item, 7);
	printf("set_price(&item, 7) = %d, item = %d\n", ret, item);
	fl_site_for_each(print_site, &code_start);
	fl_stats_get(&st);
	printf("faults claimed: %llu\n", (unsigned long long)st.claimed);

	fl_jit_unregister(id);	/* before the code goes away */
	LLVMOrcDisposeLLJIT(jit);
	fl_elf_close(cap.elf);
	for (int i = 0; i < cap.nsyms; i++)
		free(cap.sym_name[i]);
	return 0;
}
