/* SPDX-License-Identifier: MIT */
/*
 * Registering a process with the eBPF program (user space): its entry in
 * fl_registered and its bit in fl_tgid_bits, the filter page_fault_user
 * and signal_deliver test first (faultline_bpf.h); and telling the program
 * that fl_sites changed (fl_bpf_sites_changed).  Every writer of
 * fl_registered goes through these, so that the bit is set exactly while
 * the entry exists: set after the entry is added, cleared before it is
 * deleted (the fork program does the same for an inherited registration).
 * Include after faultline.skel.h.  Not thread-safe for one tgid; the bit
 * itself is changed atomically (other tgids share its word, and the fork
 * program writes it too).
 */
#ifndef FL_BPF_REGISTERED_H
#define FL_BPF_REGISTERED_H

#include <errno.h>

#include <linux/types.h>
#include <bpf/libbpf.h>

#include "faultline_bpf.h"

/*
 * Adds or replaces tgid's entry (reg) and sets its bit.  Returns 0, or
 * -errno from the map update (errno set too), -ERANGE for a tgid past
 * FL_TGID_LIMIT.
 */
static inline int fl_bpf_register(struct faultline_bpf *skel, __u32 tgid,
				  const struct fl_registration *reg)
{
	if (tgid >= FL_TGID_LIMIT) {
		errno = ERANGE;
		return -ERANGE;
	}
	if (bpf_map__update_elem(skel->maps.fl_registered, &tgid, sizeof(tgid), reg,
				 sizeof(*reg), BPF_ANY))
		return -errno;
	/* The program loads the word plainly: a fault after this is counted. */
	__atomic_fetch_or(&skel->bss->fl_tgid_bits[tgid / 64], 1ull << (tgid % 64),
			  __ATOMIC_SEQ_CST);
	return 0;
}

/* Clears tgid's bit and deletes its entry.  Returns 0 or -errno (-ENOENT). */
static inline int fl_bpf_unregister(struct faultline_bpf *skel, __u32 tgid)
{
	if (tgid < FL_TGID_LIMIT)
		__atomic_fetch_and(&skel->bss->fl_tgid_bits[tgid / 64], ~(1ull << (tgid % 64)),
				   __ATOMIC_SEQ_CST);
	if (bpf_map__delete_elem(skel->maps.fl_registered, &tgid, sizeof(tgid), 0))
		return -errno;
	return 0;
}

/*
 * Tells the program that fl_sites changed: call it after adding or
 * deleting entries (one call for a batch), so that the faults that follow
 * are classified against the map as it is now.  The map updates before it
 * are system calls, done before this store.  Pairs with the program's load
 * of the generation before its fl_sites lookup (is_site in faultline.bpf.c;
 * x86 does not reorder a load with an older one): a fault that read the
 * new generation finds the new entries, one that read the old one is
 * counted as of before the change, and its entry asks fl_sites again at
 * its next fault.
 */
static inline void fl_bpf_sites_changed(struct faultline_bpf *skel)
{
	__atomic_fetch_add(&skel->bss->fl_sites_gen, 1, __ATOMIC_SEQ_CST);
}

#endif /* FL_BPF_REGISTERED_H */
