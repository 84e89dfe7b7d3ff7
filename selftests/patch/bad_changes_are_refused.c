// SPDX-License-Identifier: MIT
/*
 * What fl_patch_enable and fl_patch_text refuse, and that a refused call
 * changes nothing (the code, and the page's protection):
 *   -ENODEV: enabling before fl_init;  -ENOTSUP: patching before enabling;
 *   -EINVAL: no change, too many, len 0 or 16, NULL pointers, overlaps;
 *   -ESTALE: old bytes that are not there (also when another change of the
 *            same batch is right: all or none);
 *   (-EBUSY, a change over instructions with a thread inside or returning
 *   into it: boundary_moves_with_threads_running)
 *   -EFAULT: data memory, not code;
 *   -EPERM:  a shared mapping of a file, which stays as it was.
 */
#include <fcntl.h>

#include "common.h"

/* mov $1,%eax; ret  then  nop; nop; ret */
static const uint8_t code[] = { 0xb8, 0x01, 0x00, 0x00, 0x00, 0xc3, 0x90, 0x90, 0xc3 };
static const uint8_t mov2[] = { 0xb8, 0x02, 0x00, 0x00, 0x00 };

static void expect(const struct fl_patch *p, size_t n, int want, const char *what)
{
	struct fl_diag d = { 0 };
	int err = fl_patch_text(p, n, &d);

	t_check(err == want, "%s: %d (%s), expected %d", what, err, d.msg, want);
	if (want)
		t_check(d.err == want && d.msg[0], "%s: no diagnostic", what);
	printf("  %s: %s\n", what, d.msg);
}

int main(int argc, char **argv)
{
	struct fl_diag d = { 0 };
	uint8_t *page, *data;
	struct fl_patch p[FL_PATCH_MAX_BATCH + 1];
	char prot[5], path[4096];
	uint8_t *shared;
	int fd;

	(void)argc;
	t_start(argv);
	page = t_code(code, sizeof(code));
	t_check(fl_patch_enable(&d) == -ENODEV, "enable before fl_init: %s", d.msg);
	t_init();
	p[0] = (struct fl_patch){ .addr = page, .old_bytes = code, .new_bytes = mov2, .len = 5 };
	expect(p, 1, -ENOTSUP, "before fl_patch_enable");
	t_enable();
	t_enable();	/* idempotent */

	expect(p, 0, -EINVAL, "no change");
	for (int i = 0; i <= FL_PATCH_MAX_BATCH; i++)
		p[i] = (struct fl_patch){ .addr = page + 6, .old_bytes = code + 6, .new_bytes = code + 6, .len = 1 };
	expect(p, FL_PATCH_MAX_BATCH + 1, -EINVAL, "too many changes");
	p[0] = (struct fl_patch){ .addr = page, .old_bytes = code, .new_bytes = mov2, .len = 0 };
	expect(p, 1, -EINVAL, "len 0");
	p[0].len = FL_PATCH_MAX_LEN + 1;
	expect(p, 1, -EINVAL, "len 257");
	p[0].len = 5;
	p[0].new_bytes = NULL;
	expect(p, 1, -EINVAL, "NULL new bytes");
	p[0].new_bytes = mov2;
	p[1] = (struct fl_patch){ .addr = page + 4, .old_bytes = code + 4, .new_bytes = code + 4, .len = 1 };
	expect(p, 2, -EINVAL, "overlapping changes");

	p[0] = (struct fl_patch){ .addr = page, .old_bytes = mov2, .new_bytes = code, .len = 5 };
	expect(p, 1, -ESTALE, "wrong old bytes");
	p[0] = (struct fl_patch){ .addr = page, .old_bytes = code, .new_bytes = mov2, .len = 5 };
	p[1] = (struct fl_patch){ .addr = page + 6, .old_bytes = mov2, .new_bytes = code, .len = 1 };
	expect(p, 2, -ESTALE, "one stale change of two");

	/* Over two instructions: the handshake, with no other thread, lets it. */
	p[0] = (struct fl_patch){ .addr = page, .old_bytes = code, .new_bytes = code, .len = 6 };
	expect(p, 1, 0, "over two instructions, no other thread");

	data = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	memcpy(data, code, sizeof(code));
	p[0] = (struct fl_patch){ .addr = data, .old_bytes = code, .new_bytes = mov2, .len = 5 };
	expect(p, 1, -EFAULT, "data memory");

	/* Beside the test (a tmpfs may be mounted noexec). */
	snprintf(path, sizeof(path), "%s-XXXXXX", argv[0]);
	fd = mkstemp(path);
	t_check(fd >= 0, "mkstemp: %s", strerror(errno));
	t_check(write(fd, code, sizeof(code)) == (ssize_t)sizeof(code), "write");
	shared = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_SHARED, fd, 0);
	if (shared == MAP_FAILED) {
		printf("  a shared file mapping: not tested, mmap(PROT_EXEC, MAP_SHARED) of %s: %s\n",
		       path, strerror(errno));
		unlink(path);
		t_fail("cannot map a file to test -EPERM");
	}
	p[0] = (struct fl_patch){ .addr = shared, .old_bytes = code, .new_bytes = mov2, .len = 5 };
	expect(p, 1, -EPERM, "a shared mapping of a file");
	t_check(pread(fd, data, sizeof(code), 0) == (ssize_t)sizeof(code) &&
		memcmp(data, code, sizeof(code)) == 0, "the file changed");
	unlink(path);

	t_check(memcmp(page, code, sizeof(code)) == 0, "a refused change changed the code");
	t_prot(page, prot);
	t_check(strcmp(prot, "r-xp") == 0, "the page is %s after refused changes", prot);
	t_check(((int (*)(void))(void *)page)() == 1, "the code does not run as before");

	/* And a good one still goes. */
	p[0] = (struct fl_patch){ .addr = page, .old_bytes = code, .new_bytes = mov2, .len = 5 };
	expect(p, 1, 0, "a good change");
	t_check(((int (*)(void))(void *)page)() == 2, "the new code does not run");
	printf("PASS %s\n", t_name);
	return 0;
}
