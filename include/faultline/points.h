/* SPDX-License-Identifier: MIT */
/*
 * Patch points and stack map records: rewriting what the compiler reserved
 * for the runtime, inside the process, while other threads run it.
 *
 * A record is one entry of a .llvm_stackmaps section: an
 * llvm.experimental.patchpoint (its record's address is the first byte of
 * the region it reserved: numBytes of nops, or movabsq $target, %r11;
 * callq *%r11 then nops), or an llvm.experimental.stackmap (its address is
 * where its shadow starts: numShadowBytes that the runtime may overwrite).
 * faultline knows the records of every loaded module with a stack map and
 * of every JIT registration (fl_jit_register) that gave one.
 *
 * A record is named by its ID when that is unique in the process, or by
 * its address (pc): pass pc NULL to name it by id, a pc to name it by
 * address (id is then ignored).
 *
 * The extent of a region or shadow is the size the runtime declared
 * (fl_patchpoint_declare, fl_stackmap_declare) or else derived from the
 * code with Zydis: for a patch point, the optional movabsq/callq pair and
 * the nops that follow it; for a shadow, the nops at its address (LLVM
 * pads a shadow with nops only where code does not fill it: declare the
 * size when the shadow holds instructions).
 *
 * Every change goes through fl_patch_text (patch.h), so fl_patch_enable
 * must have succeeded.  A change that keeps every instruction boundary of
 * the region and changes one instruction uses the int3 protocol; any
 * other stops the threads and proves none is inside the region or returns
 * into it (except at its first byte), or it is refused with -EBUSY.
 *
 * All functions are thread-safe (serialized with each other) and not
 * async-signal-safe.  They return 0 or -errno, with diag (may be NULL)
 * saying which record and why:
 *   -ENOENT    no record has this ID or address;
 *   -ENOTUNIQ  several records have this ID: name it by address;
 *   -E2BIG     a declared size over FL_POINT_MAX_SIZE;
 *   -ENOSPC    the bytes do not fit the region, the call does not fit the
 *              shadow (or its target is out of reach);
 *   -ESTALE    the region is not the expected bytes;
 *   and fl_patch_text's errors (-ENOTSUP, -EBUSY, -EACCES, ...).
 */
#ifndef FAULTLINE_POINTS_H
#define FAULTLINE_POINTS_H

#include <stddef.h>
#include <stdint.h>

#include <faultline/format.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The largest region or shadow faultline rewrites. */
#define FL_POINT_MAX_SIZE 256

enum {
	/* The size was declared by the runtime (else derived from the code). */
	FL_POINT_DECLARED = 1u << 0,
	/* The bytes differ from the compiled ones. */
	FL_POINT_CHANGED = 1u << 1,
};

/* A record's region or shadow, as fl_patchpoint_read and fl_stackmap_read see it. */
struct fl_point {
	size_t sz;		/* sizeof(struct fl_point) */
	uint64_t id;
	uint64_t pc;
	uint32_t size;		/* bytes of the region or shadow */
	uint32_t flags;		/* FL_POINT_* */
	uint8_t now[FL_POINT_MAX_SIZE];		/* the bytes there now */
	/*
	 * What the compiler emitted: the bytes faultline found there the first
	 * time it looked at the record (fl_patchpoint_reset restores them).
	 */
	uint8_t compiled[FL_POINT_MAX_SIZE];
};

/*
 * Declares the size of a patch point's region (the numBytes it was
 * compiled with).  Before the first write; a size that differs from an
 * earlier declaration is -EEXIST.
 */
int fl_patchpoint_declare(uint64_t id, const void *pc, size_t size, struct fl_diag *diag);

/* Fills *out (out->sz set by the caller) with the region. */
int fl_patchpoint_read(uint64_t id, const void *pc, struct fl_point *out, struct fl_diag *diag);

/*
 * Rewrites the whole region with bytes (len bytes, at most the region's
 * size), padded with nops.  When expect is not NULL, the region must be
 * those size bytes now (-ESTALE otherwise).
 */
int fl_patchpoint_write(uint64_t id, const void *pc, const void *bytes, size_t len,
			const void *expect, struct fl_diag *diag);

/* Restores the compiled bytes of the region. */
int fl_patchpoint_reset(uint64_t id, const void *pc, struct fl_diag *diag);

/* Declares the size of a stack map record's shadow (its numShadowBytes). */
int fl_stackmap_declare(uint64_t id, const void *pc, size_t shadow, struct fl_diag *diag);

/* Fills *out with the shadow. */
int fl_stackmap_read(uint64_t id, const void *pc, struct fl_point *out, struct fl_diag *diag);

/*
 * Writes, at the record's address, a call to target: callq rel32 when
 * target is within reach of it, else movabsq $target, %r11; callq *%r11.
 * The call must fit in the shadow.  The rest of the shadow is left as it
 * is: target must not return to the record (it is the runtime's entry
 * that rebuilds the frame).  A thread in a callee whose return address is
 * the record's address returns into the call.
 */
int fl_stackmap_invalidate(uint64_t id, const void *pc, const void *target,
			   struct fl_diag *diag);

#ifdef __cplusplus
}
#endif

#endif /* FAULTLINE_POINTS_H */
