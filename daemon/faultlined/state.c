/* SPDX-License-Identifier: MIT */
/*
 * Persistence: one record file per process the daemon keeps,
 * STATE_DIR/proc.SERIAL.json, and for one that may still count its counts
 * file beside it, STATE_DIR/proc.SERIAL.counts (the formats:
 * docs/state.md), so that what a save costs is what changed, never
 * everything recorded nor a whole process on a timer:
 *   - a process's record is written when its counts are final (it is
 *     gone: fld_proc_final), once: they no longer change; its counts file
 *     is removed then;
 *   - a record is written within a tick of a change to its process's
 *     modules or names (rec.gen), never for its counts alone; a live one's
 *     counts file is written whole after it, by the same job (write_counts);
 *   - while the process may count (registered, or disconnected and living
 *     on), every SAVE_PERIOD_MS the blocks of its counts file whose slots
 *     changed are written in place, and no others (counts.c: the region's
 *     dirty summary says which), so that a process that exits while the
 *     daemon is down comes back with counts at most that old (or exact:
 *     the keeper holds its region, keeper.h), and an idle one costs a read
 *     of its summary and no write;
 *   - a record and its counts file are removed with their process (dropped
 *     by the bound on exited processes or the user's budget, or replaced
 *     by the same process registering again).
 * A record is written by a job of its process's user (work.h), a slice at
 * a time, so that one user's 2,000,000 sites, or a thousand of its
 * processes exiting at once, do not hold the daemon up; a live one is
 * rewritten no sooner than SLOWDOWN times as long as its last write took.
 * Each file is written to a temporary file and renamed: never half a file;
 * the record of a process whose counts are final or whose slots wait for
 * it (below), and every file written as the daemon exits, is synced
 * first (a live one's next save is never far off).
 *
 * A counts file goes with one write of its record: the record's header
 * has a stamp (unique to each write), the counts file's header the stamp
 * of the record it followed.  The record is renamed into place first: a
 * daemon that dies before the counts file follows leaves one of an
 * earlier stamp, which a restart removes (the record is the newer).  On
 * load a counts file of the record's stamp replaces the counts of the
 * record's live modules (their slots); its blocks were all written after
 * the record, and a slot a module had before is cleared, and marked, by
 * the process before it is reused, which only happens once a record
 * without that module is on disk (below).
 *
 * Counts the daemon may hold nowhere else are acknowledged only once a
 * record holding them is renamed into place (commit, fld_proc_saved): the
 * RETIRED slots of a module unregistered by its process become SAVED (the
 * process may reuse them), and the keeper lets go of the region of a
 * process that is gone.  A record holds them when it was written, whole,
 * after the latest change of its process (rec.gen: every freeze moves it
 * on, procs.c), so a write that started before a freeze never counts.
 * Records hold module ids and counter slots, so that a registration again
 * or the keeper's region after a restart finds the modules in the region
 * again (fld_proc_attach).
 *
 * At start every record is read back (before the daemon listens), in
 * registration order: every process in them is exited as far as this
 * daemon knows; one that was live comes back by itself (the agent
 * re-registers) and then replaces its old entry.  The daemons before
 * records kept everything in one file, STATE_DIR/state.json (version 1):
 * it is read, written out as records, and removed.
 *
 * The directory was checked at start (safedir.c) and is used through its
 * descriptor; the files in it are opened with O_NOFOLLOW, and temporary
 * files are created with O_EXCL, so that a name planted there is never
 * followed.  A file that cannot be read as a state file of its version is
 * kept aside as NAME.corrupt-TIME, never overwritten.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "budget.h"
#include "counts.h"
#include "dlog.h"
#include "procs.h"
#include "state.h"
#include "work.h"

#define LEGACY_NAME "state.json"
/* Far above what the bounds on processes, sites and names let the daemon write. */
#define MAX_FILE_BYTES (256u << 20)
#define MAX_FILE_TEXT "256 MiB"
/* A record line: a site's name is at most 65,535 bytes, escaped at most 6 times. */
#define MAX_LINE (1u << 20)
#define SAVE_PERIOD_MS 5000
/* Counts file blocks written a tick at most (16 MiB, 4 KiB each): the next tick goes on. */
#define TICK_BLOCKS 4096u
#define SLOWDOWN 10
/* Bytes gathered before a write(2). */
#define WRITE_CHUNK (64u << 10)

static char dir_path[PATH_MAX];	/* for messages */
static int dir_fd = -1;

/* p's counts are final: it is gone, its region unmapped (fld_proc_final). */
static bool final(const struct fld_proc *p)
{
	return p->exited && !p->region;
}

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void record_name(char *buf, size_t size, uint64_t serial, bool tmp)
{
	snprintf(buf, size, "proc.%" PRIu64 ".json%s", serial, tmp ? ".tmp" : "");
}

/* ------------------------------------------------------------------------
 * Writing a record
 */

struct writer {
	struct fld_job job;
	uint64_t serial;
	size_t mod;		/* the next site: p->mods[mod]->sites[site] */
	uint32_t site;
	bool mod_started;	/* mods[mod]'s line is written */
	/*
	 * The record is renamed into place: the counts file (counts.h) is
	 * being written, its block next.
	 */
	bool counts;
	uint32_t block;
	uint64_t stamp;		/* the record's "stamp", and its counts file's */
	int fd;			/* the temporary file, once open */
	char *buf;		/* not written yet */
	size_t len, cap;
	uint64_t bytes;		/* in the file and buf */
	/* The most its file may hold: its user's budget of state bytes (budget.h). */
	uint64_t limit;
	uint32_t gen;
	bool final;
	bool sync;		/* fsync before the rename */
	uint64_t start_ms;
	json_object *str;	/* reused for each name: json-c escapes it */
};

static struct writer *writer_of(struct fld_job *j)
{
	return (struct writer *)((char *)j - offsetof(struct writer, job));
}

/*
 * Appends n bytes of s.  Returns 0, -EFBIG past MAX_FILE_BYTES, -EDQUOT
 * past the user's budget (w->limit), or -ENOMEM.
 */
static int put(struct writer *w, const char *s, size_t n)
{
	if (w->bytes + n > MAX_FILE_BYTES)
		return -EFBIG;
	if (w->bytes + n > w->limit)
		return -EDQUOT;
	if (w->len + n > w->cap) {
		size_t cap = w->cap ? w->cap : WRITE_CHUNK * 2;
		char *grown;

		while (cap < w->len + n)
			cap *= 2;
		grown = realloc(w->buf, cap);
		if (!grown)
			return -ENOMEM;
		w->buf = grown;
		w->cap = cap;
	}
	memcpy(w->buf + w->len, s, n);
	w->len += n;
	w->bytes += n;
	return 0;
}

/* A json-c object as one line (and drops it). */
static int put_object(struct writer *w, json_object *o)
{
	const char *text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	int err = text ? put(w, text, strlen(text)) : -ENOMEM;

	if (!err)
		err = put(w, "\n", 1);
	json_object_put(o);
	return err;
}

/* Writes out what buf holds.  Returns 0 or -errno. */
static int flush(struct writer *w)
{
	size_t done = 0;

	while (done < w->len) {
		ssize_t n = write(w->fd, w->buf + done, w->len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		done += (size_t)n;
	}
	w->len = 0;
	return 0;
}

static int open_tmp(struct writer *w)
{
	char tmp[64];

	record_name(tmp, sizeof(tmp), w->serial, true);
	/* A name left by a save that died, or planted: never written through. */
	if (unlinkat(dir_fd, tmp, 0) != 0 && errno != ENOENT)
		return -errno;
	w->fd = openat(dir_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	return w->fd < 0 ? -errno : 0;
}

static int put_header(struct writer *w, const struct fld_proc *p)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "version", json_object_new_int(2));
	json_object_object_add(o, "serial", json_object_new_uint64(p->serial));
	json_object_object_add(o, "pid", json_object_new_int(p->pid));
	json_object_object_add(o, "uid", json_object_new_int64(p->uid));
	/* Only when its owner could ptrace it (access.h): else root alone reads it restored. */
	if (p->ids_one && p->kernel_dumpable && p->agent_dumpable)
		json_object_object_add(o, "gid", json_object_new_int64(p->gid));
	json_object_object_add(o, "comm", json_object_new_string(p->comm));
	json_object_object_add(o, "exited", json_object_new_boolean(p->exited));
	json_object_object_add(o, "registered_ms", json_object_new_uint64(p->registered_ms));
	json_object_object_add(o, "start_time", json_object_new_uint64(p->start_time));
	json_object_object_add(o, "region_ino", json_object_new_uint64(p->region_ino));
	json_object_object_add(o, "exited_ms", json_object_new_uint64(p->exited_ms));
	json_object_object_add(o, "stamp", json_object_new_uint64(w->stamp));
	return put_object(w, o);
}

static int put_module(struct writer *w, const struct fld_module *m)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "module", json_object_new_string(m->name));
	json_object_object_add(o, "id", json_object_new_int64(m->id));
	json_object_object_add(o, "removed", json_object_new_boolean(m->removed));
	json_object_object_add(o, "sites", json_object_new_uint64(m->num_sites));
	if (m->has_base)
		json_object_object_add(o, "base", json_object_new_uint64(m->base));
	return put_object(w, o);
}

/* What a site's line says that changes while its process runs. */
struct site_now {
	uint64_t faults;
	uint64_t populations;
	struct fl_shm_heal heal;
};

static void site_read(const struct fld_proc *p, const struct fld_module *m,
		      const struct fld_site *s, struct site_now *now)
{
	now->faults = fld_site_faults(p, m, s);
	now->populations = fld_site_populations(p, m, s);
	fld_site_heal(p, m, s, &now->heal);
}

/* Whether a site was ever healed, or tried (its line has the healing then). */
static bool has_healing(const struct fl_shm_heal *h)
{
	return h->failures || h->state != FL_SHM_HEAL_IMPLICIT || h->tactic || h->why ||
	       h->healed_at;
}

/*
 * One site: [faulting_pc, handler_pc, kind, faults, slot, populations,
 * function], or with its healing when it has any (has_healing):
 * [faulting_pc, handler_pc, kind, faults, slot, populations, healed,
 * state, tactic, why, healed_at, function]; a function whose offset is
 * known is followed by it (function_offset), so that the records of
 * processes never healed read as they did before healing (older daemons
 * read them).  Numbers by hand, the name through json-c (a site costs
 * FLD_UNITS_JSON units: a json-c object per site would cost far more than
 * that).
 */
static int put_site(struct writer *w, const struct fld_module *m, const struct fld_site *s,
		    const struct site_now *now)
{
	const struct fl_shm_heal *h = &now->heal;
	char num[256];
	const char *fn = "null";
	int n = snprintf(num, sizeof(num), "[%" PRIu64 ",%" PRIu64 ",%u,%" PRIu64 ",%u,%" PRIu64
			 ",", s->faulting_pc, s->handler_pc, s->kind, now->faults, s->slot,
			 now->populations);
	int err;

	if (has_healing(h))
		n += snprintf(num + n, sizeof(num) - (size_t)n, "%" PRIu64 ",%u,%u,%u,%u,",
			      (uint64_t)h->failures, (unsigned)h->state, (unsigned)h->tactic,
			      (unsigned)h->why, (unsigned)h->healed_at);
	err = put(w, num, (size_t)n);

	if (!err && s->function) {
		json_object_set_string(w->str, fld_site_function(m, s));
		/* "/" as it is: a name with nothing to unescape reads back without json-c. */
		fn = json_object_to_json_string_ext(w->str, JSON_C_TO_STRING_PLAIN |
						    JSON_C_TO_STRING_NOSLASHESCAPE);
	}
	if (!err)
		err = fn ? put(w, fn, strlen(fn)) : -ENOMEM;
	if (!err && s->function && s->function_offset != FL_SYMBOL_NO_OFFSET) {
		n = snprintf(num, sizeof(num), ",%u", s->function_offset);
		err = put(w, num, (size_t)n);
	}
	if (!err)
		err = put(w, "]\n", 2);
	return err;
}

/*
 * Whether p's record says what p would write now, its counts and healing
 * aside: those of a live process are its counts file's.
 */
static bool current(const struct fld_proc *p)
{
	return p->rec.written && p->rec.written_gen == p->rec.gen &&
	       p->rec.written_final == final(p);
}

/* The file is complete: synced, and renamed over the old record. */
static int commit(struct writer *w, struct fld_proc *p)
{
	char tmp[64], name[64];
	uint64_t now = mono_ms(), took = now - w->start_ms;
	int err = flush(w);

	if (!err && w->sync && fsync(w->fd) != 0)
		err = -errno;
	close(w->fd);
	w->fd = -1;
	record_name(tmp, sizeof(tmp), w->serial, true);
	record_name(name, sizeof(name), w->serial, false);
	if (!err && renameat(dir_fd, tmp, dir_fd, name) != 0)
		err = -errno;
	if (err) {
		unlinkat(dir_fd, tmp, 0);
		return err;
	}
	p->rec.written = true;
	p->rec.record_bytes = w->bytes;
	p->rec.written_final = w->final;
	p->rec.written_gen = w->gen;
	p->rec.stamp = w->stamp;
	p->rec.soonest_ms = now + SLOWDOWN * took;
	p->rec.next_ms = now + (SLOWDOWN * took > SAVE_PERIOD_MS ? SLOWDOWN * took : SAVE_PERIOD_MS);
	fld_debug("state: pid %d: %s written: %" PRIu64 " sites, %" PRIu64 " bytes, %" PRIu64
		  " ms", (int)p->pid, name, p->num_sites, w->bytes, took);
	/*
	 * Nothing changed while it was written (the generation it was started
	 * at is p's): the counts only the region or this daemon held are on
	 * disk now.
	 */
	if (current(p))
		fld_proc_saved(p);
	return 0;
}

/* Whether slots of p wait for a record to be marked SAVED. */
static bool acks_pending(const struct fld_proc *p)
{
	for (size_t i = 0; i < p->num_mods; i++)
		if (p->mods[i]->ack)
			return true;
	return false;
}

static uint64_t real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Removes p's counts file: its record says more now (final), or it is gone. */
static void counts_remove(struct fld_proc *p)
{
	char name[64];

	p->rec.counts_stamp = 0;
	p->rec.counts_bytes = 0;
	fld_counts_forget(p);
	fld_counts_name(name, sizeof(name), p->serial, false);
	if (unlinkat(dir_fd, name, 0) != 0 && errno != ENOENT)
		fld_warn("state: cannot remove %s/%s: %s", dir_path, name, strerror(errno));
}

/*
 * The counts file of the record just committed, whole: a header, then
 * every block, read after its dirty byte was exchanged for 0 (so that
 * fld_counts_flush goes on from here), into a temporary file renamed into
 * place.  Until then the file there is the record before's, which a
 * restart ignores (its stamp is not the record's).  Returns 0 when done,
 * 1 when the budget ran out first, or -errno.
 */
static int write_counts(struct writer *w, struct fld_proc *p, unsigned *budget)
{
	static struct fld_counts_slot slots[FLD_COUNTS_BLOCK];
	char tmp[64], name[64];
	int err = 0;

	fld_counts_name(tmp, sizeof(tmp), w->serial, true);
	if (w->fd < 0) {
		struct fld_counts_header h = {
			.magic = FLD_COUNTS_MAGIC, .version = FLD_COUNTS_VERSION,
			.serial = w->serial, .stamp = w->stamp, .slot_size = sizeof(slots[0]),
		};

		p->rec.counts_stamp = 0;
		p->rec.counts_slots = h.slots = fld_counts_slots(p);
		w->len = 0;
		w->bytes = 0;
		w->block = 0;
		if (unlinkat(dir_fd, tmp, 0) != 0 && errno != ENOENT)
			return -errno;
		w->fd = openat(dir_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			       0600);
		if (w->fd < 0)
			return -errno;
		err = fld_counts_watch_init(p);
		if (!err)
			err = put(w, (const char *)&h, sizeof(h));
	}
	for (; !err && w->block < fl_shm_dirty_blocks(p->rec.counts_slots); w->block++) {
		uint32_t n;

		if (*budget < FLD_COUNTS_BLOCK)
			return 1;
		*budget -= FLD_COUNTS_BLOCK;
		n = fld_counts_block(p, w->block, true, slots);
		err = put(w, (const char *)slots, n * sizeof(slots[0]));
		if (!err && w->len >= WRITE_CHUNK)
			err = flush(w);
	}
	if (!err)
		err = flush(w);
	if (!err && w->sync && fsync(w->fd) != 0)
		err = -errno;
	close(w->fd);
	w->fd = -1;
	fld_counts_name(name, sizeof(name), w->serial, false);
	if (!err && renameat(dir_fd, tmp, dir_fd, name) != 0)
		err = -errno;
	if (err) {
		unlinkat(dir_fd, tmp, 0);
		return err;
	}
	p->rec.counts_stamp = w->stamp;
	p->rec.counts_bytes = w->bytes;
	fld_debug("state: pid %d: %s written: %u slots", (int)p->pid, name, p->rec.counts_slots);
	return 0;
}

static enum fld_step writer_step(struct fld_job *j, unsigned budget)
{
	struct writer *w = writer_of(j);
	struct fld_proc *p = fld_proc_by_serial(w->serial);
	bool logged = false;	/* a refusal of the budget's, said already */
	int err = 0;

	/* Gone (dropped meanwhile): its record goes with it. */
	if (!p)
		return FLD_STEP_DONE;
	if (w->counts)
		goto counts;
	if (w->fd < 0) {
		char why[256];

		/*
		 * Room in its user's budget for a record of about 16 bytes a
		 * site and its names (made by dropping the user's exited
		 * processes); else it is not written (the budget logs why).
		 */
		w->limit = fld_budget_admit_state(p, 16 * p->num_sites + p->name_bytes, why,
						  sizeof(why));
		if (!w->limit) {
			err = -EDQUOT;
			logged = true;
			goto failed;
		}
		w->gen = p->rec.gen;
		w->final = final(p);
		/* What waits for it (fld_proc_saved) waits for the disk, not the page cache. */
		w->sync = w->sync || w->final || acks_pending(p);
		/* Unique to this write: the counts file written after it says it is its. */
		w->stamp = real_ns();
		if (w->stamp <= p->rec.stamp)
			w->stamp = p->rec.stamp + 1;
		err = open_tmp(w);
		if (!err)
			err = put_header(w, p);
	}
	for (; !err && w->mod < p->num_mods; w->mod++, w->site = 0, w->mod_started = false) {
		const struct fld_module *m = p->mods[w->mod];

		if (!w->mod_started) {
			err = put_module(w, m);
			w->mod_started = true;
		}
		for (; !err && w->site < m->num_sites; w->site++) {
			struct site_now now;

			if (budget < FLD_UNITS_JSON)
				return FLD_STEP_MORE;
			budget -= FLD_UNITS_JSON;
			site_read(p, m, &m->sites[w->site], &now);
			err = put_site(w, m, &m->sites[w->site], &now);
			if (!err && w->len >= WRITE_CHUNK)
				err = flush(w);
		}
		if (err)
			break;
	}
	if (!err)
		err = commit(w, p);
	if (!err && (w->final || !p->region)) {
		/* The record holds the final counts: the counts file says nothing more. */
		counts_remove(p);
		return FLD_STEP_DONE;
	}
	if (!err) {
		w->counts = true;
		/* The counts file has what the record left of the budget. */
		w->limit = w->limit > w->bytes ? w->limit - w->bytes : 0;
counts:
		/* Gone meanwhile: its final record follows (procs.c moved its gen on). */
		if (!p->region)
			return FLD_STEP_DONE;
		err = write_counts(w, p, &budget);
		if (err > 0)
			return FLD_STEP_MORE;
	}
failed:
	/* Tried again later; one that is too large only when its process exits. */
	if (err)
		p->rec.soonest_ms = p->rec.next_ms = err == -EFBIG || err == -EDQUOT ? UINT64_MAX :
			mono_ms() + SAVE_PERIOD_MS;
	/*
	 * Over its user's budget of state bytes (said once, by budget.c):
	 * nothing waits for a record that is not written (the keeper lets go
	 * of the region of one that is gone, its retired slots may be reused).
	 */
	if (err == -EDQUOT && !logged) {
		char why[256];

		snprintf(why, sizeof(why), "pid %d's %s is larger than the %" PRIu64 " bytes left of "
			 "uid %u's budget in the state directory (--max-user-state-bytes): not "
			 "written", (int)p->pid, w->counts ? "counts file" : "record", w->limit,
			 (unsigned)p->uid);
		fld_budget_refused(p->uid, FLD_BUDGET_STATE, why);
	}
	if (err == -EDQUOT)
		fld_proc_saved(p);
	if (err && err != -EDQUOT)
		fld_warn("state: pid %d: cannot write its %s in %s: %s%s", (int)p->pid,
			 w->counts ? "counts file" : "record", dir_path,
			 err == -EFBIG ? "larger than " MAX_FILE_TEXT : strerror(-err),
			 err == -EFBIG ? "" : "; tried again later");
	/* The record is on disk without its counts file: written again later, with one. */
	if (err && w->counts)
		p->rec.gen++;
	return FLD_STEP_DONE;
}

static void writer_free(struct fld_job *j)
{
	struct writer *w = writer_of(j);
	struct fld_proc *p = fld_proc_by_serial(w->serial);

	if (w->fd >= 0) {
		char tmp[64];

		close(w->fd);
		if (w->counts)
			fld_counts_name(tmp, sizeof(tmp), w->serial, true);
		else
			record_name(tmp, sizeof(tmp), w->serial, true);
		unlinkat(dir_fd, tmp, 0);
	}
	if (p && p->rec.writer == j)
		p->rec.writer = NULL;
	json_object_put(w->str);
	free(w->buf);
	free(w);
}

/*
 * Writes p's record, and a live one's counts file after it: by a job, or
 * at once when now is true (then synced).  A write already under way for
 * p is cancelled.
 */
static void write_record(struct fld_proc *p, bool now)
{
	struct writer *w;

	/* Nowhere to save to: nothing to wait for. */
	if (dir_fd < 0) {
		fld_proc_saved(p);
		return;
	}
	if (p->rec.writer)
		fld_job_cancel(p->rec.writer);
	w = calloc(1, sizeof(*w));
	if (!w || !(w->str = json_object_new_string(""))) {
		free(w);
		fld_warn("state: out of memory: pid %d's record not written", (int)p->pid);
		return;
	}
	w->job = (struct fld_job){ .uid = p->uid, .step = writer_step, .free = writer_free };
	w->serial = p->serial;
	w->fd = -1;
	w->sync = now;
	w->start_ms = mono_ms();
	if (now) {
		while (writer_step(&w->job, UINT_MAX) == FLD_STEP_MORE)
			;
		writer_free(&w->job);
		return;
	}
	p->rec.writer = &w->job;
	fld_job_start(&w->job);
}


/* A process is freed: its record goes with it. */
static void on_free(struct fld_proc *p);
static const struct fld_proc_observer state_observer = { .gone = on_free };

static void on_free(struct fld_proc *p)
{
	char name[64];

	if (p->rec.writer)
		fld_job_cancel(p->rec.writer);
	fld_counts_forget(p);
	if (dir_fd < 0)
		return;
	/* The counts file first: one without its record would be kept aside at the next start. */
	counts_remove(p);
	record_name(name, sizeof(name), p->serial, false);
	if (unlinkat(dir_fd, name, 0) != 0 && errno != ENOENT)
		fld_warn("state: cannot remove %s/%s: %s", dir_path, name, strerror(errno));
}

void fld_state_changed(struct fld_proc *p)
{
	if (p)
		p->rec.gen++;
}

void fld_state_exited(struct fld_proc *p)
{
	write_record(p, false);
}

/* Whether p's counts file holds the counts of its record on disk (and p may count still). */
static bool counts_valid(const struct fld_proc *p)
{
	return p->region && p->rec.written && !p->rec.written_final && p->rec.counts_stamp &&
	       p->rec.counts_stamp == p->rec.stamp;
}

/*
 * Saves what changed of p's counts in its counts file, budget blocks at
 * most.  Returns true when it is all saved (also when it failed: then
 * its record and counts file are written again).
 */
static bool save_counts(struct fld_proc *p, unsigned *budget, bool sync)
{
	bool more;
	int n = fld_counts_flush(p, dir_fd, budget, sync, &more);

	if (n < 0) {
		fld_warn("state: pid %d: cannot write its counts file in %s: %s; its record is "
			 "written again", (int)p->pid, dir_path, strerror(-n));
		p->rec.gen++;
		return true;
	}
	return !more;
}

int fld_state_save(void)
{
	if (dir_fd < 0)
		fld_procs_saved();
	for (size_t i = 0; i < fld_num_procs && dir_fd >= 0; i++) {
		struct fld_proc *p = fld_procs[i];
		unsigned budget = UINT_MAX;

		if (!p->rec.writer && current(p) && counts_valid(p) && !final(p))
			save_counts(p, &budget, true);
		else if (p->rec.writer || !current(p) || !final(p))
			write_record(p, true);
	}
	return 0;
}

/*
 * Starts the writes that are due: a record that does not say what its
 * process would write now (once SLOWDOWN times its last write has passed,
 * or SAVE_PERIOD_MS after one that failed), and saves the blocks of a
 * live one's counts that changed every SAVE_PERIOD_MS, TICK_BLOCKS at
 * most a tick (the rest the next).  A walk of the processes and of their
 * dirty summaries, no more: the writing of records is the jobs'.
 */
void fld_state_tick(void)
{
	uint64_t now = mono_ms();
	unsigned budget = TICK_BLOCKS;

	if (dir_fd < 0)
		fld_procs_saved();
	for (size_t i = 0; i < fld_num_procs && dir_fd >= 0; i++) {
		struct fld_proc *p = fld_procs[i];

		/*
		 * Up to date on disk: what waits for that is done (slots that
		 * were not RETIRED yet at the commit, fld_proc_saved).
		 */
		if (current(p))
			fld_proc_saved(p);
		/* Its job writes the counts file whole after the record. */
		if (p->rec.writer)
			continue;
		if (!current(p) && now >= p->rec.soonest_ms) {
			write_record(p, false);
			continue;
		}
		if (!p->region || now < p->rec.next_ms)
			continue;
		/*
		 * A counts file that is not the record's (a write failed): the
		 * record and the counts file are written again.
		 */
		if (!counts_valid(p)) {
			if (now >= p->rec.soonest_ms)
				write_record(p, false);
			continue;
		}
		/* What did not fit in this tick's budget: the next tick. */
		if (save_counts(p, &budget, false))
			p->rec.next_ms = now + SAVE_PERIOD_MS;
	}
}

/* ------------------------------------------------------------------------
 * Reading
 */

static uint64_t get_u64(json_object *o, const char *key)
{
	json_object *v;

	return json_object_object_get_ex(o, key, &v) ? json_object_get_uint64(v) : 0;
}

static const char *get_str(json_object *o, const char *key)
{
	json_object *v;

	return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string) ?
		json_object_get_string(v) : NULL;
}

/* An integer field as written (-1 when missing or not an integer: get_u64 reads -1 as 0). */
static int64_t get_id(json_object *o, const char *key)
{
	json_object *v;

	return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_int) ?
		json_object_get_int64(v) : -1;
}

static bool get_bool(json_object *o, const char *key)
{
	json_object *v;

	return json_object_object_get_ex(o, key, &v) && json_object_get_boolean(v);
}

/*
 * A process from a header (a record's first line, or a state.json
 * entry).  Returns it, or NULL with *err: -EINVAL for an entry whose pid or
 * uid no process can have (the uid decides who sees it; a pid is matched
 * with a new registration's), or -ENOMEM.
 */
static struct fld_proc *restore_header(json_object *po, int *err)
{
	struct fld_proc *p;
	char comm[FL_PROTO_COMM] = { 0 };
	const char *c = get_str(po, "comm");
	int64_t pid = get_id(po, "pid"), uid = get_id(po, "uid"), gid = get_id(po, "gid");

	*err = -EINVAL;
	if (pid <= 0 || pid > INT_MAX || uid < 0 || uid >= (uid_t)-1)
		return NULL;
	if (c)
		strncpy(comm, c, sizeof(comm) - 1);
	*err = -ENOMEM;
	p = fld_proc_add((pid_t)pid, (uid_t)uid, comm);
	if (!p)
		return NULL;
	p->exited = true;
	if (gid >= 0 && gid < (gid_t)-1) {
		p->gid = (gid_t)gid;
		p->ids_one = p->kernel_dumpable = p->agent_dumpable = true;
	}
	p->restored_live = !get_bool(po, "exited");
	p->registered_ms = get_u64(po, "registered_ms");
	p->start_time = get_u64(po, "start_time");
	p->region_ino = get_u64(po, "region_ino");
	p->exited_ms = get_u64(po, "exited_ms");
	/* Records of daemons before counts files have none: 0, no counts file is theirs. */
	p->rec.stamp = get_u64(po, "stamp");
	*err = 0;
	return p;
}

/* A module of n sites (to be filled in), appended to p.  NULL when out of memory. */
static struct fld_module *add_module(struct fld_proc *p, const char *name, size_t n)
{
	struct fld_module *m = calloc(1, sizeof(*m));
	struct fld_module **grown;

	if (!m)
		return NULL;
	m->name = strdup(name ? name : "");
	m->removed = true;
	m->sites = calloc(n ? n : 1, sizeof(*m->sites));
	grown = realloc(p->mods, (p->num_mods + 1) * sizeof(*p->mods));
	if (!m->name || !m->sites || !grown) {
		fld_module_free(m);
		return NULL;
	}
	p->mods = grown;
	p->mods[p->num_mods++] = m;
	return m;
}

/*
 * A module's id and whether it was unregistered, as saved (a module line,
 * or a state.json module): with its sites' slots, they find it in its
 * region again (fld_proc_attach).  Without them (records of daemons
 * before ids): id 0, unregistered.
 */
static void restore_module_id(struct fld_module *m, json_object *o)
{
	json_object *v;
	int64_t id = get_id(o, "id");

	m->id = id > 0 && id <= UINT32_MAX ? (uint32_t)id : 0;
	m->removed = !json_object_object_get_ex(o, "removed", &v) || json_object_get_boolean(v);
	if (json_object_object_get_ex(o, "base", &v) && json_object_is_type(v, json_type_int) &&
	    json_object_get_int64(v) >= 0) {
		m->base = json_object_get_uint64(v);
		m->has_base = true;
	}
}

/*
 * Keeps a file that cannot be read aside as NAME.corrupt-TIME, so that no
 * save overwrites it, and says so.  A name taken already (two in one
 * second) gets a number.  Returns false when it could not (then nothing
 * is persisted: the file must not be overwritten).
 */
static bool keep_aside(const char *name, const char *why, const char *then)
{
	char stamp[96], aside[112];
	time_t t = time(NULL);
	struct tm tm;

	gmtime_r(&t, &tm);
	snprintf(stamp, sizeof(stamp), "%s.corrupt-", name);
	strftime(stamp + strlen(stamp), sizeof(stamp) - strlen(stamp), "%Y%m%dT%H%M%SZ", &tm);
	for (int i = 0; i < 100; i++) {
		if (i)
			snprintf(aside, sizeof(aside), "%s.%d", stamp, i);
		else
			snprintf(aside, sizeof(aside), "%s", stamp);
		if (renameat2(dir_fd, name, dir_fd, aside, RENAME_NOREPLACE) == 0) {
			fld_warn("state: %s/%s %s: kept as %s; %s", dir_path, name, why, aside, then);
			return true;
		}
		if (errno != EEXIST)
			break;
	}
	fld_warn("state: %s/%s %s, and cannot be kept aside (%s): nothing will be persisted",
		 dir_path, name, why, strerror(errno));
	dir_fd = -1;
	return false;
}

/*
 * Opens a state file to read it.  Returns its descriptor with *size set,
 * or -1 with *err: 0 when there is none, -EINVAL with *why set for a file
 * to keep aside (a link, not a regular file of this uid with one name, too
 * large), or another -errno (out of descriptors or memory: the file may be
 * good, and is left alone).
 */
static int open_state(const char *name, size_t *size, const char **why, int *err)
{
	struct stat st;
	int fd = openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

	*err = 0;
	if (fd < 0) {
		if (errno == ELOOP) {
			*why = "is a symbolic link";
			*err = -EINVAL;
		} else if (errno != ENOENT) {
			*err = -errno;
		}
		return -1;
	}
	*err = -EINVAL;
	if (fstat(fd, &st) != 0)
		*err = -errno;
	else if (!S_ISREG(st.st_mode))
		*why = "is not a regular file";
	else if (st.st_uid != geteuid())
		*why = "belongs to another user";
	else if (st.st_nlink != 1)
		*why = "has other names (hard links)";
	else if ((uint64_t)st.st_size > MAX_FILE_BYTES)
		*why = "is larger than " MAX_FILE_TEXT;
	else
		*err = 0;
	if (*err) {
		close(fd);
		return -1;
	}
	*size = (size_t)st.st_size;
	return fd;
}

/* Reads all of fd (size bytes).  Returns the text (NUL-terminated), or NULL with *err. */
static char *read_all(int fd, size_t size, int *err)
{
	char *buf = malloc(size + 1);
	size_t got = 0;

	*err = -ENOMEM;
	if (!buf)
		return NULL;
	while (got < size) {
		ssize_t n = read(fd, buf + got, size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	if (got != size) {
		*err = -EIO;
		free(buf);
		return NULL;
	}
	buf[got] = 0;
	*err = 0;
	return buf;
}

/* Parses text as one JSON value, with nothing after it but blanks.  NULL otherwise. */
static json_object *parse_one(struct json_tokener *tok, const char *text, size_t len)
{
	json_object *doc;
	size_t end;

	json_tokener_reset(tok);
	doc = json_tokener_parse_ex(tok, text, (int)len);
	if (!doc)
		return NULL;
	end = json_tokener_get_parse_end(tok);
	if (end < len && text[end + strspn(text + end, " \t\r\n")]) {
		json_object_put(doc);
		return NULL;
	}
	return doc;
}

/* A record's lines, read a buffer at a time (a record may be 256 MiB). */
struct lines {
	int fd;
	char *buf;
	size_t start, end;	/* the unread part of buf */
	bool eof;
	size_t left;		/* bytes the file has after buf's: a bound on its sites */
};

/*
 * The next line (NUL-terminated, without its newline) into *line.
 * Returns its length, 0 at the end of the file, -EINVAL for a line longer
 * than MAX_LINE or a last one without a newline, or -EIO.
 */
static ssize_t next_line(struct lines *r, char **line)
{
	for (;;) {
		char *nl = memchr(r->buf + r->start, '\n', r->end - r->start);
		ssize_t n;

		if (nl) {
			*nl = 0;
			*line = r->buf + r->start;
			n = nl - *line;
			r->start += (size_t)n + 1;
			return n ? n : -EINVAL;
		}
		if (r->eof)
			return r->start == r->end ? 0 : -EINVAL;
		if (r->end - r->start >= MAX_LINE)
			return -EINVAL;
		memmove(r->buf, r->buf + r->start, r->end - r->start);
		r->end -= r->start;
		r->start = 0;
		n = read(r->fd, r->buf + r->end, 2 * MAX_LINE - r->end);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -EIO;
		r->eof = n == 0;
		r->end += (size_t)n;
		r->left -= (size_t)n < r->left ? (size_t)n : r->left;
	}
}

/*
 * A site's healing from its line's five values [healed, state, tactic,
 * why, healed_at] into *h.  Returns false when one is out of the range
 * the daemon writes (fld_site_heal keeps a region's values in it): not a
 * line of a record.
 */
static bool heal_from(const uint64_t v[5], struct fl_shm_heal *h)
{
	if (v[1] > FL_SHM_HEAL_UNHEALABLE || v[2] > UINT8_MAX ||
	    (v[2] && !fl_shm_tactic_name((unsigned)v[2])) || v[3] > FL_SHM_WHY_LAST ||
	    v[4] > UINT32_MAX)
		return false;
	memset(h, 0, sizeof(*h));
	h->failures = v[0];
	h->state = (uint8_t)v[1];
	h->tactic = (uint8_t)v[2];
	h->why = (uint8_t)v[3];
	h->healed_at = (uint32_t)v[4];
	return true;
}

/*
 * A site line: [faulting_pc, handler_pc, kind, faults, slot, populations,
 * function or null]; with its healing, [faulting_pc, handler_pc, kind,
 * faults, slot, populations, healed, state, tactic, why, healed_at,
 * function or null] (put_site); or without slot and populations (the
 * records of daemons before them: no slot, then).  A function's name may
 * be followed by its offset (records of daemons before it: not known).
 * A site without healing is as compiled, never healed.
 */
static bool parse_site(json_object *a, struct fld_module *m, uint32_t at)
{
	json_object *v[13];
	uint64_t heal[5];
	const char *fn = NULL;
	uint32_t offset = FL_SYMBOL_NO_OFFSET;
	size_t n = json_object_is_type(a, json_type_array) ? json_object_array_length(a) : 0;

	/* The offset after a name: taken off, then the line is read as one without it. */
	if ((n == 8 || n == 13) &&
	    json_object_is_type(json_object_array_get_idx(a, n - 2), json_type_string) &&
	    json_object_is_type(json_object_array_get_idx(a, n - 1), json_type_int)) {
		int64_t o = json_object_get_int64(json_object_array_get_idx(a, n - 1));

		if (o < 0 || o >= FL_SYMBOL_NO_OFFSET)
			return false;
		offset = (uint32_t)o;
		n--;
	}
	if (n != 5 && n != 7 && n != 12)
		return false;
	for (size_t i = 0; i < n; i++) {
		v[i] = json_object_array_get_idx(a, i);
		if (i < n - 1 && !json_object_is_type(v[i], json_type_int))
			return false;
	}
	if (n == 12) {
		for (size_t i = 0; i < 5; i++) {
			/* json_object_get_uint64 reads a negative number as 0. */
			if (json_object_get_int64(v[6 + i]) < 0)
				return false;
			heal[i] = json_object_get_uint64(v[6 + i]);
		}
	}
	if (json_object_is_type(v[n - 1], json_type_string))
		fn = json_object_get_string(v[n - 1]);
	else if (v[n - 1])
		return false;
	struct fld_site *s = &m->sites[at];
	struct fld_frozen f = { .faults = json_object_get_uint64(v[3]) };

	*s = (struct fld_site){
		.faulting_pc = json_object_get_uint64(v[0]),
		.handler_pc = json_object_get_uint64(v[1]),
		.kind = (uint32_t)json_object_get_uint64(v[2]),
		.slot = UINT32_MAX,
		.function_offset = offset,
	};
	if (n >= 7) {
		int64_t slot = json_object_get_int64(v[4]);

		s->slot = slot >= 0 && slot < UINT32_MAX ? (uint32_t)slot : UINT32_MAX;
		f.populations = json_object_get_uint64(v[5]);
	}
	if (n == 12 && !heal_from(heal, &f.heal))
		return false;
	return fld_site_set_frozen(m, at, &f) == 0 &&
	       (!fn || fld_site_name(m, at, fn, strlen(fn)) == 0);
}

/*
 * A site line read without json-c when it is as the writer makes it: six
 * numbers, or eleven with the healing, then null or a string with nothing
 * to unescape, perhaps with its offset (json-c took 1.7 us a line, and a
 * record may hold 2,000,000).  Returns 1 with *s filled in, 0 when the line is not that
 * plain (json-c reads it then, and rejects what it must), or -ENOMEM.
 */
static int parse_site_plain(const char *line, size_t len, struct fld_module *m, uint32_t idx)
{
	struct fld_site *s = &m->sites[idx];
	const char *at = line + 1, *end = line + len, *name;
	uint64_t v[11];
	int k = 0;
	size_t n;

	if (line[0] != '[')
		return 0;
	/* JSON's integers: digits, no sign, no leading zero. */
	while (k < 11 && at < end && *at >= '0' && *at <= '9') {
		char *next;

		if (*at == '0' && at[1] >= '0' && at[1] <= '9')
			return 0;
		errno = 0;
		v[k++] = strtoull(at, &next, 10);
		if (errno || *next != ',')
			return 0;
		at = next + 1;
	}
	if ((k != 6 && k != 11) || v[2] > UINT32_MAX)
		return 0;
	struct fld_frozen f = { .faults = v[3], .populations = v[5] };

	if (k == 11 && !heal_from(v + 6, &f.heal))
		return 0;
	*s = (struct fld_site){
		.faulting_pc = v[0], .handler_pc = v[1], .kind = (uint32_t)v[2],
		.slot = v[4] < UINT32_MAX ? (uint32_t)v[4] : UINT32_MAX,
		.function_offset = FL_SYMBOL_NO_OFFSET,
	};
	if (fld_site_set_frozen(m, idx, &f) != 0)
		return -ENOMEM;
	if (end - at == 5 && !memcmp(at, "null]", 5))
		return 1;
	if (end - at < 3 || at[0] != '"' || end[-1] != ']')
		return 0;
	if (end[-2] != '"') {
		/* "name",offset] */
		const char *digits = end - 1;
		char *next;
		unsigned long long o;

		while (digits > at && digits[-1] >= '0' && digits[-1] <= '9')
			digits--;
		if (digits == end - 1 || digits - at < 3 || digits[-1] != ',' || digits[-2] != '"' ||
		    (*digits == '0' && digits + 1 != end - 1))
			return 0;
		errno = 0;
		o = strtoull(digits, &next, 10);
		if (errno || next != end - 1 || o >= FL_SYMBOL_NO_OFFSET)
			return 0;
		s->function_offset = (uint32_t)o;
		end = digits;	/* as if it were "name"] */
	}
	name = at + 1;
	n = (size_t)(end - 2 - name);
	for (size_t i = 0; i < n; i++)
		if (name[i] == '\\' || name[i] == '"' || (unsigned char)name[i] < 0x20)
			return 0;
	return fld_site_name(m, idx, name, n) == 0 ? 1 : -ENOMEM;
}

/*
 * Restores the record in name (its serial given by the name).  Returns 0,
 * -EINVAL with *why set when it cannot be read as one (to keep aside), or
 * -ENOMEM / another -errno (left alone).
 */
static int load_record(uint64_t serial, const char *name, struct json_tokener *tok,
		       const char **why)
{
	struct lines r = { .fd = -1 };
	struct fld_proc *p = NULL;
	struct fld_module *m = NULL;
	uint32_t filled = 0;
	size_t size;
	char *line;
	ssize_t n;
	int err;

	r.fd = open_state(name, &size, why, &err);
	if (r.fd < 0)
		return err;
	r.left = size;
	r.buf = malloc(2 * MAX_LINE);
	err = r.buf ? 0 : -ENOMEM;
	*why = "is not a faultlined record of version 2";
	while (!err && (n = next_line(&r, &line)) != 0) {
		json_object *o;

		if (n > 0 && m && filled < m->num_sites) {
			int plain = parse_site_plain(line, (size_t)n, m, filled);

			if (plain > 0 && m->sites[filled].function)
				p->name_bytes += strlen(fld_site_function(m, &m->sites[filled]));
			if (plain) {
				err = plain < 0 ? plain : 0;
				filled += plain > 0;
				continue;
			}
		}
		o = n > 0 ? parse_one(tok, line, (size_t)n) : NULL;
		err = n < 0 && n != -EINVAL ? (int)n : 0;
		if (!o) {
			err = err ? err : -EINVAL;
		} else if (!p) {
			/* The header: this version, this file's serial. */
			if (get_id(o, "version") != 2 || get_u64(o, "serial") != serial ||
			    !json_object_is_type(o, json_type_object)) {
				err = -EINVAL;
			} else if (!(p = restore_header(o, &err))) {
				if (err == -EINVAL)
					*why = "has no valid pid and uid";
			}
		} else if (json_object_is_type(o, json_type_object)) {
			/* A module: its sites follow.  Each takes a line of 15 bytes or more. */
			int64_t sites = get_id(o, "sites");

			if (m && filled != m->num_sites)
				err = -EINVAL;
			else if (sites < 0 || (uint64_t)sites > (r.left + r.end - r.start) / 15 + 1)
				err = -EINVAL;
			else if (!(m = add_module(p, get_str(o, "module"), (size_t)sites)))
				err = -ENOMEM;
			if (!err) {
				restore_module_id(m, o);
				m->num_sites = (uint32_t)sites;
				p->num_sites += m->num_sites;
				filled = 0;
			}
		} else if (!m || filled == m->num_sites || !parse_site(o, m, filled)) {
			err = -EINVAL;
		} else {
			/* Names count toward the user's budget (budget.h), restored ones too. */
			if (m->sites[filled].function)
				p->name_bytes += strlen(fld_site_function(m, &m->sites[filled]));
			filled++;
		}
		json_object_put(o);
	}
	if (!err && (!p || (m && filled != m->num_sites)))
		err = -EINVAL;
	close(r.fd);
	free(r.buf);
	if (err && p)
		fld_proc_remove(p);
	if (!err) {
		for (size_t i = 0; i < p->num_mods; i++)
			fld_module_fit(p->mods[i]);
		p->rec.record_bytes = size;
		p->serial = serial;
		fld_proc_serial_above(serial);
		/* On disk as it is: written, after it exited (for this daemon). */
		p->rec.written = p->rec.written_final = true;
	}
	return err;
}

/* Restores the sites of a state.json (version 1) entry. */
static int restore_v1_modules(struct fld_proc *p, json_object *po)
{
	json_object *mods;

	if (!json_object_object_get_ex(po, "modules", &mods) ||
	    !json_object_is_type(mods, json_type_array))
		return 0;
	for (size_t i = 0; i < json_object_array_length(mods); i++) {
		json_object *mo = json_object_array_get_idx(mods, i), *sites = NULL;
		size_t n = 0;
		struct fld_module *m;

		if (json_object_object_get_ex(mo, "sites", &sites) &&
		    json_object_is_type(sites, json_type_array))
			n = json_object_array_length(sites);
		m = add_module(p, get_str(mo, "name"), n);
		if (!m)
			return -ENOMEM;
		restore_module_id(m, mo);
		for (size_t k = 0; k < n; k++) {
			json_object *so = json_object_array_get_idx(sites, k);
			const char *fn = get_str(so, "function");
			int64_t slot = get_id(so, "slot");
			const struct fld_frozen f = {
				.faults = get_u64(so, "faults"),
				.populations = get_u64(so, "populations"),
			};

			m->sites[k] = (struct fld_site){
				.faulting_pc = get_u64(so, "faulting_pc"),
				.handler_pc = get_u64(so, "handler_pc"),
				.kind = (uint32_t)get_u64(so, "kind"),
				.slot = slot >= 0 && slot < UINT32_MAX ? (uint32_t)slot : UINT32_MAX,
				.function_offset = FL_SYMBOL_NO_OFFSET,
			};
			if (fld_site_set_frozen(m, (uint32_t)k, &f) != 0)
				return -ENOMEM;
			if (fn && fld_site_name(m, (uint32_t)k, fn, strlen(fn)) != 0)
				return -ENOMEM;
			if (fn)
				p->name_bytes += strlen(fn);
		}
		m->num_sites = (uint32_t)n;
		p->num_sites += n;
	}
	return 0;
}

/* Whether p was restored from a record already: the same process, registered at the same time. */
static bool restored_twice(const struct fld_proc *p)
{
	for (size_t i = 0; i < fld_num_procs; i++) {
		const struct fld_proc *q = fld_procs[i];

		if (q != p && q->pid == p->pid && q->uid == p->uid &&
		    q->registered_ms == p->registered_ms && q->start_time == p->start_time)
			return true;
	}
	return false;
}

/*
 * A state.json of the daemons before records: restored, written out as
 * records, then removed.  Its processes come after the records' (a
 * conversion that was interrupted left records of some of them: those are
 * not restored twice).
 */
static void load_legacy(struct json_tokener *tok)
{
	json_object *doc, *procs;
	const char *why = NULL;
	size_t skipped = 0, size = 0, before = fld_num_procs, failed = 0;
	char *text;
	int fd, err;

	fd = open_state(LEGACY_NAME, &size, &why, &err);
	if (fd < 0 && err == -EINVAL) {
		keep_aside(LEGACY_NAME, why, "starting empty");
		return;
	}
	if (fd < 0 && err) {
		/* Maybe a good file: neither read nor overwritten. */
		fld_warn("state: %s/" LEGACY_NAME ": %s: nothing will be persisted", dir_path,
			 strerror(-err));
		dir_fd = -1;
		return;
	}
	if (fd < 0)
		return;	/* none */
	text = read_all(fd, size, &err);
	close(fd);
	if (!text) {
		fld_warn("state: %s/" LEGACY_NAME ": %s: nothing will be persisted", dir_path,
			 strerror(-err));
		dir_fd = -1;
		return;
	}
	doc = parse_one(tok, text, size);
	free(text);
	if (!doc || !json_object_object_get_ex(doc, "processes", &procs) ||
	    !json_object_is_type(procs, json_type_array)) {
		keep_aside(LEGACY_NAME, "is not a faultlined state file", "starting empty");
		json_object_put(doc);
		return;
	}
	/* Another version's fields may mean other things: not guessed at. */
	if (get_id(doc, "version") != 1) {
		keep_aside(LEGACY_NAME, "is not of version 1", "starting empty");
		json_object_put(doc);
		return;
	}
	for (size_t i = 0; i < json_object_array_length(procs); i++) {
		json_object *po = json_object_array_get_idx(procs, i);
		struct fld_proc *p = json_object_is_type(po, json_type_object) ?
			restore_header(po, &err) : (err = -EINVAL, NULL);

		if (p && restored_twice(p)) {
			fld_proc_remove(p);
			continue;
		}
		if (p)
			err = restore_v1_modules(p, po);
		if (err == -ENOMEM) {
			fld_warn("state: out of memory restoring %s/" LEGACY_NAME "; the rest is "
				 "left out", dir_path);
			break;
		}
		skipped += err != 0;
	}
	json_object_put(doc);
	if (skipped)
		fld_warn("state: %zu entries of %s/" LEGACY_NAME " without a valid pid and uid: "
			 "left out", skipped, dir_path);
	for (size_t i = before; i < fld_num_procs; i++) {
		write_record(fld_procs[i], true);
		failed += !current(fld_procs[i]);
	}
	if (failed)
		fld_warn("state: %s/" LEGACY_NAME ": %zu processes not written as records: kept "
			 "for the next start", dir_path, failed);
	else if (unlinkat(dir_fd, LEGACY_NAME, 0) == 0)
		fld_info("state: %s/" LEGACY_NAME " (version 1) converted to %zu records",
			 dir_path, fld_num_procs - before);
}

static int cmp_serial(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Appends s to *v (n of cap).  Returns 0 or -ENOMEM. */
static int push_serial(uint64_t **v, size_t *n, size_t *cap, uint64_t s)
{
	if (*n == *cap) {
		uint64_t *grown = realloc(*v, (*cap ? 2 * *cap : 64) * sizeof(**v));

		if (!grown)
			return -ENOMEM;
		*v = grown;
		*cap = *cap ? 2 * *cap : 64;
	}
	(*v)[(*n)++] = s;
	return 0;
}

/*
 * The serials of the records in the directory, sorted (registration
 * order), and of the counts files in *counts (*num_counts of them);
 * temporary files left by a daemon that died are removed.  Returns how
 * many records, or -errno.
 */
static ssize_t list_records(uint64_t **out, uint64_t **counts, size_t *num_counts)
{
	size_t ncounts = 0, counts_cap = 0;
	int fd = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	uint64_t *serials = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	*counts = NULL;
	while ((e = readdir(d))) {
		unsigned long long s;
		int end = 0;

		if (sscanf(e->d_name, "proc.%llu.counts%n", &s, &end) == 1 && end) {
			char name[64];

			if (!strcmp(e->d_name + end, ".tmp")) {
				unlinkat(dir_fd, e->d_name, 0);
				continue;
			}
			fld_counts_name(name, sizeof(name), s, false);
			if (!strcmp(name, e->d_name) &&
			    push_serial(counts, &ncounts, &counts_cap, s) != 0) {
				free(serials);
				free(*counts);
				closedir(d);
				return -ENOMEM;
			}
			continue;
		}
		end = 0;
		if (sscanf(e->d_name, "proc.%llu.json%n", &s, &end) != 1 || !end)
			continue;
		if (!strcmp(e->d_name + end, ".tmp")) {
			unlinkat(dir_fd, e->d_name, 0);
			continue;
		}
		/* Exactly the name this daemon writes (no sign, no leading zeros). */
		{
			char name[64];

			record_name(name, sizeof(name), s, false);
			if (strcmp(name, e->d_name))
				continue;
		}
		if (push_serial(&serials, &n, &cap, s) != 0) {
			free(serials);
			free(*counts);
			closedir(d);
			return -ENOMEM;
		}
	}
	closedir(d);
	*num_counts = ncounts;
	/* serials is NULL when there are none, which qsort must not be given. */
	if (n)
		qsort(serials, n, sizeof(*serials), cmp_serial);
	*out = serials;
	return (ssize_t)n;
}

/*
 * The counts file of p, restored from its record just now: its counts
 * replace the record's when it goes with the record (fld_counts_load).
 * Returns 0, or -errno for a file that may be good (left alone).
 */
static int load_counts(struct fld_proc *p)
{
	char name[64];
	const char *why = NULL;
	size_t size;
	int err, fd;

	fld_counts_name(name, sizeof(name), p->serial, false);
	fd = open_state(name, &size, &why, &err);
	if (fd < 0 && err == -EINVAL) {
		keep_aside(name, why, "its process's counts are its record's");
		return 0;
	}
	if (fd < 0)
		return err;
	err = fld_counts_load(p, fd, size, &why);
	close(fd);
	if (err > 0)
		p->rec.counts_bytes = size;
	if (err == -EINVAL) {
		keep_aside(name, why, "its process's counts are its record's");
		return 0;
	}
	if (err == 0) {
		/* Left by a daemon that died between a record and its counts file. */
		fld_info("state: %s/%s is of an earlier record of its process: removed", dir_path,
			 name);
		unlinkat(dir_fd, name, 0);
	}
	return err < 0 ? err : 0;
}

int fld_state_load(int dfd, const char *dir)
{
	struct json_tokener *tok;
	uint64_t *serials = NULL, *counts = NULL;
	ssize_t n;
	size_t failed = 0, num_counts = 0;

	if (strlen(dir) >= sizeof(dir_path))
		return -ENAMETOOLONG;
	strcpy(dir_path, dir);
	dir_fd = dfd;
	tok = json_tokener_new_ex(JSON_TOKENER_DEFAULT_DEPTH);
	n = tok ? list_records(&serials, &counts, &num_counts) : -ENOMEM;
	if (n < 0) {
		fld_warn("state: %s: %s: starting empty, and nothing will be persisted", dir,
			 strerror((int)-n));
		dir_fd = -1;
		if (tok)
			json_tokener_free(tok);
		return 0;
	}
	for (ssize_t i = 0; i < n && dir_fd >= 0; i++) {
		char name[64];
		const char *why = NULL;
		int err;

		record_name(name, sizeof(name), serials[i], false);
		err = load_record(serials[i], name, tok, &why);
		if (!err)
			err = load_counts(fld_proc_by_serial(serials[i]));
		if (err == -EINVAL) {
			keep_aside(name, why, "its process is left out");
		} else if (err) {
			/* Maybe a good file: left alone, and nothing written over it. */
			fld_warn("state: %s/%s: %s: left out, and nothing will be persisted", dir,
				 name, strerror(-err));
			dir_fd = -1;
			failed++;
		}
	}
	/* A counts file without its record (kept aside, or removed by hand). */
	for (size_t i = 0; i < num_counts && dir_fd >= 0; i++) {
		char name[64];

		if (fld_proc_by_serial(counts[i]))
			continue;
		fld_counts_name(name, sizeof(name), counts[i], false);
		keep_aside(name, "belongs to no record", "left out");
	}
	free(counts);
	free(serials);
	if (dir_fd >= 0)
		load_legacy(tok);
	json_tokener_free(tok);
	/* From now on a process that goes takes its record along. */
	fld_proc_observe(&state_observer);
	/* What takes a user over its budgets goes, with its records (budget.h). */
	fld_budget_restored();
	fld_info("state: %zu processes restored from %s%s", fld_num_procs, dir,
		 failed ? " (some left out)" : "");
	return 0;
}
