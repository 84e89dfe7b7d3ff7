/* SPDX-License-Identifier: MIT */
/*
 * Exited processes in the eBPF program's maps (kbpf_freeze.c): at the tick
 * after a process exits, its view is read once more and frozen (its sites'
 * counts, its fault signals, at most MAX_SIGNALS entries), and then its
 * slots in fl_faults are marked dead and its fl_signals entries deleted,
 * with one walk of each map for every pid that went in that tick.  Loop
 * thread only.
 */
#ifndef FLD_KBPF_FREEZE_H
#define FLD_KBPF_FREEZE_H

#include <stdbool.h>
#include <sys/types.h>

/* pid's map entries go at the next tick (fld_kfreeze_tick). */
void fld_kpurge_later(pid_t pid);
/* Whether pid's map entries wait to go. */
bool fld_kpurging(pid_t pid);
/* Freezes the views of the processes that exited, then purges the pids' entries. */
void fld_kfreeze_tick(void);
/* Forgets the pids waiting (the program is unloaded). */
void fld_kfreeze_stop(void);

#endif /* FLD_KBPF_FREEZE_H */
