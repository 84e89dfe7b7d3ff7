// SPDX-License-Identifier: MIT
/*
 * ELF files: the map sections, found with libelf, and the relocations and
 * symbols that name the functions in them.
 *
 * Everything is read when the file is opened, into plain arrays: the
 * accessors never call libelf (an Elf handle must not be used by two threads
 * at once, and libelf reads lazily), so a struct fl_elf is immutable and may
 * be shared.  The Elf handle stays open only because the strings point into
 * the data it read (or, with FL_ELF_MAP, into its mapping of the file).
 * FL_ELF_NO_SYMBOLS leaves out the symbols and relocations.
 *
 * Nothing in the file is trusted.  The few header fields needed before
 * libelf runs are checked here so that the diagnostic can say exactly what
 * is wrong; libelf checks the rest of its structures itself, and every
 * offset, size and index taken from the file is checked before use.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gelf.h>

#include "core/ownfd.h"
#include "core/opts.h"
#include "discovery/internal.h"
#include "arch.h"

#define BUILD_ID_MAX 64

struct func_sym {
	uint64_t value;
	uint64_t size;		/* st_size: 0 for hand-written assembly */
	uint16_t shndx;		/* ET_REL; 0 in linked files */
	bool undef;		/* SHN_UNDEF with an address: see load_functions */
	size_t seq;		/* position in the symbol table: ties */
	const char *name;
};

struct reloc {
	struct fl_elf_reloc pub;
	size_t seq;		/* order in the file: ties */
};

struct map_section {
	bool present;
	struct fl_elf_section sec;
	struct reloc *rel;	/* sorted by offset */
	size_t nrel;
	size_t cap;
};

struct fl_elf {
	Elf *e;
	void *image;		/* fl_elf_open_mem's copy, or NULL */
	const char *label;	/* for diagnostics, only during open */
	uint64_t fsize;
	uint16_t type;
	uint16_t machine;
	bool big;
	size_t shnum;
	size_t shstrndx;
	struct map_section map[FL_SECTION_KINDS];
	struct func_sym *funcs;	/* sorted by (shndx, value, seq) */
	size_t nfuncs;
	Elf64_Phdr *phdr;
	size_t phnum;
	unsigned char build_id[BUILD_ID_MAX];
	size_t build_id_size;
	uint32_t flags;		/* FL_ELF_* */
	struct fl_elf_code *code;	/* FL_ELF_CODE: sorted by (section, addr) */
	size_t ncode;
};

static const unsigned char empty_section[1];

static const char *map_name(int k)
{
	return fl_section_kind_name((enum fl_section_kind)k);
}

static uint16_t fix16(const struct fl_elf *f, uint16_t v)
{
	return f->big ? __builtin_bswap16(v) : v;
}

static uint64_t fix64(const struct fl_elf *f, uint64_t v)
{
	return f->big ? __builtin_bswap64(v) : v;
}

static uint64_t read_u64(const struct fl_elf *f, const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return fix64(f, v);
}

/* [off, off + size) within [0, limit)?  Overflow-safe. */
static bool within(uint64_t off, uint64_t size, uint64_t limit)
{
	return off <= limit && size <= limit - off;
}

static int libelf_error(const struct fl_elf *f, struct fl_diag *diag, const char *what)
{
	return fl_diag_say(diag, -EINVAL, "%s: %s: %s", f->label, what, elf_errmsg(-1));
}

/*
 * The ELF header, checked from raw bytes before libelf sees the file, so that
 * a wrong class, machine or a truncated file gets a precise message.
 */
static int check_header(struct fl_elf *f, const unsigned char *h, size_t n,
			uint32_t flags, struct fl_diag *diag)
{
	Elf64_Ehdr eh;
	uint16_t shnum, phnum, shentsize, phentsize;
	uint64_t shoff, phoff;

	if (n < SELFMAG || memcmp(h, ELFMAG, SELFMAG))
		return fl_diag_say(diag, -ENOEXEC, "%s: not an ELF file", f->label);
	if (n < EI_NIDENT)
		return fl_diag_say(diag, -EMSGSIZE, "%s: truncated ELF header (%zu bytes)",
				   f->label, n);
	if (h[EI_CLASS] == ELFCLASS32)
		return fl_diag_say(diag, -ENOEXEC,
				   "%s: 32-bit ELF file (ELFCLASS32): only 64-bit x86-64 is supported",
				   f->label);
	if (h[EI_CLASS] != ELFCLASS64)
		return fl_diag_say(diag, -ENOEXEC, "%s: bad ELF class %u", f->label,
				   h[EI_CLASS]);
	if (h[EI_DATA] != ELFDATA2LSB && h[EI_DATA] != ELFDATA2MSB)
		return fl_diag_say(diag, -ENOEXEC, "%s: bad ELF data encoding %u", f->label,
				   h[EI_DATA]);
	if (n < sizeof(eh))
		return fl_diag_say(diag, -EMSGSIZE, "%s: truncated ELF header (%zu bytes)",
				   f->label, n);

	f->big = h[EI_DATA] == ELFDATA2MSB;
	memcpy(&eh, h, sizeof(eh));
	f->type = fix16(f, eh.e_type);
	f->machine = fix16(f, eh.e_machine);
	shoff = fix64(f, eh.e_shoff);
	phoff = fix64(f, eh.e_phoff);
	shnum = fix16(f, eh.e_shnum);
	phnum = fix16(f, eh.e_phnum);
	shentsize = fix16(f, eh.e_shentsize);
	phentsize = fix16(f, eh.e_phentsize);

	if (f->machine != FL_ARCH_MACHINE && !(flags & FL_ELF_ANY_MACHINE))
		return fl_diag_say(diag, -ENOEXEC,
				   "%s: e_machine %u is not this machine's (%s, %u)",
				   f->label, f->machine, FL_ARCH_NAME, FL_ARCH_MACHINE);
	if (f->type != ET_REL && f->type != ET_EXEC && f->type != ET_DYN)
		return fl_diag_say(diag, -ENOEXEC,
				   "%s: e_type %u: only ET_REL, ET_EXEC and ET_DYN files have maps",
				   f->label, f->type);
	/* shnum 0 with shoff set: extended numbering, libelf checks the rest. */
	if (shoff && shnum) {
		if (shentsize != sizeof(Elf64_Shdr))
			return fl_diag_say(diag, -EINVAL, "%s: e_shentsize %u, expected %zu",
					   f->label, shentsize, sizeof(Elf64_Shdr));
		if (!within(shoff, (uint64_t)shnum * sizeof(Elf64_Shdr), f->fsize))
			return fl_diag_say(diag, -EMSGSIZE,
					   "%s: section header table (offset 0x%lx, %u entries) reaches past the end of the file (%lu bytes)",
					   f->label, shoff, shnum, f->fsize);
	} else if (shoff && !within(shoff, sizeof(Elf64_Shdr), f->fsize)) {
		return fl_diag_say(diag, -EMSGSIZE,
				   "%s: section header table (offset 0x%lx) is past the end of the file (%lu bytes)",
				   f->label, shoff, f->fsize);
	}
	if (phoff && phnum && phnum != PN_XNUM) {
		if (phentsize != sizeof(Elf64_Phdr))
			return fl_diag_say(diag, -EINVAL, "%s: e_phentsize %u, expected %zu",
					   f->label, phentsize, sizeof(Elf64_Phdr));
		if (!within(phoff, (uint64_t)phnum * sizeof(Elf64_Phdr), f->fsize))
			return fl_diag_say(diag, -EMSGSIZE,
					   "%s: program header table (offset 0x%lx, %u entries) reaches past the end of the file (%lu bytes)",
					   f->label, phoff, phnum, f->fsize);
	}
	return 0;
}

static const char *section_name(const struct fl_elf *f, size_t index)
{
	Elf_Scn *scn;
	GElf_Shdr sh;
	const char *name;

	if (index == 0 || index >= f->shnum)
		return NULL;
	scn = elf_getscn(f->e, index);
	if (!scn || !gelf_getshdr(scn, &sh))
		return NULL;
	name = elf_strptr(f->e, f->shstrndx, sh.sh_name);
	return name;
}

/* A section header whose bytes must be in the file. */
static int check_in_file(const struct fl_elf *f, const GElf_Shdr *sh, const char *name,
			 struct fl_diag *diag)
{
	if (sh->sh_type == SHT_NOBITS)
		return fl_diag_say(diag, -EINVAL,
				   "%s: %s: section is SHT_NOBITS: it has no bytes in the file",
				   f->label, name);
	if (!within(sh->sh_offset, sh->sh_size, f->fsize))
		return fl_diag_say(diag, -EMSGSIZE,
				   "%s: %s: section (offset 0x%lx, size 0x%lx) reaches past the end of the file (%lu bytes)",
				   f->label, name, sh->sh_offset, sh->sh_size, f->fsize);
	if (sh->sh_flags & SHF_COMPRESSED)
		return fl_diag_say(diag, -EINVAL, "%s: %s: compressed sections are not supported",
				   f->label, name);
	return 0;
}

static int find_maps(struct fl_elf *f, struct fl_diag *diag)
{
	size_t i;
	int k, err;

	for (i = 1; i < f->shnum; i++) {
		Elf_Scn *scn = elf_getscn(f->e, i);
		struct map_section *m;
		const char *name;
		Elf_Data *d;
		GElf_Shdr sh;

		if (!scn || !gelf_getshdr(scn, &sh))
			return libelf_error(f, diag, "section header");
		name = elf_strptr(f->e, f->shstrndx, sh.sh_name);
		if (!name)
			continue;
		for (k = 0; k < FL_SECTION_KINDS; k++)
			if (!strcmp(name, map_name(k)))
				break;
		if (k == FL_SECTION_KINDS)
			continue;
		m = &f->map[k];
		if (m->present)
			return fl_diag_say(diag, -EINVAL,
					   "%s: %s: two sections of that name (%u and %zu)",
					   f->label, name, m->sec.index, i);
		err = check_in_file(f, &sh, name, diag);
		if (err)
			return err;
		if (sh.sh_type != SHT_PROGBITS)
			return fl_diag_say(diag, -EINVAL,
					   "%s: %s: section type %u, expected SHT_PROGBITS",
					   f->label, name, sh.sh_type);
		m->present = true;
		m->sec.size = sh.sh_size;
		m->sec.addr = sh.sh_addr;
		m->sec.offset = sh.sh_offset;
		m->sec.flags = sh.sh_flags;
		m->sec.index = i;
		m->sec.parse_flags = f->big ? FL_PARSE_BIG_ENDIAN : 0;
		m->sec.data = empty_section;
		if (sh.sh_size) {
			d = elf_rawdata(scn, NULL);
			if (!d || !d->d_buf || d->d_size != sh.sh_size)
				return libelf_error(f, diag, name);
			m->sec.data = d->d_buf;
		}
	}
	return 0;
}

static int cmp_func(const void *a, const void *b)
{
	const struct func_sym *x = a, *y = b;

	if (x->shndx != y->shndx)
		return x->shndx < y->shndx ? -1 : 1;
	if (x->value != y->value)
		return x->value < y->value ? -1 : 1;
	if (x->undef != y->undef)
		return x->undef ? 1 : -1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/*
 * The STT_FUNC symbols of .symtab, else .dynsym, for naming functions.  A
 * symbol table that cannot be read only costs the names: it is not an error.
 * In a linked file an undefined STT_FUNC with a non-zero value names its
 * canonical address: lld 14 -pie turns every function the maps name into
 * one (SHN_UNDEF, st_value = the function), so these count too, after the
 * defined symbols at the same address.
 */
static int load_functions(struct fl_elf *f)
{
	Elf_Scn *symscn = NULL, *scn = NULL;
	GElf_Shdr sh, symsh = { 0 };
	Elf_Data *d;
	size_t i, n;

	while ((scn = elf_nextscn(f->e, scn))) {
		if (!gelf_getshdr(scn, &sh))
			return 0;
		if (sh.sh_type == SHT_SYMTAB || (sh.sh_type == SHT_DYNSYM && !symscn)) {
			symscn = scn;
			symsh = sh;
			if (sh.sh_type == SHT_SYMTAB)
				break;
		}
	}
	if (!symscn || symsh.sh_type == SHT_NOBITS ||
	    !within(symsh.sh_offset, symsh.sh_size, f->fsize))
		return 0;
	d = elf_getdata(symscn, NULL);
	if (!d)
		return 0;
	n = d->d_size / sizeof(Elf64_Sym);
	if (!n)
		return 0;
	f->funcs = calloc(n, sizeof(*f->funcs));
	if (!f->funcs)
		return -ENOMEM;
	for (i = 1; i < n; i++) {
		const char *name;
		GElf_Sym s;
		bool undef;
		int t;

		if (!gelf_getsym(d, i, &s))
			break;
		t = GELF_ST_TYPE(s.st_info);
		undef = s.st_shndx == SHN_UNDEF;

		if ((t != STT_FUNC && t != STT_GNU_IFUNC) || s.st_shndx >= SHN_LORESERVE ||
		    !s.st_name || (undef && (f->type == ET_REL || !s.st_value)))
			continue;
		name = elf_strptr(f->e, symsh.sh_link, s.st_name);
		if (!name || !*name)
			continue;
		f->funcs[f->nfuncs++] = (struct func_sym){
			.value = s.st_value,
			.size = s.st_size,
			.shndx = f->type == ET_REL ? s.st_shndx : 0,
			.undef = undef,
			.seq = i,
			.name = name,
		};
	}
	qsort(f->funcs, f->nfuncs, sizeof(*f->funcs), cmp_func);
	return 0;
}

static const char *function_at(const struct fl_elf *f, uint16_t shndx, uint64_t value)
{
	size_t lo = 0, hi = f->nfuncs;

	if (f->type != ET_REL)
		shndx = 0;
	/* The first symbol (in table order) at (shndx, value). */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct func_sym *s = &f->funcs[mid];

		if (s->shndx < shndx || (s->shndx == shndx && s->value < value))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < f->nfuncs && f->funcs[lo].shndx == shndx && f->funcs[lo].value == value)
		return f->funcs[lo].name;
	return NULL;
}

static int add_reloc(const struct fl_elf *f, struct map_section *m,
		     const struct fl_elf_reloc *r, const char *rname, struct fl_diag *diag)
{
	/*
	 * A map's relocated fields are 8-byte addresses in 16- or 24-byte
	 * records: more relocations than a quarter of its bytes is a hostile
	 * file (RELR can name 63 fields in 8 bytes), not one to spend memory on.
	 */
	if (m->nrel >= m->sec.size / 4 + 1)
		return fl_diag_say(diag, -EINVAL,
				   "%s: %s: more relocations against %s than a %zu-byte map can hold",
				   f->label, rname,
				   m == &f->map[FL_SECTION_FAULTMAP] ? FL_FAULTMAP_SECTION
								       : FL_STACKMAP_SECTION,
				   m->sec.size);
	if (m->nrel == m->cap) {
		size_t cap = m->cap ? 2 * m->cap : 8;
		struct reloc *p = realloc(m->rel, cap * sizeof(*p));

		if (!p)
			return fl_diag_say(diag, -ENOMEM, "%s: out of memory", f->label);
		m->rel = p;
		m->cap = cap;
	}
	m->rel[m->nrel].pub = *r;
	m->rel[m->nrel].seq = m->nrel;
	m->nrel++;
	return 0;
}

/* The value of the 8-byte field at off of a map section, 0 if it does not fit. */
static uint64_t field_value(const struct fl_elf *f, const struct map_section *m, uint64_t off)
{
	if (!within(off, 8, m->sec.size))
		return 0;
	return read_u64(f, (const unsigned char *)m->sec.data + off);
}

/* The link-time address a relocation gives a field, for naming. */
static bool reloc_target(const struct fl_elf *f, const struct fl_elf_reloc *r,
			 uint64_t *addr)
{
	const struct fl_disc_relocs *k = fl_disc_relocs_of(f->machine);

	if (!k)
		return false;
	if (r->type == k->relative) {
		*addr = (uint64_t)r->addend;
		return true;
	}
	if (r->type == k->abs64 && r->symbol_section != SHN_UNDEF) {
		*addr = r->symbol_value + (uint64_t)r->addend;
		return true;
	}
	return false;
}

struct symtab {
	Elf_Data *data;
	size_t count;
	size_t strndx;
};

static int open_symtab(const struct fl_elf *f, size_t link, const char *rname,
		       struct symtab *st, struct fl_diag *diag)
{
	Elf_Scn *scn;
	GElf_Shdr sh;
	int err;

	memset(st, 0, sizeof(*st));
	if (link == 0)
		return 0;	/* no symbols: only symbol 0 is valid */
	scn = link < f->shnum ? elf_getscn(f->e, link) : NULL;
	if (!scn || !gelf_getshdr(scn, &sh) ||
	    (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM))
		return fl_diag_say(diag, -EINVAL,
				   "%s: %s: sh_link %zu is not a symbol table",
				   f->label, rname, link);
	err = check_in_file(f, &sh, "symbol table", diag);
	if (err)
		return err;
	if (sh.sh_entsize != sizeof(Elf64_Sym))
		return fl_diag_say(diag, -EINVAL, "%s: %s: symbol table entry size %lu",
				   f->label, rname, sh.sh_entsize);
	st->data = elf_getdata(scn, NULL);
	if (!st->data)
		return libelf_error(f, diag, rname);
	st->count = st->data->d_size / sizeof(Elf64_Sym);
	st->strndx = sh.sh_link;
	return 0;
}

static int fill_symbol(const struct fl_elf *f, const struct symtab *st, size_t sym,
		       const char *rname, size_t i, struct fl_elf_reloc *r,
		       struct fl_diag *diag)
{
	GElf_Sym s;
	const char *name;

	r->symbol = "";
	if (sym == 0)
		return 0;
	if (sym >= st->count || !gelf_getsym(st->data, sym, &s))
		return fl_diag_say(diag, -EINVAL,
				   "%s: %s: relocation %zu: symbol index %zu out of range (%zu symbols)",
				   f->label, rname, i, sym, st->count);
	if (GELF_ST_TYPE(s.st_info) == STT_SECTION)
		name = section_name(f, s.st_shndx);
	else
		name = elf_strptr(f->e, st->strndx, s.st_name);
	r->symbol = name ? name : "";
	r->symbol_value = s.st_value;
	r->symbol_section = s.st_shndx;
	return 0;
}

/*
 * The entries of one SHT_RELA/SHT_REL section that apply to map section k.
 * ET_REL: the section's own relocations (r_offset is a section offset);
 * linked files: dynamic relocations (r_offset is an address).
 */
static int load_rel_section(struct fl_elf *f, Elf_Scn *scn, const GElf_Shdr *sh,
			    const char *rname, struct fl_diag *diag)
{
	bool rela = sh->sh_type == SHT_RELA;
	size_t entsize = rela ? sizeof(Elf64_Rela) : sizeof(Elf64_Rel);
	bool dynamic = f->type != ET_REL;
	struct symtab st;
	Elf_Data *d;
	size_t i, n;
	int k, err;

	err = check_in_file(f, sh, rname, diag);
	if (err)
		return err;
	if (sh->sh_entsize != entsize)
		return fl_diag_say(diag, -EINVAL, "%s: %s: entry size %lu, expected %zu",
				   f->label, rname, sh->sh_entsize, entsize);
	err = open_symtab(f, sh->sh_link, rname, &st, diag);
	if (err)
		return err;
	d = elf_getdata(scn, NULL);
	if (!d)
		return sh->sh_size ? libelf_error(f, diag, rname) : 0;
	n = d->d_size / entsize;
	for (i = 0; i < n; i++) {
		struct fl_elf_reloc r = { .dynamic = dynamic };
		GElf_Rela ra;
		GElf_Rel rl;
		struct map_section *m = NULL;
		uint64_t target;

		if (rela) {
			if (!gelf_getrela(d, i, &ra))
				return libelf_error(f, diag, rname);
		} else {
			if (!gelf_getrel(d, i, &rl))
				return libelf_error(f, diag, rname);
			ra.r_offset = rl.r_offset;
			ra.r_info = rl.r_info;
			ra.r_addend = 0;
		}
		if (dynamic) {
			for (k = 0; k < FL_SECTION_KINDS; k++) {
				struct map_section *c = &f->map[k];

				if (c->present && ra.r_offset >= c->sec.addr &&
				    ra.r_offset - c->sec.addr < c->sec.size) {
					m = c;
					break;
				}
			}
			if (!m)
				continue;
			r.offset = ra.r_offset - m->sec.addr;
		} else {
			for (k = 0; k < FL_SECTION_KINDS; k++) {
				if (f->map[k].present && f->map[k].sec.index == sh->sh_info) {
					m = &f->map[k];
					break;
				}
			}
			if (ra.r_offset >= m->sec.size)
				return fl_diag_say(diag, -EINVAL,
						   "%s: %s: relocation %zu: offset 0x%lx is past the end of %s (%zu bytes)",
						   f->label, rname, i, ra.r_offset,
						   map_name(k), m->sec.size);
			r.offset = ra.r_offset;
		}
		r.type = GELF_R_TYPE(ra.r_info);
		r.addend = rela ? ra.r_addend : (int64_t)field_value(f, m, r.offset);
		err = fill_symbol(f, &st, GELF_R_SYM(ra.r_info), rname, i, &r, diag);
		if (err)
			return err;
		if (!dynamic)
			r.function = function_at(f, r.symbol_section,
						 r.symbol_value + (uint64_t)r.addend);
		else if (reloc_target(f, &r, &target))
			r.function = function_at(f, 0, target);
		err = add_reloc(f, m, &r, rname, diag);
		if (err)
			return err;
	}
	return 0;
}

/*
 * SHT_RELR (packed relative relocations): an even entry is an address to
 * relocate, an odd one a bitmap of the 63 words that follow the last
 * address.  Each relocated word holds its addend.
 */
static int load_relr_section(struct fl_elf *f, Elf_Scn *scn, const GElf_Shdr *sh,
			     const char *rname, struct fl_diag *diag)
{
	const unsigned char *p;
	uint64_t where = 0;
	Elf_Data *d;
	size_t i, n;
	int err, k;

	err = check_in_file(f, sh, rname, diag);
	if (err)
		return err;
	d = elf_rawdata(scn, NULL);
	if (!d)
		return sh->sh_size ? libelf_error(f, diag, rname) : 0;
	p = d->d_buf;
	n = d->d_size / 8;
	for (i = 0; i < n; i++) {
		uint64_t e = read_u64(f, p + 8 * i), bits;
		uint64_t addrs[64];
		size_t j, na = 0;

		if (!(e & 1)) {
			addrs[na++] = e;
			where = e + 8;
		} else {
			for (bits = e >> 1, j = 0; bits; bits >>= 1, j++)
				if (bits & 1)
					addrs[na++] = where + 8 * j;
			where += 63 * 8;
		}
		for (j = 0; j < na; j++) {
			for (k = 0; k < FL_SECTION_KINDS; k++) {
				struct map_section *m = &f->map[k];
				struct fl_elf_reloc r = { .dynamic = true, .symbol = "" };
				uint64_t target;

				if (!m->present || addrs[j] < m->sec.addr ||
				    addrs[j] - m->sec.addr >= m->sec.size)
					continue;
				r.offset = addrs[j] - m->sec.addr;
				r.type = fl_disc_relocs_of(f->machine) ?
					 fl_disc_relocs_of(f->machine)->relative : 0;
				r.addend = (int64_t)field_value(f, m, r.offset);
				if (reloc_target(f, &r, &target))
					r.function = function_at(f, 0, target);
				err = add_reloc(f, m, &r, rname, diag);
				if (err)
					return err;
			}
		}
	}
	return 0;
}

static int cmp_reloc(const void *a, const void *b)
{
	const struct reloc *x = a, *y = b;

	if (x->pub.offset != y->pub.offset)
		return x->pub.offset < y->pub.offset ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int load_relocs(struct fl_elf *f, struct fl_diag *diag)
{
	size_t i;
	int k, err;

	if (!f->map[0].present && !f->map[1].present)
		return 0;
	for (i = 1; i < f->shnum; i++) {
		Elf_Scn *scn = elf_getscn(f->e, i);
		const char *rname;
		GElf_Shdr sh;
		bool mine = false;

		if (!scn || !gelf_getshdr(scn, &sh))
			return libelf_error(f, diag, "section header");
		if (sh.sh_type != SHT_RELA && sh.sh_type != SHT_REL && sh.sh_type != SHT_RELR)
			continue;
		if (f->type == ET_REL) {
			for (k = 0; k < FL_SECTION_KINDS; k++)
				if (f->map[k].present && f->map[k].sec.index == sh.sh_info)
					mine = true;
			if (sh.sh_type == SHT_RELR)
				mine = false;
		} else {
			/* Dynamic relocations are the SHF_ALLOC ones (not --emit-relocs'). */
			mine = sh.sh_flags & SHF_ALLOC;
		}
		if (!mine)
			continue;
		rname = elf_strptr(f->e, f->shstrndx, sh.sh_name);
		if (!rname)
			rname = "relocation section";
		if (sh.sh_type == SHT_RELR)
			err = load_relr_section(f, scn, &sh, rname, diag);
		else
			err = load_rel_section(f, scn, &sh, rname, diag);
		if (err)
			return err;
	}
	for (k = 0; k < FL_SECTION_KINDS; k++)
		if (f->map[k].nrel)
			qsort(f->map[k].rel, f->map[k].nrel, sizeof(struct reloc), cmp_reloc);
	return 0;
}

static int load_phdrs(struct fl_elf *f, struct fl_diag *diag)
{
	size_t i, n;

	if (f->type == ET_REL)
		return 0;
	if (elf_getphdrnum(f->e, &n))
		return libelf_error(f, diag, "program headers");
	if (!n)
		return 0;
	f->phdr = calloc(n, sizeof(*f->phdr));
	if (!f->phdr)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(f->e, i, &ph))
			return libelf_error(f, diag, "program header");
		f->phdr[i] = ph;
	}
	f->phnum = n;

	/* The GNU build ID, to tell a rebuilt file from the one that was loaded. */
	for (i = 0; i < n && !f->build_id_size; i++) {
		GElf_Nhdr nh;
		size_t off = 0, noff, doff;
		Elf_Data *d;

		if (f->phdr[i].p_type != PT_NOTE ||
		    !within(f->phdr[i].p_offset, f->phdr[i].p_filesz, f->fsize))
			continue;
		d = elf_getdata_rawchunk(f->e, f->phdr[i].p_offset, f->phdr[i].p_filesz,
					 ELF_T_NHDR);
		if (!d)
			continue;
		while ((off = gelf_getnote(d, off, &nh, &noff, &doff)) > 0) {
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp((const char *)d->d_buf + noff, "GNU", 4) &&
			    nh.n_descsz && nh.n_descsz <= BUILD_ID_MAX) {
				memcpy(f->build_id, (const char *)d->d_buf + doff, nh.n_descsz);
				f->build_id_size = nh.n_descsz;
				break;
			}
		}
	}
	return 0;
}

static int add_code(struct fl_elf *f, uint32_t section, uint64_t addr, const void *data,
		    size_t size)
{
	struct fl_elf_code *c = realloc(f->code, (f->ncode + 1) * sizeof(*c));

	if (!c)
		return -ENOMEM;
	f->code = c;
	f->code[f->ncode++] = (struct fl_elf_code){
		.data = data, .size = size, .addr = addr, .section = section,
	};
	return 0;
}

static int cmp_code(const void *a, const void *b)
{
	const struct fl_elf_code *x = a, *y = b;

	if (x->section != y->section)
		return x->section < y->section ? -1 : 1;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/*
 * FL_ELF_CODE: the bytes of the executable SHF_EXECINSTR sections (ET_REL)
 * or PT_LOAD segments (linked files), read now: the file is not kept open.
 * Segments are taken as their file bytes; what p_memsz adds is not code.
 */
static int load_code(struct fl_elf *f, struct fl_diag *diag)
{
	int err;

	if (f->type == ET_REL) {
		for (size_t i = 1; i < f->shnum; i++) {
			Elf_Scn *scn = elf_getscn(f->e, i);
			const char *name;
			GElf_Shdr sh;
			Elf_Data *d;

			if (!scn || !gelf_getshdr(scn, &sh))
				return libelf_error(f, diag, "section header");
			if (!(sh.sh_flags & SHF_EXECINSTR) || sh.sh_type != SHT_PROGBITS ||
			    !sh.sh_size)
				continue;
			name = section_name(f, i);
			err = check_in_file(f, &sh, name ? name : "code section", diag);
			if (err)
				return err;
			d = elf_rawdata(scn, NULL);
			if (!d || !d->d_buf || d->d_size != sh.sh_size)
				return libelf_error(f, diag, name ? name : "code section");
			/* In index order: sorted as they come. */
			err = add_code(f, (uint32_t)i, sh.sh_addr, d->d_buf, sh.sh_size);
			if (err)
				return err;
		}
		return 0;
	}
	for (size_t i = 0; i < f->phnum; i++) {
		const Elf64_Phdr *ph = &f->phdr[i];
		Elf_Data *d;

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X) || !ph->p_filesz)
			continue;
		if (!within(ph->p_offset, ph->p_filesz, f->fsize))
			return fl_diag_say(diag, -EMSGSIZE,
					   "%s: program header %zu (offset 0x%lx, size 0x%lx) reaches past the end of the file (%lu bytes)",
					   f->label, i, ph->p_offset, ph->p_filesz, f->fsize);
		d = elf_getdata_rawchunk(f->e, (int64_t)ph->p_offset, ph->p_filesz, ELF_T_BYTE);
		if (!d || !d->d_buf)
			return libelf_error(f, diag, "executable segment");
		err = add_code(f, 0, ph->p_vaddr, d->d_buf, ph->p_filesz);
		if (err)
			return err;
	}
	qsort(f->code, f->ncode, sizeof(*f->code), cmp_code);
	return 0;
}

/* After check_header: everything else, through libelf. */
static int load(struct fl_elf *f, struct fl_diag *diag)
{
	int err;

	if (elf_kind(f->e) != ELF_K_ELF)
		return libelf_error(f, diag, "not an ELF file");
	if (!gelf_getclass(f->e))
		return libelf_error(f, diag, "ELF header");
	if (elf_getshdrnum(f->e, &f->shnum))
		return libelf_error(f, diag, "section headers");
	if (f->shnum > 0 && elf_getshdrstrndx(f->e, &f->shstrndx))
		return libelf_error(f, diag, "section name string table");
	if (f->shnum > 0 && f->shstrndx >= f->shnum)
		return fl_diag_say(diag, -EINVAL, "%s: e_shstrndx %zu is not a section (%zu sections)",
				   f->label, f->shstrndx, f->shnum);
	err = find_maps(f, diag);
	if (!err && !(f->flags & FL_ELF_NO_SYMBOLS))
		err = load_functions(f);
	if (!err && !(f->flags & FL_ELF_NO_SYMBOLS))
		err = load_relocs(f, diag);
	if (!err)
		err = load_phdrs(f, diag);
	if (!err && (f->flags & FL_ELF_CODE))
		err = load_code(f, diag);
	if (err == -ENOMEM)
		fl_diag_say(diag, err, "%s: out of memory", f->label);
	return err;
}

static int get_opts(struct fl_elf_opts *o, const struct fl_elf_opts *opts,
		    struct fl_diag *diag)
{
	if (fl_opts_copy(o, sizeof(*o), opts))
		return fl_diag_say(diag, -EINVAL, "struct fl_elf_opts: bad sz or unknown fields set");
	if (o->flags & ~(uint32_t)(FL_ELF_ANY_MACHINE | FL_ELF_CODE | FL_ELF_MAP |
				   FL_ELF_NO_SYMBOLS))
		return fl_diag_say(diag, -EINVAL, "struct fl_elf_opts: unknown flags 0x%x",
				   o->flags);
	return 0;
}

int fl_elf_open(const char *path, const struct fl_elf_opts *opts,
		struct fl_elf **out, struct fl_diag *diag)
{
	unsigned char hdr[sizeof(Elf64_Ehdr)];
	struct fl_elf_opts o;
	struct fl_elf *f;
	struct stat stb;
	ssize_t n;
	int fd, err;

	*out = NULL;
	err = get_opts(&o, opts, diag);
	if (err)
		return err;
	err = fl_disc_libelf_init();
	if (err)
		return fl_diag_say(diag, err, "%s: libelf does not work", path);
	/* O_NONBLOCK: a FIFO must not block the open; it is refused below. */
	fd = fl_ownfd_transient(open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK));
	if (fd < 0) {
		err = -errno;
		return fl_diag_say(diag, err, "%s: %s", path, strerror(-err));
	}
	if (fstat(fd, &stb) || !S_ISREG(stb.st_mode)) {
		close(fd);
		return fl_diag_say(diag, -EINVAL, "%s: not a regular file", path);
	}
	n = pread(fd, hdr, sizeof(hdr), 0);
	if (n < 0) {
		err = -errno;
		close(fd);
		return fl_diag_say(diag, err, "%s: %s", path, strerror(-err));
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		close(fd);
		return fl_diag_say(diag, -ENOMEM, "%s: out of memory", path);
	}
	f->label = path;
	f->fsize = (uint64_t)stb.st_size;
	f->flags = o.flags;
	err = check_header(f, hdr, (size_t)n, o.flags, diag);
	if (!err) {
		/*
		 * ELF_C_READ, not mmap, unless the caller takes the risk: a
		 * file truncated under us must not SIGBUS a process whose
		 * SIGBUS handler dispatches faults (FL_ELF_MAP in discovery.h).
		 */
		f->e = elf_begin(fd, (o.flags & FL_ELF_MAP) ? ELF_C_READ_MMAP : ELF_C_READ, NULL);
		if (!f->e)
			err = libelf_error(f, diag, "elf_begin");
		else
			err = load(f, diag);
	}
	/* All that is needed has been read. */
	if (f->e)
		elf_cntl(f->e, ELF_C_FDDONE);
	close(fd);
	f->label = NULL;
	if (err) {
		fl_elf_close(f);
		return err;
	}
	*out = f;
	return 0;
}

int fl_elf_open_mem(const void *data, size_t size, const struct fl_elf_opts *opts,
		    struct fl_elf **out, struct fl_diag *diag)
{
	struct fl_elf_opts o;
	struct fl_elf *f;
	int err;

	*out = NULL;
	err = get_opts(&o, opts, diag);
	if (err)
		return err;
	if (!data && size)
		return fl_diag_say(diag, -EINVAL, "(memory): NULL buffer");
	err = fl_disc_libelf_init();
	if (err)
		return fl_diag_say(diag, err, "(memory): libelf does not work");
	f = calloc(1, sizeof(*f));
	if (!f)
		return fl_diag_say(diag, -ENOMEM, "(memory): out of memory");
	/*
	 * A private copy: libelf may convert data in place in an image it was
	 * given, and the caller's buffer need not outlive this call.
	 */
	f->image = malloc(size ? size : 1);
	if (!f->image) {
		free(f);
		return fl_diag_say(diag, -ENOMEM, "(memory): out of memory");
	}
	if (size)
		memcpy(f->image, data, size);
	f->label = "(memory)";
	f->fsize = size;
	f->flags = o.flags;
	/* check_header first: libelf is given only what looks like ELF64. */
	err = check_header(f, f->image, size < sizeof(Elf64_Ehdr) ? size : sizeof(Elf64_Ehdr),
			   o.flags, diag);
	if (!err) {
		f->e = elf_memory(f->image, size);
		if (!f->e)
			err = libelf_error(f, diag, "elf_memory");
		else
			err = load(f, diag);
	}
	f->label = NULL;
	if (err) {
		fl_elf_close(f);
		return err;
	}
	*out = f;
	return 0;
}

void fl_elf_close(struct fl_elf *elf)
{
	int k;

	if (!elf)
		return;
	for (k = 0; k < FL_SECTION_KINDS; k++)
		free(elf->map[k].rel);
	free(elf->funcs);
	free(elf->phdr);
	free(elf->code);
	if (elf->e)
		elf_end(elf->e);
	free(elf->image);
	free(elf);
}

uint16_t fl_elf_type(const struct fl_elf *elf)
{
	return elf->type;
}

uint16_t fl_elf_machine(const struct fl_elf *elf)
{
	return elf->machine;
}

uint32_t fl_elf_parse_flags(const struct fl_elf *elf)
{
	return elf->big ? FL_PARSE_BIG_ENDIAN : 0;
}

static const struct map_section *get_map(const struct fl_elf *elf, enum fl_section_kind kind,
					 int *err)
{
	if ((unsigned)kind >= FL_SECTION_KINDS) {
		*err = -EINVAL;
		return NULL;
	}
	if (!elf->map[kind].present) {
		*err = -ENOENT;
		return NULL;
	}
	return &elf->map[kind];
}

int fl_elf_section(const struct fl_elf *elf, enum fl_section_kind kind,
		   struct fl_elf_section *sec)
{
	const struct map_section *m;
	int err;

	m = get_map(elf, kind, &err);
	if (!m)
		return err;
	*sec = m->sec;
	return 0;
}

static const struct fl_elf_reloc *find_reloc(const struct map_section *m, uint64_t offset)
{
	size_t lo = 0, hi = m->nrel;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->rel[mid].pub.offset < offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < m->nrel && m->rel[lo].pub.offset == offset)
		return &m->rel[lo].pub;
	return NULL;
}

int fl_elf_reloc(const struct fl_elf *elf, enum fl_section_kind kind,
		 size_t offset, struct fl_elf_reloc *rel)
{
	const struct map_section *m;
	const struct fl_elf_reloc *r;
	int err;

	m = get_map(elf, kind, &err);
	if (!m)
		return err;
	if (elf->flags & FL_ELF_NO_SYMBOLS)
		return -ENODATA;
	r = find_reloc(m, offset);
	if (!r)
		return -ENOENT;
	*rel = *r;
	return 0;
}

int fl_elf_function_address(const struct fl_elf *elf, enum fl_section_kind kind,
			    size_t address_offset, uint64_t stored, uint64_t *addr)
{
	const struct map_section *m;
	const struct fl_elf_reloc *r;
	int err;

	m = get_map(elf, kind, &err);
	if (!m)
		return err;
	if (elf->type == ET_REL)
		return -EOPNOTSUPP;
	if (elf->flags & FL_ELF_NO_SYMBOLS)
		return -ENODATA;
	if (!within(address_offset, 8, m->sec.size))
		return -EINVAL;
	r = find_reloc(m, address_offset);
	if (!r) {
		*addr = stored;
		return 0;
	}
	return reloc_target(elf, r, addr) ? 0 : -ENXIO;
}

const char *fl_elf_function_name(const struct fl_elf *elf, enum fl_section_kind kind,
				 size_t address_offset, uint64_t stored)
{
	const struct map_section *m;
	const struct fl_elf_reloc *r;
	uint64_t addr;
	int err;

	m = get_map(elf, kind, &err);
	if (!m)
		return NULL;
	if (elf->type == ET_REL) {
		r = find_reloc(m, address_offset);
		return r ? r->function : NULL;
	}
	if (fl_elf_function_address(elf, kind, address_offset, stored, &addr))
		return NULL;
	return function_at(elf, 0, addr);
}

const char *fl_elf_function_containing(const struct fl_elf *elf, uint64_t addr,
				       uint64_t *offset)
{
	size_t lo = 0, hi = elf->nfuncs;

	if (elf->type == ET_REL)
		return NULL;
	/* Past the last function whose value is at or below addr. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (elf->funcs[mid].value <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/*
	 * A few back, for symbols nested in or overlapping a larger one; an
	 * unsized symbol (hand-written assembly) runs up to the next one.
	 */
	for (size_t i = lo, k = 0; i > 0 && k < 8; i--, k++) {
		const struct func_sym *s = &elf->funcs[i - 1];

		if (addr - s->value < s->size || (s->size == 0 && i == lo)) {
			*offset = addr - s->value;
			return s->name;
		}
	}
	return NULL;
}

bool fl_elf_function_size(const struct fl_elf *elf, uint32_t section, uint64_t value,
			  uint64_t *size)
{
	for (size_t i = 0; i < elf->nfuncs; i++) {
		const struct func_sym *s = &elf->funcs[i];

		if (s->value == value && s->size && !s->undef &&
		    (elf->type != ET_REL || s->shndx == section)) {
			*size = s->size;
			return true;
		}
	}
	return false;
}

int fl_elf_file_address(const struct fl_elf *elf, uint64_t file_offset, uint64_t *addr)
{
	for (size_t i = 0; i < elf->phnum; i++) {
		const Elf64_Phdr *ph = &elf->phdr[i];

		if (ph->p_type == PT_LOAD && file_offset >= ph->p_offset &&
		    file_offset - ph->p_offset < ph->p_filesz) {
			*addr = file_offset - ph->p_offset + ph->p_vaddr;
			return 0;
		}
	}
	return -ENOENT;
}

int fl_elf_code(const struct fl_elf *elf, uint32_t section, uint64_t addr,
		struct fl_elf_code *code)
{
	size_t lo = 0, hi = elf->ncode;
	const struct fl_elf_code *c;

	if (!(elf->flags & FL_ELF_CODE))
		return -ENODATA;
	if (elf->type != ET_REL)
		section = 0;
	/* The last part at or below (section, addr); parts do not overlap. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		c = &elf->code[mid];
		if (c->section < section || (c->section == section && c->addr <= addr))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return -ENOENT;
	c = &elf->code[lo - 1];
	if (c->section != section || addr - c->addr >= c->size)
		return -ENOENT;
	*code = *c;
	return 0;
}

int fl_elf_image(const struct fl_elf *elf, struct fl_range *image)
{
	uint64_t lo = UINT64_MAX, hi = 0;

	for (size_t i = 0; i < elf->phnum; i++) {
		const Elf64_Phdr *ph = &elf->phdr[i];

		if (ph->p_type != PT_LOAD || !ph->p_memsz || ph->p_vaddr + ph->p_memsz < ph->p_vaddr)
			continue;
		if (ph->p_vaddr < lo)
			lo = ph->p_vaddr;
		if (ph->p_vaddr + ph->p_memsz > hi)
			hi = ph->p_vaddr + ph->p_memsz;
	}
	if (lo >= hi)
		return -ENOENT;
	image->start = lo & ~(uint64_t)4095;
	image->end = hi > UINT64_MAX - 4095 ? UINT64_MAX & ~(uint64_t)4095 : (hi + 4095) & ~(uint64_t)4095;
	return 0;
}

void fl_elf_load_info(const struct fl_elf *elf, struct fl_elf_load_info *li)
{
	li->phnum = elf->phnum;
	li->phdr = elf->phdr;
	li->build_id_size = elf->build_id_size;
	li->build_id = elf->build_id;
}
