// SPDX-License-Identifier: MIT
/*
 * faultlined end to end, group security (e2e security ...):
 * a client as nobody, forged and malformed messages, bad memfds, fd
 * floods, slow readers.
 * The harness and the driver: harness.c.
 */
#include "harness.h"

static size_t mk_hello(void *buf, pid_t pid, uint64_t size)
{
	struct fl_msg_hello h;

	memset(&h, 0, sizeof(h));
	fl_proto_header(&h, FL_MSG_HELLO, sizeof(h), 1);
	h.pid = (uint32_t)pid;
	h.region_size = size;
	snprintf(h.comm, sizeof(h.comm), "e2e-fake");
	memcpy(buf, &h, sizeof(h));
	return sizeof(h);
}

/* HELLO with f's region; returns the WELCOME'd socket or -errno. */
static int fake_hello(struct fake *f)
{
	char msg[256], buf[512];
	struct fl_msg m;
	int fd = conn();
	ssize_t n;

	if (fd < 0)
		return fd;
	if (xsend(fd, msg, mk_hello(msg, getpid(), f->l.size), &f->fd, 1, 0) ||
	    (n = xrecv(fd, buf, sizeof(buf), WAIT_MS)) <= 0 ||
	    fl_proto_decode(buf, (size_t)n, 0, &m, NULL) || m.type != FL_MSG_WELCOME) {
		close(fd);
		return -EPROTO;
	}
	return fd;
}

/* Fault map v1 bytes for n sites of one function at code offset 0. */
static size_t mk_faultmap(unsigned char *b, uint64_t fn, uint32_t n)
{
	size_t o = 0;
	uint32_t u;
	uint64_t q;

	b[o++] = 1;
	b[o++] = 0;
	b[o++] = 0;
	b[o++] = 0;
	u = 1;
	memcpy(b + o, &u, 4), o += 4;
	q = fn;
	memcpy(b + o, &q, 8), o += 8;
	memcpy(b + o, &n, 4), o += 4;
	u = 0;
	memcpy(b + o, &u, 4), o += 4;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t e[3] = { 1, 16 * i, 16 * i + 8 };

		memcpy(b + o, e, sizeof(e));
		o += sizeof(e);
	}
	return o;
}

#define FAKE_CODE 0x10000000ull
#define FAKE_SITES 3

/* The site table entries of module 1 at slots 2.. (PCs in the fake code). */
static void fake_sites(struct fake *f, uint32_t module)
{
	struct fl_shm_site *t = (struct fl_shm_site *)((char *)f->region + f->l.sites_offset);

	for (uint32_t i = 0; i < FAKE_SITES; i++)
		t[2 + i] = (struct fl_shm_site){
			.faulting_pc = FAKE_CODE + 16 * i, .handler_pc = FAKE_CODE + 16 * i + 8,
			.module = module, .kind = 1,
		};
}

/* A sections memfd holding bytes, sealed with seals. */
static int sections_fd(const void *bytes, size_t len, int seals)
{
	int fd = memfd_create("e2e-sections", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd < 0 || write(fd, bytes, len) != (ssize_t)len ||
	    (seals && fcntl(fd, F_ADD_SEALS, seals))) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

static size_t mk_module_add(void *buf, uint32_t module, uint32_t first, uint32_t nsites,
			    uint32_t fm_size)
{
	struct fl_msg_module_add a;

	memset(&a, 0, sizeof(a));
	fl_proto_header(&a, FL_MSG_MODULE_ADD, sizeof(a) + 4, 2);
	a.module = module;
	a.code_start = FAKE_CODE;
	a.code_size = 4096;
	a.first_counter = first;
	a.num_sites = nsites;
	a.faultmap_size = fm_size;
	a.name_len = 4;
	memcpy(buf, &a, sizeof(a));
	memcpy((char *)buf + sizeof(a), "fake", 4);
	return sizeof(a) + 4;
}

enum mod_case {
	MOD_VALID, MOD_UNSEALED, MOD_NO_WRITE_SEAL, MOD_WRONG_SIZE, MOD_GARBAGE_FM,
	MOD_FM_COUNT, MOD_SLOT_KIND0, MOD_SLOT_MODULE, MOD_SLOT_PC, MOD_SLOTS_OUTSIDE,
	MOD_TWICE, MOD_SYMBOLS_RANGE, MOD_REMOVE_UNKNOWN, MOD_HELLO_AGAIN, MOD_QUERY,
	MOD_RING, MOD_HEADER_SCRIBBLE, MOD_REREGISTER, MOD_REREGISTER_UID, MOD_COMPLETIONS,
};

static const char *const mod_case_name[] = {
	"valid fake process", "MODULE_ADD: sections memfd without seals",
	"MODULE_ADD: sections memfd not sealed against writes",
	"MODULE_ADD: sections memfd of the wrong size", "MODULE_ADD: garbage fault map",
	"MODULE_ADD: fault map entries != num_sites",
	"MODULE_ADD: site table slot unused (kind 0, as after an unload): module left out",
	"MODULE_ADD: site table slot of another module (reused after an unload): module left out",
	"MODULE_ADD: site table slot PC outside the code range: module left out",
	"MODULE_ADD: counter slots outside the region", "MODULE_ADD: the same module twice",
	"SYMBOLS: site index out of range", "MODULE_REMOVE: unknown module",
	"HELLO twice on one connection", "QUERY from a registered process",
	"completion ring: implausible head",
	"region header scribbled after HELLO (never read again)",
	"dropped, then registered again: listed once, live, its counts intact",
	"dropped, then registered again as nobody: stats --pid shows the live registration",
	"completion ring: a status that is no errno, a head kept moving",
};

/* SYMBOLS naming site (index in the module) "abc". */
static void send_symbols(int fd, uint32_t module, uint32_t site)
{
	struct fl_msg_symbols s;
	unsigned char b[sizeof(s) + FL_SYMBOL_ENTRY_HEAD + 3] = { 0 };

	memset(&s, 0, sizeof(s));
	fl_proto_header(&s, FL_MSG_SYMBOLS, sizeof(b), 3);
	s.module = module;
	s.count = 1;
	memcpy(b, &s, sizeof(s));
	fl_symbols_put(b + sizeof(s), site, 0, "abc", 3);
	xsend(fd, b, sizeof(b), NULL, 0, 0);
}

static void send_remove(int fd, uint32_t module)
{
	struct fl_msg_module_remove r;

	memset(&r, 0, sizeof(r));
	fl_proto_header(&r, FL_MSG_MODULE_REMOVE, sizeof(r), 3);
	r.module = module;
	xsend(fd, &r, sizeof(r), NULL, 0, 0);
}

/*
 * The completion ring is the process's to write: a status that is no errno
 * reaches the requester as -EPROTO, and a head kept moving past the tail
 * (completions, forever, none the one awaited) does not hold the daemon:
 * the request times out and a query is answered meanwhile.
 */
static int fake_completions(struct fake *f)
{
	struct fl_shm_header *h = f->region;
	struct fl_shm_entry *c = (void *)((char *)f->region + f->l.completions_offset);
	json_object *doc;
	uint64_t v;
	pid_t spin, parent;
	int err, qerr;

	/* The first request's seq is 1: its completion is there before it is asked. */
	c[0] = (struct fl_shm_entry){ .seq = 1, .status = INT32_MIN };
	atomic_store_explicit(&h->completion_head, 1, memory_order_release);
	err = request(0, (uint32_t)getpid(), FL_REQ_PING, 1, &v);
	if (err != -EPROTO) {
		printf("a completion of status INT32_MIN answered %d (want %d)", err, -EPROTO);
		return 1;
	}
	c[0].seq = 0;
	parent = getpid();
	spin = fork();
	if (spin == 0) {
		die_with(parent);
		for (;;)
			atomic_store(&h->completion_head, atomic_load(&h->completion_tail) + 1);
	}
	if (spin < 0) {
		printf("fork: %s", strerror(errno));
		return 1;
	}
	err = request(0, (uint32_t)getpid(), FL_REQ_PING, 2, &v);
	qerr = query(0, FL_QUERY_PS, (uint32_t)getpid(), 0, &doc);
	json_object_put(doc);
	kill(spin, SIGKILL);
	waitpid(spin, NULL, 0);
	if (err != -ETIMEDOUT || qerr) {
		printf("with the head kept moving: the request answered %d (want %d), "
		       "a query %d", err, -ETIMEDOUT, qerr);
		return 1;
	}
	printf("-EPROTO; with the head kept moving, the request timed out and a query "
	       "was answered");
	return 0;
}

/*
 * In a child (a pid of its own): registers a fake process, then does what
 * the case says.  Exit 0: the daemon behaved (dropped the client, or for
 * MOD_VALID and MOD_HEADER_SCRIBBLE kept it and showed its counts);
 * stdout: detail.
 */
static int fake_child(enum mod_case mc)
{
	unsigned char fm[256];
	char msg[512];
	struct fake f;
	size_t fm_size, len;
	int fd, sfd = -1, err, seals = F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;
	uint32_t nsites = FAKE_SITES, first = 2;
	struct pstat st;
	json_object *doc;
	int hp[2], hr[2];
	pid_t helper = -1;

	if (fake_region(&f, 16, ALL_SEALS, getpid())) {
		printf("cannot make a region");
		return 1;
	}
	fake_sites(&f, 1);
	fd = fake_hello(&f);
	if (fd < 0) {
		printf("the valid HELLO was refused");
		return 1;
	}
	fm_size = mk_faultmap(fm, FAKE_CODE, FAKE_SITES);
	switch (mc) {
	case MOD_UNSEALED:
		seals = 0;
		break;
	case MOD_NO_WRITE_SEAL:
		seals = F_SEAL_SHRINK | F_SEAL_GROW;
		break;
	case MOD_GARBAGE_FM:
		for (size_t i = 0; i < fm_size; i++)
			fm[i] = (unsigned char)(i * 37 + 11);
		break;
	case MOD_FM_COUNT:
		fm_size = mk_faultmap(fm, FAKE_CODE, FAKE_SITES - 1);
		break;
	case MOD_SLOT_KIND0:
		((struct fl_shm_site *)((char *)f.region + f.l.sites_offset))[3].kind = 0;
		break;
	case MOD_SLOT_MODULE:
		((struct fl_shm_site *)((char *)f.region + f.l.sites_offset))[3].module = 2;
		break;
	case MOD_SLOT_PC:
		((struct fl_shm_site *)((char *)f.region + f.l.sites_offset))[4].handler_pc =
			FAKE_CODE + 8192;
		break;
	case MOD_SLOTS_OUTSIDE:
		first = 15;
		break;
	default:
		break;
	}
	sfd = sections_fd(fm, fm_size, seals);
	len = mk_module_add(msg, 1, first, nsites, (uint32_t)fm_size);
	if (mc == MOD_WRONG_SIZE) {
		((struct fl_msg_module_add *)msg)->faultmap_size = (uint32_t)fm_size + 8;
		/* The fault map's size claims 8 more bytes than the memfd holds. */
	}
	if (sfd < 0 || xsend(fd, msg, len, &sfd, 1, 0)) {
		printf("cannot send MODULE_ADD");
		return 1;
	}
	close(sfd);

	switch (mc) {
	case MOD_VALID:
	case MOD_HEADER_SCRIBBLE:
	case MOD_REREGISTER:
	case MOD_REREGISTER_UID:
	case MOD_COMPLETIONS:
	case MOD_RING: {
		_Atomic uint64_t *ctr = (_Atomic uint64_t *)((char *)f.region + f.l.counters_offset);
		double end = now() + WAIT_S;

		ctr[2] = 41;
		ctr[3] = 42;
		ctr[4] = 43;
		for (int round = 0; round < 2; round++) {
			if (round == 1) {
				struct fl_shm_header *h = f.region;

				if (mc != MOD_HEADER_SCRIBBLE)
					break;
				/*
				 * Registered: now the writer-once fields and the
				 * whole site table change under the daemon.
				 */
				h->counters_offset = 0xfffffff0u;
				h->sites_offset = 0x7fffffffu;
				h->capacity = 0xffffffffu;
				h->size = 1ull << 60;
				h->request_entries = 3;
				memset((char *)f.region + f.l.sites_offset, 0xff,
				       16 * sizeof(struct fl_shm_site));
				sleep_ms(200);
			}
			end = now() + WAIT_S;
			for (;;) {
				err = query(0, FL_QUERY_STATS, (uint32_t)getpid(), 0, &doc);
				memset(&st, 0, sizeof(st));
				if (!err) {
					json_object *p0 = proc_at(doc, 0);
					json_object *sites = get(p0, "sites");
					uint64_t sum = 0;

					for (size_t i = 0; sites && i < json_object_array_length(sites); i++)
						sum = sum * 100 + json_object_get_uint64(
							get(json_object_array_get_idx(sites, i), "faults"));
					st.total = sum;
					st.exited = json_object_get_boolean(get(p0, "exited"));
					json_object_put(doc);
				}
				if ((st.total == 414243 && !st.exited) || now() > end)
					break;
				sleep_ms(50);
			}
			if (st.total != 414243 || st.exited) {
				printf("stats of the fake process: err %d, counts %" PRIu64 ", exited %d",
				       err, st.total, st.exited);
				return 1;
			}
		}
		if (mc == MOD_REREGISTER || mc == MOD_REREGISTER_UID) {
			json_object *p0;
			int n = 0;

			/* A violation: dropped.  Then the same process again. */
			xsend(fd, "garbage!", 8, NULL, 0, 0);
			if (!dropped(fd, NULL)) {
				printf("not dropped for garbage");
				return 1;
			}
			close(fd);
			/*
			 * As another user: a registration of its own, listed
			 * beside the old one.  A helper that stays root asks
			 * for stats --pid later.
			 */
			if (mc == MOD_REREGISTER_UID) {
				pid_t me = getpid();

				if (pipe(hp) || pipe(hr))
					return 1;
				helper = fork();
				if (helper == 0) {
					int res[2] = { -1, -1 };
					char c;

					/*
					 * Its parent turns nobody, which cannot
					 * signal root: EOF on hp ends it too.
					 */
					die_with(me);
					close(hp[1]);
					close(hr[0]);
					(void)!read(hp[0], &c, 1);
					if (query(0, FL_QUERY_STATS, (uint32_t)me, 0, &doc) == 0) {
						res[0] = (int)nprocs(doc);
						res[1] = json_object_get_boolean(
							get(proc_at(doc, 0), "exited"));
						json_object_put(doc);
					}
					(void)!write(hr[1], res, sizeof(res));
					_exit(0);
				}
				/*
				 * Dumpable again after the change of ids (the
				 * kernel clears it): nobody may then read and
				 * change it, as ptrace's rule has it.
				 */
				if (setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY) ||
				    prctl(PR_SET_DUMPABLE, 1)) {
					printf("cannot become nobody");
					return 1;
				}
			}
			fd = fake_hello(&f);
			sfd = sections_fd(fm, fm_size, seals);
			if (fd < 0 || sfd < 0 || xsend(fd, msg, len, &sfd, 1, 0)) {
				printf("the second registration failed");
				return 1;
			}
			close(sfd);
			end = now() + WAIT_S;
			do {
				sleep_ms(50);
				err = query(geteuid(), FL_QUERY_STATS, (uint32_t)getpid(), 0, &doc);
				if (err)
					continue;
				p0 = proc_at(doc, 0);
				n = (int)nprocs(doc);
				st.exited = json_object_get_boolean(get(p0, "exited"));
				st.total = json_object_get_uint64(get(p0, "faults"));
				json_object_put(doc);
				if (n == 1 && !st.exited && st.total == 41 + 42 + 43) {
					printf("listed once, live, 126 faults");
					break;
				}
			} while (now() < end);
			if (n == 1 && !st.exited && st.total == 41 + 42 + 43 && mc == MOD_REREGISTER)
				return 0;
			/* Root sees both registrations; --pid picks the live one. */
			if (n == 1 && !st.exited && st.total == 41 + 42 + 43) {
				int res[2] = { -1, -1 };

				(void)!write(hp[1], "x", 1);
				(void)!read(hr[0], res, sizeof(res));
				waitpid(helper, NULL, 0);
				printf(" (as nobody); root's stats --pid: %d entries, exited %d", res[0],
				       res[1]);
				return res[0] == 1 && res[1] == 0 ? 0 : 1;
			}
			printf("stats --pid: err %d, %d entries, exited %d, %" PRIu64 " faults",
			       err, n, st.exited, st.total);
			return 1;
		}
		if (mc == MOD_COMPLETIONS)
			return fake_completions(&f);
		if (mc != MOD_RING) {
			printf("counts 41/42/43 read from its region");
			return 0;
		}
		/* A request is pending; its completion ring's head is implausible. */
		{
			struct fl_shm_header *h = f.region;
			uint64_t v;

			atomic_store(&h->completion_head, 1000);
			err = request(0, (uint32_t)getpid(), FL_REQ_PING, 1, &v);
			if (err != -ESRCH && err != -ETIMEDOUT) {
				printf("the request to it answered %d", err);
				return 1;
			}
		}
		break;
	}
	case MOD_TWICE:
		sfd = sections_fd(fm, fm_size, seals);
		xsend(fd, msg, len, &sfd, 1, 0);
		close(sfd);
		break;
	case MOD_SLOT_KIND0:
	case MOD_SLOT_MODULE:
	case MOD_SLOT_PC: {
		/*
		 * The process may have unloaded the module since it sent
		 * MODULE_ADD: the daemon leaves the module out but keeps the
		 * process, and takes the module's SYMBOLS and MODULE_REMOVE.
		 */
		double end = now() + WAIT_S;
		bool listed = false;

		send_symbols(fd, 1, 0);
		send_remove(fd, 1);
		while (!listed && now() < end) {
			err = query(0, FL_QUERY_STATS, (uint32_t)getpid(), 0, &doc);
			if (!err) {
				json_object *p0 = proc_at(doc, 0);

				listed = !json_object_get_boolean(get(p0, "exited")) &&
					 json_object_get_int(get(p0, "num_sites")) == 0;
				json_object_put(doc);
			}
			if (!listed)
				sleep_ms(50);
		}
		if (!listed) {
			printf("not listed live without sites (err %d)", err);
			return 1;
		}
		printf("kept (live, no sites); SYMBOLS and MODULE_REMOVE taken; ");
		/* The module is forgotten now: a second MODULE_REMOVE is a violation. */
		send_remove(fd, 1);
		break;
	}
	case MOD_SYMBOLS_RANGE:
		send_symbols(fd, 1, 3);
		break;
	case MOD_REMOVE_UNKNOWN:
		send_remove(fd, 9);
		break;
	case MOD_HELLO_AGAIN:
		xsend(fd, msg, mk_hello(msg, getpid(), f.l.size), &f.fd, 1, 0);
		break;
	case MOD_QUERY:
		xsend(fd, msg, mk_query(msg, FL_QUERY_STATS, 0, 0), NULL, 0, 0);
		break;
	default:
		break;
	}
	if (!dropped(fd, &err)) {
		printf("not dropped");
		return 1;
	}
	printf("dropped");
	/* Registered, then dropped: listed as exited (with its counts, if any). */
	err = query(0, FL_QUERY_PS, (uint32_t)getpid(), 0, &doc);
	if (err || !json_object_get_boolean(get(proc_at(doc, 0), "exited"))) {
		printf(", but not listed as exited (err %d)", err);
		json_object_put(doc);
		return 1;
	}
	json_object_put(doc);
	printf(", listed as exited");
	return 0;
}

/* Runs fake_child(mc) in a child process; ok or FAIL. */
static void fake_case(enum mod_case mc)
{
	int pfd[2], status;
	char detail[512] = { 0 };
	ssize_t n;
	pid_t pid, parent = getpid();

	if (pipe(pfd))
		return;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		die_with(parent);
		close(pfd[0]);
		dup2(pfd[1], 1);
		setvbuf(stdout, NULL, _IONBF, 0);
		_exit(fake_child(mc));
	}
	close(pfd[1]);
	for (size_t got = 0; got < sizeof(detail) - 1; got += (size_t)n) {
		n = read(pfd[0], detail + got, sizeof(detail) - 1 - got);
		if (n <= 0)
			break;
	}
	close(pfd[0]);
	waitpid(pid, &status, 0);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		ok("%s: %s", mod_case_name[mc], detail);
	else
		fail(mod_case_name[mc], "%s", detail);
}

/* A raw message on a new connection: dropped, with the ERROR code wanted (1: any). */
static void bad_message(const char *name, const void *msg, size_t len, const int *fds,
			size_t nfds, int want_err)
{
	int fd = conn(), err = 0, gone;

	if (fd < 0) {
		fail(name, "connect: %s", strerror(-fd));
		return;
	}
	if (xsend(fd, msg, len, fds, nfds, 0)) {
		fail(name, "send: %s", strerror(errno));
		close(fd);
		return;
	}
	gone = dropped(fd, &err);
	close(fd);
	if (!gone)
		fail(name, "the daemon did not drop the client");
	else if (want_err != 1 && err != want_err)
		fail(name, "dropped with ERROR %d, want %d", err, want_err);
	else
		ok("%s: dropped%s", name, err ? " after an ERROR" : "");
}

/* The daemon is up and a fresh client gets an answer. */
static void still_serving(const char *after)
{
	json_object *doc;
	int err = query(0, FL_QUERY_PS, 0, 0, &doc);
	char name[256];

	snprintf(name, sizeof(name), "daemon up and serving after %s", after);
	check(daemon_alive() && !err, name, "alive %d, query: %d", daemon_alive(), err);
	json_object_put(doc);
}

static void forged_hello(const char *name, pid_t claim, pid_t header_pid, uint64_t size_delta,
			 int seals, int want_err)
{
	struct fake f;
	char msg[256];

	if (fake_region(&f, 16, seals, header_pid)) {
		fail(name, "cannot make a region");
		return;
	}
	bad_message(name, msg, mk_hello(msg, claim, f.l.size + size_delta), &f.fd, 1, want_err);
	munmap(f.region, f.l.size);
	close(f.fd);
}

static long daemon_rss_kib(void)
{
	char path[64], line[256];
	long kib = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)dpid);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld", &kib) == 1)
			break;
	if (f)
		fclose(f);
	return kib;
}

/*
 * A stack map (v3) of one function with nrec records, no locations: 24
 * bytes a record, the smallest there is.
 */
static unsigned char *mk_big_stackmap(size_t nrec, size_t *size)
{
	size_t n = 16 + 24 + 24 * nrec;
	unsigned char *b = calloc(1, n);
	uint32_t u;
	uint64_t q;

	if (!b)
		return NULL;
	b[0] = 3;
	u = 1;
	memcpy(b + 4, &u, 4);
	u = (uint32_t)nrec;
	memcpy(b + 12, &u, 4);
	q = FAKE_CODE;
	memcpy(b + 16, &q, 8);
	q = 16;
	memcpy(b + 24, &q, 8);
	q = nrec;
	memcpy(b + 32, &q, 8);
	for (size_t i = 0; i < nrec; i++) {
		unsigned char *r = b + 40 + 24 * i;

		q = i;
		memcpy(r, &q, 8);
		u = (uint32_t)(i % 4096);
		memcpy(r + 8, &u, 4);
	}
	*size = n;
	return b;
}

/*
 * In a child, as nobody: a fake process that takes requests off its ring
 * and never answers them, and a client of the same uid that keeps pinging
 * it, one ping every 2 ms (under the rate limit), reading the answers
 * (-EBUSY at once, -ETIMEDOUT after the daemon's request timeout): the
 * uid's 64 requests in flight, the most it may have, are kept at 64 for
 * as long as the parent needs, however slow the machine.  Writes one byte
 * to ready at the first -EBUSY, and goes on until EOF on go.  Exit 0 when
 * it got that far.
 */
static int pending_flood_child(int ready, int go, pid_t parent)
{
	struct pollfd pg = { .fd = go, .events = POLLIN };
	struct fl_shm_header *h;
	struct fake f;
	char msg[64], buf[512], c = 1;
	bool full = false;
	uint64_t i = 0;
	int fd, q;

	/* Dumpable again (see MOD_REREGISTER_UID): its own requests are nobody's to send. */
	if (setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY) || prctl(PR_SET_DUMPABLE, 1))
		return 1;
	die_with(parent);
	if (fake_region(&f, 16, ALL_SEALS, getpid()) || (fd = fake_hello(&f)) < 0)
		return 2;
	h = f.region;
	q = conn();
	if (q < 0)
		return 3;
	while (poll(&pg, 1, 2) == 0) {
		struct fl_msg m;
		ssize_t n;

		/* Taken off the ring, never answered: the ring never fills. */
		atomic_store(&h->request_tail, atomic_load(&h->request_head));
		if (xsend(q, msg, mk_request(msg, (uint32_t)getpid(), FL_REQ_PING, i++), NULL, 0,
			  0))
			return 4;
		while ((n = recv(q, buf, sizeof(buf), MSG_DONTWAIT)) > 0)
			if (!full && fl_proto_decode(buf, (size_t)n, 0, &m, NULL) == 0 &&
			    m.type == FL_MSG_ERROR && m.error.err == -EBUSY) {
				full = true;
				(void)!write(ready, &c, 1);
			}
	}
	close(q);
	close(fd);
	return full ? 0 : 5;
}

/*
 * In a child, as nobody: opens connections until the daemon closes them at
 * once (up to 5,000), writes how many stayed to ready, and waits for EOF
 * on go.
 */
static int conns_child(int ready, int go, pid_t parent)
{
	struct rlimit rl = { 8192, 8192 };
	char msg[64];
	int n = 0;
	char c;

	setrlimit(RLIMIT_NOFILE, &rl);
	if (setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY))
		return 1;
	die_with(parent);
	mk_query(msg, FL_QUERY_PS, (uint32_t)getpid(), 0);
	for (int i = 0; i < 5000; i++) {
		int fd = conn();
		char *text = NULL;
		int err;

		if (fd < 0)
			break;
		/*
		 * A query tells a connection kept (an answer: -ESRCH, no such
		 * process of ours) from one refused (closed at accept).
		 */
		err = xsend(fd, msg, sizeof(struct fl_msg_query), NULL, 0, 0);
		if (!err)
			err = read_reply(fd, &text, WAIT_MS);
		free(text);
		if (err != 0 && err != -ESRCH) {
			close(fd);
			break;
		}
		n++;
	}
	(void)!write(ready, &n, sizeof(n));
	(void)!read(go, &c, 1);
	return 0;
}

/* In a child, as nobody: n fake processes that register and exit. */
static int exits_child(int n, pid_t parent)
{
	int ok_n = 0;

	if (setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY))
		return 1;
	die_with(parent);
	for (int i = 0; i < n; i++) {
		pid_t pid = fork();
		int status;

		if (pid == 0) {
			struct fake f;

			_exit(fake_region(&f, 16, ALL_SEALS, getpid()) || fake_hello(&f) < 0);
		}
		if (pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
		    WEXITSTATUS(status) == 0)
			ok_n++;
	}
	return ok_n == n ? 0 : 2;
}

/*
 * In a child: a fake process sends modules with 16 MiB stack maps, up to
 * 24 of them (384 MiB).  Exit 0 when the daemon dropped it before its own
 * memory grew by 1 GiB; stdout: detail.
 */
static int big_sections_child(long rss0)
{
	unsigned char fm[256];
	size_t fm_size = mk_faultmap(fm, FAKE_CODE, 1), sm_size, total;
	size_t nrec = (16u << 20) / 24;
	unsigned char *sm = mk_big_stackmap(nrec, &sm_size), *all;
	struct fake f;
	struct fl_shm_site *t;
	char msg[512];
	uint64_t fn = FAKE_CODE;
	long peak = rss0;
	int fd, k, err;

	total = fm_size + sm_size + 8;
	all = malloc(total);
	if (!sm || !all || fake_region(&f, 64, ALL_SEALS, getpid())) {
		printf("cannot build the sections");
		return 1;
	}
	memcpy(all, fm, fm_size);
	memcpy(all + fm_size, sm, sm_size);
	memcpy(all + fm_size + sm_size, &fn, 8);
	t = (struct fl_shm_site *)((char *)f.region + f.l.sites_offset);
	for (uint32_t i = 0; i < 64; i++)
		t[i] = (struct fl_shm_site){ .faulting_pc = FAKE_CODE, .handler_pc = FAKE_CODE + 8,
					     .module = i + 1, .kind = 1 };
	fd = fake_hello(&f);
	if (fd < 0) {
		printf("HELLO refused");
		return 1;
	}
	for (k = 0; k < 24; k++) {
		struct fl_msg_module_add *a = (struct fl_msg_module_add *)msg;
		size_t len = mk_module_add(msg, (uint32_t)k + 1, (uint32_t)k, 1, (uint32_t)fm_size);
		int sfd = sections_fd(all, total, F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW);
		struct fl_msg_sync y;
		bool kept = false;
		ssize_t n = 0;
		long rss;

		a->stackmap_size = (uint32_t)sm_size;
		a->sm_functions = 1;
		err = sfd < 0 ? -EIO : xsend(fd, msg, len, &sfd, 1, 0);
		if (sfd >= 0)
			close(sfd);
		if (err)
			break;
		/*
		 * SYNC: its REPLY says the daemon has handled the module and
		 * kept us; an ERROR and the end of the connection, that it
		 * dropped us.
		 */
		memset(&y, 0, sizeof(y));
		fl_proto_header(&y, FL_MSG_SYNC, sizeof(y), 100 + (uint32_t)k);
		if (xsend(fd, &y, sizeof(y), NULL, 0, 0))
			break;
		while (!kept) {
			char buf[1024];
			struct fl_msg m;

			n = xrecv(fd, buf, sizeof(buf), WAIT_MS);
			if (n <= 0 || fl_proto_decode(buf, (size_t)n, 0, &m, NULL) != 0)
				break;
			if (m.type == FL_MSG_ERROR)
				printf("ERROR %d after %d modules (%.*s); ", m.error.err, k + 1,
				       (int)m.error.len, m.text);
			kept = m.type == FL_MSG_REPLY && m.seq == 100 + (uint32_t)k;
		}
		if (n == -ETIMEDOUT) {
			printf("no answer to SYNC after %d modules in %d s", k + 1, WAIT_S);
			return 1;
		}
		if (!kept)
			break;
		rss = daemon_rss_kib();
		if (rss > peak)
			peak = rss;
	}
	printf("daemon RSS %ld MiB -> peak %ld MiB", rss0 / 1024, peak / 1024);
	if (k == 24) {
		printf("; all 24 modules (384 MiB of stack maps) taken");
		return 1;
	}
	printf("; dropped after %d modules", k + 1);
	return peak - rss0 < (1l << 20) ? 0 : 1;
}

void group_security(void)
{
	struct proc a, n;
	pid_t apid, npid;
	json_object *doc;
	char msg[FL_PROTO_MAX_MESSAGE + 8192];
	int err, before, after = -1;

	if (daemon_start())
		return;
	apid = start_waiter(&a, 0, 3, 4, 5, "security");
	npid = start_waiter(&n, NOBODY, 6, 7, 8, "security (process of nobody)");
	if (apid < 0 || npid < 0)
		return;
	expect_counts("security: root's process registered", apid, false, 3, 4, 5);
	expect_counts("security: nobody's process registered", npid, false, 6, 7, 8);

	/* What nobody sees. */
	for (uint32_t what = FL_QUERY_STATS; what <= FL_QUERY_STACKMAPS; what++) {
		static const char *const names[] = { "", "stats", "ps", "sites", "stackmaps" };
		char name[128];
		int seen_a = -1, seen_n = -1;

		err = query(NOBODY, what, 0, what == FL_QUERY_STATS ? 0 : UINT64_MAX, &doc);
		if (!err) {
			seen_a = ps_entries(doc, apid);
			seen_n = ps_entries(doc, npid);
			json_object_put(doc);
		}
		snprintf(name, sizeof(name), "nobody: %s lists its own process, not root's",
			 names[what]);
		check(!err && seen_a == 0 && seen_n == 1, name, "err %d, root's listed %d, own %d",
		      err, seen_a, seen_n);
		err = query(NOBODY, what, (uint32_t)apid, what == FL_QUERY_STATS ? 0 : UINT64_MAX,
			    &doc);
		snprintf(name, sizeof(name), "nobody: %s of root's process: -ESRCH", names[what]);
		check(err == -ESRCH, name, "err %d: %s", err,
		      err ? "" : json_object_to_json_string(doc));
		if (!err)
			json_object_put(doc);
	}
	err = query(0, FL_QUERY_STATS, 0, 0, &doc);
	if (!err) {
		check(ps_entries(doc, apid) == 1 && ps_entries(doc, npid) == 1,
		      "root sees both processes", "root's %d, nobody's %d",
		      ps_entries(doc, apid), ps_entries(doc, npid));
		json_object_put(doc);
	}
	{
		uint64_t v;

		err = request(NOBODY, (uint32_t)apid, FL_REQ_HEAL_THRESHOLD, 9, &v);
		check(err == -ESRCH, "nobody: request to root's process: -ESRCH", "err %d", err);
	}

	/*
	 * A client that has just left may still hold a descriptor here: at
	 * the end the daemon may have fewer than counted now, never more.
	 */
	sleep_ms(200);
	before = daemon_nfds();

	/* Registration. */
	forged_hello("forged HELLO (another pid, region of that pid)", getpid() + 1,
		     getpid() + 1, 0, ALL_SEALS, -EPERM);
	forged_hello("forged HELLO (pid 1)", 1, 1, 0, ALL_SEALS, -EPERM);
	if (query(0, FL_QUERY_PS, (uint32_t)getpid() + 1, 0, &doc) == 0) {
		fail("forged HELLO not registered", "the claimed pid is listed");
		json_object_put(doc);
	} else {
		ok("forged HELLO: the claimed pid is not registered");
	}
	forged_hello("HELLO: region without seals", getpid(), getpid(), 0, 0, -EPERM);
	forged_hello("HELLO: region sealed against shrink and grow, not F_SEAL_SEAL", getpid(),
		     getpid(), 0, F_SEAL_SHRINK | F_SEAL_GROW, -EPERM);
	forged_hello("HELLO: region sealed against shrink only", getpid(), getpid(), 0,
		     F_SEAL_SHRINK | F_SEAL_SEAL, -EPERM);
	forged_hello("HELLO: region_size larger than the memfd", getpid(), getpid(), 4096,
		     ALL_SEALS, -EINVAL);
	forged_hello("HELLO: region_size smaller than the memfd", getpid(), getpid(),
		     (uint64_t)-64, ALL_SEALS, -EINVAL);
	forged_hello("HELLO: region header of another pid", getpid(), getpid() + 1, 0, ALL_SEALS,
		     -EINVAL);
	{
		struct fake f;

		if (fake_region(&f, 16, 0, getpid()) == 0) {
			((struct fl_shm_header *)f.region)->magic = 0xdeadbeef;
			fcntl(f.fd, F_ADD_SEALS, ALL_SEALS);
			bad_message("HELLO: region header with a bad magic", msg,
				    mk_hello(msg, getpid(), f.l.size), &f.fd, 1, -EINVAL);
			((struct fl_shm_header *)f.region)->magic = FL_SHM_MAGIC;
			((struct fl_shm_header *)f.region)->counters_offset = (uint32_t)f.l.size - 8;
			bad_message("HELLO: region header with parts overlapping", msg,
				    mk_hello(msg, getpid(), f.l.size), &f.fd, 1, -EINVAL);
			munmap(f.region, f.l.size);
			close(f.fd);
		}
	}
	{
		char path[PATH_MAX];
		int pf;

		snprintf(path, sizeof(path), "%s/plain-file", dir);
		pf = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (pf >= 0 && ftruncate(pf, 65536) == 0) {
			bad_message("HELLO: a plain file instead of a memfd", msg,
				    mk_hello(msg, getpid(), 65536), &pf, 1, 1);
			close(pf);
			unlink(path);
		}
		pf = open("/dev/null", O_RDWR | O_CLOEXEC);
		bad_message("HELLO: /dev/null instead of a memfd", msg,
			    mk_hello(msg, getpid(), 65536), &pf, 1, 1);
		close(pf);
		bad_message("HELLO without a descriptor", msg, mk_hello(msg, getpid(), 65536), NULL,
			    0, 1);
	}

	/* SYNC is a registered process's: before HELLO, or flooded, it drops the client. */
	{
		struct fl_msg_sync y;
		struct fake f;
		int fd, sent = 0;

		memset(&y, 0, sizeof(y));
		fl_proto_header(&y, FL_MSG_SYNC, sizeof(y), 3);
		bad_message("SYNC before HELLO", &y, sizeof(y), NULL, 0, 1);
		if (fake_region(&f, 16, ALL_SEALS, getpid()) == 0 && (fd = fake_hello(&f)) >= 0) {
			for (int i = 0; i < 3000; i++) {
				if (xsend(fd, &y, sizeof(y), NULL, 0, 0))
					break;
				sent++;
			}
			check(dropped(fd, NULL), "SYNC flood",
			      "a registered client sending %d SYNCs at once is not dropped", sent);
			close(fd);
			munmap(f.region, f.l.size);
			close(f.fd);
		} else {
			fail("SYNC flood", "cannot register a fake process");
		}
		still_serving("a SYNC flood");
	}

	/* Malformed messages. */
	for (size_t i = 0; i < 100; i++)
		msg[i] = (char)(i * 131 + 7);
	bad_message("random bytes", msg, 100, NULL, 0, 1);
	bad_message("a 3-byte message", msg, 3, NULL, 0, 1);
	mk_query(msg, FL_QUERY_STATS, 0, 0);
	bad_message("truncated QUERY (20 of 32 bytes)", msg, 20, NULL, 0, 1);
	mk_hello(msg, getpid(), 4096);
	bad_message("truncated HELLO", msg, 30, NULL, 0, 1);
	mk_query(msg, FL_QUERY_STATS, 0, 0);
	((struct fl_msg_header *)msg)->version = 2;
	bad_message("wrong version (2): -EPROTONOSUPPORT", msg, sizeof(struct fl_msg_query), NULL,
		    0, -EPROTONOSUPPORT);
	mk_query(msg, FL_QUERY_STATS, 0, 0);
	((struct fl_msg_header *)msg)->magic = 0x12345678;
	bad_message("wrong magic", msg, sizeof(struct fl_msg_query), NULL, 0, 1);
	mk_query(msg, 9, 0, 0);
	bad_message("QUERY of an unknown kind", msg, sizeof(struct fl_msg_query), NULL, 0, 1);
	mk_request(msg, (uint32_t)apid, 77, 0);
	bad_message("REQUEST of an unknown kind", msg, sizeof(struct fl_msg_request), NULL, 0, 1);
	mk_query(msg, FL_QUERY_STATS, 0, 0);
	((struct fl_msg_header *)msg)->type = FL_MSG_WELCOME;
	bad_message("a daemon's message type from a client", msg, sizeof(struct fl_msg_query),
		    NULL, 0, 1);
	memset(msg, 'x', sizeof(msg));
	fl_proto_header(msg, FL_MSG_QUERY, 70000, 1);
	bad_message("oversized message (70,000 bytes)", msg, 70000, NULL, 0, 1);
	fl_proto_header(msg, FL_MSG_QUERY, FL_PROTO_MAX_MESSAGE, 1);
	bad_message("a message of exactly 65,536 bytes (bad QUERY size)", msg,
		    FL_PROTO_MAX_MESSAGE, NULL, 0, 1);
	{
		struct fl_msg_module_remove r;

		memset(&r, 0, sizeof(r));
		fl_proto_header(&r, FL_MSG_MODULE_REMOVE, sizeof(r), 3);
		r.module = 1;
		bad_message("MODULE_REMOVE before HELLO", &r, sizeof(r), NULL, 0, 1);
	}
	still_serving("malformed messages");

	/* A registered fake process: MODULE_ADD and shared region abuse. */
	for (int mc = MOD_VALID; mc <= MOD_COMPLETIONS; mc++)
		fake_case((enum mod_case)mc);
	still_serving("MODULE_ADD and region abuse");

	/* fd floods: many connections, each sending messages with 4 fds. */
	{
		int fds[4], conns[100], sent = 0, gone = 0;
		double end;

		for (int i = 0; i < 4; i++)
			fds[i] = memfd_create("e2e-flood", MFD_CLOEXEC);
		mk_query(msg, FL_QUERY_STATS, 0, 0);
		for (int c = 0; c < 100; c++) {
			conns[c] = conn();
			for (int k = 0; conns[c] >= 0 && k < 20; k++) {
				if (xsend(conns[c], msg, sizeof(struct fl_msg_query), fds, 4,
					  MSG_DONTWAIT))
					break;
				sent++;
			}
		}
		/* One deadline for the 100: a failing run does not wait 100 times. */
		end = now() + WAIT_S;
		for (int c = 0; c < 100; c++) {
			if (conns[c] >= 0) {
				gone += dropped_by(conns[c], NULL, end);
				close(conns[c]);
			}
		}
		for (int i = 0; i < 4; i++)
			close(fds[i]);
		check(gone == 100, "fd flood: 100 clients sending messages with 4 fds each dropped",
		      "%d of 100 dropped (%d messages sent)", gone, sent);
		/* A registered process sending 4 fds with its messages. */
		{
			struct fake f;
			int fd;

			if (fake_region(&f, 16, ALL_SEALS, getpid()) == 0 &&
			    (fd = fake_hello(&f)) >= 0) {
				int four[4] = { f.fd, f.fd, f.fd, f.fd };
				int k = 0;

				mk_module_add(msg, 1, 2, 0, 0);
				while (k < 50 && xsend(fd, msg, sizeof(struct fl_msg_module_add) + 4,
						      four, 4, MSG_DONTWAIT) == 0)
					k++;
				check(dropped(fd, NULL), "fd flood from a registered process: dropped",
				      "not dropped after %d messages", k);
				close(fd);
				munmap(f.region, f.l.size);
				close(f.fd);
			}
		}
		still_serving("fd floods");
	}

	/* Sections: the bytes a process may make the daemon hold are bounded. */
	{
		long rss0 = daemon_rss_kib();
		int pfd[2], status;
		char detail[512] = { 0 };
		ssize_t got = 0, r;
		pid_t pid;

		if (pipe(pfd) == 0) {
			fflush(stdout);
			pid = fork();
			if (pid == 0) {
				close(pfd[0]);
				dup2(pfd[1], 1);
				setvbuf(stdout, NULL, _IONBF, 0);
				_exit(big_sections_child(rss0));
			}
			close(pfd[1]);
			while ((r = read(pfd[0], detail + got, sizeof(detail) - 1 - (size_t)got)) > 0)
				got += r;
			close(pfd[0]);
			waitpid(pid, &status, 0);
			check(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			      "16 MiB stack maps, module after module: the process is dropped at its limit",
			      "%s", detail);
			printf("# big stack maps: %s\n", detail);
		}
		still_serving("big stack maps");
	}
	/* Sites: a module of more sites than a process may have. */
	{
		struct fake f;
		int fd, e = 0;

		if (fake_region(&f, 3u << 20, ALL_SEALS, getpid()) == 0 && (fd = fake_hello(&f)) >= 0) {
			mk_module_add(msg, 1, 0, (3u << 20) - 1, 0);
			xsend(fd, msg, sizeof(struct fl_msg_module_add) + 4, NULL, 0, 0);
			check(dropped(fd, &e) && e == -ENOSPC,
			      "a module of 3M sites (over the 2M a process may have): -ENOSPC, dropped",
			      "error %d", e);
			close(fd);
			munmap(f.region, f.l.size);
			close(f.fd);
		} else {
			fail("a module of 3M sites", "cannot register the fake process");
		}
	}

	/*
	 * A large answer: a process with 30,000 sites (about 5 MB of stats
	 * --pid); stats about every process lists 4,096 of them.
	 */
	{
		struct fake f;
		int fd;

		if (fake_region(&f, 32768, ALL_SEALS, getpid()) == 0) {
			struct fl_shm_site *t =
				(struct fl_shm_site *)((char *)f.region + f.l.sites_offset);
			double t0;
			size_t bytes = 0;
			char *text = NULL;

			for (uint32_t i = 0; i < 30000; i++)
				t[i] = (struct fl_shm_site){ .faulting_pc = FAKE_CODE + i,
							     .handler_pc = FAKE_CODE + i,
							     .module = 1, .kind = 1 };
			fd = fake_hello(&f);
			if (fd >= 0) {
				mk_module_add(msg, 1, 0, 30000, 0);
				((struct fl_msg_module_add *)msg)->code_size = 1 << 20;
				xsend(fd, msg, sizeof(struct fl_msg_module_add) + 4, NULL, 0, 0);
				sleep_ms(300);
				t0 = now();
				err = exchange(msg, mk_query(msg, FL_QUERY_STATS, (uint32_t)getpid(), 0),
					       &text);
				bytes = text ? strlen(text) : 0;
				check(!err && bytes > 1000000,
				      "stats of a process with 30,000 sites: the whole answer arrives",
				      "err %d (%s), %zu bytes", err, strerror(-err), bytes);
				printf("# stats of 30,000 sites: %zu bytes in %.0f ms\n", bytes,
				       (now() - t0) * 1000);
				free(text);
				text = NULL;
				err = exchange(msg, mk_query(msg, FL_QUERY_STATS, 0, 0), &text);
				{
					json_object *all = text ? json_tokener_parse(text) : NULL;
					json_object *p = NULL, *procs = get(all, "processes");
					size_t listed = 0;

					for (size_t i = 0; procs && i < json_object_array_length(procs); i++)
						if (json_object_get_int(get(json_object_array_get_idx(procs, i),
									    "pid")) == getpid())
							p = json_object_array_get_idx(procs, i);
					if (get(p, "sites"))
						listed = json_object_array_length(get(p, "sites"));
					check(!err && listed == 4096 &&
					      json_object_get_int64(get(p, "sites_unlisted")) == 30000 - 4096 &&
					      json_object_get_int64(get(p, "num_sites")) == 30000,
					      "stats about every process: 4,096 of its 30,000 sites listed, the "
					      "others counted", "err %d, %zu listed", err, listed);
					json_object_put(all);
				}
				free(text);
				close(fd);
			}
			munmap(f.region, f.l.size);
			close(f.fd);
		}
		still_serving("a large answer");
	}

	/* One user's connections do not keep the others out. */
	{
		int rp[2], gp[2], held = -1, status;
		uint64_t v = 0;
		pid_t pid, parent = getpid();

		if (pipe(rp) == 0 && pipe(gp) == 0) {
			fflush(stdout);
			pid = fork();
			if (pid == 0) {
				close(rp[0]);
				close(gp[1]);
				_exit(conns_child(rp[1], gp[0], parent));
			}
			close(rp[1]);
			close(gp[0]);
			if (read(rp[0], &held, sizeof(held)) == sizeof(held)) {
				check(held == 2048 - 1, "nobody holds at most half of the 4,096 clients",
				      "%d connections stayed open (plus its registered process)",
				      held);
				err = request(0, (uint32_t)apid, FL_REQ_PING, 99, &v);
				check(!err && v == 99, "with those open, root is served",
				      "err %d", err);
			}
			close(gp[1]);
			close(rp[0]);
			waitpid(pid, &status, 0);
		}
		still_serving("a user holding half of the clients");
	}

	/* One user's exits do not push out another's exited processes. */
	{
		const char *argv[] = { prog, "run", "2", "2", "2", NULL };
		pid_t bpid = run_prog(argv, "pid", "exited root process"), pid, parent = getpid();
		int status, nob = -1;
		double end;

		if (bpid > 0)
			expect_counts("root's exited process", bpid, true, 2, 2, 2);
		fflush(stdout);
		pid = fork();
		if (pid == 0)
			_exit(exits_child(300, parent));
		waitpid(pid, &status, 0);
		check(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "nobody: 300 processes registered and exited", "status %d", status);
		end = now() + WAIT_S;
		do {
			nob = 0;
			if (query(0, FL_QUERY_PS, 0, 0, &doc) == 0) {
				for (size_t i = 0; i < nprocs(doc); i++) {
					json_object *p = proc_at(doc, i);

					nob += json_object_get_int(get(p, "uid")) == NOBODY &&
					       json_object_get_boolean(get(p, "exited"));
				}
				json_object_put(doc);
			}
			if (nob == 256)
				break;
			sleep_ms(100);
		} while (now() < end);
		check(nob == 256, "nobody's exited processes: 256 kept", "%d kept", nob);
		if (bpid > 0)
			expect_counts("root's exited process still kept after nobody's 300 exits", bpid,
				      true, 2, 2, 2);
	}

	/* One user's requests in flight do not keep the others' out. */
	{
		int rp[2], gp[2], status;
		uint64_t v = 0;
		char c;
		pid_t pid, parent = getpid();
		struct pollfd pr = { .events = POLLIN };
		double end;

		if (pipe(rp) == 0 && pipe(gp) == 0) {
			fflush(stdout);
			pid = fork();
			if (pid == 0) {
				close(rp[0]);
				close(gp[1]);
				_exit(pending_flood_child(rp[1], gp[0], parent));
			}
			close(rp[1]);
			close(gp[0]);
			pr.fd = rp[0];
			if (poll(&pr, 1, WAIT_MS) == 1 && read(rp[0], &c, 1) == 1) {
				err = request(0, (uint32_t)apid, FL_REQ_PING, 31337, &v);
				check(!err && v == 31337,
				      "64 requests in flight from nobody (to a process that never answers): root's ping still answered",
				      "err %d (%s)", err, strerror(-err));
				/*
				 * A slot freed by the daemon's request timeout is
				 * taken again within 2 ms: a request that got in
				 * there is answered, and asked again.
				 */
				end = now() + WAIT_S;
				do
					err = request(NOBODY, (uint32_t)npid, FL_REQ_PING, 4711, &v);
				while (err != -EBUSY && now() < end);
				check(err == -EBUSY,
				      "nobody's next request: -EBUSY (64 of one uid in flight)",
				      "err %d", err);
			}
			close(gp[1]);
			close(rp[0]);
			waitpid(pid, &status, 0);
			check(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			      "nobody's requests kept in flight until refused with -EBUSY",
			      "status %d", status);
		}
		still_serving("64 requests in flight");
	}

	/* A client that never reads its replies. */
	{
		int fd = conn(), k = 0, e = 0;
		double end = now() + WAIT_S;

		mk_query(msg, FL_QUERY_STATS, 0, 0);
		while (fd >= 0 && now() < end) {
			e = xsend(fd, msg, sizeof(struct fl_msg_query), NULL, 0, MSG_DONTWAIT);
			if (e && e != -EAGAIN)
				break;
			k += !e;
			/* Under the rate limit (1,000 a second): dropped for not reading. */
			sleep_ms(2);
		}
		check(e == -EPIPE || e == -ECONNRESET,
		      "a client that never reads its replies is dropped",
		      "after %d queries: %s", k, strerror(-e));
		if (fd >= 0)
			close(fd);
		check(log_wait("not reading", NULL), "the daemon logged the slow reader",
		      "no \"not reading\" line in %s", dlog);
		still_serving("a client that never reads");
	}

	/* The others kept their data. */
	expect_counts("root's process keeps its data after all of this", apid, false, 3, 4, 5);
	expect_counts("nobody's process keeps its data after all of this", npid, false, 6, 7, 8);
	if (waiter_fail(&a, 1, 1, 1, "security"))
		expect_counts("root's process still counted live", apid, false, 4, 5, 6);
	{
		uint64_t v = 0;

		err = request(0, (uint32_t)apid, FL_REQ_PING, 4242, &v);
		check(!err && v == 4242, "root's process still answers requests", "err %d", err);
	}

	/* No descriptor leaked (the fake processes and their memfds are gone). */
	{
		double end = now() + WAIT_S;

		while ((after = daemon_nfds()) > before && now() < end)
			sleep_ms(50);
	}
	check(after <= before, "the daemon's descriptors do not grow",
	      "%d open before the attacks, %d after", before, after);

	proc_end(&a);
	proc_end(&n);
	check(daemon_stop() == 0, "SIGTERM: faultlined exits 0", "bad exit");
}

