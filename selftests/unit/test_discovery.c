// SPDX-License-Identifier: MIT
/*
 * The discovery layer on ELF images built here, byte by byte: what it finds,
 * every rejection, relocations and names, and hostile input.  Real linked
 * programs are tested in selftests/discovery.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gnu/libc-version.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <check.h>

#include <faultline/discovery.h>

#include "arch.h"
#include "suites.h"
#include "vec.h"

/* This machine's relocation types: the images are this machine's files. */
#define REL_RELATIVE (FL_ARCH_MACHINE == EM_X86_64 ? R_X86_64_RELATIVE : R_AARCH64_RELATIVE)
#define REL_ABS64 (FL_ARCH_MACHINE == EM_X86_64 ? R_X86_64_64 : R_AARCH64_ABS64)

/* ------------------------------------------------------------------------
 * A minimal ELF writer: header, section contents, .shstrtab, section headers.
 */

struct sec {
	const char *name;
	uint32_t type;
	uint64_t flags;
	uint64_t addr;
	const void *data;
	size_t size;
	uint32_t link;
	uint32_t info;
	uint64_t entsize;
};

struct img {
	struct vec v;
	size_t shoff;		/* where the section headers are */
	size_t nsec;		/* including the null section and .shstrtab */
	size_t data_off[16];	/* file offset of section i's bytes */
};

struct hdr {
	uint8_t cls;		/* default ELFCLASS64 */
	uint8_t data;		/* default ELFDATA2LSB */
	uint16_t type;		/* default ET_REL */
	uint16_t machine;	/* default this machine's (FL_ARCH_MACHINE) */
};

static void put_shdr(struct vec *v, uint32_t name, uint32_t type, uint64_t flags,
		     uint64_t addr, uint64_t off, uint64_t size, uint32_t link,
		     uint32_t info, uint64_t align, uint64_t entsize)
{
	put32(v, name);
	put32(v, type);
	put64(v, flags);
	put64(v, addr);
	put64(v, off);
	put64(v, size);
	put32(v, link);
	put32(v, info);
	put64(v, align);
	put64(v, entsize);
}

static void build(struct img *im, const struct hdr *h, const struct sec *secs, size_t n)
{
	struct vec *v = &im->v;
	uint32_t name_off[16];
	size_t i, strtab_off, strtab_size;

	ck_assert_uint_lt(n + 2, 16);
	memset(im, 0, sizeof(*im));
	vec_init(v, h->data == ELFDATA2MSB);
	v->len = sizeof(Elf64_Ehdr);
	for (i = 0; i < n; i++) {
		while (v->len % 8)
			put8(v, 0);
		im->data_off[i + 1] = v->len;
		if (secs[i].type != SHT_NOBITS && secs[i].size) {
			memcpy(v->buf + v->len, secs[i].data, secs[i].size);
			v->len += secs[i].size;
		}
	}
	strtab_off = v->len;
	put8(v, 0);
	for (i = 0; i < n; i++) {
		name_off[i] = v->len - strtab_off;
		memcpy(v->buf + v->len, secs[i].name, strlen(secs[i].name) + 1);
		v->len += strlen(secs[i].name) + 1;
	}
	name_off[n] = v->len - strtab_off;
	memcpy(v->buf + v->len, ".shstrtab", 10);
	v->len += 10;
	strtab_size = v->len - strtab_off;
	while (v->len % 8)
		put8(v, 0);

	im->shoff = v->len;
	im->nsec = n + 2;
	put_shdr(v, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
	for (i = 0; i < n; i++)
		put_shdr(v, name_off[i], secs[i].type, secs[i].flags, secs[i].addr,
			 im->data_off[i + 1], secs[i].size, secs[i].link, secs[i].info, 8,
			 secs[i].entsize);
	put_shdr(v, name_off[n], SHT_STRTAB, 0, 0, strtab_off, strtab_size, 0, 0, 1, 0);

	/* The ELF header. */
	memcpy(v->buf, ELFMAG, SELFMAG);
	v->buf[EI_CLASS] = h->cls ? h->cls : ELFCLASS64;
	v->buf[EI_DATA] = h->data ? h->data : ELFDATA2LSB;
	v->buf[EI_VERSION] = EV_CURRENT;
	patch_n(v, 16, h->type ? h->type : ET_REL, 2);
	patch_n(v, 18, h->machine ? h->machine : FL_ARCH_MACHINE, 2);
	patch_n(v, 20, EV_CURRENT, 4);
	patch_n(v, 40, im->shoff, 8);			/* e_shoff */
	patch_n(v, 52, sizeof(Elf64_Ehdr), 2);		/* e_ehsize */
	patch_n(v, 58, sizeof(Elf64_Shdr), 2);		/* e_shentsize */
	patch_n(v, 60, im->nsec, 2);			/* e_shnum */
	patch_n(v, 62, im->nsec - 1, 2);		/* e_shstrndx */
}

/* File offset of field off (bytes) of section header i. */
static size_t shdr_field(const struct img *im, size_t i, size_t off)
{
	return im->shoff + i * sizeof(Elf64_Shdr) + off;
}

/* A fault map table of two functions, with fault entries; addresses a0, a1. */
static size_t faultmap2(unsigned char *buf, uint64_t a0, uint64_t a1)
{
	struct vec v;

	vec_init(&v, 0);
	put8(&v, 1); put8(&v, 0); put16(&v, 0); put32(&v, 2);
	put64(&v, a0); put32(&v, 1); put32(&v, 0);		/* address at 8 */
	put32(&v, 1); put32(&v, 0); put32(&v, 3);
	put64(&v, a1); put32(&v, 1); put32(&v, 0);		/* address at 36 */
	put32(&v, 3); put32(&v, 0); put32(&v, 2);
	memcpy(buf, v.buf, v.len);
	return v.len;
}

/* A v3 stack map of one function and one record; address at 16. */
static size_t stackmap1(unsigned char *buf, int big, uint64_t a)
{
	struct vec v;

	vec_init(&v, big);
	put8(&v, 3); put8(&v, 0); put16(&v, 0);
	put32(&v, 1); put32(&v, 0); put32(&v, 1);
	put64(&v, a); put64(&v, 8); put64(&v, 1);
	put64(&v, 7); put32(&v, 4); put16(&v, 0); put16(&v, 0);
	pad8(&v);
	put16(&v, 0); put16(&v, 0);
	pad8(&v);
	memcpy(buf, v.buf, v.len);
	return v.len;
}

static unsigned char fm_bytes[64], sm_bytes[64];
static size_t fm_size, sm_size;

static void setup_maps(void)
{
	fm_size = faultmap2(fm_bytes, 0, 0);
	sm_size = stackmap1(sm_bytes, 0, 0);
}

static const unsigned char text_bytes[0x40];

/* .text, .llvm_faultmaps, .llvm_stackmaps: the usual three of an object. */
static void build_plain(struct img *im, const struct hdr *h)
{
	struct sec secs[] = {
		{ ".text", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, 0, text_bytes, sizeof(text_bytes) },
		{ ".llvm_faultmaps", SHT_PROGBITS, SHF_ALLOC, 0, fm_bytes, 0 },
		{ ".llvm_stackmaps", SHT_PROGBITS, SHF_ALLOC, 0, sm_bytes, 0 },
	};

	setup_maps();
	secs[1].size = fm_size;
	secs[2].size = sm_size;
	build(im, h, secs, 3);
}

static int open_img(const struct img *im, struct fl_elf **elf, struct fl_diag *d)
{
	memset(d, 0, sizeof(*d));
	return fl_elf_open_mem(im->v.buf, im->v.len, NULL, elf, d);
}

/* ------------------------------------------------------------------------
 * Finding the sections
 */

START_TEST(elf_finds_both_maps_in_a_relocatable_file)
{
	struct fl_elf_section s;
	struct fl_elf *elf;
	struct fl_diag d;
	struct img im;

	build_plain(&im, &(struct hdr){ 0 });
	ck_assert_int_eq(open_img(&im, &elf, &d), 0);
	ck_assert_uint_eq(fl_elf_type(elf), ET_REL);
	ck_assert_uint_eq(fl_elf_machine(elf), FL_ARCH_MACHINE);
	ck_assert_uint_eq(fl_elf_parse_flags(elf), 0);

	ck_assert_int_eq(fl_elf_section(elf, FL_SECTION_FAULTMAP, &s), 0);
	ck_assert_uint_eq(s.size, fm_size);
	ck_assert_uint_eq(s.index, 2);
	ck_assert_uint_eq(s.offset, im.data_off[2]);
	ck_assert_uint_eq(s.addr, 0);
	ck_assert_uint_eq(s.flags, SHF_ALLOC);
	ck_assert_uint_eq(s.parse_flags, 0);
	ck_assert_mem_eq(s.data, fm_bytes, fm_size);
	ck_assert_int_eq(fl_faultmap_validate(s.data, s.size, s.parse_flags, NULL), 2);

	ck_assert_int_eq(fl_elf_section(elf, FL_SECTION_STACKMAP, &s), 0);
	ck_assert_uint_eq(s.size, sm_size);
	ck_assert_mem_eq(s.data, sm_bytes, sm_size);
	ck_assert_int_eq(fl_stackmap_validate(s.data, s.size, s.parse_flags, NULL), 1);

	ck_assert_int_eq(fl_elf_section(elf, 2, &s), -EINVAL);
	ck_assert_int_eq(fl_elf_reloc(elf, FL_SECTION_FAULTMAP, 8, &(struct fl_elf_reloc){ 0 }),
			 -ENOENT);
	fl_elf_close(elf);
}
END_TEST

START_TEST(elf_without_maps_opens_and_says_enoent)
{
	const struct sec secs[] = {
		{ ".text", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, 0, text_bytes, 16 },
	};
	struct fl_elf_section s;
	struct fl_elf *elf;
	struct fl_diag d;
	struct img im;
	uint64_t a;

	build(&im, &(struct hdr){ .type = ET_DYN }, secs, 1);
	ck_assert_int_eq(open_img(&im, &elf, &d), 0);
	ck_assert_uint_eq(fl_elf_type(elf), ET_DYN);
	ck_assert_int_eq(fl_elf_section(elf, FL_SECTION_FAULTMAP, &s), -ENOENT);
	ck_assert_int_eq(fl_elf_section(elf, FL_SECTION_STACKMAP, &s), -ENOENT);
	ck_assert_int_eq(fl_elf_function_address(elf, FL_SECTION_FAULTMAP, 8, 0, &a), -ENOENT);
	ck_assert_ptr_null(fl_elf_function_name(elf, FL_SECTION_FAULTMAP, 8, 0));
	fl_elf_close(elf);
}
END_TEST

START_TEST(elf_big_endian_file_asks_for_big_endian_stack_maps)
{
	struct fl_elf_opts o = { .sz = sizeof(o), .flags = FL_ELF_ANY_MACHINE };
	const struct sec secs[] = {
		{ ".llvm_stackmaps", SHT_PROGBITS, SHF_ALLOC, 0, sm_bytes, 0 },
	};
	struct sec s2 = secs[0];
	struct fl_elf_section s;
	struct fl_elf *elf;
	struct fl_diag d;
	struct img im;

	sm_size = stackmap1(sm_bytes, 1, 0);
	s2.size = sm_size;
	build(&im, &(struct hdr){ .data = ELFDATA2MSB, .machine = EM_S390 }, &s2, 1);

	/* Not x86-64: refused by default, read with FL_ELF_ANY_MACHINE. */
	ck_assert_int_eq(open_img(&im, &elf, &d), -ENOEXEC);
	ck_assert_ptr_null(elf);
	ck_assert_int_eq(fl_elf_open_mem(im.v.buf, im.v.len, &o, &elf, &d), 0);
	ck_assert_uint_eq(fl_elf_machine(elf), EM_S390);
	ck_assert_uint_eq(fl_elf_parse_flags(elf), FL_PARSE_BIG_ENDIAN);
	ck_assert_int_eq(fl_elf_section(elf, FL_SECTION_STACKMAP, &s), 0);
	ck_assert_uint_eq(s.parse_flags, FL_PARSE_BIG_ENDIAN);
	ck_assert_int_eq(fl_stackmap_validate(s.data, s.size, s.parse_flags, NULL), 1);
	fl_elf_close(elf);

	/* An MSB file of this machine (no such thing in practice) passes the machine check. */
	build(&im, &(struct hdr){ .data = ELFDATA2MSB }, &s2, 1);
	ck_assert_int_eq(open_img(&im, &elf, &d), 0);
	ck_assert_uint_eq(fl_elf_parse_flags(elf), FL_PARSE_BIG_ENDIAN);
	fl_elf_close(elf);
}
END_TEST

/* ------------------------------------------------------------------------
 * Rejections
 */

START_TEST(elf_rejects_32_bit_files)
{
	struct fl_elf *elf;
	struct fl_diag d;
	struct img im;

	build_plain(&im, &(struct hdr){ .cls = ELFCLASS32 });
	ck_assert_int_eq(open_img(&im, &elf, &d), -ENOEXEC);
	ck_assert_ptr_null(elf);
	ck_assert_int_eq(d.err, -ENOEXEC);
	ck_assert_ptr_nonnull(strstr(d.msg, "32-bit"));
	ck_assert_ptr_nonnull(strstr(d.msg, "(memory)"));
}
END_TEST

/* A function of this program, for fl_elf_function_containing. */
__attribute__((noinline)) static int containing_probe(int x)
{
	return x * 3 + 1;
}

/* The main program's load bias and the PT_LOAD segment holding vaddr. */
struct probe_load {
	uint64_t vaddr;
	ElfW(Addr) bias;
	ElfW(Phdr) seg;
	int found;
};

static int find_main_load(struct dl_phdr_info *info, size_t size, void *data)
{
	struct probe_load *pl = data;

	(void)size;
	/* The first object dl_iterate_phdr reports is the main program. */
	pl->bias = info->dlpi_addr;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD && pl->vaddr - info->dlpi_addr >= ph->p_vaddr &&
		    pl->vaddr - info->dlpi_addr - ph->p_vaddr < ph->p_filesz) {
			pl->seg = *ph;
			pl->found = 1;
		}
	}
	return 1;
}

START_TEST(elf_names_the_function_containing_an_address)
{
	struct probe_load pl = { .vaddr = (uint64_t)(uintptr_t)containing_probe };
	struct fl_elf *elf;
	uint64_t link, off = 99, addr = 0;

	ck_assert_int_eq(containing_probe(1), 4);
	dl_iterate_phdr(find_main_load, &pl);
	ck_assert(pl.found);
	link = pl.vaddr - pl.bias;
	ck_assert_int_eq(fl_elf_open("/proc/self/exe", NULL, &elf, NULL), 0);
	ck_assert_str_eq(fl_elf_function_containing(elf, link + 2, &off), "containing_probe");
	ck_assert_uint_eq(off, 2);
	ck_assert_ptr_null(fl_elf_function_containing(elf, 0, &off));
	/* The file offset of the function, as /proc/PID/maps would lead to it. */
	ck_assert_int_eq(fl_elf_file_address(elf, link - pl.seg.p_vaddr + pl.seg.p_offset, &addr),
			 0);
	ck_assert_uint_eq(addr, link);
	ck_assert_int_eq(fl_elf_file_address(elf, UINT64_MAX, &addr), -ENOENT);
	fl_elf_close(elf);
}
END_TEST

START_TEST(elf_rejects_other_machines)
{
	struct fl_elf *elf;
	struct fl_diag d;
	struct img im;

	/* Another machine's than this one's (x86-64's or AArch64's). */
	uint16_t other = FL_ARCH_MACHINE == EM_X86_64 ? EM_AARCH64 : EM_X86_64;
	char want[64];

	build_plain(&im, &(struct hdr){ .machine = other });
	ck_assert_int_eq(open_img(&im, &elf, &d), -ENOEXEC);
	snprintf(want, sizeof(want), "e_machine %u is not this machine's (%s, %u)", other,
		 FL_ARCH_NAME, FL_ARCH_MACHINE);
	ck_assert_msg(strstr(d.msg, want), "%s: no \"%s\"", d.msg, want);
}
END_TEST

START_TEST(elf_rejects_files_that_cannot_hold_maps)
{
	struct fl_elf *elf;
	struct fl_diag d;
	struct img im;

	build_plain(&im, &(struct hdr){ .type = ET_CORE });
	ck_assert_int_eq(open_img(&im, &elf, &d), -ENOEXEC);
	ck_assert_ptr_nonnull(strstr(d.msg, "e_type 4"));
}
END_TEST

START_TEST(elf_rejects_what_is_not_elf)
{
	static const char text[] = "#!/bin/sh\necho this is not an ELF file\n";
	struct fl_elf *elf = (struct fl_elf *)1;
	struct fl_diag d;

	ck_assert_int_eq(fl_elf_open_mem(text, sizeof(text), NULL, &elf, &d), -ENOEXEC);
	ck_assert_ptr_null(elf);
	ck_assert_str_eq(d.msg, "(memory): not an ELF file");
	ck_assert_int_eq(fl_elf_open_mem("", 0, NULL, &elf, &d), -ENOEXEC);
	ck_assert_int_eq(fl_elf_open_mem(NULL, 0, NULL, &elf, &d), -ENOEXEC);
	ck_assert_int_eq(fl_elf_open_mem(NULL, 5, NULL, &elf, &d), -EINVAL);
	ck_assert_int_eq(fl_elf_open_mem("\177ELF\002\001\001", 7, NULL, &elf, &d), -EMSGSIZE);
	ck_assert_ptr_nonnull(strstr(d.msg, "truncated ELF header"));
}
END_TEST

START_TEST(elf_rejects_truncation_at_every_length)
{
	struct fl_elf *elf;
	struct fl_diag d;
	struct img im;
	size_t len;

	build_plain(&im, &(struct hdr){ 0 });
	for (len = 0; len < im.v.len; len++) {
		int ret = fl_elf_open_mem(im.v.buf, len, NULL, &elf, &d);

		if (len < SELFMAG)
			ck_assert_int_eq(ret, -ENOEXEC);
		else
			ck_assert_msg(ret == -EMSGSIZE, "length %zu: %d %s", len, ret, d.msg);
		ck_assert_ptr_null(elf);
	}
	ck_assert_int_eq(fl_elf_open_mem(im.v.buf, len, NULL, &elf, &d), 0);
	fl_elf_close(elf);
}
END_TEST

START_TEST(elf_rejects_a_nobits_map_section)
{
	const struct sec secs[] = {
		{ ".llvm_faultmaps", SHT_NOBITS, SHF_ALLOC, 0, NULL, 64 },
	};
	struct fl_elf *elf;
	struct fl_diag d;
	struct img im;

	build(&im, &(struct hdr){ 0 }, secs, 1);
	ck_assert_int_eq(open_img(&im, &elf, &d), -EINVAL);
	ck_assert_str_eq(d.msg,
			 "(memory): .llvm_faultmaps: section is SHT_NOBITS: it has no bytes in the file");
}
END_TEST

START_TEST(elf_rejects_a_map_section_past_the_end)
{
	struct fl_elf *elf;
	struct fl_diag d;
	struct img im;

	build_plain(&im, &(struct hdr){ 0 });
	/* .llvm_stackmaps (section 3): sh_size one byte too many, then huge. */
	patch_n(&im.v, shdr_field(&im, 3, 32), im.v.len - im.data_off[3] + 1, 8);
	ck_assert_int_eq(open_img(&im, &elf, &d), -EMSGSIZE);
	ck_assert_ptr_nonnull(strstr(d.msg, ".llvm_stackmaps: section (offset 0x"));
	ck_assert_ptr_nonnull(strstr(d.msg, "reaches past the end of the file"));
	patch_n(&im.v, shdr_field(&im, 3, 32), UINT64_MAX, 8);
	ck_assert_int_eq(open_img(&im, &elf, &d), -EMSGSIZE);
	/* sh_offset past the end. */
	build_plain(&im, &(struct hdr){ 0 });
	patch_n(&im.v, shdr_field(&im, 2, 24), UINT64_MAX - 4, 8);
	ck_assert_int_eq(open_img(&im, &elf, &d), -EMSGSIZE);
	ck_assert_ptr_nonnull(strstr(d.msg, ".llvm_faultmaps"));
}
END_TEST

START_TEST(elf_rejects_duplicate_and_mistyped_map_sections)
{
	struct sec secs[] = {
		{ ".llvm_faultmaps", SHT_PROGBITS, SHF_ALLOC, 0, fm_bytes, 0 },
		{ ".llvm_faultmaps", SHT_PROGBITS, SHF_ALLOC, 0, fm_bytes, 0 },
	};
	struct fl_elf *elf;
	struct fl_diag d;
	struct img im;

	setup_maps();
	secs[0].size = secs[1].size = fm_size;
	build(&im, &(struct hdr){ 0 }, secs, 2);
	ck_assert_int_eq(open_img(&im, &elf, &d), -EINVAL);
	ck_assert_str_eq(d.msg, "(memory): .llvm_faultmaps: two sections of that name (1 and 2)");

	secs[0].type = SHT_NOTE;
	build(&im, &(struct hdr){ 0 }, secs, 1);
	ck_assert_int_eq(open_img(&im, &elf, &d), -EINVAL);
	ck_assert_ptr_nonnull(strstr(d.msg, "section type 7, expected SHT_PROGBITS"));
}
END_TEST

START_TEST(elf_rejects_bad_headers_tables)
{
	struct fl_elf *elf;
	struct fl_diag d;
	struct img im;

	build_plain(&im, &(struct hdr){ 0 });
	patch_n(&im.v, 40, im.v.len - 8, 8);		/* e_shoff near the end */
	ck_assert_int_eq(open_img(&im, &elf, &d), -EMSGSIZE);
	ck_assert_ptr_nonnull(strstr(d.msg, "section header table"));

	build_plain(&im, &(struct hdr){ 0 });
	patch_n(&im.v, 58, 40, 2);			/* e_shentsize */
	ck_assert_int_eq(open_img(&im, &elf, &d), -EINVAL);

	build_plain(&im, &(struct hdr){ 0 });
	patch_n(&im.v, 62, 200, 2);			/* e_shstrndx out of range */
	ck_assert_int_eq(open_img(&im, &elf, &d), -EINVAL);
	ck_assert_str_eq(d.msg, "(memory): e_shstrndx 200 is not a section (5 sections)");

	build_plain(&im, &(struct hdr){ 0 });
	patch_n(&im.v, 32, 0x1000000, 8);		/* e_phoff */
	patch_n(&im.v, 54, sizeof(Elf64_Phdr), 2);
	patch_n(&im.v, 56, 3, 2);			/* e_phnum */
	ck_assert_int_eq(open_img(&im, &elf, &d), -EMSGSIZE);
	ck_assert_ptr_nonnull(strstr(d.msg, "program header table"));
}
END_TEST

START_TEST(elf_checks_its_options)
{
	struct {
		struct fl_elf_opts o;
		uint64_t future;
	} big = { .o = { .sz = sizeof(big) } };
	struct fl_elf_opts o = { .sz = 0 };
	struct fl_elf *elf;
	struct fl_diag d;
	struct img im;

	build_plain(&im, &(struct hdr){ 0 });
	ck_assert_int_eq(fl_elf_open_mem(im.v.buf, im.v.len, &o, &elf, &d), -EINVAL);
	o.sz = sizeof(o);
	o.flags = 1u << 31;
	ck_assert_int_eq(fl_elf_open_mem(im.v.buf, im.v.len, &o, &elf, &d), -EINVAL);
	/* A newer caller's struct: fine while its new fields are zero. */
	ck_assert_int_eq(fl_elf_open_mem(im.v.buf, im.v.len, &big.o, &elf, &d), 0);
	fl_elf_close(elf);
	big.future = 1;
	ck_assert_int_eq(fl_elf_open_mem(im.v.buf, im.v.len, &big.o, &elf, &d), -EINVAL);
	/* An older caller's struct: just the size. */
	o.sz = sizeof(size_t);
	ck_assert_int_eq(fl_elf_open_mem(im.v.buf, im.v.len, &o, &elf, &d), 0);
	fl_elf_close(elf);
}
END_TEST

/* ------------------------------------------------------------------------
 * Relocations and names
 */

static void put_sym(struct vec *v, uint32_t name, uint8_t type, uint8_t bind,
		    uint16_t shndx, uint64_t value, uint64_t size)
{
	put32(v, name);
	put8(v, (uint8_t)(bind << 4 | type));
	put8(v, 0);
	put16(v, shndx);
	put64(v, value);
	put64(v, size);
}

static void put_rela(struct vec *v, uint64_t off, uint32_t sym, uint32_t type, int64_t addend)
{
	put64(v, off);
	put64(v, (uint64_t)sym << 32 | type);
	put64(v, (uint64_t)addend);
}

/*
 * An object as llc writes it: fl_a is referenced through its symbol, fl_b (a
 * local function) through .text + 0x20.  Sections: 1 .text, 2 .llvm_faultmaps,
 * 3 .rela.llvm_faultmaps, 4 .symtab, 5 .strtab.
 */
static void build_relocatable(struct img *im, uint64_t rel_off1, uint32_t sym1)
{
	static const char strtab[] = "\0fl_a\0fl_b";
	struct vec syms, rela;
	struct sec secs[5] = {
		{ ".text", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, 0, text_bytes, sizeof(text_bytes) },
		{ ".llvm_faultmaps", SHT_PROGBITS, SHF_ALLOC, 0, fm_bytes, 0 },
		{ ".rela.llvm_faultmaps", SHT_RELA, SHF_INFO_LINK, 0, NULL, 0, 4, 2,
		  sizeof(Elf64_Rela) },
		{ ".symtab", SHT_SYMTAB, 0, 0, NULL, 0, 5, 2, sizeof(Elf64_Sym) },
		{ ".strtab", SHT_STRTAB, 0, 0, strtab, sizeof(strtab) },
	};

	setup_maps();
	secs[1].size = fm_size;
	vec_init(&syms, 0);
	put_sym(&syms, 0, 0, 0, 0, 0, 0);
	put_sym(&syms, 0, STT_SECTION, STB_LOCAL, 1, 0, 0);		/* 1: .text */
	put_sym(&syms, 6, STT_FUNC, STB_LOCAL, 1, 0x20, 8);		/* 2: fl_b */
	put_sym(&syms, 1, STT_FUNC, STB_GLOBAL, 1, 0, 8);		/* 3: fl_a */
	vec_init(&rela, 0);
	put_rela(&rela, 8, 3, REL_ABS64, 0);
	put_rela(&rela, rel_off1, sym1, REL_ABS64, 0x20);
	secs[2].data = rela.buf;
	secs[2].size = rela.len;
	secs[3].data = syms.buf;
	secs[3].size = syms.len;
	build(im, &(struct hdr){ 0 }, secs, 5);
}

START_TEST(elf_names_the_symbol_and_addend_of_each_function_in_objects)
{
	struct fl_elf_reloc r;
	struct fl_elf *elf;
	struct fl_diag d;
	struct img im;
	uint64_t a;

	build_relocatable(&im, 36, 1);
	ck_assert_int_eq(open_img(&im, &elf, &d), 0);

	ck_assert_int_eq(fl_elf_reloc(elf, FL_SECTION_FAULTMAP, 8, &r), 0);
	ck_assert_uint_eq(r.offset, 8);
	ck_assert_uint_eq(r.type, REL_ABS64);
	ck_assert(!r.dynamic);
	ck_assert_str_eq(r.symbol, "fl_a");
	ck_assert_uint_eq(r.symbol_section, 1);
	ck_assert_int_eq(r.addend, 0);
	ck_assert_str_eq(r.function, "fl_a");

	ck_assert_int_eq(fl_elf_reloc(elf, FL_SECTION_FAULTMAP, 36, &r), 0);
	ck_assert_str_eq(r.symbol, ".text");
	ck_assert_int_eq(r.addend, 0x20);
	ck_assert_str_eq(r.function, "fl_b");

	ck_assert_int_eq(fl_elf_reloc(elf, FL_SECTION_FAULTMAP, 9, &r), -ENOENT);
	ck_assert_int_eq(fl_elf_reloc(elf, FL_SECTION_STACKMAP, 8, &r), -ENOENT);
	ck_assert_str_eq(fl_elf_function_name(elf, FL_SECTION_FAULTMAP, 8, 0), "fl_a");
	ck_assert_str_eq(fl_elf_function_name(elf, FL_SECTION_FAULTMAP, 36, 0), "fl_b");
	ck_assert_ptr_null(fl_elf_function_name(elf, FL_SECTION_FAULTMAP, 16, 0));
	ck_assert_int_eq(fl_elf_function_address(elf, FL_SECTION_FAULTMAP, 8, 0, &a),
			 -EOPNOTSUPP);
	fl_elf_close(elf);
}
END_TEST

START_TEST(elf_rejects_bad_relocations_of_a_map)
{
	struct fl_elf *elf;
	struct fl_diag d;
	struct img im;

	build_relocatable(&im, 0x1000, 1);
	ck_assert_int_eq(open_img(&im, &elf, &d), -EINVAL);
	ck_assert_str_eq(d.msg, "(memory): .rela.llvm_faultmaps: relocation 1: offset 0x1000 "
				"is past the end of .llvm_faultmaps (64 bytes)");

	build_relocatable(&im, 36, 99);
	ck_assert_int_eq(open_img(&im, &elf, &d), -EINVAL);
	ck_assert_str_eq(d.msg, "(memory): .rela.llvm_faultmaps: relocation 1: symbol index 99 "
				"out of range (4 symbols)");

	build_relocatable(&im, 36, 1);
	patch_n(&im.v, shdr_field(&im, 3, 40), 5, 4);	/* sh_link: .strtab */
	ck_assert_int_eq(open_img(&im, &elf, &d), -EINVAL);
	ck_assert_ptr_nonnull(strstr(d.msg, "sh_link 5 is not a symbol table"));

	build_relocatable(&im, 36, 1);
	patch_n(&im.v, shdr_field(&im, 3, 56), 16, 8);	/* sh_entsize */
	ck_assert_int_eq(open_img(&im, &elf, &d), -EINVAL);
	ck_assert_ptr_nonnull(strstr(d.msg, "entry size 16, expected 24"));

	build_relocatable(&im, 36, 1);
	patch_n(&im.v, shdr_field(&im, 3, 32), 0x100000, 8);	/* sh_size */
	ck_assert_int_eq(open_img(&im, &elf, &d), -EMSGSIZE);
}
END_TEST

/*
 * A linked file (ET_DYN) as lld -z notext or GNU ld -shared leave it: the
 * section holds 0 at both address fields and the dynamic relocations fill
 * them in: a RELATIVE relocation (addend = link-time address) for the first,
 * a 64-bit absolute one against a dynamic symbol for the second.  Sections: 1 .text
 * at 0x1000, 2 .llvm_faultmaps at 0x2000, 3 .rela.dyn, 4 .dynsym, 5 .dynstr.
 */
static void build_linked_n(struct img *im, uint32_t rel_type, int relr_repeat)
{
	static const char dynstr[] = "\0fl_a\0fl_b";
	struct vec syms, rela;
	struct sec secs[5] = {
		{ ".text", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, 0x1000, text_bytes,
		  sizeof(text_bytes) },
		{ ".llvm_faultmaps", SHT_PROGBITS, SHF_ALLOC, 0x2000, fm_bytes, 0 },
		{ ".rela.dyn", rel_type, SHF_ALLOC, 0x3000, NULL, 0, 4, 0, 0 },
		{ ".dynsym", SHT_DYNSYM, SHF_ALLOC, 0x3100, NULL, 0, 5, 1, sizeof(Elf64_Sym) },
		{ ".dynstr", SHT_STRTAB, SHF_ALLOC, 0x3200, dynstr, sizeof(dynstr) },
	};

	vec_init(&syms, 0);
	put_sym(&syms, 0, 0, 0, 0, 0, 0);
	put_sym(&syms, 1, STT_FUNC, STB_GLOBAL, 1, 0x1010, 8);	/* 1: fl_a */
	put_sym(&syms, 6, STT_FUNC, STB_GLOBAL, 1, 0x1020, 8);	/* 2: fl_b */
	vec_init(&rela, 0);
	if (rel_type == SHT_RELA) {
		fm_size = faultmap2(fm_bytes, 0, 0);
		put_rela(&rela, 0x2008, 0, REL_RELATIVE, 0x1010);
		put_rela(&rela, 0x2024, 2, REL_ABS64, 0);
		secs[2].entsize = sizeof(Elf64_Rela);
	} else {
		/* SHT_RELR: the field holds the link-time address. */
		fm_size = faultmap2(fm_bytes, 0x1010, 0x1020);
		for (int i = 0; i < relr_repeat; i++)
			put64(&rela, 0x2008);
		secs[2].entsize = 8;
		secs[2].link = 0;
	}
	secs[1].size = fm_size;
	secs[2].data = rela.buf;
	secs[2].size = rela.len;
	secs[3].data = syms.buf;
	secs[3].size = syms.len;
	build(im, &(struct hdr){ .type = ET_DYN }, secs, 5);
}

static void build_linked(struct img *im, uint32_t rel_type)
{
	build_linked_n(im, rel_type, 1);
}

START_TEST(elf_gives_link_time_addresses_from_dynamic_relocations)
{
	struct fl_elf_reloc r;
	struct fl_elf *elf;
	struct fl_diag d;
	struct img im;
	uint64_t a;

	build_linked(&im, SHT_RELA);
	ck_assert_int_eq(open_img(&im, &elf, &d), 0);
	ck_assert_int_eq(fl_elf_reloc(elf, FL_SECTION_FAULTMAP, 8, &r), 0);
	ck_assert(r.dynamic);
	ck_assert_uint_eq(r.type, REL_RELATIVE);
	ck_assert_int_eq(r.addend, 0x1010);
	ck_assert_str_eq(r.symbol, "");
	ck_assert_str_eq(r.function, "fl_a");
	ck_assert_int_eq(fl_elf_reloc(elf, FL_SECTION_FAULTMAP, 36, &r), 0);
	ck_assert_uint_eq(r.type, REL_ABS64);
	ck_assert_str_eq(r.symbol, "fl_b");
	ck_assert_uint_eq(r.symbol_value, 0x1020);

	ck_assert_int_eq(fl_elf_function_address(elf, FL_SECTION_FAULTMAP, 8, 0, &a), 0);
	ck_assert_uint_eq(a, 0x1010);
	ck_assert_int_eq(fl_elf_function_address(elf, FL_SECTION_FAULTMAP, 36, 0, &a), 0);
	ck_assert_uint_eq(a, 0x1020);
	/* No relocation: the stored value is the link-time address. */
	ck_assert_int_eq(fl_elf_function_address(elf, FL_SECTION_FAULTMAP, 20, 0x1010, &a), 0);
	ck_assert_uint_eq(a, 0x1010);
	ck_assert_int_eq(fl_elf_function_address(elf, FL_SECTION_FAULTMAP, 60, 0, &a), -EINVAL);
	ck_assert_str_eq(fl_elf_function_name(elf, FL_SECTION_FAULTMAP, 8, 0), "fl_a");
	ck_assert_str_eq(fl_elf_function_name(elf, FL_SECTION_FAULTMAP, 36, 0), "fl_b");
	fl_elf_close(elf);
}
END_TEST

START_TEST(elf_reads_packed_relative_relocations)
{
	struct fl_elf_reloc r;
	struct fl_elf *elf;
	struct fl_diag d;
	struct img im;
	uint64_t a;

	build_linked(&im, SHT_RELR);
	ck_assert_int_eq(open_img(&im, &elf, &d), 0);
	ck_assert_int_eq(fl_elf_reloc(elf, FL_SECTION_FAULTMAP, 8, &r), 0);
	ck_assert(r.dynamic);
	ck_assert_uint_eq(r.type, REL_RELATIVE);
	ck_assert_int_eq(r.addend, 0x1010);
	ck_assert_str_eq(r.function, "fl_a");
	ck_assert_int_eq(fl_elf_reloc(elf, FL_SECTION_FAULTMAP, 36, &r), -ENOENT);
	ck_assert_int_eq(fl_elf_function_address(elf, FL_SECTION_FAULTMAP, 36, 0x1020, &a), 0);
	ck_assert_uint_eq(a, 0x1020);
	ck_assert_str_eq(fl_elf_function_name(elf, FL_SECTION_FAULTMAP, 36, 0x1020), "fl_b");
	fl_elf_close(elf);
}
END_TEST

START_TEST(elf_refuses_more_relocations_than_a_map_can_hold)
{
	struct fl_elf *elf;
	struct fl_diag d;
	struct img im;

	/* 17 relocations fit a 64-byte map (a quarter of its bytes, + 1). */
	build_linked_n(&im, SHT_RELR, 17);
	ck_assert_int_eq(open_img(&im, &elf, &d), 0);
	fl_elf_close(elf);
	build_linked_n(&im, SHT_RELR, 18);
	ck_assert_int_eq(open_img(&im, &elf, &d), -EINVAL);
	ck_assert_str_eq(d.msg, "(memory): .rela.dyn: more relocations against .llvm_faultmaps "
				"than a 64-byte map can hold");
}
END_TEST

/* ------------------------------------------------------------------------
 * Files and hostile input
 */

/*
 * Writes an image to path: a mkstemp template, filled in, when it ends in
 * XXXXXX, else the file mkstemp made before (whose name may end in an X).
 */
static void write_image(char *path, const struct img *im)
{
	size_t n = strlen(path);
	int fd = n >= 6 && !strcmp(path + n - 6, "XXXXXX") ? mkstemp(path) :
		 open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	ck_assert_msg(fd >= 0, "writing the image to %s: %s", path, strerror(errno));
	ck_assert_int_eq(write(fd, im->v.buf, im->v.len), (ssize_t)im->v.len);
	close(fd);
}

START_TEST(elf_opens_files_as_it_opens_memory)
{
	char path[] = "/tmp/fl-test-discovery-XXXXXX";
	struct fl_elf_section s;
	struct fl_elf *elf;
	struct fl_diag d;
	struct img im;

	build_relocatable(&im, 36, 1);
	write_image(path, &im);
	ck_assert_int_eq(fl_elf_open(path, NULL, &elf, &d), 0);
	ck_assert_int_eq(fl_elf_section(elf, FL_SECTION_FAULTMAP, &s), 0);
	ck_assert_mem_eq(s.data, fm_bytes, fm_size);
	ck_assert_str_eq(fl_elf_function_name(elf, FL_SECTION_FAULTMAP, 36, 0), "fl_b");
	fl_elf_close(elf);

	/* Truncated on disk: the path names the file. */
	ck_assert_int_eq(truncate(path, (off_t)(im.v.len - 1)), 0);
	ck_assert_int_eq(fl_elf_open(path, NULL, &elf, &d), -EMSGSIZE);
	ck_assert_ptr_nonnull(strstr(d.msg, path));
	unlink(path);

	ck_assert_int_eq(fl_elf_open(path, NULL, &elf, &d), -ENOENT);
	ck_assert_ptr_nonnull(strstr(d.msg, path));
	ck_assert_int_eq(fl_elf_open("/tmp", NULL, &elf, &d), -EINVAL);
	ck_assert_str_eq(d.msg, "/tmp: not a regular file");
	/* A FIFO without a writer: refused, without blocking in open(2). */
	ck_assert_int_eq(mkfifo(path, 0600), 0);
	ck_assert_int_eq(fl_elf_open(path, NULL, &elf, &d), -EINVAL);
	unlink(path);
}
END_TEST

START_TEST(elf_mapped_or_without_symbols_gives_the_same_maps)
{
	char path[] = "/tmp/fl-test-discovery-XXXXXX";
	struct fl_elf_opts mapped = { .sz = sizeof(mapped), .flags = FL_ELF_MAP };
	struct fl_elf_opts bare = { .sz = sizeof(bare), .flags = FL_ELF_MAP | FL_ELF_NO_SYMBOLS };
	struct probe_load pl = { .vaddr = (uint64_t)(uintptr_t)containing_probe };
	struct fl_elf_section s;
	struct fl_elf_reloc r;
	struct fl_elf *elf;
	struct fl_diag d;
	struct img im;
	uint64_t a;

	/* A relocation that cannot be read: only a reader of relocations sees it. */
	build_relocatable(&im, 36, 99);
	write_image(path, &im);
	ck_assert_int_eq(fl_elf_open(path, &mapped, &elf, &d), -EINVAL);
	ck_assert_int_eq(fl_elf_open(path, &bare, &elf, &d), 0);
	ck_assert_int_eq(fl_elf_section(elf, FL_SECTION_FAULTMAP, &s), 0);
	ck_assert_mem_eq(s.data, fm_bytes, fm_size);
	fl_elf_close(elf);

	build_relocatable(&im, 36, 1);
	write_image(path, &im);
	ck_assert_int_eq(fl_elf_open(path, &mapped, &elf, &d), 0);
	ck_assert_int_eq(fl_elf_section(elf, FL_SECTION_FAULTMAP, &s), 0);
	ck_assert_mem_eq(s.data, fm_bytes, fm_size);
	ck_assert_str_eq(fl_elf_function_name(elf, FL_SECTION_FAULTMAP, 36, 0), "fl_b");
	fl_elf_close(elf);

	ck_assert_int_eq(fl_elf_open(path, &bare, &elf, &d), 0);
	ck_assert_int_eq(fl_elf_section(elf, FL_SECTION_FAULTMAP, &s), 0);
	ck_assert_mem_eq(s.data, fm_bytes, fm_size);
	ck_assert_int_eq(fl_elf_reloc(elf, FL_SECTION_FAULTMAP, 36, &r), -ENODATA);
	ck_assert_ptr_null(fl_elf_function_name(elf, FL_SECTION_FAULTMAP, 36, 0));
	ck_assert_int_eq(fl_elf_function_address(elf, FL_SECTION_FAULTMAP, 8, 0, &a),
			 -EOPNOTSUPP);
	fl_elf_close(elf);
	unlink(path);

	/* A linked file without its symbols: no function is named. */
	dl_iterate_phdr(find_main_load, &pl);
	ck_assert(pl.found);
	ck_assert_int_eq(fl_elf_open("/proc/self/exe", &bare, &elf, &d), 0);
	ck_assert_ptr_null(fl_elf_function_containing(elf, pl.vaddr - pl.bias + 2, &a));
	fl_elf_close(elf);
	ck_assert_int_eq(fl_elf_open("/proc/self/exe", &mapped, &elf, &d), 0);
	ck_assert_str_eq(fl_elf_function_containing(elf, pl.vaddr - pl.bias + 2, &a),
			 "containing_probe");
	fl_elf_close(elf);
}
END_TEST

/* Every accessor on whatever opened. */
static void poke(struct fl_elf *elf)
{
	struct fl_elf_section s;
	struct fl_elf_reloc r;
	uint64_t a;
	int k;
	size_t off;

	(void)fl_elf_type(elf);
	(void)fl_elf_parse_flags(elf);
	for (k = 0; k < FL_SECTION_KINDS; k++) {
		if (fl_elf_section(elf, k, &s))
			continue;
		(void)fl_faultmap_validate(s.data, s.size, s.parse_flags, NULL);
		(void)fl_stackmap_validate(s.data, s.size, s.parse_flags, NULL);
		for (off = 0; off < s.size + 8; off++) {
			if (!fl_elf_reloc(elf, k, off, &r))
				ck_assert(r.symbol && strlen(r.symbol) < 4096);
			(void)fl_elf_function_address(elf, k, off, 0, &a);
			(void)fl_elf_function_name(elf, k, off, 0);
		}
	}
}

START_TEST(elf_survives_mutated_input)
{
	struct img base, im;
	uint64_t x = 0x9e3779b97f4a7c15ull;
	int i, j, opened = 0;

	build_relocatable(&base, 36, 1);
	for (i = 0; i < 3000; i++) {
		struct fl_elf *elf;
		struct fl_diag d;
		int nflips;

		im = base;
		/* xorshift: reproducible */
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		nflips = 1 + (int)(x % 8);
		for (j = 0; j < nflips; j++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			im.v.buf[(x >> 8) % im.v.len] ^= (unsigned char)(1u << (x % 8));
		}
		if (fl_elf_open_mem(im.v.buf, (i % 7) ? im.v.len : (x >> 20) % im.v.len, NULL,
				    &elf, &d) == 0) {
			opened++;
			poke(elf);
			fl_elf_close(elf);
		} else {
			ck_assert_ptr_null(elf);
			ck_assert_int_lt(d.err, 0);
			ck_assert(memchr(d.msg, 0, sizeof(d.msg)));
		}
	}
	ck_assert_int_gt(opened, 0);
}
END_TEST

/* ------------------------------------------------------------------------
 * Loaded modules (this test binary has no maps: selftests/discovery has)
 */

static int count_module(const struct fl_module *m, void *ctx)
{
	int *n = ctx;

	ck_assert_msg(m->err == 0, "%s", m->diag.msg);
	ck_assert_ptr_nonnull(m->path);
	ck_assert_uint_gt(m->num_text, 0);
	ck_assert_ptr_null(m->sections[FL_SECTION_FAULTMAP].data);
	ck_assert_ptr_null(m->sections[FL_SECTION_STACKMAP].data);
	if (m->name[0] == '\0')
		ck_assert_str_eq(m->path, "/proc/self/exe");
	(*n)++;
	return 0;
}

static int stop_at_first(const struct fl_module *m, void *ctx)
{
	(void)m;
	(void)ctx;
	return 42;
}

START_TEST(module_for_each_reports_every_module_with_all)
{
	struct fl_module_opts o = { .sz = sizeof(o), .flags = FL_MODULE_ALL };
	int n = 0;

	/* Without FL_MODULE_ALL, no module of this program has maps. */
	ck_assert_int_eq(fl_module_for_each(count_module, &n, NULL), 0);
	ck_assert_int_eq(n, 0);
	ck_assert_int_eq(fl_module_for_each(count_module, &n, &o), 0);
	ck_assert_int_ge(n, 2);		/* this program, libc, ... */
	ck_assert_int_eq(fl_module_for_each(stop_at_first, NULL, &o), 42);
	o.flags = 1u << 7;
	ck_assert_int_eq(fl_module_for_each(count_module, &n, &o), -EINVAL);
}
END_TEST

START_TEST(module_open_addr_finds_the_module_of_an_address)
{
	struct fl_module *m;
	struct fl_diag d;
	uint64_t rt;
	void *self;

	ck_assert_int_eq(fl_module_open_addr((const void *)discovery_suite, NULL, &m, &d), 0);
	ck_assert_str_eq(m->name, "");
	ck_assert_str_eq(m->path, "/proc/self/exe");
	ck_assert(fl_module_text_contains(m, (uintptr_t)discovery_suite));
	ck_assert(!fl_module_text_contains(m, (uintptr_t)&d));
	ck_assert_int_eq(fl_module_function_address(m, FL_SECTION_FAULTMAP, 8, 0, &rt), -ENOENT);
	ck_assert_int_eq(fl_module_function_address(m, 5, 8, 0, &rt), -EINVAL);
	fl_module_free(m);

	/* The same module through a dlopen handle. */
	self = dlopen(NULL, RTLD_NOW);
	ck_assert_ptr_nonnull(self);
	ck_assert_int_eq(fl_module_open_handle(self, NULL, &m, &d), 0);
	ck_assert_str_eq(m->name, "");
	ck_assert(fl_module_text_contains(m, (uintptr_t)discovery_suite));
	fl_module_free(m);
	dlclose(self);

	/* libc, by the address of one of its functions (one no sanitizer wraps). */
	ck_assert_int_eq(fl_module_open_addr((const void *)gnu_get_libc_version, NULL, &m, &d), 0);
	ck_assert_ptr_nonnull(strstr(m->name, "libc"));
	ck_assert_uint_ne(m->load_bias, 0);
	fl_module_free(m);

	ck_assert_int_eq(fl_module_open_addr((const void *)16, NULL, &m, &d), -ENOENT);
	ck_assert_ptr_null(m);
	ck_assert_int_eq(fl_module_open_handle(NULL, NULL, &m, &d), -ENOENT);
	fl_module_free(NULL);
}
END_TEST

Suite *discovery_suite(void)
{
	Suite *s = suite_create("discovery");
	TCase *elf = unit_tcase("elf");
	TCase *mod = unit_tcase("module");

	tcase_add_test(elf, elf_finds_both_maps_in_a_relocatable_file);
	tcase_add_test(elf, elf_without_maps_opens_and_says_enoent);
	tcase_add_test(elf, elf_big_endian_file_asks_for_big_endian_stack_maps);
	tcase_add_test(elf, elf_rejects_32_bit_files);
	tcase_add_test(elf, elf_rejects_other_machines);
	tcase_add_test(elf, elf_names_the_function_containing_an_address);
	tcase_add_test(elf, elf_mapped_or_without_symbols_gives_the_same_maps);
	tcase_add_test(elf, elf_rejects_files_that_cannot_hold_maps);
	tcase_add_test(elf, elf_rejects_what_is_not_elf);
	tcase_add_test(elf, elf_rejects_truncation_at_every_length);
	tcase_add_test(elf, elf_rejects_a_nobits_map_section);
	tcase_add_test(elf, elf_rejects_a_map_section_past_the_end);
	tcase_add_test(elf, elf_rejects_duplicate_and_mistyped_map_sections);
	tcase_add_test(elf, elf_rejects_bad_headers_tables);
	tcase_add_test(elf, elf_checks_its_options);
	tcase_add_test(elf, elf_names_the_symbol_and_addend_of_each_function_in_objects);
	tcase_add_test(elf, elf_rejects_bad_relocations_of_a_map);
	tcase_add_test(elf, elf_gives_link_time_addresses_from_dynamic_relocations);
	tcase_add_test(elf, elf_reads_packed_relative_relocations);
	tcase_add_test(elf, elf_refuses_more_relocations_than_a_map_can_hold);
	tcase_add_test(elf, elf_opens_files_as_it_opens_memory);
	tcase_add_test(elf, elf_survives_mutated_input);
	suite_add_tcase(s, elf);

	tcase_add_test(mod, module_for_each_reports_every_module_with_all);
	tcase_add_test(mod, module_open_addr_finds_the_module_of_an_address);
	suite_add_tcase(s, mod);
	return s;
}
