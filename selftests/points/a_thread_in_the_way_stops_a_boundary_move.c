// SPDX-License-Identifier: MIT
/*
 * The thread handshake of a patch point write that moves instruction
 * boundaries: a thread in the way makes it fail with -EBUSY, saying why,
 * and changes nothing; once the thread has left, the same write goes.  A
 * write that keeps the boundaries (one instruction differs) needs no
 * handshake and goes while the thread is there.
 *   1. A thread parked in pt_park, called from patch point 20 (16 bytes:
 *      movabsq $pt_park, %r11; callq *%r11; nops): its return address is
 *      at +13, inside the region.
 *        movabsq $pt_other (same boundaries)   goes; the thread returns
 *                                              from pt_park into it
 *        mov $7, %eax (boundaries move)        -EBUSY, "would return
 *                                              inside", until it returns
 *   2. A thread spinning inside patch point 21 (48 bytes), in a loop the
 *      test wrote there:
 *        +0  movabs $&in_place, %rdx; movl $1, (%rdx)
 *        +16 movabs $&go_on, %rax
 *        +26 1: cmpl $0, (%rax); je 1b
 *        +31 mov $8, %eax
 *        mov $10 at +31 (same boundaries)      goes; the thread leaves
 *                                              through it: returns 10
 *        mov $9, %eax (boundaries move)        -EBUSY, "inside", until it
 *                                              has left
 */
#include <pthread.h>
#include <stdatomic.h>

#include "common.h"

int64_t pt_park(void);
int64_t pt_other(void);
int64_t pp_park(void);
int64_t pp_spin(void);

static _Atomic int in_place, go_on;

int64_t pt_park(void)
{
	atomic_store(&in_place, 1);
	while (!atomic_load(&go_on))
		;
	return 1;
}

int64_t pt_other(void)
{
	return 2;
}

static void *call_it(void *fn)
{
	return (void *)(intptr_t)((int64_t (*)(void))fn)();
}

static pthread_t start(int64_t (*fn)(void))
{
	pthread_t th;

	atomic_store(&in_place, 0);
	atomic_store(&go_on, 0);
	t_check(pthread_create(&th, NULL, call_it, (void *)fn) == 0, "pthread_create");
	while (!atomic_load(&in_place))
		;
	return th;
}

static int64_t finish(pthread_t th)
{
	void *ret;

	atomic_store(&go_on, 1);
	pthread_join(th, &ret);
	return (int64_t)(intptr_t)ret;
}

static void write_ok(uint64_t id, const void *bytes, size_t len, const char *what)
{
	struct fl_diag d = { 0 };
	struct fl_point pt;
	int err = fl_patchpoint_write(id, NULL, bytes, len, NULL, &d);

	printf("  %s: %d %s\n", what, err, d.msg);
	t_check(err == 0, "%s: %d %s", what, err, d.msg);
	t_read_point(id, NULL, &pt);
	t_check(memcmp((const void *)(uintptr_t)pt.pc, bytes, len) == 0,
		"%s: the region does not hold the bytes", what);
}

static void write_busy(uint64_t id, const void *bytes, size_t len, const char *what,
		       const char *reason)
{
	struct fl_point before, after;
	struct fl_diag d = { 0 };
	int err;

	t_read_point(id, NULL, &before);
	err = fl_patchpoint_write(id, NULL, bytes, len, NULL, &d);
	printf("  %s: %d %s\n", what, err, d.msg);
	t_check(err == -EBUSY, "%s: %d (%s), not -EBUSY", what, err, d.msg);
	t_check(d.err == -EBUSY, "%s: the diagnostic's error is %d", what, d.err);
	t_check(strstr(d.msg, reason) != NULL, "%s: the reason (\"%s\") does not say \"%s\"", what,
		d.msg, reason);
	t_read_point(id, NULL, &after);
	t_check(memcmp(before.now, after.now, before.size) == 0 &&
		memcmp((const void *)(uintptr_t)after.pc, before.now, before.size) == 0 &&
		before.flags == after.flags, "%s: a refused write changed the region", what);
}

int main(int argc, char **argv)
{
	uint8_t other[T_CALL_R11_LEN], mov7[5], mov9[5], mov10[5], spin[36];
	uintptr_t flag;
	struct fl_point pt;
	pthread_t th;
	int64_t v;

	(void)argc;
	t_start(argv);
	t_init_discovering();
	t_enable();
	t_call_r11(other, (const void *)pt_other);
	t_mov_eax(mov7, 7);
	t_mov_eax(mov9, 9);
	t_mov_eax(mov10, 10);

	printf(" 1. a return address inside the region\n");
	t_read_point(20, NULL, &pt);
	t_check(pt.size == 16, "patch point 20: %u bytes, not 16", pt.size);
	th = start(pp_park);
	write_ok(20, other, sizeof(other), "movabsq $pt_other (same boundaries), a thread parked");
	write_busy(20, mov7, 5, "mov $7 (boundaries move), a thread parked", "would return inside");
	v = finish(th);
	t_check(v == 1, "the parked thread's call returned %lld, not pt_park's 1", (long long)v);
	t_check(pp_park() == 2, "pt_other's call does not return 2");
	write_ok(20, mov7, 5, "mov $7, the thread gone");
	t_check(pp_park() == 7, "mov $7 does not return 7");

	printf(" 2. a thread spinning inside the region\n");
	spin[0] = 0x48;
	spin[1] = 0xba;
	flag = (uintptr_t)&in_place;
	memcpy(spin + 2, &flag, 8);
	memcpy(spin + 10, (const uint8_t[]){ 0xc7, 0x02, 0x01, 0x00, 0x00, 0x00 }, 6);
	spin[16] = 0x48;
	spin[17] = 0xb8;
	flag = (uintptr_t)&go_on;
	memcpy(spin + 18, &flag, 8);
	memcpy(spin + 26, (const uint8_t[]){ 0x83, 0x38, 0x00, 0x74, 0xfb }, 5);
	t_mov_eax(spin + 31, 8);
	write_ok(21, spin, 36, "the loop, no thread inside");
	atomic_store(&go_on, 1);
	t_check(pp_spin() == 8, "the loop does not return 8");
	th = start(pp_spin);
	memcpy(spin + 31, mov10, 5);
	write_ok(21, spin, 36, "mov $10 at +31 (same boundaries), a thread spinning");
	write_busy(21, mov9, 5, "mov $9 (boundaries move), a thread spinning", "inside");
	v = finish(th);
	t_check(v == 10, "the spinning thread's call returned %lld, not 10", (long long)v);
	write_ok(21, mov9, 5, "mov $9, the thread gone");
	t_check(pp_spin() == 9, "mov $9 does not return 9");
	printf("PASS %s\n", t_name);
	return 0;
}
