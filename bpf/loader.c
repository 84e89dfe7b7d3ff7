// SPDX-License-Identifier: MIT
/* Loading the eBPF program: see loader.h. */
#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/capability.h>

#include "faultline.skel.h"
#include "loader.h"

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

int fl_bpf_missing_caps(unsigned *missing)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];

	memset(data, 0, sizeof(data));
	if (syscall(SYS_capget, &hdr, data) != 0)
		return -errno;
#define HAS(cap) (!!(data[(cap) / 32].effective & (1u << ((cap) % 32))))
	*missing = 0;
	if (!HAS(CAP_SYS_ADMIN)) {
		if (!HAS(CAP_BPF))
			*missing |= FL_BPF_NEED_BPF;
		if (!HAS(CAP_PERFMON))
			*missing |= FL_BPF_NEED_PERFMON;
	}
#undef HAS
	return 0;
}

int fl_bpf_load(const struct fl_bpf_load_opts *o, struct faultline_bpf **skel,
		enum fl_bpf_step *failed)
{
	struct faultline_bpf *s;
	int err;

	if (o->print)
		libbpf_set_print(o->print);
	s = faultline_bpf__open();
	if (!s) {
		*failed = FL_BPF_OPEN;
		return errno ? -errno : -ENOMEM;
	}
	s->rodata->sample_every = o->sample_every;
	s->rodata->profile_all = o->profile_all;
	err = faultline_bpf__load(s);
	if (err) {
		*failed = FL_BPF_LOAD;
	} else {
		err = faultline_bpf__attach(s);
		if (err)
			*failed = FL_BPF_ATTACH;
	}
	if (err) {
		faultline_bpf__destroy(s);
		/* libbpf 1.x returns -errno; keep a positive one's sign right too. */
		return err < 0 ? err : -err;
	}
	*skel = s;
	return 0;
}
