/* SPDX-License-Identifier: MIT */
/*
 * signal_frame_is_the_context: in a walk from a signal handler's context,
 * the first frame is the interrupted one, with every register the
 * context's, caller-saved ones too, and a write to a location is what the
 * interrupted code sees when the handler returns.
 *
 * sigframe.ll's load_after_stackmap(NULL, k), compiled at -O0..-O3,
 * faults at its stack map
 * record's address (record 77: the pointer and k, in caller-saved
 * registers).  The SIGSEGV handler (through fl_sigaction: faultline's
 * dispatch does not claim the fault) walks from its context, reads both
 * values in the first frame, and writes a valid pointer over the null one:
 * the load, run again, reads it, and the call returns its value plus k.
 * Exits 0 (pass) or 1 (fail, with the reason).
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <ucontext.h>

#include <faultline/deopt.h>
#include <faultline/dispatch.h>

#include "../common/t.h"

/* sigframe.ll, at each -O level */
int64_t load_after_stackmap_O0(int64_t *p, int64_t k);
int64_t load_after_stackmap_O1(int64_t *p, int64_t k);
int64_t load_after_stackmap_O2(int64_t *p, int64_t k);
int64_t load_after_stackmap_O3(int64_t *p, int64_t k);

static const struct {
	const char *level;
	int64_t (*fn)(int64_t *p, int64_t k);
} levels[] = {
	{ "-O0", load_after_stackmap_O0 }, { "-O1", load_after_stackmap_O1 },
	{ "-O2", load_after_stackmap_O2 }, { "-O3", load_after_stackmap_O3 },
};

/*
 * The interrupted pc, and the registers every first frame from a signal
 * context must know: x86-64's rax..r15 and xmm0..xmm15, AArch64's x0..x30
 * and v0..v31.
 */
#if defined(__aarch64__)
#define UC_PC(uc) ((uint64_t)(uc)->uc_mcontext.pc)
#define GREG_FIRST FL_DWARF_A64_X0
#define GREG_LAST (FL_DWARF_A64_LR)
#define VREG_FIRST FL_DWARF_A64_V0
#define VREG_LAST (FL_DWARF_A64_V0 + 31)
#else
#define UC_PC(uc) ((uint64_t)(uc)->uc_mcontext.gregs[REG_RIP])
#define GREG_FIRST FL_DWARF_RAX
#define GREG_LAST FL_DWARF_R15
#define VREG_FIRST FL_DWARF_XMM0
#define VREG_LAST (FL_DWARF_XMM0 + 15)
#endif

#define K 5
static int64_t cell = 1000;
static volatile sig_atomic_t faults;

static int fix_pointer(const struct fl_walk_frame *f, void *uc)
{
	const struct fl_stackmap_record *r = f->at->record;
	uint64_t p, k;
	int err;

	t_check(f->index == 0, "the first frame yielded is frame %u, not the interrupted one",
		f->index);
	t_check(f->pc == UC_PC((ucontext_t *)uc),
		"frame 0 at 0x%llx, not at the interrupted instruction",
		(unsigned long long)f->pc);
	t_check(r->id == 77 && r->num_locations == 2, "record ID %llu, %u locations",
		(unsigned long long)r->id, r->num_locations);
	for (int reg = GREG_FIRST; reg <= GREG_LAST; reg++)
		t_check(f->regs->at[reg], "register %d unknown in the interrupted frame", reg);
	t_check(f->regs->at[VREG_FIRST] && f->regs->at[VREG_LAST],
		"the vector registers unknown in the interrupted frame");
	err = fl_location_read(f->regs, &r->locations[0], &p);
	t_check(err == 0 && p == 0, "the pointer: %d, 0x%llx (not the null one)", err,
		(unsigned long long)p);
	err = fl_location_read(f->regs, &r->locations[1], &k);
	t_check(err == 0 && k == K, "k: %d, %llu, not %d", err, (unsigned long long)k, K);
	err = fl_location_write(f->regs, &r->locations[0], (uint64_t)(uintptr_t)&cell);
	t_check(err == 0, "writing the pointer: %d", err);
	return 1;
}

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	FL_OPTS(fl_walk_start, start, .signal_context = uc);
	int ret;

	(void)sig;
	(void)si;
	/* A second fault: the write did not reach the interrupted code. */
	t_check(++faults == 1, "the load faulted again after the pointer was written");
	ret = fl_stack_walk(&start, fix_pointer, uc);
	t_check(ret == 1, "fl_stack_walk from the signal context: %d, not the callback's 1", ret);
}

int main(void)
{
	FL_OPTS(fl_init_opts, o, .flags = FL_INIT_NO_AGENT);
	struct sigaction sa;
	int64_t got;
	int err;

	t_name = "signal_frame_is_the_context";
	fl_set_log(t_log, NULL);
	err = fl_init(&o);
	t_check(err == 0, "fl_init: %d", err);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO;
	t_check(fl_sigaction(SIGSEGV, &sa, NULL) == 0, "fl_sigaction: %m");
	for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++) {
		faults = 0;
		got = levels[i].fn(NULL, K);
		t_check(faults == 1 && got == cell + K, "%s: load_after_stackmap(NULL, %d) = %lld "
			"after %d faults, not %lld after 1", levels[i].level, K, (long long)got,
			(int)faults, (long long)cell + K);
	}
	printf("PASS signal_frame_is_the_context\n");
	return 0;
}
