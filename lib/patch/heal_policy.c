/* SPDX-License-Identifier: MIT */
/*
 * The heal policy (fl_heal_policy_set in heal_policy.h): the healer
 * thread, which heals the sites the signal handler marked wanted
 * (lib/dispatch/heal_note.c: `after` failures within the window), and
 * unheals the healed sites that have been quiet for unheal_after seconds.
 * Healing happens here, in a thread of faultline's own, never in signal
 * context.
 */
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <faultline/dispatch.h>
#include <faultline/patch.h>

#include "core/log.h"
#include "core/workers.h"
#include "dispatch/dispatch.h"
#include "format/diag.h"
#include "patch/heal.h"
#include "patch/heal_policy.h"
#include "patch/internal.h"
#include "proto/proto.h"
#include "table/table.h"

static pthread_mutex_t policy_lock = PTHREAD_MUTEX_INITIALIZER;
static bool running;
static _Atomic uint32_t unheal_after_s;
/*
 * The process set its own threshold, its own quiet time (fl_init): the
 * daemon's defaults (FL_HEAL_DEFAULT) do not replace them.
 */
static bool own_after, own_quiet;

/*
 * Heals the wanted sites, those wanted at once in one batch
 * (fl_sites_heal).  Returns how many were wanted.
 */
static size_t heal_wanted(void)
{
	size_t n = 0, cap = 0, words = (fl_heal_trigger.slots + 63) / 64;
	uint64_t *pcs = NULL;
	int *results;

	for (size_t w = 0; w < words; w++) {
		/* Acquire: pairs with the handler's release of the bit. */
		uint64_t bits = atomic_load_explicit(&fl_heal_trigger.wanted[w], memory_order_relaxed) ?
			atomic_exchange_explicit(&fl_heal_trigger.wanted[w], 0, memory_order_acquire) : 0;

		while (bits) {
			uint32_t slot = (uint32_t)(w * 64 + (size_t)__builtin_ctzll(bits));
			uint64_t pc = fl_counters_site_pc(slot);
			struct fl_site_entry site;

			bits &= bits - 1;
			/*
			 * The site table is in the shared region, which faultlined
			 * can write: the PC must be a registered site of this slot.
			 */
			if (!pc || fl_table_sites_in(pc, pc + 1, &site, 1) != 1 || site.counter != slot)
				continue;
			if (n == cap) {
				size_t more = cap ? 2 * cap : 64;
				uint64_t *p = realloc(pcs, more * sizeof(*p));

				if (!p) {
					fl_log(FL_LOG_WARN, "healing: out of memory for %zu sites", more);
					continue;	/* the site is wanted again at its next failure */
				}
				pcs = p;
				cap = more;
			}
			pcs[n++] = pc;
		}
	}
	results = n ? calloc(n, sizeof(*results)) : NULL;
	if (n && (!results || fl_sites_heal(pcs, n, results) != 0))
		fl_log(FL_LOG_WARN, "healing %zu sites: %s", n, results ? "the patch lock failed" :
		       "out of memory");
	for (size_t i = 0; results && i < n; i++)
		if (results[i] && results[i] != -EOPNOTSUPP)
			fl_log(FL_LOG_WARN, "healing 0x%llx: %s", (unsigned long long)pcs[i],
			       strerror(-results[i]));
	free(results);
	free(pcs);
	return n;
}

static void *healer(void *arg)
{
	(void)arg;
	while (!fl_workers_stopping()) {
		/* Acquire: pairs with the handler's release increment, after its bit. */
		uint32_t bell = atomic_load_explicit(&fl_heal_trigger.bell, memory_order_acquire);
		uint32_t quiet = atomic_load_explicit(&unheal_after_s, memory_order_relaxed);
		struct timespec tick = { 1, 0 };
		uint32_t round;

		/* Seq_cst: before the bits are read (the handler's load pairs with it). */
		round = atomic_fetch_add_explicit(&fl_heal_trigger.started, 1, memory_order_seq_cst) + 1;
		heal_wanted();
		/* Release: the healing before the waiting threads see the round end. */
		atomic_store_explicit(&fl_heal_trigger.done, round, memory_order_release);
		syscall(SYS_futex, &fl_heal_trigger.done, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
		if (quiet)
			fl_heal_unheal_quiet(quiet);
		/* Until the bell moves from bell, or a second for the quiet ones. */
		syscall(SYS_futex, &fl_heal_trigger.bell, FUTEX_WAIT_PRIVATE, bell, &tick, NULL, 0);
	}
	return NULL;
}

/* A ring of the bell, for nothing: the healer looks at the stop. */
static void healer_wake(void)
{
	/* Pairs with the healer's acquire load of the bell. */
	atomic_fetch_add_explicit(&fl_heal_trigger.bell, 1, memory_order_release);
	syscall(SYS_futex, &fl_heal_trigger.bell, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
}

static struct fl_worker healer_worker = {
	.name = "fl-healer", .stack = 256 * 1024, .main = healer, .wake = healer_wake,
};

/* Starts the healer thread (a worker: core/workers.h), signals blocked.  Under policy_lock. */
static int start(void)
{
	int err;

	if (running)
		return 0;
	/* Signals blocked, outside the handshake from before this returns. */
	err = fl_worker_start(&healer_worker);
	if (err && err != -ENOSPC)
		return err;
	running = true;
	return 0;
}

/* The per-slot watch and wanted bits, once (anonymous memory, touched as used). */
static int trigger_memory(void)
{
	uint32_t slots = fl_dispatch.max_sites;
	size_t watch = (size_t)slots * sizeof(struct fl_heal_watch);
	size_t wanted = ((size_t)slots + 63) / 64 * sizeof(uint64_t);
	void *p;

	if (fl_heal_trigger.watch)
		return 0;
	p = mmap(NULL, watch + wanted, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	fl_heal_trigger.watch = p;
	fl_heal_trigger.wanted = (_Atomic uint64_t *)((char *)p + watch);
	fl_heal_trigger.slots = slots;
	return 0;
}

/* Sets the policy.  Under policy_lock. */
static int set_locked(uint32_t after, uint32_t window_s, uint32_t unheal_after,
		      struct fl_diag *diag)
{
	int err = 0;

	if (after || unheal_after) {
		err = fl_patch_enable(diag);
		if (!err) {
			err = trigger_memory();
			if (err)
				fl_diag_say(diag, err, "heal policy: mmap: %s", strerror(-err));
		}
		if (!err) {
			err = start();
			if (err)
				fl_diag_say(diag, err, "heal policy: the healer thread: %s",
					    strerror(-err));
		}
	}
	if (err)
		return err;
	atomic_store_explicit(&unheal_after_s, unheal_after, memory_order_relaxed);
	atomic_store_explicit(&fl_heal_trigger.window_s, window_s, memory_order_relaxed);
	/* Release: the memory above before the handler acquires after. */
	atomic_store_explicit(&fl_heal_trigger.after, after, memory_order_release);
	/* The healer looks at the quiet sites with the new setting now. */
	atomic_fetch_add_explicit(&fl_heal_trigger.bell, 1, memory_order_release);
	syscall(SYS_futex, &fl_heal_trigger.bell, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	return 0;
}

int fl_heal_policy_set(uint32_t after, uint32_t window_s, uint32_t unheal_after,
		       struct fl_diag *diag)
{
	int err;

	pthread_mutex_lock(&policy_lock);
	err = set_locked(after, window_s, unheal_after, diag);
	if (!err) {
		own_after |= after != 0;
		own_quiet |= unheal_after != 0;
	}
	pthread_mutex_unlock(&policy_lock);
	return err;
}

static uint64_t policy_arg(void)
{
	return atomic_load_explicit(&fl_heal_trigger.after, memory_order_relaxed) |
	       (uint64_t)atomic_load_explicit(&fl_heal_trigger.window_s, memory_order_relaxed) << 32;
}

int fl_heal_policy_request(uint64_t arg, uint64_t *before, struct fl_diag *diag)
{
	bool is_default = arg & FL_HEAL_DEFAULT;
	uint32_t after = (uint32_t)arg, window = (uint32_t)(arg >> 32) & 0x7fffffffu;
	int err = 0;

	if (!after && window)
		return fl_diag_say(diag, -EINVAL, "a heal window (%u s) without a count", window);
	pthread_mutex_lock(&policy_lock);
	*before = policy_arg();
	if (!(is_default && own_after))
		err = set_locked(after, after ? window : 0,
				 atomic_load_explicit(&unheal_after_s, memory_order_relaxed), diag);
	pthread_mutex_unlock(&policy_lock);
	return err;
}

int fl_heal_policy_unheal_after(uint64_t arg, uint32_t *before, struct fl_diag *diag)
{
	bool is_default = arg & FL_HEAL_DEFAULT;
	int err = 0;

	arg &= ~FL_HEAL_DEFAULT;
	*before = atomic_load_explicit(&unheal_after_s, memory_order_relaxed);
	if (arg > UINT32_MAX)
		return fl_diag_say(diag, -EINVAL, "a quiet time of %llu s", (unsigned long long)arg);
	pthread_mutex_lock(&policy_lock);
	*before = atomic_load_explicit(&unheal_after_s, memory_order_relaxed);
	if (!(is_default && own_quiet))
		err = set_locked(atomic_load_explicit(&fl_heal_trigger.after, memory_order_relaxed),
				 atomic_load_explicit(&fl_heal_trigger.window_s, memory_order_relaxed),
				 (uint32_t)arg, diag);
	pthread_mutex_unlock(&policy_lock);
	return err;
}

void fl_heal_policy_get(uint32_t *after, uint32_t *window_s, uint32_t *unheal_after)
{
	*after = atomic_load_explicit(&fl_heal_trigger.after, memory_order_relaxed);
	*window_s = atomic_load_explicit(&fl_heal_trigger.window_s, memory_order_relaxed);
	*unheal_after = atomic_load_explicit(&unheal_after_s, memory_order_relaxed);
}

/* fork: the child has no healer thread; it gets one of its own if a policy is on. */
static void fork_prepare(void)
{
	pthread_mutex_lock(&policy_lock);
}

static void fork_parent(void)
{
	pthread_mutex_unlock(&policy_lock);
}

static void fork_child(void)
{
	bool was = running;

	running = false;
	if (was && start() != 0)
		fl_log(FL_LOG_WARN, "heal policy: no healer thread in the forked child");
	pthread_mutex_unlock(&policy_lock);
}

static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void atfork_register(void)
{
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}

int fl_heal_policy_init(void)
{
	return pthread_once(&atfork_once, atfork_register) ? -EAGAIN : 0;
}

struct over_ctx {
	uint64_t over;
	uint64_t *pcs;
	size_t n, cap;
	int err;
};

static int collect(const struct fl_site *s, void *arg)
{
	struct over_ctx *c = arg;

	if (s->faults <= c->over)
		return 0;
	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 64;
		uint64_t *v = realloc(c->pcs, cap * sizeof(*v));

		if (!v) {
			c->err = -ENOMEM;
			return 1;
		}
		c->pcs = v;
		c->cap = cap;
	}
	c->pcs[c->n++] = s->faulting_pc;
	return 0;
}

int fl_heal_over(uint64_t over, uint32_t *healed, uint32_t *unhealable)
{
	struct over_ctx c = { .over = over };
	int err;

	*healed = *unhealable = 0;
	err = fl_site_for_each(collect, &c);
	if (c.err)
		err = c.err;
	if (!err && c.n) {
		int *results = calloc(c.n, sizeof(*results));

		err = results ? fl_sites_heal(c.pcs, c.n, results) : -ENOMEM;
		for (size_t i = 0; i < c.n && !err; i++) {
			if (results[i] == 0)
				(*healed)++;
			else if (results[i] == -EOPNOTSUPP)
				(*unhealable)++;
			else
				err = results[i];
		}
		free(results);
	}
	free(c.pcs);
	return err < 0 ? err : 0;
}
