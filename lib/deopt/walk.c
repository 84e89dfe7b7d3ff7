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
 * fl_stack_walk's entry saved (ARCH/walk_entry.S), which it loads back
 * when the walk returns.  What knows the registers and the signal frame is
 * the architecture's (lib/deopt/ARCH/deopt_arch.h).
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

/* What the walk keeps of the frame it is at, for the callback. */
struct frame_state {
	struct fl_frame_regs regs;
	uint64_t sp, pc;	/* the stack pointer's and the return address's storage: copies */
};

/*
 * The frame's registers: the callee-saved ones where libunwind says the
 * frame gets them back from (NULL: not known, e.g. beyond a frame that
 * libunwind stepped over by guessing), and in the first frame from a
 * signal context, every register the context holds.
 */
static void frame_regs(unw_cursor_t *c, unw_context_t *start, ucontext_t *signal_top,
		       struct frame_state *f)
{
	memset(&f->regs, 0, sizeof(f->regs));
	if (signal_top) {
		fl_arch_signal_regs(signal_top, &f->regs);
	} else {
		size_t n;
		const int *callee_saved = fl_arch_callee_saved(&n);

		for (size_t i = 0; i < n; i++) {
			unw_save_loc_t loc;

			/* libunwind numbers the registers as DWARF does (deopt_arch.h). */
			if (fl_libunwind->get_save_loc(c, callee_saved[i], &loc) != 0)
				continue;
			if (loc.type == UNW_SLT_MEMORY)
				f->regs.at[callee_saved[i]] = (void *)(uintptr_t)loc.u.addr;
			else if (loc.type == UNW_SLT_NONE &&
				 fl_arch_unsaved_in_context(callee_saved[i]))
				f->regs.at[callee_saved[i]] = fl_arch_context_reg(start, callee_saved[i]);
		}
	}
	fl_arch_frame_sp_pc(&f->regs, &f->sp, &f->pc, signal_top != NULL);
}

/* What the callback wrote to registers no frame saved, for the entry to load. */
static void caller_context_back(unw_context_t *uc, struct fl_deopt_saved *sv)
{
	size_t n;
	const int *callee_saved = fl_arch_callee_saved(&n);

	for (size_t i = 0; i < n; i++)
		*fl_arch_saved_reg(sv, callee_saved[i]) = *fl_arch_context_reg(uc, callee_saved[i]);
}

/* The walk itself, from a cursor at its first frame. */
static int walk(unw_cursor_t *c, unw_context_t *start, ucontext_t *signal_uc, fl_walk_fn fn,
		void *ctx)
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

			frame_regs(c, start, index == 0 ? signal_uc : NULL, &f);
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
	unw_context_t own;
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

		if (!fl_arch_signal_from_kernel(uc))
			return -EINVAL;
		/* Its pc is the interrupted instruction, not a return address. */
		/*
		 * The kernel's frame, which libunwind reads as its context
		 * (an unw_context_t is a ucontext_t, or its first part).
		 */
		if (fl_libunwind->init_local2(&c, (unw_context_t *)(void *)uc, UNW_INIT_SIGNAL_FRAME) < 0)
			return -ENODATA;
		return walk(&c, (unw_context_t *)(void *)uc, uc, fn, ctx);
	}
	fl_arch_saved_context(sv, fl_arch_saved_ra(sv), &own);
	/* Its pc is a return address: libunwind looks up the call (pc - 1). */
	if (fl_libunwind->init_local(&c, &own) < 0)
		return -ENODATA;
	err = walk(&c, &own, NULL, fn, ctx);
	caller_context_back(&own, sv);
	return err;
}
