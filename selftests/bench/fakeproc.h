/* SPDX-License-Identifier: MIT */
/*
 * A registered process of any size for bench_daemon, speaking the protocol
 * itself (docs/protocol.md) so that what is timed is the daemon's side
 * only: a shared region whose site table describes one module of n sites,
 * HELLO, MODULE_ADD with the module's fault map, SYMBOLS naming every site
 * (FAKE_SITES_PER_FN sites a function, so a name is shared as in compiled
 * code), then SYNC: its REPLY says that the daemon has taken everything in.
 *
 * The sites are at made-up addresses that no code runs at: nothing faults.
 * fake_count bumps counters in the region as faults would.
 */
#ifndef FL_BENCH_FAKEPROC_H
#define FL_BENCH_FAKEPROC_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "proto/proto.h"
#include "synth.h"

#define FAKE_SITES_PER_FN 4u
#define FAKE_FN_SIZE 64u
#define FAKE_CODE 0x7f0000000000ull
#define FAKE_MODULE 1u

struct fake_proc {
	int sock;
	void *region;
	struct fl_shm_layout layout;
	uint32_t sites;
};

static inline uint64_t fake_site_pc(uint32_t i)
{
	return FAKE_CODE + (uint64_t)(i / FAKE_SITES_PER_FN) * FAKE_FN_SIZE +
	       16u * (i % FAKE_SITES_PER_FN);
}

static inline uint64_t fake_handler_pc(uint32_t i)
{
	return FAKE_CODE + (uint64_t)(i / FAKE_SITES_PER_FN) * FAKE_FN_SIZE + FAKE_FN_SIZE - 4;
}

/* The fault map of n sites, as in the site table. */
static inline void fake_faultmap(struct synth_buf *b, uint32_t n)
{
	static const uint8_t kinds[] = { 1, 1, 3, 1, 2 };
	uint32_t fns = (n + FAKE_SITES_PER_FN - 1) / FAKE_SITES_PER_FN;

	memset(b, 0, sizeof(*b));
	synth_put(b, 1, 1);
	synth_put(b, 0, 1);
	synth_put(b, 0, 2);
	synth_put(b, fns, 4);
	for (uint32_t f = 0; f < fns; f++) {
		uint32_t k = n - f * FAKE_SITES_PER_FN;

		k = k > FAKE_SITES_PER_FN ? FAKE_SITES_PER_FN : k;
		synth_put(b, FAKE_CODE + (uint64_t)f * FAKE_FN_SIZE, 8);
		synth_put(b, k, 4);
		synth_put(b, 0, 4);
		for (uint32_t i = 0; i < k; i++) {
			synth_put(b, kinds[(f * FAKE_SITES_PER_FN + i) % sizeof(kinds)], 4);
			synth_put(b, 16 * i, 4);
			synth_put(b, FAKE_FN_SIZE - 4, 4);
		}
	}
}

static inline int fake_send(int fd, const void *buf, size_t len, int sendfd)
{
	return fl_proto_send(fd, buf, len, sendfd >= 0 ? &sendfd : NULL, sendfd >= 0, 0);
}

/* A sealed memfd holding len bytes of p (sealed against writes when final). */
static inline int fake_memfd(const void *p, size_t len, int seals)
{
	int fd = memfd_create("fake", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd < 0 || ftruncate(fd, (off_t)len) != 0 ||
	    (p && pwrite(fd, p, len, 0) != (ssize_t)len) || fcntl(fd, F_ADD_SEALS, seals) != 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* Reads messages until the REPLY of seq.  Returns 0, or -1. */
static inline int fake_wait_reply(int fd, uint32_t seq)
{
	static char buf[FL_PROTO_MAX_MESSAGE];

	for (;;) {
		struct fl_msg m;
		ssize_t n = recv(fd, buf, sizeof(buf), 0);

		if (n <= 0 || fl_proto_decode(buf, (size_t)n, 0, &m, NULL) != 0)
			return -1;
		if (m.type == FL_MSG_ERROR)
			return -1;
		if (m.type == FL_MSG_REPLY && m.seq == seq)
			return 0;
	}
}

/*
 * Registers this process (a child of the benchmark: the daemon checks its
 * pid) with n sites at the daemon's socket path.  Returns 0 once the
 * daemon answered the SYNC behind it all, with *took the seconds from
 * HELLO to that REPLY (everything is built before), -1 on failure.
 */
static inline int fake_register(struct fake_proc *fp, const char *path, uint32_t n,
				double *took)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct fl_shm_site *table;
	struct fl_msg_hello h;
	struct fl_msg_module_add *a;
	struct fl_msg_sync s;
	struct synth_buf fm, names = { 0 };
	static const char name[] = "fake-jit";
	size_t add_len = sizeof(*a) + sizeof(name) - 1, nmsgs = 0;
	size_t *ends = NULL;
	struct timespec t0, t1;
	int rfd, sfd;
	uint32_t i;

	memset(fp, 0, sizeof(*fp));
	fp->sites = n;
	if (fl_shm_layout(n, 64, 64, &fp->layout) != 0)
		return -1;
	rfd = fake_memfd(NULL, fp->layout.size, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
	if (rfd < 0)
		return -1;
	fp->region = mmap(NULL, fp->layout.size, PROT_READ | PROT_WRITE, MAP_SHARED, rfd, 0);
	if (fp->region == MAP_FAILED)
		return -1;
	fl_shm_init(fp->region, &fp->layout, (uint32_t)getpid());
	table = (struct fl_shm_site *)((char *)fp->region + fp->layout.sites_offset);
	for (i = 0; i < n; i++) {
		static const uint8_t kinds[] = { 1, 1, 3, 1, 2 };

		table[i].faulting_pc = fake_site_pc(i);
		table[i].handler_pc = fake_handler_pc(i);
		table[i].module = FAKE_MODULE;
		table[i].kind = kinds[i % sizeof(kinds)];
	}
	atomic_store_explicit(&((struct fl_shm_header *)fp->region)->sites_high, n,
			      memory_order_release);
	fake_faultmap(&fm, n);
	sfd = fake_memfd(fm.p, fm.len, F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW);
	if (sfd < 0)
		return -1;

	memset(&h, 0, sizeof(h));
	fl_proto_header(&h, FL_MSG_HELLO, sizeof(h), 1);
	h.pid = (uint32_t)getpid();
	h.flags = FL_HELLO_SYNC;
	h.region_size = fp->layout.size;
	memcpy(h.comm, "fakeproc", 8);

	a = calloc(1, add_len);
	if (!a)
		return -1;
	a->module = FAKE_MODULE;
	a->flags = FL_MODULE_BASE;
	a->base = FAKE_CODE;
	a->code_start = FAKE_CODE;
	a->code_size = (uint64_t)((n + FAKE_SITES_PER_FN - 1) / FAKE_SITES_PER_FN) *
		       FAKE_FN_SIZE;
	a->num_sites = n;
	a->faultmap_size = (uint32_t)fm.len;
	a->name_len = sizeof(name) - 1;
	fl_proto_header(a, FL_MSG_MODULE_ADD, add_len, 2);
	memcpy(a + 1, name, a->name_len);

	/* SYMBOLS: as many messages as the names take, one after the other in names. */
	for (i = 0; i < n;) {
		struct fl_msg_symbols sy;
		size_t start = names.len;

		memset(&sy, 0, sizeof(sy));
		sy.module = FAKE_MODULE;
		synth_put(&names, 0, sizeof(sy));
		for (; i < n && names.len - start + FL_SYMBOL_ENTRY_HEAD + 32 <= FL_PROTO_MAX_MESSAGE;
		     i++, sy.count++) {
			unsigned char entry[FL_SYMBOL_ENTRY_HEAD + 32];
			char fn[32];
			int k = snprintf(fn, sizeof(fn), "jit_compiled_function_%u",
					 i / FAKE_SITES_PER_FN);
			size_t len = fl_symbols_put(entry, i, 16u * (i % FAKE_SITES_PER_FN), fn,
						    (uint16_t)k);

			for (size_t c = 0; c < len; c++)
				synth_put(&names, entry[c], 1);
		}
		fl_proto_header(&sy, FL_MSG_SYMBOLS, names.len - start, 3);
		memcpy(names.p + start, &sy, sizeof(sy));
		ends = realloc(ends, (nmsgs + 1) * sizeof(*ends));
		if (!ends)
			return -1;
		ends[nmsgs++] = names.len;
	}
	memset(&s, 0, sizeof(s));
	fl_proto_header(&s, FL_MSG_SYNC, sizeof(s), 4);

	fp->sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	memcpy(sa.sun_path, path, strnlen(path, sizeof(sa.sun_path) - 1));
	if (fp->sock < 0 || connect(fp->sock, (struct sockaddr *)&sa, sizeof(sa)) != 0)
		return -1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (fake_send(fp->sock, &h, sizeof(h), rfd) != 0 ||
	    fake_send(fp->sock, a, add_len, sfd) != 0)
		return -1;
	for (size_t k = 0, start = 0; k < nmsgs; start = ends[k++])
		if (fake_send(fp->sock, names.p + start, ends[k] - start, -1) != 0)
			return -1;
	if (fake_send(fp->sock, &s, sizeof(s), -1) != 0 || fake_wait_reply(fp->sock, 4) != 0)
		return -1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	*took = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	close(rfd);
	close(sfd);
	free(a);
	free(fm.p);
	free(names.p);
	free(ends);
	return 0;
}

/* Counts k faults at each of the first sites of the region, as the handler would. */
static inline void fake_count(struct fake_proc *fp, uint32_t sites, uint64_t k)
{
	_Atomic uint64_t *c = (_Atomic uint64_t *)((char *)fp->region + fp->layout.counters_offset);

	_Atomic uint8_t *dirty = (_Atomic uint8_t *)((char *)fp->region + fp->layout.dirty_offset);

	for (uint32_t i = 0; i < sites && i < fp->sites; i++) {
		atomic_fetch_add_explicit(&c[i], k, memory_order_relaxed);
		fl_shm_mark_dirty(dirty, i);
	}
}

/*
 * Fails one site in every `every` (sites 0, every, 2 * every, ...), as the
 * handler would count them: site i gets 1 + (i / every) % 1000 faults, so
 * that the sites that failed most are not simply the first ones.
 */
static inline void fake_fail(struct fake_proc *fp, uint32_t every)
{
	_Atomic uint64_t *c = (_Atomic uint64_t *)((char *)fp->region + fp->layout.counters_offset);
	_Atomic uint8_t *dirty = (_Atomic uint8_t *)((char *)fp->region + fp->layout.dirty_offset);

	for (uint32_t i = 0; every && i < fp->sites; i += every) {
		atomic_fetch_add_explicit(&c[i], 1 + (i / every) % 1000, memory_order_relaxed);
		fl_shm_mark_dirty(dirty, i);
	}
}

#endif /* FL_BENCH_FAKEPROC_H */
