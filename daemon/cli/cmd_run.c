// SPDX-License-Identifier: MIT
/*
 * faultline run [--log LEVEL] [--null-bound BYTES] [--summary] [--preload PATH] -- PROGRAM [ARGS]
 *
 * Runs PROGRAM with libfaultline-preload.so in LD_PRELOAD: the same as
 * setting it by hand, with the library found next to this tool.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "opts.h"

#define PRELOAD_NAME "libfaultline-preload.so"

static const char run_usage[] =
	"Usage: faultline run [OPTIONS] [--] PROGRAM [ARGS...]\n"
	"\n"
	"Run PROGRAM with faultline's preload library, so that its implicit\n"
	"null checks that fail resume at their handlers.  Exits with PROGRAM's\n"
	"status.\n";

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

/*
 * --null-bound, passed on as given.  Not a CLI_OPT_U64: it has always taken
 * whatever strtoull takes above 0 (leading blanks, a '+'), not only digits.
 */
static int take_null_bound(const struct cli_opt *opt, const char *cmd, const char *arg)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(arg, &end, 0);
	if (errno || end == arg || *end || v == 0 || arg[0] == '-') {
		cli_opt_bad(opt, cmd, arg);
		return -EINVAL;
	}
	*(const char **)opt->target = arg;
	return 0;
}

/* In FAULTLINE_LOG's words. */
static const char *const log_levels[] = { "error", "warn", "info", "debug", NULL };

int cmd_run(int argc, char **argv)
{
	const char *preload = getenv("FAULTLINE_PRELOAD"), *null_bound = NULL;
	bool summary = false;
	int level = -1;
	const struct cli_opt opts[] = {
		{ "log", CLI_OPT_ENUM, &level, .choices = log_levels, .arg = "LEVEL",
		  .help = "messages from faultline to stderr: error (default),\n"
			  "warn, info or debug (sets FAULTLINE_LOG)" },
		{ "null-bound", CLI_OPT_CHECK, &null_bound, .check = take_null_bound,
		  .expect = "a positive number of bytes", .arg = "BYTES",
		  .help = "faults below this address are null checks\n"
			  "(default: the page size; sets FAULTLINE_NULL_BOUND)" },
		{ "summary", CLI_OPT_FLAG, &summary,
		  .help = "at exit, print each site whose check failed, with\n"
			  "its count, on stderr; nothing when none failed\n"
			  "(sets FAULTLINE_SUMMARY=1)" },
		{ "preload", CLI_OPT_STRING, &preload, .arg = "PATH",
		  .help = "the preload library (default: $FAULTLINE_PRELOAD, else\n"
			  "../lib/" PRELOAD_NAME " next to this program,\n"
			  "else the installed one)" },
		{ NULL },
	};
	/* In order: PROGRAM's options are its own. */
	const struct cli_opts cli = { "run", run_usage, NULL, opts, .in_order = true,
				      .missing_is_unknown = true };
	char found[PATH_MAX + 64];
	const char *old;
	char *env;
	int c, first, ret;

	if ((ret = cli_opts_parse(&cli, argc, argv, &first)) != CLI_OPTS_GO)
		return ret;
	if (level >= 0)
		setenv("FAULTLINE_LOG", log_levels[level], 1);
	if (null_bound)
		setenv("FAULTLINE_NULL_BOUND", null_bound, 1);
	if (summary)
		setenv("FAULTLINE_SUMMARY", "1", 1);
	if (first >= argc) {
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

	execvp(argv[first], argv + first);
	/* As env(1) and the shells: 126 found but not runnable, 127 not found. */
	c = errno;
	fprintf(stderr, "faultline: run: %s: %s\n", argv[first], strerror(c));
	return c == ENOENT ? 127 : 126;
}
