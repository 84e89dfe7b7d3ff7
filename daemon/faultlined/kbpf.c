/* SPDX-License-Identifier: MIT */
/* faultlined's eBPF side: see kbpf.h. */
#include "dlog.h"
#include "kbpf.h"
#include "kbpf_freeze.h"
#include "kbpf_load.h"
#include "kbpf_mirror.h"
#include "kbpf_procs.h"
#include "kbpf_ring.h"
#include "kbpf_view.h"

bool fld_bpf_start(struct fld_loop *loop, bool wanted)
{
	int err;

	if (!wanted) {
		fld_info("eBPF: off (--no-bpf)");
		return false;
	}
	/* The state of a process or module goes with it. */
	fld_kprocs_init();
	if (!fld_kload_start()) {
		fld_bpf_stop();
		return false;
	}
	err = fld_kring_start(loop);
	if (err) {
		fld_kring_stop();
		fld_kload_failed(err);
		fld_bpf_stop();
		return false;
	}
	fld_info("eBPF: faultline.bpf.o attached (page_fault_user, signal_deliver, "
		 "sched_process_fork)");
	return true;
}

void fld_bpf_stop(void)
{
	fld_kview_unshare();
	fld_kring_stop();
	fld_kload_stop();
	fld_kfreeze_stop();
	fld_kmirror_stop();
}

void fld_bpf_tick(void)
{
	if (!fld_bpf_on())
		return;
	/*
	 * The ring buffer is read when its epoll fd wakes the loop, and every
	 * tick as well: twice on a loaded machine, check-daemon-e2e's kernel
	 * group saw samples stay unread while the daemon idled, its watch armed
	 * (cause not found; not seen again in 20 runs).  A missed wakeup costs
	 * at most a tick.
	 */
	fld_kring_read();
	fld_kmirror_tick();
	fld_kring_age();
	fld_kfreeze_tick();
}
