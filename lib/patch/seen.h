/* SPDX-License-Identifier: MIT */
/*
 * Code that faultline writes at run time (a healed site's stub, a
 * relocated copy of a function), made visible to profilers and unwinders
 * (seen.c): named in the process's perf map (perfmap.h), and described by
 * an .eh_frame of its own, registered with libgcc_s (C++ exceptions,
 * backtrace(), thread cancellation) and with libunwind (its users: the
 * deoptimization entry, stack walks, profilers that link it).  The unwind
 * rules are the original code's, read from the original's FDE, shifted
 * where the new code has pushed more on the stack.
 *
 * Everything here is called with faultline's patch lock held, from one
 * thread at a time; none of it is async-signal-safe.
 */
#ifndef FL_PATCH_SEEN_H
#define FL_PATCH_SEEN_H

#include <stddef.h>
#include <stdint.h>

struct fl_diag;

/* A stretch of new code whose unwind rule is the original code's at orig. */
struct fl_seen_row {
	uint64_t at;		/* from this address of the new code on (rows ascending, rows[0].at == start) */
	uint64_t orig;		/* the CFI row of the original code at this address applies ... */
	uint32_t pushed;	/* ... with this many more bytes on the stack (below the original's %rsp) */
};

struct fl_seen;

/*
 * Makes [start, start + len) visible: named `name` in the perf map, and
 * unwindable by libunwind and by libgcc's unwinder with the rules the rows
 * give (until the next row's at, the last until start + len).  The
 * original's rules come from its FDE (the one covering rows[0].orig, as
 * libgcc_s's _Unwind_Find_FDE finds it: loaded modules' and frames
 * registered with __register_frame, such as MCJIT's); all rows' orig must
 * be in that same FDE's range.  Its personality and LSDA are not copied.
 *
 * Returns 0 with *out set on success.  Otherwise -errno with *diag filled
 * in, and one of two outcomes, which *out tells apart:
 *   - *out == NULL: nothing was registered, not even the name.  Bad input
 *     (-EINVAL: len 0, no rows, rows[0].at != start, rows not ascending or
 *     past the end, a name empty or with a newline, a row's orig outside
 *     the FDE of rows[0].orig or the FDE malformed), no FDE covering
 *     rows[0].orig or no libgcc_s to find one (-ENOENT), or -ENOMEM.
 *   - *out != NULL: the perf map line is written (as perfmap.h decides),
 *     but neither unwinder knows the code: a rule that cannot be shifted
 *     by a row's pushed (-ENOTSUP: a CFA expression or a register's
 *     expression with pushed != 0, a register past FL_CFI_REGS), a malformed
 *     instruction of the original (-EINVAL), libunwind not loadable
 *     (-ENOENT), no memory for the .eh_frame within 2 GiB of the code
 *     (-ENOMEM: libunwind's index holds 32-bit offsets).  The caller may go
 *     on with a named but not unwindable stub; fl_seen_remove(*out) later.
 * A perf map that is not written is never an error (perfmap.h).
 * Called before any jump to the new code exists.
 */
int fl_seen_add(uint64_t start, size_t len, const char *name, const struct fl_seen_row *rows,
		size_t nrows, struct fl_seen **out, struct fl_diag *diag);

/*
 * Cancels the registrations and frees s (NULL: nothing), once no thread is
 * in the code.  The perf map line stays (perf maps cannot remove one).
 */
void fl_seen_remove(struct fl_seen *s);

/*
 * "FUNCTION+0xOFF" for the function around orig (its symbol: .symtab of
 * the module's file, else .dynsym), or "MODULE+0xOFF" (the file's name,
 * the offset from its load bias) when no symbol holds it, or "0xADDR" for
 * an address in no module (JIT code).  Returns the length as snprintf
 * does (buf holds at most size - 1 of it).  Reads the module's file.
 */
int fl_seen_name(uint64_t orig, char *buf, size_t size);

/*
 * Whether s is known to both unwinders (fl_seen_add returned 0 for it).
 * For tests.
 */
int fl_seen_unwindable(const struct fl_seen *s);

#endif /* FL_PATCH_SEEN_H */
