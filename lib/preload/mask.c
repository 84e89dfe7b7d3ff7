/* SPDX-License-Identifier: MIT */
/*
 * The shim's side of the signal mask (the handler's side, and why, is
 * lib/dispatch/mask.c): the application blocks SIGSEGV, SIGBUS and, once
 * faultline's handler is SIGTRAP's, SIGTRAP as it likes, and reads back
 * exactly the mask it set, but the kernel never blocks them: they are
 * blocked in the thread's fl_mask_virtual instead.  Every function of
 * glibc's that sets or reads the thread's mask is interposed here, since
 * glibc calls its own internal names (sigblock calls __sigprocmask, which
 * no interposer sees).
 *
 * A new thread starts with its creator's virtual set (or the one of its
 * attributes' mask, pthread_attr_setsigmask_np); fork keeps it (the TLS is
 * copied).  A program the application executes inherits the mask the
 * application believes it has: the virtual set is blocked in the kernel
 * just before the exec (posix_spawn: around it) and unblocked again if it
 * fails.  A jump out of a handler of the chain that restores the mask
 * (siglongjmp, longjmp) gives the virtual set back the value it had
 * before the outermost handler ran (fl_mask_jump).  An action for another
 * signal whose sa_mask names the three has them blocked in the virtual
 * set while its handler runs, never in the kernel (lib/dispatch/relay.c).
 *
 * faultline's own calls (the patcher's lock, its threads, which block
 * every signal) reach the kernel unchanged: they run no code of the
 * application's.  They are known by their return address, in this
 * library's text.
 *
 * sigwait, sigwaitinfo and sigtimedwait take a held one of the three
 * first (below), and system(3) and popen(3) spawn with the virtual set
 * blocked in the kernel.  Not covered: signalfd for the three (they are
 * never pending in the kernel); setcontext(3) and swapcontext(3) (they
 * restore the kernel's part only).
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <faultline/dispatch.h>

#include "dispatch/dispatch.h"
#include "preload/mask.h"
#include "preload/threads.h"

#define EXPORT __attribute__((visibility("default")))
#define KERNEL_SIGSET_BYTES 8

/* glibc's internal signals (SIGCANCEL, SIGSETXID): its pthread_sigmask never blocks them. */
#define GLIBC_INTERNAL ((1ull << (32 - 1)) | (1ull << (33 - 1)))

/* Declared by no header of glibc's, exported by it. */
int __sigpause(int sig_or_mask, int is_sig);
int __xpg_sigpause(int sig);
int __sigsuspend(const sigset_t *set);
void __longjmp_chk(sigjmp_buf env, int val);

extern char **environ;

/*
 * This library's executable segment, [text_lo, text_hi): set once, by the
 * constructor, before faultline starts a thread (fl_preload_mask_prepare).
 */
static uintptr_t text_lo, text_hi;

static bool from_faultline(const void *ret)
{
	return (uintptr_t)ret >= text_lo && (uintptr_t)ret < text_hi;
}

static int find_text(struct dl_phdr_info *info, size_t size, void *data)
{
	uintptr_t here = (uintptr_t)data;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && here >= lo &&
		    here - lo < ph->p_memsz) {
			text_lo = lo;
			text_hi = lo + ph->p_memsz;
			return 1;
		}
	}
	return 0;
}

/* The kernel's part of a sigset_t (its first 64 signals), and back. */
static uint64_t bits_of(const sigset_t *set)
{
	uint64_t bits;

	memcpy(&bits, set, sizeof(bits));
	return bits;
}

/* *set with the kernel's part bits (the rest as it was). */
static void set_bits(sigset_t *set, uint64_t bits)
{
	memcpy(set, &bits, sizeof(bits));
}

/* A set of just bits. */
static sigset_t set_of_bits(uint64_t bits)
{
	sigset_t set;

	sigemptyset(&set);
	set_bits(&set, bits);
	return set;
}

/* libc's, looked up once (the constructor does it before any signal of ours). */
static void *real(void *volatile *slot, const char *name)
{
	void *p = *slot;

	if (!p) {
		p = dlsym(RTLD_NEXT, name);
		*slot = p;
	}
	return p;
}

#define REAL(type, name) ((type)real(&real_##name, #name))
static void *volatile real_sigsuspend, *volatile real_pthread_create, *volatile real_siglongjmp,
	*volatile real___longjmp_chk, *volatile real_execve, *volatile real_execvp,
	*volatile real_execvpe, *volatile real_fexecve, *volatile real_execveat,
	*volatile real_posix_spawn, *volatile real_posix_spawnp, *volatile real_system,
	*volatile real_popen, *volatile real_sigtimedwait;

/*
 * glibc's pthread_sigmask (2.36), as a system call: SIGCANCEL and
 * SIGSETXID left out of the new set.  Returns 0 or an errno value; errno
 * is left alone.
 */
/*
 * rt_sigprocmask, without glibc's internal signals (as glibc's own
 * sigprocmask): 0 or an errno value, errno kept.  note: the mask the
 * kernel has after it is noted (fl_mask_resync tells a raw call's change
 * by it).
 */
static int sigmask_call(int how, const sigset_t *set, sigset_t *old, bool note)
{
	int saved_errno = errno, err = 0;
	uint64_t want = set ? bits_of(set) & ~GLIBC_INTERNAL : 0;
	sigset_t local, was;

	/* Bit operations: glibc's sigdelset refuses its internal signals. */
	if (set) {
		local = *set;
		set_bits(&local, want);
		set = &local;
	}
	if (!old)
		old = &was;
	if (syscall(SYS_rt_sigprocmask, how, set, old, KERNEL_SIGSET_BYTES) != 0) {
		err = errno;
	} else if (note) {
		uint64_t now = bits_of(old);

		if (set)
			now = how == SIG_SETMASK ? want : how == SIG_BLOCK ? now | want : now & ~want;
		fl_mask_kernel_note(now);
	}
	errno = saved_errno;
	return err;
}

static int kernel_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	return sigmask_call(how, set, old, true);
}

/*
 * The thread's mask as the application sees it: how, set and old as
 * pthread_sigmask's.  The signals of fl_mask_hidden() go to the virtual
 * set, the rest to the kernel.  Returns 0 or an errno value, as the kernel
 * gives it: EINVAL for a bad how (nothing changed), EFAULT for an old set
 * it cannot write (the mask is changed then, as the kernel does).
 */
static int app_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	uint64_t hide = fl_mask_hidden();
	uint64_t was = atomic_load_explicit(&fl_mask_virtual, memory_order_relaxed), now = was;
	sigset_t pass;
	int err;

	if (!hide)
		return kernel_sigmask(how, set, old);
	/*
	 * A child of vfork shares the parent thread's virtual set and noted
	 * mask, which it must not change: its masks are the kernel's.
	 */
	if (fl_chain_vforked())
		return sigmask_call(how, set, old, false);
	if (set) {
		uint64_t named = bits_of(set) & hide;

		switch (how) {
		case SIG_BLOCK:
			now = was | named;
			break;
		case SIG_UNBLOCK:
			now = was & ~named;
			break;
		case SIG_SETMASK:
			now = named;
			break;
		default:
			return EINVAL;
		}
		pass = *set;
		set_bits(&pass, bits_of(set) & ~hide);
		set = &pass;
	}
	err = kernel_sigmask(how, set, old);
	if (err && err != EFAULT)
		return err;
	atomic_store_explicit(&fl_mask_virtual, now, memory_order_relaxed);
	if (!err && old) {
		uint64_t bits = bits_of(old) | was;

		memcpy(old, &bits, sizeof(bits));
	}
	/* Held ones it unblocks are delivered before it returns, as the kernel does. */
	if (was & ~now)
		fl_mask_release();
	return err;
}

EXPORT int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	if (from_faultline(__builtin_return_address(0)))
		return kernel_sigmask(how, set, old);
	return app_sigmask(how, set, old);
}

int fl_preload_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	int err = app_sigmask(how, set, old);

	if (err) {
		errno = err;
		return -1;
	}
	return 0;
}

EXPORT int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	int err = from_faultline(__builtin_return_address(0)) ? kernel_sigmask(how, set, old)
							       : app_sigmask(how, set, old);

	if (err) {
		errno = err;
		return -1;
	}
	return 0;
}

/* The BSD calls: the old mask as an int, signals 1 to 32 (glibc's sigset_set_old_mask). */
static int bsd_mask(int how, int mask)
{
	sigset_t set = set_of_bits((unsigned int)mask), old;

	if (app_sigmask(how, &set, &old) != 0)
		return -1;
	return (int)(unsigned int)bits_of(&old);
}

EXPORT int sigblock(int mask)
{
	return bsd_mask(SIG_BLOCK, mask);
}

EXPORT int sigsetmask(int mask)
{
	return bsd_mask(SIG_SETMASK, mask);
}

EXPORT int siggetmask(void)
{
	return bsd_mask(SIG_BLOCK, 0);
}

/* System V: sighold, sigrelse. */
static int one_signal(int how, int sig)
{
	sigset_t set;
	int err;

	sigemptyset(&set);
	if (sigaddset(&set, sig) < 0)
		return -1;
	err = app_sigmask(how, &set, NULL);
	if (err) {
		errno = err;
		return -1;
	}
	return 0;
}

EXPORT int sighold(int sig)
{
	return one_signal(SIG_BLOCK, sig);
}

EXPORT int sigrelse(int sig)
{
	return one_signal(SIG_UNBLOCK, sig);
}

EXPORT int sigignore(int sig)
{
	struct sigaction act;

	memset(&act, 0, sizeof(act));
	act.sa_handler = SIG_IGN;
	sigemptyset(&act.sa_mask);
	return fl_sigaction(sig, &act, NULL);
}

/*
 * sigsuspend with the virtual set set to the mask's for the wait.  A held
 * signal the mask unblocks is raised first, and then there is no wait (its
 * handler ran).  The wait ends early, with EINTR, when one of the three
 * arrives that the mask blocks: faultline's handler ran, and holds it.
 */
static int app_sigsuspend(const sigset_t *mask)
{
	int (*suspend)(const sigset_t *) = REAL(int (*)(const sigset_t *), sigsuspend);
	uint64_t hide = fl_mask_hidden();
	uint64_t was = atomic_load_explicit(&fl_mask_virtual, memory_order_relaxed);
	sigset_t pass;
	int r;

	if (!hide)
		return suspend(mask);
	pass = *mask;
	set_bits(&pass, bits_of(mask) & ~hide);
	atomic_store_explicit(&fl_mask_virtual, bits_of(mask) & hide, memory_order_relaxed);
	if (fl_mask_release() > 0) {
		errno = EINTR;
		r = -1;
	} else {
		r = suspend(&pass);
	}
	atomic_store_explicit(&fl_mask_virtual, was, memory_order_relaxed);
	return r;
}

EXPORT int sigsuspend(const sigset_t *mask)
{
	return app_sigsuspend(mask);
}

EXPORT int __sigsuspend(const sigset_t *mask)
{
	return app_sigsuspend(mask);
}

/* glibc's __sigpause: the X/Open one (is_sig) unblocks sig, the BSD one sets a mask. */
EXPORT int __sigpause(int sig_or_mask, int is_sig)
{
	sigset_t set;

	if (is_sig) {
		app_sigmask(SIG_BLOCK, NULL, &set);
		if (sigdelset(&set, sig_or_mask) < 0)
			return -1;
	} else {
		set = set_of_bits((unsigned int)sig_or_mask);
	}
	return app_sigsuspend(&set);
}

/*
 * signal.h names the X/Open one sigpause (its asm name is __xpg_sigpause);
 * glibc's symbol sigpause is the BSD one.
 */
int bsd_sigpause(int mask) __asm__("sigpause");

EXPORT int bsd_sigpause(int mask)
{
	return __sigpause(mask, 0);
}

EXPORT int __xpg_sigpause(int sig)
{
	return __sigpause(sig, 1);
}

EXPORT int sigpending(sigset_t *set)
{
	uint64_t bits;

	if (syscall(SYS_rt_sigpending, set, KERNEL_SIGSET_BYTES) != 0)
		return -1;
	bits = bits_of(set) | fl_mask_held();
	memcpy(set, &bits, sizeof(bits));
	return 0;
}

/* ------------------------------------------------------------------------
 * Threads
 */

struct thread_start {
	void *(*fn)(void *);
	void *arg;
	uint64_t blocked;	/* its virtual set */
};

/*
 * A new thread of the program's, before its own start routine.  Under ASan
 * the start routine is ASan's (its pthread_create wraps this one), which
 * clears the shadow of the thread's stack: a reused stack can still hold
 * an earlier frame's redzones here, so nothing in this function is
 * instrumented and the mask moves by the bare system call.
 */
__attribute__((no_sanitize_address)) static void *thread_main(void *p)
{
	struct thread_start st = *(struct thread_start *)p;
	uint64_t hide = fl_mask_hidden(), cur, moved = 0;

	free(p);
	/* Its end is counted (threads.c). */
	fl_preload_thread_begins();
	/*
	 * Blocked in the kernel (by the attributes' mask, or SIGTRAP blocked
	 * before its action was faultline's): virtual from here on.
	 */
	if (hide && syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &cur, KERNEL_SIGSET_BYTES) == 0) {
		moved = cur & hide;
		if (moved &&
		    syscall(SYS_rt_sigprocmask, SIG_UNBLOCK, &moved, NULL, KERNEL_SIGSET_BYTES) != 0)
			moved = 0;
		fl_mask_kernel_note(cur & ~moved);
	}
	atomic_store_explicit(&fl_mask_virtual, st.blocked | moved, memory_order_relaxed);
	return st.fn(st.arg);
}

EXPORT int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *),
			  void *arg)
{
	int (*create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *) =
		REAL(int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *),
		     pthread_create);
	uint64_t hide = fl_mask_hidden();
	struct thread_start *st;
	sigset_t attr_mask;
	int err;

	/*
	 * faultline's own threads are not the program's (threads.c): called
	 * from faultline, or (when a sanitizer's pthread_create is between)
	 * starting in faultline's code.
	 */
	if (from_faultline(__builtin_return_address(0)) || from_faultline((const void *)fn))
		return create(t, attr, fn, arg);
	st = malloc(sizeof(*st));
	if (!st)
		return EAGAIN;
	st->fn = fn;
	st->arg = arg;
	st->blocked = atomic_load_explicit(&fl_mask_virtual, memory_order_relaxed);
	/* The attributes' mask is the new thread's, not its creator's. */
	if (attr && pthread_attr_getsigmask_np(attr, &attr_mask) == 0)
		st->blocked = bits_of(&attr_mask) & hide;
	fl_preload_thread_created();
	err = create(t, attr, thread_main, st);
	if (err) {
		free(st);
		fl_preload_thread_not_created();
	}
	return err;
}

/* ------------------------------------------------------------------------
 * Jumps out of a handler
 */

EXPORT void siglongjmp(sigjmp_buf env, int val)
{
	void (*jump)(sigjmp_buf, int) = REAL(void (*)(sigjmp_buf, int), siglongjmp);

	if (env[0].__mask_was_saved) {
		fl_mask_jump();
		/* The mask the jump restores, in the kernel. */
		fl_mask_kernel_note(bits_of(&env[0].__saved_mask));
	}
	jump(env, val);
	__builtin_unreachable();
}

/* glibc's longjmp and _longjmp are siglongjmp: they restore a saved mask too. */
EXPORT void longjmp(jmp_buf env, int val)
{
	siglongjmp(env, val);
}

EXPORT void _longjmp(jmp_buf env, int val)
{
	siglongjmp(env, val);
}

EXPORT void __longjmp_chk(sigjmp_buf env, int val)
{
	void (*jump)(sigjmp_buf, int) = REAL(void (*)(sigjmp_buf, int), __longjmp_chk);

	if (env[0].__mask_was_saved) {
		fl_mask_jump();
		/* The mask the jump restores, in the kernel. */
		fl_mask_kernel_note(bits_of(&env[0].__saved_mask));
	}
	jump(env, val);
	__builtin_unreachable();
}

/* ------------------------------------------------------------------------
 * Programs executed: they start with the mask the application believes it
 * has.  Returns the signals blocked in the kernel for the exec.
 */

static uint64_t exec_begin(void)
{
	uint64_t bits = atomic_load_explicit(&fl_mask_virtual, memory_order_relaxed) &
			fl_mask_hidden();
	sigset_t set;

	/* A child of vfork: its masks went to the kernel as they were (app_sigmask). */
	if (bits && fl_chain_vforked())
		return 0;
	set = set_of_bits(bits);

	if (bits)
		kernel_sigmask(SIG_BLOCK, &set, NULL);
	return bits;
}

/* The exec failed (or posix_spawn returned): unblocked in the kernel again. */
static void exec_end(uint64_t bits)
{
	sigset_t set = set_of_bits(bits);

	if (bits)
		kernel_sigmask(SIG_UNBLOCK, &set, NULL);
}

EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	uint64_t bits = exec_begin();
	int r = REAL(int (*)(const char *, char *const[], char *const[]), execve)(path, argv, envp);

	exec_end(bits);
	return r;
}

EXPORT int execv(const char *path, char *const argv[])
{
	return execve(path, argv, environ);
}

EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	uint64_t bits = exec_begin();
	int r = REAL(int (*)(const char *, char *const[], char *const[]), execvpe)(file, argv,
										   envp);

	exec_end(bits);
	return r;
}

EXPORT int execvp(const char *file, char *const argv[])
{
	uint64_t bits = exec_begin();
	int r = REAL(int (*)(const char *, char *const[]), execvp)(file, argv);

	exec_end(bits);
	return r;
}

EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	uint64_t bits = exec_begin();
	int r = REAL(int (*)(int, char *const[], char *const[]), fexecve)(fd, argv, envp);

	exec_end(bits);
	return r;
}

EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[],
		    int flags)
{
	uint64_t bits = exec_begin();
	int r = REAL(int (*)(int, const char *, char *const[], char *const[], int),
		     execveat)(dirfd, path, argv, envp, flags);

	exec_end(bits);
	return r;
}

/* execl, execle, execlp: how many arguments from arg on, the NULL not counted. */
static size_t count_args(va_list ap)
{
	va_list copy;
	size_t n = 1;

	va_copy(copy, ap);
	while (va_arg(copy, char *))
		n++;
	va_end(copy);
	return n;
}

enum exec_list { BY_PATH, BY_PATH_WITH_ENV, BY_SEARCH };

/*
 * execl, execle (BY_PATH_WITH_ENV: the environment after the NULL),
 * execlp (BY_SEARCH: execvp): the arguments gathered into an array on the
 * stack, as glibc does.
 */
static int exec_list(enum exec_list how, const char *file, const char *arg, va_list *ap)
{
	size_t n = count_args(*ap);
	char *argv[n + 1];
	char **envp = environ;

	argv[0] = (char *)arg;
	for (size_t i = 1; i <= n; i++)
		argv[i] = va_arg(*ap, char *);
	if (how == BY_PATH_WITH_ENV)
		envp = va_arg(*ap, char **);
	return how == BY_SEARCH ? execvp(file, argv) : execve(file, argv, envp);
}

EXPORT int execl(const char *path, const char *arg, ...)
{
	va_list ap;
	int r;

	va_start(ap, arg);
	r = exec_list(BY_PATH, path, arg, &ap);
	va_end(ap);
	return r;
}

EXPORT int execle(const char *path, const char *arg, ...)
{
	va_list ap;
	int r;

	va_start(ap, arg);
	r = exec_list(BY_PATH_WITH_ENV, path, arg, &ap);
	va_end(ap);
	return r;
}

EXPORT int execlp(const char *file, const char *arg, ...)
{
	va_list ap;
	int r;

	va_start(ap, arg);
	r = exec_list(BY_SEARCH, file, arg, &ap);
	va_end(ap);
	return r;
}

/*
 * posix_spawn: the child starts with the parent's kernel mask (glibc
 * blocks every signal around its clone and gives the child the mask from
 * before), or with the attributes' (POSIX_SPAWN_SETSIGMASK), which the
 * application filled in itself.
 */
typedef int spawn_fn(pid_t *, const char *, const posix_spawn_file_actions_t *,
		     const posix_spawnattr_t *, char *const[], char *const[]);

EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
		       const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	uint64_t bits = exec_begin();
	int r = REAL(spawn_fn *, posix_spawn)(pid, path, fa, attr, argv, envp);

	exec_end(bits);
	return r;
}

EXPORT int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
			const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	uint64_t bits = exec_begin();
	int r = REAL(spawn_fn *, posix_spawnp)(pid, file, fa, attr, argv, envp);

	exec_end(bits);
	return r;
}

/*
 * system(3) and popen(3): glibc spawns with its internal names, so the
 * spawn above is not seen; the virtual set is blocked in the kernel for
 * the call instead (system's whole call: the thread waits in it).
 */
EXPORT int system(const char *command)
{
	uint64_t bits = exec_begin();
	int r = REAL(int (*)(const char *), system)(command);

	exec_end(bits);
	return r;
}

EXPORT FILE *popen(const char *command, const char *type)
{
	uint64_t bits = exec_begin();
	FILE *f = REAL(FILE *(*)(const char *, const char *), popen)(command, type);

	exec_end(bits);
	return f;
}

/* ------------------------------------------------------------------------
 * Waiting for a signal: sigwait, sigwaitinfo, sigtimedwait.  One of the
 * three that was sent while the application blocked it is held by the
 * shim, not pending in the kernel: a wait for it takes it from there
 * first.  One sent while the thread waits for it is the kernel's to give
 * (the wait unblocks what it waits for).  One of the three that the
 * thread blocks but does not wait for runs faultline's handler, which
 * holds it and so ends the kernel's wait with EINTR, where without the
 * shim it would have stayed pending: the wait goes on then, with the
 * time that is left (the same when the handshake's signal ended it).
 */

/* The count of faultline's handlers run in this thread that end a wait. */
static uint64_t ours_run(void)
{
	struct fl_nap_seen seen = { 0 };

	fl_naps_of((int32_t)gettid(), &seen);
	return fl_mask_holds() + seen.stops;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

typedef int timedwait_fn(const sigset_t *, siginfo_t *, const struct timespec *);

/*
 * The caller's timeout is read only after the kernel took it: a bad one
 * gets the kernel's EINVAL or EFAULT, as without the shim.
 */
static int wait_signal(const sigset_t *set, siginfo_t *info, const struct timespec *timeout)
{
	uint64_t want = set ? bits_of(set) & fl_mask_hidden() : 0, start = now_ns();
	struct timespec left;
	const struct timespec *wait = timeout;

	for (;;) {
		uint64_t before = ours_run(), end, now;
		siginfo_t si;
		int sig = want ? fl_mask_take(want, &si) : 0, r;

		if (sig) {
			/* As glibc's sigtimedwait folds the code of a tkill. */
			if (si.si_code == SI_TKILL)
				si.si_code = SI_USER;
			if (info)
				*info = si;
			return sig;
		}
		r = REAL(timedwait_fn *, sigtimedwait)(set, info, wait);
		if (r >= 0 || errno != EINTR || ours_run() == before)
			return r;
		if (!timeout)
			continue;
		end = start + (uint64_t)timeout->tv_sec * 1000000000ull + (uint64_t)timeout->tv_nsec;
		now = now_ns();
		if (now >= end) {
			errno = EAGAIN;
			return -1;
		}
		left.tv_sec = (time_t)((end - now) / 1000000000ull);
		left.tv_nsec = (long)((end - now) % 1000000000ull);
		wait = &left;
	}
}

EXPORT int sigtimedwait(const sigset_t *set, siginfo_t *info, const struct timespec *timeout)
{
	return wait_signal(set, info, timeout);
}

EXPORT int sigwaitinfo(const sigset_t *set, siginfo_t *info)
{
	return wait_signal(set, info, NULL);
}

/* As glibc's: sigwaitinfo until a signal comes; an errno value, not -1. */
EXPORT int sigwait(const sigset_t *set, int *sig)
{
	int saved_errno = errno, r;

	do
		r = wait_signal(set, NULL, NULL);
	while (r < 0 && errno == EINTR);
	if (r < 0) {
		r = errno;
		errno = saved_errno;
		return r;
	}
	*sig = r;
	errno = saved_errno;
	return 0;
}

/* ------------------------------------------------------------------------ */

void fl_preload_mask_prepare(void)
{
	dl_iterate_phdr(find_text, (void *)(uintptr_t)fl_preload_mask_prepare);
}

void fl_preload_mask_start(void)
{
	static const char *const names[] = {
		"sigsuspend", "pthread_create", "siglongjmp", "__longjmp_chk", "execve",
		"execvp", "execvpe", "fexecve", "execveat", "posix_spawn", "posix_spawnp",
		"system", "popen", "sigtimedwait",
	};
	void *volatile *const slots[] = {
		&real_sigsuspend, &real_pthread_create, &real_siglongjmp, &real___longjmp_chk,
		&real_execve, &real_execvp, &real_execvpe, &real_fexecve, &real_execveat,
		&real_posix_spawn, &real_posix_spawnp, &real_system, &real_popen,
		&real_sigtimedwait,
	};
	uint64_t hide, bits;
	sigset_t cur, move;

	/* Looked up now: siglongjmp and sigsuspend may be called by a handler. */
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		real(slots[i], names[i]);
	fl_mask_enable();
	fl_chain_owner();
	pthread_atfork(NULL, NULL, fl_mask_fork_child);
	hide = fl_mask_hidden();
	/* Blocked by the parent: the main thread's virtual set from now on. */
	if (!hide || kernel_sigmask(SIG_BLOCK, NULL, &cur) != 0)
		return;
	bits = bits_of(&cur) & hide;
	if (!bits)
		return;
	move = set_of_bits(bits);
	atomic_store_explicit(&fl_mask_virtual, bits, memory_order_relaxed);
	kernel_sigmask(SIG_UNBLOCK, &move, NULL);
}
