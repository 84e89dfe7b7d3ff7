// SPDX-License-Identifier: MIT
/*
 * faultline run [--log LEVEL] [--null-bound BYTES] [--summary] [--preload PATH] -- PROGRAM [ARGS]
 *
 * Runs PROGRAM with libfaultline-preload.so in LD_PRELOAD: the same as
 * setting it by hand, with the library found next to this tool.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gelf.h>

#include "cli.h"
#include "opts.h"

#define PRELOAD_NAME "libfaultline-preload.so"

static const char run_epilogue[] =
	"Exit status: PROGRAM's; 126 if PROGRAM cannot be executed, 127 if it\n"
	"cannot be found or the preload library cannot be found or is no ELF\n"
	"shared object for x86-64, 2 for usage errors.\n";

static const char run_usage[] =
	"Usage: faultline run [OPTIONS] [--] PROGRAM [ARGS...]\n"
	"\n"
	"Run PROGRAM with faultline's preload library, so that its implicit\n"
	"null checks that fail resume at their handlers.  Exits with PROGRAM's\n"
	"status.\n";

/* Whether the LD_PRELOAD list (':' or ' ' separated) names a libfaultline-preload.so. */
static bool lists_preload(const char *list)
{
	size_t name = strlen(PRELOAD_NAME);

	for (const char *at = list; *at;) {
		size_t len = strcspn(at, ": ");

		if (len >= name && !strncmp(at + len - name, PRELOAD_NAME, name) &&
		    (len == name || at[len - name - 1] == '/'))
			return true;
		at += len;
		at += strspn(at, ": ");
	}
	return false;
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

/*
 * NULL when path starts as an x86-64 ELF shared object does (what the
 * dynamic loader would take from LD_PRELOAD), else what it is instead.
 * ld.so would only warn and run the program without faultline.
 */
static const char *not_a_preload(const char *path)
{
	const char *no = NULL;
	Elf_Scn *scn = NULL;
	GElf_Ehdr eh;
	Elf *e;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return strerror(errno);
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF || !gelf_getehdr(e, &eh))
		no = "not an ELF file, so not a shared library";
	else if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != EM_X86_64)
		no = "an ELF file for another machine than x86-64";
	else if (eh.e_type != ET_DYN)
		no = "an ELF file, but no shared library (an object file or a program)";
	/* A position-independent program is ET_DYN too: DF_1_PIE tells it. */
	while (!no && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		GElf_Dyn dyn;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC || !sh.sh_entsize ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize && gelf_getdyn(d, (int)i, &dyn); i++)
			if (dyn.d_tag == DT_FLAGS_1 && (dyn.d_un.d_val & DF_1_PIE))
				no = "a program (position-independent), not a shared library";
	}
	if (!no && elf_errno())
		no = "a damaged ELF file";
	elf_end(e);
	close(fd);
	return no;
}

/* A name the compilers take as source or objects, not a program. */
static bool looks_like_source(const char *name)
{
	static const char *const suffixes[] = { ".c", ".cc", ".cpp", ".cxx", ".h", ".ll",
						".bc", ".s", ".S", ".o", NULL };
	const char *dot = strrchr(name, '.');

	for (int i = 0; dot && suffixes[i]; i++)
		if (!strcmp(dot, suffixes[i]))
			return true;
	return false;
}

/*
 * Why execvp(prog) failed with err, in the words of what was looked for:
 * PATH (a name without '/'), the file, its mode.
 */
static void exec_failed(const char *prog, int err)
{
	bool searched = !strchr(prog, '/');
	struct stat st;

	if (err == ENOENT && searched)
		fprintf(stderr, "faultline: run: %s: no such command in PATH\n", prog);
	else if (err == EACCES && stat(prog, &st) == 0 && S_ISDIR(st.st_mode))
		fprintf(stderr, "faultline: run: %s: a directory, not a program\n", prog);
	else if (err == EACCES && !searched && stat(prog, &st) == 0 && !(st.st_mode & 0111))
		fprintf(stderr, "faultline: run: %s: not executable (its mode is %03o)\n",
			prog, (unsigned)(st.st_mode & 0777));
	else if (err == ENOEXEC)
		fprintf(stderr, "faultline: run: %s: not a program this system can run\n",
			prog);
	else
		fprintf(stderr, "faultline: run: %s: %s\n", prog, strerror(err));
	if (looks_like_source(prog))
		fprintf(stderr, "faultline: run: %s is a source or object file: build a "
			"program from it first, then run that\n", prog);
	else if (searched && err == ENOENT && access(prog, F_OK) == 0)
		fprintf(stderr, "faultline: run: the current directory is not searched: "
			"did you mean ./%s?\n", prog);
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
	unsigned preload_given = 0;
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
		{ "preload", CLI_OPT_STRING, &preload, .arg = "PATH", .count = &preload_given,
		  .help = "the preload library (default: $FAULTLINE_PRELOAD, else\n"
			  "../lib/" PRELOAD_NAME " next to this program,\n"
			  "else the installed one)" },
		{ NULL },
	};
	/* In order: PROGRAM's options are its own. */
	const struct cli_opts cli = { "run", run_usage, run_epilogue, opts, .in_order = true,
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
	} else {
		const char *no = not_a_preload(preload);

		if (no) {
			fprintf(stderr, "faultline: run: %s%s: %s\n",
				preload_given ? "--preload " : "FAULTLINE_PRELOAD=", preload, no);
			return 127;
		}
	}

	/*
	 * After what is there: a preload that must come first (HotSpot's
	 * libjsig, whose sigaction then hands the JVM's and the others' to
	 * the shim's; ASan's runtime) keeps its place.  Already there (run
	 * under run): left as it is.
	 */
	old = getenv("LD_PRELOAD");
	if (old && *old) {
		if (lists_preload(old)) {
			env = strdup(old);
		} else if (asprintf(&env, "%s:%s", old, preload) < 0) {
			return 127;
		}
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
	exec_failed(argv[first], c);
	return c == ENOENT ? 127 : 126;
}
