/* SPDX-License-Identifier: MIT */
/*
 * Persistence: every process the daemon knows, with its sites and counts,
 * in STATE_DIR/state.json, written atomically (a temporary file, fsync,
 * rename).  Written at once when a process exits (its final counts exist
 * nowhere else), and within a tick of any other change.  At start the file
 * is read back: every process in it is exited as far as this daemon
 * knows; one that was live comes back by itself (the agent re-registers)
 * and takes its entry back, or its region comes back from the keeper
 * (keeper.h).  Modules are saved with their ids and counter slots, so that
 * they are found in the region again.
 *
 * The directory was checked at start (safedir.c) and is used through its
 * descriptor; the files in it are opened with O_NOFOLLOW, and the
 * temporary file is created with O_EXCL, so that a name planted in a
 * sticky directory is never followed.  A file that cannot be read as a
 * state file of this version is kept aside, never overwritten.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "dlog.h"
#include "procs.h"
#include "session.h"

#define STATE_NAME "state.json"
#define STATE_TMP "state.json.tmp"
/* Far above what the bounds on processes and sites let the daemon write. */
#define STATE_MAX_BYTES (256u << 20)

static char path[PATH_MAX];	/* for messages */
static int dir_fd = -1;
static bool dirty;

static json_object *proc_to_json(const struct fld_proc *p)
{
	json_object *o = json_object_new_object();
	json_object *mods = json_object_new_array();

	json_object_object_add(o, "pid", json_object_new_int(p->pid));
	json_object_object_add(o, "uid", json_object_new_int64(p->uid));
	json_object_object_add(o, "comm", json_object_new_string(p->comm));
	json_object_object_add(o, "exited", json_object_new_boolean(p->exited));
	json_object_object_add(o, "registered_ms", json_object_new_uint64(p->registered_ms));
	json_object_object_add(o, "start_time", json_object_new_uint64(p->start_time));
	json_object_object_add(o, "region_ino", json_object_new_uint64(p->region_ino));
	json_object_object_add(o, "exited_ms", json_object_new_uint64(p->exited_ms));
	for (size_t i = 0; i < p->num_mods; i++) {
		const struct fld_module *m = p->mods[i];
		json_object *mo = json_object_new_object();
		json_object *sites = json_object_new_array();

		json_object_object_add(mo, "id", json_object_new_int64(m->id));
		json_object_object_add(mo, "name", json_object_new_string(m->name));
		json_object_object_add(mo, "removed", json_object_new_boolean(m->removed));
		for (uint32_t k = 0; k < m->num_sites; k++) {
			const struct fld_site *s = &m->sites[k];
			json_object *so = json_object_new_object();

			json_object_object_add(so, "faulting_pc", json_object_new_uint64(s->faulting_pc));
			json_object_object_add(so, "handler_pc", json_object_new_uint64(s->handler_pc));
			json_object_object_add(so, "kind", json_object_new_int((int)s->kind));
			json_object_object_add(so, "slot", json_object_new_int64(s->slot));
			json_object_object_add(so, "function", s->function ?
					       json_object_new_string(s->function) : NULL);
			json_object_object_add(so, "faults",
					       json_object_new_uint64(fld_site_faults(p, m, s)));
			/* Rare: only where there are any (an older state has none). */
			if (fld_site_populations(p, m, s))
				json_object_object_add(so, "populations",
						       json_object_new_uint64(
							       fld_site_populations(p, m, s)));
			json_object_array_add(sites, so);
		}
		json_object_object_add(mo, "sites", sites);
		json_object_array_add(mods, mo);
	}
	json_object_object_add(o, "modules", mods);
	return o;
}

int fld_state_save(void)
{
	json_object *doc, *procs;
	const char *text;
	size_t len;
	int fd, err = 0;

	if (dir_fd < 0) {
		fld_procs_saved();
		return 0;
	}
	doc = json_object_new_object();
	procs = json_object_new_array();
	json_object_object_add(doc, "version", json_object_new_int(1));
	for (size_t i = 0; i < fld_num_procs; i++)
		json_object_array_add(procs, proc_to_json(fld_procs[i]));
	json_object_object_add(doc, "processes", procs);
	text = json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN);
	len = strlen(text);

	/* A name left by a save that died, or planted: never written through. */
	if (unlinkat(dir_fd, STATE_TMP, 0) != 0 && errno != ENOENT)
		err = -errno;
	fd = err ? -1 : openat(dir_fd, STATE_TMP, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
			       O_CLOEXEC, 0600);
	if (!err && (fd < 0 || write(fd, text, len) != (ssize_t)len || fsync(fd) != 0))
		err = errno ? -errno : -EIO;
	if (fd >= 0)
		close(fd);
	if (!err && renameat(dir_fd, STATE_TMP, dir_fd, STATE_NAME) != 0)
		err = -errno;
	json_object_put(doc);
	if (err) {
		if (fd >= 0)
			unlinkat(dir_fd, STATE_TMP, 0);
		fld_warn("state: cannot write %s: %s", path, strerror(-err));
		return err;
	}
	dirty = false;
	fld_procs_saved();
	return 0;
}

void fld_state_changed(void)
{
	dirty = true;
}

/*
 * Counts change without a message (the processes increment them in their
 * regions): while any process is live, the file is also rewritten every
 * SAVE_PERIOD_MS, so that a process that exits while the daemon is down
 * comes back with counts at most that old.
 */
#define SAVE_PERIOD_MS 5000

void fld_state_tick(void)
{
	static struct timespec last;
	struct timespec now;
	bool live = false;
	long ms;

	clock_gettime(CLOCK_MONOTONIC, &now);
	ms = (now.tv_sec - last.tv_sec) * 1000 + (now.tv_nsec - last.tv_nsec) / 1000000;
	for (size_t i = 0; i < fld_num_procs && !live; i++)
		live = !fld_procs[i]->exited || fld_procs[i]->region;
	if (dirty || (live && ms >= SAVE_PERIOD_MS)) {
		fld_state_save();
		last = now;
	}
}

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

/*
 * Restores one process.  Returns 0, -EINVAL for an entry whose pid or uid
 * no process can have (the uid decides who sees it; a pid is matched with
 * a new registration's), or -ENOMEM.
 */
static int restore_proc(json_object *po)
{
	json_object *mods, *v;
	struct fld_proc *p;
	char comm[FL_PROTO_COMM] = { 0 };
	const char *c = get_str(po, "comm");
	int64_t pid = get_id(po, "pid"), uid = get_id(po, "uid");

	if (pid <= 0 || pid > INT_MAX || uid < 0 || uid >= (uid_t)-1)
		return -EINVAL;
	if (c)
		strncpy(comm, c, sizeof(comm) - 1);
	p = fld_proc_add((pid_t)pid, (uid_t)uid, comm);
	if (!p)
		return -ENOMEM;
	p->exited = true;
	p->restored_live = !(json_object_object_get_ex(po, "exited", &v) &&
			     json_object_get_boolean(v));
	p->registered_ms = get_u64(po, "registered_ms");
	p->start_time = get_u64(po, "start_time");
	p->region_ino = get_u64(po, "region_ino");
	p->exited_ms = get_u64(po, "exited_ms");
	if (!json_object_object_get_ex(po, "modules", &mods) ||
	    !json_object_is_type(mods, json_type_array))
		return 0;
	for (size_t i = 0; i < json_object_array_length(mods); i++) {
		json_object *mo = json_object_array_get_idx(mods, i), *sites;
		struct fld_module *m = calloc(1, sizeof(*m));
		struct fld_module **grown;
		size_t n;

		if (!m)
			return -ENOMEM;
		m->name = strdup(get_str(mo, "name") ? get_str(mo, "name") : "");
		/* Its id and slots: to find it in the region again (fld_proc_attach). */
		m->id = get_id(mo, "id") > 0 && get_id(mo, "id") <= UINT32_MAX ?
			(uint32_t)get_id(mo, "id") : 0;
		m->removed = !json_object_object_get_ex(mo, "removed", &v) ||
			     json_object_get_boolean(v);
		if (json_object_object_get_ex(mo, "sites", &sites) &&
		    json_object_is_type(sites, json_type_array)) {
			n = json_object_array_length(sites);
			m->sites = calloc(n ? n : 1, sizeof(*m->sites));
			for (size_t k = 0; m->sites && k < n; k++) {
				json_object *so = json_object_array_get_idx(sites, k);
				const char *fn = get_str(so, "function");

				m->sites[k] = (struct fld_site){
					.faulting_pc = get_u64(so, "faulting_pc"),
					.handler_pc = get_u64(so, "handler_pc"),
					.kind = (uint32_t)get_u64(so, "kind"),
					.function = fn ? strdup(fn) : NULL,
					.frozen = get_u64(so, "faults"),
					.frozen_populations = get_u64(so, "populations"),
					.slot = get_id(so, "slot") >= 0 && get_id(so, "slot") < UINT32_MAX ?
						(uint32_t)get_id(so, "slot") : UINT32_MAX,
				};
			}
			m->num_sites = m->sites ? (uint32_t)n : 0;
		}
		grown = realloc(p->mods, (p->num_mods + 1) * sizeof(*p->mods));
		if (!m->name || !grown) {
			fld_module_free(m);
			return -ENOMEM;
		}
		p->mods = grown;
		p->mods[p->num_mods++] = m;
		p->num_sites += m->num_sites;
	}
	return 0;
}

/*
 * Keeps a state file that cannot be read aside as STATE_NAME.corrupt-TIME,
 * so that the next save does not overwrite it, and says so.  A name taken
 * already (two in one second) gets a number.
 */
static void keep_aside(const char *why)
{
	char stamp[48], name[64];
	time_t t = time(NULL);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(stamp, sizeof(stamp), STATE_NAME ".corrupt-%Y%m%dT%H%M%SZ", &tm);
	for (int i = 0; i < 100; i++) {
		if (i)
			snprintf(name, sizeof(name), "%s.%d", stamp, i);
		else
			snprintf(name, sizeof(name), "%s", stamp);
		if (renameat2(dir_fd, STATE_NAME, dir_fd, name, RENAME_NOREPLACE) == 0) {
			fld_warn("state: %s %s: kept as %s; starting empty", path, why, name);
			return;
		}
		if (errno != EEXIST)
			break;
	}
	fld_warn("state: %s %s, and cannot be kept aside (%s): starting empty, and "
		 "nothing will be persisted", path, why, strerror(errno));
	dir_fd = -1;
}

/*
 * Reads the state file whole.  Returns it, or NULL with *err: 0 when there
 * is none, -EINVAL with *why set for a file to keep aside (a link, not a
 * regular file of this uid with one name, too large), or another -errno
 * (out of descriptors or memory, a read that failed: the file may be
 * good, and is left alone).
 */
static char *read_state(size_t *len, const char **why, int *err)
{
	struct stat st;
	char *buf = NULL;
	size_t got = 0;
	int fd = openat(dir_fd, STATE_NAME, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

	*err = 0;
	if (fd < 0) {
		if (errno == ELOOP) {
			*why = "is a symbolic link";
			*err = -EINVAL;
		} else if (errno != ENOENT) {
			*err = -errno;
		}
		return NULL;
	}
	*err = -EINVAL;
	if (fstat(fd, &st) != 0) {
		*err = -errno;
	} else if (!S_ISREG(st.st_mode)) {
		*why = "is not a regular file";
	} else if (st.st_uid != geteuid()) {
		*why = "belongs to another user";
	} else if (st.st_nlink != 1) {
		*why = "has other names (hard links)";
	} else if ((uint64_t)st.st_size > STATE_MAX_BYTES) {
		*why = "is larger than 256 MiB";
	} else if (!(buf = malloc((size_t)st.st_size + 1))) {
		*err = -ENOMEM;
	} else {
		while (got < (size_t)st.st_size) {
			ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				break;
			got += (size_t)n;
		}
		if (got == (size_t)st.st_size) {
			*err = 0;
		} else {
			*err = -EIO;
			free(buf);
			buf = NULL;
		}
	}
	close(fd);
	if (buf) {
		buf[got] = 0;
		*len = got;
	}
	return buf;
}

int fld_state_load(int dfd, const char *dir)
{
	json_object *doc, *procs, *version;
	struct json_tokener *tok;
	const char *why = NULL;
	size_t skipped = 0, len = 0;
	char *text;
	int n, err;

	n = snprintf(path, sizeof(path), "%s/" STATE_NAME, dir);
	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	dir_fd = dfd;
	text = read_state(&len, &why, &err);
	if (!text && err == -EINVAL) {
		keep_aside(why);
		return 0;
	}
	if (!text && err) {
		/* Maybe a good file: neither read nor overwritten. */
		fld_warn("state: %s: %s: starting empty, and nothing will be persisted", path,
			 strerror(-err));
		dir_fd = -1;
		return 0;
	}
	if (!text)
		return 0;	/* none yet */
	tok = json_tokener_new_ex(JSON_TOKENER_DEFAULT_DEPTH);
	doc = tok ? json_tokener_parse_ex(tok, text, (int)len) : NULL;
	if (doc && tok && json_tokener_get_parse_end(tok) < len &&
	    text[json_tokener_get_parse_end(tok) +
		 strspn(text + json_tokener_get_parse_end(tok), " \t\r\n")]) {
		/* Something after the document. */
		json_object_put(doc);
		doc = NULL;
	}
	if (tok)
		json_tokener_free(tok);
	free(text);
	if (!doc || !json_object_object_get_ex(doc, "processes", &procs) ||
	    !json_object_is_type(procs, json_type_array)) {
		keep_aside("is not a faultlined state file");
		json_object_put(doc);
		return 0;
	}
	/* Another version's fields may mean other things: not guessed at. */
	if (!json_object_object_get_ex(doc, "version", &version) ||
	    !json_object_is_type(version, json_type_int) || json_object_get_int64(version) != 1) {
		keep_aside("is not of version 1");
		json_object_put(doc);
		return 0;
	}
	for (size_t i = 0; i < json_object_array_length(procs); i++) {
		json_object *po = json_object_array_get_idx(procs, i);
		int bad = json_object_is_type(po, json_type_object) ? restore_proc(po) : -EINVAL;

		if (bad == -ENOMEM) {
			fld_warn("state: out of memory restoring %s; the rest is left out", path);
			break;
		}
		skipped += bad != 0;
	}
	if (skipped)
		fld_warn("state: %zu entries of %s without a valid pid and uid: left out",
			 skipped, path);
	fld_info("state: %zu processes restored from %s", fld_num_procs, path);
	json_object_put(doc);
	return 0;
}
