/* SPDX-License-Identifier: MIT */
/*
 * libfaultline-preload.so: faultline for an unmodified program.
 *
 *   LD_PRELOAD=libfaultline-preload.so ./app      (or: faultline run -- ./app)
 *
 * A constructor calls fl_init, which installs faultline's SIGSEGV/SIGBUS
 * handler and leaves the registration of every loaded module with a fault
 * map to its fl-agent thread (FL_INIT_DEFER_DISCOVERY: a fault before it
 * is done waits for it).  The library interposes these functions, and no other
 * (README.md and faultline(1) list the same; check-cli compares the three
 * lists with what the library exports):
 *   sigaction, signal, sigset, bsd_signal, sysv_signal, __sysv_signal, ssignal
 *   sigignore, sigvec
 *     are recorded (fl_sigaction) rather than replacing faultline's handler,
 *     and another signal's handler is relayed (lib/dispatch/relay.c);
 *   sigprocmask, pthread_sigmask, sigblock, sigsetmask, siggetmask, sighold
 *   sigrelse, sigsuspend, __sigsuspend, sigpause, __sigpause, __xpg_sigpause
 *   sigpending
 *     block SIGSEGV, SIGBUS and SIGTRAP in a per-thread virtual set, never
 *     in the kernel (mask.c);
 *   pthread_create, siglongjmp, longjmp, _longjmp, __longjmp_chk
 *     carry that set to a new thread, and out of a handler; pthread_create
 *     also counts the program's threads, so that the process ends when
 *     its last one does (threads.c);
 *   execve, execv, execvp, execvpe, execl, execle, execlp, fexecve, execveat
 *   posix_spawn, posix_spawnp, system, popen
 *     give it to the program executed;
 *   sigwait, sigwaitinfo, sigtimedwait
 *     take one of the three that was sent while blocked;
 *   unshare, setns
 *     are tried again with faultline's threads stopped, when they refuse a
 *     process with other threads (threads.c);
 *   dlopen, dlclose
 *     rescan the loaded modules.
 *
 * Environment:
 *   FAULTLINE_LOG=error|warn|info|debug   messages to stderr (default: error)
 *   FAULTLINE_NULL_BOUND=N                the null area, bytes (default: the
 *                                         page size)
 *   FAULTLINE_SUMMARY=1                   at exit, the sites whose checks
 *                                         failed, on stderr (summary.c)
 *
 * Known difference: a dlopen by bare file name resolves DT_RUNPATH and
 * $ORIGIN as if called from this library, not from the program's module
 * that called it (glibc takes the caller from the return address).
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <faultline/dispatch.h>
#include <faultline/log.h>

#include "core/env.h"
#include "core/fmt.h"
#include "preload/mask.h"
#include "preload/summary.h"
#include "preload/threads.h"

#define EXPORT __attribute__((visibility("default")))

/* Not declared by glibc's headers under _GNU_SOURCE; exported by libc. */
sighandler_t bsd_signal(int sig, sighandler_t handler);
sighandler_t __sysv_signal(int sig, sighandler_t handler);

static enum fl_log_level log_level = FL_LOG_ERROR;

static void log_stderr(enum fl_log_level level, const char *msg, void *ctx)
{
	static const char *const names[] = { "error", "warning", "info", "debug" };
	char line[512];
	int n;

	(void)ctx;
	if (level > log_level)
		return;
	n = fl_fmt(line, sizeof(line), "faultline: %s: %s\n", names[level], msg);
	if (n > 0)
		(void)!write(STDERR_FILENO, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}

static void read_env(struct fl_init_opts *o)
{
	const char *lvl = fl_env("FAULTLINE_LOG");
	const char *bound = fl_env("FAULTLINE_NULL_BOUND");
	const char *summary = fl_env("FAULTLINE_SUMMARY");

	if (lvl) {
		if (!strcmp(lvl, "error"))
			log_level = FL_LOG_ERROR;
		else if (!strcmp(lvl, "warn") || !strcmp(lvl, "warning"))
			log_level = FL_LOG_WARN;
		else if (!strcmp(lvl, "info"))
			log_level = FL_LOG_INFO;
		else if (!strcmp(lvl, "debug"))
			log_level = FL_LOG_DEBUG;
		else
			fl_set_log(log_stderr, NULL), log_stderr(FL_LOG_ERROR,
				"FAULTLINE_LOG: expected error, warn, info or debug", NULL);
	}
	if (bound) {
		char *end;
		unsigned long long v;

		errno = 0;
		v = strtoull(bound, &end, 0);
		if (errno || end == bound || *end || v == 0)
			log_stderr(FL_LOG_ERROR, "FAULTLINE_NULL_BOUND: expected a positive number "
				   "of bytes; using the page size", NULL);
		else
			o->null_bound = v;
	}
	if (fl_preload_summary_env(summary) != 0)
		log_stderr(FL_LOG_ERROR, "FAULTLINE_SUMMARY: expected 1 (a summary at exit) or 0; "
			   "no summary", NULL);
}

/*
 * HotSpot's libjsig must come before the shim in LD_PRELOAD: after it, the
 * program's sigaction calls reach the shim's and never libjsig's, whose
 * chaining the JVM relies on (a JNI library's sigaction sees the JVM's
 * handler as the previous action, and its own handler runs first).  Found
 * after the shim, it is said, at every level: the program does not get
 * what libjsig promises.
 */
static void check_jsig_order(void)
{
	if (dlsym(RTLD_NEXT, "JVM_begin_signal_setting"))
		log_stderr(FL_LOG_ERROR, "libjsig.so comes after libfaultline-preload.so in "
			   "LD_PRELOAD: its sigaction is bypassed and the JVM's signal chaining "
			   "with it; put libjsig.so first (faultline run keeps LD_PRELOAD's order "
			   "and puts the shim after it)", NULL);
}

__attribute__((constructor)) static void preload_init(void)
{
	/* The program's modules are registered beside it, not before main (fl_init(3)). */
	struct fl_init_opts o = { .sz = sizeof(o), .flags = FL_INIT_DEFER_DISCOVERY };
	/* The program must start with the errno it would have had. */
	int saved_errno = errno;
	int err;

	fl_set_log(log_stderr, NULL);
	read_env(&o);
	check_jsig_order();
	/* faultline's threads (fl_init starts them) are not the program's; its main one is. */
	fl_preload_mask_prepare();
	fl_preload_threads_start();
	err = fl_init(&o);
	if (!err)
		fl_preload_mask_start();
	if (err && err != -EALREADY) {
		char msg[128];

		fl_fmt(msg, sizeof(msg), "fl_init failed: %s; running without faultline",
		       strerror(-err));
		log_stderr(FL_LOG_ERROR, msg, NULL);
	}
	errno = saved_errno;
}

/* ------------------------------------------------------------------------
 * Signals.  The same semantics as glibc's own functions, built on
 * fl_sigaction (which passes every signal through but SIGSEGV, SIGBUS and,
 * once code patching is enabled, SIGTRAP).
 */

EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *oldact)
{
	return fl_sigaction(sig, act, oldact);
}

static sighandler_t set_handler(int sig, sighandler_t handler, int flags, bool mask_self)
{
	struct sigaction act, old;

	if (handler == SIG_ERR || sig <= 0 || sig >= NSIG) {
		errno = EINVAL;
		return SIG_ERR;
	}
	memset(&act, 0, sizeof(act));
	act.sa_handler = handler;
	act.sa_flags = flags;
	sigemptyset(&act.sa_mask);
	if (mask_self && sigaddset(&act.sa_mask, sig) != 0)
		return SIG_ERR;
	if (fl_sigaction(sig, &act, &old) != 0)
		return SIG_ERR;
	return old.sa_handler;
}

/* glibc's signal: BSD semantics. */
EXPORT sighandler_t signal(int sig, sighandler_t handler)
{
	return set_handler(sig, handler, SA_RESTART, true);
}

EXPORT sighandler_t bsd_signal(int sig, sighandler_t handler)
{
	return set_handler(sig, handler, SA_RESTART, true);
}

EXPORT sighandler_t ssignal(int sig, sighandler_t handler)
{
	return set_handler(sig, handler, SA_RESTART, true);
}

/* System V semantics: one-shot, not masked during the handler. */
EXPORT sighandler_t sysv_signal(int sig, sighandler_t handler)
{
	return set_handler(sig, handler, SA_RESETHAND | SA_NODEFER, false);
}

EXPORT sighandler_t __sysv_signal(int sig, sighandler_t handler)
{
	return sysv_signal(sig, handler);
}

EXPORT sighandler_t sigset(int sig, sighandler_t disp)
{
	sigset_t set, old_mask;
	struct sigaction act, old;

	if (sig <= 0 || sig >= NSIG || disp == SIG_ERR) {
		errno = EINVAL;
		return SIG_ERR;
	}
	sigemptyset(&set);
	sigaddset(&set, sig);
	if (disp == SIG_HOLD) {
		if (fl_preload_sigmask(SIG_BLOCK, &set, &old_mask) != 0 ||
		    fl_sigaction(sig, NULL, &old) != 0)
			return SIG_ERR;
		return sigismember(&old_mask, sig) ? SIG_HOLD : old.sa_handler;
	}
	memset(&act, 0, sizeof(act));
	act.sa_handler = disp;
	sigemptyset(&act.sa_mask);
	if (fl_sigaction(sig, &act, &old) != 0 ||
	    fl_preload_sigmask(SIG_UNBLOCK, &set, &old_mask) != 0)
		return SIG_ERR;
	return sigismember(&old_mask, sig) ? SIG_HOLD : old.sa_handler;
}

/*
 * sigvec: glibc keeps it for programs linked before 2.21 (sigvec@GLIBC_2.2.5,
 * no header declares it now), which bind to this unversioned one.  As
 * glibc's sysdeps/posix/sigvec.c: the BSD mask is signals 1 to 32, and
 * SV_INTERRUPT is the absence of SA_RESTART.
 */
struct bsd_sigvec {
	void (*sv_handler)(int);
	int sv_mask;
	int sv_flags;
};

#define SV_ONSTACK 1
#define SV_INTERRUPT 2
#define SV_RESETHAND 4

int sigvec(int sig, const struct bsd_sigvec *vec, struct bsd_sigvec *ovec);

EXPORT int sigvec(int sig, const struct bsd_sigvec *vec, struct bsd_sigvec *ovec)
{
	struct sigaction act, old;
	uint64_t bits;

	if (vec) {
		memset(&act, 0, sizeof(act));
		act.sa_handler = vec->sv_handler;
		bits = (unsigned int)vec->sv_mask;
		sigemptyset(&act.sa_mask);
		memcpy(&act.sa_mask, &bits, sizeof(bits));
		act.sa_flags = ((vec->sv_flags & SV_ONSTACK) ? SA_ONSTACK : 0) |
			       ((vec->sv_flags & SV_INTERRUPT) ? 0 : SA_RESTART) |
			       ((vec->sv_flags & SV_RESETHAND) ? SA_RESETHAND : 0);
	}
	if (fl_sigaction(sig, vec ? &act : NULL, &old) != 0)
		return -1;
	if (ovec) {
		memcpy(&bits, &old.sa_mask, sizeof(bits));
		ovec->sv_handler = old.sa_handler;
		ovec->sv_mask = (int)(unsigned int)bits;
		ovec->sv_flags = ((old.sa_flags & SA_ONSTACK) ? SV_ONSTACK : 0) |
				 ((old.sa_flags & SA_RESTART) ? 0 : SV_INTERRUPT) |
				 ((old.sa_flags & SA_RESETHAND) ? SV_RESETHAND : 0);
	}
	return 0;
}

/* ------------------------------------------------------------------------
 * The loader.  Loads and unloads are serialized with the rescan that
 * follows them, so that no dlopen can map new code over a library that
 * was just unloaded before its entries are gone.  Recursive: a library's
 * constructor may dlopen (glibc holds its own recursive lock meanwhile).
 */

static pthread_mutex_t loader_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;

EXPORT void *dlopen(const char *file, int mode)
{
	static void *(*real)(const char *, int);
	void *h;

	if (!real)
		real = (void *(*)(const char *, int))dlsym(RTLD_NEXT, "dlopen");
	pthread_mutex_lock(&loader_lock);
	h = real(file, mode);
	if (h) {
		int saved = errno;

		fl_refresh();
		errno = saved;
	}
	pthread_mutex_unlock(&loader_lock);
	return h;
}

EXPORT int dlclose(void *handle)
{
	static int (*real)(void *);
	int r;

	if (!real)
		real = (int (*)(void *))dlsym(RTLD_NEXT, "dlclose");
	pthread_mutex_lock(&loader_lock);
	r = real(handle);
	if (r == 0)
		fl_refresh();
	pthread_mutex_unlock(&loader_lock);
	return r;
}
