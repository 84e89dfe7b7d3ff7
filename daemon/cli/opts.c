// SPDX-License-Identifier: MIT
/*
 * One getopt_long loop for every subcommand's options (opts.h): the table
 * becomes getopt_long's struct option array, each option's argument is
 * parsed by its kind as it comes, and every error is worded here.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "client.h"
#include "opts.h"

/* More options than any command has; a longer table is a programming error. */
#define MAX_OPTS 16
/* getopt_long's value for table entry i: above every short option's char. */
#define OPT_VAL(i) (256 + (i))

int cli_parse_u64(const char *cmd, const char *what, const char *s, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 0);
	if (s[0] < '0' || s[0] > '9' || errno || *end) {
		usage_error(cmd, "%s: expected a non-negative integer, not '%s'", what, s);
		return -EINVAL;
	}
	return 0;
}

/* "A, B or C": the choices of an enum, as its error message lists them. */
static void list_choices(const char *const *choices, char *buf, size_t len)
{
	size_t n = 0, used = 0;

	buf[0] = 0;
	while (choices[n])
		n++;
	for (size_t i = 0; i < n && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s",
					 i == 0 ? "" : i + 1 == n ? " or " : ", ", choices[i]);
}

void cli_opt_bad(const struct cli_opt *opt, const char *cmd, const char *arg)
{
	char buf[256];
	const char *expect = opt->expect;

	if (!expect) {
		switch (opt->kind) {
		case CLI_OPT_ENUM:
			list_choices(opt->choices, buf, sizeof(buf));
			expect = buf;
			break;
		case CLI_OPT_PID:
			expect = "a process ID";
			break;
		default:
			expect = "a non-negative integer";
			break;
		}
	}
	usage_error(cmd, "--%s: expected %s, not '%s'", opt->name, expect, arg);
}

static int parse_u64(const struct cli_opt *opt, const char *arg, uint64_t *v)
{
	uint64_t max = opt->max ? opt->max : UINT64_MAX;
	char *end;

	errno = 0;
	*v = strtoull(arg, &end, opt->base);
	if (arg[0] < '0' || arg[0] > '9' || errno || *end || *v < opt->min || *v > max)
		return -EINVAL;
	return 0;
}

static int parse_double(const struct cli_opt *opt, const char *arg, double *v)
{
	char *end;

	errno = 0;
	*v = strtod(arg, &end);
	/* !(v >= lo) is true for NaN too. */
	if (errno || end == arg || *end || !(*v >= opt->lo) || *v > opt->hi)
		return -EINVAL;
	return 0;
}

static int parse_enum(const struct cli_opt *opt, const char *arg, int *v)
{
	for (int i = 0; opt->choices[i]; i++) {
		if (!strcmp(arg, opt->choices[i])) {
			*v = i;
			return 0;
		}
	}
	return -EINVAL;
}

/*
 * Takes one option (and its argument).  Returns 0, or -EINVAL after
 * printing a usage error.
 */
static int take(const struct cli_opt *opt, const char *cmd, const char *arg)
{
	char what[64];
	int err = 0;

	if (opt->count)
		(*opt->count)++;
	switch (opt->kind) {
	case CLI_OPT_FLAG:
		*(bool *)opt->target = true;
		return 0;
	case CLI_OPT_SET:
		*(int *)opt->target = opt->value;
		return 0;
	case CLI_OPT_STRING:
		*(const char **)opt->target = arg;
		return 0;
	case CLI_OPT_ENUM:
		err = parse_enum(opt, arg, opt->target);
		break;
	case CLI_OPT_U64:
		err = parse_u64(opt, arg, opt->target);
		break;
	case CLI_OPT_PID:
		/* cli_parse_pid prints its own message, in the same words. */
		snprintf(what, sizeof(what), "--%s", opt->name);
		return cli_parse_pid(cmd, what, arg, opt->target) ? -EINVAL : 0;
	case CLI_OPT_DOUBLE:
		err = parse_double(opt, arg, opt->target);
		break;
	case CLI_OPT_CHECK:
		return opt->check(opt, cmd, arg);
	}
	if (err)
		cli_opt_bad(opt, cmd, arg);
	return err;
}

static bool takes_argument(enum cli_opt_kind kind)
{
	return kind != CLI_OPT_FLAG && kind != CLI_OPT_SET;
}

/* One option's line(s) of --help: its name in a column width wide. */
static void print_option(FILE *out, const char *name, const char *arg, const char *help,
			 int width)
{
	char left[64];

	snprintf(left, sizeof(left), "%s%s%s", name, arg ? " " : "", arg ? arg : "");
	fprintf(out, "  %-*s", width, left);
	for (const char *c = help; *c; c++) {
		fputc(*c, out);
		if (*c == '\n')
			fprintf(out, "  %-*s", width, "");
	}
	fputc('\n', out);
}

/*
 * --help: the command's usage, then its options, their help starting in
 * one column: two blanks after the longest "-l, --name ARG", and no sooner
 * than 16 columns in.
 */
static void print_usage(const struct cli_opts *o, FILE *out)
{
	int width = 16;

	for (const struct cli_opt *opt = o->opts; opt->name; opt++) {
		int w = (opt->letter ? 4 : 0) + 2 + (int)strlen(opt->name) +
			(opt->arg ? 1 + (int)strlen(opt->arg) : 0);

		if (w + 2 > width)
			width = w + 2;
	}
	fputs(o->usage, out);
	fputs("\nOptions:\n", out);
	for (const struct cli_opt *opt = o->opts; opt->name; opt++) {
		char name[64];

		if (opt->letter)
			snprintf(name, sizeof(name), "-%c, --%s", opt->letter, opt->name);
		else
			snprintf(name, sizeof(name), "--%s", opt->name);
		print_option(out, name, opt->arg, opt->help, width);
	}
	print_option(out, "-h, --help", NULL, "show this help", width);
	fprintf(out, "\n%s", o->epilogue ? o->epilogue : CLI_EXIT_DAEMON);
}

/* The table entry whose letter is c, or NULL. */
static const struct cli_opt *by_letter(const struct cli_opt *opts, int c)
{
	for (const struct cli_opt *opt = opts; opt->name; opt++) {
		if (opt->letter && opt->letter == c)
			return opt;
	}
	return NULL;
}

int cli_opts_parse(const struct cli_opts *o, int argc, char **argv, int *first)
{
	struct option lopts[MAX_OPTS + 2];
	/* "+:" and "l:" per option and "h". */
	char optstring[2 + 2 * MAX_OPTS + 2];
	const struct cli_opt *opt;
	size_t n = 0, len;
	int c;

	len = (size_t)snprintf(optstring, sizeof(optstring), "%s%s", o->in_order ? "+" : "",
			       o->missing_is_unknown ? "" : ":");
	for (; o->opts[n].name; n++) {
		opt = &o->opts[n];
		if (n == MAX_OPTS)
			abort();
		lopts[n] = (struct option){ opt->name,
					    takes_argument(opt->kind) ? required_argument :
					    no_argument, NULL, OPT_VAL(n) };
		if (opt->letter) {
			/* Not help's, getopt's own or a letter twice. */
			if (strchr("h:+-?", opt->letter) || by_letter(o->opts, opt->letter) != opt)
				abort();
			optstring[len++] = opt->letter;
			if (takes_argument(opt->kind))
				optstring[len++] = ':';
		}
	}
	optstring[len++] = 'h';
	optstring[len] = 0;
	lopts[n++] = (struct option){ "help", no_argument, NULL, 'h' };
	lopts[n] = (struct option){ NULL, 0, NULL, 0 };

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, optstring, lopts, NULL)) != -1) {
		if (c == 'h') {
			print_usage(o, stdout);
			return 0;
		}
		if (c == ':') {
			usage_error(o->cmd, "option '%s' needs %s", argv[optind - 1],
				    o->needs ? o->needs : "an argument");
			return EXIT_USAGE;
		}
		if (c >= OPT_VAL(0) && c < OPT_VAL(MAX_OPTS))
			opt = &o->opts[c - OPT_VAL(0)];
		else
			opt = c == '?' ? NULL : by_letter(o->opts, c);
		if (!opt) {
			usage_error(o->cmd, "unknown option '%s'", argv[optind - 1]);
			return EXIT_USAGE;
		}
		if (take(opt, o->cmd, optarg) != 0)
			return EXIT_USAGE;
	}
	*first = optind;
	return CLI_OPTS_GO;
}
