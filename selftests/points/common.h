/* SPDX-License-Identifier: MIT */
/*
 * The tests of patch points and stack map shadows (selftests/points/): one
 * program per property, each exiting 0 (pass) or 1 (fail, with the
 * reason); run.sh runs them.
 *
 * The code they rewrite is LLVM IR compiled by llc-14 (the .ll of the same
 * name, static relocation model, linked -no-pie), so faultline finds its
 * records the way it finds any loaded module's: by discovery at fl_init.
 * The JIT test compiles its IR with MCJIT instead (selftests/jit/mcjit.c).
 */
#ifndef FL_TEST_POINTS_COMMON_H
#define FL_TEST_POINTS_COMMON_H

#include <sched.h>
#include <stdbool.h>

#include <faultline/points.h>

/* t_start, t_enable, t_prot: the patcher's tests' helpers. */
#include "../patch/common.h"

/* fl_init with discovery: the test program's own records must be found. */
static inline void t_init_discovering(void)
{
	FL_OPTS(fl_init_opts, o, .flags = FL_INIT_NO_AGENT);
	int err = fl_init(&o);

	t_check(err == 0, "fl_init: %s", strerror(-err));
}

/* fl_patchpoint_read or fl_stackmap_read of a record; fails the test if none. */
static inline void t_read(int (*read)(uint64_t, const void *, struct fl_point *, struct fl_diag *),
			  const char *what, uint64_t id, const void *pc, struct fl_point *out)
{
	struct fl_diag d = { 0 };
	int err;

	memset(out, 0, sizeof(*out));
	out->sz = sizeof(*out);
	err = read(id, pc, out, &d);
	t_check(err == 0, "%s(%llu, %p): %d %s", what, (unsigned long long)id, pc, err, d.msg);
}

/* The patch point with this id (pc NULL) or at pc. */
#define t_read_point(id, pc, out) t_read(fl_patchpoint_read, "fl_patchpoint_read", id, pc, out)
/* The stack map record with this id (pc NULL) or at pc. */
#define t_read_shadow(id, pc, out) t_read(fl_stackmap_read, "fl_stackmap_read", id, pc, out)

/*
 * fl_patchpoint_write by ID while threads call the code.  A write that
 * moves instruction boundaries (moving) is tried again on -EBUSY: a caller
 * may be in its way through all of one call's tries (its return address
 * inside the region, while it runs the callee).  *busy counts those
 * refusals.  Returns the last call's result.
 */
#define T_BUSY_TRIES 50
static inline int t_write_under_load(uint64_t id, const void *bytes, size_t len, bool moving,
				     long *busy, struct fl_diag *d)
{
	int err = 0;

	for (int t = 0; t < T_BUSY_TRIES; t++) {
		err = fl_patchpoint_write(id, NULL, bytes, len, NULL, d);
		if (err != -EBUSY || !moving)
			break;
		(*busy)++;
		sched_yield();
	}
	return err;
}

/*
 * movabsq $target, %r11; callq *%r11: what llc-14 puts at the start of a
 * patch point with a call target, and what faultline writes at a stack map
 * record for a target out of reach of a callq rel32.  13 bytes.
 */
#define T_CALL_R11_LEN 13
static inline void t_call_r11(uint8_t out[T_CALL_R11_LEN], const void *target)
{
	uintptr_t t = (uintptr_t)target;

	out[0] = 0x49;
	out[1] = 0xbb;
	memcpy(out + 2, &t, 8);
	out[10] = 0x41;
	out[11] = 0xff;
	out[12] = 0xd3;
}

/* mov $imm, %eax: 5 bytes. */
static inline void t_mov_eax(uint8_t out[5], uint32_t imm)
{
	out[0] = 0xb8;
	memcpy(out + 1, &imm, 4);
}

#endif /* FL_TEST_POINTS_COMMON_H */
