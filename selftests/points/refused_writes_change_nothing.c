// SPDX-License-Identifier: MIT
/*
 * What fl_patchpoint_read reports, what the patch point calls refuse, and
 * that a refused call changes nothing (the code, the page's protection,
 * what fl_patchpoint_read says):
 *   read: derived extents are numBytes for the nops-only form (5, 16, 32,
 *         64) and the movabsq+callq form (13, 16, 32); flags, now, compiled
 *         before and after a write and after fl_patchpoint_reset;
 *   -ENOSPC  bytes longer than the region;
 *   -ESTALE  expect that is not the region's bytes (and with the right
 *            expect the write goes);
 *   -ENOENT  an unknown ID, an address that is no record;
 *   -ENOTUNIQ an ID two records have, then each by its address goes;
 *   -E2BIG   a declared size over FL_POINT_MAX_SIZE;
 *   -EEXIST  a declared size that differs from an earlier declaration
 *            (the same size again is accepted);
 *   fl_patchpoint_reset restores the compiled bytes, and the code runs as
 *   compiled.
 * Each patch point is function + 4 (push %rbp; mov %rsp, %rbp: a patch
 * point makes llc-14 keep the frame pointer).
 */
#include <stdbool.h>

#include "common.h"

int64_t pt_one(void);
int64_t pp_nops5(void), pp_nops16(void), pp_nops32(void), pp_nops64(void);
int64_t pp_call13(void), pp_call16(void), pp_call32(void);
int64_t pp_twin_a(void), pp_twin_b(void), pp_declared(void);

int64_t pt_one(void)
{
	return 1;
}

#define PC_OF(fn) ((const uint8_t *)(uintptr_t)(fn) + 4)

static const struct {
	uint64_t id;
	int64_t (*fn)(void);
	uint32_t size;
	int call;
} derived[] = {
	{ 30, pp_nops5, 5, 0 },    { 31, pp_nops16, 16, 0 },  { 32, pp_nops32, 32, 0 },
	{ 33, pp_nops64, 64, 0 },  { 34, pp_call13, 13, 1 },  { 35, pp_call16, 16, 1 },
	{ 36, pp_call32, 32, 1 },
};
#define NDERIVED (sizeof(derived) / sizeof(derived[0]))

/* Every region as it was before a refused call: compared after it. */
static struct fl_point snap[NDERIVED];

static void snapshot(void)
{
	for (size_t i = 0; i < NDERIVED; i++)
		t_read_point(derived[i].id, NULL, &snap[i]);
}

static void unchanged(const char *what)
{
	struct fl_point pt;
	char prot[5];

	for (size_t i = 0; i < NDERIVED; i++) {
		t_read_point(derived[i].id, NULL, &pt);
		t_check(pt.size == snap[i].size && pt.flags == snap[i].flags &&
			memcmp(pt.now, snap[i].now, pt.size) == 0 &&
			memcmp(PC_OF(derived[i].fn), snap[i].now, pt.size) == 0,
			"%s: patch point %llu changed", what, (unsigned long long)derived[i].id);
	}
	t_prot(PC_OF(derived[0].fn), prot);
	t_check(strcmp(prot, "r-xp") == 0, "%s: the code's page is %s", what, prot);
}

static void expect(int err, int want, const struct fl_diag *d, const char *what)
{
	printf("  %s: %d %s\n", what, err, d->msg);
	t_check(err == want, "%s: %d (%s), expected %d", what, err, d->msg, want);
	if (want) {
		t_check(d->err == want && d->msg[0], "%s: no diagnostic", what);
		unchanged(what);
	} else {
		snapshot();
	}
}

/*
 * Whether n bytes at p are nops, whole: 0x90, or 0f 1f /0 with its ModRM,
 * SIB and displacement, after 66 and 2e prefixes (the forms llc-14 and
 * assemblers pad with).
 */
static bool all_nops(const uint8_t *p, size_t n)
{
	size_t i = 0;

	while (i < n) {
		size_t len;
		uint8_t m, mod, rm;

		while (i < n && (p[i] == 0x66 || p[i] == 0x2e))
			i++;
		if (i < n && p[i] == 0x90) {
			i++;
			continue;
		}
		if (i + 2 >= n || p[i] != 0x0f || p[i + 1] != 0x1f || ((p[i + 2] >> 3) & 7) != 0)
			return false;
		m = p[i + 2];
		mod = m >> 6;
		rm = m & 7;
		len = 3 + (mod != 3 && rm == 4) + (mod == 1 ? 1 : mod == 2 || (mod == 0 && rm == 5) ? 4 : 0);
		i += len;
	}
	return i == n;
}

int main(int argc, char **argv)
{
	uint8_t call[T_CALL_R11_LEN], mov5[5], big[FL_POINT_MAX_SIZE + 1], stale[16];
	struct fl_diag d = { 0 };
	struct fl_point pt, a, b;
	int err;

	(void)argc;
	t_start(argv);
	t_init_discovering();
	t_enable();
	t_call_r11(call, (const void *)pt_one);
	t_mov_eax(mov5, 5);
	memset(big, 0x90, sizeof(big));

	printf(" derived extents\n");
	for (size_t i = 0; i < NDERIVED; i++) {
		t_read_point(derived[i].id, NULL, &pt);
		printf("  patch point %llu at %#llx: %u bytes, flags %#x\n",
		       (unsigned long long)pt.id, (unsigned long long)pt.pc, pt.size, pt.flags);
		t_check(pt.id == derived[i].id, "patch point %llu: read says id %llu",
			(unsigned long long)derived[i].id, (unsigned long long)pt.id);
		t_check(pt.pc == (uintptr_t)PC_OF(derived[i].fn), "patch point %llu: pc %#llx, not %p",
			(unsigned long long)derived[i].id, (unsigned long long)pt.pc,
			(const void *)PC_OF(derived[i].fn));
		t_check(pt.size == derived[i].size, "patch point %llu: derived %u bytes, compiled with %u",
			(unsigned long long)derived[i].id, pt.size, derived[i].size);
		t_check(pt.flags == 0, "patch point %llu: flags %#x before any change",
			(unsigned long long)derived[i].id, pt.flags);
		t_check(memcmp(pt.now, PC_OF(derived[i].fn), pt.size) == 0 &&
			memcmp(pt.compiled, pt.now, pt.size) == 0,
			"patch point %llu: now or compiled are not the code's bytes",
			(unsigned long long)derived[i].id);
		if (derived[i].call)
			t_check(memcmp(pt.now, call, sizeof(call)) == 0 &&
				all_nops(pt.now + sizeof(call), pt.size - sizeof(call)),
				"patch point %llu: not movabsq $pt_one, %%r11; callq *%%r11; nops",
				(unsigned long long)derived[i].id);
		else
			t_check(all_nops(pt.now, pt.size), "patch point %llu: not nops",
				(unsigned long long)derived[i].id);
	}
	memset(&pt, 0, sizeof(pt));
	pt.sz = sizeof(pt);

	printf(" refusals\n");
	snapshot();
	err = fl_patchpoint_write(31, NULL, big, 17, NULL, &d);
	expect(err, -ENOSPC, &d, "17 bytes into 16");
	err = fl_patchpoint_write(34, NULL, big, 14, NULL, &d);
	expect(err, -ENOSPC, &d, "14 bytes into the 13 of movabsq+callq");
	memset(stale, 0x90, sizeof(stale));
	stale[15] = 0xcc;
	err = fl_patchpoint_write(31, NULL, mov5, 5, stale, &d);
	expect(err, -ESTALE, &d, "a stale expect");
	err = fl_patchpoint_write(35, NULL, mov5, 5, snap[4].now, &d);
	expect(err, -ESTALE, &d, "another region's bytes as expect");
	err = fl_patchpoint_write(999, NULL, mov5, 5, NULL, &d);
	expect(err, -ENOENT, &d, "write: an unknown ID");
	err = fl_patchpoint_read(999, NULL, &pt, &d);
	expect(err, -ENOENT, &d, "read: an unknown ID");
	err = fl_patchpoint_reset(999, NULL, &d);
	expect(err, -ENOENT, &d, "reset: an unknown ID");
	err = fl_patchpoint_declare(999, NULL, 16, &d);
	expect(err, -ENOENT, &d, "declare: an unknown ID");
	err = fl_patchpoint_write(0, (const void *)pt_one, mov5, 5, NULL, &d);
	expect(err, -ENOENT, &d, "write: an address that is no record");
	err = fl_patchpoint_write(0, PC_OF(pp_nops16) + 1, mov5, 5, NULL, &d);
	expect(err, -ENOENT, &d, "write: inside a region, not its first byte");

	err = fl_patchpoint_write(37, NULL, mov5, 5, NULL, &d);
	expect(err, -ENOTUNIQ, &d, "write: an ID two records have");
	err = fl_patchpoint_read(37, NULL, &pt, &d);
	expect(err, -ENOTUNIQ, &d, "read: an ID two records have");
	err = fl_patchpoint_reset(37, NULL, &d);
	expect(err, -ENOTUNIQ, &d, "reset: an ID two records have");
	t_read_point(0, PC_OF(pp_twin_a), &a);
	t_read_point(12345, PC_OF(pp_twin_b), &b);
	t_check(a.id == 37 && b.id == 37 && a.pc == (uintptr_t)PC_OF(pp_twin_a) &&
		b.pc == (uintptr_t)PC_OF(pp_twin_b) && a.size == 8 && b.size == 8,
		"the twins by address: id %llu/%llu, %u/%u bytes", (unsigned long long)a.id,
		(unsigned long long)b.id, a.size, b.size);
	err = fl_patchpoint_write(37, PC_OF(pp_twin_b), mov5, 5, NULL, &d);
	expect(err, 0, &d, "write: the second twin by address");
	t_check(pp_twin_b() == 5 && memcmp(PC_OF(pp_twin_a), a.compiled, 8) == 0,
		"the write by address did not change the second twin alone");

	err = fl_patchpoint_declare(38, NULL, FL_POINT_MAX_SIZE + 1, &d);
	expect(err, -E2BIG, &d, "declare FL_POINT_MAX_SIZE + 1 bytes");
	err = fl_patchpoint_declare(38, NULL, 24, &d);
	expect(err, 0, &d, "declare 24 bytes");
	err = fl_patchpoint_declare(38, NULL, 24, &d);
	expect(err, 0, &d, "declare 24 bytes again");
	err = fl_patchpoint_declare(38, NULL, 16, &d);
	expect(err, -EEXIST, &d, "declare 16 bytes after 24");
	t_read_point(38, NULL, &pt);
	t_check(pt.size == 24 && pt.flags == FL_POINT_DECLARED,
		"patch point 38: %u bytes, flags %#x after declaring 24", pt.size, pt.flags);
	err = fl_patchpoint_write(38, NULL, big, 25, NULL, &d);
	expect(err, -ENOSPC, &d, "25 bytes into the declared 24");

	printf(" writes, reads, resets\n");
	t_read_point(31, NULL, &pt);
	err = fl_patchpoint_write(31, NULL, mov5, 5, pt.compiled, &d);
	expect(err, 0, &d, "mov $5 into 16 bytes, the right expect");
	t_read_point(31, NULL, &pt);
	t_check(pt.flags == FL_POINT_CHANGED, "after a write: flags %#x", pt.flags);
	t_check(memcmp(pt.now, mov5, 5) == 0 && all_nops(pt.now + 5, 11) &&
		memcmp(PC_OF(pp_nops16), pt.now, 16) == 0,
		"after a write: now is not mov $5 and nops, or not the code");
	t_check(memcmp(pt.compiled, snap[1].compiled, 16) == 0, "after a write: compiled changed");
	t_check(pp_nops16() == 5, "mov $5 does not run");
	err = fl_patchpoint_write(31, NULL, mov5, 5, snap[1].compiled, &d);
	expect(err, -ESTALE, &d, "the compiled bytes as expect, after a write");
	err = fl_patchpoint_write(31, NULL, mov5, 0, NULL, &d);
	printf("  no bytes (all nops): %d %s\n", err, d.msg);
	t_check(err == 0, "no bytes (all nops): %d %s", err, d.msg);
	t_read_point(31, NULL, &pt);
	t_check(all_nops(pt.now, 16), "no bytes: the region is not all nops");

	err = fl_patchpoint_write(34, NULL, mov5, 5, NULL, &d);
	expect(err, 0, &d, "mov $5 over movabsq+callq");
	t_check(pp_call13() == 5, "mov $5 over movabsq+callq does not run");
	for (size_t i = 0; i < NDERIVED; i++) {
		err = fl_patchpoint_reset(derived[i].id, NULL, &d);
		t_check(err == 0, "reset %llu: %d %s", (unsigned long long)derived[i].id, err, d.msg);
		t_read_point(derived[i].id, NULL, &pt);
		t_check(pt.flags == 0 && memcmp(pt.now, pt.compiled, pt.size) == 0 &&
			memcmp(PC_OF(derived[i].fn), snap[i].compiled, pt.size) == 0,
			"reset %llu: flags %#x, or the bytes are not the compiled ones",
			(unsigned long long)derived[i].id, pt.flags);
	}
	t_check(pp_call13() == 1 && pp_call16() == 1, "after reset, the calls do not return 1");
	err = fl_patchpoint_reset(37, PC_OF(pp_twin_b), &d);
	t_check(err == 0 && memcmp(PC_OF(pp_twin_b), b.compiled, 8) == 0,
		"reset the second twin by address: %d %s", err, d.msg);
	printf("PASS %s\n", t_name);
	return 0;
}
