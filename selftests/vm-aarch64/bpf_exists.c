// SPDX-License-Identifier: MIT
/*
 * bpf(2) exists (an array map is created, or EPERM; never ENOSYS), the
 * kernel has BTF (/sys/kernel/btf/vmlinux), and libbpf's probes find the
 * program types the daemon needs on arm64: perf_event (user page faults
 * through PERF_COUNT_SW_PAGE_FAULTS: DESIGN.md, "arm64"), tracing
 * (tp_btf) and kprobe.  Linked with Debian's arm64 libbpf, so the guest
 * also proves that a program's libraries (libbpf, libelf, libz) came along.
 */
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common.h"

static const char *probe(enum bpf_prog_type type)
{
	int r = libbpf_probe_bpf_prog_type(type, NULL);

	return r == 1 ? "yes" : r == 0 ? "no" : strerror(-r);
}

int main(void)
{
	union bpf_attr attr;
	struct utsname u;
	int fd;

	t_uname(&u);
	memset(&attr, 0, sizeof(attr));
	attr.map_type = BPF_MAP_TYPE_ARRAY;
	attr.key_size = 4;
	attr.value_size = 4;
	attr.max_entries = 1;
	fd = syscall(__NR_bpf, BPF_MAP_CREATE, &attr, sizeof(attr));
	t_check(fd >= 0 || errno != ENOSYS, "bpf: ENOSYS (no CONFIG_BPF_SYSCALL)");
	if (fd < 0) {
		t_check(errno == EPERM, "bpf(BPF_MAP_CREATE): %s", strerror(errno));
		printf("bpf: EPERM (exists; this caller may not use it)\n");
		printf("PASS bpf_exists\n");
		return 0;
	}
	close(fd);
	printf("bpf: array map created; libbpf %s; BTF %s; program types: perf_event %s, "
	       "tracing %s, kprobe %s\n", libbpf_version_string(),
	       access("/sys/kernel/btf/vmlinux", R_OK) == 0 ? "yes" : "no",
	       probe(BPF_PROG_TYPE_PERF_EVENT), probe(BPF_PROG_TYPE_TRACING),
	       probe(BPF_PROG_TYPE_KPROBE));
	t_check(access("/sys/kernel/btf/vmlinux", R_OK) == 0, "no /sys/kernel/btf/vmlinux");
	t_check(libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_PERF_EVENT, NULL) == 1,
		"perf_event programs do not load");
	printf("PASS bpf_exists\n");
	return 0;
}
