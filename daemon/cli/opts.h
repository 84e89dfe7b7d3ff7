/* SPDX-License-Identifier: MIT */
/*
 * The options of faultline's subcommands, from a table: one getopt_long
 * loop for all of them, so that every command words a bad option alike:
 *
 *   faultline: CMD: unknown option '--frob'
 *   faultline: CMD: option '--socket' needs an argument
 *   faultline: CMD: --sort: expected faults or recent, not 'size'
 *   Try 'faultline CMD --help' for more information.
 *
 * and exits EXIT_USAGE.  -h and --help are every command's: its usage on
 * stdout, exit 0, with the options listed from the same table.  Options
 * take their argument as "--name ARG" or "--name=ARG", and may be
 * abbreviated while unambiguous (getopt_long); one with a letter is also
 * "-l ARG" or "-lARG".
 */
#ifndef FL_CLI_OPTS_H
#define FL_CLI_OPTS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

enum cli_opt_kind {
	CLI_OPT_FLAG,	/* no argument; bool *target becomes true */
	CLI_OPT_SET,	/* no argument; int *target becomes value */
	CLI_OPT_STRING,	/* const char **target is the argument */
	CLI_OPT_ENUM,	/* int *target is the argument's index in choices */
	CLI_OPT_U64,	/* uint64_t *target: digits first, strtoull(base), min..max */
	CLI_OPT_PID,	/* uint32_t *target: a process ID (cli_parse_pid) */
	CLI_OPT_DOUBLE,	/* double *target: strtod, lo..hi */
	CLI_OPT_CHECK,	/* check() takes the argument (and stores it) */
};

struct cli_opt {
	const char *name;	/* the long name without "--"; NULL ends a table */
	enum cli_opt_kind kind;
	void *target;		/* where the kind stores what it parsed */
	unsigned *count;	/* when set: one more every time the option is given */
	int value;		/* CLI_OPT_SET */
	const char *const *choices;	/* CLI_OPT_ENUM: the names, NULL-terminated */
	int base;		/* CLI_OPT_U64: strtoull's base; 0 takes 0x10 and 010 */
	uint64_t min, max;	/* CLI_OPT_U64: the range; max 0 is UINT64_MAX */
	double lo, hi;		/* CLI_OPT_DOUBLE: the range */
	/*
	 * What a bad argument should have been: "--NAME: expected EXPECT, not
	 * 'ARG'".  NULL: the kind's words ("a non-negative integer", "a process
	 * ID", "A, B or C" for an enum).
	 */
	const char *expect;
	/*
	 * CLI_OPT_CHECK: returns 0 with the argument taken, or -EINVAL after
	 * printing a usage error (cli_opt_bad, or its own).
	 */
	int (*check)(const struct cli_opt *opt, const char *cmd, const char *arg);
	const char *arg;	/* what --help calls the argument: "PATH" */
	const char *help;	/* what --help says of it; '\n' starts a line */
	/*
	 * A short option too ('s' for -s), listed as "-s, --name"; 0: none.
	 * Not 'h', which is --help's.  The messages still say "--name".
	 */
	char letter;
};

/* The options every command that asks faultlined shares. */
#define CLI_OPT_SOCKET(target)						\
	{ "socket", CLI_OPT_STRING, (target), .arg = "PATH",		\
	  .help = "faultlined's socket (see faultline stats --help)" }
#define CLI_OPT_JSON(target)						\
	{ "json", CLI_OPT_FLAG, (target),				\
	  .help = "the daemon's JSON document (see faultline(1))" }

/* The exit status of a command that asks faultlined, as --help says it. */
#define CLI_EXIT_DAEMON							\
	"Exit status: 0 on success, 1 if faultlined cannot be reached or answers\n" \
	"with an error, 2 for usage errors.\n"

struct cli_opts {
	const char *cmd;		/* "stats", for the messages */
	/*
	 * --help prints usage (the synopsis and what the command does), then
	 * "Options:" and the table, then epilogue after a blank line.  Every
	 * epilogue ends with the command's exit status ("Exit status: ..."),
	 * as faultline(1) words it; NULL is CLI_EXIT_DAEMON alone.
	 */
	const char *usage;
	const char *epilogue;
	const struct cli_opt *opts;	/* the table, ended by { NULL } */
	/*
	 * Stop at the first operand, as getopt's "+": what follows is an
	 * operand too ("faultline run PROGRAM --its-option").
	 */
	bool in_order;
	/*
	 * A missing argument is an "unknown option", as faultline run has
	 * always said it, not "needs an argument".
	 */
	bool missing_is_unknown;
	/*
	 * What a missing argument is called: "option '--seconds' needs NEEDS".
	 * NULL: "an argument"; profile has always said "a value".
	 */
	const char *needs;
};

/* cli_opts_parse's "go on": the options were good. */
#define CLI_OPTS_GO (-1)

/*
 * Parses argv[1..] by the table o->opts, into the targets, in the order
 * given; the first bad option is the one reported.  Returns CLI_OPTS_GO with
 * *first set to the index of the first operand (argc when there is none), or
 * the command's exit status: 0 after --help printed the usage, EXIT_USAGE
 * after a usage error was printed.  Not thread-safe (getopt_long).
 */
int cli_opts_parse(const struct cli_opts *o, int argc, char **argv, int *first);

/* Prints the usage error "--NAME: expected EXPECT, not 'ARG'" for opt. */
void cli_opt_bad(const struct cli_opt *opt, const char *cmd, const char *arg);

/*
 * Parses s, a non-negative integer in C notation (0x10, 010, 16).  Returns 0
 * with *v set, or prints "WHAT: expected a non-negative integer, not 'S'" as
 * a usage error of cmd and returns -EINVAL.
 */
int cli_parse_u64(const char *cmd, const char *what, const char *s, uint64_t *v);

#endif /* FL_CLI_OPTS_H */
