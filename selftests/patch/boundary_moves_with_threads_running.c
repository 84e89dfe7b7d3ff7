// SPDX-License-Identifier: MIT
/*
 * Changes that move instruction boundaries go through the thread handshake
 * (lib/patch/patch.c, H1-H3): every other thread is stopped and proven
 * outside the change, by its PC and by the return addresses on its stack.
 *   1. While 4 threads call it, a 6-byte region is rewritten between
 *        mov $1,%eax; nop                   (boundaries +0, +5)
 *        xor %eax,%eax; add $2,%al; nop; nop (boundaries +0, +2, +4, +5)
 *      argv[1] times (default 2,000): every call returns 1 or 2.
 *   2. A thread that spins inside a region (at a boundary other than its
 *      first byte): refused, -EBUSY naming the thread; once it has left,
 *      the same change goes.
 *   3. A thread in a function called from inside a region (its return
 *      address is inside): refused, -EBUSY; once it has returned, it goes.
 *   4. A thread with the handshake's signal (SIGRTMAX - 1, the default)
 *      blocked cannot be stopped: refused, -EBUSY.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "common.h"

#define THREADS 4

static const uint8_t va[6] = { 0xb8, 0x01, 0x00, 0x00, 0x00, 0x90 };
static const uint8_t vb[6] = { 0x31, 0xc0, 0x04, 0x02, 0x90, 0x90 };

static int (*fn)(void);
static _Atomic int stop, go_on, in_place;
static _Atomic uint64_t calls, wrong;

static void *caller(void *arg)
{
	uint64_t n = 0;

	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		int v = fn();

		n++;
		if (v != 1 && v != 2 && atomic_fetch_add(&wrong, 1) < 5)
			fprintf(stderr, "%s: a call returned 0x%x\n", t_name, v);
	}
	atomic_fetch_add(&calls, n);
	return NULL;
}

static void rewrites(long count)
{
	uint8_t code[16] = { 0xb8, 0x00, 0x01, 0x00, 0x00 };	/* mov $0x100,%eax */
	pthread_t th[THREADS];
	uint8_t *page;
	bool is_a = true;

	memcpy(code + 5, va, 6);
	code[11] = 0xc3;
	page = t_code(code, 12);
	fn = (int (*)(void))(void *)page;
	for (int i = 0; i < THREADS; i++)
		t_check(pthread_create(&th[i], NULL, caller, NULL) == 0, "pthread_create");
	for (long r = 0; r < count; r++) {
		struct fl_patch p = { .addr = page + 5, .old_bytes = is_a ? va : vb,
				      .new_bytes = is_a ? vb : va, .len = 6 };
		struct fl_diag d = { 0 };
		int err = fl_patch_text(&p, 1, &d);

		if (err) {
			atomic_store(&stop, 1);
			t_fail("rewrite %ld: %d %s", r, err, d.msg);
		}
		is_a = !is_a;
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	printf("  1. %ld rewrites, %llu calls, wrong %llu\n", count,
	       (unsigned long long)calls, (unsigned long long)wrong);
	t_check(wrong == 0, "%llu calls returned a mix of versions", (unsigned long long)wrong);
}

/* Runs code(arg) in a thread; the thread says when it is in place. */
struct runner {
	pthread_t th;
	void (*code)(void *);
	void *arg;
	bool block_trap;
};

static void *run(void *arg)
{
	struct runner *r = arg;

	if (r->block_trap) {
		sigset_t s;

		sigemptyset(&s);
		sigaddset(&s, SIGRTMAX - 1);
		pthread_sigmask(SIG_BLOCK, &s, NULL);
		atomic_store(&in_place, 1);
		while (!atomic_load(&go_on))
			;
		return NULL;
	}
	r->code(r->arg);
	return NULL;
}

static void wait_flag(void)
{
	atomic_store(&in_place, 1);
	while (!atomic_load(&go_on))
		;
}

static void refused_then_done(uint8_t *region, const uint8_t *old, const uint8_t *new, size_t len,
			      struct runner *r, const char *what, const char *reason)
{
	struct fl_patch p = { .addr = region, .old_bytes = old, .new_bytes = new, .len = len };
	struct fl_diag d = { 0 };
	int err;

	atomic_store(&go_on, 0);
	atomic_store(&in_place, 0);
	t_check(pthread_create(&r->th, NULL, run, r) == 0, "pthread_create");
	while (!atomic_load(&in_place))
		;
	err = fl_patch_text(&p, 1, &d);
	printf("  %s: %d: %s\n", what, err, d.msg);
	t_check(err == -EBUSY, "%s: %d, not -EBUSY", what, err);
	t_check(strstr(d.msg, reason) != NULL, "%s: the reason does not say \"%s\"", what, reason);
	t_check(memcmp(region, old, len) == 0, "%s: a refused change changed the code", what);
	atomic_store(&go_on, 1);
	pthread_join(r->th, NULL);
	err = fl_patch_text(&p, 1, &d);
	t_check(err == 0, "%s, after the thread left: %d %s", what, err, d.msg);
	t_check(memcmp(region, new, len) == 0, "%s: not written", what);
}

static void spin_code(void *arg)
{
	((void (*)(void))arg)();
}

static void call_code(void *arg)
{
	((void (*)(void (*)(void)))arg)(wait_flag);
}

int main(int argc, char **argv)
{
	/*
	 * 2: movabs $&go_on,%rax; movabs $&in_place,%rdx; then the region
	 *   +20: nop; 1: movl $1,(%rdx); cmpl $0,(%rax); je 1b   and then   ret
	 * The thread says it is in place only from inside the region, where
	 * it spins (+21 to +30) until go_on.
	 */
	uint8_t spin[48] = { 0x48, 0xb8 };
	static const uint8_t spin_region[12] = { 0x90, 0xc7, 0x02, 0x01, 0x00, 0x00, 0x00,
						 0x83, 0x38, 0x00, 0x74, 0xf5 };
	static const uint8_t spin_new[12] = { 0xb8, 0x07, 0x00, 0x00, 0x00, 0x90,
					      0x90, 0x90, 0x90, 0x90, 0x90, 0x90 };
	/*
	 * 3: push %rbx; mov %rdi,%rbx; [+4: call *%rbx; nop; nop; nop]; pop %rbx; ret
	 * the return address +6 is inside [+4, +9).
	 */
	static const uint8_t callr[11] = { 0x53, 0x48, 0x89, 0xfb, 0xff, 0xd3, 0x90, 0x90, 0x90,
					   0x5b, 0xc3 };
	static const uint8_t call_new[5] = { 0x90, 0x90, 0x90, 0x90, 0x90 };
	struct runner r = { 0 };
	uint8_t *page;
	uintptr_t flag = (uintptr_t)&go_on;

	t_start(argv);
	t_init();
	t_enable();
	rewrites(argc > 1 ? atol(argv[1]) : 2000);

	memcpy(spin + 2, &flag, 8);
	spin[10] = 0x48;
	spin[11] = 0xba;
	flag = (uintptr_t)&in_place;
	memcpy(spin + 12, &flag, 8);
	memcpy(spin + 20, spin_region, 12);
	spin[32] = 0xc3;
	page = t_code(spin, 33);
	r = (struct runner){ .code = spin_code, .arg = page };
	refused_then_done(page + 20, spin_region, spin_new, 12, &r, "2. a thread inside",
			  "inside change 0");

	page = t_code(callr, sizeof(callr));
	r = (struct runner){ .code = call_code, .arg = page };
	refused_then_done(page + 4, callr + 4, call_new, 5, &r, "3. a return address inside",
			  "would return inside change 0");

	page = t_code(va, 6);
	r = (struct runner){ .block_trap = true };
	refused_then_done(page, va, vb, 6, &r, "4. a thread with the handshake's signal blocked",
			  "cannot be stopped");
	printf("PASS %s\n", t_name);
	return 0;
}
