/* SPDX-License-Identifier: MIT */
/*
 * The eBPF program's ring buffer (kbpf_ring.c): its samples (page faults,
 * fault signals) go to their process's view, read when the loop sees the
 * buffer readable and every tick.  Samples of a pid the daemon does not
 * know yet (a child the program registered at its fork, whose HELLO is
 * still on its way) wait for it a few ticks.  Loop thread only.
 */
#ifndef FLD_KBPF_RING_H
#define FLD_KBPF_RING_H

#include <stdint.h>

#include "kbpf_procs.h"
#include "loop.h"

/* Watches the loaded program's ring buffer on loop.  Returns 0 or -errno. */
int fld_kring_start(struct fld_loop *loop);
void fld_kring_stop(void);
/* Reads what the buffer holds. */
void fld_kring_read(void);
/* A tick: the samples kept for a pid that never registered are forgotten. */
void fld_kring_age(void);
/* Hands the samples kept so far for k's pid (before it registered) to k. */
void fld_kring_adopt(struct fld_kproc *k);
/* The samples read since the program was loaded. */
uint64_t fld_kring_received(void);

#endif /* FLD_KBPF_RING_H */
