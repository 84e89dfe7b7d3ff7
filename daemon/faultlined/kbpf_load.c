/* SPDX-License-Identifier: MIT */
/* Loading the eBPF program for faultlined: see kbpf_load.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "faultline.skel.h"
#include "faults.h"
#include "loader.h"

#include "dlog.h"
#include "kbpf_load.h"

#define SAMPLE_EVERY 64		/* one page fault sample in 64 per CPU */

static struct faultline_bpf *skel;
static struct fl_fault_slot *faults;	/* skel's fl_faults, mapped */
static char libbpf_last[256];

/* libbpf's messages are kept for the one line that says why loading failed. */
static int on_libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char line[sizeof(libbpf_last)];
	size_t n;

	if (level == LIBBPF_DEBUG)
		return 0;
	vsnprintf(line, sizeof(line), fmt, ap);
	n = strlen(line);
	while (n && line[n - 1] == '\n')
		line[--n] = 0;
	if (n) {
		memcpy(libbpf_last, line, n + 1);
		fld_debug("libbpf: %s", line);
	}
	return 0;
}

/* NULL when this process may load and attach tracing programs, else why not. */
static const char *cannot_load(char *why, size_t size)
{
	unsigned missing;
	int err = fl_bpf_missing_caps(&missing);

	if (err) {
		snprintf(why, size, "cannot read its capabilities: %s", strerror(-err));
		return why;
	}
	if (!missing)
		return NULL;
	snprintf(why, size, "faultlined runs as uid %u without CAP_BPF and CAP_PERFMON "
		 "(or CAP_SYS_ADMIN)", (unsigned)geteuid());
	return why;
}

bool fld_kload_start(void)
{
	enum fl_bpf_step step;
	char why[160];
	const char *no;
	int err;

	no = cannot_load(why, sizeof(why));
	if (no) {
		fld_info("eBPF: not loaded: %s; counting in the processes only", no);
		return false;
	}
	err = fl_bpf_load(&(struct fl_bpf_load_opts){ .sample_every = SAMPLE_EVERY,
						     .print = on_libbpf_print },
			  &skel, &step);
	if (err && step == FL_BPF_OPEN) {
		fld_info("eBPF: not loaded: open: %s; counting in the processes only",
			 strerror(-err));
		return false;
	}
	if (!err) {
		faults = fl_bpf_faults_map(skel->maps.fl_faults, true);
		if (!faults)
			err = -errno;
	}
	if (err) {
		fld_kload_failed(err);
		return false;
	}
	return true;
}

void fld_kload_failed(int err)
{
	fld_info("eBPF: not loaded: %s%s%s; counting in the processes only",
		 strerror(err < 0 ? -err : err), libbpf_last[0] ? ": libbpf: " : "", libbpf_last);
	fld_kload_stop();
}

void fld_kload_stop(void)
{
	fl_bpf_faults_unmap(faults);
	faults = NULL;
	faultline_bpf__destroy(skel);
	skel = NULL;
}

struct faultline_bpf *fld_kskel(void)
{
	return skel;
}

struct fl_fault_slot *fld_kfaults(void)
{
	return faults;
}

bool fld_bpf_on(void)
{
	return skel != NULL;
}
