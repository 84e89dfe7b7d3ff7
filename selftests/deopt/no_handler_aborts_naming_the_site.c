// SPDX-License-Identifier: MIT
/*
 * With no deopt handler set, a deoptimization prints what it decoded (the
 * site: its address, module, function and record; the calling convention,
 * flags and every deopt value) and aborts: it never returns to its call
 * site.  The child deoptimizes; the parent checks its death and message.
 */
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

int main(void)
{
	char out[8192] = { 0 }, want[64];
	int fds[2], status;
	size_t len = 0;
	ssize_t n;
	pid_t pid;

	t_start("no_handler_aborts_naming_the_site");
	t_check(pipe(fds) == 0, "pipe");
	pid = fork();
	t_check(pid >= 0, "fork");
	if (pid == 0) {
		dup2(fds[1], STDERR_FILENO);
		close(fds[0]);
		/* No core file from the abort the test expects. */
		setrlimit(RLIMIT_CORE, &(struct rlimit){ 0, 0 });
		ret_i64(0x1234567, true);
		_exit(3);	/* returned: the parent says so */
	}
	close(fds[1]);
	while (len < sizeof(out) - 1 && (n = read(fds[0], out + len, sizeof(out) - 1 - len)) > 0)
		len += (size_t)n;
	close(fds[0]);
	t_check(waitpid(pid, &status, 0) == pid, "waitpid");
	t_check(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT,
		"the child did not die of SIGABRT (status 0x%x): output:\n%s", status, out);
	snprintf(want, sizeof(want), "= 0x%llx", 0x1234567ull);
	t_check(strstr(out, "no deopt handler is set"), "no reason in:\n%s", out);
	t_check(strstr(out, "stack map record ID 0xabcdef0f"), "no record in:\n%s", out);
	t_check(strstr(out, "1 deopt values"), "no count in:\n%s", out);
	t_check(strstr(out, want), "no value %s in:\n%s", want, out);
	printf("PASS %s: %s", t_name, out);
	return 0;
}
