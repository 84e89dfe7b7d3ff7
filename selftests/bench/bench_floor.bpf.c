// SPDX-License-Identifier: GPL-2.0
/*
 * bench_bpf's floor: a program at faultline's page fault attach point that
 * does nothing.  What a page fault costs with it attached is the kernel's
 * own dispatch to any program there (the tracepoint, __bpf_trace_run), which
 * no program can go below.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

SEC("tp_btf/page_fault_user")
int BPF_PROG(fl_bench_floor, unsigned long addr, struct pt_regs *regs, unsigned long err)
{
	return 0;
}
