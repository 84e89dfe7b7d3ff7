/* SPDX-License-Identifier: MIT */
/*
 * Dispatch: the per-process handler table and the fault handler.
 *
 * fl_init installs faultline's SIGSEGV and SIGBUS handler and registers
 * every loaded module that has a .llvm_faultmaps section.  From then on a
 * fault at a registered faulting PC, of the registered kind, at an address
 * in the null area (or past the committed limit of a userfaultfd region,
 * see region.h) resumes at the entry's handler PC; every other fault goes
 * to the handler the application installed, exactly as the kernel would
 * have delivered it.
 *
 * Applications that install their own SIGSEGV/SIGBUS handlers after
 * fl_init call fl_sigaction instead of sigaction (the preload shim,
 * libfaultline-preload.so, interposes sigaction, signal, sigset and the
 * others faultline(1) lists, so that unmodified programs do; it also keeps
 * their SIGSEGV, SIGBUS and SIGTRAP out of the kernel's signal mask).
 */
#ifndef FAULTLINE_DISPATCH_H
#define FAULTLINE_DISPATCH_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include <faultline/format.h>
#include <faultline/opts.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
	/* fl_init: do not register the modules loaded now (JIT-only users). */
	FL_INIT_NO_DISCOVERY = 1u << 0,
	/* fl_init: do not register with faultlined. */
	FL_INIT_NO_AGENT = 1u << 1,
	/*
	 * fl_init: root may write raw bytes into this process's patch points
	 * through faultlined (faultline patch); so does FAULTLINE_ALLOW_PATCH=1
	 * in the environment.  Without it such requests are refused, by the
	 * daemon and by the process.  Ignored in a set-id program (AT_SECURE).
	 */
	FL_INIT_ALLOW_PATCH = 1u << 2,
	/*
	 * fl_init: the loaded modules are registered by faultline's fl-agent
	 * thread, not before fl_init returns: a program with 10^5 sites
	 * starts in about the time it would without faultline (the preload
	 * shim sets it).  A fault before their sites are published waits for
	 * them (at most 5 s), then is claimed as any other.  Until then
	 * fl_site_for_each and the like see fewer modules.  Ignored with
	 * FL_INIT_NO_DISCOVERY; with FL_INIT_NO_AGENT (no such thread), or
	 * when the thread cannot start, the modules are registered before
	 * fl_init returns.
	 */
	FL_INIT_DEFER_DISCOVERY = 1u << 3,
};

/* Options: the first field is the struct's size (sizeof). */
struct fl_init_opts {
	size_t sz;
	uint32_t flags;		/* FL_INIT_* */
	/*
	 * A fault is a failed null check only when its address is below this
	 * bound.  0: the page size (LLVM's -imp-null-check-page-size default).
	 */
	uint64_t null_bound;
	/* Counter slots (one per registered site).  0: 1 << 20. */
	uint32_t max_sites;
	/*
	 * faultlined's socket.  NULL: $FAULTLINE_SOCKET; either is the only
	 * daemon looked for.  Without both: as root
	 * /run/faultline/faultlined.sock (the system daemon); otherwise the
	 * user's own $XDG_RUNTIME_DIR/faultline/faultlined.sock first, then
	 * the system daemon's.  The process registers with the first that
	 * answers, and keeps trying in the background when none does; it
	 * works the same either way.  A set-id program (AT_SECURE) takes
	 * neither, and registers only with the system daemon, run by root.
	 */
	const char *socket_path;
	/*
	 * The heal policy: a site whose check fails heal_after times within
	 * heal_window_s seconds (0: ever) is healed (fl_site_heal, in patch.h)
	 * by a thread of faultline's, never in signal context.  heal_after 0:
	 * $FAULTLINE_HEAL_AFTER ("N" or "N/SECONDS"), else no policy.
	 * unheal_after_s: a healed site that has not failed for that long is
	 * unhealed; 0: $FAULTLINE_UNHEAL_AFTER (seconds), else never.
	 * faultlined may set the policy too (faultline request PID
	 * heal-threshold).
	 */
	uint32_t heal_after;
	uint32_t heal_window_s;
	uint32_t unheal_after_s;
};

/*
 * Sets up dispatch for the process: the shared region (counters), the
 * handlers for SIGSEGV and SIGBUS (the ones installed before are kept as
 * the chain), unless FL_INIT_NO_DISCOVERY the loaded modules, and unless
 * FL_INIT_NO_AGENT the agent threads that register with faultlined.  opts may be NULL.
 * Returns 0 on success, -EALREADY if dispatch is already set up, -errno on
 * failure.  Thread-safe.  Not async-signal-safe.
 */
int fl_init(const struct fl_init_opts *opts);

/*
 * Rescans the loaded modules (dl_iterate_phdr): registers the ones that
 * appeared, unregisters the ones that are gone.  The preload shim calls it
 * after every dlopen and dlclose; a library user calls it after its own.
 * Returns the number of modules registered or unregistered, -errno on
 * failure.  Thread-safe.  Not async-signal-safe.
 */
int fl_refresh(void);

/* The longest function name fl_jit_register takes, in bytes (the NUL not counted). */
#define FL_JIT_MAX_FUNCTION_NAME 4096u

/* A function of JIT code, named for faultlined (see fl_jit_reg.functions). */
struct fl_jit_function {
	const char *name;	/* non-empty, no newline, at most FL_JIT_MAX_FUNCTION_NAME bytes */
	uint64_t start;		/* runtime address */
	uint64_t size;		/* > 0 */
};

/* Options of fl_jit_register: the first field is the struct's size. */
struct fl_jit_reg {
	size_t sz;
	const char *name;		/* for messages and stats; may be NULL */
	/*
	 * The .llvm_faultmaps bytes, as the code's loader left them: function
	 * addresses are final runtime addresses (MCJIT and ORC relocate the
	 * section in memory).  Copied; need not outlive the call.  May be
	 * NULL when stackmap is not (code whose only need is deoptimization).
	 */
	const void *faultmap;
	size_t faultmap_size;
	/*
	 * The .llvm_stackmaps bytes, validated and indexed (fl_stackmap_record_at,
	 * deopt.h); may be NULL.
	 */
	const void *stackmap;
	size_t stackmap_size;
	/* The code: every faulting and handler PC must be inside it. */
	uint64_t code_start;
	uint64_t code_size;
	uint32_t parse_flags;		/* FL_PARSE_* */
	/*
	 * The code's .eh_frame, as its loader left it (MCJIT relocates it in
	 * memory), or NULL.  Checked (every FDE inside the code), indexed and
	 * registered with libunwind until fl_jit_unregister, so that
	 * libunwind unwinds through the code: a deoptimization's frame, a
	 * stack walk.  Not copied (its pointers are relative to where it is):
	 * it must stay there, unchanged, while the module is registered.
	 */
	const void *eh_frame;
	size_t eh_frame_size;
	/*
	 * The functions of the code, or NULL (num_functions 0): each site is
	 * named by the function whose [start, start + size) holds its faulting
	 * PC (faultline stats, sites, top), else it stays unnamed.  Each range
	 * must be inside the code range and overlap no other; in any order.
	 * Copied, names included; need not outlive the call.
	 */
	const struct fl_jit_function *functions;
	size_t num_functions;
};

/*
 * Registers code that is not a loaded ELF module (JIT code).  Returns a
 * module id > 0 on success, -EINVAL with *diag filled in (diag may be
 * NULL) when there is neither a fault map nor a stack map, the sections
 * are malformed, an address falls outside the code range, or a function
 * of functions is outside it, overlaps another, is empty or badly named
 * (nothing is registered then), -EEXIST when its sites, stack map records or the code
 * its .eh_frame describes overlap a registered module's,
 * -ENOSPC when the counters are full, -ENODEV before fl_init, -errno
 * otherwise.  Thread-safe.  Not async-signal-safe.
 */
int fl_jit_register(const struct fl_jit_reg *reg, struct fl_diag *diag);

/*
 * Unregisters a module (by the id fl_jit_register returned).  When it
 * returns, no fault is dispatched to the module's handler PCs any more and
 * the code may be freed.  Returns 0 on success, -ENOENT for an unknown id.
 * Thread-safe.  Not async-signal-safe.
 */
int fl_jit_unregister(int id);

/*
 * Records an action for SIGSEGV or SIGBUS (and SIGTRAP once code patching
 * is enabled, see patch.h) the way sigaction(2) would, but leaves
 * faultline's handler installed: unclaimed signals are delivered to the
 * recorded action.  Any other signal goes straight to sigaction, but
 * under the preload shim, where a handler for another signal is put in
 * the kernel as one of faultline's that calls it with SIGSEGV, SIGBUS and
 * SIGTRAP blocked only in the shim's mask (faultline(1), "The signal mask
 * under the preload library"), and read back as it was set.
 * Returns 0 on success, -1 with errno set on failure (as sigaction).
 * Thread-safe and async-signal-safe (no locks: a handler may call it).
 */
int fl_sigaction(int sig, const struct sigaction *act, struct sigaction *oldact);

struct fl_stats {
	size_t sz;
	uint64_t claimed;	/* faults dispatched to a handler PC */
	uint64_t chained;	/* faults passed to the application's action */
	uint64_t populated;	/* region pages populated in signal context */
	uint32_t modules;	/* registered modules */
	uint32_t sites;		/* registered sites */
	uint32_t handler_replaced; /* 1: something replaced our handler */
};

/*
 * Fills in *st (st->sz must be set).  Returns 0, or -EINVAL.  Thread-safe.
 * Not async-signal-safe.
 */
int fl_stats_get(struct fl_stats *st);

struct fl_site {
	int module;		/* module id */
	const char *module_name;
	uint64_t faulting_pc;	/* runtime addresses */
	uint64_t handler_pc;
	uint32_t kind;		/* enum fl_fault_kind */
	uint64_t faults;	/* times dispatched */
};

typedef int (*fl_site_fn)(const struct fl_site *site, void *ctx);

/*
 * Calls fn for every registered site, in address order, until it returns
 * non-zero.  Returns that value, or 0.  Strings are valid during the call.
 * Thread-safe.  Not async-signal-safe.
 */
int fl_site_for_each(fl_site_fn fn, void *ctx);

#ifdef __cplusplus
}
#endif

#endif /* FAULTLINE_DISPATCH_H */
