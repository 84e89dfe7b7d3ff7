/* SPDX-License-Identifier: MIT */
/*
 * A deoptimization, from __llvm_deoptimize's saved registers (ARCH/entry.S) to
 * the deoptimized frame's caller: find the record of the return address,
 * decode the deopt state, work out the frame's return with libunwind, call
 * the runtime's handler, and return its value from the frame.
 *
 * The frame's return is worked out before the handler runs: the handler
 * may unregister and free the deoptimized code and its unwind
 * information.  The return itself is faultline's (fl_deopt_resume), not
 * unw_resume: libunwind 1.6.2 cannot set an XMM register (unw_set_reg
 * returns -UNW_EBADREG), so it could not return a float or a double.
 * What knows the registers (the saved ones, the calling convention's, the
 * return's) is the architecture's: lib/deopt/ARCH/deopt_arch.h.
 *
 * The compiled code may deoptimize in any context, a signal handler's
 * callee included: nothing here allocates or locks until the handler
 * runs (a record with more deopt values than fit on the stack maps its
 * array, values.c; libunwind's local unwinding is signal-safe, but it
 * looks up unwind tables with dl_iterate_phdr, which takes the loader's
 * lock).
 *
 * The handler may leave by longjmp or a C++ exception instead of
 * returning: nothing after its call may be needed to free what the
 * deoptimization holds.  The values on the stack go with the stack; a
 * mapped array is unmapped by the thread's next deoptimization that maps
 * one (values.c).
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

#include <faultline/deopt.h>

#include "core/fmt.h"
#include "deopt/entry.h"
#include "deopt/values.h"
#include "table/libunwind.h"

#if defined(__SANITIZE_ADDRESS__)
/* The frames fl_deopt_resume skips must not stay poisoned (as for longjmp). */
void __asan_handle_no_return(void);
#define skip_frames() __asan_handle_no_return()
#else
#define skip_frames() ((void)0)
#endif

/* ------------------------------------------------------------------------
 * The handler
 */

/*
 * A handler and its context, switched together.  A deoptimization may be
 * using the current pair when another is set, and nothing says when it is
 * done, so pairs are never freed: each is linked to the one it replaced
 * (the pairs stay reachable, a few bytes per fl_deopt_set_handler).
 */
struct handler {
	fl_deopt_fn fn;
	void *ctx;
	struct handler *replaced;
};

static _Atomic(struct handler *) current_handler;
static pthread_mutex_t set_lock = PTHREAD_MUTEX_INITIALIZER;

int fl_deopt_set_handler(fl_deopt_fn fn, void *ctx)
{
	struct handler *h = malloc(sizeof(*h));

	if (!h)
		return -ENOMEM;
	h->fn = fn;
	h->ctx = ctx;
	pthread_mutex_lock(&set_lock);
	h->replaced = atomic_load_explicit(&current_handler, memory_order_relaxed);
	/* Release: the pair is written; pairs with the acquire in fl_deopt_enter. */
	atomic_store_explicit(&current_handler, h, memory_order_release);
	pthread_mutex_unlock(&set_lock);
	return 0;
}

/* ------------------------------------------------------------------------
 * Fatal errors: the deoptimization cannot go on, and cannot return.
 */

#define FATAL_MAX 4096

struct msg {
	char buf[FATAL_MAX];
	size_t len;
};

static void say(struct msg *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(struct msg *m, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	m->len += fl_vfmt(m->buf + m->len, sizeof(m->buf) - m->len, fmt, ap);
	va_end(ap);
}

/*
 * Writes the message to standard error and aborts.  The library otherwise
 * never prints (log.h), but a process about to abort must say why, and a
 * log callback is not safe in every context this runs in.
 */
static void __attribute__((noreturn)) die(struct msg *m)
{
	size_t off = 0;

	say(m, "\n");
	while (off < m->len) {
		ssize_t n = write(STDERR_FILENO, m->buf + off, m->len - off);

		if (n <= 0)
			break;
		off += (size_t)n;
	}
	abort();
}

static void say_site(struct msg *m, uint64_t pc, const struct fl_stackmap_at *at)
{
	say(m, "faultline: __llvm_deoptimize: the deoptimization at 0x%llx",
	    (unsigned long long)pc);
	if (at->record)
		say(m, " (%s, function 0x%llx + 0x%x, stack map record ID 0x%llx)",
		    at->module_name[0] ? at->module_name : "the main program",
		    (unsigned long long)at->function, at->record->instruction_offset,
		    (unsigned long long)at->record->id);
}

static void say_location(struct msg *m, const struct fl_stackmap_location *l)
{
	const char *kind = fl_location_kind_name(l->kind);
	const char *reg = fl_arch_reg_name(l->dwarf_reg);

	say(m, "%s %u", kind ? kind : "?", l->size);
	if (l->kind == FL_LOC_REGISTER)
		say(m, " %s", reg);
	else if (l->kind == FL_LOC_DIRECT || l->kind == FL_LOC_INDIRECT)
		say(m, " [%s %c %u]", reg, l->offset < 0 ? '-' : '+',
		    l->offset < 0 ? 0u - (unsigned)l->offset : (unsigned)l->offset);
}

/* ------------------------------------------------------------------------
 * Decoding
 */

/* Deopt values that fit on the stack; a record with more maps an array. */
#define STACK_VALUES 64

/*
 * Reads location 0..2 (constants) into *st and decodes the deopt values
 * into values[].  Dies, naming the site and the location, on a record that
 * is not a deoptimization's.
 */
static void decode(uint64_t pc, const struct fl_stackmap_at *at, const struct fl_frame_regs *regs,
		   struct fl_deopt_state *st, struct fl_deopt_value *values)
{
	const struct fl_stackmap_record *r = at->record;
	uint64_t head[3];
	struct msg m = { .len = 0 };

	for (uint32_t i = 0; i < st->num_values; i++) {
		const struct fl_stackmap_location *l = &r->locations[3 + i];
		int err;

		values[i].location = l;
		err = fl_location_read(regs, l, &values[i].value);
		if (err) {
			say_site(&m, pc, at);
			say(&m, ": deopt value %u (location %u, ", i, 3 + i);
			say_location(&m, l);
			say(&m, "): cannot be read (%s)", err == -ENOENT ?
			    "a register the entry does not capture" : "malformed location");
			die(&m);
		}
	}
	for (int i = 0; i < 3; i++)
		head[i] = r->locations[i].constant;
	st->calling_convention = head[0];
	st->flags = head[1];
}

/* The number of deopt values of the record, checked; dies on a record that is not a deopt's. */
static uint32_t deopt_count(uint64_t pc, const struct fl_stackmap_at *at)
{
	const struct fl_stackmap_record *r = at->record;
	struct msg m = { .len = 0 };
	uint64_t n;

	for (int i = 0; i < 3 && i < r->num_locations; i++) {
		if (r->locations[i].kind != FL_LOC_CONSTANT &&
		    r->locations[i].kind != FL_LOC_CONSTANT_INDEX) {
			say_site(&m, pc, at);
			say(&m, ": location %d is ", i);
			say_location(&m, &r->locations[i]);
			say(&m, ", not a constant: not a deoptimization's record");
			die(&m);
		}
	}
	n = r->num_locations >= 3 ? r->locations[2].constant : 0;
	if (r->num_locations < 3 || n > (uint64_t)r->num_locations - 3) {
		say_site(&m, pc, at);
		say(&m, ": %u locations, %llu deopt values announced: not a deoptimization's record",
		    r->num_locations, (unsigned long long)n);
		die(&m);
	}
	return (uint32_t)n;
}

/* ------------------------------------------------------------------------
 * The frame's return
 */

/*
 * The deoptimized frame's caller: where the frame returns to, its stack
 * pointer after the return and the callee-saved registers it restores, by
 * the module's unwind information (.eh_frame), through libunwind.
 */
static void unwind_one(uint64_t pc, const struct fl_stackmap_at *at,
		       const struct fl_deopt_saved *sv, struct fl_deopt_resume *out)
{
	struct msg m = { .len = 0 };
	unw_proc_info_t pi;
	unw_context_t uc;
	unw_cursor_t c;
	unw_word_t v, ip;
	const struct fl_arch_resume_reg *callee_saved;
	size_t n;
	const char *why;
	int err;

	/*
	 * The context is the frame at the call, as if it had been captured
	 * there: its pc the return address.  unw_init_local treats it as a
	 * return address and looks up an address before it, in the call
	 * itself: a call that ends its function (nothing follows a
	 * deoptimization) is still found in its function's unwind
	 * information.
	 */
	fl_arch_saved_context(sv, pc, &uc);
	if ((err = fl_libunwind->init_local(&c, &uc)) < 0) {
		why = "unw_init_local failed";
		goto fail;
	}
	/*
	 * Without unwind information libunwind would guess from rbp: refuse
	 * instead.  Asked by address (of the call, fl_arch_call_pc):
	 * unw_get_proc_info makes up a one-byte procedure where it finds none.
	 */
	if ((err = fl_libunwind->get_proc_info_by_ip(fl_libunwind->local_addr_space,
						     fl_arch_call_pc(pc), &pi, NULL)) < 0) {
		why = "no unwind information covers it (its .eh_frame; JIT code: is it given "
		      "to fl_jit_register?)";
		goto fail;
	}
	if ((err = fl_libunwind->step(&c)) <= 0) {
		why = "libunwind cannot step out of it";
		goto fail;
	}
	if ((err = fl_libunwind->get_reg(&c, UNW_REG_IP, &ip)) < 0) {
		why = "no return address";
		goto fail;
	}
	if ((err = fl_libunwind->get_reg(&c, UNW_REG_SP, &v)) < 0) {
		why = "no stack pointer";
		goto fail;
	}
	fl_arch_resume_to(out, ip, v);
	callee_saved = fl_arch_resume_callee_saved(&n);
	for (size_t i = 0; i < n; i++) {
		unw_save_loc_t loc;

		if (!callee_saved[i].fp) {
			err = fl_libunwind->get_reg(&c, callee_saved[i].unw_reg, &v);
		} else {
			/*
			 * unw_get_reg reads no floating-point register; where the
			 * frame's caller gets it back from does: the frame's save
			 * slot, or none when the frame did not save it (its value
			 * is the register's at the call, in the context).
			 */
			err = fl_libunwind->get_save_loc(&c, callee_saved[i].unw_reg, &loc);
			if (err == 0 && loc.type == UNW_SLT_MEMORY)
				memcpy(&v, (const void *)(uintptr_t)loc.u.addr, sizeof(v));
			else if (err == 0 && loc.type == UNW_SLT_NONE)
				v = *fl_arch_context_reg(&uc, callee_saved[i].unw_reg);
			else if (err == 0)
				err = -UNW_EBADREG;
		}
		if (err < 0) {
			why = "a callee-saved register is not known";
			goto fail;
		}
		memcpy((char *)out + callee_saved[i].off, &v, sizeof(v));
	}
	return;
fail:
	say_site(&m, pc, at);
	say(&m, ": the deoptimized frame cannot be unwound: %s (libunwind: %d)", why, err);
	die(&m);
}

/* ------------------------------------------------------------------------
 * The deoptimization
 */

static void __attribute__((noreturn)) no_handler(const struct fl_deopt_state *st,
						 const struct fl_stackmap_at *at)
{
	struct msg m = { .len = 0 };

	say_site(&m, st->pc, at);
	say(&m, ": no deopt handler is set (fl_deopt_set_handler)\n");
	say(&m, "  calling convention %llu, flags 0x%llx, %u deopt values",
	    (unsigned long long)st->calling_convention, (unsigned long long)st->flags,
	    st->num_values);
	for (uint32_t i = 0; i < st->num_values; i++) {
		say(&m, "\n  [%u] ", i);
		say_location(&m, st->values[i].location);
		say(&m, " = 0x%llx", (unsigned long long)st->values[i].value);
	}
	die(&m);
}

__attribute__((visibility("hidden"))) void fl_deopt_enter(struct fl_deopt_saved *sv)
{
	struct fl_deopt_value stack_values[STACK_VALUES], *values = stack_values;
	struct fl_stackmap_at at = { .sz = sizeof(at) };
	struct fl_deopt_return ret = { 0 };
	struct fl_deopt_resume back;
	struct fl_deopt_state st;
	struct fl_frame_regs regs;
	struct handler *h;
	uint64_t pc = fl_arch_saved_ra(sv);
	bool mapped = false;
	int err;

	err = fl_stackmap_record_at(pc, &at);
	if (err) {
		struct msg m = { .len = 0 };

		say_site(&m, pc, &at);
		say(&m, ": %s", err == -ENODEV ? "fl_init has not run" :
		    "no registered stack map record is at this return address (is its module "
		    "registered: fl_refresh after dlopen, fl_jit_register with its stack map?)");
		die(&m);
	}
	memset(&st, 0, sizeof(st));
	st.pc = pc;
	st.record = at.record;
	st.function = at.function;
	st.module = at.module;
	st.module_name = at.module_name;
	st.num_values = deopt_count(pc, &at);
	if (st.num_values > STACK_VALUES) {
		mapped = true;
		values = fl_deopt_values_get(st.num_values, &sv->mark);
		if (!values) {
			struct msg m = { .len = 0 };

			say_site(&m, pc, &at);
			say(&m, ": no memory for %u deopt values", st.num_values);
			die(&m);
		}
	}
	fl_arch_saved_frame_regs(sv, &regs);
	decode(pc, &at, &regs, &st, values);
	st.values = values;
	fl_arch_saved_args(sv, &st);
	st.regs = &regs;

	unwind_one(pc, &at, sv, &back);

	/* Acquire: pairs with the release in fl_deopt_set_handler. */
	h = atomic_load_explicit(&current_handler, memory_order_acquire);
	if (!h || !h->fn)
		no_handler(&st, &at);
	h->fn(&st, &ret, h->ctx);

	if (mapped)
		fl_deopt_values_put(values);
	fl_arch_resume_return(&back, &ret);
	skip_frames();
	fl_deopt_resume(&back);
}
