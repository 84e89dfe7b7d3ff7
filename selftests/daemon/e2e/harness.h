/* SPDX-License-Identifier: MIT */
/*
 * faultlined end to end: the harness the groups share (harness.c).  A
 * group is one file, group-NAME.c, with one entry, group_NAME(), listed in
 * harness.c's table; it starts its own daemon (daemon_start) on a socket
 * and a state directory of its own and leaves nothing behind: the harness
 * kills and reaps what it started, also on an early return or a crash.
 */
#ifndef FAULTLINE_E2E_HARNESS_H
#define FAULTLINE_E2E_HARNESS_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "proto/proto.h"

#define NOBODY 65534

/*
 * How long to wait for something that must happen: minutes, for QEMU's TCG
 * on a busy 2-core machine.  A slow machine only makes a wait longer.
 */
#define WAIT_S 300
#define WAIT_MS (WAIT_S * 1000)

/* The command line: e2e GROUP OUTDIR DIR FAULTLINED PRELOAD PROG LOAD. */
extern const char *group, *outdir, *dir, *fld, *preload, *prog, *loadprog;
/* The daemon's socket and state directory (the kernel group swaps them). */
extern char sock_path[108], state_dir[PATH_MAX];
/* The daemon running (-1: none) and its log. */
extern pid_t dpid;
extern char dlog[PATH_MAX];
/* The kernel group's other daemons: an extra option, another user. */
extern const char *daemon_extra;
extern uid_t daemon_uid;

/* The groups: one file each. */
void group_counts(void);
void group_churn(void);
void group_restart(void);
void group_persist(void);
void group_request(void);
void group_security(void);
void group_load(void);
void group_kernel(void);
void group_bell(void);

/* ------------------------------------------------------------------------
 * Reporting
 */

void ok(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void fail(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* check(cond, name, detail...): ok or FAIL with the detail. */
#define check(cond, name, ...) do {				\
		if (cond)					\
			ok("%s", name);				\
		else						\
			fail(name, __VA_ARGS__);		\
	} while (0)

double now(void);
void sleep_ms(int ms);

/* ------------------------------------------------------------------------
 * The processes the driver starts
 */

void die_with(pid_t parent);
void kid_add(pid_t pid);
void kid_gone(pid_t pid);
int reap(pid_t pid);
void kill_kids(void);

/* ------------------------------------------------------------------------
 * The daemon
 */

bool log_has(const char *path, const char *needle);
bool log_wait(const char *needle, const char *needle2);
void daemon_kill9(void);
int daemon_start(void);
void wait_stopped(pid_t pid);
int daemon_stop(void);
bool daemon_alive(void);
int daemon_nfds(void);

/* ------------------------------------------------------------------------
 * Raw protocol clients
 */

int conn(void);
int xsend(int fd, const void *buf, size_t len, const int *fds, size_t nfds, int flags);
ssize_t xrecv(int fd, void *buf, size_t size, int timeout_ms);
int dropped_by(int fd, int *err, double end);
int dropped(int fd, int *err);
size_t mk_query(void *buf, uint32_t what, uint32_t pid, uint64_t arg);
size_t mk_request(void *buf, uint32_t pid, uint32_t kind, uint64_t arg);
int read_reply(int fd, char **text, int timeout_ms);
int exchange(const void *msg, size_t len, char **text);
int exchange_as(uid_t uid, const void *msg, size_t len, char **text);
int query(uid_t uid, uint32_t what, uint32_t pid, uint64_t arg, json_object **doc);
int request(uid_t uid, uint32_t pid, uint32_t kind, uint64_t arg, uint64_t *value);

/* A region for a fake process (the security and kernel groups). */
struct fake {
	int fd;
	void *region;
	struct fl_shm_layout l;
};

extern uint32_t fake_ring;	/* request ring entries of the next fake region */

#define ALL_SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)

int fake_region(struct fake *f, uint32_t capacity, int seals, pid_t pid);

/* ------------------------------------------------------------------------
 * What the daemon says about a process
 */

enum { S_LOAD, S_STORE, S_RMW, S_N };
extern const char *const site_fn[S_N];
extern const char *const site_kind[S_N];

struct pstat {
	int entries;		/* how often the pid is listed */
	int exited;		/* of the last entry */
	uint64_t faults[S_N];
	int other_sites;	/* sites not of sites.ll, or of the wrong kind */
	uint64_t total;		/* the process's "faults" */
	char comm[32];
};

json_object *get(json_object *o, const char *key);
size_t nprocs(json_object *doc);
json_object *proc_at(json_object *doc, size_t i);
int ps_entries(json_object *doc, pid_t pid);
void pstat_of(json_object *doc, pid_t pid, struct pstat *s);
void pstat_str(const struct pstat *s, char *buf, size_t size);
bool expect_counts(const char *name, pid_t pid, bool exited, uint64_t l, uint64_t s,
		   uint64_t r);
json_object *record_headers(void);
bool state_lists_exited(const char *name, const pid_t *pids, size_t n);

/* ------------------------------------------------------------------------
 * Programs
 */

struct proc {
	pid_t pid;
	int in, out;
	char buf[8192];
	size_t len;
};

int proc_spawn(struct proc *p, uid_t uid, bool with_preload, const char *const argv[]);
int proc_line(struct proc *p, char *line, size_t size, int timeout_ms);
pid_t proc_expect_pid(struct proc *p, const char *word, const char *name);
int proc_say(struct proc *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int proc_end(struct proc *p);
pid_t start_waiter(struct proc *p, uid_t uid, int l, int s, int r, const char *name);
bool waiter_fail(struct proc *p, int l, int s, int r, const char *name);
pid_t run_prog(const char *const argv[], const char *word, const char *name);

#endif
