/* SPDX-License-Identifier: MIT */
/* The input files of faultline faultmap and stackmap, read through the discovery layer. */
#ifndef FL_CLI_INPUT_H
#define FL_CLI_INPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cli_section {
	int found;
	const void *data;
	size_t size;
};

/* An input file and its two sections, opened through the discovery layer. */
struct cli_file {
	const char *path;
	const char *format_name;	/* "elf64-x86-64", as llvm-objdump names it */
	const char *arch;		/* "x86_64", "aarch64", ... or "unknown" (e_machine) */
	uint16_t machine;		/* e_machine */
	uint32_t parse_flags;		/* FL_PARSE_BIG_ENDIAN for MSB objects */
	struct cli_section faultmap;
	struct cli_section stackmap;
	void *priv;
};

/*
 * After a file operand of cmd (faultmap, stackmap, healable) could not be
 * read: when path is no file and looks like a process ID, says on stderr
 * which command reads a running process's tables (daemon_cmd: "stackmaps").
 */
void cli_file_hint_pid(const char *path, const char *daemon_cmd);

/*
 * Opens path, mapped: only the bytes used are read.  names: also read the
 * symbols and relocations, for cli_file_symbol.  Returns 0 on success,
 * -errno on failure with a message (naming the file) in err.
 * cli_file_close(f) is safe after either.
 */
int cli_file_open(struct cli_file *f, const char *path, bool names, char *err,
		  size_t errlen);
void cli_file_close(struct cli_file *f);
/*
 * The symbol a function address field (at section offset address_offset of
 * the fault map or stack map) names, or NULL (always, when f was opened
 * without names).
 */
const char *cli_file_symbol(struct cli_file *f, const struct cli_section *sec,
			    size_t address_offset, uint64_t address);

#endif /* FL_CLI_INPUT_H */
