/* SPDX-License-Identifier: MIT */
/*
 * Deoptimization, and what it is built on: finding the stack map record of
 * a return address in any registered module, reading (or writing) a
 * record's locations in a frame, and walking a stack's frames of
 * registered code (what a collector does at a gc.statepoint to find and
 * update its roots).
 *
 * llc-14 lowers llvm.experimental.deoptimize (and the guards that
 * lower-guard-intrinsic turns into it) to a call of __llvm_deoptimize with
 * the intrinsic's own arguments, and a stack map record at the call's
 * return address (ID 0xABCDEF0F unless the call says otherwise) whose
 * first three locations are constants: the calling convention, the flags
 * and the number of deopt values, followed by the deopt values.  Nothing
 * follows the call: __llvm_deoptimize never returns to it.  libfaultline
 * defines __llvm_deoptimize.  It captures the caller's registers, finds
 * the record by the return address, decodes the deopt state, calls the
 * handler set with fl_deopt_set_handler, and returns the handler's value
 * from the deoptimized frame to that frame's caller, as if the compiled
 * function had returned it (one frame unwound with the module's unwind
 * information, callee-saved registers restored).
 *
 * The records are those of every registered module (include/faultline/
 * dispatch.h): loaded ELF modules once fl_init or fl_refresh found them,
 * JIT code registered with fl_jit_register with a stack map.
 *
 * Errors are negative errno values.  "Async-signal-safe": callable from a
 * signal handler (no allocation, no lock, no syscall).
 */
#ifndef FAULTLINE_DEOPT_H
#define FAULTLINE_DEOPT_H

#include <stddef.h>
#include <stdint.h>

#include <faultline/format.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------
 * Records by return address
 */

/* What fl_stackmap_record_at found. */
struct fl_stackmap_at {
	size_t sz;		/* sizeof(struct fl_stackmap_at), set by the caller */
	/*
	 * The record: its pc and function_address are runtime addresses, its
	 * locations as the format layer parsed them.
	 */
	const struct fl_stackmap_record *record;
	uint64_t function;	/* the runtime address of its function */
	uint64_t stack_size;	/* its function's frame, FL_STACK_SIZE_DYNAMIC */
	int module;		/* the registered module's id */
	const char *module_name;	/* "" for the main program */
};

/*
 * Finds the stack map record whose address is pc (a return address: the
 * record of a call is at the instruction after it) in every registered
 * module.  Returns 0 with *out filled in, -ENOENT when no registered
 * record is at pc, -ENODEV before fl_init, -EINVAL when out->sz is too
 * small.  The record and the strings stay valid until their module is
 * unregistered (fl_jit_unregister, or fl_refresh after a dlclose): code
 * whose frames are on a stack must stay registered, as it must stay
 * mapped.  Thread-safe, against registrations and unregistrations too;
 * async-signal-safe.
 */
int fl_stackmap_record_at(uint64_t pc, struct fl_stackmap_at *out);

/* ------------------------------------------------------------------------
 * Locations
 */

/*
 * The low 8 bytes of a floating-point or vector register (an XMM register
 * of x86-64, a V register of AArch64): a double, a float, or the bits.
 */
union fl_xmm {
	double d;
	float f;
	uint64_t bits;
};

/*
 * The architecture's part: FL_DWARF_REGS, the DWARF register names
 * (FL_DWARF_* of x86-64, FL_DWARF_A64_* of AArch64), FL_DEOPT_INT_ARGS,
 * FL_DEOPT_FP_ARGS and struct fl_deopt_return.  Each header defines them
 * only when compiled for its architecture.
 */
#include <faultline/x86_64/deopt_regs.h>
#include <faultline/aarch64/deopt_regs.h>

#ifndef FL_DEOPT_ARCH_KNOWN
#error "<faultline/deopt.h>: faultline knows x86-64 and AArch64 only"
#endif

/*
 * A frame's registers, as locations are read in it: for each DWARF
 * register, where its value in that frame is stored (8 bytes; 16 for an
 * XMM or V register), or NULL when it is unknown.  The stack pointer's
 * (FL_DWARF_RSP, FL_DWARF_A64_SP) is the frame's stack pointer at the
 * call, the value Direct and Indirect locations add their offset to.  Pointing at where a register is stored, not holding its
 * value, lets a writer change it: a callee-saved register that a callee
 * spilled is changed in its spill slot.
 */
struct fl_frame_regs {
	void *at[FL_DWARF_REGS];
};

/*
 * Reads location loc of a record in the frame whose registers are regs:
 *   Register       the register's low loc->size bytes
 *   Direct         the register's value + offset (an address in the frame)
 *   Indirect       the loc->size bytes at the register's value + offset
 *   Constant,
 *   ConstantIndex  the constant (loc->constant: sign-extended from 32 bits
 *                  for Constant)
 * Register and Indirect values of 1, 2 or 4 bytes are zero-extended: the
 * reader knows the value's type.  An XMM or V register location (size
 * 16: a float or a double kept there) reads as the register's low 8 bytes.
 * Returns 0 with *value set, -EINVAL for a location kind it does not
 * know, a size other than 1, 2, 4 or 8 where it reads memory or a
 * general register, or a register outside FL_DWARF_REGS;
 * -ENOENT when regs does not know the register.  Memory is read as it is:
 * regs must describe a live frame.  Thread-safe; async-signal-safe.
 */
int fl_location_read(const struct fl_frame_regs *regs, const struct fl_stackmap_location *loc,
		     uint64_t *value);

/*
 * Writes value (its low loc->size bytes) to a Register or Indirect
 * location of a record in the frame whose registers are regs: what a
 * collector does to a root it moved.  Returns 0, -EINVAL for a Direct,
 * Constant or ConstantIndex location (nothing there to write: a Direct
 * location is an object in the frame, not a pointer to one) and as
 * fl_location_read, -ENOENT as fl_location_read.  Thread-safe;
 * async-signal-safe.
 */
int fl_location_write(const struct fl_frame_regs *regs, const struct fl_stackmap_location *loc,
		      uint64_t value);

/* ------------------------------------------------------------------------
 * Stack walks
 */

/*
 * Where fl_stack_walk starts (FL_OPTS(fl_walk_start, s, ...); a NULL
 * start is the defaults).
 */
struct fl_walk_start {
	size_t sz;		/* sizeof(struct fl_walk_start), set by the caller */
	/*
	 * NULL (the default): the calling thread's stack, from the caller of
	 * fl_stack_walk.  Else the ucontext_t * that a signal handler
	 * installed with SA_SIGINFO received as its third argument, the
	 * kernel's own (not a copy), during that handler: the stack the
	 * signal interrupted, from the interrupted instruction.  The values
	 * still in registers then are in the context, and a write there is
	 * what the interrupted code sees when the handler returns.
	 */
	void *signal_context;
};

/* A frame of registered code, as fl_stack_walk yields it. */
struct fl_walk_frame {
	uint64_t pc;		/* where it resumes: the return address of its call */
	uint64_t sp;		/* its stack pointer at the call */
	unsigned index;		/* 0 for the walk's first frame; every frame counts */
	const struct fl_stackmap_at *at;	/* the record at pc, its function, its module */
	/*
	 * Where its registers are stored, for fl_location_read and
	 * fl_location_write.  The callee-saved ones (x86-64: rbx, rbp,
	 * r12..r15; AArch64: x19..x28, x29, d8..d15, the low 8 bytes of
	 * v8..v15): where the frame gets them back from when it resumes, a
	 * callee's save slot or, when no callee saved one, the start's
	 * context (the register itself, which fl_stack_walk or the signal's
	 * return reloads), so that a write is what the frame sees.  The
	 * stack pointer (RSP, A64_SP) and the return address (RA; AArch64:
	 * LR, x30, which holds it at the call) point at copies of sp and pc
	 * (writing them changes nothing).  The other registers are NULL, for
	 * a call does not keep them, but in the first frame from a signal
	 * context, interrupted anywhere: all the general registers and the
	 * vector registers (xmm0..xmm15; v0..v31) are the context's, and its
	 * LR too on AArch64.
	 */
	const struct fl_frame_regs *regs;
};

/*
 * Called by fl_stack_walk for each frame of registered code, innermost
 * first, with the ctx given to it.  Returns 0 to go on to the next frame;
 * any other value ends the walk, and fl_stack_walk returns it.  frame and
 * what it points at are valid during the call only.
 */
typedef int (*fl_walk_fn)(const struct fl_walk_frame *frame, void *ctx);

/*
 * Walks the stack from start (NULL: the calling thread's, from the
 * caller of fl_stack_walk) to its outermost frame with libunwind, and
 * calls fn for each frame whose pc has a registered stack map record
 * (fl_stackmap_record_at): a collector's roots at a gc.statepoint, a
 * runtime's deopt state.  Frames of other code are stepped over; fn does
 * not see them (frame->index counts them).  Returns 0 when the walk
 * reached the outermost frame; fn's value when fn ended it; -EINVAL for a
 * NULL fn, a start whose sz is too small or that asks for what this
 * library does not know, or a signal_context that is not a signal
 * handler's (the kernel's signal frame); -ENODEV before fl_init;
 * -ENODATA when libunwind cannot step out of a frame (the frames beyond
 * it are not walked); -ELOOP after FL_WALK_MAX_FRAMES frames.  Every
 * frame up to the last of registered code needs unwind information
 * (.eh_frame; JIT code's given to fl_jit_register): libunwind steps over a
 * frame without any by a guess that the walk cannot tell, and the frames
 * beyond may then have wrong stack pointers and unknown (NULL) callee-saved
 * registers.  Thread-safe (each thread walks its own stack); from a
 * signal handler too, once libunwind has initialized itself (at the
 * process's first walk, deoptimization or other use of it).
 */
int fl_stack_walk(const struct fl_walk_start *start, fl_walk_fn fn, void *ctx);

/* Frames fl_stack_walk steps through before it gives up (-ELOOP). */
#define FL_WALK_MAX_FRAMES (1u << 20)

/* ------------------------------------------------------------------------
 * Deoptimization
 */

/* One decoded deopt value. */
struct fl_deopt_value {
	const struct fl_stackmap_location *location;
	uint64_t value;		/* as fl_location_read reads it */
};

/* What the handler is told of a deoptimization. */
struct fl_deopt_state {
	uint64_t pc;			/* the call's return address: the site */
	const struct fl_stackmap_record *record;
	uint64_t function;		/* the runtime address of its function */
	int module;			/* the registered module's id */
	const char *module_name;	/* "" for the main program */
	/* Locations 0..2 of the record. */
	uint64_t calling_convention;
	uint64_t flags;
	uint32_t num_values;
	const struct fl_deopt_value *values;	/* locations 3.. */
	/*
	 * The intrinsic's own call arguments, as the calling convention
	 * passed them: the integer and pointer ones in int_args (x86-64: rdi,
	 * rsi, rdx, rcx, r8, r9; AArch64: x0..x7), the floating-point ones in
	 * xmm_args (xmm0..xmm7; d0..d7), the rest on the stack from
	 * stack_args (the caller's stack pointer at the call).
	 */
	uint64_t int_args[FL_DEOPT_INT_ARGS];
	union fl_xmm xmm_args[FL_DEOPT_FP_ARGS];
	const uint64_t *stack_args;
	/*
	 * The deoptimized frame's registers at the call, for reading more
	 * (fl_location_read): the general registers, the return address
	 * (x86-64: RA; AArch64: LR) and the argument registers xmm0..xmm7
	 * (x86-64) or every V register's low 8 bytes (AArch64: v0..v7 hold
	 * arguments, v8..v15 callee-saved values).  Valid during the
	 * handler's call only.
	 */
	const struct fl_frame_regs *regs;
};

/*
 * struct fl_deopt_return, what the deoptimized function returns to its
 * caller, is the architecture's (x86_64/deopt_regs.h, aarch64/
 * deopt_regs.h): the registers the calling convention returns in, all
 * loaded, zeroed before the handler's call.
 */

/*
 * The runtime's deopt handler: rebuilds the interpreter's frames from
 * state, runs them to the end of the deoptimized function, and sets
 * *ret to what it returns.  It runs on the deoptimizing thread, below the
 * deoptimized frame (which is not unwound until it returns: it may read
 * it), in whatever context the compiled code ran (a signal handler's
 * callee deoptimizes in that signal handler).  It may unregister and free
 * the deoptimized code: the frame's unwinding was worked out before the
 * call.  It returns, or leaves by longjmp or a C++ exception to a frame
 * above the deoptimized one (as a runtime does when the resumed code
 * throws), or never comes back (exit): nothing the deoptimization holds
 * waits for its return to be freed (an array of more than 64 deopt
 * values is unmapped by the thread's next such deoptimization).
 */
typedef void (*fl_deopt_fn)(const struct fl_deopt_state *state, struct fl_deopt_return *ret,
			    void *ctx);

/*
 * Sets the deopt handler (NULL: none; a deoptimization then prints what
 * it decoded and aborts).  fn and ctx are switched together: a
 * deoptimization under way calls the old pair or the new one.  Returns 0
 * or -ENOMEM.  Thread-safe; not async-signal-safe.
 */
int fl_deopt_set_handler(fl_deopt_fn fn, void *ctx);

/*
 * The entry llc-14 calls for llvm.experimental.deoptimize: never called
 * from C.  Declared with the type of a void deoptimization; other return
 * types call the same symbol.
 */
void __llvm_deoptimize(void);

#ifdef __cplusplus
}
#endif

#endif /* FAULTLINE_DEOPT_H */
