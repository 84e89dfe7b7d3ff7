// SPDX-License-Identifier: MIT
/*
 * A fault past the committed limit at a PC faultline does not know is
 * not claimed: it goes to the application's SIGBUS action exactly as the
 * kernel's SIGBUS would without faultline.  Measured against a control
 * child that uses userfaultfd's SIGBUS feature directly, without
 * faultline:
 *  - SIG_DFL: the child dies of SIGBUS (also with other code registered);
 *  - an SA_SIGINFO handler: it gets si_code BUS_ADRERR and the exact
 *    address, as the control child's handler does.
 */
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "common.h"

#define PAGES 16
#define OFFSET (9 * t_page + 77)

static uint32_t mode;
static int pipe_fd[2];

struct report {
	int signo, code, err;
	long offset;		/* si_addr - base */
};

/* Without faultline: a region of our own, uffd in SIGBUS mode. */
static volatile uint8_t *raw_region(void)
{
	struct uffdio_api api = { .api = UFFD_API, .features = UFFD_FEATURE_SIGBUS };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY);
	void *mem = mmap(NULL, PAGES * t_page, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (fd < 0 || mem == MAP_FAILED || ioctl(fd, UFFDIO_API, &api) != 0)
		_exit(3);
	reg.range.start = (uintptr_t)mem;
	reg.range.len = PAGES * t_page;
	if (ioctl(fd, UFFDIO_REGISTER, &reg) != 0)
		_exit(3);
	return mem;
}

static volatile uint8_t *fl_region_child(bool with_code)
{
	t_init();
	if (with_code)
		t_register_code();
	return fl_region_base(t_region(PAGES * t_page, 2 * t_page, NULL, mode));
}

static volatile uint8_t *child_base;

static void reporter(int sig, siginfo_t *si, void *uc)
{
	struct report rep = {
		.signo = sig, .code = si->si_code, .err = si->si_errno,
		.offset = (long)((uintptr_t)si->si_addr - (uintptr_t)child_base),
	};

	(void)uc;
	if (write(pipe_fd[1], &rep, sizeof(rep)) != (ssize_t)sizeof(rep))
		_exit(4);
	_exit(0);
}

static void touch_raw(void *arg)
{
	(void)arg;
	child_base = raw_region();
	(void)child_base[OFFSET];
}

static void touch_fl(void *arg)
{
	child_base = fl_region_child(arg != NULL);
	(void)child_base[OFFSET];
}

static void report_raw(void *arg)
{
	struct sigaction sa = { .sa_sigaction = reporter, .sa_flags = SA_SIGINFO };

	(void)arg;
	sigaction(SIGBUS, &sa, NULL);
	touch_raw(NULL);
}

static void report_fl(void *arg)
{
	struct sigaction sa = { .sa_sigaction = reporter, .sa_flags = SA_SIGINFO };

	(void)arg;
	sigaction(SIGBUS, &sa, NULL);	/* before fl_init: recorded as the chain */
	touch_fl(NULL);
}

static struct report child_report(void (*fn)(void *))
{
	struct report rep;
	int status;

	t_check(pipe(pipe_fd) == 0, "pipe");
	status = t_child(fn, NULL);
	close(pipe_fd[1]);
	t_check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "reporting child: %s",
		t_status(status));
	t_check(read(pipe_fd[0], &rep, sizeof(rep)) == (ssize_t)sizeof(rep), "no report");
	close(pipe_fd[0]);
	return rep;
}

int main(int argc, char **argv)
{
	struct report want, got;
	int raw, fl, fl_code;

	mode = t_start(argc, argv);

	raw = t_child(touch_raw, NULL);
	t_check(WIFSIGNALED(raw) && WTERMSIG(raw) == SIGBUS, "control child: %s",
		t_status(raw));
	fl = t_child(touch_fl, NULL);
	if (WIFEXITED(fl) && WEXITSTATUS(fl) == 77)
		t_skip("no userfaultfd region (see the child's message)");
	t_check(fl == raw, "with faultline the child was %s, without %s",
		t_status(fl), t_status(raw));
	fl_code = t_child(touch_fl, (void *)1);
	t_check(fl_code == raw, "with code registered the child was %s, without %s",
		t_status(fl_code), t_status(raw));

	want = child_report(report_raw);
	got = child_report(report_fl);
	t_check(got.signo == want.signo && got.code == want.code &&
		got.offset == want.offset && got.err == want.err,
		"the application's handler got signal %d code %d errno %d offset %ld; "
		"without faultline %d %d %d %ld", got.signo, got.code, got.err, got.offset,
		want.signo, want.code, want.err, want.offset);

	printf("PASS %s (%s): %s, si_code %d at the exact address\n", t_name,
	       mode ? "helper" : "sigbus", t_status(fl), got.code);
	return 0;
}
