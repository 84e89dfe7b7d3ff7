// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: fl_elf_open_mem on arbitrary bytes, then every accessor.
 *
 * The input is a whole file.  It is opened twice: with the default options
 * (x86-64 only) from the input itself, and with FL_ELF_ANY_MACHINE from a
 * heap copy that is freed right after the call (the image is documented as
 * copied: ASan reports any later use of the caller's buffer).  What must
 * hold:
 *  - a failure is -errno with a non-empty NUL-terminated diagnostic and no
 *    object; no leak either way (LeakSanitizer);
 *  - what opens without FL_ELF_ANY_MACHINE opens with it, with the same
 *    type, byte order and sections;
 *  - the type is ET_REL, ET_EXEC or ET_DYN; the machine is x86-64 unless
 *    FL_ELF_ANY_MACHINE;
 *  - a section is there (0) or not (-ENOENT); a bad kind is -EINVAL; its
 *    bytes are all readable and inside the input; its parse flags are the
 *    file's;
 *  - its contents go through the format layer (validate, default and
 *    strict); for every function event the cursor reports (also those
 *    before a malformed item), fl_elf_reloc, fl_elf_function_address and
 *    fl_elf_function_name answer as documented, and their strings are
 *    readable; so they do at offsets around and past the section's end.
 */
#include <elf.h>

#include <faultline/discovery.h>

#include "fuzz.h"

/* Reads every byte of a string the library returned. */
static void touch_string(const char *s)
{
	volatile size_t n = strlen(s);

	(void)n;
}

static void touch_bytes(const void *p, size_t n)
{
	const volatile unsigned char *b = p;
	unsigned char sum = 0;
	size_t i;

	for (i = 0; i < n; i++)
		sum ^= b[i];
	(void)sum;
}

static void check_address_field(const struct fl_elf *elf, enum fl_section_kind kind,
				const struct fl_elf_section *sec, size_t offset,
				uint64_t stored)
{
	struct fl_elf_reloc rel;
	const char *name;
	uint64_t addr = 0;
	int ret;

	memset(&rel, 0xa5, sizeof(rel));
	ret = fl_elf_reloc(elf, kind, offset, &rel);
	CHECK(ret == 0 || ret == -ENOENT);
	if (ret == 0) {
		CHECK(rel.offset == offset);
		CHECK(rel.symbol != NULL);
		touch_string(rel.symbol);
		if (rel.function)
			touch_string(rel.function);
		CHECK(rel.dynamic == (fl_elf_type(elf) != ET_REL));
	}

	ret = fl_elf_function_address(elf, kind, offset, stored, &addr);
	if (fl_elf_type(elf) == ET_REL)
		CHECK(ret == -EOPNOTSUPP);
	else if (offset > sec->size || sec->size - offset < 8)
		CHECK(ret == -EINVAL);
	else
		CHECK(ret == 0 || ret == -ENXIO);

	name = fl_elf_function_name(elf, kind, offset, stored);
	if (name)
		touch_string(name);
}

/* The section's contents through the format layer, and its address fields. */
static void check_section(const struct fl_elf *elf, enum fl_section_kind kind,
			  const struct fl_elf_section *sec)
{
	static const size_t odd[] = { 0, 1, 7, 8 };
	uint32_t flags = sec->parse_flags;
	struct fl_diag diag;
	size_t i;
	long v;

	if (kind == FL_SECTION_FAULTMAP) {
		struct fl_faultmap_cursor c;
		struct fl_faultmap_event ev;

		v = fl_faultmap_validate(sec->data, sec->size, flags, &diag);
		CHECK(v >= 0 || format_error((int)v));
		v = fl_faultmap_validate(sec->data, sec->size, flags | FL_PARSE_STRICT, &diag);
		CHECK(v >= 0 || format_error((int)v));
		fl_faultmap_cursor_init(&c, sec->data, sec->size, flags, &diag);
		while (fl_faultmap_next(&c, &ev) > 0)
			if (ev.type == FL_FM_FUNCTION)
				check_address_field(elf, kind, sec, ev.function.address_offset,
						    ev.function.address);
	} else {
		struct fl_stackmap_cursor c;
		struct fl_stackmap_event ev;

		v = fl_stackmap_validate(sec->data, sec->size, flags, &diag);
		CHECK(v >= 0 || format_error((int)v));
		v = fl_stackmap_validate(sec->data, sec->size, flags | FL_PARSE_STRICT, &diag);
		CHECK(v >= 0 || format_error((int)v));
		fl_stackmap_cursor_init(&c, sec->data, sec->size, flags, &diag);
		while (fl_stackmap_next(&c, &ev) > 0)
			if (ev.type == FL_SM_FUNCTION)
				check_address_field(elf, kind, sec, ev.function.address_offset,
						    ev.function.address);
	}

	/* Fields that are not function addresses, at and past the end. */
	for (i = 0; i < sizeof(odd) / sizeof(odd[0]); i++) {
		check_address_field(elf, kind, sec, odd[i], 0);
		if (sec->size >= odd[i])
			check_address_field(elf, kind, sec, sec->size - odd[i], 0);
	}
	check_address_field(elf, kind, sec, SIZE_MAX, 0);
	check_address_field(elf, kind, sec, SIZE_MAX - 7, 0);
}

/* Checks an open file; fills in secs[] and returns which sections it has. */
static unsigned check_file(const struct fl_elf *elf, uint32_t elf_flags, size_t size,
			   struct fl_elf_section secs[FL_SECTION_KINDS])
{
	unsigned present = 0;
	uint16_t type = fl_elf_type(elf);
	struct fl_elf_section scratch;
	struct fl_elf_reloc rel;
	uint64_t addr;
	int k, ret;

	CHECK(type == ET_REL || type == ET_EXEC || type == ET_DYN);
	CHECK((elf_flags & FL_ELF_ANY_MACHINE) || fl_elf_machine(elf) == EM_X86_64);
	CHECK((fl_elf_parse_flags(elf) & ~(uint32_t)FL_PARSE_BIG_ENDIAN) == 0);

	for (k = 0; k < FL_SECTION_KINDS; k++) {
		struct fl_elf_section *sec = &secs[k];

		memset(sec, 0, sizeof(*sec));
		ret = fl_elf_section(elf, (enum fl_section_kind)k, sec);
		CHECK(ret == 0 || ret == -ENOENT);
		if (ret < 0) {
			CHECK(fl_elf_reloc(elf, (enum fl_section_kind)k, 0, &rel) == -ENOENT);
			CHECK(fl_elf_function_address(elf, (enum fl_section_kind)k, 0, 0,
						      &addr) == -ENOENT);
			CHECK(fl_elf_function_name(elf, (enum fl_section_kind)k, 0, 0) == NULL);
			continue;
		}
		present |= 1u << k;
		CHECK(sec->data != NULL || sec->size == 0);
		CHECK(sec->size <= size);
		CHECK(sec->offset <= size && size - sec->offset >= sec->size);
		CHECK(sec->parse_flags == fl_elf_parse_flags(elf));
		touch_bytes(sec->data, sec->size);
		check_section(elf, (enum fl_section_kind)k, sec);
	}
	CHECK(fl_elf_section(elf, FL_SECTION_KINDS, &scratch) == -EINVAL);
	CHECK(fl_elf_section(elf, (enum fl_section_kind)-1, &scratch) == -EINVAL);
	CHECK(fl_elf_reloc(elf, FL_SECTION_KINDS, 0, &rel) == -EINVAL);
	CHECK(fl_elf_function_address(elf, FL_SECTION_KINDS, 0, 0, &addr) == -EINVAL);
	CHECK(fl_elf_function_name(elf, FL_SECTION_KINDS, 0, 0) == NULL);
	return present;
}

static int open_checked(const void *data, size_t size, uint32_t flags,
			struct fl_elf **elf)
{
	struct fl_elf_opts opts = { .sz = sizeof(opts), .flags = flags };
	struct fl_diag diag;
	int ret;

	memset(&diag, 0xa5, sizeof(diag));
	*elf = (struct fl_elf *)1;
	ret = fl_elf_open_mem(data, size, &opts, elf, &diag);
	if (ret == 0) {
		CHECK(*elf != NULL);
		return 0;
	}
	CHECK(*elf == NULL);
	CHECK(ret == -ENOEXEC || ret == -EMSGSIZE || ret == -EINVAL || ret == -ENOMEM);
	CHECK(memchr(diag.msg, '\0', sizeof(diag.msg)) != NULL);
	CHECK(diag.msg[0] != '\0');
	return ret;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fl_elf_section secs[2][FL_SECTION_KINDS];
	struct fl_elf *strict = NULL, *any = NULL;
	unsigned present[2] = { 0, 0 };
	void *copy;
	int ret[2], k;

	ret[0] = open_checked(data, size, 0, &strict);
	if (ret[0] == 0)
		present[0] = check_file(strict, 0, size, secs[0]);

	copy = malloc(size ? size : 1);
	if (!copy)
		goto out;
	memcpy(copy, data, size);
	ret[1] = open_checked(copy, size, FL_ELF_ANY_MACHINE, &any);
	free(copy);
	if (ret[1] == 0)
		present[1] = check_file(any, FL_ELF_ANY_MACHINE, size, secs[1]);

	/* FL_ELF_ANY_MACHINE only accepts more. */
	if (ret[0] == 0) {
		CHECK(ret[1] == 0);
		CHECK(fl_elf_type(strict) == fl_elf_type(any));
		CHECK(fl_elf_machine(strict) == fl_elf_machine(any));
		CHECK(fl_elf_parse_flags(strict) == fl_elf_parse_flags(any));
		CHECK(present[0] == present[1]);
		for (k = 0; k < FL_SECTION_KINDS; k++) {
			if (!(present[0] & (1u << k)))
				continue;
			CHECK(secs[0][k].size == secs[1][k].size);
			CHECK(secs[0][k].offset == secs[1][k].offset);
			CHECK(secs[0][k].size == 0 ||
			      memcmp(secs[0][k].data, secs[1][k].data, secs[0][k].size) == 0);
		}
	}
out:
	fl_elf_close(strict);
	fl_elf_close(any);
	/* NULL is fine to close; a NULL buffer with a size is not an image. */
	fl_elf_close(NULL);
	CHECK(open_checked(NULL, 1, 0, &strict) == -EINVAL);
	return 0;
}
