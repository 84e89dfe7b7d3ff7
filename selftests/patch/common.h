/* SPDX-License-Identifier: MIT */
/*
 * The patcher's tests (selftests/patch/): one program per property, each
 * exiting 0 (pass), 1 (fail, with the reason) or 77 (skip, with the
 * reason); run.sh runs them.
 *
 * The code they patch is hand-written machine code in a page of its own,
 * mapped read-write, filled, then made read-execute as a JIT's would be.
 */
#ifndef FL_TEST_PATCH_COMMON_H
#define FL_TEST_PATCH_COMMON_H

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <faultline/dispatch.h>
#include <faultline/log.h>
#include <faultline/patch.h>

#include "../common/t.h"

static inline void t_start(char **argv)
{
	const char *slash = strrchr(argv[0], '/');

	t_name = slash ? slash + 1 : argv[0];
	setvbuf(stdout, NULL, _IOLBF, 0);
	fl_set_log(t_log, NULL);
}

static inline void t_init(void)
{
	FL_OPTS(fl_init_opts, o, .flags = FL_INIT_NO_DISCOVERY | FL_INIT_NO_AGENT);
	int err = fl_init(&o);

	t_check(err == 0, "fl_init: %s", strerror(-err));
}

static inline void t_enable(void)
{
	struct fl_diag d = { 0 };
	int err = fl_patch_enable(&d);

	t_check(err == 0, "fl_patch_enable: %d %s", err, d.msg);
}

/* A page of code: the bytes at its start, then int3s; read-execute. */
static inline uint8_t *t_code(const void *bytes, size_t len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	uint8_t *p = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	t_check(p != MAP_FAILED, "mmap: %s", strerror(errno));
	memset(p, 0xcc, page);
	memcpy(p, bytes, len);
	t_check(mprotect(p, page, PROT_READ | PROT_EXEC) == 0, "mprotect: %s", strerror(errno));
	return p;
}

/* The protection of the page at p, from /proc/self/maps ("r-xp"). */
static inline void t_prot(const void *p, char out[5])
{
	FILE *f = fopen("/proc/self/maps", "r");
	unsigned long long s, e;
	char perms[5];

	strcpy(out, "?");
	t_check(f != NULL, "/proc/self/maps: %s", strerror(errno));
	while (fscanf(f, "%llx-%llx %4s%*[^\n]", &s, &e, perms) == 3)
		if ((uintptr_t)p >= s && (uintptr_t)p < e) {
			memcpy(out, perms, 5);
			break;
		}
	fclose(f);
}

/* CLOCK_MONOTONIC, in seconds. */
static inline double t_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/*
 * The two sites most tests change, each in a page of its own, each in a
 * function that returns 1 or 2 by the version it holds (a call that ran a
 * mix of the versions' bytes returns something else, or crashes):
 *   t_move_site: 6 bytes over which a change moves instruction boundaries
 *   (the thread handshake), in  mov $0x100,%eax; [6 bytes]; ret
 *       mov $1,%eax; nop                     (boundaries +0, +5)
 *       xor %eax,%eax; add $2,%al; nop; nop   (boundaries +0, +2, +4, +5)
 *   t_one_site: a 5-byte instruction changed within itself (the int3
 *   protocol), in  [5 bytes]; ret
 *       mov $1,%eax  <->  mov $2,%eax
 */
static const uint8_t t_move_v[2][6] = {
	{ 0xb8, 0x01, 0x00, 0x00, 0x00, 0x90 },
	{ 0x31, 0xc0, 0x04, 0x02, 0x90, 0x90 },
};
static const uint8_t t_one_v[2][5] = {
	{ 0xb8, 0x01, 0x00, 0x00, 0x00 },
	{ 0xb8, 0x02, 0x00, 0x00, 0x00 },
};

struct t_site {
	int (*fn)(void);	/* returns 1 or 2 */
	uint8_t *addr;		/* the bytes changed */
	const uint8_t *v[2];
	size_t len;
	int cur;		/* the version at addr: 0 or 1 */
	bool moves;		/* a change moves instruction boundaries */
};

static inline struct t_site t_move_site(void)
{
	uint8_t code[12] = { 0xb8, 0x00, 0x01, 0x00, 0x00 };	/* mov $0x100,%eax */
	uint8_t *page;

	memcpy(code + 5, t_move_v[0], 6);
	code[11] = 0xc3;
	page = t_code(code, sizeof(code));
	return (struct t_site){ .fn = (int (*)(void))(void *)page, .addr = page + 5,
				.v = { t_move_v[0], t_move_v[1] }, .len = 6, .moves = true };
}

static inline struct t_site t_one_site(void)
{
	uint8_t code[6];
	uint8_t *page;

	memcpy(code, t_one_v[0], 5);
	code[5] = 0xc3;
	page = t_code(code, sizeof(code));
	return (struct t_site){ .fn = (int (*)(void))(void *)page, .addr = page,
				.v = { t_one_v[0], t_one_v[1] }, .len = 5 };
}

/*
 * Changes s to its other version.  Returns fl_patch_text's result; on 0,
 * s->cur is the new version.
 */
static inline int t_flip(struct t_site *s, struct fl_diag *d)
{
	struct fl_patch p = { .addr = s->addr, .old_bytes = s->v[s->cur],
			      .new_bytes = s->v[!s->cur], .len = s->len };
	int err;

	memset(d, 0, sizeof(*d));
	err = fl_patch_text(&p, 1, d);
	if (!err)
		s->cur = !s->cur;
	return err;
}

/* Whether the bytes at s are its version s->cur. */
static inline bool t_site_is_whole(const struct t_site *s)
{
	return memcmp(s->addr, s->v[s->cur], s->len) == 0;
}

/* How a child ended, for a message: "exit status 1", "killed by SIGTRAP". */
static inline const char *t_status(int status, char buf[64])
{
	if (WIFEXITED(status))
		snprintf(buf, 64, "exit status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, 64, "killed by signal %d (SIG%s)", WTERMSIG(status),
			 sigabbrev_np(WTERMSIG(status)) ? sigabbrev_np(WTERMSIG(status)) : "?");
	else
		snprintf(buf, 64, "status %#x", status);
	return buf;
}

/*
 * Waits for the child pid, at most limit_s seconds; then kills it
 * (SIGKILL, to its process group too when it leads one) and reaps it.
 * Returns true with *status when it ended by itself, false when it was
 * killed for hanging.
 */
static inline bool t_wait(pid_t pid, double limit_s, int *status)
{
	double end = t_now() + limit_s;

	for (;;) {
		pid_t r = waitpid(pid, status, WNOHANG);
		struct timespec ms = { 0, 2000000 };

		if (r == pid)
			return true;
		t_check(r == 0 || errno == EINTR, "waitpid(%d): %s", (int)pid, strerror(errno));
		if (t_now() > end)
			break;
		nanosleep(&ms, NULL);
	}
	if (getpgid(pid) == pid)
		kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
	waitpid(pid, status, 0);
	return false;
}

/*
 * Waits for the child pid (t_wait, limit_s) and checks that it exited 0,
 * not killed (a thread that blocks SIGTRAP and meets a patch's int3 is
 * killed by the kernel's forced SIGTRAP).
 */
static inline void t_child_exits_0(pid_t pid, double limit_s)
{
	char how[64];
	int status;

	t_check(t_wait(pid, limit_s, &status), "the process did not end within %.0f s (killed)",
		limit_s);
	t_check(!WIFSIGNALED(status), "the process was %s%s", t_status(status, how),
		WIFSIGNALED(status) && WTERMSIG(status) == SIGTRAP ?
		": a thread that blocks SIGTRAP met a patch's int3" : "");
	t_check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the process ended with %s (above)",
		t_status(status, how));
}

#endif /* FL_TEST_PATCH_COMMON_H */
