// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the protocol's message decoder, the shared region's
 * header check and the ring's consumer on arbitrary bytes (lib/proto,
 * docs/protocol.md): what the daemon runs on whatever a client sends.
 *
 * The input: one selector byte, then the message.  The selector's bits 0-3
 * modulo 5 are the number of file descriptors that came with it; bit 4
 * takes the region's real size from the header's bytes at 48 (else from
 * its own size field), bit 5 the peer's pid from its bytes at 56 (else
 * from its own pid field).  What must hold:
 *  - fl_proto_decode accepts exactly what a reference validator written
 *    here from docs/protocol.md accepts;
 *  - a failure is one of the documented errors with a non-empty
 *    NUL-terminated diagnostic starting "message "; with a NULL diag the
 *    result is the same;
 *  - an accepted message's fields are the bytes of the input, its pointers
 *    are inside the input, a SYMBOLS message walks exactly count entries
 *    with every name inside the input, non-empty and without NUL, and the
 *    same message with another number of fds is -EPROTO;
 *  - of a message of at least 256 bytes, an aligned copy of its first 256
 *    bytes as a region header: fl_shm_check accepts only the magic, version,
 *    header size, pid and size it was given, and the layout it returns has
 *    every part 64-aligned, inside size and disjoint from the others;
 *  - the ring's consumer, with the head and tail taken from that header,
 *    returns 0 (empty), 1 (an entry, tail + 1) or -EBADMSG (head - tail >
 *    entries) and never touches the tail otherwise.
 */
#include <stdbool.h>

#include "fuzz.h"
#include "proto/proto.h"

#define HEADER_SIZE 16u

static uint64_t le(const uint8_t *p, unsigned n)
{
	return raw(p, n, 0);
}

static bool has_nul(const uint8_t *p, size_t n)
{
	return memchr(p, 0, n) != NULL;
}

/* SYMBOLS entries after the fixed part: count entries, nothing after. */
static bool reference_symbols(const uint8_t *p, size_t n, uint32_t count)
{
	size_t pos = 0;

	for (uint32_t i = 0; i < count; i++) {
		size_t len;

		/* site u32, offset u32, len u16 */
		if (n - pos < 10)
			return false;
		len = le(p + pos + 8, 2);
		pos += 10;
		if (len == 0 || n - pos < len || has_nul(p + pos, len))
			return false;
		pos += len;
	}
	return pos == n;
}

/* The protocol read again from docs/protocol.md: is this message valid? */
static bool reference(const uint8_t *d, size_t n, size_t nfds)
{
	size_t want_fds = 0;

	if (n < HEADER_SIZE || n > FL_PROTO_MAX_MESSAGE)
		return false;
	if (le(d, 4) != FL_PROTO_MAGIC || le(d + 4, 2) != 1 || le(d + 8, 4) != n)
		return false;
	switch (le(d + 6, 2)) {
	case 1:		/* HELLO */
		/* flags: FIRST 1, SYNC 2, ALLOW_PATCH 4, DONE 8, DUMP 16, DUMPABLE 32 (only with DUMP) */
		if (n != 48 || !le(d + 16, 4) || (le(d + 20, 4) & ~63ull) ||
		    (le(d + 20, 4) & 48) == 32 ||
		    le(d + 24, 8) < FL_SHM_HEADER_SIZE || le(d + 24, 8) > FL_PROTO_MAX_REGION ||
		    !has_nul(d + 32, 16))
			return false;
		want_fds = 1;
		break;
	case 2: {	/* MODULE_ADD; flags: BASE 1 (base at 64, at most code_start) */
		uint64_t start, size, sections, base;

		if (n < 72 || !le(d + 16, 4) || (le(d + 20, 4) & ~1ull))
			return false;
		if (le(d + 56, 4) != n - 72 || n - 72 > FL_PROTO_MAX_NAME ||
		    has_nul(d + 72, n - 72))
			return false;
		start = le(d + 24, 8);
		size = le(d + 32, 8);
		base = le(d + 64, 8);
		if (size == 0 || start + size < start)
			return false;
		if ((!(le(d + 20, 4) & 1) && base) || base > start)
			return false;
		if (le(d + 40, 4) + le(d + 44, 4) > UINT32_MAX)
			return false;
		/* The memfd: fault map, stack map, sm_functions u64 addresses. */
		sections = le(d + 48, 4) + le(d + 52, 4);
		if (sections + 8 * le(d + 60, 4) > FL_PROTO_MAX_REGION)
			return false;
		if (le(d + 60, 4) && !le(d + 52, 4))
			return false;
		want_fds = sections ? 1 : 0;
		break;
	}
	case 3:		/* MODULE_REMOVE */
		if (n != 24 || !le(d + 16, 4) || le(d + 20, 4))
			return false;
		break;
	case 4:		/* SYMBOLS */
		if (n < 24 || !le(d + 16, 4) ||
		    !reference_symbols(d + 24, n - 24, (uint32_t)le(d + 20, 4)))
			return false;
		break;
	case 5:		/* SYNC: the header alone */
	case 6:		/* COMPLETE: the header alone */
	case 7:		/* DONE: the header alone */
		if (n != HEADER_SIZE)
			return false;
		break;
	case 8:		/* DUMPABLE: 0 or 1, reserved 0 */
		if (n != 24 || le(d + 16, 4) > 1 || le(d + 20, 4))
			return false;
		break;
	case 16:	/* QUERY; STATS's arg: bits 0-31 a bound, bit 32 FAILED_ONLY, no other */
		if (n != 32 || le(d + 16, 4) < 1 || le(d + 16, 4) > 5)
			return false;
		if (le(d + 16, 4) == 1 && (le(d + 24, 8) >> 33))
			return false;
		break;
	case 17: {	/* REQUEST: PING 1, HEAL_THRESHOLD 2, HEAL 6, UNHEAL 7, HEAL_OVER 8, UNHEAL_AFTER 9 */
		uint64_t kind;

		if (n != 32 || !le(d + 16, 4))
			return false;
		kind = le(d + 20, 4);
		if (kind < 1 || (kind > 2 && kind < 6) || kind > 9)
			return false;
		break;
	}
	case 18: {	/* POINT: pid, kind, id, pc, target, len, expect_len; the bytes */
		uint64_t kind, target, len, expect;

		if (n < 56 || !le(d + 16, 4))
			return false;
		kind = le(d + 20, 4);
		target = le(d + 40, 8);
		len = le(d + 48, 4);
		expect = le(d + 52, 4);
		if (kind == 3) {	/* PATCHPOINT_WRITE: 1..256 bytes, 0..256 expected */
			if (len < 1 || len > 256 || expect > 256 || target)
				return false;
		} else if (kind == 4) {	/* PATCHPOINT_RESET */
			if (len || expect || target)
				return false;
		} else if (kind == 5) {	/* STACKMAP_INVALIDATE: a target */
			if (len || expect || !target)
				return false;
		} else {
			return false;
		}
		if (n - 56 != len + expect)
			return false;
		break;
	}
	case 64:	/* WELCOME; flags: BPF 1 */
		if (n != 24 || (le(d + 20, 4) & ~1ull))
			return false;
		break;
	case 65:	/* ERROR */
		if (n < 24 || le(d + 20, 4) != n - 24 || (int32_t)le(d + 16, 4) >= 0)
			return false;
		break;
	case 66:	/* REPLY */
		if (n < 24 || le(d + 20, 4) != n - 24 || (le(d + 16, 4) & ~1ull))
			return false;
		break;
	default:
		return false;
	}
	return nfds == want_fds;
}

/* An accepted message: every field is the input's, every pointer inside it. */
static void check_message(const struct fl_msg *m, const uint8_t *d, size_t n, size_t nfds)
{
	const uint8_t *end = d + n;

	CHECK(m->seq == le(d + 12, 4));
	CHECK(m->type == le(d + 6, 2));
	CHECK(m->nfds == nfds && nfds <= 1);
	switch (m->type) {
	case FL_MSG_HELLO:
		CHECK(memcmp(&m->hello, d, sizeof(m->hello)) == 0);
		CHECK(m->hello.pid != 0 && memchr(m->hello.comm, 0, FL_PROTO_COMM));
		break;
	case FL_MSG_MODULE_ADD:
		CHECK(memcmp(&m->module_add, d, sizeof(m->module_add)) == 0);
		CHECK((const uint8_t *)m->name == d + sizeof(m->module_add));
		CHECK((const uint8_t *)m->name + m->module_add.name_len == end);
		break;
	case FL_MSG_MODULE_REMOVE:
		CHECK(memcmp(&m->module_remove, d, sizeof(m->module_remove)) == 0);
		break;
	case FL_MSG_SYMBOLS: {
		struct fl_symbol s;
		size_t pos = 0, prev = 0;
		uint32_t count = 0;
		int ret;

		CHECK(memcmp(&m->symbols, d, sizeof(m->symbols)) == 0);
		CHECK(m->entries == d + sizeof(m->symbols));
		CHECK(m->entries + m->entries_size == end);
		while ((ret = fl_symbols_next(m, &pos, &s)) == 1) {
			const uint8_t *name = (const uint8_t *)s.name;

			CHECK(count < m->symbols.count);
			CHECK(name == m->entries + prev + 10);
			CHECK(s.len > 0 && s.len <= (size_t)(end - name));
			CHECK(!has_nul(name, s.len));
			CHECK(s.site == le(m->entries + prev, 4));
			CHECK(s.offset == le(m->entries + prev + 4, 4));
			CHECK(pos == prev + 10 + s.len);
			prev = pos;
			count++;
		}
		CHECK(ret == 0);
		CHECK(count == m->symbols.count);
		CHECK(pos == m->entries_size);
		CHECK(fl_symbols_next(m, &pos, &s) == 0);
		break;
	}
	case FL_MSG_SYNC:
		CHECK(memcmp(&m->sync, d, sizeof(m->sync)) == 0);
		break;
	case FL_MSG_COMPLETE:
		CHECK(memcmp(&m->complete, d, sizeof(m->complete)) == 0);
		break;
	case FL_MSG_DONE:
		CHECK(memcmp(&m->done, d, sizeof(m->done)) == 0);
		break;
	case FL_MSG_DUMPABLE:
		CHECK(memcmp(&m->dumpable, d, sizeof(m->dumpable)) == 0);
		break;
	case FL_MSG_QUERY:
		CHECK(memcmp(&m->query, d, sizeof(m->query)) == 0);
		break;
	case FL_MSG_REQUEST:
		CHECK(memcmp(&m->request, d, sizeof(m->request)) == 0);
		break;
	case FL_MSG_POINT:
		CHECK(memcmp(&m->point, d, sizeof(m->point)) == 0);
		CHECK(m->bytes == d + sizeof(m->point));
		CHECK(m->expect == m->bytes + m->point.len);
		CHECK(m->expect + m->point.expect_len == end);
		CHECK(m->point.len <= FL_PROTO_POINT_MAX && m->point.expect_len <= FL_PROTO_POINT_MAX);
		break;
	case FL_MSG_WELCOME:
		CHECK(memcmp(&m->welcome, d, sizeof(m->welcome)) == 0);
		break;
	case FL_MSG_ERROR:
		CHECK(memcmp(&m->error, d, sizeof(m->error)) == 0);
		CHECK((const uint8_t *)m->text == d + sizeof(m->error));
		CHECK((const uint8_t *)m->text + m->error.len == end);
		break;
	case FL_MSG_REPLY:
		CHECK(memcmp(&m->reply, d, sizeof(m->reply)) == 0);
		CHECK((const uint8_t *)m->text == d + sizeof(m->reply));
		CHECK((const uint8_t *)m->text + m->reply.len == end);
		break;
	default:
		CHECK(!"accepted an unknown type");
	}
}

static void fuzz_decode(const uint8_t *d, size_t n, size_t nfds)
{
	struct fl_msg m;
	struct fl_diag diag;
	bool ok = reference(d, n, nfds);
	int ret;

	memset(&diag, 0xa5, sizeof(diag));
	ret = fl_proto_decode(d, n, nfds, &m, &diag);
	CHECK((ret == 0) == ok);
	if (ret) {
		CHECK(ret == -EBADMSG || ret == -EPROTO || ret == -EPROTONOSUPPORT ||
		      ret == -EMSGSIZE);
		check_diag(&diag, ret, "message ");
		CHECK(fl_proto_decode(d, n, nfds, &m, NULL) == ret);
		return;
	}
	check_message(&m, d, n, nfds);
	CHECK(fl_proto_decode(d, n, nfds + 1, &m, NULL) == -EPROTO);
	if (nfds)
		CHECK(fl_proto_decode(d, n, nfds - 1, &m, NULL) == -EPROTO);
}

struct part {
	uint64_t start, size;
};

static void check_layout(const struct fl_shm_layout *l)
{
	struct part p[] = {
		{ 0, FL_SHM_HEADER_SIZE },
		{ l->sites_offset, (uint64_t)l->capacity * sizeof(struct fl_shm_site) },
		{ l->counters_offset, (uint64_t)l->capacity * sizeof(uint64_t) },
		{ l->requests_offset, (uint64_t)l->request_entries * sizeof(struct fl_shm_entry) },
		{ l->completions_offset,
		  (uint64_t)l->completion_entries * sizeof(struct fl_shm_entry) },
		{ l->request_slots_offset,
		  (uint64_t)l->request_entries * sizeof(struct fl_shm_point_req) },
		{ l->completion_slots_offset,
		  (uint64_t)l->completion_entries * sizeof(struct fl_shm_point_done) },
	};
	size_t n = sizeof(p) / sizeof(p[0]);

	CHECK(l->size <= FL_PROTO_MAX_REGION);
	CHECK(l->capacity > 0);
	CHECK(l->request_entries && !(l->request_entries & (l->request_entries - 1)));
	CHECK(l->completion_entries && !(l->completion_entries & (l->completion_entries - 1)));
	for (size_t i = 0; i < n; i++) {
		CHECK(p[i].size > 0);
		CHECK(p[i].start % FL_SHM_ALIGN == 0);
		CHECK(p[i].start + p[i].size <= l->size);
		for (size_t j = i + 1; j < n; j++)
			CHECK(p[i].start + p[i].size <= p[j].start ||
			      p[j].start + p[j].size <= p[i].start);
	}
}

static void fuzz_region(const uint8_t *d, uint8_t sel)
{
	struct fl_shm_header copy;	/* aligned, unlike d */
	struct fl_shm_layout l;
	struct fl_diag diag;
	uint64_t real_size;
	uint32_t pid;
	int ret;

	memcpy(&copy, d, sizeof(copy));
	real_size = sel & 0x10 ? le(d + 48, 8) : copy.size;
	pid = sel & 0x20 ? (uint32_t)le(d + 56, 4) : copy.pid;
	memset(&diag, 0xa5, sizeof(diag));
	memset(&l, 0x5a, sizeof(l));
	ret = fl_shm_check(&copy, real_size, pid, &l, &diag);
	if (ret) {
		CHECK(ret == -EBADMSG);
		check_diag(&diag, ret, "shared region: ");
		return;
	}
	CHECK(copy.magic == FL_SHM_MAGIC && copy.version == FL_SHM_VERSION);
	CHECK(copy.header_size == FL_SHM_HEADER_SIZE && copy.pid == pid);
	CHECK(l.size == real_size && l.size == copy.size);
	CHECK(l.capacity == copy.capacity);
	CHECK(l.sites_offset == copy.sites_offset);
	CHECK(l.counters_offset == copy.counters_offset);
	CHECK(l.requests_offset == copy.requests_offset);
	CHECK(l.request_entries == copy.request_entries);
	CHECK(l.completions_offset == copy.completions_offset);
	CHECK(l.completion_entries == copy.completion_entries);
	CHECK(l.request_slots_offset == copy.request_slots_offset);
	CHECK(l.completion_slots_offset == copy.completion_slots_offset);
	check_layout(&l);
}

/* The consumer on a hostile producer's head. */
static void fuzz_ring(const uint8_t *d)
{
	struct fl_shm_entry ring[8], e;
	_Atomic uint32_t head = (uint32_t)le(d + 64, 4);
	_Atomic uint32_t tail = (uint32_t)le(d + 68, 4);
	uint32_t h = head, t = tail;
	uint32_t n = 1u << (d[72] % 4);		/* 1 to 8 entries */
	int ret;

	memcpy(ring, d + 96, sizeof(ring[0]) * 4);
	memcpy(ring + 4, d + 96, sizeof(ring[0]) * 4);
	ret = fl_ring_pop(&head, &tail, ring, n, &e);
	CHECK(head == h);
	if (h == t) {
		CHECK(ret == 0 && tail == t);
	} else if (h - t > n) {
		CHECK(ret == -EBADMSG && tail == t);
	} else {
		CHECK(ret == 1 && tail == t + 1);
		CHECK(memcmp(&e, &ring[t & (n - 1)], sizeof(e)) == 0);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t sel;

	if (size < 1)
		return 0;
	sel = data[0];
	data++;
	size--;
	fuzz_decode(data, size, (sel & 0x0f) % 5);
	if (size >= FL_SHM_HEADER_SIZE) {
		fuzz_region(data, sel);
		fuzz_ring(data);
	}
	return 0;
}
