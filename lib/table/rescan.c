/* SPDX-License-Identifier: MIT */
/*
 * The rescan of the loaded modules (fl_refresh): modules that appeared
 * since the last one are read (their fault maps, through the discovery
 * layer) and added, those gone are removed, in one publication each way.
 */
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <faultline/discovery.h>
#include <faultline/dispatch.h>

#include "core/log.h"
#include "dispatch/dispatch.h"
#include "table/modules.h"
#include "table/sites.h"
#include "table/stackmaps.h"
#include "table/table.h"

/* Tries of a module's file while no descriptor is free, a millisecond apart. */
#define OPEN_TRIES 50

struct loaded {
	char *name;
	uint64_t bias;
	uint64_t first_load;
};

struct loaded_list {
	struct loaded *v;
	size_t n;
	int err;
};

static int collect(struct dl_phdr_info *info, size_t size, void *ctx)
{
	struct loaded_list *l = ctx;
	uint64_t first = 0;
	bool found = false;
	struct loaded *grown;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		if (info->dlpi_phdr[i].p_type == PT_LOAD) {
			first = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
			found = true;
			break;
		}
	}
	/* The vDSO has no file and no fault map. */
	if (!found || (uint64_t)getauxval(AT_SYSINFO_EHDR) == first)
		return 0;
	grown = realloc(l->v, (l->n + 1) * sizeof(*l->v));
	if (!grown)
		goto nomem;
	l->v = grown;
	l->v[l->n].name = strdup(info->dlpi_name ? info->dlpi_name : "");
	if (!l->v[l->n].name)
		goto nomem;
	l->v[l->n].bias = info->dlpi_addr;
	l->v[l->n].first_load = first;
	l->n++;
	return 0;
nomem:
	l->err = -ENOMEM;
	return 1;
}

static void loaded_free(struct loaded_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].name);
	free(l->v);
}

static struct fl_table_mod *find_elf(const struct loaded *ld)
{
	for (size_t i = 0; i < fl_table_num_mods; i++) {
		struct fl_table_mod *m = fl_table_mods[i];

		if (m->elf && m->bias == ld->bias && m->first_load == ld->first_load &&
		    strcmp(m->name, ld->name) == 0)
			return m;
	}
	return NULL;
}

/*
 * A module record for a newly loaded ELF module: its sites and its stack
 * map records.  Modules with neither, or whose maps are unusable (logged
 * once), are kept with none so that the next rescan does not open their
 * files again.
 */
static struct fl_table_mod *elf_module_new(const struct loaded *ld)
{
	struct fl_table_mod *m = calloc(1, sizeof(*m));
	struct fl_module *fm = NULL;
	struct fl_diag diag = { 0 };
	struct fl_sites s = { 0 };
	int err;

	if (!m || !(m->name = strdup(ld->name))) {
		free(m);
		return NULL;
	}
	m->elf = true;
	m->bias = ld->bias;
	m->first_load = ld->first_load;

	/*
	 * No descriptor free (a low RLIMIT_NOFILE): another thread of
	 * faultline's may hold the last one for a moment (a connection being
	 * made, before it moves above 512), so a few more tries first.
	 */
	for (int tries = 0;; tries++) {
		struct timespec ms = { 0, 1000 * 1000 };

		err = fl_module_open_addr((const void *)(uintptr_t)ld->first_load, NULL, &fm, &diag);
		if ((err != -EMFILE && err != -ENFILE) || tries == OPEN_TRIES)
			break;
		nanosleep(&ms, NULL);
	}
	if (err == 0)
		err = fl_sites_of_elf(fm, &s, &diag);
	if (err == 0)
		err = fl_smindex_of_elf(fm, &m->stackmaps, &diag);
	if (err == -ENOMEM) {
		free(s.v);
		fl_module_free(fm);
		fl_table_mod_free(m);
		return NULL;
	}
	if (err) {
		fl_log(FL_LOG_WARN, "%s: not registered: %s",
		       ld->name[0] ? ld->name : "the main program",
		       diag.msg[0] ? diag.msg : strerror(-err));
		free(s.v);
	} else {
		fl_table_mod_take_sites(m, &s);
		if (fm->num_text) {
			m->code_lo = fm->text[0].start;
			m->code_hi = fm->text[fm->num_text - 1].end;
		}
		fl_table_mod_prepare(m, fm, NULL);
		if (fl_table_mod_published(m)) {
			unsigned nsm = m->stackmaps ? fl_smindex_count(m->stackmaps) : 0;

			fl_log(FL_LOG_DEBUG, "%s: %u implicit check%s, %u stack map record%s",
			       ld->name[0] ? ld->name : "the main program", m->num_sites,
			       m->num_sites == 1 ? "" : "s", nsm, nsm == 1 ? "" : "s");
		}
	}
	fl_module_free(fm);
	return m;
}

int fl_refresh(void)
{
	struct loaded_list l = { 0 };
	struct fl_table_mod **added = NULL, **removed = NULL;
	size_t num_added = 0, num_removed = 0;
	int changes = 0, err = 0;

	if (!fl_table_ready())
		return -ENODEV;
	if (fl_table_init_flags & FL_INIT_NO_DISCOVERY)
		return 0;

	pthread_mutex_lock(&fl_table_refresh_lock);
	dl_iterate_phdr(collect, &l);
	if (l.err) {
		err = l.err;
		goto out;
	}
	added = calloc(l.n ? l.n : 1, sizeof(*added));
	if (!added) {
		err = -ENOMEM;
		goto out;
	}

	/* Which are new: read the list under lock, open files without it. */
	for (size_t i = 0; i < l.n; i++) {
		bool known;

		pthread_mutex_lock(&fl_table_lock);
		known = find_elf(&l.v[i]) != NULL;
		pthread_mutex_unlock(&fl_table_lock);
		if (known)
			continue;
		added[num_added] = elf_module_new(&l.v[i]);
		if (!added[num_added]) {
			err = -ENOMEM;
			goto out;
		}
		num_added++;
	}

	pthread_mutex_lock(&fl_table_lock);
	fl_table_report_replaced();
	removed = calloc(fl_table_num_mods ? fl_table_num_mods : 1, sizeof(*removed));
	if (!removed) {
		pthread_mutex_unlock(&fl_table_lock);
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < fl_table_num_mods; i++)
		fl_table_mods[i]->seen = !fl_table_mods[i]->elf;
	for (size_t i = 0; i < l.n; i++) {
		struct fl_table_mod *m = find_elf(&l.v[i]);

		if (m)
			m->seen = true;
	}
	for (size_t i = 0; i < fl_table_num_mods;) {
		if (!fl_table_mods[i]->seen) {
			if (fl_table_mod_published(fl_table_mods[i]))
				changes++;
			removed[num_removed++] = fl_table_mod_take(i);
		} else {
			i++;
		}
	}
	if (num_removed && !changes) {
		/* None was in a snapshot: no publication, no grace period. */
		for (size_t i = 0; i < num_removed; i++)
			fl_table_mod_free(removed[i]);
		num_removed = 0;
	} else if (num_removed) {
		err = fl_table_publish(removed, num_removed);
		if (err) {
			/* Keep them: the handler still has their sites. */
			for (size_t i = 0; i < num_removed; i++)
				fl_table_mods[fl_table_num_mods++] = removed[i];
			num_removed = 0;
			pthread_mutex_unlock(&fl_table_lock);
			goto out;
		}
		num_removed = 0;
	}
	for (size_t i = 0; i < num_added; i++) {
		struct fl_table_mod *m = added[i];
		int r;

		added[i] = NULL;
		r = fl_table_mod_add(m);
		if (r < 0) {
			fl_log(FL_LOG_WARN, "%s: not registered: %s",
			       m->name[0] ? m->name : "the main program",
			       r == -EEXIST ? "its code overlaps a registered module" :
			       strerror(-r));
			fl_table_mod_free(m);
			if (r == -ENOMEM)
				err = r;
			continue;
		}
		changes += fl_table_mod_published(m);
	}
	pthread_mutex_unlock(&fl_table_lock);
out:
	for (size_t i = 0; added && i < num_added; i++)
		fl_table_mod_free(added[i]);
	free(added);
	free(removed);
	loaded_free(&l);
	/*
	 * Whatever came of it: the modules it could register are published,
	 * and faults waiting for a first rescan no longer wait.
	 */
	fl_dispatch_scan_done();
	pthread_mutex_unlock(&fl_table_refresh_lock);
	return err ? err : changes;
}

void fl_table_defer_scan(void)
{
	atomic_store(&fl_dispatch.scan_pending, 1);
}

int fl_table_deferred_scan(void)
{
	if (!fl_table_scan_pending())
		return 0;
	atomic_store(&fl_dispatch.scanner, (int32_t)syscall(SYS_gettid));
	return fl_refresh();
}

bool fl_table_scan_pending(void)
{
	return atomic_load_explicit(&fl_dispatch.scan_pending, memory_order_acquire) != 0;
}

bool fl_table_scan_wait(int ms)
{
	return fl_dispatch_scan_wait_ms(ms);
}
