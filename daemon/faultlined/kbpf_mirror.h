/* SPDX-License-Identifier: MIT */
/*
 * The registered processes, mirrored into the eBPF program's maps
 * (kbpf_mirror.c):
 *   - fl_registered[pid] = { FL_REG_INHERIT } at HELLO, before WELCOME is
 *     sent: a process registered synchronously (fl_init waits for WELCOME)
 *     is counted before it can fault again;
 *   - fl_sites[(pid, faulting PC)] at MODULE_ADD, removed at MODULE_REMOVE
 *     (the first ones of the module that fit: a user other than root holds
 *     at most a quarter of the map, so that its 2,000,000 sites leave room
 *     for the others');
 *   - at exit, the registration and the sites go at once; the rest of the
 *     process's entries at the next tick (kbpf_freeze.h).
 * A child forked by a registered process is registered by the program
 * itself (FL_REG_INHERITED); when it does not register with the daemon
 * within INHERIT_TICKS ticks (it exec'd something else, or has no agent),
 * or is gone, the tick forgets it.
 *
 * Each function does nothing when the program does not run.  Loop thread only.
 */
#ifndef FLD_KBPF_MIRROR_H
#define FLD_KBPF_MIRROR_H

#include <stdbool.h>

#include "procs.h"

/*
 * A process registered (HELLO): counted from now on.  first: its HELLO had
 * FL_HELLO_FIRST.  Its counts are complete from the start when the
 * program counted it already, from its fork by a registered parent on;
 * else only once the process says COMPLETE (fld_bpf_proc_complete).
 */
void fld_bpf_proc_add(struct fld_proc *p, bool first);
/* Whether the kernel counts p (or counted it, for an exited p): it has a kernel view. */
bool fld_bpf_proc_counted(const struct fld_proc *p);
/* p registers again after it exited: the kernel view of its last registration goes. */
void fld_bpf_proc_again(struct fld_proc *p);
/* COMPLETE: p ran nothing since its FL_HELLO_FIRST HELLO (proto.h). */
void fld_bpf_proc_complete(struct fld_proc *p);
/* Its module's faulting PCs, for the implicit/stray split of page faults. */
void fld_bpf_sites_add(const struct fld_proc *p, struct fld_module *m);
void fld_bpf_sites_remove(const struct fld_proc *p, struct fld_module *m);
/*
 * The process is gone: its registration and sites leave the maps, and its
 * kernel view is frozen at the next tick (every site's count too).
 */
void fld_bpf_proc_exit(struct fld_proc *p);

/* Once a tick: forgets the inherited registrations nobody claimed. */
void fld_kmirror_tick(void);
/* Forgets the inherited registrations (the program is unloaded). */
void fld_kmirror_stop(void);

#endif /* FLD_KBPF_MIRROR_H */
