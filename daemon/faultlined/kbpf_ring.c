/* SPDX-License-Identifier: MIT */
/* The eBPF program's ring buffer: see kbpf_ring.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/libbpf.h>

#include "faultline.skel.h"

#include "dlog.h"
#include "kbpf_load.h"
#include "kbpf_ring.h"
#include "procs.h"

static struct ring_buffer *rb;
static uint64_t samples_received;

/*
 * Samples of a pid the daemon does not know yet: a child the program
 * registered at its fork, which sends its HELLO without waiting and may
 * fault before the daemon reads it.  Kept for it
 * until it registers, for ORPHAN_TICKS ticks at most, MAX_ORPHANS pids.
 */
#define MAX_ORPHANS 1024
#define ORPHAN_TICKS 4
static struct orphan {
	pid_t pid;
	struct fld_ksamples s;
	unsigned ticks;
} *orphans;
static size_t num_orphans;

static struct fld_ksamples *orphan_of(pid_t pid)
{
	struct orphan *grown;

	for (size_t i = 0; i < num_orphans; i++)
		if (orphans[i].pid == pid)
			return &orphans[i].s;
	if (num_orphans == MAX_ORPHANS)
		return NULL;
	grown = realloc(orphans, (num_orphans + 1) * sizeof(*orphans));
	if (!grown)
		return NULL;
	orphans = grown;
	memset(&orphans[num_orphans], 0, sizeof(*orphans));
	orphans[num_orphans].pid = pid;
	return &orphans[num_orphans++].s;
}

void fld_kring_adopt(struct fld_kproc *k)
{
	for (size_t i = 0; i < num_orphans; i++) {
		if (orphans[i].pid == k->pid) {
			k->samples = orphans[i].s;
			orphans[i] = orphans[--num_orphans];
			return;
		}
	}
}

void fld_kring_age(void)
{
	size_t kept = 0;

	for (size_t i = 0; i < num_orphans; i++)
		if (++orphans[i].ticks < ORPHAN_TICKS)
			orphans[kept++] = orphans[i];
	num_orphans = kept;
}

/* Where pid's samples go: its registration's view, else an orphan's. */
static struct fld_ksamples *samples_of(pid_t pid)
{
	struct fld_proc *p = fld_proc_find_live(pid);
	struct fld_kproc *k;

	if (!p)
		return orphan_of(pid);
	k = fld_kproc_of(p);
	return k ? &k->samples : NULL;
}

static int on_sample(void *ctx, void *data, size_t size)
{
	const struct fl_sample *s = data;
	struct fld_ksamples *k;

	(void)ctx;
	samples_received++;
	if (size < sizeof(*s))
		return 0;
	k = samples_of((pid_t)s->tgid);
	if (!k)
		return 0;
	if (s->kind == FL_SAMPLE_FAULT) {
		k->fault_samples++;
	} else if (s->kind == FL_SAMPLE_SIGNAL) {
		k->signal_samples++;
		k->recent[k->next_recent] = (struct fld_ksample){
			.time_ns = s->time_ns, .tid = s->tid, .sig = s->sig, .code = s->code,
			.ip = s->ip, .addr = s->addr,
		};
		k->next_recent = (k->next_recent + 1) % FLD_KRECENT;
		if (k->nrecent < FLD_KRECENT)
			k->nrecent++;
	}
	return 0;
}

static void on_ring_readable(void *ctx)
{
	int n;

	(void)ctx;
	if (!rb)
		return;
	n = ring_buffer__consume(rb);
	if (n < 0)
		fld_warn("eBPF ring buffer: %s", strerror(-n));
}

int fld_kring_start(struct fld_loop *loop)
{
	rb = ring_buffer__new(bpf_map__fd(fld_kskel()->maps.fl_samples), on_sample, NULL, NULL);
	return rb ? fld_loop_watch(loop, ring_buffer__epoll_fd(rb), on_ring_readable, NULL)
		  : -errno;
}

void fld_kring_stop(void)
{
	ring_buffer__free(rb);
	rb = NULL;
}

void fld_kring_read(void)
{
	on_ring_readable(NULL);
}

uint64_t fld_kring_received(void)
{
	return samples_received;
}
