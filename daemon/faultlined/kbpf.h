/* SPDX-License-Identifier: MIT */
/*
 * faultlined's eBPF side: loads bpf/faultline.bpf.c when it can, mirrors
 * the registered processes and their faulting PCs into the program's maps,
 * consumes its ring buffer from the event loop, and answers what the kernel
 * counted for a process and each of its sites.  kbpf.c starts, stops and
 * ticks the parts, each in a file of its own:
 *   kbpf_load.c    loading, and whether the daemon may (capabilities)
 *   kbpf_ring.c    the ring buffer's samples
 *   kbpf_mirror.c  the registered processes and their sites in the maps
 *   kbpf_view.c    snapshots of the maps, and the kernel's count of a site
 *   kbpf_json.c    what the kernel counted, as JSON
 *   kbpf_freeze.c  exited processes: their views frozen, their entries purged
 *   kbpf_procs.c   the eBPF side's own state of the processes and modules
 *
 * Loop thread only, like the rest of the daemon.
 */
#ifndef FLD_KBPF_H
#define FLD_KBPF_H

#include <stdbool.h>

#include "loop.h"

/*
 * Loads and attaches the program unless !wanted, and watches its ring
 * buffer on loop.  When it cannot (no CAP_BPF and CAP_PERFMON, no BTF,
 * ...) it says why once, at info level, and the daemon goes on
 * without it.  Returns true when the program runs.
 */
bool fld_bpf_start(struct fld_loop *loop, bool wanted);
void fld_bpf_stop(void);
/* Once a tick: reads the ring buffer, forgets inherited registrations nobody claimed, purges. */
void fld_bpf_tick(void);

#endif /* FLD_KBPF_H */
