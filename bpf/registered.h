/* SPDX-License-Identifier: MIT */
/*
 * Registering a process with the eBPF program (user space): its entry in
 * fl_registered and its bit in fl_tgid_bits, the filter page_fault_user
 * and signal_deliver test first (faultline_bpf.h).  Every writer of
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

#endif /* FL_BPF_REGISTERED_H */
