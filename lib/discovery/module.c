// SPDX-License-Identifier: MIT
/*
 * Loaded modules: the map sections of the modules of this process, and the
 * runtime address of every function named in them.
 *
 * Finding the sections.  .llvm_faultmaps and .llvm_stackmaps are SHF_ALLOC,
 * so their bytes are mapped with the module, but nothing in memory says
 * where: section headers are not loaded, and LLVM emits no dynamic symbol
 * for the sections.  So the module's file is opened (dl_iterate_phdr's
 * dlpi_name; /proc/self/exe for the main program, whose dlpi_name is "")
 * and libelf finds the sections by name; their link-time address plus the
 * load bias is where they are in memory.  The file must be the one that was
 * loaded: its program headers must equal the loaded ones, its GNU build ID
 * (when both have one) the loaded one, and the map bytes in memory must
 * equal the file's except in the fields the loader relocated.  Anything
 * else is -ESTALE.  The file is read once per discovery, never at fault
 * time; everything else comes from memory.
 *
 * Runtime addresses.  Whether the loader relocated a function address field
 * depends on the linker (see discovery.h for what each link mode does), so
 * it is read from the module's own dynamic relocations, in memory (PT_DYNAMIC:
 * DT_RELA, DT_JMPREL, DT_REL, DT_RELR): a field named by the machine's
 * RELATIVE, 64-bit absolute, GLOB_DAT or IRELATIVE relocation
 * (fl_disc_relocs_of: R_X86_64_RELATIVE ..., R_AARCH64_RELATIVE ...) holds
 * the runtime address; any other field holds the link-time value, to which the load bias
 * is added.  Every result must fall in an executable PT_LOAD of the module
 * (and so must every faulting PC, handler PC and stack map record PC), or
 * the module is rejected with -ERANGE: a symbol preempted by another module,
 * a table that does not belong to this module, a wrong bias all end there
 * rather than in the handler table.
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

#include "core/fmt.h"
#include "core/opts.h"
#include "discovery/internal.h"
#include "arch.h"

struct relocated {
	size_t offset;		/* section offset of a relocated field */
	uint32_t type;
};

struct module_section {
	struct relocated *rel;	/* sorted by offset */
	size_t nrel;
	size_t rel_cap;
	struct fl_module_function *funcs;
	size_t nfuncs;
	size_t funcs_cap;
};

struct module {
	struct fl_module pub;	/* first: fl_module pointers are module pointers */
	char *name;
	char *path;
	struct fl_range *text;
	const ElfW(Phdr) *phdr;	/* the loaded program headers */
	size_t phnum;
	struct module_section sec[FL_SECTION_KINDS];
};

static struct module *to_module(const struct fl_module *m)
{
	return (struct module *)m;
}

static const char *display_name(const struct module *m)
{
	return m->pub.name[0] ? m->pub.name : "main program (/proc/self/exe)";
}

/* Sets the module's error: "<module>: <text>".  Returns err. */
static int module_error(struct module *m, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int module_error(struct module *m, int err, const char *fmt, ...)
{
	struct fl_diag *d = &m->pub.diag;
	va_list ap;
	size_t n;

	m->pub.err = err;
	d->err = err;
	n = fl_fmt(d->msg, sizeof(d->msg), "%s: ", display_name(m));
	va_start(ap, fmt);
	fl_vfmt(d->msg + n, sizeof(d->msg) - n, fmt, ap);
	va_end(ap);
	return err;
}

/*
 * Is [addr, addr + size) (runtime) inside one PT_LOAD of the module: its
 * file-backed part (p_filesz) or all of it (p_memsz)?
 */
static bool in_load(const struct module *m, uint64_t addr, uint64_t size, bool file_backed)
{
	size_t i;

	for (i = 0; i < m->phnum; i++) {
		const ElfW(Phdr) *ph = &m->phdr[i];
		uint64_t start = m->pub.load_bias + ph->p_vaddr;
		uint64_t len = file_backed ? ph->p_filesz : ph->p_memsz;

		if (ph->p_type != PT_LOAD)
			continue;
		if (addr >= start && addr - start <= len && size <= len - (addr - start))
			return true;
	}
	return false;
}

bool fl_module_text_contains(const struct fl_module *m, uint64_t addr)
{
	size_t i;

	for (i = 0; i < m->num_text; i++)
		if (addr >= m->text[i].start && addr < m->text[i].end)
			return true;
	return false;
}

static int cmp_range(const void *a, const void *b)
{
	const struct fl_range *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static int fill_segments(struct module *m)
{
	size_t i, n = 0;

	for (i = 0; i < m->phnum; i++) {
		const ElfW(Phdr) *ph = &m->phdr[i];

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X))
			n++;
		if (ph->p_type == PT_DYNAMIC)
			m->pub.dynamic = m->pub.load_bias + ph->p_vaddr;
	}
	m->text = calloc(n ? n : 1, sizeof(*m->text));
	if (!m->text)
		return -ENOMEM;
	for (i = 0; i < m->phnum; i++) {
		const ElfW(Phdr) *ph = &m->phdr[i];

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X))
			m->text[m->pub.num_text++] = (struct fl_range){
				.start = m->pub.load_bias + ph->p_vaddr,
				.end = m->pub.load_bias + ph->p_vaddr + ph->p_memsz,
			};
	}
	qsort(m->text, m->pub.num_text, sizeof(*m->text), cmp_range);
	m->pub.text = m->text;
	return 0;
}

/* The vDSO has no file and no maps. */
static bool is_vdso(const struct module *m)
{
	uint64_t ehdr = getauxval(AT_SYSINFO_EHDR);
	size_t i;

	if (!ehdr)
		return false;
	for (i = 0; i < m->phnum; i++)
		if (m->phdr[i].p_type == PT_LOAD && m->phdr[i].p_offset == 0 &&
		    m->pub.load_bias + m->phdr[i].p_vaddr == ehdr)
			return true;
	return false;
}

/* ------------------------------------------------------------------------
 * Is the file the loaded module?
 */

/* The GNU build ID in the loaded PT_NOTE segments. */
static size_t memory_build_id(const struct module *m, const unsigned char **id)
{
	size_t i;

	for (i = 0; i < m->phnum; i++) {
		const ElfW(Phdr) *ph = &m->phdr[i];
		uint64_t start = m->pub.load_bias + ph->p_vaddr;
		uint64_t align = ph->p_align == 8 ? 8 : 4;
		uint64_t pos = 0;

		if (ph->p_type != PT_NOTE || !in_load(m, start, ph->p_filesz, true))
			continue;
		while (ph->p_filesz - pos >= sizeof(ElfW(Nhdr))) {
			const unsigned char *p = (const unsigned char *)(uintptr_t)(start + pos);
			uint64_t name_len, desc_len;
			ElfW(Nhdr) nh;

			memcpy(&nh, p, sizeof(nh));
			name_len = ((uint64_t)nh.n_namesz + align - 1) & ~(align - 1);
			desc_len = ((uint64_t)nh.n_descsz + align - 1) & ~(align - 1);
			if (ph->p_filesz - pos - sizeof(nh) < name_len ||
			    ph->p_filesz - pos - sizeof(nh) - name_len < desc_len)
				break;
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp(p + sizeof(nh), "GNU", 4)) {
				*id = p + sizeof(nh) + name_len;
				return nh.n_descsz;
			}
			pos += sizeof(nh) + name_len + desc_len;
		}
	}
	return 0;
}

static int check_same_file(struct module *m, const struct fl_elf *elf)
{
	struct fl_elf_load_info li;
	const unsigned char *id = NULL;
	size_t i, id_size;

	if (fl_elf_type(elf) != ET_EXEC && fl_elf_type(elf) != ET_DYN)
		return module_error(m, -ESTALE, "e_type %u is not a loadable file", fl_elf_type(elf));
	fl_elf_load_info(elf, &li);
	if (li.phnum != m->phnum)
		return module_error(m, -ESTALE,
				    "the file has %zu program headers, the loaded module %zu (file replaced?)",
				    li.phnum, m->phnum);
	for (i = 0; i < m->phnum; i++) {
		const ElfW(Phdr) *a = &m->phdr[i];
		const Elf64_Phdr *b = &li.phdr[i];

		if (a->p_type != b->p_type || a->p_flags != b->p_flags ||
		    a->p_offset != b->p_offset || a->p_vaddr != b->p_vaddr ||
		    a->p_filesz != b->p_filesz || a->p_memsz != b->p_memsz)
			return module_error(m, -ESTALE,
					    "program header %zu of the file differs from the loaded one (file replaced?)",
					    i);
	}
	id_size = memory_build_id(m, &id);
	if (id_size && li.build_id_size &&
	    (id_size != li.build_id_size || memcmp(id, li.build_id, id_size)))
		return module_error(m, -ESTALE,
				    "the build ID of the file differs from the loaded one (file replaced?)");
	return 0;
}

/* ------------------------------------------------------------------------
 * Dynamic relocations, from memory
 */

struct dynamic {
	uint64_t rela, relasz, relaent;
	uint64_t rel, relsz, relent;
	uint64_t relr, relrsz, relrent;
	uint64_t jmprel, pltrelsz, pltrel;
};

/*
 * A table the dynamic section points to, as a pointer in memory, if it lies
 * in the file-backed part of a PT_LOAD.  glibc rewrites the d_ptr entries of
 * a writable dynamic section to runtime addresses when it loads a module
 * (not the vDSO's, nor on some architectures); musl leaves the link-time
 * values.  So the value is taken as a runtime address if the table is then
 * inside the module, else as a link-time address.  With a load bias of 0 the
 * two are the same; otherwise they can both be inside the module only if it
 * overlaps its own link-time range, and glibc's reading wins.
 */
static const void *dynamic_table(const struct module *m, uint64_t v, uint64_t size)
{
	if (in_load(m, v, size, true))
		return (const void *)(uintptr_t)v;
	if (in_load(m, v + m->pub.load_bias, size, true))
		return (const void *)(uintptr_t)(v + m->pub.load_bias);
	return NULL;
}

static int read_dynamic(struct module *m, struct dynamic *dy)
{
	const ElfW(Phdr) *dph = NULL;
	const unsigned char *p;
	size_t i, n;

	memset(dy, 0, sizeof(*dy));
	for (i = 0; i < m->phnum; i++)
		if (m->phdr[i].p_type == PT_DYNAMIC)
			dph = &m->phdr[i];
	if (!dph)
		return 0;	/* static: nothing relocated */
	if (!in_load(m, m->pub.load_bias + dph->p_vaddr, dph->p_memsz, false))
		return module_error(m, -EINVAL, "PT_DYNAMIC is outside the module's segments");
	p = (const unsigned char *)(uintptr_t)(m->pub.load_bias + dph->p_vaddr);
	n = dph->p_memsz / sizeof(ElfW(Dyn));
	for (i = 0; i < n; i++) {
		ElfW(Dyn) d;

		memcpy(&d, p + i * sizeof(d), sizeof(d));
		switch (d.d_tag) {
		case DT_NULL:
			return 0;
		case DT_RELA: dy->rela = d.d_un.d_ptr; break;
		case DT_RELASZ: dy->relasz = d.d_un.d_val; break;
		case DT_RELAENT: dy->relaent = d.d_un.d_val; break;
		case DT_REL: dy->rel = d.d_un.d_ptr; break;
		case DT_RELSZ: dy->relsz = d.d_un.d_val; break;
		case DT_RELENT: dy->relent = d.d_un.d_val; break;
		case DT_RELR: dy->relr = d.d_un.d_ptr; break;
		case DT_RELRSZ: dy->relrsz = d.d_un.d_val; break;
		case DT_RELRENT: dy->relrent = d.d_un.d_val; break;
		case DT_JMPREL: dy->jmprel = d.d_un.d_ptr; break;
		case DT_PLTRELSZ: dy->pltrelsz = d.d_un.d_val; break;
		case DT_PLTREL: dy->pltrel = d.d_un.d_val; break;
		}
	}
	return 0;
}

/* Records a relocation at link-time address vaddr if it is in a map section. */
static int note_reloc(struct module *m, uint64_t vaddr, uint32_t type)
{
	int k;

	for (k = 0; k < FL_SECTION_KINDS; k++) {
		const struct fl_module_section *s = &m->pub.sections[k];
		struct module_section *ms = &m->sec[k];

		if (!s->data || vaddr < s->link_address || vaddr - s->link_address >= s->size)
			continue;
		if (ms->nrel == ms->rel_cap) {
			size_t cap = ms->rel_cap ? 2 * ms->rel_cap : 16;
			struct relocated *r = realloc(ms->rel, cap * sizeof(*r));

			if (!r)
				return -ENOMEM;
			ms->rel = r;
			ms->rel_cap = cap;
		}
		ms->rel[ms->nrel++] = (struct relocated){
			.offset = vaddr - s->link_address,
			.type = type,
		};
	}
	return 0;
}

static int scan_rela(struct module *m, uint64_t ptr, uint64_t size, uint64_t ent,
		     bool rela, const char *what)
{
	const unsigned char *p;
	uint64_t i, n;
	int err;

	if (!ptr || !size)
		return 0;
	if (ent != (rela ? sizeof(ElfW(Rela)) : sizeof(ElfW(Rel))))
		return module_error(m, -EINVAL, "%s: entry size %lu", what, ent);
	p = dynamic_table(m, ptr, size);
	if (!p)
		return module_error(m, -EINVAL, "%s (0x%lx, %lu bytes) is outside the module",
				    what, ptr, size);
	n = size / ent;
	for (i = 0; i < n; i++) {
		ElfW(Rela) r;

		memcpy(&r, p + i * ent, rela ? sizeof(ElfW(Rela)) : sizeof(ElfW(Rel)));
		err = note_reloc(m, r.r_offset, ELF64_R_TYPE(r.r_info));
		if (err)
			return err;
	}
	return 0;
}

/* DT_RELR: see load_relr_section in elf.c. */
static int scan_relr(struct module *m, uint64_t ptr, uint64_t size, uint64_t ent)
{
	const unsigned char *p;
	uint64_t i, n, where = 0;
	int err;

	if (!ptr || !size)
		return 0;
	if (ent != sizeof(uint64_t))
		return module_error(m, -EINVAL, "DT_RELR: entry size %lu", ent);
	p = dynamic_table(m, ptr, size);
	if (!p)
		return module_error(m, -EINVAL, "DT_RELR (0x%lx, %lu bytes) is outside the module",
				    ptr, size);
	n = size / ent;
	for (i = 0; i < n; i++) {
		uint64_t e, bits, j;

		memcpy(&e, p + i * ent, sizeof(e));
		if (!(e & 1)) {
			err = note_reloc(m, e, fl_disc_relocs_of(FL_ARCH_MACHINE)->relative);
			if (err)
				return err;
			where = e + 8;
			continue;
		}
		for (bits = e >> 1, j = 0; bits; bits >>= 1, j++) {
			if (!(bits & 1))
				continue;
			err = note_reloc(m, where + 8 * j, fl_disc_relocs_of(FL_ARCH_MACHINE)->relative);
			if (err)
				return err;
		}
		where += 63 * 8;
	}
	return 0;
}

static int cmp_relocated(const void *a, const void *b)
{
	const struct relocated *x = a, *y = b;

	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static int scan_relocations(struct module *m)
{
	struct dynamic dy;
	int err, k;

	err = read_dynamic(m, &dy);
	if (!err)
		err = scan_rela(m, dy.rela, dy.relasz, dy.relaent, true, "DT_RELA");
	if (!err && dy.pltrel == DT_RELA)
		err = scan_rela(m, dy.jmprel, dy.pltrelsz, sizeof(ElfW(Rela)), true, "DT_JMPREL");
	if (!err)
		err = scan_rela(m, dy.rel, dy.relsz, dy.relent, false, "DT_REL");
	if (!err && dy.pltrel == DT_REL)
		err = scan_rela(m, dy.jmprel, dy.pltrelsz, sizeof(ElfW(Rel)), false, "DT_JMPREL");
	if (!err)
		err = scan_relr(m, dy.relr, dy.relrsz, dy.relrent);
	if (err == -ENOMEM)
		return module_error(m, err, "out of memory");
	if (err)
		return err;
	for (k = 0; k < FL_SECTION_KINDS; k++)
		if (m->sec[k].nrel)
			qsort(m->sec[k].rel, m->sec[k].nrel, sizeof(struct relocated),
			      cmp_relocated);
	return 0;
}

/* The relocations that touch [off, off + 8): first index, count. */
static size_t relocs_touching(const struct module_section *ms, size_t off, size_t *count)
{
	size_t lo = 0, hi = ms->nrel, first;
	size_t from = off >= 7 ? off - 7 : 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ms->rel[mid].offset < from)
			lo = mid + 1;
		else
			hi = mid;
	}
	first = lo;
	while (lo < ms->nrel && ms->rel[lo].offset < off + 8)
		lo++;
	*count = lo - first;
	return first;
}

/* A loaded module is this machine's (fl_elf_open checked its e_machine). */
static bool sets_address(uint32_t type)
{
	return fl_disc_sets_address(fl_disc_relocs_of(FL_ARCH_MACHINE), type);
}

/*
 * The runtime address of the field at off.  Returns 0, -EINVAL when the
 * field is touched by a relocation that does not set it whole, -ERANGE when
 * the address is not in the module's text.  No allocation, no locks.
 */
static int runtime_address(const struct module *m, int k, size_t off, uint64_t stored,
			   uint64_t *runtime, bool *relocated)
{
	const struct module_section *ms = &m->sec[k];
	size_t first, n;

	first = relocs_touching(ms, off, &n);
	*relocated = false;
	if (n > 1 || (n == 1 && (ms->rel[first].offset != off ||
				 !sets_address(ms->rel[first].type))))
		return -EINVAL;
	*relocated = n == 1;
	*runtime = *relocated ? stored : stored + m->pub.load_bias;
	return fl_module_text_contains(&m->pub, *runtime) ? 0 : -ERANGE;
}

int fl_module_function_address(const struct fl_module *m, enum fl_section_kind kind,
			       size_t address_offset, uint64_t stored, uint64_t *runtime)
{
	const struct fl_module_section *s;
	bool relocated;

	if ((unsigned)kind >= FL_SECTION_KINDS)
		return -EINVAL;
	s = &m->sections[kind];
	if (!s->data)
		return -ENOENT;
	if (address_offset > s->size || s->size - address_offset < 8)
		return -EINVAL;
	return runtime_address(to_module(m), kind, address_offset, stored, runtime, &relocated);
}

/* ------------------------------------------------------------------------
 * Walking the maps
 */

static const char *kind_name(int k)
{
	return fl_section_kind_name((enum fl_section_kind)k);
}

static int add_function(struct module *m, int k, const struct fl_module_function *f)
{
	struct module_section *ms = &m->sec[k];

	if (ms->nfuncs == ms->funcs_cap) {
		size_t cap = ms->funcs_cap ? 2 * ms->funcs_cap : 16;
		struct fl_module_function *p = realloc(ms->funcs, cap * sizeof(*p));

		if (!p)
			return module_error(m, -ENOMEM, "out of memory");
		ms->funcs = p;
		ms->funcs_cap = cap;
	}
	ms->funcs[ms->nfuncs++] = *f;
	return 0;
}

static int function(struct module *m, int k, uint32_t table, uint32_t index,
		    size_t off, uint64_t stored)
{
	struct fl_module_function f = {
		.stored = stored,
		.address_offset = off,
		.table = table,
		.index = index,
	};
	int err;

	err = runtime_address(m, k, off, stored, &f.address, &f.relocated);
	if (err == -EINVAL)
		return module_error(m, err,
				    "%s: table %u: function %u: the address field at offset 0x%zx is only partly relocated",
				    kind_name(k), table, index, off);
	if (err && f.relocated)
		return module_error(m, err,
				    "%s: table %u: function %u: address 0x%lx (set by the loader's relocation) is not in an executable segment of the module",
				    kind_name(k), table, index, f.address);
	if (err)
		return module_error(m, err,
				    "%s: table %u: function %u: address 0x%lx (link-time 0x%lx + load bias) is not in an executable segment of the module",
				    kind_name(k), table, index, f.address, stored);
	return add_function(m, k, &f);
}

static int check_pc(struct module *m, int k, uint64_t pc, const char *what, uint32_t table,
		    uint32_t index)
{
	if (fl_module_text_contains(&m->pub, pc))
		return 0;
	return module_error(m, -ERANGE,
			    "%s: table %u: %s %u: PC 0x%lx is not in an executable segment of the module",
			    kind_name(k), table, what, index, pc);
}

static int walk_faultmap(struct module *m)
{
	const struct fl_module_section *s = &m->pub.sections[FL_SECTION_FAULTMAP];
	struct fl_faultmap_cursor c;
	struct fl_faultmap_event ev;
	struct fl_diag d = { 0 };
	uint64_t fn = 0;
	int r, err;

	fl_faultmap_cursor_init(&c, s->data, s->size, s->parse_flags, &d);
	while ((r = fl_faultmap_next(&c, &ev)) > 0) {
		if (ev.type == FL_FM_FUNCTION) {
			err = function(m, FL_SECTION_FAULTMAP, ev.table, ev.function.index,
				       ev.function.address_offset, ev.function.address);
			if (err)
				return err;
			fn = m->sec[FL_SECTION_FAULTMAP].funcs[m->sec[FL_SECTION_FAULTMAP].nfuncs - 1].address;
		} else if (ev.type == FL_FM_FAULT) {
			err = check_pc(m, FL_SECTION_FAULTMAP, fn + ev.fault.faulting_pc_offset,
				       "faulting PC of fault", ev.table, ev.fault.index);
			if (!err)
				err = check_pc(m, FL_SECTION_FAULTMAP, fn + ev.fault.handler_pc_offset,
					       "handler PC of fault", ev.table, ev.fault.index);
			if (err)
				return err;
		}
	}
	if (r < 0)
		return module_error(m, r, "%s", d.msg);
	return 0;
}

static int walk_stackmap(struct module *m)
{
	const struct fl_module_section *s = &m->pub.sections[FL_SECTION_STACKMAP];
	struct module_section *ms = &m->sec[FL_SECTION_STACKMAP];
	struct fl_stackmap_cursor c;
	struct fl_stackmap_event ev;
	struct fl_diag d = { 0 };
	size_t table_first = 0;
	int r, err;

	fl_stackmap_cursor_init(&c, s->data, s->size, s->parse_flags, &d);
	while ((r = fl_stackmap_next(&c, &ev)) > 0) {
		if (ev.type == FL_SM_TABLE) {
			table_first = ms->nfuncs;
		} else if (ev.type == FL_SM_FUNCTION) {
			err = function(m, FL_SECTION_STACKMAP, ev.table, ev.function.index,
				       ev.function.address_offset, ev.function.address);
			if (err)
				return err;
		} else if (ev.type == FL_SM_RECORD && ev.record.function != FL_NO_FUNCTION &&
			   table_first + ev.record.function < ms->nfuncs) {
			uint64_t fn = ms->funcs[table_first + ev.record.function].address;

			err = check_pc(m, FL_SECTION_STACKMAP, fn + ev.record.instruction_offset,
				       "record", ev.table, ev.record.index);
			if (err)
				return err;
		}
	}
	if (r < 0)
		return module_error(m, r, "%s", d.msg);
	return 0;
}

/*
 * The map bytes in memory must be the file's, except in the fields the
 * loader relocated: otherwise the file is not what was loaded.
 */
static int check_bytes(struct module *m, int k, const struct fl_elf_section *fs)
{
	const unsigned char *mem = m->pub.sections[k].data, *file = fs->data;
	const struct module_section *ms = &m->sec[k];
	size_t pos = 0, i = 0;

	while (pos < fs->size) {
		size_t end = fs->size;

		while (i < ms->nrel && ms->rel[i].offset + 8 <= pos)
			i++;
		if (i < ms->nrel && ms->rel[i].offset <= pos) {
			pos = ms->rel[i].offset + 8;	/* skip a relocated field */
			continue;
		}
		if (i < ms->nrel && ms->rel[i].offset < end)
			end = ms->rel[i].offset;
		if (memcmp(mem + pos, file + pos, end - pos)) {
			while (mem[pos] == file[pos])
				pos++;
			return module_error(m, -ESTALE,
					    "%s in memory differs from the file at offset 0x%zx (file replaced?)",
					    kind_name(k), pos);
		}
		pos = end;
	}
	return 0;
}

/* ------------------------------------------------------------------------
 * Building a module
 */

static void module_free(struct module *m)
{
	int k;

	if (!m)
		return;
	for (k = 0; k < FL_SECTION_KINDS; k++) {
		free(m->sec[k].rel);
		free(m->sec[k].funcs);
	}
	free(m->text);
	free(m->name);
	free(m->path);
	free(m);
}

void fl_module_free(struct fl_module *m)
{
	module_free(to_module(m));
}

/* Drops what was found when the module turns out to be unusable. */
static void clear_sections(struct module *m)
{
	int k;

	for (k = 0; k < FL_SECTION_KINDS; k++) {
		memset(&m->pub.sections[k], 0, sizeof(m->pub.sections[k]));
		m->sec[k].nrel = 0;
		m->sec[k].nfuncs = 0;
	}
}

static int discover(struct module *m, bool want_all)
{
	/*
	 * The file's section headers and map sections only: the relocations
	 * are the loaded module's (from memory, scan_relocations), and the
	 * symbols are not needed (a million functions' take longer to read
	 * than their fault map).
	 */
	const struct fl_elf_opts eo = { .sz = sizeof(eo), .flags = FL_ELF_NO_SYMBOLS };
	struct fl_elf_section fs[FL_SECTION_KINDS];
	bool have[FL_SECTION_KINDS] = { false };
	struct fl_diag d = { 0 };
	struct fl_elf *elf;
	int err, k;

	err = fl_elf_open(m->path, &eo, &elf, &d);
	if (err == -ENOENT && !m->pub.name[0] && getauxval(AT_EXECFN)) {
		/* No /proc: the name the kernel was given (checked like any file). */
		char *path = strdup((const char *)getauxval(AT_EXECFN));

		if (!path)
			return module_error(m, -ENOMEM, "out of memory");
		free(m->path);
		m->path = path;
		m->pub.path = path;
		err = fl_elf_open(m->path, &eo, &elf, &d);
	}
	if (err) {
		/* d.msg starts with the path: keep the module's name only once. */
		size_t n = strlen(m->path);
		const char *msg = d.msg;

		if (!strncmp(msg, m->path, n) && !strncmp(msg + n, ": ", 2))
			msg += n + 2;
		return module_error(m, err, "%s: %s", m->path, msg);
	}
	err = check_same_file(m, elf);
	for (k = 0; k < FL_SECTION_KINDS && !err; k++) {
		struct fl_module_section *s = &m->pub.sections[k];
		uint64_t addr;

		if (fl_elf_section(elf, k, &fs[k]))
			continue;
		have[k] = true;
		addr = m->pub.load_bias + fs[k].addr;
		if (!(fs[k].flags & SHF_ALLOC))
			err = module_error(m, -EINVAL, "%s is not SHF_ALLOC: it is not loaded", kind_name(k));
		else if (!in_load(m, addr, fs[k].size, true))
			err = module_error(m, -EINVAL,
					   "%s (0x%lx, %zu bytes) is not in a loaded segment",
					   kind_name(k), fs[k].addr, fs[k].size);
		s->data = (const void *)(uintptr_t)addr;
		s->size = fs[k].size;
		s->link_address = fs[k].addr;
		s->parse_flags = fs[k].parse_flags;
	}
	if (!err && (have[0] || have[1]))
		err = scan_relocations(m);
	for (k = 0; k < FL_SECTION_KINDS && !err; k++)
		if (have[k])
			err = check_bytes(m, k, &fs[k]);
	fl_elf_close(elf);
	if (!err && have[FL_SECTION_FAULTMAP])
		err = walk_faultmap(m);
	if (!err && have[FL_SECTION_STACKMAP])
		err = walk_stackmap(m);
	if (err) {
		clear_sections(m);
		return err;
	}
	for (k = 0; k < FL_SECTION_KINDS; k++) {
		m->pub.sections[k].functions = m->sec[k].funcs;
		m->pub.sections[k].num_functions = m->sec[k].nfuncs;
	}
	if (!have[0] && !have[1] && !want_all)
		return 1;
	return 0;
}

/*
 * Builds the module of info.  Returns 0 with *out set (m->err may be set),
 * 1 when the module is to be skipped (the vDSO; no maps unless want_all),
 * -ENOMEM.
 */
static int module_build(const struct dl_phdr_info *info, bool want_all, struct module **out)
{
	struct module *m;
	int err;

	*out = NULL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->pub.load_bias = info->dlpi_addr;
	m->phdr = info->dlpi_phdr;
	m->phnum = info->dlpi_phnum;
	m->name = strdup(info->dlpi_name ? info->dlpi_name : "");
	/* The main program's dlpi_name is "": its file is /proc/self/exe. */
	m->path = strdup(m->name && m->name[0] ? m->name : "/proc/self/exe");
	if (!m->name || !m->path || fill_segments(m)) {
		module_free(m);
		return -ENOMEM;
	}
	m->pub.name = m->name;
	m->pub.path = m->path;
	if (is_vdso(m)) {
		module_free(m);
		return 1;
	}
	err = discover(m, want_all);
	if (err == 1 || err == -ENOMEM) {
		module_free(m);
		return err;
	}
	*out = m;
	return 0;
}

/* ------------------------------------------------------------------------
 * Public entry points
 */

static int get_opts(struct fl_module_opts *o, const struct fl_module_opts *opts)
{
	if (fl_opts_copy(o, sizeof(*o), opts))
		return -EINVAL;
	if (o->flags & ~(uint32_t)FL_MODULE_ALL)
		return -EINVAL;
	return 0;
}

struct for_each_ctx {
	fl_module_fn fn;
	void *ctx;
	bool all;
	int ret;
};

static int for_each_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct for_each_ctx *c = data;
	struct module *m;
	int err;

	(void)size;
	err = module_build(info, c->all, &m);
	if (err == 1)
		return 0;
	if (err) {
		c->ret = err;
		return 1;
	}
	c->ret = c->fn(&m->pub, c->ctx);
	module_free(m);
	return c->ret != 0;
}

int fl_module_for_each(fl_module_fn fn, void *ctx, const struct fl_module_opts *opts)
{
	struct for_each_ctx c = { .fn = fn, .ctx = ctx };
	struct fl_module_opts o;
	int err;

	err = get_opts(&o, opts);
	if (err)
		return err;
	c.all = o.flags & FL_MODULE_ALL;
	dl_iterate_phdr(for_each_cb, &c);
	return c.ret;
}

struct find_ctx {
	uint64_t addr;		/* find by address ... */
	uint64_t dynamic;	/* ... or by PT_DYNAMIC */
	struct module *m;
	int err;
	bool found;
};

static bool contains(const struct dl_phdr_info *info, uint64_t addr)
{
	size_t i;

	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t start = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && addr >= start && addr - start < ph->p_memsz)
			return true;
	}
	return false;
}

static bool has_dynamic(const struct dl_phdr_info *info, uint64_t dynamic)
{
	size_t i;

	for (i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC &&
		    info->dlpi_addr + info->dlpi_phdr[i].p_vaddr == dynamic)
			return true;
	return false;
}

static int find_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct find_ctx *c = data;

	(void)size;
	if (c->dynamic ? !has_dynamic(info, c->dynamic) : !contains(info, c->addr))
		return 0;
	c->found = true;
	c->err = module_build(info, true, &c->m);
	return 1;
}

static int open_found(struct find_ctx *c, struct fl_module **out, struct fl_diag *diag,
		      const char *what)
{
	int err;

	dl_iterate_phdr(find_cb, c);
	if (!c->found)
		return fl_diag_say(diag, -ENOENT, "no loaded module contains %s", what);
	if (c->err == 1)
		return fl_diag_say(diag, -ENOENT, "%s is in the vDSO", what);
	if (c->err)
		return fl_diag_say(diag, c->err, "out of memory");
	if (c->m->pub.err) {
		err = c->m->pub.err;
		if (diag)
			*diag = c->m->pub.diag;
		module_free(c->m);
		return err;
	}
	*out = &c->m->pub;
	return 0;
}

int fl_module_open_addr(const void *addr, const struct fl_module_opts *opts,
			struct fl_module **out, struct fl_diag *diag)
{
	struct find_ctx c = { .addr = (uintptr_t)addr };
	struct fl_module_opts o;

	*out = NULL;
	if (get_opts(&o, opts))
		return fl_diag_say(diag, -EINVAL, "struct fl_module_opts: bad sz, fields or flags");
	return open_found(&c, out, diag, "that address");
}

int fl_module_open_handle(void *handle, const struct fl_module_opts *opts,
			  struct fl_module **out, struct fl_diag *diag)
{
	struct find_ctx c = { 0 };
	struct fl_module_opts o;
	struct link_map *lm = NULL;

	*out = NULL;
	if (get_opts(&o, opts))
		return fl_diag_say(diag, -EINVAL, "struct fl_module_opts: bad sz, fields or flags");
	if (!handle || dlinfo(handle, RTLD_DI_LINKMAP, &lm) || !lm)
		return fl_diag_say(diag, -ENOENT, "not a dlopen handle");
	if (!lm->l_ld)
		return fl_diag_say(diag, -ENOENT, "the handle's module has no dynamic section");
	c.dynamic = (uintptr_t)lm->l_ld;
	return open_found(&c, out, diag, "the handle's dynamic section");
}
