// SPDX-License-Identifier: MIT
/*
 * A process that registers as many sites as it is told, the way any user
 * may: one shared region, then MODULE_ADD messages (no agent, no code: the
 * site table describes made-up PCs).  The hostile tests use it as nobody to
 * load the daemon with one user's data, and to go over that user's budget.
 *
 *   manysites SOCK SITES [MODULES [SECTIONS [NAMES [hold|exit]]]]
 *
 * SITES sites in MODULES modules (default 1), each module with a fault map
 * of its sites in a sealed memfd when SECTIONS is 1 (12 bytes a site: what
 * counts as the user's section bytes), and named by SYMBOLS when NAMES is 1.
 * Counter i holds i % 7.  MODULES 0: no MODULE_ADD at all, the SITES
 * sites (of module 1) are in the region's site table only, below its
 * sites_high, as a process may leave them for the daemon to find when it
 * disconnects (fld_proc_scan).  Then SYNC: once it is answered the daemon has
 * handled every module.  Prints one line per module the daemon refused,
 * "refused: TEXT", then "registered pid PID: K of M modules (SITES sites)"
 * and exits, or with hold waits to be killed.
 * Exits 1 when the daemon does not register it or does not answer.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "proto/proto.h"

/* How long to wait for the daemon: minutes, for a loaded machine. */
#define WAIT_MS (300 * 1000)
#define CODE 0x10000000ull

static int fd = -1;
static uint32_t seq;

static int die(const char *what)
{
	printf("FAIL: %s\n", what);
	return 1;
}

static int send_msg(const void *buf, size_t len, const int *fds, size_t nfds)
{
	return fl_proto_send(fd, buf, len, fds, nfds, 0);
}

/*
 * Reads one message into buf.  Returns its length, or -1 (no answer in
 * WAIT_MS, or the connection is gone).
 */
static ssize_t recv_msg(void *buf, size_t size)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	if (poll(&p, 1, WAIT_MS) != 1)
		return -1;
	return recv(fd, buf, size, 0);
}

/* A fault map (version 1) of n sites of one function at CODE + 16 * i. */
static int faultmap_fd(uint32_t first, uint32_t n, size_t *size)
{
	size_t len = 24 + 12 * (size_t)n, o = 0;
	unsigned char *b = calloc(1, len);
	uint32_t u;
	uint64_t q;
	int mfd;

	if (!b)
		return -1;
	b[o] = 1;	/* version */
	o += 4;
	u = 1;		/* functions */
	memcpy(b + o, &u, 4), o += 4;
	q = 0;		/* function address */
	memcpy(b + o, &q, 8), o += 8;
	memcpy(b + o, &n, 4), o += 4;
	o += 4;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t e[3] = { 1, 16 * (first + i), 16 * (first + i) + 8 };

		memcpy(b + o, e, sizeof(e));
		o += sizeof(e);
	}
	mfd = memfd_create("manysites-sections", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (mfd < 0 || write(mfd, b, len) != (ssize_t)len ||
	    fcntl(mfd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW)) {
		free(b);
		return -1;
	}
	free(b);
	*size = len;
	return mfd;
}

/* SYMBOLS for sites [0, n) of module: "site_FIRST+i", as many per message as fit. */
static int send_names(uint32_t module, uint32_t first, uint32_t n)
{
	static unsigned char buf[FL_PROTO_MAX_MESSAGE];
	uint32_t i = 0;

	while (i < n) {
		struct fl_msg_symbols s;
		size_t o = sizeof(s);
		uint32_t count = 0;

		while (i < n && o + FL_SYMBOL_ENTRY_HEAD + 24 <= sizeof(buf)) {
			char name[24];
			uint16_t len = (uint16_t)snprintf(name, sizeof(name), "site_%u", first + i);

			o += fl_symbols_put(buf + o, i, 0, name, len);
			count++;
			i++;
		}
		memset(&s, 0, sizeof(s));
		fl_proto_header(&s, FL_MSG_SYMBOLS, o, ++seq);
		s.module = module;
		s.count = count;
		memcpy(buf, &s, sizeof(s));
		if (send_msg(buf, o, NULL, 0))
			return -1;
		/* Under the daemon's 1,000 messages a second. */
		if (i < n)
			usleep(2000);
	}
	return 0;
}

static uint32_t first_of(uint32_t k, uint32_t sites, uint32_t modules)
{
	return (uint32_t)((uint64_t)k * sites / modules);
}

int main(int argc, char **argv)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	static char buf[FL_PROTO_MAX_MESSAGE];
	uint32_t sites, modules = 1, sync_seq, accepted;
	int sections = 0, names = 0, hold = 0, rfd;
	struct fl_shm_layout l;
	struct fl_shm_site *table;
	uint64_t *counters;
	struct fl_msg_hello h;
	struct fl_msg m;
	void *region;
	ssize_t n;

	if (argc < 3) {
		fprintf(stderr, "usage: manysites SOCK SITES [MODULES [SECTIONS [NAMES "
			"[hold|exit]]]]\n");
		return 2;
	}
	sites = (uint32_t)strtoul(argv[2], NULL, 10);
	if (argc > 3)
		modules = (uint32_t)strtoul(argv[3], NULL, 10);
	if (argc > 4)
		sections = atoi(argv[4]);
	if (argc > 5)
		names = atoi(argv[5]);
	if (argc > 6)
		hold = !strcmp(argv[6], "hold");
	if (!sites || modules > sites)
		return die("SITES must be at least 1, MODULES at most SITES");

	/* The region: every site's slot, described, and its counter. */
	if (fl_shm_layout(sites, 8, 8, &l) != 0)
		return die("no region layout for that many sites");
	rfd = memfd_create("manysites-region", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (rfd < 0 || ftruncate(rfd, (off_t)l.size) != 0)
		return die("memfd_create");
	region = mmap(NULL, l.size, PROT_READ | PROT_WRITE, MAP_SHARED, rfd, 0);
	if (region == MAP_FAILED)
		return die("mmap");
	fl_shm_init(region, &l, (uint32_t)getpid());
	if (fcntl(rfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0)
		return die("seals");
	table = (struct fl_shm_site *)((char *)region + l.sites_offset);
	counters = (uint64_t *)((char *)region + l.counters_offset);
	/* Module k + 1 holds the slots [k * SITES / MODULES, (k + 1) * SITES / MODULES). */
	for (uint32_t k = 0; k < (modules ? modules : 1); k++) {
		uint32_t per = modules ? modules : 1;

		for (uint32_t i = first_of(k, sites, per); i < first_of(k + 1, sites, per); i++) {
			table[i] = (struct fl_shm_site){
				.faulting_pc = CODE + 16ull * i, .handler_pc = CODE + 16ull * i + 8,
				.module = k + 1, .kind = 1,
			};
			counters[i] = i % 7;
		}
	}
	/* Release: pairs with the daemon's acquire before it reads the slots. */
	if (!modules)
		atomic_store_explicit(&((struct fl_shm_header *)region)->sites_high, sites,
				      memory_order_release);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", argv[1]);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0)
		return die("connect");
	memset(&h, 0, sizeof(h));
	fl_proto_header(&h, FL_MSG_HELLO, sizeof(h), ++seq);
	h.pid = (uint32_t)getpid();
	h.region_size = l.size;
	snprintf(h.comm, sizeof(h.comm), "manysites");
	if (send_msg(&h, sizeof(h), &rfd, 1) != 0)
		return die("send HELLO");
	n = recv_msg(buf, sizeof(buf));
	if (n <= 0 || fl_proto_decode(buf, (size_t)n, 0, &m, NULL) || m.type != FL_MSG_WELCOME)
		return die("no WELCOME");

	for (uint32_t k = 0; k < modules; k++) {
		uint32_t first = first_of(k, sites, modules), end = first_of(k + 1, sites, modules);
		struct fl_msg_module_add a;
		char msg[sizeof(a) + 16];
		size_t fm_size = 0;
		int sfd = -1;

		if (sections && (sfd = faultmap_fd(first, end - first, &fm_size)) < 0)
			return die("sections memfd");
		memset(&a, 0, sizeof(a));
		a.module = k + 1;
		a.code_start = CODE;
		a.code_size = 16ull * sites + 16;
		a.first_counter = first;
		a.num_sites = end - first;
		a.faultmap_size = (uint32_t)fm_size;
		a.name_len = (uint32_t)snprintf(msg + sizeof(a), 16, "mod%u", a.module);
		fl_proto_header(&a, FL_MSG_MODULE_ADD, sizeof(a) + a.name_len, ++seq);
		memcpy(msg, &a, sizeof(a));
		if (send_msg(msg, sizeof(a) + a.name_len, sfd >= 0 ? &sfd : NULL, sfd >= 0) != 0)
			return die("send MODULE_ADD");
		if (sfd >= 0)
			close(sfd);
		if (names && send_names(a.module, first, end - first) != 0)
			return die("send SYMBOLS");
	}

	/* Answered once every module before it is handled. */
	{
		struct fl_msg_sync s;

		fl_proto_header(&s, FL_MSG_SYNC, sizeof(s), sync_seq = ++seq);
		if (send_msg(&s, sizeof(s), NULL, 0) != 0)
			return die("send SYNC");
	}
	accepted = modules;
	for (;;) {
		n = recv_msg(buf, sizeof(buf));
		if (n <= 0 || fl_proto_decode(buf, (size_t)n, 0, &m, NULL))
			return die("no answer to SYNC");
		if (m.type == FL_MSG_ERROR) {
			printf("refused: %.*s\n", (int)m.error.len, m.text);
			accepted--;
			continue;
		}
		if (m.type == FL_MSG_REPLY && m.seq == sync_seq)
			break;
	}
	printf("registered pid %d: %u of %u modules (%u sites)\n", (int)getpid(), accepted,
	       modules, sites);
	fflush(stdout);
	if (hold)
		for (;;)
			pause();
	return 0;
}
