// SPDX-License-Identifier: MIT
/*
 * Stack map shadows invalidated while threads have frames there: threads
 * blocked in sm_block, called right before a stack map record (their
 * return address is the record's address), and the record invalidated with
 * fl_stackmap_invalidate to sm_target, the runtime's entry (assembly,
 * below).  When they return they land in sm_target with the frame of the
 * function they were in:
 *   - its return address is the record's address + the call's length (5
 *     for callq rel32, 13 for movabsq $target, %r11; callq *%r11);
 *   - its stack pointer is the caller's at the record less the 8 bytes of
 *     the return address (the caller's, as sm_block saw it, and so 8 mod
 *     16: the ABI aligns a call's stack to 16);
 *   - %rbp is the frame's: the record's live value, an alloca at
 *     Direct [rbp - 8] (llvm-readelf-14 --stackmap), is where sm_block was
 *     given it and holds the function's argument.
 * sm_target hands that to sm_landed, which records it and jumps back to
 * the thread's start (siglongjmp: the frame is the runtime's now).
 *   1. Record 40 (16-byte shadow), three threads blocked, a near target:
 *      callq rel32; a fourth call after the change lands too.
 *   2. Record 41 (16), a target mapped beyond +-2 GiB of the record:
 *      movabsq+callq.
 *   3. Record 42 (8): the far target is -ENOSPC (13 bytes), the near one
 *      goes.  Record 43 (4): -ENOSPC, derived (no nops there: 0 bytes) and
 *      declared.  Refusals change nothing.
 *   4. -ENOENT for an unknown ID, -E2BIG for a declaration over
 *      FL_POINT_MAX_SIZE.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "common.h"

#define BLOCKED 3

int64_t sm_near(int64_t), sm_far(int64_t), sm_small(int64_t), sm_tiny(int64_t);
void sm_block(int64_t *slot);
void sm_target(void);
void sm_landed(uintptr_t rsp, uintptr_t ret, uintptr_t rbp) __attribute__((noreturn));

/*
 * The runtime's entry: called from the record with the frame as it is
 * there.  Passes its stack pointer, its return address and %rbp to
 * sm_landed, on a stack aligned for a call whatever it was given.
 */
__asm__(".text\n"
	".globl sm_target\n"
	".type sm_target, @function\n"
	"sm_target:\n"
	"	mov %rsp, %rdi\n"
	"	mov (%rsp), %rsi\n"
	"	mov %rbp, %rdx\n"
	"	and $-16, %rsp\n"
	"	call sm_landed\n"
	"	ud2\n"
	".size sm_target, . - sm_target\n");

struct frame {
	int64_t (*fn)(int64_t);
	int64_t arg;
	/* What sm_block saw. */
	uintptr_t slot, caller_rsp, ret;
	/* What sm_target saw. */
	uintptr_t target_rsp, target_ret, target_rbp;
	int64_t slot_value;
	bool landed;
	int64_t returned;
	sigjmp_buf env;
	pthread_t th;
};

static __thread struct frame *me;
static _Atomic int blocked, go;

void sm_block(int64_t *slot)
{
	me->slot = (uintptr_t)slot;
	/* The caller's stack pointer at the call: above the return address. */
	me->caller_rsp = (uintptr_t)__builtin_frame_address(0) + 16;
	me->ret = (uintptr_t)__builtin_return_address(0);
	atomic_fetch_add(&blocked, 1);
	while (!atomic_load(&go))
		;
}

void sm_landed(uintptr_t rsp, uintptr_t ret, uintptr_t rbp)
{
	me->target_rsp = rsp;
	me->target_ret = ret;
	me->target_rbp = rbp;
	me->slot_value = *(const int64_t *)(rbp - 8);
	me->landed = true;
	siglongjmp(me->env, 1);
}

static void *run(void *arg)
{
	me = arg;
	if (sigsetjmp(me->env, 0) == 0)
		me->returned = me->fn(me->arg);
	return NULL;
}

static void start(struct frame *f, int64_t (*fn)(int64_t), int64_t arg)
{
	memset(f, 0, sizeof(*f));
	f->fn = fn;
	f->arg = arg;
	t_check(pthread_create(&f->th, NULL, run, f) == 0, "pthread_create");
}

static void wait_blocked(int n, const struct frame *f, uint64_t pc)
{
	while (atomic_load(&blocked) < n)
		;
	for (int i = 0; i < n; i++)
		t_check(f[i].ret == pc, "a thread in sm_block returns to %#lx, not to the record at %#llx",
			(unsigned long)f[i].ret, (unsigned long long)pc);
}

/* A thread's call landed in sm_target with its frame. */
static void check_landed(struct frame *f, uint64_t pc, size_t call_len, const char *what)
{
	pthread_join(f->th, NULL);
	t_check(f->landed, "%s: the call returned %lld, it did not land in sm_target", what,
		(long long)f->returned);
	printf("  %s: landed, return address record + %lld, stack %#lx (the caller's %#lx), slot %lld\n",
	       what, (long long)(f->target_ret - pc), (unsigned long)f->target_rsp,
	       (unsigned long)f->caller_rsp, (long long)f->slot_value);
	t_check(f->target_ret == pc + call_len, "%s: return address %#lx, not the record %#llx + %zu",
		what, (unsigned long)f->target_ret, (unsigned long long)pc, call_len);
	t_check(f->target_rsp % 16 == 8, "%s: stack pointer %#lx at the target's entry is not 8 mod 16",
		what, (unsigned long)f->target_rsp);
	t_check(f->target_rsp + 8 == f->caller_rsp,
		"%s: stack pointer %#lx + 8 is not the caller's %#lx at the record", what,
		(unsigned long)f->target_rsp, (unsigned long)f->caller_rsp);
	t_check(f->target_rbp - 8 == f->slot && f->slot_value == f->arg,
		"%s: [rbp - 8] is %#lx holding %lld, not the frame's slot %#lx holding %lld", what,
		(unsigned long)(f->target_rbp - 8), (long long)f->slot_value, (unsigned long)f->slot,
		(long long)f->arg);
}

static void declare(uint64_t id, size_t size)
{
	struct fl_diag d = { 0 };
	struct fl_point pt;
	int err = fl_stackmap_declare(id, NULL, size, &d);

	t_check(err == 0, "fl_stackmap_declare(%llu, %zu): %d %s", (unsigned long long)id, size, err,
		d.msg);
	t_read_shadow(id, NULL, &pt);
	t_check(pt.size == size && pt.flags == FL_POINT_DECLARED,
		"record %llu declared %zu: read says %u bytes, flags %#x", (unsigned long long)id,
		size, pt.size, pt.flags);
}

static void invalidate_ok(uint64_t id, const void *target, const uint8_t *call, size_t len)
{
	struct fl_diag d = { 0 };
	struct fl_point pt;
	int err = fl_stackmap_invalidate(id, NULL, target, &d);

	printf("  invalidate %llu to %p: %d %s\n", (unsigned long long)id, target, err, d.msg);
	t_check(err == 0, "fl_stackmap_invalidate(%llu): %d %s", (unsigned long long)id, err, d.msg);
	t_read_shadow(id, NULL, &pt);
	t_check(memcmp((const void *)(uintptr_t)pt.pc, call, len) == 0 && memcmp(pt.now, call, len) == 0,
		"record %llu: the call written is not the expected %zu bytes", (unsigned long long)id, len);
	t_check(pt.flags & FL_POINT_CHANGED, "record %llu: not FL_POINT_CHANGED", (unsigned long long)id);
	t_check(memcmp(pt.now + len, pt.compiled + len, pt.size - len) == 0,
		"record %llu: the shadow after the call changed", (unsigned long long)id);
}

static void refused(int err, int want, const struct fl_diag *d, uint64_t id, const struct fl_point *before,
		    const char *what)
{
	struct fl_point pt;

	printf("  %s: %d %s\n", what, err, d->msg);
	t_check(err == want, "%s: %d (%s), expected %d", what, err, d->msg, want);
	t_check(d->err == want && d->msg[0], "%s: no diagnostic", what);
	if (!before)
		return;
	t_read_shadow(id, NULL, &pt);
	t_check(pt.size == before->size && pt.flags == before->flags &&
		memcmp(pt.now, before->now, pt.size) == 0 &&
		memcmp((const void *)(uintptr_t)pt.pc, before->now, pt.size) == 0,
		"%s: a refused call changed the record", what);
}

/* callq rel32 from pc to target. */
static void near_call(uint8_t out[5], uint64_t pc, const void *target)
{
	int32_t rel = (int32_t)((intptr_t)target - (intptr_t)(pc + 5));

	out[0] = 0xe8;
	memcpy(out + 1, &rel, 4);
}

static bool out_of_reach(uint64_t pc, const void *p)
{
	int64_t d = (int64_t)((uintptr_t)p - pc);

	return d > (4ll << 30) || d < -(4ll << 30);
}

/*
 * A page more than 2 GiB from pc (4, to be clear of it): where mmap puts
 * it (the libraries' end of the address space, far from a -no-pie
 * program), else at hints above pc (ASan's shadow takes most of those).
 * In it: movabs $sm_target, %rax; jmp *%rax.
 */
static void *far_page(uint64_t pc)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	uintptr_t target = (uintptr_t)sm_target;
	uint8_t *p = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	for (uint64_t gib = 8; (p == MAP_FAILED || !out_of_reach(pc, p)) && gib < 1024; gib *= 2) {
		uintptr_t want = ((uintptr_t)pc + (gib << 30)) & ~(uintptr_t)(page - 1);

		if (p != MAP_FAILED)
			munmap(p, page);
		p = mmap((void *)want, page, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		if (p != MAP_FAILED && (uintptr_t)p != want) {
			munmap(p, page);	/* a kernel before 4.17: a hint only */
			p = MAP_FAILED;
		}
	}
	t_check(p != MAP_FAILED && out_of_reach(pc, p),
		"no page could be mapped 4 GiB or more from %#llx", (unsigned long long)pc);
	memset(p, 0xcc, page);
	p[0] = 0x48;
	p[1] = 0xb8;
	memcpy(p + 2, &target, 8);
	p[10] = 0xff;
	p[11] = 0xe0;
	t_check(mprotect(p, page, PROT_READ | PROT_EXEC) == 0, "mprotect: %s", strerror(errno));
	return p;
}

int main(int argc, char **argv)
{
	struct frame f[BLOCKED + 1];
	struct fl_point pt, before;
	struct fl_diag d = { 0 };
	uint8_t call[T_CALL_R11_LEN];
	uint64_t pc;
	void *far;
	int err;

	(void)argc;
	t_start(argv);
	t_init_discovering();
	t_enable();

	printf(" 1. three threads blocked before record 40, a near target\n");
	declare(40, 16);
	t_read_shadow(40, NULL, &pt);
	pc = pt.pc;
	for (int i = 0; i < BLOCKED; i++)
		start(&f[i], sm_near, 100 + i);
	wait_blocked(BLOCKED, f, pc);
	near_call(call, pc, (const void *)sm_target);
	invalidate_ok(40, (const void *)sm_target, call, 5);
	atomic_store(&go, 1);
	for (int i = 0; i < BLOCKED; i++)
		check_landed(&f[i], pc, 5, "a blocked thread");
	start(&f[BLOCKED], sm_near, 200);
	check_landed(&f[BLOCKED], pc, 5, "a call after the change");

	printf(" 2. record 41, a target beyond +-2 GiB\n");
	atomic_store(&go, 0);
	atomic_store(&blocked, 0);
	declare(41, 16);
	t_read_shadow(41, NULL, &pt);
	pc = pt.pc;
	far = far_page(pc);
	printf("  the far target: %p, %+lld bytes from the record\n", far,
	       (long long)((intptr_t)far - (intptr_t)pc));
	start(&f[0], sm_far, 300);
	wait_blocked(1, f, pc);
	t_call_r11(call, far);
	invalidate_ok(41, far, call, T_CALL_R11_LEN);
	atomic_store(&go, 1);
	check_landed(&f[0], pc, T_CALL_R11_LEN, "a blocked thread");

	printf(" 3. shadows too small for the call\n");
	declare(42, 8);
	t_read_shadow(42, NULL, &before);
	err = fl_stackmap_invalidate(42, NULL, far, &d);
	refused(err, -ENOSPC, &d, 42, &before, "record 42 (8 bytes), the far target");
	near_call(call, before.pc, (const void *)sm_target);
	invalidate_ok(42, (const void *)sm_target, call, 5);
	start(&f[0], sm_small, 400);
	check_landed(&f[0], before.pc, 5, "record 42, a call after the change");

	t_read_shadow(43, NULL, &before);
	printf("  record 43 derived: %u bytes\n", before.size);
	err = fl_stackmap_invalidate(43, NULL, (const void *)sm_target, &d);
	refused(err, -ENOSPC, &d, 43, &before, "record 43, its shadow derived");
	declare(43, 4);
	t_read_shadow(43, NULL, &before);
	err = fl_stackmap_invalidate(43, NULL, (const void *)sm_target, &d);
	refused(err, -ENOSPC, &d, 43, &before, "record 43 (4 bytes declared), the near target");
	me = &f[0];	/* sm_block's, in this thread (go is set: it returns at once) */
	t_check(sm_tiny(5) == 9, "record 43's code does not run as compiled");

	printf(" 4. unknown records, declarations too big\n");
	err = fl_stackmap_invalidate(4242, NULL, (const void *)sm_target, &d);
	refused(err, -ENOENT, &d, 0, NULL, "invalidate an unknown ID");
	memset(&pt, 0, sizeof(pt));
	pt.sz = sizeof(pt);
	err = fl_stackmap_read(4242, NULL, &pt, &d);
	refused(err, -ENOENT, &d, 0, NULL, "read an unknown ID");
	err = fl_stackmap_declare(4242, NULL, 8, &d);
	refused(err, -ENOENT, &d, 0, NULL, "declare an unknown ID");
	err = fl_stackmap_invalidate(0, (const void *)sm_near, (const void *)sm_target, &d);
	refused(err, -ENOENT, &d, 0, NULL, "invalidate an address that is no record");
	t_read_shadow(43, NULL, &before);
	err = fl_stackmap_declare(43, NULL, FL_POINT_MAX_SIZE + 1, &d);
	refused(err, -E2BIG, &d, 43, &before, "declare FL_POINT_MAX_SIZE + 1 bytes");
	printf("PASS %s\n", t_name);
	return 0;
}
