// SPDX-License-Identifier: MIT
/*
 * cxx_exception_crosses_new_code: a C++ exception thrown by a function that
 * the new code calls (seen_test.h's, 16 bytes pushed at the call) is
 * caught by the caller of the original function: libgcc_s's unwinder
 * steps through the new code with the .eh_frame fl_seen_add registered,
 * then through orig_fn with its own.  Without the registration the same throw
 * ends in std::terminate (checked in a child: SIGABRT).
 */
#include <cstdio>
#include <stdexcept>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "seen_test.h"

static void thrower(struct seen_flags *f)
{
	(void)f;
	throw std::runtime_error("thrown from the new code's callee");
}

/* 0 when the exception is caught here. */
static __attribute__((noinline)) int caught_by_the_caller(uint8_t *code)
{
	struct seen_flags f = {};

	f.go = 1;
	try {
		orig_fn(&f, thrower, code);
	} catch (const std::runtime_error &e) {
		printf("  caught \"%s\" in the original's caller\n", e.what());
		return 0;
	}
	return 1;
}

int main()
{
	char name[256];
	struct fl_seen *s;
	uint8_t *code;
	int status;
	pid_t pid;

	t_name = "cxx_exception_crosses_new_code";
	fl_set_log(t_log, NULL);
	code = seen_copy_nc();
	s = seen_add_nc(code, name, sizeof(name));
	printf("  %s registered\n", name);
	t_check(caught_by_the_caller(code) == 0, "the exception was not caught as it should be");
	fl_seen_remove(s);
	printf("  removed: the same throw in a child must end in std::terminate\n");
	fflush(stdout);
	pid = fork();
	t_check(pid >= 0, "fork failed");
	if (pid == 0) {
		struct rlimit none = {};

		setrlimit(RLIMIT_CORE, &none);
		caught_by_the_caller(code);
		_exit(0);
	}
	t_check(waitpid(pid, &status, 0) == pid, "waitpid failed");
	t_check(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT,
		"without the registration the exception did not end in std::terminate "
		"(status 0x%x): the registration is not what made it pass", status);
	printf("PASS %s\n", t_name);
	return 0;
}
