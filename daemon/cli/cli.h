/* SPDX-License-Identifier: MIT */
/*
 * The faultline command-line tool: its subcommands, one file each
 * (cmd_NAME.c, faultmap and stackmap together in cmd_maps.c), and what they
 * all keep to: the exit status of a bad command line and its message.
 */
#ifndef FL_CLI_H
#define FL_CLI_H

#define EXIT_MALFORMED 1	/* a file is malformed or unreadable */
#define EXIT_USAGE 2		/* bad command line */

int cmd_faultmap(int argc, char **argv);
int cmd_stackmap(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_healable(int argc, char **argv);	/* the healing planner, on files */
/* The daemon's commands (client.c talks to it). */
int cmd_stats(int argc, char **argv);
int cmd_top(int argc, char **argv);
int cmd_ps(int argc, char **argv);
int cmd_sites(int argc, char **argv);
int cmd_stackmaps(int argc, char **argv);
int cmd_request(int argc, char **argv);
int cmd_patch(int argc, char **argv);
int cmd_invalidate(int argc, char **argv);
int cmd_heal(int argc, char **argv);
int cmd_unheal(int argc, char **argv);
int cmd_profile(int argc, char **argv);	/* loads the eBPF program itself */

/* The plural's "s" of a count: "%llu site%s", n, CLI_S(n). */
#define CLI_S(n) ((n) == 1 ? "" : "s")

/* "faultline: " + message on stderr, then "Try ..." */
void usage_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif /* FL_CLI_H */
