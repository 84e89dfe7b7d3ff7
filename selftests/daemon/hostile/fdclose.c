// SPDX-License-Identifier: MIT
/*
 * A program that closes every descriptor from 3 to 1023 when it starts, as
 * daemons do, then lives on its own files: under the preload shim with a
 * daemon listening, faultline must never write, read, close or send one of
 * them.  Run as
 *
 *   fdclose LIB DIR
 *
 * It closes 3..1023, opens DIR/f0..f3, fails the implicit check of
 * e2e_load 5 times, writes a line to each file, loads and unloads LIB (a
 * library with implicit checks), and forks a child that opens DIR/c0..c3,
 * fails the check 3 times, says "child PID" and waits for a line on stdin
 * (the test restarts the daemon meanwhile), then writes a line to its
 * files and to f1 and exits.  The parent writes its last line to each
 * file, checks what every file holds, and prints "ok PID" or "FAIL ...".
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int e2e_load(int *p);

#define FILES 4

static int failed;

static void check(int ok, const char *what)
{
	if (!ok) {
		printf("FAIL %s (errno %s)\n", what, strerror(errno));
		failed = 1;
	}
}

static void open_all(const char *dir, const char *prefix, int *fd)
{
	char path[4096];

	for (int i = 0; i < FILES; i++) {
		snprintf(path, sizeof(path), "%s/%s%d", dir, prefix, i);
		fd[i] = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
		check(fd[i] >= 0, path);
	}
}

static void write_all(const int *fd, const char *line)
{
	for (int i = 0; i < FILES; i++)
		check(write(fd[i], line, strlen(line)) == (ssize_t)strlen(line), line);
}

static void expect(const char *dir, const char *name, const char *want)
{
	char path[4096], got[256] = { 0 };
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDONLY);
	n = fd >= 0 ? read(fd, got, sizeof(got) - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n < 0 || strcmp(got, want) != 0) {
		printf("FAIL %s holds \"%s\" (%zd bytes), not \"%s\"\n", name, got, n, want);
		failed = 1;
	}
}

static void fail_checks(int n)
{
	int word = 1;

	for (int i = 0; i < n; i++)
		check(e2e_load(NULL) == -1 && e2e_load(&word) == 1, "e2e_load");
}

int main(int argc, char **argv)
{
	int fd[FILES], cfd[FILES], status;
	char line[16];
	void *lib;
	pid_t pid;

	if (argc != 3) {
		fprintf(stderr, "usage: fdclose LIB DIR\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 3; i < 1024; i++)
		close(i);
	open_all(argv[2], "f", fd);
	fail_checks(5);
	write_all(fd, "parent-1\n");
	lib = dlopen(argv[1], RTLD_NOW);
	check(lib != NULL, "dlopen");
	if (lib)
		dlclose(lib);

	pid = fork();
	if (pid == 0) {
		open_all(argv[2], "c", cfd);
		fail_checks(3);
		printf("child %d\n", (int)getpid());
		check(fgets(line, sizeof(line), stdin) != NULL, "a line on stdin");
		write_all(cfd, "child\n");
		check(write(fd[1], "child\n", 6) == 6, "child's write to f1");
		_exit(failed);
	}
	check(pid > 0, "fork");
	check(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	      WEXITSTATUS(status) == 0, "the child exits 0");
	write_all(fd, "parent-2\n");
	for (int i = 0; i < FILES; i++)
		check(close(fd[i]) == 0, "close");
	expect(argv[2], "f0", "parent-1\nparent-2\n");
	expect(argv[2], "f1", "parent-1\nchild\nparent-2\n");
	expect(argv[2], "f2", "parent-1\nparent-2\n");
	expect(argv[2], "f3", "parent-1\nparent-2\n");
	for (int i = 0; i < FILES; i++) {
		char name[8];

		snprintf(name, sizeof(name), "c%d", i);
		expect(argv[2], name, "child\n");
	}
	if (!failed)
		printf("ok %d\n", (int)getpid());
	return failed;
}
