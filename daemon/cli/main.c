// SPDX-License-Identifier: MIT
/* faultline: the command-line tool.  This file only dispatches subcommands. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

#ifndef FL_VERSION
#define FL_VERSION "unknown"
#endif

struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
};

static const struct command commands[] = {
	{ "faultmap", cmd_faultmap, "print the .llvm_faultmaps tables of ELF files" },
	{ "stackmap", cmd_stackmap, "print the .llvm_stackmaps tables of ELF files" },
	{ "healable", cmd_healable, "which implicit checks of ELF files can be healed in place" },
	{ "run", cmd_run, "run a program with faultline's preload library" },
	{ "stats", cmd_stats, "print faultlined's fault statistics" },
	{ "top", cmd_top, "a live view of faultlined's statistics" },
	{ "ps", cmd_ps, "list the processes registered with faultlined" },
	{ "sites", cmd_sites, "list a registered process's implicit check sites" },
	{ "stackmaps", cmd_stackmaps, "print a registered process's stack map records" },
	{ "request", cmd_request, "send a request to a registered process" },
	{ "patch", cmd_patch, "rewrite or reset a patch point of a registered process" },
	{ "invalidate", cmd_invalidate, "invalidate a stack map record of a registered process" },
	{ "heal", cmd_heal, "heal implicit checks of a registered process in place" },
	{ "unheal", cmd_unheal, "restore healed implicit checks of a registered process" },
	{ "profile", cmd_profile, "the instructions that take the most page faults (eBPF)" },
};

static void usage(FILE *out)
{
	size_t i;

	fputs("Usage: faultline COMMAND [OPTIONS] [ARGS]\n"
	      "       faultline COMMAND --help\n"
	      "       faultline --version\n"
	      "\n"
	      "Runtime support for LLVM implicit checks, stack maps and patch points.\n"
	      "\n"
	      "Commands:\n", out);
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fputs("\nExit status: each command's --help says; 2 for a bad command line.\n"
	      "See faultline(1).\n", out);
}

/* The edit distance (insertions, deletions, substitutions) of a and b. */
static size_t distance(const char *a, const char *b)
{
	size_t lb = strlen(b), row[lb + 1];

	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; *a; a++, i++) {
		size_t diag = row[0];

		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t up = row[j];
			size_t best = diag + (*a != b[j - 1]);

			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[lb];
}

/*
 * "unknown command 'stat'", and the commands nearest it when they are near
 * enough to be a slip: at most 2 edits, and fewer than its length.
 */
static void unknown_command(const char *name)
{
	size_t n = sizeof(commands) / sizeof(commands[0]), best = 3, d[n], k = 0;
	char hint[256] = "";
	int used = 0;

	for (size_t i = 0; i < n; i++) {
		d[i] = distance(name, commands[i].name);
		if (d[i] < best && d[i] < strlen(name))
			best = d[i];
	}
	for (size_t i = 0; i < n; i++) {
		if (best > 2 || d[i] != best || used < 0 || (size_t)used >= sizeof(hint))
			continue;
		used += snprintf(hint + used, sizeof(hint) - (size_t)used, "%s'%s'",
				 k++ ? " or " : " (did you mean ", commands[i].name);
	}
	usage_error(NULL, "unknown command '%s'%s%s", name, hint, k ? "?)" : "");
}

void usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fputs("faultline: ", stderr);
	if (cmd)
		fprintf(stderr, "%s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry 'faultline %s%s--help' for more information.\n",
		cmd ? cmd : "", cmd ? " " : "");
}

int main(int argc, char **argv)
{
	size_t i;

	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
	    !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("faultline %s\n", FL_VERSION);
		return 0;
	}
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].run(argc - 1, argv + 1);
	if (argv[1][0] == '-')
		usage_error(NULL, "unknown option '%s'", argv[1]);
	else
		unknown_command(argv[1]);
	return EXIT_USAGE;
}
