/* SPDX-License-Identifier: MIT */
/*
 * Names for instruction addresses of other processes, for faultline profile:
 * the module (from snapshots of /proc/PID/maps) and the function (from the
 * module's ELF symbol table, through libelf), or the name a JIT compiler
 * published in /tmp/perf-PID.map for anonymous code.
 *
 * A process can exit before its addresses are named, so the maps are read
 * while it runs (cli_sym_snapshot) and kept: every executable mapping ever
 * seen is remembered, and an address is named after the most recently seen
 * mapping that contains it.  The perf map is read once, at the first lookup
 * of that process: JIT compilers write it late (HotSpot on
 * `jcmd PID Compiler.perfmap`).
 *
 * Not thread-safe: one thread (the command's) uses a struct cli_sym.
 */
#ifndef FL_CLI_SYMBOLIZE_H
#define FL_CLI_SYMBOLIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cli_sym;

enum cli_sym_kind {
	CLI_SYM_UNKNOWN,	/* no mapping seen contains the address */
	CLI_SYM_FILE,		/* a file mapping (ELF or not) */
	CLI_SYM_JIT,		/* a /tmp/perf-PID.map entry */
	CLI_SYM_ANON,		/* anonymous memory no perf map entry names */
};

/* What is known about one address; strings live as long as the cli_sym. */
struct cli_sym_info {
	enum cli_sym_kind kind;
	/*
	 * FILE: the mapped file's path; ANON: the mapping's name ("[vdso]",
	 * "[heap]", "" for plain anonymous memory); JIT: the perf map's path.
	 */
	const char *module;
	/*
	 * FILE: the address as the ELF file has it (its link-time address,
	 * which objdump and addr2line take), or the file offset when the file
	 * is not ELF or no segment covers it; ANON: the offset from the
	 * mapping's start.
	 */
	uint64_t module_offset;
	bool module_offset_is_address;	/* FILE: module_offset is an ELF address */
	/* The function (ELF symbol) or JIT name containing it, or NULL. */
	const char *function;
	uint64_t function_offset;
};

/* Returns a new, empty symbolizer, or NULL when out of memory. */
struct cli_sym *cli_sym_new(void);
void cli_sym_free(struct cli_sym *s);

/*
 * Reads /proc/PID/maps and /proc/PID/comm, and remembers the executable
 * mappings not seen before.  Returns 0, -ESRCH when the process is gone,
 * or another -errno (-EACCES: not allowed to read its maps).
 */
int cli_sym_snapshot(struct cli_sym *s, uint32_t pid);

/* Returns true once a snapshot of pid succeeded. */
bool cli_sym_known(const struct cli_sym *s, uint32_t pid);

/* The process's name at its last snapshot, or NULL.  Valid until the next
 * call of a cli_sym function. */
const char *cli_sym_comm(const struct cli_sym *s, uint32_t pid);

/* Fills *info for address ip of process pid.  Always succeeds. */
void cli_sym_lookup(struct cli_sym *s, uint32_t pid, uint64_t ip,
		    struct cli_sym_info *info);

/*
 * Formats info as "module+0xoff (function+0xoff)" for a file,
 * "[jit] name+0xoff" for a perf map entry, "[anon]+0xoff" (or the
 * mapping's own name: "[vdso]+0xoff") for other anonymous memory, "?"
 * when no mapping was seen.
 * Returns buf.
 */
char *cli_sym_format(const struct cli_sym_info *info, char *buf, size_t len);

#endif /* FL_CLI_SYMBOLIZE_H */
