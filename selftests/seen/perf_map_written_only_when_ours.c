// SPDX-License-Identifier: MIT
/*
 * perf_map_written_only_when_ours: fl_seen_add's line in /tmp/perf-PID.map
 * ("START SIZE NAME", hex), each case in a child of its own (a fresh PID,
 * so a fresh map and a fresh decision):
 *   absent       created, and the next registration appended
 *   own          the program's own map is left as it was
 *   own_env1     ... unless FAULTLINE_PERF_MAP=1: appended after its lines
 *   env0         FAULTLINE_PERF_MAP=0: no map is created
 *   symlink      a symlink there (=1 too): its target is not written
 *   other_user   another user's file there (=1 too): not written
 *   fork         a child's registration after fork writes the child's own
 *                map, with the parent's code still registered first
 * fl_seen_add succeeds in every case: a map not written is no error.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "seen_test.h"

static char tmpdir[] = "/tmp/fl-seen-XXXXXX";

static void map_path(pid_t pid, char *buf, size_t size)
{
	snprintf(buf, size, "/tmp/perf-%d.map", (int)pid);
}

/* The file's text (NULL: none), at most 4 KiB. */
static char *slurp(const char *path)
{
	static char buf[4096];
	int fd = open(path, O_RDONLY | O_NOFOLLOW);
	ssize_t n;

	if (fd < 0)
		return NULL;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n < 0 ? 0 : n] = 0;
	return buf;
}

static int lines(const char *text)
{
	int n = 0;

	for (; text && *text; text++)
		n += *text == '\n';
	return n;
}

/* The line fl_seen_add should have written for a copy at code. */
static void want_line(const uint8_t *code, const char *name, char *buf, size_t size)
{
	snprintf(buf, size, "%llx %zx %s\n", (unsigned long long)(uintptr_t)code, seen_nc_len(),
		 name);
}

static struct fl_seen *add(char *line, size_t size)
{
	char name[256];
	uint8_t *code = seen_copy_nc();
	struct fl_seen *s = seen_add_nc(code, name, sizeof(name));

	want_line(code, name, line, size);
	return s;
}

static const char *const own = "1000 10 the_program's_own\n";

/* What a case's child does; it exits 0 when what it checked itself held. */
static void child(const char *which)
{
	char path[64], line[2][512], *text;
	int fd;

	t_in_child = 1;
	map_path(getpid(), path, sizeof(path));
	if (!strcmp(which, "absent")) {
		add(line[0], sizeof(line[0]));
		add(line[1], sizeof(line[1]));
		text = slurp(path);
		t_check(text && lines(text) == 2 && !strncmp(text, line[0], strlen(line[0])) &&
			!strcmp(text + strlen(line[0]), line[1]), "absent: the map holds \"%s\", "
			"not the two lines", text ? text : "(no file)");
	} else if (!strcmp(which, "own") || !strcmp(which, "own_env1")) {
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
		t_check(fd >= 0 && write(fd, own, strlen(own)) == (ssize_t)strlen(own),
			"cannot write the program's own map");
		close(fd);
		add(line[0], sizeof(line[0]));
		text = slurp(path);
		if (!strcmp(which, "own"))
			t_check(text && !strcmp(text, own), "own: the program's map was changed: "
				"\"%s\"", text ? text : "(gone)");
		else
			t_check(text && lines(text) == 2 && !strncmp(text, own, strlen(own)) &&
				!strcmp(text + strlen(own), line[0]), "own_env1: the map holds \"%s\"",
				text ? text : "(gone)");
	} else if (!strcmp(which, "env0")) {
		add(line[0], sizeof(line[0]));
		t_check(access(path, F_OK) && errno == ENOENT, "env0: a map was created");
	} else if (!strcmp(which, "symlink") || !strcmp(which, "other_user")) {
		char target[128];

		snprintf(target, sizeof(target), "%s/target-%d", tmpdir, (int)getpid());
		fd = open(!strcmp(which, "symlink") ? target : path, O_WRONLY | O_CREAT | O_EXCL,
			  0666);
		t_check(fd >= 0, "cannot create the file");
		if (!strcmp(which, "other_user"))
			t_check(!fchown(fd, 65534, 65534), "fchown to 65534: %s", strerror(errno));
		close(fd);
		if (!strcmp(which, "symlink"))
			t_check(!symlink(target, path), "symlink: %s", strerror(errno));
		add(line[0], sizeof(line[0]));
		text = slurp(target);
		if (!strcmp(which, "symlink"))
			t_check(text && !*text, "symlink: its target was written: \"%s\"", text);
		text = slurp(path);
		if (!strcmp(which, "other_user"))
			t_check(text && !*text, "other_user: the file was written: \"%s\"", text);
		unlink(target);
	} else if (!strcmp(which, "fork")) {
		char cpath[64];
		int status;
		pid_t pid;

		add(line[0], sizeof(line[0]));
		fflush(NULL);
		pid = fork();
		t_check(pid >= 0, "fork failed");
		if (pid == 0) {
			add(line[1], sizeof(line[1]));
			map_path(getpid(), cpath, sizeof(cpath));
			text = slurp(cpath);
			unlink(cpath);
			t_check(text && lines(text) == 2 && !strncmp(text, line[0], strlen(line[0])) &&
				!strcmp(text + strlen(line[0]), line[1]), "fork: the child's map holds "
				"\"%s\", not the parent's line then its own", text ? text : "(none)");
			_exit(0);
		}
		t_check(waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
			WEXITSTATUS(status) == 0, "fork: the child failed");
		text = slurp(path);
		t_check(text && !strcmp(text, line[0]), "fork: the parent's map holds \"%s\"",
			text ? text : "(none)");
	}
	_exit(0);
}

int main(void)
{
	static const struct { const char *which, *env; } cases[] = {
		{ "absent", NULL }, { "own", NULL }, { "own_env1", "1" }, { "env0", "0" },
		{ "symlink", "1" }, { "other_user", "1" }, { "fork", NULL },
	};
	int failed = 0;

	t_name = "perf_map_written_only_when_ours";
	fl_set_log(t_log, NULL);
	if (geteuid() != 0)
		t_skip("other_user needs root to make a file another user's");
	t_check(mkdtemp(tmpdir), "mkdtemp failed");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char path[64];
		int status;
		pid_t pid;

		fflush(NULL);
		pid = fork();
		t_check(pid >= 0, "fork failed");
		if (pid == 0) {
			if (cases[i].env)
				setenv("FAULTLINE_PERF_MAP", cases[i].env, 1);
			else
				unsetenv("FAULTLINE_PERF_MAP");
			child(cases[i].which);
		}
		t_check(waitpid(pid, &status, 0) == pid, "waitpid failed");
		map_path(pid, path, sizeof(path));
		unlink(path);
		printf("  %-11s %s\n", cases[i].which,
		       WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "ok" : "FAILED");
		failed += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	rmdir(tmpdir);
	t_check(!failed, "%d case(s) failed", failed);
	printf("PASS %s\n", t_name);
	return 0;
}
