/*
 * bpf_count: the eBPF program counts this process's own page faults exactly.
 *
 * Loads bpf/faultline.bpf.o through its skeleton, registers this process and
 * one faulting PC, then
 *   - touches N fresh anonymous pages with one labelled store: the kernel's
 *     count for (tgid, that ip) must be N stray write faults, exactly;
 *   - reads NULL M times at a labelled load registered as a site, skipped by
 *     a SIGSEGV handler: M implicit read faults, and M SIGSEGV/SEGV_MAPERR
 *     signals with si_addr 0 attributed to that ip;
 *   - with sample_every = 1, every one of those faults and signals arrives
 *     through the ring buffer (or is counted as a reserve failure);
 *   - a child forked while the registration has FL_REG_INHERIT is registered
 *     from the fork on, its NULL reads counted under its own tgid; a thread
 *     is not a new registration; without FL_REG_INHERIT a child is not
 *     counted;
 *   - a PC added to fl_sites after it faulted, and deleted again, is
 *     classified as the map is at each fault (the program keeps what it
 *     found in each (tgid, ip) entry until fl_bpf_sites_changed);
 *   - the per-CPU counters are readable and no map update failed.
 * Exits 0 on pass, 1 on failure, and says which kernel it ran on.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#include <linux/types.h>
#include <bpf/libbpf.h>
#include <bpf/bpf.h>

#include "faultline_bpf.h"
#include "faultline.skel.h"
#include "registered.h"
#include "faults.h"

#define N_PAGES 1000
#define N_NULL 10

/* The instructions whose faults are counted; the labels give their exact
 * addresses.  noclone: a copy would define a label twice. */
extern const char fl_test_touch_insn[], fl_test_null_insn[], fl_test_null_end[];
extern const char fl_test_late_insn[], fl_test_late_end[];

__attribute__((noinline, noclone)) static void touch_page(volatile char *p)
{
	__asm__ volatile(".globl fl_test_touch_insn\n\t.hidden fl_test_touch_insn\n"
			 "fl_test_touch_insn:\n\tmovb $1, (%0)"
			 : : "r"(p) : "memory");
}

__attribute__((noinline, noclone)) static long null_read(const long *p)
{
	long v;

	__asm__ volatile(".globl fl_test_null_insn\n\t.hidden fl_test_null_insn\n"
			 "fl_test_null_insn:\n\tmovq (%1), %0\n"
			 ".globl fl_test_null_end\n\t.hidden fl_test_null_end\n"
			 "fl_test_null_end:"
			 : "=r"(v) : "r"(p) : "memory");
	return v;
}

/* A NULL load at a PC that becomes a site late (check_late_site). */
__attribute__((noinline, noclone)) static long late_read(const long *p)
{
	long v;

	__asm__ volatile(".globl fl_test_late_insn\n\t.hidden fl_test_late_insn\n"
			 "fl_test_late_insn:\n\tmovq (%1), %0\n"
			 ".globl fl_test_late_end\n\t.hidden fl_test_late_end\n"
			 "fl_test_late_end:"
			 : "=r"(v) : "r"(p) : "memory");
	return v;
}

static const long *volatile null_ptr;
static volatile sig_atomic_t segv_skipped;

/* Skips the labelled loads; any other SIGSEGV is a real crash. */
static void on_segv(int sig, siginfo_t *si, void *uc_v)
{
	ucontext_t *uc = uc_v;
	greg_t ip = uc->uc_mcontext.gregs[REG_RIP];

	(void)si;
	if (ip == (greg_t)fl_test_null_insn) {
		uc->uc_mcontext.gregs[REG_RIP] = (greg_t)fl_test_null_end;
	} else if (ip == (greg_t)fl_test_late_insn) {
		uc->uc_mcontext.gregs[REG_RIP] = (greg_t)fl_test_late_end;
	} else {
		signal(sig, SIG_DFL);
		return;
	}
	segv_skipped++;
}

static int failures;

__attribute__((format(printf, 1, 2))) static void fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("bpf_count: FAIL: ", stdout);
	vprintf(fmt, ap);
	va_end(ap);
	failures++;
}

#define EXPECT_EQ(what, got, want) do { \
	unsigned long long g_ = (got), w_ = (want); \
	if (g_ != w_) \
		fail("%s: %llu, expected %llu\n", what, g_, w_); \
	else \
		printf("bpf_count: ok: %s == %llu\n", what, g_); \
} while (0)

struct rb_seen {
	__u32 tgid;
	__u64 touch_faults, touch_writes, touch_in_range;
	__u64 null_faults, null_implicit;
	__u64 null_signals, null_signal_addr0;
	char *pages;
};

static int on_sample(void *ctx, void *data, size_t size)
{
	struct rb_seen *seen = ctx;
	const struct fl_sample *s = data;

	if (size < sizeof(*s) || s->tgid != seen->tgid)
		return 0;
	if (s->kind == FL_SAMPLE_FAULT && s->ip == (__u64)fl_test_touch_insn) {
		seen->touch_faults++;
		seen->touch_writes += !!(s->error_code & FL_PF_WRITE);
		seen->touch_in_range += s->addr >= (__u64)seen->pages &&
			s->addr < (__u64)seen->pages + (__u64)N_PAGES * getpagesize();
	} else if (s->kind == FL_SAMPLE_FAULT && s->ip == (__u64)fl_test_null_insn) {
		seen->null_faults++;
		seen->null_implicit += s->implicit;
	} else if (s->kind == FL_SAMPLE_SIGNAL && s->ip == (__u64)fl_test_null_insn) {
		seen->null_signals += s->sig == SIGSEGV && s->code == SEGV_MAPERR;
		seen->null_signal_addr0 += s->addr == 0;
	}
	return 0;
}

static int print_libbpf(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

/* Returns the sum over CPUs of counter idx, or -1 when unreadable. */
static long long stat_sum(struct faultline_bpf *skel, __u32 idx)
{
	int ncpu = libbpf_num_possible_cpus();
	__u64 vals[ncpu > 0 ? ncpu : 1];
	long long sum = 0;

	if (ncpu <= 0 || bpf_map__lookup_elem(skel->maps.fl_stats, &idx, sizeof(idx),
					      vals, sizeof(vals), 0))
		return -1;
	for (int i = 0; i < ncpu; i++)
		sum += vals[i];
	return sum;
}

static void *idle_thread(void *arg)
{
	return arg;
}

/* Forks a child that reads NULL N_NULL times at the registered PC (on_segv
 * is inherited) and exits; returns its pid once it has exited 0, or -1. */
static pid_t run_null_child(void)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		for (int i = 0; i < N_NULL; i++)
			null_read(null_ptr);
		_exit(segv_skipped == N_NULL ? 0 : 1);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0) {
		fail("forked child: fork or exit status (%s)\n", strerror(errno));
		return -1;
	}
	return pid;
}

/* The signal count of tgid at the NULL load (0 when there is no entry). */
static __u64 null_signals_of(struct faultline_bpf *skel, __u32 tgid)
{
	struct fl_signal_key k = { .tgid = tgid, .sig = SIGSEGV, .code = SEGV_MAPERR,
				   .ip = (__u64)fl_test_null_insn };
	struct fl_signal_counts c;

	if (bpf_map__lookup_elem(skel->maps.fl_signals, &k, sizeof(k), &c, sizeof(c), 0))
		return 0;
	return c.count;
}

/* The fork tracepoint: inheritance with FL_REG_INHERIT, none without, and
 * none for a thread.  Runs with on_segv installed. */
static void check_fork(struct faultline_bpf *skel, __u32 tgid)
{
	struct fl_registration reg = { .flags = FL_REG_INHERIT }, creg;
	pthread_t t;
	pid_t child;

	segv_skipped = 0;
	if (fl_bpf_register(skel, tgid, &reg)) {
		fail("register with FL_REG_INHERIT: %s\n", strerror(errno));
		return;
	}
	if (pthread_create(&t, NULL, idle_thread, NULL) == 0)
		pthread_join(t, NULL);
	else
		fail("pthread_create\n");
	child = run_null_child();
	if (child > 0) {
		__u32 ctgid = child;

		if (bpf_map__lookup_elem(skel->maps.fl_registered, &ctgid, sizeof(ctgid),
					 &creg, sizeof(creg), 0))
			fail("inherit: the child is not in fl_registered\n");
		else
			EXPECT_EQ("inherit: child registration flags", creg.flags,
				  FL_REG_INHERIT | FL_REG_INHERITED);
		EXPECT_EQ("inherit: child's bit in fl_tgid_bits",
			  (skel->bss->fl_tgid_bits[ctgid / 64] >> (ctgid % 64)) & 1, 1);
		EXPECT_EQ("inherit: child's NULL load signals", null_signals_of(skel, ctgid),
			  N_NULL);
		fl_bpf_unregister(skel, ctgid);
		EXPECT_EQ("unregistered: child's bit in fl_tgid_bits",
			  (skel->bss->fl_tgid_bits[ctgid / 64] >> (ctgid % 64)) & 1, 0);
	}

	reg.flags = 0;
	fl_bpf_register(skel, tgid, &reg);
	child = run_null_child();
	if (child > 0) {
		__u32 ctgid = child;

		EXPECT_EQ("no inherit: child registrations",
			  !bpf_map__lookup_elem(skel->maps.fl_registered, &ctgid,
						sizeof(ctgid), &creg, sizeof(creg), 0), 0);
		EXPECT_EQ("no inherit: child's NULL load signals",
			  null_signals_of(skel, ctgid), 0);
	}
}

/* tgid's counts at ip in *c.  Returns 0, or -errno (-ENOENT: none). */
static int fault_counts(struct faultline_bpf *skel, __u32 tgid, __u64 ip,
			struct fl_fault_counts *c)
{
	struct fl_fault_slot *t = fl_bpf_faults_map(skel->maps.fl_faults, false);
	bool found;

	if (!t)
		return -errno;
	found = fl_bpf_faults_get(t, tgid, ip, c);
	fl_bpf_faults_unmap(t);
	return found ? 0 : -ENOENT;
}

/* tgid's counts at the late load (zero when there is no entry). */
static struct fl_fault_counts late_counts(struct faultline_bpf *skel, __u32 tgid)
{
	struct fl_fault_counts c = { 0 };

	if (fault_counts(skel, tgid, (__u64)fl_test_late_insn, &c))
		memset(&c, 0, sizeof(c));
	return c;
}

static bool other_gone(__u32 tgid, void *arg)
{
	(void)arg;
	return tgid == FL_TGID_LIMIT + 1;
}

/* No process has it (past PID_MAX_LIMIT): the owner of the slots planted below. */
#define OTHER_TGID (FL_TGID_LIMIT + 1)

/*
 * Before the late load's first fault: its key's probe window starts with
 * a live slot of another key, a dead one, another live one, so that the
 * program must probe past a collision and take the dead slot (not the
 * empty one after).  Returns the mapped table (the checks after
 * check_late_site: collisions_after), or NULL.
 */
static struct fl_fault_slot *plant_collisions(struct faultline_bpf *skel, __u32 tgid)
{
	struct fl_fault_slot *t = fl_bpf_faults_map(skel->maps.fl_faults, true);
	__u32 h = fl_fault_hash(tgid, (__u64)fl_test_late_insn);

	if (!t) {
		fail("collisions: mapping fl_faults: %s\n", strerror(errno));
		return NULL;
	}
	for (__u32 i = 0; i < 4; i++) {
		struct fl_fault_slot *s = &t[(h + i) & (FL_FAULT_SLOTS - 1)];

		if (s->tag != FL_SLOT_EMPTY) {
			fail("collisions: slot %u of the window is taken already\n", i);
			fl_bpf_faults_unmap(t);
			return NULL;
		}
	}
	for (__u32 i = 0; i < 3; i += 2) {
		struct fl_fault_slot *s = &t[(h + i) & (FL_FAULT_SLOTS - 1)];

		s->ip = (__u64)fl_test_late_insn;	/* the same ip, another tgid */
		s->c = (struct fl_fault_counts){ .stray = 1000 + i, .read = 1000 + i };
		__atomic_store_n(&s->tag, FL_SLOT_LIVE(OTHER_TGID), __ATOMIC_RELEASE);
	}
	__atomic_store_n(&t[(h + 1) & (FL_FAULT_SLOTS - 1)].tag, FL_SLOT_DEAD, __ATOMIC_RELEASE);
	return t;
}

/* After check_late_site: its counts were in the dead slot, the others unchanged. */
static void collisions_after(struct fl_fault_slot *t, __u32 tgid)
{
	__u32 h = fl_fault_hash(tgid, (__u64)fl_test_late_insn);
	const struct fl_fault_slot *s0 = &t[h], *s1 = &t[(h + 1) & (FL_FAULT_SLOTS - 1)];
	const struct fl_fault_slot *s2 = &t[(h + 2) & (FL_FAULT_SLOTS - 1)];
	const struct fl_fault_slot *s3 = &t[(h + 3) & (FL_FAULT_SLOTS - 1)];
	struct fl_fault_counts c;

	EXPECT_EQ("collisions: the late load took the dead slot", s1->tag, FL_SLOT_LIVE(tgid));
	EXPECT_EQ("collisions: at its ip", s1->ip, (__u64)fl_test_late_insn);
	EXPECT_EQ("collisions: all of its faults in it", s1->c.read, 3 * N_NULL);
	EXPECT_EQ("collisions: not the empty slot after", s3->tag, FL_SLOT_EMPTY);
	EXPECT_EQ("collisions: the other key's first slot unchanged",
		  s0->c.stray + s0->c.read, 2000);
	EXPECT_EQ("collisions: the other key's second slot unchanged",
		  s2->c.stray + s2->c.read, 2004);
	fl_bpf_faults_get(t, tgid, (__u64)fl_test_late_insn, &c);
	EXPECT_EQ("collisions: its lookup probes past the other key", c.read, 3 * N_NULL);
	/* The two planted slots are one key's (as when two CPUs take a new
	 * key's first fault at once): read as one record. */
	{
		struct fl_fault_rec *r = NULL;
		ssize_t n = fl_bpf_faults_read(t, OTHER_TGID, &r);

		EXPECT_EQ("collisions: one record of the key's two slots", n, 1);
		EXPECT_EQ("collisions: its reads summed", n == 1 ? r[0].c.read : 0, 2002);
		free(r);
	}
	/* Gone, as the daemon's purge makes them. */
	EXPECT_EQ("collisions: the other key's slots forgotten",
		  fl_bpf_faults_forget(t, other_gone, NULL), 2);
	EXPECT_EQ("collisions: forgotten slots are dead", s0->tag, FL_SLOT_DEAD);
	fl_bpf_faults_unmap(t);
}

/*
 * A new key whose whole probe window is taken by other keys: its faults
 * are not counted, and each counts FL_STAT_MAP_FULL (never silent).  The
 * key is a forked child's at the NULL load: the window is filled before
 * the child is registered and faults.  Runs with on_segv installed.
 */
static void check_full_window(struct faultline_bpf *skel)
{
	struct fl_fault_slot *t = fl_bpf_faults_map(skel->maps.fl_faults, true);
	struct fl_registration reg = { 0 };
	long long full0, counted0;
	struct fl_fault_counts c;
	int go[2], status;
	__u32 h, ctgid;
	pid_t child;
	char b = 0;

	if (!t || pipe(go)) {
		fail("full window: mapping fl_faults or pipe: %s\n", strerror(errno));
		fl_bpf_faults_unmap(t);
		return;
	}
	segv_skipped = 0;
	child = fork();
	if (child == 0) {
		close(go[1]);
		if (read(go[0], &b, 1) != 1)
			_exit(2);
		for (int i = 0; i < N_NULL; i++)
			null_read(null_ptr);
		_exit(segv_skipped == N_NULL ? 0 : 1);
	}
	close(go[0]);
	if (child < 0) {
		fail("full window: fork: %s\n", strerror(errno));
		close(go[1]);
		fl_bpf_faults_unmap(t);
		return;
	}
	ctgid = (__u32)child;
	h = fl_fault_hash(ctgid, (__u64)fl_test_null_insn);
	for (__u32 i = 0; i < FL_FAULT_PROBES; i++) {
		struct fl_fault_slot *e = &t[(h + i) & (FL_FAULT_SLOTS - 1)];
		__u32 owner;

		if (fl_fault_slot_live(e, &owner)) {
			/* One of this test's few keys: 32 slots of 131,072. */
			printf("bpf_count: full window: skipped: slot %u of the window is "
			       "tgid %u's\n", i, owner);
			fl_bpf_faults_forget(t, other_gone, NULL);
			close(go[1]);	/* the child exits 2 */
			waitpid(child, &status, 0);
			fl_bpf_faults_unmap(t);
			return;
		}
		/* Another key each: OTHER_TGID at PCs no code has. */
		e->ip = 0x10 + i;
		e->c = (struct fl_fault_counts){ 0 };
		__atomic_store_n(&e->tag, FL_SLOT_LIVE(OTHER_TGID), __ATOMIC_RELEASE);
	}
	full0 = stat_sum(skel, FL_STAT_MAP_FULL);
	counted0 = stat_sum(skel, FL_STAT_COUNTED);
	if (fl_bpf_register(skel, ctgid, &reg))
		fail("full window: registering the child: %s\n", strerror(errno));
	if (write(go[1], &b, 1) != 1 || waitpid(child, &status, 0) != child ||
	    !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail("full window: the child did not take its %d faults\n", N_NULL);
	close(go[1]);
	EXPECT_EQ("full window: faults not counted for lack of a slot",
		  stat_sum(skel, FL_STAT_MAP_FULL) - full0, N_NULL);
	/* Its other faults (copy-on-write after fork...) have slots of their own. */
	EXPECT_EQ("full window: its faults are among the counted ones (FL_STAT_COUNTED)",
		  stat_sum(skel, FL_STAT_COUNTED) - counted0 >= N_NULL, 1);
	EXPECT_EQ("full window: no slot for the child's key",
		  fl_bpf_faults_get(t, ctgid, (__u64)fl_test_null_insn, &c), 0);
	fl_bpf_unregister(skel, ctgid);
	fl_bpf_faults_forget(t, other_gone, NULL);
	fl_bpf_faults_unmap(t);
}


/*
 * The late load faults N_NULL times before its PC is in fl_sites, N_NULL
 * times after it is added, and N_NULL times after it is deleted again:
 * stray, implicit, stray, each fault as the map was when it happened,
 * though its (tgid, ip) entry existed all along.  Runs with on_segv
 * installed.
 */
static void check_late_site(struct faultline_bpf *skel, __u32 tgid)
{
	struct fl_site_key k = { .tgid = tgid, .pc = (__u64)fl_test_late_insn };
	struct fl_site_value v = { .id = 43 };
	struct fl_fault_counts c;

	segv_skipped = 0;
	for (int i = 0; i < N_NULL; i++)
		late_read(null_ptr);
	c = late_counts(skel, tgid);
	EXPECT_EQ("late site, before it is added: stray faults", c.stray, N_NULL);
	EXPECT_EQ("late site, before it is added: implicit faults", c.implicit, 0);

	if (bpf_map__update_elem(skel->maps.fl_sites, &k, sizeof(k), &v, sizeof(v), BPF_ANY)) {
		fail("late site: fl_sites update: %s\n", strerror(errno));
		return;
	}
	fl_bpf_sites_changed(skel);
	for (int i = 0; i < N_NULL; i++)
		late_read(null_ptr);
	c = late_counts(skel, tgid);
	EXPECT_EQ("late site, added: implicit faults", c.implicit, N_NULL);
	EXPECT_EQ("late site, added: stray faults", c.stray, N_NULL);

	if (bpf_map__delete_elem(skel->maps.fl_sites, &k, sizeof(k), 0)) {
		fail("late site: fl_sites delete: %s\n", strerror(errno));
		return;
	}
	fl_bpf_sites_changed(skel);
	for (int i = 0; i < N_NULL; i++)
		late_read(null_ptr);
	c = late_counts(skel, tgid);
	EXPECT_EQ("late site, deleted: stray faults", c.stray, 2 * N_NULL);
	EXPECT_EQ("late site, deleted: implicit faults", c.implicit, N_NULL);
	EXPECT_EQ("late site: read faults", c.read, 3 * N_NULL);
	EXPECT_EQ("late site: SIGSEGVs skipped by the handler", segv_skipped, 3 * N_NULL);
}

int main(void)
{
	struct faultline_bpf *skel;
	struct ring_buffer *rb = NULL;
	struct utsname un;
	struct rb_seen seen = { 0 };
	struct fl_registration reg = { 0 };
	struct fl_site_key skey = { 0 };
	struct fl_site_value site = { .id = 42 };
	struct fl_fault_key fkey = { 0 };
	struct fl_fault_counts fc;
	struct fl_signal_key sigkey = { 0 };
	struct fl_signal_counts sc;
	struct sigaction sa = { 0 };
	long page = getpagesize();
	__u32 tgid = getpid();
	int err;

	setvbuf(stdout, NULL, _IOLBF, 0);
	uname(&un);
	printf("bpf_count: kernel %s\n", un.release);
	libbpf_set_print(print_libbpf);

	/* Every attach point is tp_btf: nothing here needs tracefs, and the
	 * test says whether it ran with it mounted (make check runs it in a
	 * mount namespace without). */
	printf("bpf_count: tracefs %s\n",
	       access("/sys/kernel/tracing/events", F_OK) ? "not mounted" : "mounted");

	skel = faultline_bpf__open();
	if (!skel) {
		printf("bpf_count: FAIL: open: %s\n", strerror(errno));
		return 1;
	}
	skel->rodata->sample_every = 1;
	err = faultline_bpf__load(skel);
	if (err) {
		printf("bpf_count: FAIL: load: %s\n", strerror(-err));
		goto out;
	}
	err = faultline_bpf__attach(skel);
	if (err) {
		printf("bpf_count: FAIL: attach: %s\n", strerror(-err));
		goto out;
	}
	rb = ring_buffer__new(bpf_map__fd(skel->maps.fl_samples), on_sample, &seen, NULL);
	if (!rb) {
		printf("bpf_count: FAIL: ring_buffer__new: %s\n", strerror(errno));
		err = -1;
		goto out;
	}

	seen.tgid = tgid;
	skey.tgid = tgid;
	skey.pc = (__u64)fl_test_null_insn;
	if (fl_bpf_register(skel, tgid, &reg) ||
	    bpf_map__update_elem(skel->maps.fl_sites, &skey, sizeof(skey), &site,
				 sizeof(site), BPF_ANY)) {
		printf("bpf_count: FAIL: register: %s\n", strerror(errno));
		err = -1;
		goto out;
	}
	fl_bpf_sites_changed(skel);

	/* N write faults at one instruction.  No transparent huge pages: one
	 * fault would map 512 pages. */
	seen.pages = mmap(NULL, N_PAGES * page, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (seen.pages == MAP_FAILED) {
		printf("bpf_count: FAIL: mmap: %s\n", strerror(errno));
		err = -1;
		goto out;
	}
	madvise(seen.pages, N_PAGES * page, MADV_NOHUGEPAGE);
	for (long i = 0; i < N_PAGES; i++)
		touch_page(seen.pages + i * page);

	/* M NULL reads at a registered faulting PC, each skipped by on_segv. */
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, NULL);
	for (int i = 0; i < N_NULL; i++)
		null_read(null_ptr);
	EXPECT_EQ("SIGSEGVs skipped by the handler", segv_skipped, N_NULL);
	{
		struct fl_fault_slot *planted = plant_collisions(skel, tgid);

		check_late_site(skel, tgid);
		if (planted)
			collisions_after(planted, tgid);
	}
	check_fork(skel, tgid);
	signal(SIGSEGV, SIG_DFL);

	fkey.tgid = tgid;
	fkey.ip = (__u64)fl_test_touch_insn;
	if ((errno = -fault_counts(skel, fkey.tgid, fkey.ip, &fc))) {
		fail("no fl_faults entry for the store: %s\n", strerror(errno));
	} else {
		EXPECT_EQ("store: stray faults", fc.stray, N_PAGES);
		EXPECT_EQ("store: implicit faults", fc.implicit, 0);
		EXPECT_EQ("store: write faults", fc.write, N_PAGES);
		EXPECT_EQ("store: read faults", fc.read, 0);
		EXPECT_EQ("store: instruction fetch faults", fc.ifetch, 0);
	}

	fkey.ip = (__u64)fl_test_null_insn;
	if ((errno = -fault_counts(skel, fkey.tgid, fkey.ip, &fc))) {
		fail("no fl_faults entry for the NULL load: %s\n", strerror(errno));
	} else {
		EXPECT_EQ("NULL load: implicit faults", fc.implicit, N_NULL);
		EXPECT_EQ("NULL load: stray faults", fc.stray, 0);
		EXPECT_EQ("NULL load: read faults", fc.read, N_NULL);
		EXPECT_EQ("NULL load: write faults", fc.write, 0);
	}

	sigkey.tgid = tgid;
	sigkey.sig = SIGSEGV;
	sigkey.code = SEGV_MAPERR;
	sigkey.ip = (__u64)fl_test_null_insn;
	if (bpf_map__lookup_elem(skel->maps.fl_signals, &sigkey, sizeof(sigkey), &sc,
				 sizeof(sc), 0)) {
		fail("no fl_signals entry for the NULL load: %s\n", strerror(errno));
	} else {
		EXPECT_EQ("NULL load: SIGSEGV/SEGV_MAPERR signals", sc.count, N_NULL);
		EXPECT_EQ("NULL load: last si_addr", sc.last_addr, 0);
	}

	err = ring_buffer__consume(rb);
	if (err < 0)
		fail("ring_buffer__consume: %s\n", strerror(-err));

	long long counted = stat_sum(skel, FL_STAT_COUNTED);
	long long samples = stat_sum(skel, FL_STAT_SAMPLES);
	long long drops = stat_sum(skel, FL_STAT_RB_DROPS);
	long long map_full = stat_sum(skel, FL_STAT_MAP_FULL);
	long long inherited = stat_sum(skel, FL_STAT_INHERITED);

	printf("bpf_count: stats: counted %lld, samples %lld, ring buffer drops %lld, "
	       "map full %lld\n", counted, samples, drops, map_full);
	if (counted < 0 || samples < 0 || drops < 0 || map_full < 0)
		fail("fl_stats unreadable\n");
	EXPECT_EQ("map update failures", map_full, 0);
	EXPECT_EQ("registrations inherited at fork (one child, no thread)", inherited, 1);
	if (drops == 0) {
		EXPECT_EQ("store: fault samples", seen.touch_faults, N_PAGES);
		EXPECT_EQ("store: fault samples with the write bit", seen.touch_writes, N_PAGES);
		EXPECT_EQ("store: fault samples inside the mapping", seen.touch_in_range, N_PAGES);
		EXPECT_EQ("NULL load: fault samples", seen.null_faults, N_NULL);
		EXPECT_EQ("NULL load: implicit fault samples", seen.null_implicit, N_NULL);
		EXPECT_EQ("NULL load: SIGSEGV samples", seen.null_signals, N_NULL);
		EXPECT_EQ("NULL load: SIGSEGV samples with si_addr 0",
			  seen.null_signal_addr0, N_NULL);
	} else {
		/* Lost samples are counted: together they account for all. */
		if ((long long)(seen.touch_faults + seen.null_faults + seen.null_signals) +
		    drops < N_PAGES + 2 * N_NULL)
			fail("samples %llu + drops %lld < %d\n",
			     (unsigned long long)(seen.touch_faults + seen.null_faults +
						  seen.null_signals),
			     drops, N_PAGES + 2 * N_NULL);
	}
	/* Last: its faults count FL_STAT_MAP_FULL. */
	sigaction(SIGSEGV, &sa, NULL);
	check_full_window(skel);
	signal(SIGSEGV, SIG_DFL);
	err = 0;
	munmap(seen.pages, N_PAGES * page);
out:
	ring_buffer__free(rb);
	faultline_bpf__destroy(skel);
	if (err || failures) {
		printf("bpf_count: FAILED (%d failure%s) on kernel %s\n", failures + !!err,
		       failures + !!err == 1 ? "" : "s", un.release);
		return 1;
	}
	printf("bpf_count: passed on kernel %s\n", un.release);
	return 0;
}
