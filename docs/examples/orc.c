// SPDX-License-Identifier: MIT
/*
 * docs/codegen.md's ORC example: an IR file compiled by ORC's LLJIT through
 * LLVM 14's C API, its implicit null checks registered with faultline, and
 * a null item priced through the fault.
 *
 *   orc price.ll [points.ll]
 *
 * With points.ll too, it also rewrites a patch point in the JIT code: the
 * stack map is relocated and registered as the fault map is.
 *
 * LLVM 14's C API offers no memory-manager callbacks for ORC (OrcEE.h has
 * only LLVMOrcCreateRTDyldObjectLinkingLayerWithSectionMemoryManager, whose
 * memory manager shows no section names), so the sections cannot be
 * captured where they are loaded, as MCJIT's memory manager does
 * (mcjit.c).  What the C API does offer is the object transform layer:
 * every object passes through a transform before it is linked.  The
 * transform keeps a copy of each object; once its code is linked, the
 * copy's .llvm_faultmaps and .llvm_stackmaps are relocated by hand: each
 * function address field gets the runtime address of the function its
 * relocation names, which the JIT's lookup gives.  So every function a
 * map names must be a symbol the JIT can look up (external linkage); this
 * example refuses any other.  Those functions are registered too, with
 * their sizes from the object's symbols, so that faultlined names the
 * sites.
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
#include <faultline/patch.h>
#include <faultline/points.h>

#define MAX_FUNCTIONS 64
#define MAX_OBJECTS 8

/* What the transform saw of one object, for after linking. */
struct object {
	struct fl_elf *elf;		/* the object's copy */
	/* The object's symbols with a size: the functions' lengths. */
	int nsyms;
	char *sym_name[MAX_FUNCTIONS];
	uint64_t sym_size[MAX_FUNCTIONS];
	int registered;			/* its fl_jit_register id, 0 before */
};

struct captured {
	int nobjects;
	struct object obj[MAX_OBJECTS];
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
	struct object *o;
	char *msg = NULL;
	int ret;

	if (c->nobjects == MAX_OBJECTS) {
		snprintf(c->err, sizeof(c->err), "more than %d objects", MAX_OBJECTS);
		return fail(c->err);
	}
	o = &c->obj[c->nobjects];
	ret = fl_elf_open_mem(data, size, NULL, &o->elf, &diag);
	if (ret < 0) {
		snprintf(c->err, sizeof(c->err), "object: %s", diag.msg);
		return fail(c->err);
	}
	if (fl_elf_section(o->elf, FL_SECTION_FAULTMAP, &sec) < 0 &&
	    fl_elf_section(o->elf, FL_SECTION_STACKMAP, &sec) < 0) {
		fl_elf_close(o->elf);	/* no maps: nothing to register */
		o->elf = NULL;
		return NULL;
	}
	c->nobjects++;

	bin = LLVMCreateBinary(*obj, NULL, &msg);
	if (!bin) {
		snprintf(c->err, sizeof(c->err), "object: %s", msg);
		LLVMDisposeMessage(msg);
		return fail(c->err);
	}
	si = LLVMObjectFileCopySymbolIterator(bin);
	for (; !LLVMObjectFileIsSymbolIteratorAtEnd(bin, si); LLVMMoveToNextSymbol(si)) {
		if (LLVMGetSymbolSize(si) == 0 || o->nsyms == MAX_FUNCTIONS)
			continue;
		o->sym_name[o->nsyms] = strdup(LLVMGetSymbolName(si));
		o->sym_size[o->nsyms++] = LLVMGetSymbolSize(si);
	}
	LLVMDisposeSymbolIterator(si);
	LLVMDisposeBinary(bin);
	return NULL;
}

/* The index of o's symbol name (one with a size), or -1. */
static int symbol(const struct object *o, const char *name)
{
	for (int i = 0; i < o->nsyms; i++)
		if (o->sym_name[i] && strcmp(o->sym_name[i], name) == 0)
			return i;
	return -1;
}

/*
 * The functions to register, for their names in faultlined: each function
 * a map names, where the JIT put it, as long as the object's symbol says.
 */
struct functions {
	int n;
	struct fl_jit_function v[MAX_FUNCTIONS];
};

static void add_function(struct functions *f, const char *name, uint64_t start, uint64_t size)
{
	for (int i = 0; i < f->n; i++)
		if (f->v[i].start == start)
			return;		/* named by both maps */
	if (f->n < MAX_FUNCTIONS)
		f->v[f->n++] = (struct fl_jit_function){ name, start, size };
}

/*
 * The next function address field of a fault map or stack map: returns 1
 * with *address_offset set, 0 at the end, -1 with the cursor's diag filled
 * in.
 */
static int next_function(enum fl_section_kind kind, void *cursor, size_t *address_offset)
{
	int ret;

	if (kind == FL_SECTION_FAULTMAP) {
		struct fl_faultmap_event ev;

		while ((ret = fl_faultmap_next(cursor, &ev)) > 0)
			if (ev.type == FL_FM_FUNCTION) {
				*address_offset = ev.function.address_offset;
				return 1;
			}
	} else {
		struct fl_stackmap_event ev;

		while ((ret = fl_stackmap_next(cursor, &ev)) > 0)
			if (ev.type == FL_SM_FUNCTION) {
				*address_offset = ev.function.address_offset;
				return 1;
			}
	}
	return ret < 0 ? -1 : 0;
}

/*
 * o's map section kind, relocated to where the JIT put each function:
 * returns a malloc'ed copy with *size set, [*lo, *hi) widened to the
 * functions it names and those functions added to fns, or NULL: with
 * *size 0 when o has no such section, else with c->err set.
 */
static void *relocated(LLVMOrcLLJITRef jit, struct captured *c, const struct object *o,
		       enum fl_section_kind kind, size_t *size, uint64_t *lo, uint64_t *hi,
		       struct functions *fns)
{
	union {
		struct fl_faultmap_cursor fm;
		struct fl_stackmap_cursor sm;
	} cur;
	struct fl_elf_section sec;
	struct fl_diag diag;
	size_t address_offset;
	unsigned char *copy;
	int ret;

	*size = 0;
	if (fl_elf_section(o->elf, kind, &sec) < 0)
		return NULL;
	copy = malloc(sec.size);
	if (!copy) {
		snprintf(c->err, sizeof(c->err), "out of memory");
		return NULL;
	}
	memcpy(copy, sec.data, sec.size);
	if (kind == FL_SECTION_FAULTMAP)
		fl_faultmap_cursor_init(&cur.fm, sec.data, sec.size, sec.parse_flags, &diag);
	else
		fl_stackmap_cursor_init(&cur.sm, sec.data, sec.size, sec.parse_flags, &diag);
	while ((ret = next_function(kind, &cur, &address_offset)) > 0) {
		struct fl_elf_reloc rel;
		LLVMOrcExecutorAddress addr = 0;
		LLVMErrorRef err;
		uint64_t len;
		int sym;

		if (fl_elf_reloc(o->elf, kind, address_offset, &rel) < 0 || !rel.function) {
			snprintf(c->err, sizeof(c->err), "%s+%#zx: no relocation names a function",
				 fl_section_kind_name(kind), address_offset);
			goto fail;
		}
		err = LLVMOrcLLJITLookup(jit, &addr, rel.function);
		if (err) {
			char *m = LLVMGetErrorMessage(err);

			snprintf(c->err, sizeof(c->err),
				 "%s: %s (a function a map names needs external linkage)",
				 rel.function, m);
			LLVMDisposeErrorMessage(m);
			goto fail;
		}
		sym = symbol(o, rel.function);
		len = sym < 0 ? 0 : o->sym_size[sym];
		if (len == 0) {
			snprintf(c->err, sizeof(c->err), "%s: no size in the object", rel.function);
			goto fail;
		}
		/* Both maps are little-endian here (x86-64): store as a loader would. */
		memcpy(copy + address_offset, &addr, sizeof(addr));
		*lo = addr < *lo ? addr : *lo;
		*hi = addr + len > *hi ? addr + len : *hi;
		add_function(fns, o->sym_name[sym], addr, len);
	}
	if (ret < 0) {
		snprintf(c->err, sizeof(c->err), "%s", diag.msg);
		goto fail;
	}
	*size = sec.size;
	return copy;
fail:
	free(copy);
	return NULL;
}

/*
 * Registers every object the transform captured and nobody registered
 * yet.  Returns 0, or -1 with c->err set.
 */
static int register_new(LLVMOrcLLJITRef jit, struct captured *c)
{
	for (int i = 0; i < c->nobjects; i++) {
		struct object *o = &c->obj[i];
		uint64_t lo = UINT64_MAX, hi = 0;
		struct functions fns = { 0 };
		size_t fm_size, sm_size;
		struct fl_diag diag;
		void *fm, *sm;
		int id;

		if (o->registered)
			continue;
		fm = relocated(jit, c, o, FL_SECTION_FAULTMAP, &fm_size, &lo, &hi, &fns);
		if (!fm && fm_size == 0 && c->err[0])
			return -1;
		sm = relocated(jit, c, o, FL_SECTION_STACKMAP, &sm_size, &lo, &hi, &fns);
		if (!sm && sm_size == 0 && c->err[0]) {
			free(fm);
			return -1;
		}

		FL_OPTS(fl_jit_reg, reg, .name = "orc", .faultmap = fm, .faultmap_size = fm_size,
			.stackmap = sm, .stackmap_size = sm_size,
			.code_start = lo, .code_size = hi > lo ? hi - lo : 0,
			.functions = fns.v, .num_functions = (size_t)fns.n);
		id = fl_jit_register(&reg, &diag);
		free(fm);	/* copied by fl_jit_register */
		free(sm);
		if (id < 0) {
			/* diag.msg names the function already. */
			if (id == -EINVAL)
				snprintf(c->err, sizeof(c->err), "%s", diag.msg);
			else
				snprintf(c->err, sizeof(c->err), "fl_jit_register: %s", strerror(-id));
			return -1;
		}
		o->registered = id;
	}
	return 0;
}

static int print_site(const struct fl_site *s, void *ctx)
{
	/* Offsets from price_of, the first function of price.ll. */
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

/* Compiles and links file into the JIT's main library. */
static int add_module(LLVMOrcLLJITRef jit, const char *file)
{
	LLVMOrcThreadSafeContextRef tsctx = LLVMOrcCreateNewThreadSafeContext();
	LLVMOrcThreadSafeModuleRef tsm;
	LLVMMemoryBufferRef buf;
	LLVMModuleRef mod;
	LLVMErrorRef err;
	char *msg = NULL;

	if (LLVMCreateMemoryBufferWithContentsOfFile(file, &buf, &msg) ||
	    /* Takes the buffer, in success and failure. */
	    LLVMParseIRInContext(LLVMOrcThreadSafeContextGetContext(tsctx), buf, &mod, &msg)) {
		fprintf(stderr, "orc: %s: %s\n", file, msg);
		return 1;
	}
	tsm = LLVMOrcCreateNewThreadSafeModule(mod, tsctx);
	LLVMOrcDisposeThreadSafeContext(tsctx);	/* the module keeps it */
	err = LLVMOrcLLJITAddLLVMIRModule(jit, LLVMOrcLLJITGetMainJITDylib(jit), tsm);
	return err ? die_llvm(file, err) : 0;
}

/*
 * The address of a function, compiled and linked by the lookup if it was
 * not, and the maps of what was linked registered.  Returns 0 with *addr
 * set, or 1 having said why.
 */
static int function(LLVMOrcLLJITRef jit, struct captured *c, const char *name,
		    LLVMOrcExecutorAddress *addr)
{
	LLVMErrorRef err = LLVMOrcLLJITLookup(jit, addr, name);

	if (err)
		return die_llvm(name, err);
	/* The transform ran during the lookup, for whatever it linked. */
	if (c->err[0] || register_new(jit, c) < 0) {
		fprintf(stderr, "orc: %s\n", c->err);
		return 1;
	}
	return 0;
}

/* Patch point 7 of points.ll in JIT code: rewritten, then reset. */
static int patch_discount(LLVMOrcLLJITRef jit, struct captured *c)
{
	/* mov %rdi,%rax; shr %rax: the price's first argument, halved. */
	static const uint8_t half[] = { 0x48, 0x89, 0xf8, 0x48, 0xd1, 0xe8 };
	LLVMOrcExecutorAddress addr;
	struct fl_diag diag;
	int64_t (*discount)(int64_t);

	if (function(jit, c, "discount", &addr))
		return 1;
	discount = (int64_t (*)(int64_t))addr;
	if (fl_patch_enable(&diag) < 0)
		goto fail;
	printf("discount(100) = %lld\n", (long long)discount(100));
	/* By ID (pc NULL): 7 is unique in the process. */
	if (fl_patchpoint_write(7, NULL, half, sizeof(half), NULL, &diag) < 0)
		goto fail;
	printf("patched: discount(100) = %lld\n", (long long)discount(100));
	if (fl_patchpoint_reset(7, NULL, &diag) < 0)
		goto fail;
	printf("reset: discount(100) = %lld\n", (long long)discount(100));
	return 0;
fail:
	fprintf(stderr, "orc: %s\n", diag.msg);
	return 1;
}

int main(int argc, char **argv)
{
	/* The pass is off unless asked for, through LLVM's command line. */
	const char *llvm_argv[] = { "orc", "-enable-implicit-null-checks" };
	struct captured cap = { 0 };
	struct fl_stats st = { .sz = sizeof(st) };
	LLVMOrcLLJITBuilderRef builder;
	LLVMOrcLLJITRef jit;
	LLVMTargetMachineRef tm;
	LLVMTargetRef target;
	LLVMErrorRef err;
	LLVMOrcExecutorAddress price_addr, set_addr;
	char *msg = NULL, *triple;
	int ret;

	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: orc price.ll [points.ll]\n");
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
	for (int i = 1; i < argc; i++)
		if (add_module(jit, argv[i]))
			return 1;

	if (function(jit, &cap, "price_of", &price_addr) ||
	    function(jit, &cap, "set_price", &set_addr))
		return 1;

	int (*price_of)(int *) = (int (*)(int *))price_addr;
	int (*set_price)(int *, int) = (int (*)(int *, int))set_addr;
	int item = 42;

	printf("price_of(&item) = %d\n", price_of(&item));
	printf("price_of(NULL) = %d\n", price_of(NULL));
	printf("set_price(NULL, 7) = %d\n", set_price(NULL, 7));
	ret = set_price(&item, 7);
	printf("set_price(&item, 7) = %d, item = %d\n", ret, item);
	fl_site_for_each(print_site, &price_addr);
	fl_stats_get(&st);
	printf("faults claimed: %llu\n", (unsigned long long)st.claimed);
	if (argc == 3 && patch_discount(jit, &cap))
		return 1;

	/* Unregistered before the code goes away. */
	for (int i = 0; i < cap.nobjects; i++) {
		if (cap.obj[i].registered)
			fl_jit_unregister(cap.obj[i].registered);
		fl_elf_close(cap.obj[i].elf);
		for (int k = 0; k < cap.obj[i].nsyms; k++)
			free(cap.obj[i].sym_name[k]);
	}
	LLVMOrcDisposeLLJIT(jit);
	return 0;
}
