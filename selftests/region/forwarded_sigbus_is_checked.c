// SPDX-License-Identifier: MIT
/*
 * Helper-thread mode forwards a fault past the limit as a SIGBUS with
 * si_code SI_QUEUE (struct fl_region_forward, lib/dispatch/dispatch.h):
 * the helper cannot send another thread a kernel-looking si_code, which
 * this test shows first.  Then, with forwards this thread sends itself:
 *  - a wrong cookie: not faultline's; it reaches the application's
 *    handler untouched (SI_QUEUE, payload intact);
 *  - the right cookie, but a PC and SP that are not where the signal
 *    lands: a stale forward; nothing happens;
 *  - the right cookie, PC 0 (unknown): accepted; the application's
 *    handler gets what the kernel would send: BUS_ADRERR at the address,
 *    the rest zero, si_errno too (it carried the write bit to faultline);
 *  - the right cookie for an address below the limit (the limit was
 *    raised after the helper forwarded): the page is populated and
 *    nothing reaches the application.
 */
#include <pthread.h>
#include <sys/syscall.h>

#include "common.h"
#include "dispatch/dispatch.h"

static pid_t main_tid;
static long other_ret;
static int other_errno;

static long send(pid_t tid, const struct fl_region_forward *f)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	memcpy(&si, f, sizeof(*f));
	return syscall(SYS_rt_tgsigqueueinfo, getpid(), tid, SIGBUS, &si);
}

static void *other_thread(void *arg)
{
	struct fl_region_forward f = {
		.signo = SIGBUS, .code = BUS_ADRERR, .addr = (uint64_t)(uintptr_t)arg,
	};

	other_ret = send(main_tid, &f);
	other_errno = errno;
	return NULL;
}

int main(int argc, char **argv)
{
	struct fl_stats st0 = { .sz = sizeof(st0) }, st1 = { .sz = sizeof(st1) };
	struct fl_region *r;
	struct fl_region_forward f;
	volatile uint8_t *base;
	uint64_t past, below;
	pthread_t t;
	volatile int caught;
	static const uint8_t zero[24];

	t_start(argc, argv);
	t_init();
	r = t_region(16 * t_page, 4 * t_page, NULL, FL_REGION_HELPER_THREAD);
	base = fl_region_base(r);
	past = (uint64_t)(uintptr_t)(base + 9 * t_page + 5);
	below = (uint64_t)(uintptr_t)(base + 2 * t_page);
	main_tid = (pid_t)syscall(SYS_gettid);
	t_catch_sigbus();

	/* The kernel's rule the protocol rests on. */
	pthread_create(&t, NULL, other_thread, (void *)(uintptr_t)past);
	pthread_join(t, NULL);
	t_check(other_ret == -1 && other_errno == EPERM,
		"another thread sent si_code BUS_ADRERR: %ld (%s); the helper could too",
		other_ret, strerror(other_errno));

	f = (struct fl_region_forward){
		.signo = SIGBUS, .code = SI_QUEUE, .write = 1, .addr = past,
		.pc = 0, .sp = 0, .cookie = r->forward_cookie ^ 1,
	};
	T_TRY(caught, send(main_tid, &f));
	t_check(caught, "a forward with a wrong cookie did not reach the application");
	t_check(t_caught.si_code == SI_QUEUE && memcmp(&t_caught, &f, sizeof(f)) == 0,
		"a forward with a wrong cookie was changed (si_code %d)", t_caught.si_code);

	t_check(fl_stats_get(&st0) == 0, "fl_stats_get");
	f.cookie = r->forward_cookie;
	f.pc = 0x1000;
	f.sp = 0x2000;
	T_TRY(caught, send(main_tid, &f));
	t_check(!caught, "a stale forward reached the application");
	t_check(fl_stats_get(&st1) == 0, "fl_stats_get");
	t_check(st1.chained == st0.chained && st1.claimed == st0.claimed,
		"a stale forward was chained or claimed");

	f.pc = f.sp = 0;
	T_TRY(caught, send(main_tid, &f));
	t_check(caught, "an accepted forward at an unregistered PC was not chained");
	t_check(t_caught.si_signo == SIGBUS && t_caught.si_code == BUS_ADRERR &&
		t_caught.si_addr == (void *)(uintptr_t)past && t_caught.si_errno == 0,
		"the application got code %d addr %p errno %d", t_caught.si_code,
		t_caught.si_addr, t_caught.si_errno);
	t_check(memcmp((char *)&t_caught + offsetof(struct fl_region_forward, pc), zero, 24) == 0,
		"the forward's PC, SP or cookie reached the application");

	t_check(fl_stats_get(&st0) == 0, "fl_stats_get");
	f.addr = below;
	T_TRY(caught, send(main_tid, &f));
	t_check(!caught, "a forward below the limit reached the application");
	t_check(fl_stats_get(&st1) == 0, "fl_stats_get");
	t_check(st1.populated == st0.populated + 1, "a forward below the limit populated %llu",
		(unsigned long long)(st1.populated - st0.populated));

	fl_region_destroy(r);
	printf("PASS %s\n", t_name);
	return 0;
}
