/* SPDX-License-Identifier: MIT */
/*
 * Loading the eBPF program for faultlined (kbpf_load.c): whether it may
 * (capabilities), loading and attaching it through bpf/loader.c, and the
 * one line that says why not when it cannot.  Holds the skeleton the other
 * kbpf_*.c files read the maps through.  Loop thread only.
 */
#ifndef FLD_KBPF_LOAD_H
#define FLD_KBPF_LOAD_H

#include <stdbool.h>

struct faultline_bpf;

/*
 * Loads and attaches the program.  When it cannot (no CAP_BPF and
 * CAP_PERFMON, no BTF, ...) it says why once, at info level.  Returns
 * true when the program runs.
 */
bool fld_kload_start(void);
/*
 * The program is not used after all (err, a -errno, is why: its ring
 * buffer could not be watched, ...): says so, with libbpf's last message,
 * and unloads it.
 */
void fld_kload_failed(int err);
/* Unloads the program (nothing when it does not run). */
void fld_kload_stop(void);

/* The loaded program, or NULL when it does not run. */
struct faultline_bpf *fld_kskel(void);
/* Its fl_faults table, mapped writable (faults.h), or NULL when it does not run. */
struct fl_fault_slot *fld_kfaults(void);
/* Whether the program runs. */
bool fld_bpf_on(void);

#endif /* FLD_KBPF_LOAD_H */
