/* SPDX-License-Identifier: MIT */
/*
 * The shared region (docs/protocol.md): a memfd sealed against shrinking
 * and growing that holds the per-site counters (one 64-bit slot per
 * registered site, allocated to modules in blocks), the site table that
 * says which module owns each slot, and the request and completion rings.
 * The handler increments the counters; this file creates the region and
 * hands out and takes back blocks, under the registry lock.  The agent
 * (lib/agent/) passes the memfd to the daemon.
 *
 * The block of an unregistered module is not reused at once: it keeps its
 * site table entries and its final counts, marked RETIRED, until the
 * daemon marks them SAVED (its state file holds them); only then is it
 * cleared and reused.  So a module's final counts are in the region for
 * as long as the daemon may need them: a MODULE_REMOVE read late, a daemon
 * killed and restarted, a process that exited meanwhile (docs/protocol.md,
 * "Unregistered modules").  A process whose daemon never saves them
 * reuses the oldest blocks when it needs room, or beyond RETIRED_MAX.
 *
 * Where a memfd cannot be had (memfd_create denied by a seccomp filter, no
 * descriptor left), the region is anonymous memory: the handler counts all
 * the same, and the process does not register with a daemon.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/log.h"
#include "core/ownfd.h"
#include "proto/proto.h"
#include "table/table.h"

struct block {
	uint32_t base;
	uint32_t len;
};

static struct fl_ownfd region_fd = FL_OWNFD_NONE;
static void *region;
static struct fl_shm_layout layout;
static struct block *free_blocks;	/* sorted by base, coalesced */
static size_t num_free;
static struct block *retired;		/* unregistered modules' blocks, oldest first */
static size_t num_retired;
static uint64_t retired_sites;
static bool retired_warned;

/*
 * Sites kept RETIRED at most (1.25 MiB of site table and counters) before
 * the oldest are reused unsaved: a process without a daemon, or whose
 * daemon is gone for good, does not grow its region for ever.
 */
#define RETIRED_MAX 32768

static void reclaim(size_t n);

#define RING_ENTRIES 64

_Static_assert(sizeof(struct fl_shm_site) % sizeof(uint32_t) == 0 &&
	       offsetof(struct fl_shm_site, populations) % sizeof(uint32_t) == 0,
	       "populations: one word in every site entry");

_Static_assert(FL_DISPATCH_DIRTY_SLOTS == FL_SHM_DIRTY_SLOTS,
	       "the handler's dirty blocks are the region's");

/* Points the handler at the counters, populations and dirty summary of the region at p. */
static void point_handler(void *p, const struct fl_shm_layout *l)
{
	fl_dispatch.dirty = (_Atomic uint8_t *)((char *)p + l->dirty_offset);
	fl_dispatch.counters = (_Atomic uint64_t *)((char *)p + l->counters_offset);
	fl_dispatch.populations = (_Atomic uint32_t *)((char *)p + l->sites_offset +
						       offsetof(struct fl_shm_site, populations));
	fl_dispatch.populations_stride = sizeof(struct fl_shm_site) / sizeof(uint32_t);
}

/*
 * Creates, sizes, seals and maps a region for max_sites; no other state.
 * Without a memfd, *fd_out is none and the region anonymous memory.  With
 * at, it is mapped there, over what is there (MAP_FIXED): a forked child's
 * region takes its parent's place, where healed sites' stubs count.
 */
static int region_create(uint32_t max_sites, void *at, struct fl_ownfd *fd_out, void **map_out,
			 struct fl_shm_layout *l)
{
	int fixed = at ? MAP_FIXED : 0;
	void *p;
	int fd, err;

	*fd_out = FL_OWNFD_NONE;
	err = fl_shm_layout(max_sites, RING_ENTRIES, RING_ENTRIES, l);
	if (err)
		return err;
	fd = memfd_create("faultline", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	err = fd < 0 ? -errno : fl_ownfd_adopt(fd_out, fd);
	if (err) {
		if (err == -EMFILE)
			fl_log(FL_LOG_WARN, "no descriptor free at %d or above (RLIMIT_NOFILE): "
			       "counting in private memory, without faultlined", FL_OWNFD_FLOOR);
		else
			fl_log(FL_LOG_WARN, "memfd_create: %s: counting in private memory, "
			       "without faultlined", strerror(-err));
		p = mmap(at, l->size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | fixed,
			 -1, 0);
		if (p == MAP_FAILED)
			return -errno;
		goto done;
	}
	fd = fd_out->fd;
	if (ftruncate(fd, (off_t)l->size) != 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0)
		goto fail;
	p = mmap(at, l->size, PROT_READ | PROT_WRITE, MAP_SHARED | fixed, fd, 0);
	if (p == MAP_FAILED)
		goto fail;
done:
	/*
	 * Not in the program's core dumps: the region is tens of MiB (a
	 * crash without faultline dumps none of it), and faultlined has it.
	 */
	madvise(p, l->size, MADV_DONTDUMP);
	fl_shm_init(p, l, (uint32_t)getpid());
	*map_out = p;
	return 0;
fail:
	err = -errno;
	fl_ownfd_close(fd_out);
	return err;
}

int fl_counters_init(uint32_t max_sites)
{
	int err = region_create(max_sites, NULL, &region_fd, &region, &layout);

	if (err)
		return err;
	free_blocks = malloc(sizeof(*free_blocks));
	if (!free_blocks) {
		munmap(region, layout.size);
		fl_ownfd_close(&region_fd);
		return -ENOMEM;
	}
	free_blocks[0] = (struct block){ 0, max_sites };
	num_free = 1;
	point_handler(region, &layout);
	fl_dispatch.max_sites = max_sites;
	return 0;
}

/*
 * After fork, in the child: a region of its own, with the same sites and
 * counters from zero (a new process counts its own faults).  The parent's
 * mapping is left alone (the child's copy of it is unmapped).  Returns 0
 * or -errno (then the child keeps counting into the parent's region).
 */
int fl_counters_fork_child(void)
{
	struct fl_shm_layout l;
	uint32_t used = layout.capacity;
	struct fl_ownfd fd;
	size_t sites_size, heal_size;
	void *sites = NULL, *heal = NULL, *p;
	int err;

	if (!region)
		return 0;
	/*
	 * Only the slots below the last free block: the whole table is 32 MiB
	 * by default, and copying it made every fork cost 200 ms and 32 MiB.
	 */
	if (num_free && free_blocks[num_free - 1].base + free_blocks[num_free - 1].len ==
	    layout.capacity)
		used = free_blocks[num_free - 1].base;
	/*
	 * The new region goes where the parent's is (healed sites' stubs count
	 * at its addresses, and the handler's pointers stay right): keep what
	 * is copied aside first.
	 */
	sites_size = (size_t)used * sizeof(struct fl_shm_site);
	heal_size = (size_t)used * sizeof(struct fl_shm_heal);
	sites = malloc(sites_size ? sites_size : 1);
	heal = malloc(heal_size ? heal_size : 1);
	if (!sites || !heal) {
		free(sites);
		free(heal);
		return -ENOMEM;
	}
	memcpy(sites, (char *)region + layout.sites_offset, sites_size);
	memcpy(heal, (char *)region + layout.heal_offset, heal_size);
	/*
	 * The child has one thread, this one, and it is not in the handler
	 * nor in a stub: the region may change under their addresses.
	 */
	err = region_create(layout.capacity, region, &fd, &p, &l);
	if (err) {
		free(sites);
		free(heal);
		/* MAP_FIXED failed: the parent's mapping is still there. */
		return err;
	}
	memcpy((char *)p + l.sites_offset, sites, sites_size);
	memcpy((char *)p + l.heal_offset, heal, heal_size);
	free(sites);
	free(heal);
	/* Its populations and healed failures start from zero too. */
	for (uint32_t i = 0; i < used; i++) {
		((struct fl_shm_site *)((char *)p + l.sites_offset))[i].populations = 0;
		((struct fl_shm_heal *)((char *)p + l.heal_offset))[i].failures = 0;
	}
	point_handler(p, &l);
	/* The parent's; unless the program reused the number meanwhile. */
	fl_ownfd_close(&region_fd);
	region = p;
	region_fd = fd;
	layout = l;
	/* Nobody reads the copy yet: a plain store. */
	atomic_store_explicit(&((struct fl_shm_header *)p)->sites_high, used,
			      memory_order_relaxed);
	/* The parent's unregistered modules are the parent's to report. */
	reclaim(num_retired);
	return 0;
}

int fl_counters_fd(void)
{
	return fl_ownfd_get(&region_fd);
}

void *fl_counters_region(struct fl_shm_layout *l)
{
	*l = layout;
	return region;
}

static struct fl_shm_site *site_table(void)
{
	return (struct fl_shm_site *)((char *)region + layout.sites_offset);
}

uint64_t fl_counters_site_pc(uint32_t slot)
{
	const struct fl_shm_site *t;

	if (!region || slot >= layout.capacity)
		return 0;
	t = &site_table()[slot];
	return t->kind && atomic_load_explicit(&t->state, memory_order_relaxed) == FL_SHM_SITE_LIVE ?
		t->faulting_pc : 0;
}

void fl_counters_mark_dirty(uint32_t base, uint32_t n)
{
	_Atomic uint8_t *dirty;

	if (!region || base >= layout.capacity)
		return;
	if (n > layout.capacity - base)
		n = layout.capacity - base;
	dirty = (_Atomic uint8_t *)((char *)region + layout.dirty_offset);
	/* One slot of each block is enough: the daemon reads the whole block. */
	for (uint64_t k = base; k < (uint64_t)base + n;
	     k = (k / FL_SHM_DIRTY_SLOTS + 1) * FL_SHM_DIRTY_SLOTS)
		fl_shm_mark_dirty(dirty, (uint32_t)k);
}

struct fl_shm_heal *fl_counters_heal(uint32_t slot)
{
	if (!region || slot >= layout.capacity)
		return NULL;
	return (struct fl_shm_heal *)((char *)region + layout.heal_offset) + slot;
}

/* Describes slots [base, base + n) in the site table (kind 0: unused). */
void fl_counters_describe(uint32_t base, uint32_t n, uint32_t module,
			  const struct fl_site_entry *sites)
{
	struct fl_shm_header *h = region;
	struct fl_shm_site *t = site_table();

	for (uint32_t i = 0; i < n; i++) {
		t[base + i] = (struct fl_shm_site){
			.faulting_pc = sites ? sites[i].faulting_pc : 0,
			.handler_pc = sites ? sites[i].handler_pc : 0,
			.module = sites ? module : 0,
			.kind = sites ? sites[i].kind : 0,
			.state = FL_SHM_SITE_LIVE,
		};
	}
	/*
	 * Release: the entries are written before the daemon, loading
	 * sites_high with acquire, reads them.
	 */
	if (sites && base + n > atomic_load_explicit(&h->sites_high, memory_order_relaxed))
		atomic_store_explicit(&h->sites_high, base + n, memory_order_release);
}

/* Puts [base, base + n) back on the free list (its counters zero).  Returns 0 or -ENOMEM. */
static int free_insert(uint32_t base, uint32_t n);

/* Clears a retired block and frees it: its counts are saved by the daemon, or given up. */
static void release(struct block b)
{
	fl_counters_describe(b.base, b.len, 0, NULL);
	for (uint32_t k = 0; k < b.len; k++)
		atomic_store_explicit(&fl_dispatch.counters[b.base + k], 0, memory_order_relaxed);
	/* No stub counts there: the module's code is gone, its healing with it. */
	memset(fl_counters_heal(b.base), 0, (size_t)b.len * sizeof(struct fl_shm_heal));
	/* The daemon's copy of the slots (its counts file) must see the zeros. */
	fl_counters_mark_dirty(b.base, b.len);
	retired_sites -= b.len;
	free_insert(b.base, b.len);
}

/* Releases the n oldest retired blocks. */
static void reclaim(size_t n)
{
	if (n == 0)
		return;		/* retired may be NULL then */
	for (size_t i = 0; i < n; i++)
		release(retired[i]);
	memmove(retired, retired + n, (num_retired - n) * sizeof(*retired));
	num_retired -= n;
}

/* Whether the daemon has saved every count of block b (its first slot first). */
static bool saved(struct block b)
{
	struct fl_shm_site *t = site_table();

	for (uint32_t k = 0; k < b.len; k++)
		/* Relaxed: nothing else is read from the slot; it is cleared next. */
		if (atomic_load_explicit(&t[b.base + k].state, memory_order_relaxed) !=
		    FL_SHM_SITE_SAVED)
			return false;
	return true;
}

bool fl_counters_unsaved(uint32_t base, uint32_t n, uint32_t module)
{
	const struct fl_shm_site *t;

	if (!region || base >= layout.capacity || n > layout.capacity - base)
		return false;
	t = site_table();
	for (uint32_t k = 0; k < n; k++)
		/* Relaxed: a hint for what to send again; the daemon reads the state itself. */
		if (atomic_load_explicit(&t[base + k].state, memory_order_relaxed) ==
		    FL_SHM_SITE_RETIRED && t[base + k].module == module)
			return true;
	return false;
}

/* Releases every retired block the daemon has saved, in one pass. */
static void sweep(void)
{
	size_t kept = 0;

	for (size_t i = 0; i < num_retired; i++) {
		if (saved(retired[i]))
			release(retired[i]);
		else
			retired[kept++] = retired[i];
	}
	num_retired = kept;
}

/* Releases the oldest retired blocks, counts unsaved, until at most max sites are kept. */
static void reclaim_unsaved(uint64_t max)
{
	size_t n = 0;
	uint64_t left = retired_sites;

	while (n < num_retired && left > max)
		left -= retired[n++].len;
	if (!n)
		return;
	if (!retired_warned) {
		retired_warned = true;
		fl_log(FL_LOG_WARN, "unregistered modules' counts not saved by faultlined yet: "
		       "their counter slots are reused to make room (those counts are lost)");
	}
	reclaim(n);
}

/* Returns the first slot of a block of n from the free list, or -ENOSPC. */
static int64_t take(uint32_t n)
{
	for (size_t i = 0; i < num_free; i++) {
		struct block *b = &free_blocks[i];

		if (b->len >= n) {
			uint32_t base = b->base;

			b->base += n;
			b->len -= n;
			if (b->len == 0) {
				memmove(b, b + 1, (num_free - i - 1) * sizeof(*b));
				num_free--;
			}
			return base;
		}
	}
	return -ENOSPC;
}

/*
 * Returns the first slot of a block of n, or -ENOSPC.  n > 0.  Retired
 * blocks the daemon has saved are reclaimed now and then (every 64th call)
 * and when room is short; unsaved ones only when nothing else is left.
 */
int64_t fl_counters_alloc(uint32_t n)
{
	static unsigned calls;
	int64_t base;

	if (++calls % 64 == 0)
		sweep();
	base = take(n);
	if (base < 0 && num_retired) {
		sweep();
		base = take(n);
	}
	for (uint64_t max = retired_sites / 2; base < 0 && num_retired; max /= 2) {
		reclaim_unsaved(max);
		base = take(n);
	}
	return base;
}

/*
 * The block of an unregistered module, after a grace period: no handler
 * counts in it any more.  Kept with its counts, RETIRED, until the daemon
 * saves them (anonymous memory, which no daemon sees, is freed at once).
 * Returns 0 or -ENOMEM.
 */
int fl_counters_retire(uint32_t base, uint32_t n)
{
	static size_t room;
	struct fl_shm_site *t = site_table();

	if (n == 0)
		return 0;
	if (region_fd.fd < 0)
		return fl_counters_free(base, n);
	if (num_retired == room) {
		size_t want = room ? room * 2 : 64;
		struct block *grown = realloc(retired, want * sizeof(*retired));

		if (!grown)
			return fl_counters_free(base, n);
		retired = grown;
		room = want;
	}
	for (uint32_t k = 0; k < n; k++)
		/*
		 * Release: the handlers' last increments, ordered before this by
		 * the grace period, are seen by a daemon that loads RETIRED with
		 * acquire and then reads the count.
		 */
		atomic_store_explicit(&t[base + k].state, FL_SHM_SITE_RETIRED,
				      memory_order_release);
	retired[num_retired++] = (struct block){ base, n };
	retired_sites += n;
	if (retired_sites > RETIRED_MAX) {
		sweep();
		/* A quarter of the room at once: not one block per call. */
		if (retired_sites > RETIRED_MAX)
			reclaim_unsaved(RETIRED_MAX * 3 / 4);
	}
	return 0;
}

/*
 * Returns a block, zeroing its counters.  Call only after a grace period:
 * no handler may still increment them for the old sites.  Returns 0 or
 * -ENOMEM (the block is then lost, not reused).
 */
int fl_counters_free(uint32_t base, uint32_t n)
{
	if (n == 0)
		return 0;
	for (uint32_t k = 0; k < n; k++) {
		atomic_store_explicit(&fl_dispatch.counters[base + k], 0, memory_order_relaxed);
		atomic_store_explicit(&fl_dispatch.populations[(size_t)(base + k) *
							       fl_dispatch.populations_stride],
				      0, memory_order_relaxed);
	}
	fl_counters_mark_dirty(base, n);
	return free_insert(base, n);
}

static int free_insert(uint32_t base, uint32_t n)
{
	size_t i = 0;
	struct block *grown;

	while (i < num_free && free_blocks[i].base < base)
		i++;
	if (i > 0 && free_blocks[i - 1].base + free_blocks[i - 1].len == base) {
		free_blocks[i - 1].len += n;
		if (i < num_free && base + n == free_blocks[i].base) {
			free_blocks[i - 1].len += free_blocks[i].len;
			memmove(&free_blocks[i], &free_blocks[i + 1],
				(num_free - i - 1) * sizeof(*free_blocks));
			num_free--;
		}
		return 0;
	}
	if (i < num_free && base + n == free_blocks[i].base) {
		free_blocks[i].base = base;
		free_blocks[i].len += n;
		return 0;
	}
	grown = realloc(free_blocks, (num_free + 1) * sizeof(*free_blocks));
	if (!grown)
		return -ENOMEM;
	free_blocks = grown;
	memmove(&free_blocks[i + 1], &free_blocks[i], (num_free - i) * sizeof(*free_blocks));
	free_blocks[i] = (struct block){ base, n };
	num_free++;
	return 0;
}
