/* SPDX-License-Identifier: MIT */
/*
 * The counts file of a live process, STATE_DIR/proc.SERIAL.counts
 * (docs/state.md): a header, then one fixed-width slot per counter slot of
 * its region, so that a change is saved by a pwrite of its block
 * (FLD_COUNTS_BLOCK slots) and nothing else.  state.c writes the whole
 * file after each record of the process (tmp + rename), then calls
 * fld_counts_flush every SAVE_PERIOD_MS.
 *
 * What changed is the region's dirty summary's to say (proto.h): a byte
 * per block, set by the process after each change (fl_shm_mark_dirty).
 * The daemon exchanges a set byte for 0, with seq_cst, and fences before
 * it reads the block: a change that lands after the read sets the byte
 * again (the pairing is written out at fl_shm_mark_dirty).  So a period
 * costs a read of the summary (capacity / 128 bytes) and the blocks that
 * changed.  A healed site counts in its stub (lock incq of the heal slot's
 * failures), which marks nothing: a block holding a healed slot is
 * watched, its failures summed every period (fld_counts_block notes it).
 *
 * The process writes the region: it may set every byte, or none.  Every
 * index here is bounded by the daemon's copy of the layout and the slots
 * it chose; values are kept in range (fld_slot_read).  A process that
 * lies only loses its own counts.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "counts.h"
#include "dlog.h"

void fld_counts_name(char *buf, size_t size, uint64_t serial, bool tmp)
{
	snprintf(buf, size, "proc.%" PRIu64 ".counts%s", serial, tmp ? ".tmp" : "");
}

uint32_t fld_counts_slots(const struct fld_proc *p)
{
	uint64_t n = 0;

	for (size_t i = 0; i < p->num_mods; i++) {
		const struct fld_module *m = p->mods[i];

		if (m->removed)
			continue;
		for (uint32_t k = 0; k < m->num_sites; k++)
			if (m->sites[k].slot < p->layout.capacity && m->sites[k].slot >= n)
				n = (uint64_t)m->sites[k].slot + 1;
	}
	return (uint32_t)n;
}

/*
 * The slots of p's counts file the region has too: its count may come from
 * a counts file on disk (fld_counts_load) while the region is one the
 * keeper held, of its own capacity; the summary and slots past that are
 * not in the region.
 */
static uint32_t region_slots(const struct fld_proc *p)
{
	return p->rec.counts_slots < p->layout.capacity ? p->rec.counts_slots : p->layout.capacity;
}

static _Atomic uint8_t *dirty_of(const struct fld_proc *p)
{
	return (_Atomic uint8_t *)((char *)p->region + p->layout.dirty_offset);
}

/* The slots of block b: from b * FLD_COUNTS_BLOCK, at most FLD_COUNTS_BLOCK, below slots. */
static uint32_t block_len(uint32_t b, uint32_t slots)
{
	uint64_t first = (uint64_t)b * FLD_COUNTS_BLOCK;

	if (first >= slots)
		return 0;
	return slots - first < FLD_COUNTS_BLOCK ? (uint32_t)(slots - first) : FLD_COUNTS_BLOCK;
}

int fld_counts_watch_init(struct fld_proc *p)
{
	uint32_t blocks = fl_shm_dirty_blocks(p->rec.counts_slots);
	uint8_t *w = calloc(blocks ? blocks : 1, sizeof(*w));
	uint64_t *sum = calloc(blocks ? blocks : 1, sizeof(*sum));

	if (!w || !sum) {
		free(w);
		free(sum);
		return -ENOMEM;
	}
	fld_counts_forget(p);
	p->rec.watched = w;
	p->rec.watched_sum = sum;
	return 0;
}

uint32_t fld_counts_block(struct fld_proc *p, uint32_t b, bool take, struct fld_counts_slot *out)
{
	uint32_t n = block_len(b, region_slots(p)), first = b * FLD_COUNTS_BLOCK;
	bool healed = false;
	uint64_t sum = 0;

	if (take) {
		/*
		 * Seq_cst exchange, then a seq_cst fence before the slots'
		 * reads: pairs with the fence in the process's
		 * fl_shm_mark_dirty (proto.h), after its change and before its
		 * check of this byte.
		 */
		atomic_exchange_explicit(&dirty_of(p)[b], 0, memory_order_seq_cst);
		atomic_thread_fence(memory_order_seq_cst);
	}
	for (uint32_t i = 0; i < n; i++) {
		struct fld_slot_now now;

		fld_slot_read(p, first + i, &now);
		out[i] = (struct fld_counts_slot){
			.faults = now.faults,
			.populations = now.populations,
			.failures = now.heal.failures,
			.healed_at = now.heal.healed_at,
			.state = now.heal.state,
			.tactic = now.heal.tactic,
			.why = now.heal.why,
		};
		healed |= now.heal.state == FL_SHM_HEAL_HEALED;
		sum += now.heal.failures;
	}
	if (p->rec.watched) {
		p->rec.watched[b] = healed;
		p->rec.watched_sum[b] = sum;
	}
	return n;
}

/* Whether watched block b's failures moved since it was written. */
static bool failures_moved(const struct fld_proc *p, uint32_t b)
{
	const struct fl_shm_heal *heal =
		(const struct fl_shm_heal *)((const char *)p->region + p->layout.heal_offset);
	uint32_t n = block_len(b, region_slots(p)), first = b * FLD_COUNTS_BLOCK;
	uint64_t sum = 0;

	for (uint32_t i = 0; i < n; i++)
		/* Relaxed: the stub's lock incq is a count, as the handler's increments. */
		sum += atomic_load_explicit(&heal[first + i].failures, memory_order_relaxed);
	return sum != p->rec.watched_sum[b];
}

static int pwrite_all(int fd, const void *buf, size_t len, off_t at)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pwrite(fd, (const char *)buf + done, len - done, at + (off_t)done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		done += (size_t)n;
	}
	return 0;
}

/* Opens p's counts file to write in place.  Returns the descriptor, or -1 with errno set. */
static int open_counts(const struct fld_proc *p, int dir_fd)
{
	char name[64];

	fld_counts_name(name, sizeof(name), p->serial, false);
	return openat(dir_fd, name, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
}

int fld_counts_flush(struct fld_proc *p, int dir_fd, unsigned *budget, bool sync, bool *more)
{
	static struct fld_counts_slot buf[FLD_COUNTS_BLOCK];
	uint32_t blocks = fl_shm_dirty_blocks(region_slots(p));
	_Atomic uint8_t *dirty = dirty_of(p);
	int fd = -1, err = 0, written = 0;

	*more = false;
	for (uint32_t b = 0; b < blocks && !err; b++) {
		uint32_t n;

		/*
		 * A relaxed look first: the exchange writes the byte's line,
		 * which the process's faults then miss in their caches.
		 */
		bool marked = atomic_load_explicit(&dirty[b], memory_order_relaxed) != 0;

		if (!marked && !(p->rec.watched && p->rec.watched[b] && failures_moved(p, b)))
			continue;
		if (!*budget) {
			*more = true;
			break;
		}
		--*budget;
		if (fd < 0 && (fd = open_counts(p, dir_fd)) < 0) {
			err = -errno;
			break;
		}
		n = fld_counts_block(p, b, marked, buf);
		err = pwrite_all(fd, buf, n * sizeof(*buf),
				 (off_t)sizeof(struct fld_counts_header) +
				 (off_t)b * FLD_COUNTS_BLOCK * (off_t)sizeof(*buf));
		written++;
	}
	/* Synced also when nothing changed now: the blocks written before may not be. */
	if (!err && sync && fd < 0 && (fd = open_counts(p, dir_fd)) < 0)
		err = -errno;
	if (fd >= 0 && !err && sync && fsync(fd) != 0)
		err = -errno;
	if (fd >= 0)
		close(fd);
	if (err) {
		p->rec.counts_stamp = 0;
		return err;
	}
	if (written)
		fld_debug("state: pid %d: %d blocks of counts written (%zu bytes)", (int)p->pid,
			  written, (size_t)written * sizeof(buf));
	return written;
}

/* Whether slot s is one the daemon writes: heal values in range, reserved 0 (heal_from's). */
static bool slot_valid(const struct fld_counts_slot *s)
{
	return s->state <= FL_SHM_HEAL_UNHEALABLE && (!s->tactic || fl_shm_tactic_name(s->tactic)) &&
	       s->why <= FL_SHM_WHY_LAST && !s->reserved;
}

int fld_counts_load(struct fld_proc *p, int fd, size_t size, const char **why)
{
	struct fld_counts_header h;
	struct fld_counts_slot *slots;
	size_t got = 0;
	uint32_t lost = 0;
	static const uint8_t zero[sizeof(h.reserved)];

	*why = "is shorter than its header";
	if (size < sizeof(h))
		return -EINVAL;
	if (pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h))
		return -EIO;
	*why = "is not a faultlined counts file of version 1";
	if (h.magic != FLD_COUNTS_MAGIC || h.version != FLD_COUNTS_VERSION ||
	    h.slot_size != sizeof(*slots) || memcmp(h.reserved, zero, sizeof(zero)))
		return -EINVAL;
	*why = "is not its record's (another serial)";
	if (h.serial != p->serial)
		return -EINVAL;
	*why = "has a size other than its header says";
	if (size != sizeof(h) + (uint64_t)h.slots * sizeof(*slots) || h.slots > FL_PROTO_MAX_REGION)
		return -EINVAL;
	*why = "has no stamp";
	if (!h.stamp)
		return -EINVAL;
	/* Another write of the record (the daemon died between the two): the record is newer. */
	if (h.stamp != p->rec.stamp)
		return 0;
	slots = malloc(h.slots ? (size_t)h.slots * sizeof(*slots) : 1);
	if (!slots)
		return -ENOMEM;
	while (got < (size_t)h.slots * sizeof(*slots)) {
		ssize_t n = pread(fd, (char *)slots + got, (size_t)h.slots * sizeof(*slots) - got,
				  (off_t)(sizeof(h) + got));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			free(slots);
			return -EIO;
		}
		got += (size_t)n;
	}
	*why = "holds a slot no daemon writes";
	for (uint32_t i = 0; i < h.slots; i++) {
		if (!slot_valid(&slots[i])) {
			free(slots);
			return -EINVAL;
		}
	}
	/* The record's live modules count in the slots: the file is newer than the record. */
	for (size_t i = 0; i < p->num_mods; i++) {
		struct fld_module *m = p->mods[i];

		if (m->removed)
			continue;
		for (uint32_t k = 0; k < m->num_sites; k++) {
			struct fld_site *s = &m->sites[k];
			const struct fld_counts_slot *c;
			struct fld_frozen f;

			if (s->slot >= h.slots)
				continue;
			c = &slots[s->slot];
			memset(&f, 0, sizeof(f));
			f.faults = c->faults;
			f.populations = c->populations;
			f.heal.failures = c->failures;
			f.heal.healed_at = c->healed_at;
			f.heal.state = c->state;
			f.heal.tactic = c->tactic;
			f.heal.why = c->why;
			if (fld_site_set_frozen(m, k, &f) != 0)
				lost++;
		}
		fld_module_fit(m);
	}
	if (lost)
		fld_warn("pid %d: out of memory: %u of its sites' counts in the counts file are "
			 "not restored", (int)p->pid, lost);
	free(slots);
	p->rec.counts_stamp = h.stamp;
	p->rec.counts_slots = h.slots;
	return 1;
}

void fld_counts_forget(struct fld_proc *p)
{
	free(p->rec.watched);
	free(p->rec.watched_sum);
	p->rec.watched = NULL;
	p->rec.watched_sum = NULL;
}
