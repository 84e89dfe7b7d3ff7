// SPDX-License-Identifier: MIT
/*
 * faultline run [--log LEVEL] [--null-bound BYTES] [--preload PATH] -- PROGRAM [ARGS]
 *
 * Runs PROGRAM with libfaultline-preload.so in LD_PRELOAD: the same as
 * setting it by hand, with the library found next to this tool.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

#define PRELOAD_NAME "libfaultline-preload.so"

static void run_usage(FILE *out)
{
	fputs("Usage: faultline run [OPTIONS] [--] PROGRAM [ARGS...]\n"
	      "\n"
	      "Run PROGRAM with faultline's preload library, so that its implicit\n"
	      "null checks that fail resume at their handlers.  Exits with PROGRAM's\n"
	      "status.\n"
	      "\n"
	      "Options:\n"
	      "  --log LEVEL        messages from faultline to stderr: error (default),\n"
	      "                     warn, info or debug (sets FAULTLINE_LOG)\n"
	      "  --null-bound BYTES faults below this address are null checks\n"
	      "                     (default: the page size; sets FAULTLINE_NULL_BOUND)\n"
	      "  --preload PATH     the preload library (default: $FAULTLINE_PRELOAD, else\n"
	      "                     ../lib/" PRELOAD_NAME " next to this program,\n"
	      "                     else the installed one)\n"
	      "  -h, --help         show this help\n", out);
}

/* The preload library beside this executable: BINDIR/../lib/. */
static int find_preload(char *out, size_t len)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;

	if (n > 0) {
		self[n] = 0;
		slash = strrchr(self, '/');
		if (slash) {
			*slash = 0;
			if ((size_t)snprintf(out, len, "%s/../lib/%s", self, PRELOAD_NAME) < len &&
			    access(out, R_OK) == 0)
				return 0;
		}
	}
#ifdef FL_LIBDIR
	if ((size_t)snprintf(out, len, "%s/%s", FL_LIBDIR, PRELOAD_NAME) < len &&
	    access(out, R_OK) == 0)
		return 0;
#endif
	return -ENOENT;
}

int cmd_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "log", required_argument, NULL, 'l' },
		{ "null-bound", required_argument, NULL, 'n' },
		{ "preload", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *preload = getenv("FAULTLINE_PRELOAD");
	char found[PATH_MAX + 64];
	const char *old;
	char *env;
	int c;

	opterr = 0;
	/* '+': stop at PROGRAM, its options are its own. */
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case 'l':
			if (strcmp(optarg, "error") && strcmp(optarg, "warn") &&
			    strcmp(optarg, "info") && strcmp(optarg, "debug")) {
				usage_error("run", "--log: expected error, warn, info or debug, not '%s'",
					    optarg);
				return EXIT_USAGE;
			}
			setenv("FAULTLINE_LOG", optarg, 1);
			break;
		case 'n': {
			char *end;
			unsigned long long v;

			errno = 0;
			v = strtoull(optarg, &end, 0);
			if (errno || end == optarg || *end || v == 0 || optarg[0] == '-') {
				usage_error("run", "--null-bound: expected a positive number of bytes, not '%s'",
					    optarg);
				return EXIT_USAGE;
			}
			setenv("FAULTLINE_NULL_BOUND", optarg, 1);
			break;
		}
		case 'p':
			preload = optarg;
			break;
		case 'h':
			run_usage(stdout);
			return 0;
		default:
			usage_error("run", "unknown option '%s'", argv[optind - 1]);
			return EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		usage_error("run", "no program to run");
		return EXIT_USAGE;
	}
	if (!preload || !*preload) {
		if (find_preload(found, sizeof(found)) != 0) {
			fprintf(stderr, "faultline: run: cannot find %s (set --preload or "
				"FAULTLINE_PRELOAD)\n", PRELOAD_NAME);
			return 127;
		}
		preload = found;
	} else if (access(preload, R_OK) != 0) {
		fprintf(stderr, "faultline: run: %s: %s\n", preload, strerror(errno));
		return 127;
	}

	old = getenv("LD_PRELOAD");
	if (old && *old) {
		if (asprintf(&env, "%s:%s", preload, old) < 0)
			return 127;
	} else {
		env = strdup(preload);
	}
	if (!env || setenv("LD_PRELOAD", env, 1) != 0) {
		perror("faultline: run");
		return 127;
	}
	free(env);

	execvp(argv[optind], argv + optind);
	/* As env(1) and the shells: 126 found but not runnable, 127 not found. */
	c = errno;
	fprintf(stderr, "faultline: run: %s: %s\n", argv[optind], strerror(c));
	return c == ENOENT ? 127 : 126;
}
