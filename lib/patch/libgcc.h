/* SPDX-License-Identifier: MIT */
/*
 * Internal to lib/patch/: the process's libgcc_s, whose unwinder C++
 * exceptions, thread cancellation and glibc's backtrace() use (libgcc.c).
 */
#ifndef FL_PATCH_LIBGCC_H
#define FL_PATCH_LIBGCC_H

/* libgcc's struct dwarf_eh_bases (unwind-dw2-fde.h), filled in by find_fde. */
struct fl_libgcc_bases {
	void *tbase;
	void *dbase;
	void *func;
};

struct fl_libgcc {
	/* __register_frame, __deregister_frame: an .eh_frame ended by a zero word. */
	void (*register_frame)(void *eh_frame);
	void (*deregister_frame)(void *eh_frame);
	/* _Unwind_Find_FDE: the FDE (its length field) whose code holds pc, or NULL. */
	const void *(*find_fde)(void *pc, struct fl_libgcc_bases *bases);
};

/*
 * Loads libgcc_s.so.1 (once; the copy the process has, if it has one) and
 * sets *out to its functions.  Returns 0, or -ENOENT when it cannot be
 * loaded or lacks one (with the loader's message in the log).  Thread-safe;
 * takes the loader's lock.
 */
int fl_libgcc_load(const struct fl_libgcc **out);

#endif /* FL_PATCH_LIBGCC_H */
