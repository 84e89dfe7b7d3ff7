// SPDX-License-Identifier: MIT
/*
 * faultlined end to end, group persist (e2e persist ...): a live process's
 * counts in its counts file, proc.SERIAL.counts (docs/state.md): nothing
 * written while it idles, one block written for one changed count, its
 * counts back after a kill -9 of the daemon and its keeper, a bad counts
 * file kept aside without changing anything.
 * The harness and the driver: harness.c.
 */
#include "harness.h"

#include "../../bench/fakeproc.h"

/* The header and slot of a counts file (docs/state.md), as the test reads them. */
#define COUNTS_HEADER 64
#define COUNTS_SLOT 32

/* Lines of the daemon's log holding both needles. */
static int log_count(const char *needle, const char *needle2)
{
	FILE *f = fopen(dlog, "r");
	char line[1024];
	int n = 0;

	while (f && fgets(line, sizeof(line), f))
		n += strstr(line, needle) && strstr(line, needle2);
	if (f)
		fclose(f);
	return n;
}

/* Waits until the log holds more than n lines with both needles. */
static bool log_more(const char *needle, const char *needle2, int n)
{
	double end = now() + WAIT_S;

	while (log_count(needle, needle2) <= n) {
		if (now() > end)
			return false;
		sleep_ms(50);
	}
	return true;
}

/* The serial of pid's latest record, or 0. */
static uint64_t serial_of(pid_t pid)
{
	json_object *all = record_headers();
	uint64_t serial = 0;

	for (size_t i = 0; i < json_object_array_length(all); i++) {
		json_object *h = json_object_array_get_idx(all, i);
		uint64_t s = json_object_get_uint64(get(h, "serial"));

		if (json_object_get_int(get(h, "pid")) == pid && s > serial)
			serial = s;
	}
	json_object_put(all);
	return serial;
}

static void counts_path(char *buf, size_t size, uint64_t serial, const char *suffix)
{
	snprintf(buf, size, "%s/proc.%" PRIu64 ".counts%s", state_dir, serial, suffix);
}

/* Waits until pid has a record and a counts file of slots slots (0: any).  Its serial or 0. */
static uint64_t wait_counts_file(pid_t pid, uint32_t slots)
{
	double end = now() + WAIT_S;

	for (;;) {
		uint64_t serial = serial_of(pid);
		char path[PATH_MAX + 64];
		struct stat st;

		counts_path(path, sizeof(path), serial, "");
		if (serial && stat(path, &st) == 0 &&
		    (!slots || st.st_size == COUNTS_HEADER + (off_t)slots * COUNTS_SLOT))
			return serial;
		if (now() > end)
			return 0;
		sleep_ms(50);
	}
}

/* The files in the state directory whose name starts with prefix. */
static int files_like(const char *prefix)
{
	DIR *d = opendir(state_dir);
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d)))
		n += !strncmp(e->d_name, prefix, strlen(prefix));
	if (d)
		closedir(d);
	return n;
}

/*
 * Kills the keeper of the state directory (fld-keeper, holding it open)
 * and waits until it is gone: with the daemon killed too, nothing holds a
 * process's region, and its counts are what the state directory says.
 * Returns 0, or -1 when there is no keeper.
 */
static int keeper_kill9(void)
{
	DIR *procs = opendir("/proc");
	struct dirent *e;
	pid_t keeper = -1;
	char want[PATH_MAX];
	double end = now() + WAIT_S;

	if (!realpath(state_dir, want))
		return -1;
	while (procs && keeper < 0 && (e = readdir(procs))) {
		char path[PATH_MAX], comm[32] = "";
		DIR *fds;
		struct dirent *f;
		FILE *c;

		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/comm", e->d_name);
		c = fopen(path, "r");
		if (c && fgets(comm, sizeof(comm), c) && !strcmp(comm, "fld-keeper\n")) {
			snprintf(path, sizeof(path), "/proc/%s/fd", e->d_name);
			fds = opendir(path);
			while (fds && keeper < 0 && (f = readdir(fds))) {
				char link[PATH_MAX + 300], to[PATH_MAX] = "";

				snprintf(link, sizeof(link), "%s/%s", path, f->d_name);
				if (readlink(link, to, sizeof(to) - 1) > 0 && !strcmp(to, want))
					keeper = atoi(e->d_name);
			}
			if (fds)
				closedir(fds);
		}
		if (c)
			fclose(c);
	}
	if (procs)
		closedir(procs);
	if (keeper < 0)
		return -1;
	kill(keeper, SIGKILL);
	/* Not a child of ours (the daemon forks it twice): gone, or a zombie of init's. */
	while (now() < end) {
		char path[64], stat[256] = "";
		FILE *s;
		char *rp;

		snprintf(path, sizeof(path), "/proc/%d/stat", (int)keeper);
		s = fopen(path, "r");
		if (!s)
			return 0;
		if (!fgets(stat, sizeof(stat), s))
			stat[0] = 0;
		fclose(s);
		rp = strrchr(stat, ')');
		if (!rp || rp[2] == 'Z' || rp[2] == 'X')
			return 0;
		waitpid(keeper, NULL, WNOHANG);
		sleep_ms(25);
	}
	return -1;
}

static bool mtime_same(const struct stat *a, const struct stat *b)
{
	return a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
	       a->st_size == b->st_size && a->st_ino == b->st_ino;
}

/*
 * A live process that fails no check writes nothing: its counts file and
 * its record keep their mtimes over two save periods (5 s each); a failed
 * check then reaches the counts file, and only it, and after a kill -9 of
 * the daemon and of its keeper, with the process exiting meanwhile, its
 * counts come back from there (its record alone says less).
 */
static pid_t idle_writes_nothing_and_counts_survive_kill9(struct proc *a)
{
	char counts[PATH_MAX + 64], record[PATH_MAX + 64], needle[64];
	struct stat c0, r0, c1, r1;
	uint64_t serial;
	pid_t apid;
	int n;

	apid = start_waiter(a, 0, 5, 6, 7, "persist");
	if (apid < 0)
		return -1;
	serial = wait_counts_file(apid, 0);
	if (!serial) {
		fail("persist: a live process has a counts file", "none for pid %d", (int)apid);
		return -1;
	}
	ok("persist: a live process has a counts file");
	counts_path(counts, sizeof(counts), serial, "");
	snprintf(record, sizeof(record), "%s/proc.%" PRIu64 ".json", state_dir, serial);
	/* Its first period may still write what the registration's last moments changed. */
	snprintf(needle, sizeof(needle), "pid %d: ", (int)apid);
	sleep_ms(6000);
	n = log_count(needle, "blocks of counts written");
	if (stat(counts, &c0) || stat(record, &r0)) {
		fail("persist: idle", "cannot stat %s: %s", counts, strerror(errno));
		return -1;
	}
	sleep_ms(11000);
	if (stat(counts, &c1) || stat(record, &r1)) {
		fail("persist: idle", "cannot stat %s: %s", counts, strerror(errno));
		return -1;
	}
	check(mtime_same(&c0, &c1) && mtime_same(&r0, &r1) &&
	      log_count(needle, "blocks of counts written") == n,
	      "idle_live_process_writes_nothing_over_two_periods",
	      "counts file mtime %ld.%09ld -> %ld.%09ld, record %ld.%09ld -> %ld.%09ld, "
	      "%d -> %d block writes", (long)c0.st_mtim.tv_sec, c0.st_mtim.tv_nsec,
	      (long)c1.st_mtim.tv_sec, c1.st_mtim.tv_nsec, (long)r0.st_mtim.tv_sec,
	      r0.st_mtim.tv_nsec, (long)r1.st_mtim.tv_sec, r1.st_mtim.tv_nsec, n,
	      log_count(needle, "blocks of counts written"));

	waiter_fail(a, 1, 1, 1, "persist");
	if (!log_more(needle, "blocks of counts written", n)) {
		fail("persist: a failed check reaches the counts file", "no block written");
		return -1;
	}
	stat(counts, &c1);
	stat(record, &r1);
	check(!mtime_same(&c0, &c1) && mtime_same(&r0, &r1),
	      "a_failed_check_rewrites_the_counts_file_not_the_record",
	      "counts file %s, record %s", mtime_same(&c0, &c1) ? "unchanged" : "written",
	      mtime_same(&r0, &r1) ? "unchanged" : "written");

	daemon_kill9();
	if (keeper_kill9() != 0) {
		fail("persist: kill -9 of the keeper", "no keeper of %s found, or it lives on",
		     state_dir);
		return -1;
	}
	/* It exits while nothing holds its region. */
	proc_end(a);
	if (daemon_start())
		return -1;
	expect_counts("live_counts_survive_kill9_of_daemon_and_keeper_through_the_counts_file",
		      apid, true, 6, 7, 8);
	return apid;
}

/* Bad counts files: kept aside, the record's own counts restored, nothing else changed. */
static void bad_counts_file_is_kept_aside(pid_t apid)
{
	char counts[PATH_MAX + 64];
	uint64_t serial = serial_of(apid);
	unsigned char good[COUNTS_HEADER + 64 * COUNTS_SLOT];
	struct pstat base, st;
	ssize_t len;
	int fd, aside;
	json_object *doc;
	enum { TRUNCATE, OVERWRITE, APPEND };
	struct {
		const char *name;
		int how;
		size_t at;		/* TRUNCATE: the size; OVERWRITE: where len bytes of value go */
		uint64_t value;
		size_t len;
		bool aside;		/* kept aside, else removed as stale */
	} bad[] = {
		{ "short_counts_file_kept_aside_changes_nothing", TRUNCATE, 40, 0, 0, true },
		{ "counts_file_of_another_serial_kept_aside_changes_nothing", OVERWRITE, 8,
		  999999, 8, true },
		{ "counts_file_with_bad_magic_kept_aside_changes_nothing", OVERWRITE, 0,
		  0x12345678, 4, true },
		{ "counts_file_with_a_bad_heal_state_kept_aside_changes_nothing", OVERWRITE,
		  COUNTS_HEADER + 28, 9, 1, true },
		{ "counts_file_longer_than_its_header_says_kept_aside_changes_nothing", APPEND,
		  0, 0, 1, true },
		{ "counts_file_of_an_earlier_record_removed_changes_nothing", OVERWRITE, 16, 1,
		  8, false },
	};
	char prefix[96];

	counts_path(counts, sizeof(counts), serial, "");
	fd = open(counts, O_RDONLY);
	len = fd >= 0 ? read(fd, good, sizeof(good)) : -1;
	if (fd >= 0)
		close(fd);
	if (!serial || len <= COUNTS_HEADER) {
		fail("persist: bad counts files", "pid %d's counts file (%s) cannot be read",
		     (int)apid, counts);
		return;
	}
	/* The record's own counts: what the daemon restores without the counts file. */
	daemon_stop();
	unlink(counts);
	if (daemon_start() || query(0, FL_QUERY_STATS, 0, 0, &doc) != 0)
		return;
	pstat_of(doc, apid, &base);
	json_object_put(doc);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		daemon_stop();
		fd = open(counts, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd < 0 || write(fd, good, (size_t)len) != len) {
			fail(bad[i].name, "cannot write %s", counts);
			if (fd >= 0)
				close(fd);
			return;
		}
		/* Little-endian, as the file: the low bytes of value. */
		if (bad[i].how == TRUNCATE)
			(void)!ftruncate(fd, (off_t)bad[i].at);
		else if (bad[i].how == APPEND)
			(void)!write(fd, "x", 1);
		else
			(void)!pwrite(fd, &bad[i].value, bad[i].len, (off_t)bad[i].at);
		close(fd);
		snprintf(prefix, sizeof(prefix), "proc.%" PRIu64 ".counts.corrupt-", serial);
		aside = files_like(prefix);
		if (daemon_start() || query(0, FL_QUERY_STATS, 0, 0, &doc) != 0)
			return;
		pstat_of(doc, apid, &st);
		json_object_put(doc);
		check(st.entries == 1 && st.exited == base.exited &&
		      !memcmp(st.faults, base.faults, sizeof(st.faults)) &&
		      files_like(prefix) == aside + bad[i].aside && access(counts, F_OK) != 0,
		      bad[i].name,
		      "%d entries, faults %" PRIu64 "/%" PRIu64 "/%" PRIu64 " (the record's: %"
		      PRIu64 "/%" PRIu64 "/%" PRIu64 "), %d kept aside before, %d after, %s",
		      st.entries, st.faults[S_LOAD], st.faults[S_STORE], st.faults[S_RMW],
		      base.faults[S_LOAD], base.faults[S_STORE], base.faults[S_RMW], aside,
		      files_like(prefix), access(counts, F_OK) ? "no counts file left" :
		      "the counts file still there");
	}
	/* And the good one, as it was: its counts again (what the cases above left out). */
	daemon_stop();
	fd = open(counts, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, good, (size_t)len) != len)
		fail("persist: the good counts file", "cannot write %s", counts);
	if (fd >= 0)
		close(fd);
	if (daemon_start())
		return;
	expect_counts("the_same_counts_file_unchanged_restores_its_counts", apid, true, 6, 7, 8);
}

/*
 * A fake process of 2,000 sites (16 blocks of counts): one count changed
 * in block 2 writes that block alone (a marker the test wrote into block
 * 0 stays), one in block 0 then rewrites block 0.
 */
static void one_count_writes_one_block(void)
{
	enum { SITES = 2000 };
	int cmd[2], rep[2];
	pid_t kid;
	char ready = 0, counts[PATH_MAX + 64], needle[64];
	uint64_t serial, marker = 0x5a5a5a5a5a5aull, v0 = 0, v1 = 0, v10 = 0;
	int fd, n;

	if (pipe2(cmd, O_CLOEXEC) || pipe2(rep, O_CLOEXEC)) {
		fail("one count, one block", "pipe: %s", strerror(errno));
		return;
	}
	kid = fork();
	if (kid == 0) {
		struct fake_proc fp;
		double took;
		uint32_t slot;

		die_with(getppid());
		close(cmd[1]);
		close(rep[0]);
		if (fake_register(&fp, sock_path, SITES, &took) != 0)
			_exit(1);
		(void)!write(rep[1], "r", 1);
		while (read(cmd[0], &slot, sizeof(slot)) == sizeof(slot) && slot < SITES) {
			_Atomic uint64_t *c = (_Atomic uint64_t *)((char *)fp.region +
								   fp.layout.counters_offset);

			atomic_fetch_add_explicit(&c[slot], 1, memory_order_relaxed);
			fl_shm_mark_dirty((_Atomic uint8_t *)((char *)fp.region +
							       fp.layout.dirty_offset), slot);
		}
		_exit(0);
	}
	close(cmd[0]);
	close(rep[1]);
	if (kid < 0 || read(rep[0], &ready, 1) != 1) {
		fail("one count, one block", "the fake process did not register");
		close(cmd[1]);
		close(rep[0]);
		if (kid > 0)
			waitpid(kid, NULL, 0);
		return;
	}
	kid_add(kid);
	close(rep[0]);
	serial = wait_counts_file(kid, SITES);
	counts_path(counts, sizeof(counts), serial, "");
	snprintf(needle, sizeof(needle), "pid %d: ", (int)kid);
	fd = serial ? open(counts, O_RDWR) : -1;
	if (fd < 0) {
		fail("one count, one block", "no counts file of %d slots for pid %d", SITES,
		     (int)kid);
	} else {
		uint32_t slot = 1500;

		/* Nothing changes in it now but what the test does. */
		n = log_count(needle, "blocks of counts written");
		(void)!pwrite(fd, &marker, 8, COUNTS_HEADER);
		(void)!write(cmd[1], &slot, sizeof(slot));
		if (!log_more(needle, "blocks of counts written", n))
			fail("one count, one block", "no block written");
		(void)!pread(fd, &v0, 8, COUNTS_HEADER);
		(void)!pread(fd, &v1, 8, COUNTS_HEADER + 1500 * COUNTS_SLOT);
		check(v1 == 1 && v0 == marker && log_count(needle, "1 blocks of counts written (4096 bytes)") == 1,
		      "one_changed_count_writes_its_block_alone",
		      "slot 1500 holds %" PRIu64 " (want 1), slot 0 %#" PRIx64 " (want the "
		      "marker %#" PRIx64 ": block 0 not written)", v1, v0, marker);
		slot = 10;
		n = log_count(needle, "blocks of counts written");
		(void)!write(cmd[1], &slot, sizeof(slot));
		if (!log_more(needle, "blocks of counts written", n))
			fail("one count, one block", "no block written for slot 10");
		(void)!pread(fd, &v0, 8, COUNTS_HEADER);
		(void)!pread(fd, &v10, 8, COUNTS_HEADER + 10 * COUNTS_SLOT);
		check(v10 == 1 && v0 == 0, "a_changed_count_in_block_0_rewrites_block_0",
		      "slot 10 holds %" PRIu64 " (want 1), slot 0 %#" PRIx64 " (want 0)", v10, v0);
		close(fd);
	}
	close(cmd[1]);
	reap(kid);
}

void group_persist(void)
{
	struct proc a;
	pid_t apid;

	if (daemon_start())
		return;
	one_count_writes_one_block();
	apid = idle_writes_nothing_and_counts_survive_kill9(&a);
	if (apid > 0)
		bad_counts_file_is_kept_aside(apid);
	daemon_stop();
}
