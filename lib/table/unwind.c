// SPDX-License-Identifier: MIT
/*
 * JIT code's .eh_frame, and the code faultline writes (lib/patch/seen.c),
 * registered with libunwind (unwind.h).
 *
 * libunwind looks up the unwind information of an address in its list of
 * dynamically registered code first (_U_dyn_info_list), then in the
 * loaded modules.  An entry of format UNW_INFO_FORMAT_REMOTE_TABLE is an
 * index of FDEs sorted by address, as .eh_frame_hdr's binary search table
 * is: pairs of 32-bit offsets from segbase, the code's and the FDE's
 * (dwarf_search_unwind_table in libunwind's Gfind_proc_info-lsb.c).  Here
 * segbase is the .eh_frame itself, so the code must be within 2 GiB of it
 * (MCJIT's sections are: its .eh_frame reaches the code with 32-bit
 * PC-relative pointers too).
 *
 * Why libunwind's registration, and not an unwinder of our own for the
 * deoptimization's one frame: every user of libunwind in the process (the
 * deoptimization entry, a stack walk for a collector, a profiler) then
 * steps through JIT frames, with the call frame interpreter libunwind
 * already has, and MCJIT's own registration (libgcc's __register_frame)
 * stays as it is for C++ exceptions.
 *
 * Two things libunwind leaves to its caller:
 *  - It reads the list without a lock (local_find_proc_info), so an entry
 *    may still be read after _U_dyn_cancel returns.  The entries
 *    (unw_dyn_info_t) are therefore never freed: a cancelled one is kept
 *    and used again for a later registration.  The FDE index is freed
 *    with the module: only an unwind of the module's own code reads it,
 *    and code whose frames are on a stack must stay registered.
 *  - It caches register states by address (the rs cache, looked up before
 *    the list), so code registered where other code was would be unwound
 *    with the old code's rules.  Every registration and cancellation
 *    flushes the cache (unw_flush_cache: it bumps a generation that every
 *    lookup compares).
 *
 * Locks: fl_unwind_register and the cancellation in fl_unwind_free run
 * under their caller's lock (the table's for JIT code, the patch lock for
 * faultline's own code), which keeps one fl_unwind to one thread; the
 * spare entries, which both share, have their own.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <faultline/dispatch.h>

#include "format/diag.h"
#include "format/ehframe.h"
#include "table/libunwind.h"
#include "table/unwind.h"

/* An entry of the index: libunwind's struct table_entry. */
struct entry {
	int32_t start_ip_offset;	/* the FDE's code, from segbase */
	int32_t fde_offset;		/* the FDE, from segbase */
};

_Static_assert(sizeof(struct entry) % sizeof(unw_word_t) == 0,
	       "table_len counts unw_word_t");

/* libunwind's entry for a registration, and the link of the spare ones. */
struct node {
	unw_dyn_info_t di;
	struct node *spare;
};

struct fl_unwind {
	uint64_t lo, hi;	/* the span of the FDEs' code */
	uint64_t segbase;	/* the .eh_frame's address */
	struct entry *table;
	size_t n;
	char *name;
	struct node *node;	/* while registered */
};

/*
 * Cancelled entries, to be used again (never freed).  Under spare_lock:
 * the table registers JIT code under its lock, the patch layer its stubs
 * under the patch lock (lib/patch/seen.c).
 */
static struct node *spare;
static pthread_mutex_t spare_lock = PTHREAD_MUTEX_INITIALIZER;

/* Whether v - base fits the index's 32-bit offsets. */
static bool reaches(uint64_t v, uint64_t base)
{
	int64_t d = (int64_t)(v - base);

	return d >= INT32_MIN && d <= INT32_MAX;
}

int fl_unwind_of_ehframe(const void *eh_frame, size_t size, uint64_t code_lo,
			 uint64_t code_hi, const char *name, struct fl_unwind **out,
			 struct fl_diag *diag)
{
	uint64_t segbase = (uint64_t)(uintptr_t)eh_frame;
	struct fl_eh_fde *fdes;
	struct fl_unwind *u;
	long n;

	*out = NULL;
	n = fl_ehframe_fdes(eh_frame, size, segbase, code_lo, code_hi, &fdes, diag);
	if (n < 0)
		return (int)n;
	/* Every address libunwind may look up, [lo, hi), and every FDE. */
	if (size > INT32_MAX || !reaches(fdes[0].start, segbase) ||
	    !reaches(fdes[n - 1].end - 1, segbase)) {
		free(fdes);
		return fl_diag_say(diag, -EINVAL, FL_EHFRAME_SECTION ": the code is more than "
				   "2 GiB away from it, or it is 2 GiB or more (libunwind's index "
				   "holds 32-bit offsets)");
	}
	u = calloc(1, sizeof(*u));
	if (!u || !(u->table = calloc((size_t)n, sizeof(*u->table))) ||
	    !(u->name = strdup(name))) {
		free(fdes);
		fl_unwind_free(u);
		return -ENOMEM;
	}
	u->n = (size_t)n;
	u->segbase = segbase;
	u->lo = fdes[0].start;
	for (size_t i = 0; i < u->n; i++) {
		u->table[i] = (struct entry){
			.start_ip_offset = (int32_t)(fdes[i].start - segbase),
			.fde_offset = (int32_t)fdes[i].offset,
		};
		if (fdes[i].end > u->hi)
			u->hi = fdes[i].end;
	}
	free(fdes);
	*out = u;
	return 0;
}

int fl_unwind_of_jit(const struct fl_jit_reg *reg, struct fl_unwind **out,
		     struct fl_diag *diag)
{
	*out = NULL;
	if (!reg->eh_frame || !reg->eh_frame_size)
		return 0;
	return fl_unwind_of_ehframe(reg->eh_frame, reg->eh_frame_size, reg->code_start,
				    reg->code_start + reg->code_size,
				    reg->name ? reg->name : "jit", out, diag);
}

void fl_unwind_span(const struct fl_unwind *u, uint64_t *lo, uint64_t *hi)
{
	*lo = u->lo;
	*hi = u->hi;
}

int fl_unwind_register(struct fl_unwind *u)
{
	struct node *nd;

	if (!u)
		return 0;
	pthread_mutex_lock(&spare_lock);
	nd = spare;
	if (nd)
		spare = nd->spare;
	pthread_mutex_unlock(&spare_lock);
	if (!nd && !(nd = calloc(1, sizeof(*nd))))
		return -ENOMEM;
	/*
	 * Filled in before _U_dyn_register links it: lookups read the list
	 * without libunwind's lock, and x86-64 keeps these stores before the
	 * store that links the entry.
	 */
	memset(&nd->di, 0, sizeof(nd->di));
	nd->di.start_ip = u->lo;
	nd->di.end_ip = u->hi;
	nd->di.gp = 0;
	nd->di.format = UNW_INFO_FORMAT_REMOTE_TABLE;
	nd->di.u.rti.name_ptr = (unw_word_t)(uintptr_t)u->name;
	nd->di.u.rti.segbase = u->segbase;
	nd->di.u.rti.table_len = u->n * sizeof(*u->table) / sizeof(unw_word_t);
	nd->di.u.rti.table_data = (unw_word_t)(uintptr_t)u->table;
	fl_libunwind->dyn_register(&nd->di);
	/* Register states cached for these addresses were another code's. */
	fl_libunwind->flush_cache(fl_libunwind->local_addr_space, u->lo, u->hi);
	u->node = nd;
	return 0;
}

void fl_unwind_free(struct fl_unwind *u)
{
	if (!u)
		return;
	if (u->node) {
		fl_libunwind->dyn_cancel(&u->node->di);
		fl_libunwind->flush_cache(fl_libunwind->local_addr_space, u->lo, u->hi);
		pthread_mutex_lock(&spare_lock);
		u->node->spare = spare;
		spare = u->node;
		pthread_mutex_unlock(&spare_lock);
	}
	free(u->table);
	free(u->name);
	free(u);
}
