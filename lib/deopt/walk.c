/* SPDX-License-Identifier: MIT */
/*
 * fl_stack_walk (deopt.h): a stack's frames of registered code, each with
 * its stack map record and where its registers are, so that a collector
 * can read and move its roots.
 *
 * libunwind steps from frame to frame by the modules' unwind information
 * and keeps, for each callee-saved register, where the frame being looked
 * at gets it back from: the slot a callee saved it in, or the context the
 * walk started from when no callee did (unw_get_save_loc).  That is where
 * a write must go for the frame to see it, so the frame's fl_frame_regs
 * point there.  The context is the kernel's signal frame for a walk from
 * a signal context (the signal's return loads it), or the registers
 * fl_stack_walk's entry saved (walk_entry.S), which it loads back when
 * the walk returns.
 *
 * Nothing here allocates; libunwind's local unwinding is signal-safe once
 * it has initialized itself, but it looks up unwind tables with
 * dl_iterate_phdr, which takes the loader's (recursive) lock.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <ucontext.h>

#include <faultline/deopt.h>

#include "core/opts.h"
#include "deopt/entry.h"
#include "table/libunwind.h"

/* The callee-saved registers: a frame at a call keeps its values in these. */
static const int callee_saved[] = {
	FL_DWARF_RBX, FL_DWARF_RBP, FL_DWARF_R12, FL_DWARF_R13, FL_DWARF_R14, FL_DWARF_R15,
};

/* Where the general registers are in a ucontext_t, by DWARF number. */
static const int greg_of[16] = {
	REG_RAX, REG_RDX, REG_RCX, REG_RBX, REG_RSI, REG_RDI, REG_RBP, REG_RSP,
	REG_R8, REG_R9, REG_R10, REG_R11, REG_R12, REG_R13, REG_R14, REG_R15,
};

/*
 * Whether uc is the context the kernel gave a signal handler, as
 * arch/x86/kernel/signal_64.c lays out its signal frame: every frame's
 * uc_flags has UC_SIGCONTEXT_SS (Linux 4.6 and later), and its FP state,
 * which uc_mcontext.fpregs points at, follows the frame: the kernel's
 * ucontext (whose signal mask is 8 bytes, not glibc's 128) and the
 * siginfo, rounded up to the FP state's 64-byte alignment.  getcontext's
 * context has no flags and points at its own __fpregs_mem; a copy of the
 * kernel's points back at the original's FP state, far from the copy.
 */
#define UC_SIGCONTEXT_SS 0x2
#define KERNEL_FRAME_END (offsetof(ucontext_t, uc_sigmask) + 8 + sizeof(siginfo_t))

static bool from_kernel(const ucontext_t *uc)
{
	uintptr_t fp = (uintptr_t)uc->uc_mcontext.fpregs, end = (uintptr_t)uc + KERNEL_FRAME_END;

	return (uc->uc_flags & UC_SIGCONTEXT_SS) && fp >= end && fp - end < 64;
}

/* What the walk keeps of the frame it is at, for the callback. */
struct frame_state {
	struct fl_frame_regs regs;
	uint64_t sp, pc;	/* RSP's and RA's storage: copies */
};

/*
 * The frame's registers: the callee-saved ones where libunwind says the
 * frame gets them back from (NULL: not known, e.g. beyond a frame that
 * libunwind stepped over by guessing), and in the first frame from a
 * signal context, every register the context holds.
 */
static void frame_regs(unw_cursor_t *c, ucontext_t *signal_top, struct frame_state *f)
{
	memset(&f->regs, 0, sizeof(f->regs));
	if (signal_top) {
		for (int i = 0; i < 16; i++)
			f->regs.at[i] = &signal_top->uc_mcontext.gregs[greg_of[i]];
		for (int i = 0; i < 16; i++)
			f->regs.at[FL_DWARF_XMM0 + i] = signal_top->uc_mcontext.fpregs->_xmm[i].element;
	} else {
		for (size_t i = 0; i < sizeof(callee_saved) / sizeof(callee_saved[0]); i++) {
			unw_save_loc_t loc;

			/* libunwind numbers x86-64's registers as DWARF does. */
			if (fl_libunwind->get_save_loc(c, callee_saved[i], &loc) == 0 &&
			    loc.type == UNW_SLT_MEMORY)
				f->regs.at[callee_saved[i]] = (void *)(uintptr_t)loc.u.addr;
		}
	}
	f->regs.at[FL_DWARF_RSP] = &f->sp;
	f->regs.at[FL_DWARF_RA] = &f->pc;
}

/* The context of the caller of fl_stack_walk, as if captured at its call. */
static void caller_context(const struct fl_deopt_saved *sv, ucontext_t *uc)
{
	memset(uc, 0, sizeof(*uc));
	for (int i = 0; i < 16; i++)
		uc->uc_mcontext.gregs[greg_of[i]] = (greg_t)sv->gpr[i];
	uc->uc_mcontext.gregs[REG_RIP] = (greg_t)sv->gpr[FL_DWARF_RA];
}

/* What the callback wrote to registers no frame saved, for the entry to load. */
static void caller_context_back(const ucontext_t *uc, struct fl_deopt_saved *sv)
{
	for (size_t i = 0; i < sizeof(callee_saved) / sizeof(callee_saved[0]); i++)
		sv->gpr[callee_saved[i]] = (uint64_t)uc->uc_mcontext.gregs[greg_of[callee_saved[i]]];
}

/* The walk itself, from a cursor at its first frame. */
static int walk(unw_cursor_t *c, ucontext_t *signal_uc, fl_walk_fn fn, void *ctx)
{
	struct frame_state f;

	for (unsigned index = 0; index < FL_WALK_MAX_FRAMES; index++) {
		struct fl_stackmap_at at = { .sz = sizeof(at) };
		unw_word_t ip, sp;
		int err;

		if (fl_libunwind->get_reg(c, UNW_REG_IP, &ip) < 0 || fl_libunwind->get_reg(c, UNW_REG_SP, &sp) < 0)
			return -ENODATA;
		err = fl_stackmap_record_at(ip, &at);
		if (err == -ENODEV)
			return err;
		if (err == 0) {
			struct fl_walk_frame frame = {
				.pc = ip, .sp = sp, .index = index, .at = &at, .regs = &f.regs,
			};

			frame_regs(c, index == 0 ? signal_uc : NULL, &f);
			f.sp = sp;
			f.pc = ip;
			err = fn(&frame, ctx);
			if (err)
				return err;
		}
		err = fl_libunwind->step(c);
		if (err == 0)
			return 0;
		if (err < 0)
			return -ENODATA;
	}
	return -ELOOP;
}

__attribute__((visibility("hidden"))) int fl_walk_enter(struct fl_deopt_saved *sv,
							const struct fl_walk_start *start,
							fl_walk_fn fn, void *ctx)
{
	struct fl_walk_start s;
	unw_cursor_t c;
	ucontext_t own;
	int err;

	if (!fn)
		return -EINVAL;
	err = fl_opts_copy(&s, sizeof(s), start);
	if (err)
		return err;
	/* Loaded by fl_init (fl_table_init), before anything is registered. */
	if (!fl_libunwind)
		return -ENODEV;
	if (s.signal_context) {
		ucontext_t *uc = s.signal_context;

		if (!from_kernel(uc))
			return -EINVAL;
		/* Its pc is the interrupted instruction, not a return address. */
		if (fl_libunwind->init_local2(&c, uc, UNW_INIT_SIGNAL_FRAME) < 0)
			return -ENODATA;
		return walk(&c, uc, fn, ctx);
	}
	caller_context(sv, &own);
	/* Its pc is a return address: libunwind looks up the call (pc - 1). */
	if (fl_libunwind->init_local(&c, &own) < 0)
		return -ENODATA;
	err = walk(&c, NULL, fn, ctx);
	caller_context_back(&own, sv);
	return err;
}
