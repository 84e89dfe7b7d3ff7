/* SPDX-License-Identifier: MIT */
/*
 * Loading the eBPF program (loader.c): the capability check, and the
 * skeleton's open, load and attach.  One loader for faultlined (kbpf_load.c)
 * and faultline profile (cmd_profile.c); what each does with the maps
 * afterwards is its own.  Not thread-safe (libbpf_set_print is global).
 */
#ifndef FL_BPF_LOADER_H
#define FL_BPF_LOADER_H

#include <stdbool.h>
#include <stdint.h>

#include <bpf/libbpf.h>

struct faultline_bpf;	/* faultline.skel.h */

/* The capabilities loading and attaching need, as missing ones. */
#define FL_BPF_NEED_BPF		1u	/* CAP_BPF */
#define FL_BPF_NEED_PERFMON	2u	/* CAP_PERFMON */

/*
 * Which of CAP_BPF and CAP_PERFMON this process lacks (CAP_SYS_ADMIN
 * implies both, and is what kernels before 5.8 want): FL_BPF_NEED_* bits,
 * 0 when it may load and attach tracing programs.  Checked before loading,
 * so that a message can name what is missing instead of libbpf's EPERM.
 * Returns 0 with *missing set, or -errno when the capabilities cannot be
 * read (capget).
 */
int fl_bpf_missing_caps(unsigned *missing);

/* The step of fl_bpf_load that failed. */
enum fl_bpf_step {
	FL_BPF_OPEN = 1,
	FL_BPF_LOAD,
	FL_BPF_ATTACH,
};

struct fl_bpf_load_opts {
	uint32_t sample_every;		/* rodata: a page fault sample in N per CPU, 0 none */
	bool profile_all;		/* rodata: count every process, not the registered ones */
	libbpf_print_fn_t print;	/* set with libbpf_set_print first, unless NULL */
};

/*
 * Opens the skeleton, sets its read-only data from o, loads and attaches
 * it.  Returns 0 with *skel set (faultline_bpf__destroy frees it), or
 * -errno with *failed set to the step that failed and nothing left loaded.
 */
int fl_bpf_load(const struct fl_bpf_load_opts *o, struct faultline_bpf **skel,
		enum fl_bpf_step *failed);

#endif /* FL_BPF_LOADER_H */
