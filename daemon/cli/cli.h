/* SPDX-License-Identifier: MIT */
/* Internal interfaces of the faultline command-line tool. */
#ifndef FL_CLI_H
#define FL_CLI_H

#include <stdint.h>
#include <stdio.h>

#include <faultline/format.h>

#define EXIT_MALFORMED 1	/* a file is malformed or unreadable */
#define EXIT_USAGE 2		/* bad command line */

struct cli_section {
	int found;
	const void *data;
	size_t size;
};

/* An input file and its two sections, opened through the discovery layer. */
struct cli_file {
	const char *path;
	const char *format_name;	/* "elf64-x86-64", as llvm-objdump names it */
	uint32_t parse_flags;		/* FL_PARSE_BIG_ENDIAN for MSB objects */
	struct cli_section faultmap;
	struct cli_section stackmap;
	void *priv;
};

/*
 * Opens path.  Returns 0 on success, -errno on failure with a message
 * (naming the file) in err.  cli_file_close(f) is safe after either.
 */
int cli_file_open(struct cli_file *f, const char *path, char *err, size_t errlen);
void cli_file_close(struct cli_file *f);
/*
 * The symbol a function address field (at section offset address_offset of
 * the fault map or stack map) names, or NULL.
 */
const char *cli_file_symbol(struct cli_file *f, const struct cli_section *sec,
			    size_t address_offset, uint64_t address);

int print_faultmap_llvm(FILE *out, const struct cli_section *sec, uint32_t flags);
int print_stackmap_llvm(FILE *out, const struct cli_section *sec, uint32_t flags);

struct json_object;
/* Returns the JSON object for one file's fault map or stack map section. */
struct json_object *faultmap_json(struct cli_file *f, uint32_t flags);
struct json_object *stackmap_json(struct cli_file *f, uint32_t flags);

int cmd_faultmap(int argc, char **argv);
int cmd_stackmap(int argc, char **argv);
int cmd_run(int argc, char **argv);
/* The daemon's commands (client.c talks to it). */
int cmd_stats(int argc, char **argv);
int cmd_top(int argc, char **argv);
int cmd_ps(int argc, char **argv);
int cmd_sites(int argc, char **argv);
int cmd_stackmaps(int argc, char **argv);
int cmd_request(int argc, char **argv);
int cmd_profile(int argc, char **argv);	/* loads the eBPF program itself */

/* "faultline: " + message on stderr, then "Try ..." */
void usage_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif /* FL_CLI_H */
