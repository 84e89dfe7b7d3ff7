// SPDX-License-Identifier: MIT
/*
 * faultline faultmap|stackmap [--json] [--strict] FILE...
 *
 * Every file is validated whole before anything of it is printed, so a
 * malformed file never leaves half a table on stdout.  Exit status: 0 when
 * every file was read, 1 when one was malformed or unreadable (the others
 * are still printed), 2 for a bad command line.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include <faultline/format.h>

#include "cli.h"
#include "input.h"
#include "opts.h"
#include "print_json.h"
#include "print_llvm.h"

enum map_kind { FAULTMAP, STACKMAP };

struct map_command {
	const char *name;
	enum map_kind kind;
	const char *usage;	/* --help's text above the options */
};

/* The usage of faultline NAME, which prints the SECTION tables as LLVM does. */
#define MAP_USAGE(name, section, llvm)						\
	"Usage: faultline " name " [--json] [--strict] FILE...\n"		\
	"\n"									\
	"Prints the " section " tables of ELF files (objects, executables, shared\n" \
	"libraries).  The default output is what LLVM 14 prints (" llvm "), for\n" \
	"every table of the section, not only the first.\n"

static const char map_epilogue[] =
	"Exit status: 0 on success, 1 if a file is malformed or unreadable,\n"
	"2 for usage errors.\n";

static long validate(const struct map_command *mc, const struct cli_file *f,
		     uint32_t flags, struct fl_diag *diag)
{
	const struct cli_section *sec = mc->kind == FAULTMAP ? &f->faultmap : &f->stackmap;

	if (!sec->found)
		return 0;
	if (mc->kind == FAULTMAP)
		return fl_faultmap_validate(sec->data, sec->size, flags | f->parse_flags, diag);
	return fl_stackmap_validate(sec->data, sec->size, flags | f->parse_flags, diag);
}

/* Text output for one file; nfiles > 1 adds LLVM's per-file headers. */
static void print_text(const struct map_command *mc, struct cli_file *f,
		       uint32_t flags, int nfiles)
{
	if (mc->kind == FAULTMAP) {
		if (nfiles > 1)
			printf("\n%s:\tfile format %s\n", f->path, f->format_name);
		print_faultmap_llvm(stdout, &f->faultmap, flags | f->parse_flags);
	} else {
		if (nfiles > 1)
			printf("\nFile: %s\n", f->path);
		print_stackmap_llvm(stdout, &f->stackmap, flags | f->parse_flags);
	}
}

static int run_maps(const struct map_command *mc, int argc, char **argv)
{
	bool json = false, strict = false;
	const struct cli_opt opts[] = {
		{ "json", CLI_OPT_FLAG, &json,
		  .help = "print one JSON document for all files (see faultline(1))" },
		{ "strict", CLI_OPT_FLAG, &strict,
		  .help = "also reject non-zero reserved fields and padding" },
		{ NULL },
	};
	const struct cli_opts cli = { mc->name, mc->usage, map_epilogue, opts, .in_order = true };
	struct json_object *doc = NULL, *files = NULL;
	uint32_t flags = 0;
	int status = 0, first, i, parsed;

	if ((parsed = cli_opts_parse(&cli, argc, argv, &first)) != CLI_OPTS_GO)
		return parsed;
	if (strict)
		flags |= FL_PARSE_STRICT;
	if (first >= argc) {
		usage_error(mc->name, "no FILE given");
		return EXIT_USAGE;
	}

	if (json) {
		doc = json_object_new_object();
		files = json_object_new_array();
		json_object_object_add(doc, "command", json_object_new_string(mc->name));
		json_object_object_add(doc, "schema", json_object_new_int(1));
		json_object_object_add(doc, "strict", json_object_new_boolean(!!(flags & FL_PARSE_STRICT)));
		json_object_object_add(doc, "files", files);
	}

	for (i = first; i < argc; i++) {
		struct cli_file f;
		struct fl_diag diag = { 0 };
		char err[512];
		long ret;

		/* Text names no function: it reads the section it prints, no more. */
		ret = cli_file_open(&f, argv[i], json, err, sizeof(err));
		if (ret == 0) {
			ret = validate(mc, &f, flags, &diag);
			if (ret < 0)
				snprintf(err, sizeof(err), "%s: %s", f.path, diag.msg);
		}
		if (ret < 0) {
			fprintf(stderr, "faultline: %s\n", err);
			cli_file_hint_pid(argv[i], mc->kind == FAULTMAP ? "sites" : "stackmaps");
			status = EXIT_MALFORMED;
			if (json)
				json_object_array_add(files, file_error_json(argv[i], err));
		} else if (json) {
			json_object_array_add(files, mc->kind == FAULTMAP ?
					      faultmap_json(&f, flags | f.parse_flags) :
					      stackmap_json(&f, flags));
		} else {
			print_text(mc, &f, flags, argc - first);
		}
		cli_file_close(&f);
	}

	if (json) {
		puts(json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PRETTY |
						    JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(doc);
	}
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "faultline: %s: write error: %s\n", mc->name, strerror(errno));
		return EXIT_MALFORMED;
	}
	return status;
}

static const struct map_command faultmap = {
	"faultmap", FAULTMAP,
	MAP_USAGE("faultmap", FL_FAULTMAP_SECTION, "llvm-objdump-14 --fault-map-section")
};
static const struct map_command stackmap = {
	"stackmap", STACKMAP,
	MAP_USAGE("stackmap", FL_STACKMAP_SECTION, "llvm-readelf-14 --stackmap")
};

int cmd_faultmap(int argc, char **argv)
{
	return run_maps(&faultmap, argc, argv);
}

int cmd_stackmap(int argc, char **argv)
{
	return run_maps(&stackmap, argc, argv);
}
