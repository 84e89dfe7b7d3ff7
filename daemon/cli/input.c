// SPDX-License-Identifier: MIT
/* Input files of faultmap/stackmap, read through the discovery layer. */
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <faultline/discovery.h>

#include "input.h"

/* llvm-objdump's name for the file format (ELFObjectFile::getFileFormatName). */
static const char *format_name(uint16_t machine, int big)
{
	switch (machine) {
	case EM_X86_64:
		return "elf64-x86-64";
	case EM_AARCH64:
		return big ? "elf64-bigaarch64" : "elf64-littleaarch64";
	case EM_PPC64:
		return big ? "elf64-powerpc" : "elf64-powerpcle";
	case EM_S390:
		return "elf64-s390";
	case EM_RISCV:
		return "elf64-littleriscv";
	}
	return "elf64-unknown";
}

/* The architecture's name, as in target triples (and uname -m). */
static const char *arch_name(uint16_t machine)
{
	switch (machine) {
	case EM_X86_64:
		return "x86_64";
	case EM_AARCH64:
		return "aarch64";
	case EM_PPC64:
		return "ppc64";
	case EM_S390:
		return "s390x";
	case EM_RISCV:
		return "riscv64";
	}
	return "unknown";
}

static void take_section(struct fl_elf *elf, enum fl_section_kind kind,
			 struct cli_section *sec)
{
	struct fl_elf_section s;

	memset(sec, 0, sizeof(*sec));
	if (fl_elf_section(elf, kind, &s) == 0) {
		sec->found = 1;
		sec->data = s.data;
		sec->size = s.size;
	}
}

int cli_file_open(struct cli_file *f, const char *path, bool names, char *err,
		  size_t errlen)
{
	struct fl_elf_opts opts = {
		.sz = sizeof(opts),
		.flags = FL_ELF_ANY_MACHINE | FL_ELF_MAP | (names ? 0 : FL_ELF_NO_SYMBOLS),
	};
	struct fl_diag diag = { 0 };
	struct fl_elf *elf;
	int ret;

	memset(f, 0, sizeof(*f));
	f->path = path;
	ret = fl_elf_open(path, &opts, &elf, &diag);
	if (ret < 0) {
		if (diag.msg[0])
			snprintf(err, errlen, "%s", diag.msg);
		else
			snprintf(err, errlen, "%s: %s", path, strerror(-ret));
		return ret;
	}
	f->priv = elf;
	f->parse_flags = fl_elf_parse_flags(elf);
	f->machine = fl_elf_machine(elf);
	f->format_name = format_name(f->machine, !!(f->parse_flags & FL_PARSE_BIG_ENDIAN));
	f->arch = arch_name(f->machine);
	take_section(elf, FL_SECTION_FAULTMAP, &f->faultmap);
	take_section(elf, FL_SECTION_STACKMAP, &f->stackmap);
	return 0;
}

void cli_file_close(struct cli_file *f)
{
	fl_elf_close(f->priv);
	f->priv = NULL;
}

const char *cli_file_symbol(struct cli_file *f, const struct cli_section *sec,
			    size_t address_offset, uint64_t address)
{
	enum fl_section_kind kind = sec == &f->faultmap ? FL_SECTION_FAULTMAP
							: FL_SECTION_STACKMAP;

	return fl_elf_function_name(f->priv, kind, address_offset, address);
}

void cli_file_hint_pid(const char *path, const char *daemon_cmd)
{
	const char *c = path;

	if (*c < '1' || *c > '9' || access(path, F_OK) == 0)
		return;
	while (*c >= '0' && *c <= '9')
		c++;
	if (*c)
		return;
	fprintf(stderr, "faultline: %s is no file; for process %s's, as faultlined has "
		"them: faultline %s %s\n", path, path, daemon_cmd, path);
}
