/* SPDX-License-Identifier: MIT */
/*
 * faultline discovery layer: where the .llvm_faultmaps and .llvm_stackmaps
 * sections are, in ELF files and in the modules loaded in this process, and
 * the address each function address field of those sections stands for.
 *
 * Two halves:
 *
 *  - Files (struct fl_elf): an ELF file (ET_REL, ET_EXEC or ET_DYN,
 *    64-bit x86-64) opened from a path or a memory buffer with libelf.
 *    Gives the sections' bytes, their byte order, and for each function
 *    address field the relocation that applies to it (ET_REL: the symbol +
 *    addend; linked files: the dynamic relocation), the link-time address
 *    and the function's name.  Nothing in a file is trusted: any input
 *    yields a struct fl_elf or -errno with a diagnostic.
 *
 *  - Loaded modules (struct fl_module): for every module of this process
 *    (dl_iterate_phdr), the sections as mapped in memory and the RUNTIME
 *    address of every function in them, checked to fall in an executable
 *    segment of that module.  This is what the handler table is built from.
 *
 * Runtime addresses.  The function addresses in the sections are absolute
 * 64-bit values (R_X86_64_64 in the object file).  What a loaded module holds
 * in memory depends on how it was linked (measured with GNU ld 2.40, lld 14
 * and glibc 2.36):
 *   gcc -no-pie (ET_EXEC)           link-time value, no dynamic relocation;
 *                                   load bias 0
 *   GNU ld -pie, -shared            R_X86_64_RELATIVE (or R_X86_64_64 against
 *   (DT_TEXTREL)                    a preemptible symbol in -shared) against
 *                                   the read-only section: ld.so relocates it,
 *                                   memory holds the runtime address
 *   GNU ld -z pack-relative-relocs  as above, some of them in DT_RELR
 *   lld -pie                        link-time value, NO dynamic relocation
 *                                   (lld 14 takes the "canonical PLT" path for
 *                                   the STT_FUNC symbols): runtime = value +
 *                                   load bias.  Only for global default-
 *                                   visibility functions: a hidden or internal
 *                                   one makes the link fail
 *   lld -pie/-shared -z notext      0 in the file, R_X86_64_RELATIVE or
 *                                   R_X86_64_64: ld.so relocates it
 *   lld -shared without -z notext   does not link
 * So discovery never guesses from the link mode: a field named by one of the
 * module's dynamic relocations (DT_RELA, DT_REL, DT_RELR) holds the runtime
 * address; any other field holds a link-time value that needs the load bias.
 * Either way the result must fall in one of the module's executable PT_LOAD
 * segments, or the module is rejected.
 *
 * Errors are negative errno values; a struct fl_diag, when one is passed,
 * says which file, section, table or function is wrong:
 *   -ENOEXEC    not an ELF file, a 32-bit ELF file, not x86-64, not ET_REL,
 *               ET_EXEC or ET_DYN
 *   -EMSGSIZE   the file is truncated: a header or section reaches past its end
 *   -EINVAL     malformed: SHT_NOBITS map section, duplicate sections, bad
 *               relocation section, ...; malformed map contents (format layer)
 *   -ENOENT     no such section / relocation / module
 *   -ERANGE     (modules) a function address outside the module's
 *               executable segments
 *   -ESTALE     (modules) the file on disk is not the one that was loaded
 *   -ENOMEM     out of memory
 *   and the errno of open(2) when a file cannot be opened.
 *
 * Thread-safety: every function here is thread-safe; objects are immutable
 * once returned.  Opening and discovering are not async-signal-safe (libelf,
 * malloc and dl_iterate_phdr are not), so they are never used in signal
 * context: the dispatch layer copies what it needs (fl_module's functions)
 * into its own tables beforehand.  The accessors of an opened object only
 * read it and are async-signal-safe where stated.
 * The library never prints.
 */
#ifndef FAULTLINE_DISCOVERY_H
#define FAULTLINE_DISCOVERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <faultline/format.h>
#include <faultline/opts.h>

#ifdef __cplusplus
extern "C" {
#endif

enum fl_section_kind {
	FL_SECTION_FAULTMAP = 0,	/* .llvm_faultmaps */
	FL_SECTION_STACKMAP = 1,	/* .llvm_stackmaps */
};
#define FL_SECTION_KINDS 2

/* An address range [start, end). */
struct fl_range {
	uint64_t start;
	uint64_t end;
};

/* Returns ".llvm_faultmaps" / ".llvm_stackmaps", or NULL.  Async-signal-safe. */
const char *fl_section_kind_name(enum fl_section_kind kind);

/* ------------------------------------------------------------------------
 * ELF files
 */

enum {
	/*
	 * Accept a 64-bit ELF file of any e_machine (to read, e.g., the maps
	 * of an AArch64 or big-endian s390x object).  Relocation types are
	 * then reported as they are but fl_elf_function_address only
	 * interprets x86-64 ones.
	 */
	FL_ELF_ANY_MACHINE = 1u << 0,
	/*
	 * Also read the bytes of the file's code at open, for fl_elf_code
	 * (the file is not kept open): the SHF_EXECINSTR sections of an
	 * ET_REL file, the executable PT_LOAD segments of a linked one.
	 */
	FL_ELF_CODE = 1u << 1,
	/*
	 * fl_elf_open maps the file instead of reading it: a section's bytes
	 * are read from the disk (or the page cache) only when they are
	 * used, so a tool that prints one map section of a large file reads
	 * only that one.  The mapping lasts until fl_elf_close.  The price:
	 * if the file is truncated while it is open, touching a byte past
	 * its new end raises SIGBUS.  For tools, not for a process whose
	 * SIGBUS handler has other work.  fl_elf_open_mem ignores it.
	 */
	FL_ELF_MAP = 1u << 2,
	/*
	 * Do not read the symbol tables and relocations, for a caller that
	 * wants the maps' bytes only (a million functions' symbols and
	 * relocations take longer to read than their fault map):
	 * fl_elf_reloc and fl_elf_function_address then return -ENODATA,
	 * fl_elf_function_name and fl_elf_function_containing NULL, and a
	 * malformed relocation section is not noticed.
	 */
	FL_ELF_NO_SYMBOLS = 1u << 3,
};

/*
 * Options: set sz to sizeof(struct fl_elf_opts) and zero what is unused
 * (e.g. struct fl_elf_opts o = { .sz = sizeof(o) };).  NULL means defaults.
 */
struct fl_elf_opts {
	size_t sz;
	uint32_t flags;		/* FL_ELF_* */
};

struct fl_elf;

/*
 * Opens the ELF file at path.  Returns 0 with *out set on success (close with
 * fl_elf_close), -errno on failure with *diag filled in (diag may be NULL).
 * A file without either map section opens fine; a map section that is
 * present but unusable (SHT_NOBITS, past the end of the file, twice) is an
 * error.  The file is read, not kept mapped (unless FL_ELF_MAP).
 * Thread-safe; not async-signal-safe (libelf, malloc).
 */
int fl_elf_open(const char *path, const struct fl_elf_opts *opts,
		struct fl_elf **out, struct fl_diag *diag);

/*
 * As fl_elf_open, for an ELF image of size bytes at data (copied: data may
 * be freed on return).  Any bytes are acceptable input: this never crashes,
 * hangs or leaks.  Thread-safe; not async-signal-safe.
 */
int fl_elf_open_mem(const void *data, size_t size, const struct fl_elf_opts *opts,
		    struct fl_elf **out, struct fl_diag *diag);

/* Frees elf and everything returned from it.  NULL is fine.  Not async-signal-safe. */
void fl_elf_close(struct fl_elf *elf);

/* Returns e_type (ET_REL, ET_EXEC or ET_DYN).  Thread-safe, async-signal-safe. */
uint16_t fl_elf_type(const struct fl_elf *elf);
/*
 * Returns e_machine (EM_X86_64 unless FL_ELF_ANY_MACHINE).  Thread-safe,
 * async-signal-safe.
 */
uint16_t fl_elf_machine(const struct fl_elf *elf);
/*
 * Returns the flags the format layer needs for this file's maps:
 * FL_PARSE_BIG_ENDIAN for an ELFDATA2MSB file, else 0.  Thread-safe,
 * async-signal-safe.
 */
uint32_t fl_elf_parse_flags(const struct fl_elf *elf);

struct fl_elf_section {
	const void *data;	/* the section's bytes, valid until fl_elf_close */
	size_t size;
	uint64_t addr;		/* sh_addr: link-time address (0 in ET_REL) */
	uint64_t offset;	/* sh_offset: where it is in the file */
	uint64_t flags;		/* sh_flags (SHF_ALLOC: loaded in memory) */
	uint32_t index;		/* section header index */
	uint32_t parse_flags;	/* = fl_elf_parse_flags(elf) */
};

/*
 * Returns 0 with *sec filled in, -ENOENT if the file has no such section,
 * -EINVAL for a bad kind.  Thread-safe, async-signal-safe (the accessors
 * below only read what fl_elf_open prepared).
 */
int fl_elf_section(const struct fl_elf *elf, enum fl_section_kind kind,
		   struct fl_elf_section *sec);

struct fl_elf_reloc {
	uint64_t offset;	/* section offset of the relocated field */
	uint32_t type;		/* R_X86_64_* (or the machine's) */
	bool dynamic;		/* a dynamic relocation of a linked file */
	int64_t addend;		/* r_addend; SHT_REL: the value in the field */
	/*
	 * The symbol: its name (for an STT_SECTION symbol, the section's
	 * name; "" for symbol 0), st_value and st_shndx.  Strings are valid
	 * until fl_elf_close.
	 */
	const char *symbol;
	uint64_t symbol_value;
	uint16_t symbol_section;
	/*
	 * The STT_FUNC symbol at symbol + addend when there is one (e.g.
	 * "foo" for a reference to ".text" + 0x20), else NULL.
	 */
	const char *function;
};

/*
 * The relocation that applies to the 8-byte field at section offset offset
 * of the map section kind: for ET_REL, from the section's SHT_RELA/SHT_REL
 * section; for ET_EXEC/ET_DYN, from the file's dynamic relocations (the
 * SHF_ALLOC ones, r_offset = sh_addr + offset).  offset is the
 * address_offset of the format layer's function events.
 * Returns 0 with *rel filled in, -ENOENT if no relocation applies there (or
 * no such section), -EINVAL for a bad kind, -ENODATA when elf was opened
 * with FL_ELF_NO_SYMBOLS.  Thread-safe, async-signal-safe.
 */
int fl_elf_reloc(const struct fl_elf *elf, enum fl_section_kind kind,
		 size_t offset, struct fl_elf_reloc *rel);

/*
 * The link-time address of the function whose address field is at section
 * offset address_offset (stored: the value the format layer read there), for
 * ET_EXEC and ET_DYN: the value a dynamic relocation would give it (addend
 * for R_X86_64_RELATIVE, st_value + addend for R_X86_64_64 against a
 * defined symbol), else stored.
 * Returns 0 with *addr set, -EOPNOTSUPP for ET_REL (use fl_elf_reloc),
 * -ENXIO for a relocation against an undefined symbol or of a type it does
 * not know, -ENOENT if no such section, -EINVAL for a bad kind or an offset
 * past the section, -ENODATA when elf was opened with FL_ELF_NO_SYMBOLS.
 * Thread-safe, async-signal-safe.
 */
int fl_elf_function_address(const struct fl_elf *elf, enum fl_section_kind kind,
			    size_t address_offset, uint64_t stored, uint64_t *addr);

/*
 * The name of the function whose address field is at section offset
 * address_offset: ET_REL through its relocation, linked files through the
 * STT_FUNC symbol (.symtab, else .dynsym) at fl_elf_function_address.
 * Returns the name (valid until fl_elf_close), or NULL if unknown.
 * Thread-safe, async-signal-safe.
 */
const char *fl_elf_function_name(const struct fl_elf *elf, enum fl_section_kind kind,
				 size_t address_offset, uint64_t stored);

/*
 * The function of a linked file (ET_EXEC or ET_DYN) containing link-time
 * address addr: the STT_FUNC symbol (.symtab, else .dynsym) with the
 * greatest value at or below addr whose st_size covers it (one without a
 * size runs up to the next symbol).  Returns its name (valid until
 * fl_elf_close) with *offset = addr - its value, or NULL (also for ET_REL).
 * Thread-safe, async-signal-safe.
 */
const char *fl_elf_function_containing(const struct fl_elf *elf, uint64_t addr,
				       uint64_t *offset);

/*
 * The link-time address of byte file_offset of the file, through the
 * PT_LOAD segment whose file bytes hold it (e.g. to turn an offset from
 * /proc/PID/maps into a symbol address).  Returns 0 with *addr set, or
 * -ENOENT when no segment holds it.  Thread-safe, async-signal-safe.
 */
int fl_elf_file_address(const struct fl_elf *elf, uint64_t file_offset, uint64_t *addr);

/* A piece of a file's code, as the file holds it (before any relocation). */
struct fl_elf_code {
	const void *data;	/* the bytes, valid until fl_elf_close */
	size_t size;
	/*
	 * The link-time address of data[0]: a segment's p_vaddr, an ET_REL
	 * section's sh_addr (usually 0, so that addresses are offsets in it).
	 */
	uint64_t addr;
	uint32_t section;	/* ET_REL: the section's index; linked files: 0 */
};

/*
 * The code that holds address addr.  In a linked file (ET_EXEC, ET_DYN):
 * the executable PT_LOAD segment whose file bytes hold link-time address
 * addr (section is ignored).  In an ET_REL file: the SHF_EXECINSTR
 * SHT_PROGBITS section of index section (a relocation's symbol_section),
 * addr an address in it (sh_addr + offset; symbol_value + addend of a
 * relocation against a symbol of that section).
 * Returns 0 with *code filled in, -ENOENT when no such code holds addr,
 * -ENODATA when elf was opened without FL_ELF_CODE.  Thread-safe,
 * async-signal-safe.
 */
int fl_elf_code(const struct fl_elf *elf, uint32_t section, uint64_t addr,
		struct fl_elf_code *code);

/*
 * The link-time addresses a linked file's PT_LOAD segments span when
 * loaded, page-aligned (4 KiB): the lowest p_vaddr rounded down to the
 * highest p_vaddr + p_memsz rounded up.  Loaded with load bias b, the
 * module occupies at most [image->start + b, image->end + b).
 * Returns 0 with *image set, -ENOENT for a file without PT_LOAD segments
 * (ET_REL).  Thread-safe, async-signal-safe.
 */
int fl_elf_image(const struct fl_elf *elf, struct fl_range *image);

/* ------------------------------------------------------------------------
 * Loaded modules
 */

struct fl_module_function {
	uint64_t address;	/* runtime address, in an executable segment */
	uint64_t stored;	/* the value in memory at address_offset */
	size_t address_offset;	/* section offset of the address field */
	uint32_t table;		/* table of the section it is in */
	uint32_t index;		/* within its table */
	bool relocated;		/* the loader relocated the field (stored = address) */
};

struct fl_module_section {
	/* The section as mapped in memory; NULL when the module has none. */
	const void *data;
	size_t size;
	uint64_t link_address;		/* sh_addr */
	uint32_t parse_flags;		/* for the format layer */
	/*
	 * One per FL_FM_FUNCTION / FL_SM_FUNCTION event, in the order the
	 * format layer's cursor reports them: the i-th function event of a
	 * walk of data is functions[i].
	 */
	size_t num_functions;
	const struct fl_module_function *functions;
};

struct fl_module {
	/*
	 * dlpi_name: "" for the main program.  path: the file whose section
	 * headers were read ("/proc/self/exe" for the main program).
	 */
	const char *name;
	const char *path;
	uint64_t load_bias;		/* dlpi_addr */
	uint64_t dynamic;		/* runtime address of PT_DYNAMIC, or 0 */
	/* Executable PT_LOAD segments (runtime, p_memsz), sorted. */
	size_t num_text;
	const struct fl_range *text;
	struct fl_module_section sections[FL_SECTION_KINDS];
	/*
	 * 0, or why the module cannot be used (then sections[] are empty and
	 * diag says what is wrong).  Only fl_module_for_each hands out such
	 * modules; the fl_module_open_* functions return the error instead.
	 */
	int err;
	struct fl_diag diag;
};

enum {
	/* fl_module_for_each: also report modules without either section. */
	FL_MODULE_ALL = 1u << 0,
};

/* Options: as struct fl_elf_opts. */
struct fl_module_opts {
	size_t sz;
	uint32_t flags;		/* FL_MODULE_* */
};

/*
 * Called by fl_module_for_each for each module.  Return 0 to go on, anything
 * else to stop (fl_module_for_each then returns it).  m is valid only during
 * the call.  It runs inside dl_iterate_phdr: no module can be unloaded while
 * it runs, and it must not call dlopen or dlclose.
 */
typedef int (*fl_module_fn)(const struct fl_module *m, void *ctx);

/*
 * Calls fn for every loaded module that has a .llvm_faultmaps or
 * .llvm_stackmaps section, and for every module whose sections could not be
 * found or checked (m->err set: a missing or replaced file, a function
 * address outside the module, malformed maps, ...).  With FL_MODULE_ALL, for
 * every module.  The vDSO is skipped.
 * How a module is discovered: the maps are SHF_ALLOC, so their bytes are
 * mapped, but section headers are not: the module's file (dlpi_name, or
 * /proc/self/exe for the main program) is opened with libelf to find the
 * sections by name, after checking that its program headers (and build ID)
 * match the loaded ones; the bytes used are those in memory.
 * Returns 0 after the last module, the first non-zero value fn returned, or
 * -errno (-ENOMEM, -EINVAL for bad opts).  Thread-safe (takes the loader's
 * lock through dl_iterate_phdr); not async-signal-safe.
 */
int fl_module_for_each(fl_module_fn fn, void *ctx, const struct fl_module_opts *opts);

/*
 * Discovers the loaded module that contains addr (in any of its segments).
 * Returns 0 with *out set on success (free with fl_module_free; it points
 * into the module's memory, so it must not outlive a dlclose of the module),
 * -ENOENT if no module contains addr, or the module's error (with *diag
 * filled in).  A module without either section is not an error: its
 * sections[] are empty.  Thread-safe; not async-signal-safe.
 */
int fl_module_open_addr(const void *addr, const struct fl_module_opts *opts,
			struct fl_module **out, struct fl_diag *diag);

/*
 * As fl_module_open_addr, for the module of a dlopen handle (also
 * dlopen(NULL, ...) for the main program).  Returns -ENOENT for a handle
 * dlinfo does not know.  Thread-safe; not async-signal-safe.
 */
int fl_module_open_handle(void *handle, const struct fl_module_opts *opts,
			  struct fl_module **out, struct fl_diag *diag);

/* Frees a module from fl_module_open_*.  NULL is fine.  Not async-signal-safe. */
void fl_module_free(struct fl_module *m);

/*
 * The runtime address of the function whose address field is at section
 * offset address_offset of m's section kind, given the value stored there
 * (what the format layer read from sections[kind].data).
 * Returns 0 with *runtime set, -ENOENT if m has no such section, -EINVAL
 * for a bad kind, an offset past the section or a field that a relocation
 * sets only in part, -ERANGE if the address is not in an executable segment
 * of m (*runtime is set anyway).
 * Thread-safe and async-signal-safe (no allocation, no locks).
 */
int fl_module_function_address(const struct fl_module *m, enum fl_section_kind kind,
			       size_t address_offset, uint64_t stored, uint64_t *runtime);

/*
 * Returns true if addr is in an executable segment of m.  Thread-safe and
 * async-signal-safe.
 */
bool fl_module_text_contains(const struct fl_module *m, uint64_t addr);

#ifdef __cplusplus
}
#endif

#endif /* FAULTLINE_DISCOVERY_H */
