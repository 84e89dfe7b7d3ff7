// SPDX-License-Identifier: MIT
/*
 * The protocol (docs/protocol.md, lib/proto): every message type decodes
 * with its fields, every validation rule rejects with its errno and a
 * diagnostic naming the problem, truncated messages are rejected without
 * reading past their end (each copied into a buffer of exactly its size, so
 * SAN=1 catches a stray read), the shared region's layout and header check,
 * and the rings.  The bodies' rules are a table (body_cases: a message, its
 * fds, what the decoder says) run by one test, body_rule.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "proto/proto.h"
#include "suites.h"

#define SEQ 0x1234u

/* A message under construction, aligned like a received datagram. */
struct buf {
	union {
		unsigned char b[FL_PROTO_MAX_MESSAGE + 64];
		uint64_t align;
	};
	size_t len;
};

static struct buf *buf_new(void)
{
	struct buf *b = calloc(1, sizeof(*b));

	ck_assert_ptr_nonnull(b);
	return b;
}

static void put(struct buf *b, const void *p, size_t n)
{
	ck_assert_uint_le(b->len + n, sizeof(b->b));
	memcpy(b->b + b->len, p, n);
	b->len += n;
}

/* Writes the header with the final length. */
static void finish(struct buf *b, enum fl_msg_type type)
{
	ck_assert_uint_eq(fl_proto_header(b->b, type, b->len, SEQ), b->len);
}

/* Sets the header's length field (offset 8). */
static void set_length(void *msg, uint32_t length)
{
	memcpy((unsigned char *)msg + 8, &length, sizeof(length));
}

/*
 * Decodes the first len bytes of msg from a heap copy of exactly len bytes,
 * so that ASan reports any read past the end.  The copy is freed: *m's
 * pointers are not for the caller.
 */
static int decode_copy(const void *msg, size_t len, size_t nfds, struct fl_msg *m,
		       struct fl_diag *d)
{
	void *copy = malloc(len ? len : 1);
	int ret;

	ck_assert_ptr_nonnull(copy);
	memcpy(copy, msg, len);
	memset(d, 0, sizeof(*d));
	ret = fl_proto_decode(copy, len, nfds, m, d);
	free(copy);
	return ret;
}

/* where: the check's place in failure messages ("line 42", a case's name). */
static void expect_reject_at(const void *msg, size_t len, size_t nfds, int err,
			     const char *what, const char *where)
{
	struct fl_msg m;
	struct fl_diag d;
	int ret = decode_copy(msg, len, nfds, &m, &d);

	ck_assert_msg(ret == err, "%s: returned %d, want %d (%s)", where, ret, err,
		      d.msg);
	ck_assert_msg(d.err == err, "%s: diag.err %d", where, d.err);
	ck_assert_msg(strstr(d.msg, what) != NULL, "%s: diag \"%s\" lacks \"%s\"",
		      where, d.msg, what);
}

#define LINE_STR_(n) #n
#define LINE_STR(n) LINE_STR_(n)
#define HERE "line " LINE_STR(__LINE__)

#define expect_reject(msg, len, nfds, err, what) \
	expect_reject_at(msg, len, nfds, err, what, HERE)

static void expect_reject_buf_at(const struct buf *b, size_t nfds, int err,
				 const char *what, const char *where)
{
	expect_reject_at(b->b, b->len, nfds, err, what, where);
}

#define expect_reject_buf(b, nfds, err, what) \
	expect_reject_buf_at(b, nfds, err, what, HERE)

static void expect_ok(const struct buf *b, size_t nfds, struct fl_msg *m)
{
	struct fl_diag d = { 0 };
	int ret = fl_proto_decode(b->b, b->len, nfds, m, &d);

	ck_assert_msg(ret == 0, "returned %d: %s", ret, d.msg);
	ck_assert_uint_eq(m->seq, SEQ);
	ck_assert_uint_eq(m->nfds, nfds);
}

/* ------------------------------------------------------------------------
 * Well-formed messages of every type
 */

static struct fl_msg_hello hello_fields(void)
{
	return (struct fl_msg_hello){
		.pid = 4242,
		.region_size = 1u << 20,
		.comm = "worker",
	};
}

static struct buf *hello(const struct fl_msg_hello *f)
{
	struct buf *b = buf_new();

	put(b, f, sizeof(*f));
	finish(b, FL_MSG_HELLO);
	return b;
}

static const char module_name[] = "/usr/lib/libjit.so";

static struct fl_msg_module_add module_add_fields(void)
{
	return (struct fl_msg_module_add){
		.module = 7,
		.code_start = 0x7f0000001000,
		.code_size = 0x2000,
		.first_counter = 16,
		.num_sites = 5,
		.faultmap_size = 92,
		.stackmap_size = 400,
		.name_len = sizeof(module_name) - 1,
		.sm_functions = 2,
	};
}

static struct buf *module_add(const struct fl_msg_module_add *f, const char *name,
			      size_t name_len)
{
	struct buf *b = buf_new();

	put(b, f, sizeof(*f));
	put(b, name, name_len);
	finish(b, FL_MSG_MODULE_ADD);
	return b;
}

static struct buf *module_add_default(void)
{
	struct fl_msg_module_add f = module_add_fields();

	return module_add(&f, module_name, f.name_len);
}

static struct buf *module_remove(uint32_t module, uint32_t reserved)
{
	struct fl_msg_module_remove f = { .module = module, .reserved = reserved };
	struct buf *b = buf_new();

	put(b, &f, sizeof(f));
	finish(b, FL_MSG_MODULE_REMOVE);
	return b;
}

/* SYMBOLS: the fixed part, then entries appended with symbol(). */
static struct buf *symbols_begin(uint32_t module, uint32_t count)
{
	struct fl_msg_symbols f = { .module = module, .count = count };
	struct buf *b = buf_new();

	put(b, &f, sizeof(f));
	return b;
}

static void symbol(struct buf *b, uint32_t site, uint32_t offset, uint16_t len,
		   const char *name)
{
	put(b, &site, sizeof(site));
	put(b, &offset, sizeof(offset));
	put(b, &len, sizeof(len));
	put(b, name, len);
}

static struct buf *symbols_default(void)
{
	struct buf *b = symbols_begin(7, 3);

	symbol(b, 0, 0x14, 4, "main");
	symbol(b, 4, FL_SYMBOL_NO_OFFSET, 11, "parse_input");
	symbol(b, 2, 0, 1, "f");
	finish(b, FL_MSG_SYMBOLS);
	return b;
}

static struct buf *query(uint32_t what, uint32_t pid, uint64_t arg)
{
	struct fl_msg_query f = { .what = what, .pid = pid, .arg = arg };
	struct buf *b = buf_new();

	put(b, &f, sizeof(f));
	finish(b, FL_MSG_QUERY);
	return b;
}

static struct buf *request(uint32_t pid, uint32_t kind, uint64_t arg)
{
	struct fl_msg_request f = { .pid = pid, .kind = kind, .arg = arg };
	struct buf *b = buf_new();

	put(b, &f, sizeof(f));
	finish(b, FL_MSG_REQUEST);
	return b;
}

static struct buf *welcome(uint32_t pid, uint32_t flags)
{
	struct fl_msg_welcome f = { .daemon_pid = pid, .flags = flags };
	struct buf *b = buf_new();

	put(b, &f, sizeof(f));
	finish(b, FL_MSG_WELCOME);
	return b;
}

static struct buf *error_msg(int32_t err, uint32_t len, const char *text, size_t n)
{
	struct fl_msg_error f = { .err = err, .len = len };
	struct buf *b = buf_new();

	put(b, &f, sizeof(f));
	put(b, text, n);
	finish(b, FL_MSG_ERROR);
	return b;
}

static struct buf *reply(uint32_t flags, uint32_t len, const char *text, size_t n)
{
	struct fl_msg_reply f = { .flags = flags, .len = len };
	struct buf *b = buf_new();

	put(b, &f, sizeof(f));
	put(b, text, n);
	finish(b, FL_MSG_REPLY);
	return b;
}

static const char error_text[] = "no process 99 visible to uid 1000";
static const char reply_text[] = "{\"processes\":[]}";

START_TEST(hello_decodes_with_its_fields_and_one_fd)
{
	struct fl_msg_hello f = hello_fields();
	struct buf *b = hello(&f);
	struct fl_msg m;

	expect_ok(b, 1, &m);
	ck_assert_int_eq(m.type, FL_MSG_HELLO);
	ck_assert_uint_eq(m.hello.pid, 4242);
	ck_assert_uint_eq(m.hello.flags, 0);
	ck_assert_uint_eq(m.hello.region_size, 1u << 20);
	ck_assert_str_eq(m.hello.comm, "worker");
	ck_assert_uint_eq(m.hello.h.length, sizeof(f));
	free(b);
}
END_TEST

START_TEST(module_add_decodes_with_its_fields_name_and_one_fd)
{
	struct buf *b = module_add_default();
	struct fl_msg m;

	expect_ok(b, 1, &m);
	ck_assert_int_eq(m.type, FL_MSG_MODULE_ADD);
	ck_assert_uint_eq(m.module_add.module, 7);
	ck_assert_uint_eq(m.module_add.code_start, 0x7f0000001000);
	ck_assert_uint_eq(m.module_add.code_size, 0x2000);
	ck_assert_uint_eq(m.module_add.first_counter, 16);
	ck_assert_uint_eq(m.module_add.num_sites, 5);
	ck_assert_uint_eq(m.module_add.faultmap_size, 92);
	ck_assert_uint_eq(m.module_add.stackmap_size, 400);
	ck_assert_uint_eq(m.module_add.name_len, sizeof(module_name) - 1);
	ck_assert_uint_eq(m.module_add.sm_functions, 2);
	ck_assert_ptr_eq(m.name, (const char *)b->b + sizeof(struct fl_msg_module_add));
	ck_assert_mem_eq(m.name, module_name, sizeof(module_name) - 1);
	free(b);
}
END_TEST

START_TEST(module_add_without_sections_takes_no_fd)
{
	struct fl_msg_module_add f = module_add_fields();
	struct buf *b;
	struct fl_msg m;

	f.faultmap_size = f.stackmap_size = 0;
	f.sm_functions = 0;
	b = module_add(&f, module_name, f.name_len);
	expect_ok(b, 0, &m);
	expect_reject_buf(b, 1, -EPROTO, "file descriptors");
	free(b);
	/* One section alone still needs the fd. */
	f.stackmap_size = 16;
	b = module_add(&f, module_name, f.name_len);
	expect_ok(b, 1, &m);
	expect_reject_buf(b, 0, -EPROTO, "file descriptors");
	free(b);
}
END_TEST

START_TEST(module_remove_decodes)
{
	struct buf *b = module_remove(9, 0);
	struct fl_msg m;

	expect_ok(b, 0, &m);
	ck_assert_int_eq(m.type, FL_MSG_MODULE_REMOVE);
	ck_assert_uint_eq(m.module_remove.module, 9);
	free(b);
}
END_TEST

START_TEST(symbols_decode_and_walk_in_order)
{
	struct buf *b = symbols_default();
	struct fl_symbol s;
	struct fl_msg m;
	size_t pos = 0;

	expect_ok(b, 0, &m);
	ck_assert_int_eq(m.type, FL_MSG_SYMBOLS);
	ck_assert_uint_eq(m.symbols.module, 7);
	ck_assert_uint_eq(m.symbols.count, 3);
	ck_assert_ptr_eq(m.entries, b->b + sizeof(struct fl_msg_symbols));
	ck_assert_uint_eq(m.entries_size, b->len - sizeof(struct fl_msg_symbols));

	ck_assert_int_eq(fl_symbols_next(&m, &pos, &s), 1);
	ck_assert_uint_eq(s.site, 0);
	ck_assert_uint_eq(s.offset, 0x14);
	ck_assert_uint_eq(s.len, 4);
	ck_assert_mem_eq(s.name, "main", 4);
	ck_assert_int_eq(fl_symbols_next(&m, &pos, &s), 1);
	ck_assert_uint_eq(s.site, 4);
	ck_assert_uint_eq(s.offset, FL_SYMBOL_NO_OFFSET);
	ck_assert_uint_eq(s.len, 11);
	ck_assert_mem_eq(s.name, "parse_input", 11);
	ck_assert_int_eq(fl_symbols_next(&m, &pos, &s), 1);
	ck_assert_uint_eq(s.site, 2);
	ck_assert_uint_eq(s.len, 1);
	ck_assert_mem_eq(s.name, "f", 1);
	ck_assert_ptr_eq(s.name + s.len, (const char *)b->b + b->len);
	ck_assert_int_eq(fl_symbols_next(&m, &pos, &s), 0);
	ck_assert_uint_eq(pos, m.entries_size);
	ck_assert_int_eq(fl_symbols_next(&m, &pos, &s), 0);
	free(b);
}
END_TEST

START_TEST(symbols_with_no_entries_walk_to_nothing)
{
	struct buf *b = symbols_begin(7, 0);
	struct fl_symbol s;
	struct fl_msg m;
	size_t pos = 0;

	finish(b, FL_MSG_SYMBOLS);
	expect_ok(b, 0, &m);
	ck_assert_uint_eq(m.entries_size, 0);
	ck_assert_int_eq(fl_symbols_next(&m, &pos, &s), 0);
	free(b);
}
END_TEST

START_TEST(query_decodes_every_kind)
{
	for (uint32_t what = FL_QUERY_STATS; what <= FL_QUERY_STACKMAP_PC; what++) {
		/* STATS's arg has two fields (proto.h); the others' any value. */
		uint64_t arg = what == FL_QUERY_STATS ? FL_QUERY_FAILED_ONLY | FL_QUERY_TOP :
			       UINT64_MAX;
		struct buf *b = query(what, 0, arg);
		struct fl_msg m;

		expect_ok(b, 0, &m);
		ck_assert_int_eq(m.type, FL_MSG_QUERY);
		ck_assert_uint_eq(m.query.what, what);
		ck_assert_uint_eq(m.query.pid, 0);
		ck_assert_uint_eq(m.query.arg, arg);
		free(b);
	}
}
END_TEST

START_TEST(request_decodes_every_kind)
{
	for (uint32_t kind = FL_REQ_PING; kind <= FL_REQ_UNHEAL_AFTER; kind++) {
		struct buf *b;

		/* The point kinds are POINT messages. */
		if (kind >= FL_REQ_PATCHPOINT_WRITE && kind <= FL_REQ_STACKMAP_INVALIDATE)
			continue;
		b = request(4242, kind, 0xabcdef);
		struct fl_msg m;

		expect_ok(b, 0, &m);
		ck_assert_int_eq(m.type, FL_MSG_REQUEST);
		ck_assert_uint_eq(m.request.pid, 4242);
		ck_assert_uint_eq(m.request.kind, kind);
		ck_assert_uint_eq(m.request.arg, 0xabcdef);
		free(b);
	}
}
END_TEST

START_TEST(welcome_decodes)
{
	struct buf *b = welcome(1, 0);
	struct fl_msg m;

	expect_ok(b, 0, &m);
	ck_assert_int_eq(m.type, FL_MSG_WELCOME);
	ck_assert_uint_eq(m.welcome.daemon_pid, 1);
	free(b);
}
END_TEST

START_TEST(error_decodes_with_its_text)
{
	size_t n = sizeof(error_text) - 1;
	struct buf *b = error_msg(-ESRCH, n, error_text, n);
	struct fl_msg m;

	expect_ok(b, 0, &m);
	ck_assert_int_eq(m.type, FL_MSG_ERROR);
	ck_assert_int_eq(m.error.err, -ESRCH);
	ck_assert_uint_eq(m.error.len, n);
	ck_assert_ptr_eq(m.text, (const char *)b->b + sizeof(struct fl_msg_error));
	ck_assert_mem_eq(m.text, error_text, n);
	free(b);
}
END_TEST

START_TEST(reply_decodes_with_its_text_and_more_flag)
{
	size_t n = sizeof(reply_text) - 1;

	for (uint32_t flags = 0; flags <= FL_REPLY_MORE; flags++) {
		struct buf *b = reply(flags, n, reply_text, n);
		struct fl_msg m;

		expect_ok(b, 0, &m);
		ck_assert_int_eq(m.type, FL_MSG_REPLY);
		ck_assert_uint_eq(m.reply.flags, flags);
		ck_assert_uint_eq(m.reply.len, n);
		ck_assert_mem_eq(m.text, reply_text, n);
		free(b);
	}
	/* Empty text. */
	{
		struct buf *b = reply(0, 0, "", 0);
		struct fl_msg m;

		expect_ok(b, 0, &m);
		ck_assert_uint_eq(m.reply.len, 0);
		free(b);
	}
}
END_TEST

START_TEST(largest_message_is_accepted)
{
	size_t n = FL_PROTO_MAX_MESSAGE - sizeof(struct fl_msg_reply);
	char *text = malloc(n);
	struct buf *b;
	struct fl_msg m;

	ck_assert_ptr_nonnull(text);
	memset(text, 'x', n);
	b = reply(0, n, text, n);
	ck_assert_uint_eq(b->len, FL_PROTO_MAX_MESSAGE);
	expect_ok(b, 0, &m);
	free(b);
	free(text);
}
END_TEST

/* ------------------------------------------------------------------------
 * The header
 */

/* One well-formed message of every type, with the fds it takes. */
static size_t all_messages(struct buf *out[9], size_t nfds[9])
{
	struct fl_msg_hello h = hello_fields();
	size_t en = sizeof(error_text) - 1, rn = sizeof(reply_text) - 1;
	size_t i = 0;

	nfds[i] = 1, out[i++] = hello(&h);
	nfds[i] = 1, out[i++] = module_add_default();
	nfds[i] = 0, out[i++] = module_remove(3, 0);
	nfds[i] = 0, out[i++] = symbols_default();
	nfds[i] = 0, out[i++] = query(FL_QUERY_SITES, 77, 0);
	nfds[i] = 0, out[i++] = request(77, FL_REQ_PING, 5);
	nfds[i] = 0, out[i++] = welcome(1, 0);
	nfds[i] = 0, out[i++] = error_msg(-EPERM, en, error_text, en);
	nfds[i] = 0, out[i++] = reply(FL_REPLY_MORE, rn, reply_text, rn);
	return i;
}

static void free_all(struct buf *b[], size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(b[i]);
}

START_TEST(every_truncation_is_rejected_without_reading_past_the_end)
{
	struct buf *b[9];
	size_t nfds[9], n = all_messages(b, nfds);

	for (size_t i = 0; i < n; i++) {
		for (size_t len = 0; len < b[i]->len; len++) {
			unsigned char copy[FL_PROTO_MAX_MESSAGE];
			struct fl_msg m;
			struct fl_diag d;
			int ret;

			/* As sent: the length field says more than arrived. */
			ret = decode_copy(b[i]->b, len, nfds[i], &m, &d);
			ck_assert_msg(ret == -EBADMSG, "type %zu len %zu: %d", i, len, ret);
			ck_assert_int_eq(d.err, -EBADMSG);
			ck_assert_msg(d.msg[0] != '\0', "type %zu len %zu: no diag", i, len);

			/* The length field agrees: the type's own size check must catch it. */
			memcpy(copy, b[i]->b, len);
			if (len >= 12)
				set_length(copy, (uint32_t)len);
			ret = decode_copy(copy, len, nfds[i], &m, &d);
			ck_assert_msg(ret == -EBADMSG, "type %zu len %zu (length patched): %d",
				      i, len, ret);
			ck_assert_int_eq(d.err, -EBADMSG);
			ck_assert_msg(d.msg[0] != '\0', "type %zu len %zu: no diag", i, len);
		}
		/* The whole message, in a buffer of exactly its size, is accepted. */
		{
			struct fl_msg m;
			struct fl_diag d;

			ck_assert_int_eq(decode_copy(b[i]->b, b[i]->len, nfds[i], &m, &d), 0);
		}
	}
	free_all(b, n);
}
END_TEST

START_TEST(message_shorter_than_a_header_names_its_size)
{
	struct buf *b = welcome(1, 0);

	expect_reject(b->b, 0, 0, -EBADMSG, "0 bytes: shorter than a header");
	expect_reject(b->b, 15, 0, -EBADMSG, "15 bytes: shorter than a header");
	free(b);
}
END_TEST

START_TEST(bad_magic_is_rejected)
{
	struct buf *b[9];
	size_t nfds[9], n = all_messages(b, nfds);

	for (size_t i = 0; i < n; i++) {
		b[i]->b[0] ^= 0x20;	/* "fLLP" */
		expect_reject_buf(b[i], nfds[i], -EBADMSG, "bad magic");
	}
	free_all(b, n);
}
END_TEST

START_TEST(other_version_is_not_supported)
{
	struct buf *b[9];
	size_t nfds[9], n = all_messages(b, nfds);
	uint16_t versions[] = { 0, 2, 0xffff };

	for (size_t i = 0; i < n; i++) {
		for (size_t v = 0; v < sizeof(versions) / sizeof(versions[0]); v++) {
			memcpy(b[i]->b + 4, &versions[v], 2);
			expect_reject_buf(b[i], nfds[i], -EPROTONOSUPPORT,
					  "unsupported version");
		}
	}
	free_all(b, n);
}
END_TEST

START_TEST(length_field_must_match_the_datagram)
{
	struct buf *b[9];
	size_t nfds[9], n = all_messages(b, nfds);

	for (size_t i = 0; i < n; i++) {
		uint32_t len = (uint32_t)b[i]->len;
		uint32_t wrong[] = { len - 1, len + 1, 0, 16, UINT32_MAX };

		for (size_t w = 0; w < sizeof(wrong) / sizeof(wrong[0]); w++) {
			set_length(b[i]->b, wrong[w]);
			expect_reject_buf(b[i], nfds[i], -EBADMSG,
					  "length field does not match");
		}
	}
	free_all(b, n);
}
END_TEST

START_TEST(oversize_message_is_rejected)
{
	size_t n = FL_PROTO_MAX_MESSAGE + 1 - sizeof(struct fl_msg_reply);
	char *text = malloc(n);
	struct buf *b;

	ck_assert_ptr_nonnull(text);
	memset(text, 'x', n);
	b = reply(0, n, text, n);
	ck_assert_uint_eq(b->len, FL_PROTO_MAX_MESSAGE + 1);
	expect_reject_buf(b, 0, -EMSGSIZE, "too large");
	/* Whatever the length field says. */
	set_length(b->b, FL_PROTO_MAX_MESSAGE);
	expect_reject_buf(b, 0, -EMSGSIZE, "too large");
	free(b);
	free(text);
}
END_TEST

START_TEST(unknown_type_is_a_protocol_error)
{
	uint16_t types[] = { 0, 9, 15, 19, 63, 67, 0x8000, 0xffff };

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		struct buf *b = welcome(1, 0);

		fl_proto_header(b->b, (enum fl_msg_type)types[i], b->len, SEQ);
		expect_reject_buf(b, 0, -EPROTO, "unknown message type");
		expect_reject_buf(b, 1, -EPROTO, "unknown message type");
		free(b);
	}
}
END_TEST

START_TEST(wrong_fd_count_is_a_protocol_error)
{
	struct buf *b[9];
	size_t nfds[9], n = all_messages(b, nfds);

	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; k <= FL_PROTO_MAX_FDS; k++) {
			if (k == nfds[i])
				continue;
			expect_reject_buf(b[i], k, -EPROTO, "wrong number of file descriptors");
		}
	}
	free_all(b, n);
}
END_TEST

START_TEST(diag_names_type_and_seq)
{
	struct buf *b = welcome(1, 5);
	struct fl_msg m;
	struct fl_diag d;

	ck_assert_int_eq(decode_copy(b->b, b->len, 0, &m, &d), -EBADMSG);
	ck_assert_str_eq(d.msg, "message type 64 seq 4660: WELCOME unknown flags (5)");
	/* A NULL diag is allowed. */
	ck_assert_int_eq(fl_proto_decode(b->b, b->len, 0, &m, NULL), -EBADMSG);
	ck_assert_int_eq(fl_proto_decode(b->b, 3, 0, &m, NULL), -EBADMSG);
	free(b);
}
END_TEST

/* ------------------------------------------------------------------------
 * Fixed-size messages: every size but their own is rejected
 */

START_TEST(fixed_size_messages_reject_extra_bytes)
{
	struct buf *b[9];
	size_t nfds[9], n = all_messages(b, nfds);
	static const char *const what[9] = {
		[0] = "HELLO of the wrong size",
		[2] = "MODULE_REMOVE of the wrong size",
		[4] = "QUERY of the wrong size",
		[5] = "REQUEST of the wrong size",
		[6] = "WELCOME of the wrong size",
	};

	for (size_t i = 0; i < n; i++) {
		if (!what[i])
			continue;
		b[i]->b[b[i]->len++] = 0;
		finish(b[i], ((struct fl_msg_header *)b[i]->b)->type);
		expect_reject_buf(b[i], nfds[i], -EBADMSG, what[i]);
	}
	free_all(b, n);
}
END_TEST

/* ------------------------------------------------------------------------
 * The bodies: every validation rule of every type, a table of cases
 *
 * A case is a well-formed message of its type (the defaults below) with
 * fields of its fixed part set and the bytes after that part replaced;
 * decoded with its fds, it is rejected with err and a diagnostic naming
 * what, or (err 0) accepted, with its type and, when the case says so,
 * more of its fields checked.
 */

/*
 * A field of the fixed part (header included) set: up to 8 bytes (little-
 * endian), a longer one filled with a byte.
 */
struct field_set {
	size_t off, size;
	uint64_t val;
};

#define SET(type, field, v)							\
	{ offsetof(struct fl_msg_##type, field),				\
	  sizeof(((struct fl_msg_##type *)0)->field), (uint64_t)(v) }
/* Bytes at .. at + n of a field. */
#define SET_AT(type, field, at, n, v)						\
	{ offsetof(struct fl_msg_##type, field) + (at), (n), (uint64_t)(v) }

struct body_case {
	const char *name;
	enum fl_msg_type type;
	size_t nfds;
	int err;		/* 0: accepted */
	const char *what;	/* rejected: what the diagnostic names */
	struct field_set set[3];
	/*
	 * The bytes after the fixed part: tail_len of tail, or fill_len of
	 * fill (tail NULL and fill_len 0: the type's own).
	 */
	const char *tail;
	size_t tail_len;
	char fill;
	size_t fill_len;
	/* Accepted: more of its fields. */
	void (*accepted)(const struct body_case *c, const struct fl_msg *m);
};

#define BAD(t, n, e, w) .type = FL_MSG_##t, .nfds = (n), .err = (e), .what = (w)
#define GOOD(t, n) .type = FL_MSG_##t, .nfds = (n)
#define TAIL(s) .tail = (s), .tail_len = sizeof(s) - 1
/* A SYMBOLS entry: site and len as one-byte escapes ("\1"), offset 0, the name. */
#define SYM(site, len, name) site "\0\0\0" "\0\0\0\0" len "\0" name

static void hello_first_flag(const struct body_case *c, const struct fl_msg *m)
{
	(void)c;
	ck_assert_uint_eq(m->hello.flags, FL_HELLO_FIRST);
}

static void hello_every_flag(const struct body_case *c, const struct fl_msg *m)
{
	(void)c;
	ck_assert_uint_eq(m->hello.flags, FL_HELLO_FIRST | FL_HELLO_SYNC | FL_HELLO_ALLOW_PATCH |
			  FL_HELLO_DONE | FL_HELLO_DUMP | FL_HELLO_DUMPABLE);
}

static void dumpable_1(const struct body_case *c, const struct fl_msg *m)
{
	(void)c;
	ck_assert_uint_eq(m->dumpable.dumpable, 1);
}

static void hello_region_size_as_set(const struct body_case *c, const struct fl_msg *m)
{
	ck_assert_uint_eq(m->hello.region_size, c->set[0].val);
}

static void hello_comm_fills_the_field(const struct body_case *c, const struct fl_msg *m)
{
	(void)c;
	ck_assert_uint_eq(strlen(m->hello.comm), FL_PROTO_COMM - 1);
}

static void module_add_sm_functions_3(const struct body_case *c, const struct fl_msg *m)
{
	(void)c;
	ck_assert_uint_eq(m->module_add.sm_functions, 3);
}

static void welcome_bpf_flag(const struct body_case *c, const struct fl_msg *m)
{
	(void)c;
	ck_assert_uint_eq(m->welcome.flags, FL_WELCOME_BPF);
}

#define ENTRIES_MAIN SYM("\0", "\4", "main")
#define ENTRIES_MAIN_EXIT SYM("\0", "\4", "main") SYM("\1", "\4", "exit")
#define SECTIONS_MAX FL_PROTO_MAX_REGION

static const struct body_case body_cases[] = {
	/* HELLO */
	{ "HELLO pid 0", BAD(HELLO, 1, -EBADMSG, "HELLO pid 0"), .set = { SET(hello, pid, 0) } },
	{ "HELLO unknown flags", BAD(HELLO, 1, -EBADMSG, "unknown flags set"),
	  .set = { SET(hello, flags, 0x80000000u | FL_HELLO_FIRST) } },
	{ "HELLO takes FL_HELLO_FIRST", GOOD(HELLO, 1),
	  .set = { SET(hello, flags, FL_HELLO_FIRST) }, .accepted = hello_first_flag },
	{ "HELLO takes every flag an agent sets", GOOD(HELLO, 1),
	  .set = { SET(hello, flags, FL_HELLO_FIRST | FL_HELLO_SYNC | FL_HELLO_ALLOW_PATCH |
			      FL_HELLO_DONE | FL_HELLO_DUMP | FL_HELLO_DUMPABLE) },
	  .accepted = hello_every_flag },
	{ "HELLO flag past FL_HELLO_DUMPABLE", BAD(HELLO, 1, -EBADMSG, "unknown flags set"),
	  .set = { SET(hello, flags, FL_HELLO_DUMPABLE << 1) } },
	{ "HELLO DUMPABLE without DUMP", BAD(HELLO, 1, -EBADMSG, "DUMPABLE without DUMP"),
	  .set = { SET(hello, flags, FL_HELLO_DUMPABLE) } },
	{ "HELLO region size 0", BAD(HELLO, 1, -EBADMSG, "HELLO region size out of range"),
	  .set = { SET(hello, region_size, 0) } },
	{ "HELLO region size below a header",
	  BAD(HELLO, 1, -EBADMSG, "HELLO region size out of range"),
	  .set = { SET(hello, region_size, FL_SHM_HEADER_SIZE - 1) } },
	{ "HELLO region size over the maximum",
	  BAD(HELLO, 1, -EBADMSG, "HELLO region size out of range"),
	  .set = { SET(hello, region_size, FL_PROTO_MAX_REGION + 1) } },
	{ "HELLO region size UINT64_MAX", BAD(HELLO, 1, -EBADMSG, "HELLO region size out of range"),
	  .set = { SET(hello, region_size, UINT64_MAX) } },
	{ "HELLO region size of a header", GOOD(HELLO, 1),
	  .set = { SET(hello, region_size, FL_SHM_HEADER_SIZE) },
	  .accepted = hello_region_size_as_set },
	{ "HELLO region size the maximum", GOOD(HELLO, 1),
	  .set = { SET(hello, region_size, FL_PROTO_MAX_REGION) },
	  .accepted = hello_region_size_as_set },
	{ "HELLO comm not terminated", BAD(HELLO, 1, -EBADMSG, "HELLO comm not terminated"),
	  .set = { SET(hello, comm, 'a') } },
	/* The NUL in the last byte is enough. */
	{ "HELLO comm terminated in its last byte", GOOD(HELLO, 1),
	  .set = { SET(hello, comm, 'a'), SET_AT(hello, comm, FL_PROTO_COMM - 1, 1, 0) },
	  .accepted = hello_comm_fills_the_field },

	/* MODULE_ADD */
	{ "MODULE_ADD flags 2", BAD(MODULE_ADD, 1, -EBADMSG,
				     "MODULE_ADD unknown flags, or a base without its flag (2)"),
	  .set = { SET(module_add, flags, 2) } },
	{ "MODULE_ADD flags bit 31", BAD(MODULE_ADD, 1, -EBADMSG,
					 "MODULE_ADD unknown flags, or a base without its flag"),
	  .set = { SET(module_add, flags, 0x80000000u) } },
	{ "MODULE_ADD a base without its flag", BAD(MODULE_ADD, 1, -EBADMSG,
						    "MODULE_ADD unknown flags, or a base without its flag (0)"),
	  .set = { SET(module_add, base, 0x1000) } },
	{ "MODULE_ADD base a byte above the code", BAD(MODULE_ADD, 1, -EBADMSG,
						       "MODULE_ADD base above the code"),
	  .set = { SET(module_add, flags, FL_MODULE_BASE),
		   SET(module_add, base, 0x7f0000001001) } },
	{ "MODULE_ADD base at the code's start", GOOD(MODULE_ADD, 1),
	  .set = { SET(module_add, flags, FL_MODULE_BASE),
		   SET(module_add, base, 0x7f0000001000) } },
	{ "MODULE_ADD base 0 (an executable at its link-time addresses)", GOOD(MODULE_ADD, 1),
	  .set = { SET(module_add, flags, FL_MODULE_BASE) } },
	{ "MODULE_ADD function addresses with a stack map", GOOD(MODULE_ADD, 1),
	  .set = { SET(module_add, sm_functions, 3) }, .accepted = module_add_sm_functions_3 },
	{ "MODULE_ADD function addresses without a stack map",
	  BAD(MODULE_ADD, 1, -EBADMSG, "MODULE_ADD function addresses without a stack map"),
	  .set = { SET(module_add, sm_functions, 3), SET(module_add, stackmap_size, 0) } },
	{ "MODULE_ADD function addresses without sections",
	  BAD(MODULE_ADD, 0, -EBADMSG, "MODULE_ADD function addresses without a stack map"),
	  .set = { SET(module_add, sm_functions, 3), SET(module_add, stackmap_size, 0),
		   SET(module_add, faultmap_size, 0) } },
	/* name_len one short, one long, and UINT32_MAX, of the same bytes. */
	{ "MODULE_ADD name_len one short", BAD(MODULE_ADD, 1, -EBADMSG, "MODULE_ADD name length"),
	  .set = { SET(module_add, name_len, sizeof(module_name) - 2) } },
	{ "MODULE_ADD name_len one long", BAD(MODULE_ADD, 1, -EBADMSG, "MODULE_ADD name length"),
	  .set = { SET(module_add, name_len, sizeof(module_name)) } },
	{ "MODULE_ADD name_len UINT32_MAX", BAD(MODULE_ADD, 1, -EBADMSG, "MODULE_ADD name length"),
	  .set = { SET(module_add, name_len, UINT32_MAX) } },
	{ "MODULE_ADD name longer than the maximum",
	  BAD(MODULE_ADD, 1, -EBADMSG, "MODULE_ADD name length"),
	  .set = { SET(module_add, name_len, FL_PROTO_MAX_NAME + 1) },
	  .fill = 'n', .fill_len = FL_PROTO_MAX_NAME + 1 },
	{ "MODULE_ADD name of the maximum length", GOOD(MODULE_ADD, 1),
	  .set = { SET(module_add, name_len, FL_PROTO_MAX_NAME) },
	  .fill = 'n', .fill_len = FL_PROTO_MAX_NAME },
	{ "MODULE_ADD name with a NUL",
	  BAD(MODULE_ADD, 1, -EBADMSG, "MODULE_ADD name with a NUL byte"),
	  TAIL("/usr\0lib/libjit.so") },
	/* Nor a terminating NUL counted in name_len. */
	{ "MODULE_ADD name with its terminating NUL",
	  BAD(MODULE_ADD, 1, -EBADMSG, "MODULE_ADD name with a NUL byte"),
	  .set = { SET(module_add, name_len, sizeof(module_name)) },
	  .tail = module_name, .tail_len = sizeof(module_name) },
	{ "MODULE_ADD module 0", BAD(MODULE_ADD, 1, -EBADMSG, "MODULE_ADD module id 0"),
	  .set = { SET(module_add, module, 0) } },
	{ "MODULE_ADD code size 0", BAD(MODULE_ADD, 1, -EBADMSG, "MODULE_ADD code range"),
	  .set = { SET(module_add, code_size, 0) } },
	{ "MODULE_ADD code range wraps", BAD(MODULE_ADD, 1, -EBADMSG, "MODULE_ADD code range"),
	  .set = { SET(module_add, code_start, UINT64_MAX - 0xff),
		   SET(module_add, code_size, 0x101) } },
	{ "MODULE_ADD code size UINT64_MAX", BAD(MODULE_ADD, 1, -EBADMSG, "MODULE_ADD code range"),
	  .set = { SET(module_add, code_start, UINT64_MAX - 0xff),
		   SET(module_add, code_size, UINT64_MAX) } },
	/* Up to the last byte but one of the address space (an end of 2^64 wraps). */
	{ "MODULE_ADD code range to the last byte but one", GOOD(MODULE_ADD, 1),
	  .set = { SET(module_add, code_start, UINT64_MAX - 0xff),
		   SET(module_add, code_size, 0xff) } },
	{ "MODULE_ADD counter range wraps", BAD(MODULE_ADD, 1, -EBADMSG, "MODULE_ADD counter range"),
	  .set = { SET(module_add, first_counter, 0xfffffff0u),
		   SET(module_add, num_sites, 0x10) } },
	{ "MODULE_ADD num_sites UINT32_MAX",
	  BAD(MODULE_ADD, 1, -EBADMSG, "MODULE_ADD counter range"),
	  .set = { SET(module_add, first_counter, 1), SET(module_add, num_sites, UINT32_MAX) } },
	{ "MODULE_ADD counter range to the last", GOOD(MODULE_ADD, 1),
	  .set = { SET(module_add, first_counter, 0xfffffff0u),
		   SET(module_add, num_sites, 0xf) } },
	{ "MODULE_ADD sections UINT32_MAX",
	  BAD(MODULE_ADD, 1, -EBADMSG, "MODULE_ADD sections too large"),
	  .set = { SET(module_add, sm_functions, 0), SET(module_add, faultmap_size, UINT32_MAX),
		   SET(module_add, stackmap_size, UINT32_MAX) } },
	{ "MODULE_ADD sections a byte over a region",
	  BAD(MODULE_ADD, 1, -EBADMSG, "MODULE_ADD sections too large"),
	  .set = { SET(module_add, sm_functions, 0),
		   SET(module_add, faultmap_size, SECTIONS_MAX / 2),
		   SET(module_add, stackmap_size, SECTIONS_MAX / 2 + 1) } },
	{ "MODULE_ADD sections of a region", GOOD(MODULE_ADD, 1),
	  .set = { SET(module_add, sm_functions, 0),
		   SET(module_add, faultmap_size, SECTIONS_MAX / 2),
		   SET(module_add, stackmap_size, SECTIONS_MAX / 2) } },
	/* The function addresses after the sections count too. */
	{ "MODULE_ADD sections and function addresses of a region", GOOD(MODULE_ADD, 1),
	  .set = { SET(module_add, sm_functions, 8),
		   SET(module_add, faultmap_size, SECTIONS_MAX / 2),
		   SET(module_add, stackmap_size, SECTIONS_MAX / 2 - 64) } },
	{ "MODULE_ADD sections and function addresses over a region",
	  BAD(MODULE_ADD, 1, -EBADMSG, "MODULE_ADD sections too large"),
	  .set = { SET(module_add, sm_functions, 9),
		   SET(module_add, faultmap_size, SECTIONS_MAX / 2),
		   SET(module_add, stackmap_size, SECTIONS_MAX / 2 - 64) } },
	{ "MODULE_ADD function addresses UINT32_MAX",
	  BAD(MODULE_ADD, 1, -EBADMSG, "MODULE_ADD sections too large"),
	  .set = { SET(module_add, sm_functions, UINT32_MAX),
		   SET(module_add, faultmap_size, SECTIONS_MAX / 2),
		   SET(module_add, stackmap_size, SECTIONS_MAX / 2 - 64) } },

	/* MODULE_REMOVE */
	{ "MODULE_REMOVE module 0",
	  BAD(MODULE_REMOVE, 0, -EBADMSG, "MODULE_REMOVE module 0 or reserved set"),
	  .set = { SET(module_remove, module, 0) } },
	{ "MODULE_REMOVE reserved set",
	  BAD(MODULE_REMOVE, 0, -EBADMSG, "MODULE_REMOVE module 0 or reserved set"),
	  .set = { SET(module_remove, module, 3), SET(module_remove, reserved, 1) } },

	/* SYMBOLS */
	{ "SYMBOLS module 0", BAD(SYMBOLS, 0, -EBADMSG, "SYMBOLS module id 0"),
	  .set = { SET(symbols, module, 0), SET(symbols, count, 1) }, TAIL(ENTRIES_MAIN) },
	{ "SYMBOLS count 3 of 2 entries", BAD(SYMBOLS, 0, -EBADMSG, "SYMBOLS entry past the end"),
	  .set = { SET(symbols, count, 3) }, TAIL(ENTRIES_MAIN_EXIT) },
	/* A count no message could hold. */
	{ "SYMBOLS count UINT32_MAX", BAD(SYMBOLS, 0, -EBADMSG, "SYMBOLS entry past the end"),
	  .set = { SET(symbols, count, UINT32_MAX) }, TAIL(ENTRIES_MAIN) },
	{ "SYMBOLS half an entry head", BAD(SYMBOLS, 0, -EBADMSG, "SYMBOLS entry past the end"),
	  .set = { SET(symbols, count, 2) }, TAIL(ENTRIES_MAIN "\x01\x00\x00") },
	{ "SYMBOLS name past the end",
	  BAD(SYMBOLS, 0, -EBADMSG, "SYMBOLS name empty or past the end"),
	  .set = { SET(symbols, count, 2) },
	  TAIL(ENTRIES_MAIN SYM("\1", "\5", "exit")) },
	{ "SYMBOLS name length 0xffff with a few bytes",
	  BAD(SYMBOLS, 0, -EBADMSG, "SYMBOLS name empty or past the end"),
	  .set = { SET(symbols, count, 1) }, TAIL("\0\0\0\0" "\0\0\0\0" "\xff\xff" "main") },
	{ "SYMBOLS empty name", BAD(SYMBOLS, 0, -EBADMSG, "SYMBOLS name empty or past the end"),
	  .set = { SET(symbols, count, 2) }, TAIL(ENTRIES_MAIN SYM("\1", "\0", "")) },
	{ "SYMBOLS name with a NUL", BAD(SYMBOLS, 0, -EBADMSG, "SYMBOLS name with a NUL byte"),
	  .set = { SET(symbols, count, 2) }, TAIL(ENTRIES_MAIN SYM("\1", "\5", "ex\0it")) },
	{ "SYMBOLS an entry after the last",
	  BAD(SYMBOLS, 0, -EBADMSG, "SYMBOLS bytes after the last entry"),
	  .set = { SET(symbols, count, 1) }, TAIL(ENTRIES_MAIN_EXIT) },
	{ "SYMBOLS a byte after the last entry",
	  BAD(SYMBOLS, 0, -EBADMSG, "SYMBOLS bytes after the last entry (1)"),
	  .set = { SET(symbols, count, 1) }, TAIL(ENTRIES_MAIN "\0") },

	/* QUERY, REQUEST */
	{ "QUERY kind 0", BAD(QUERY, 0, -EBADMSG, "QUERY of an unknown kind"),
	  .set = { SET(query, what, 0) } },
	{ "QUERY kind past the last", BAD(QUERY, 0, -EBADMSG, "QUERY of an unknown kind"),
	  .set = { SET(query, what, FL_QUERY_STACKMAP_PC + 1) } },
	{ "QUERY kind UINT32_MAX", BAD(QUERY, 0, -EBADMSG, "QUERY of an unknown kind"),
	  .set = { SET(query, what, UINT32_MAX) } },
	{ "STATS QUERY arg bit 33",
	  BAD(QUERY, 0, -EBADMSG, "STATS QUERY with unknown bits in its arg (2)"),
	  .set = { SET(query, arg, 1ull << 33) } },
	{ "STATS QUERY arg UINT64_MAX",
	  BAD(QUERY, 0, -EBADMSG, "STATS QUERY with unknown bits in its arg"),
	  .set = { SET(query, arg, UINT64_MAX) } },
	{ "REQUEST kind 0", BAD(REQUEST, 0, -EBADMSG, "REQUEST pid 0 or unknown kind"),
	  .set = { SET(request, kind, 0) } },
	{ "REQUEST kind of a POINT", BAD(REQUEST, 0, -EBADMSG, "REQUEST pid 0 or unknown kind"),
	  .set = { SET(request, kind, FL_REQ_HEAL_THRESHOLD + 1) } },
	{ "REQUEST kind past the last", BAD(REQUEST, 0, -EBADMSG, "REQUEST pid 0 or unknown kind"),
	  .set = { SET(request, kind, FL_REQ_UNHEAL_AFTER + 1) } },
	{ "REQUEST kind UINT32_MAX", BAD(REQUEST, 0, -EBADMSG, "REQUEST pid 0 or unknown kind"),
	  .set = { SET(request, kind, UINT32_MAX) } },
	{ "REQUEST pid 0", BAD(REQUEST, 0, -EBADMSG, "REQUEST pid 0 or unknown kind"),
	  .set = { SET(request, pid, 0) } },

	/* WELCOME, SYNC, COMPLETE */
	{ "WELCOME unknown flags", BAD(WELCOME, 0, -EBADMSG, "WELCOME unknown flags"),
	  .set = { SET(welcome, flags, 0x100 | FL_WELCOME_BPF) } },
	{ "WELCOME with FL_WELCOME_BPF", GOOD(WELCOME, 0),
	  .set = { SET(welcome, daemon_pid, 7), SET(welcome, flags, FL_WELCOME_BPF) },
	  .accepted = welcome_bpf_flag },
	{ "SYNC", GOOD(SYNC, 0) },
	/* A SYNC with a body, or with an fd, is refused. */
	{ "SYNC with a body", BAD(SYNC, 0, -EBADMSG, "SYNC of the wrong size"), TAIL("x") },
	{ "SYNC with an fd", BAD(SYNC, 1, -EPROTO, "wrong number of file descriptors") },
	/* COMPLETE likewise: the header alone. */
	{ "COMPLETE", GOOD(COMPLETE, 0) },
	{ "COMPLETE with a body", BAD(COMPLETE, 0, -EBADMSG, "COMPLETE of the wrong size"),
	  TAIL("xxxx") },
	/* DONE likewise. */
	{ "DONE", GOOD(DONE, 0) },
	{ "DONE with a body", BAD(DONE, 0, -EBADMSG, "DONE of the wrong size"), TAIL("x") },
	{ "DONE with an fd", BAD(DONE, 1, -EPROTO, "wrong number of file descriptors") },
	/* DUMPABLE: 0 or 1, reserved 0. */
	{ "DUMPABLE 0", GOOD(DUMPABLE, 0) },
	{ "DUMPABLE 1", GOOD(DUMPABLE, 0), .set = { SET(dumpable, dumpable, 1) },
	  .accepted = dumpable_1 },
	{ "DUMPABLE 2", BAD(DUMPABLE, 0, -EBADMSG, "neither 0 nor 1"),
	  .set = { SET(dumpable, dumpable, 2) } },
	{ "DUMPABLE reserved set", BAD(DUMPABLE, 0, -EBADMSG, "reserved set"),
	  .set = { SET(dumpable, reserved, 1) } },
	{ "DUMPABLE with a body", BAD(DUMPABLE, 0, -EBADMSG, "DUMPABLE of the wrong size"),
	  TAIL("x") },
	{ "DUMPABLE with an fd", BAD(DUMPABLE, 1, -EPROTO, "wrong number of file descriptors") },

	/* ERROR, REPLY */
	{ "ERROR code 0", BAD(ERROR, 0, -EBADMSG, "ERROR with a non-negative code"),
	  .set = { SET(error, err, 0) } },
	{ "ERROR code 1", BAD(ERROR, 0, -EBADMSG, "ERROR with a non-negative code"),
	  .set = { SET(error, err, 1) } },
	{ "ERROR code EPERM", BAD(ERROR, 0, -EBADMSG, "ERROR with a non-negative code"),
	  .set = { SET(error, err, EPERM) } },
	{ "ERROR code INT32_MAX", BAD(ERROR, 0, -EBADMSG, "ERROR with a non-negative code"),
	  .set = { SET(error, err, INT32_MAX) } },
	{ "ERROR len 0", BAD(ERROR, 0, -EBADMSG, "ERROR text length"),
	  .set = { SET(error, len, 0) } },
	{ "ERROR len one short", BAD(ERROR, 0, -EBADMSG, "ERROR text length"),
	  .set = { SET(error, len, sizeof(error_text) - 2) } },
	{ "ERROR len one long", BAD(ERROR, 0, -EBADMSG, "ERROR text length"),
	  .set = { SET(error, len, sizeof(error_text)) } },
	{ "ERROR len UINT32_MAX", BAD(ERROR, 0, -EBADMSG, "ERROR text length"),
	  .set = { SET(error, len, UINT32_MAX) } },
	{ "REPLY len 0", BAD(REPLY, 0, -EBADMSG, "REPLY text length"),
	  .set = { SET(reply, len, 0) }, TAIL(error_text) },
	{ "REPLY len one short", BAD(REPLY, 0, -EBADMSG, "REPLY text length"),
	  .set = { SET(reply, len, sizeof(error_text) - 2) }, TAIL(error_text) },
	{ "REPLY len one long", BAD(REPLY, 0, -EBADMSG, "REPLY text length"),
	  .set = { SET(reply, len, sizeof(error_text)) }, TAIL(error_text) },
	{ "REPLY len UINT32_MAX", BAD(REPLY, 0, -EBADMSG, "REPLY text length"),
	  .set = { SET(reply, len, UINT32_MAX) }, TAIL(error_text) },
	{ "REPLY flags 2", BAD(REPLY, 0, -EBADMSG, "REPLY unknown flags"),
	  .set = { SET(reply, flags, 2) } },
	{ "REPLY flags 3", BAD(REPLY, 0, -EBADMSG, "REPLY unknown flags"),
	  .set = { SET(reply, flags, 3) } },
	{ "REPLY flags bit 31", BAD(REPLY, 0, -EBADMSG, "REPLY unknown flags"),
	  .set = { SET(reply, flags, 0x80000000u) } },
	{ "REPLY flags UINT32_MAX", BAD(REPLY, 0, -EBADMSG, "REPLY unknown flags"),
	  .set = { SET(reply, flags, UINT32_MAX) } },
};

#undef BAD
#undef GOOD
#undef TAIL

/*
 * The case's message: the type's well-formed fixed part, the case's fields
 * set, then its bytes (or the type's own: a module name, three symbols, a
 * text), the header last.
 */
static struct buf *body_build(const struct body_case *c)
{
	struct buf *b = buf_new();
	const char *tail = c->tail;
	size_t tail_len = c->tail_len;

	switch (c->type) {
	case FL_MSG_HELLO: {
		struct fl_msg_hello f = hello_fields();

		put(b, &f, sizeof(f));
		break;
	}
	case FL_MSG_MODULE_ADD: {
		struct fl_msg_module_add f = module_add_fields();

		put(b, &f, sizeof(f));
		if (!tail)
			tail = module_name, tail_len = sizeof(module_name) - 1;
		break;
	}
	case FL_MSG_MODULE_REMOVE: {
		struct fl_msg_module_remove f = { .module = 3 };

		put(b, &f, sizeof(f));
		break;
	}
	case FL_MSG_SYMBOLS: {
		struct buf *d = symbols_default();

		put(b, d->b, sizeof(struct fl_msg_symbols));
		if (!tail)
			tail = (const char *)d->b + sizeof(struct fl_msg_symbols),
			tail_len = d->len - sizeof(struct fl_msg_symbols);
		put(b, tail, tail_len);
		tail = NULL;
		free(d);
		break;
	}
	case FL_MSG_QUERY: {
		struct fl_msg_query f = { .what = FL_QUERY_STATS };

		put(b, &f, sizeof(f));
		break;
	}
	case FL_MSG_REQUEST: {
		struct fl_msg_request f = { .pid = 4242, .kind = FL_REQ_PING };

		put(b, &f, sizeof(f));
		break;
	}
	case FL_MSG_WELCOME: {
		struct fl_msg_welcome f = { .daemon_pid = 1 };

		put(b, &f, sizeof(f));
		break;
	}
	case FL_MSG_SYNC: {
		struct fl_msg_sync f = { 0 };

		put(b, &f, sizeof(f));
		break;
	}
	case FL_MSG_COMPLETE: {
		struct fl_msg_complete f = { 0 };

		put(b, &f, sizeof(f));
		break;
	}
	case FL_MSG_DONE: {
		struct fl_msg_done f = { 0 };

		put(b, &f, sizeof(f));
		break;
	}
	case FL_MSG_DUMPABLE: {
		struct fl_msg_dumpable f = { 0 };

		put(b, &f, sizeof(f));
		break;
	}
	case FL_MSG_ERROR: {
		struct fl_msg_error f = { .err = -EPERM, .len = sizeof(error_text) - 1 };

		put(b, &f, sizeof(f));
		if (!tail)
			tail = error_text, tail_len = sizeof(error_text) - 1;
		break;
	}
	case FL_MSG_REPLY: {
		struct fl_msg_reply f = { .len = sizeof(reply_text) - 1 };

		put(b, &f, sizeof(f));
		if (!tail)
			tail = reply_text, tail_len = sizeof(reply_text) - 1;
		break;
	}
	default:
		ck_abort_msg("case %s: no message of type %d", c->name, c->type);
	}
	for (size_t i = 0; i < sizeof(c->set) / sizeof(c->set[0]) && c->set[i].size; i++) {
		const struct field_set *s = &c->set[i];

		ck_assert_uint_le(s->off + s->size, b->len);
		if (s->size <= sizeof(s->val))
			memcpy(b->b + s->off, &s->val, s->size);	/* little-endian */
		else
			memset(b->b + s->off, (int)(s->val & 0xff), s->size);
	}
	if (c->fill_len) {
		ck_assert_uint_le(b->len + c->fill_len, sizeof(b->b));
		memset(b->b + b->len, c->fill, c->fill_len);
		b->len += c->fill_len;
	} else if (tail) {
		put(b, tail, tail_len);
	}
	finish(b, c->type);
	return b;
}

START_TEST(body_rule)
{
	const struct body_case *c = &body_cases[_i];
	struct buf *b = body_build(c);
	struct fl_msg m;

	if (c->err) {
		expect_reject_at(b->b, b->len, c->nfds, c->err, c->what, c->name);
	} else {
		expect_ok(b, c->nfds, &m);
		ck_assert_msg(m.type == c->type, "case %s: type %d", c->name, m.type);
		if (c->accepted)
			c->accepted(c, &m);
	}
	free(b);
}
END_TEST

/* ------------------------------------------------------------------------
 * The shared region
 */

struct part {
	uint64_t start, size;
};

/* Every part 64-aligned, in order, inside size, without overlap. */
static void check_layout(const struct fl_shm_layout *l, uint32_t capacity,
			 uint32_t req, uint32_t comp)
{
	struct part p[] = {
		{ 0, FL_SHM_HEADER_SIZE },
		{ l->sites_offset, (uint64_t)capacity * sizeof(struct fl_shm_site) },
		{ l->counters_offset, (uint64_t)capacity * sizeof(uint64_t) },
		{ l->heal_offset, (uint64_t)capacity * sizeof(struct fl_shm_heal) },
		/* One byte per block of FL_SHM_DIRTY_SLOTS slots, the last one partial. */
		{ l->dirty_offset, (capacity + FL_SHM_DIRTY_SLOTS - 1) / FL_SHM_DIRTY_SLOTS },
		{ l->requests_offset, (uint64_t)req * sizeof(struct fl_shm_entry) },
		{ l->completions_offset, (uint64_t)comp * sizeof(struct fl_shm_entry) },
		{ l->request_slots_offset, (uint64_t)req * sizeof(struct fl_shm_point_req) },
		{ l->completion_slots_offset,
		  (uint64_t)comp * sizeof(struct fl_shm_point_done) },
	};
	size_t n = sizeof(p) / sizeof(p[0]);

	ck_assert_uint_eq(l->capacity, capacity);
	ck_assert_uint_eq(l->request_entries, req);
	ck_assert_uint_eq(l->completion_entries, comp);
	ck_assert_uint_eq(l->size % FL_SHM_ALIGN, 0);
	ck_assert_uint_le(l->size, FL_PROTO_MAX_REGION);
	for (size_t i = 0; i < n; i++) {
		ck_assert_uint_eq(p[i].start % FL_SHM_ALIGN, 0);
		ck_assert_uint_le(p[i].start + p[i].size, l->size);
		for (size_t j = 0; j < n; j++)
			if (i != j)
				ck_assert_msg(p[i].start + p[i].size <= p[j].start ||
					      p[j].start + p[j].size <= p[i].start,
					      "parts %zu and %zu overlap", i, j);
	}
}

START_TEST(shm_layout_is_aligned_disjoint_and_inside)
{
	static const uint32_t cases[][3] = {
		{ 1, 1, 1 }, { 3, 2, 4 }, { 64, 16, 16 }, { 1000, 64, 8 },
		{ 4095, 4096, 1 }, { 1u << 20, 256, 256 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fl_shm_layout l;

		ck_assert_int_eq(fl_shm_layout(cases[i][0], cases[i][1], cases[i][2], &l), 0);
		check_layout(&l, cases[i][0], cases[i][1], cases[i][2]);
	}
}
END_TEST

START_TEST(shm_layout_rejects_bad_sizes)
{
	static const uint32_t cases[][3] = {
		{ 0, 16, 16 },			/* no sites */
		{ 1u << 23, 16, 16 },		/* region too large */
		{ UINT32_MAX, 16, 16 },
		{ 64, 0, 16 }, { 64, 16, 0 },	/* empty rings */
		{ 64, 3, 16 }, { 64, 16, 24 },	/* not powers of 2 */
		{ 64, 1u << 31, 16 }, { 64, 16, 1u << 31 },	/* rings too large */
		{ 64, UINT32_MAX, 16 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fl_shm_layout l;

		ck_assert_msg(fl_shm_layout(cases[i][0], cases[i][1], cases[i][2], &l) ==
			      -EINVAL, "case %zu accepted", i);
	}
}
END_TEST

/* A region made by fl_shm_init, and a copy of its header. */
struct region {
	struct fl_shm_layout l;
	void *mem;
	struct fl_shm_header copy;
};

#define PID 31337u

static void region_new(struct region *r, uint32_t capacity, uint32_t req, uint32_t comp)
{
	ck_assert_int_eq(fl_shm_layout(capacity, req, comp, &r->l), 0);
	r->mem = aligned_alloc(FL_SHM_ALIGN, r->l.size);
	ck_assert_ptr_nonnull(r->mem);
	memset(r->mem, 0, r->l.size);
	fl_shm_init(r->mem, &r->l, PID);
	memcpy(&r->copy, r->mem, sizeof(r->copy));
}

START_TEST(shm_init_then_check_round_trips)
{
	struct region r;
	struct fl_shm_layout l;
	struct fl_diag d = { 0 };

	region_new(&r, 100, 32, 8);
	ck_assert_uint_eq(r.copy.magic, FL_SHM_MAGIC);
	ck_assert_uint_eq(r.copy.version, FL_SHM_VERSION);
	ck_assert_uint_eq(r.copy.header_size, FL_SHM_HEADER_SIZE);
	ck_assert_uint_eq(r.copy.pid, PID);
	ck_assert_uint_eq(r.copy.size, r.l.size);
	ck_assert_int_eq(fl_shm_check(&r.copy, r.l.size, PID, &l, &d), 0);
	ck_assert_uint_eq(l.size, r.l.size);
	ck_assert_uint_eq(l.capacity, 100);
	ck_assert_uint_eq(l.sites_offset, r.l.sites_offset);
	ck_assert_uint_eq(l.counters_offset, r.l.counters_offset);
	ck_assert_uint_eq(l.requests_offset, r.l.requests_offset);
	ck_assert_uint_eq(l.request_entries, 32);
	ck_assert_uint_eq(l.completions_offset, r.l.completions_offset);
	ck_assert_uint_eq(l.completion_entries, 8);
	free(r.mem);
}
END_TEST

static void expect_shm_reject_at(const struct fl_shm_header *c, uint64_t real_size,
				 uint32_t pid, const char *what, int line)
{
	struct fl_shm_layout l;
	struct fl_diag d = { 0 };
	int ret = fl_shm_check(c, real_size, pid, &l, &d);

	ck_assert_msg(ret == -EBADMSG, "line %d: returned %d", line, ret);
	ck_assert_int_eq(d.err, -EBADMSG);
	ck_assert_msg(strstr(d.msg, what) != NULL, "line %d: diag \"%s\" lacks \"%s\"",
		      line, d.msg, what);
	ck_assert_msg(strncmp(d.msg, "shared region: ", 15) == 0, "line %d: %s", line,
		      d.msg);
}

#define expect_shm_reject(c, real_size, pid, what) \
	expect_shm_reject_at(c, real_size, pid, what, __LINE__)

START_TEST(shm_check_rejects_each_tampered_field)
{
	struct region r;
	struct fl_shm_header c;
	uint64_t size;

	region_new(&r, 64, 16, 16);
	size = r.l.size;

#define TAMPER(stmt, real, what)				\
	do {							\
		c = r.copy;					\
		stmt;						\
		expect_shm_reject(&c, real, PID, what);		\
	} while (0)

	TAMPER(c.magic = FL_PROTO_MAGIC, size, "bad magic");
	TAMPER(c.magic = 0, size, "bad magic");
	TAMPER(c.version = 0, size, "unsupported version or header size");
	TAMPER(c.version = 1, size, "unsupported version or header size");	/* no slots */
	TAMPER(c.version = 2, size, "unsupported version or header size");	/* no dirty summary */
	TAMPER(c.version = FL_SHM_VERSION + 1, size, "unsupported version or header size");
	TAMPER(c.header_size = 128, size, "unsupported version or header size");
	TAMPER(c.header_size = 512, size, "unsupported version or header size");
	TAMPER(c.pid = PID + 1, size, "pid is not the peer's");
	TAMPER(c.pid = 0, size, "pid is not the peer's");
	/* The header's size against the memfd's. */
	TAMPER((void)0, size + 4096, "size is not the memfd's");
	TAMPER((void)0, size - 64, "size is not the memfd's");
	TAMPER((void)0, 0, "size is not the memfd's");
	TAMPER(c.size = size + 64, size, "size is not the memfd's");
	/* Both agree, but not with the layout. */
	TAMPER(c.size = size + 64, size + 64, "offsets do not match the layout");
	TAMPER(c.size = size - 64, size - 64, "offsets do not match the layout");
	TAMPER(c.sites_offset += 64, size, "offsets do not match the layout");
	TAMPER(c.sites_offset = 0, size, "offsets do not match the layout");
	TAMPER(c.counters_offset -= 64, size, "offsets do not match the layout");
	TAMPER(c.counters_offset += 1, size, "offsets do not match the layout");
	TAMPER(c.requests_offset += 64, size, "offsets do not match the layout");
	TAMPER(c.requests_offset = c.counters_offset, size,
	       "offsets do not match the layout");
	TAMPER(c.completions_offset += 64, size, "offsets do not match the layout");
	TAMPER(c.completions_offset = c.requests_offset, size,
	       "offsets do not match the layout");
	TAMPER(c.request_slots_offset += 64, size, "offsets do not match the layout");
	TAMPER(c.request_slots_offset = 0, size, "offsets do not match the layout");
	TAMPER(c.completion_slots_offset -= 64, size, "offsets do not match the layout");
	TAMPER(c.completion_slots_offset = c.request_slots_offset, size,
	       "offsets do not match the layout");
	/* The dirty summary: inside the region, but not where the layout puts it. */
	TAMPER(c.dirty_offset += 64, size, "offsets do not match the layout");
	TAMPER(c.dirty_offset = c.heal_offset, size, "offsets do not match the layout");
	TAMPER(c.dirty_offset = 0, size, "offsets do not match the layout");
	/* Valid capacities and ring sizes that are not this region's. */
	TAMPER(c.capacity = 128, size, "offsets do not match the layout");
	TAMPER(c.request_entries = 32, size, "offsets do not match the layout");
	TAMPER(c.completion_entries = 32, size, "offsets do not match the layout");
	/* Out of range. */
	TAMPER(c.capacity = 0, size, "capacity or ring sizes out of range");
	TAMPER(c.capacity = UINT32_MAX, size, "capacity or ring sizes out of range");
	TAMPER(c.request_entries = 0, size, "capacity or ring sizes out of range");
	TAMPER(c.request_entries = 17, size, "capacity or ring sizes out of range");
	TAMPER(c.completion_entries = 0, size, "capacity or ring sizes out of range");
	TAMPER(c.completion_entries = 1u << 31, size,
	       "capacity or ring sizes out of range");
#undef TAMPER
	free(r.mem);
}
END_TEST

/* ------------------------------------------------------------------------
 * Rings
 */

struct ring {
	_Atomic uint32_t head, tail;
	struct fl_shm_entry e[8];
};

static struct fl_shm_entry entry(uint32_t i)
{
	return (struct fl_shm_entry){ .seq = i, .status = -(int32_t)(i % 100),
				      .value = (uint64_t)i * 0x100000001ull };
}

static void ring_start(struct ring *r, uint32_t at)
{
	memset(r, 0, sizeof(*r));
	atomic_store(&r->head, at);
	atomic_store(&r->tail, at);
}

static int push(struct ring *r, uint32_t i)
{
	struct fl_shm_entry e = entry(i);

	return fl_ring_push(&r->head, &r->tail, r->e, 8, &e);
}

static void expect_pop(struct ring *r, uint32_t i)
{
	struct fl_shm_entry e, want = entry(i);

	memset(&e, 0xa5, sizeof(e));
	ck_assert_int_eq(fl_ring_pop(&r->head, &r->tail, r->e, 8, &e), 1);
	ck_assert_mem_eq(&e, &want, sizeof(e));
}

static void expect_empty(struct ring *r)
{
	struct fl_shm_entry e;

	ck_assert_int_eq(fl_ring_pop(&r->head, &r->tail, r->e, 8, &e), 0);
}

static void fill_and_drain(uint32_t at)
{
	struct ring r;

	ring_start(&r, at);
	expect_empty(&r);
	for (uint32_t i = 0; i < 8; i++)
		ck_assert_int_eq(push(&r, i), 0);
	ck_assert_int_eq(push(&r, 8), -EAGAIN);
	ck_assert_int_eq(push(&r, 8), -EAGAIN);
	ck_assert_uint_eq(atomic_load(&r.head), at + 8);
	ck_assert_uint_eq(atomic_load(&r.tail), at);
	for (uint32_t i = 0; i < 8; i++)
		expect_pop(&r, i);
	expect_empty(&r);
	ck_assert_uint_eq(atomic_load(&r.tail), at + 8);
	/* Room again. */
	ck_assert_int_eq(push(&r, 9), 0);
	expect_pop(&r, 9);
	expect_empty(&r);
}

START_TEST(ring_fills_then_drains_in_order)
{
	fill_and_drain(0);
}
END_TEST

START_TEST(ring_indices_wrap_around)
{
	struct ring r;
	uint32_t pushed = 0, popped = 0;

	/* Full and drained across the wrap of the u32 indices. */
	fill_and_drain(0xfffffff0u);
	fill_and_drain(0xfffffffcu);
	fill_and_drain(UINT32_MAX);

	/* Interleaved, crossing 0 with the ring partly full. */
	ring_start(&r, 0xfffffff0u);
	while (popped < 64) {
		while (pushed - popped < 5)
			ck_assert_int_eq(push(&r, pushed++), 0);
		expect_pop(&r, popped++);
		expect_pop(&r, popped++);
	}
	while (popped < pushed)
		expect_pop(&r, popped++);
	expect_empty(&r);
	ck_assert_uint_eq(atomic_load(&r.head), 0xfffffff0u + pushed);
	ck_assert_uint_eq(atomic_load(&r.tail), 0xfffffff0u + pushed);
}
END_TEST

START_TEST(ring_rejects_implausible_head)
{
	struct fl_shm_entry e;
	uint32_t starts[] = { 0, 100, 0xfffffff0u, UINT32_MAX };

	for (size_t i = 0; i < sizeof(starts) / sizeof(starts[0]); i++) {
		struct ring r;
		uint32_t t = starts[i];

		ring_start(&r, t);
		/* More entries than the ring holds, or behind the tail. */
		atomic_store(&r.head, t + 9);
		ck_assert_int_eq(fl_ring_pop(&r.head, &r.tail, r.e, 8, &e), -EBADMSG);
		atomic_store(&r.head, t - 1);
		ck_assert_int_eq(fl_ring_pop(&r.head, &r.tail, r.e, 8, &e), -EBADMSG);
		atomic_store(&r.head, t + 0x80000000u);
		ck_assert_int_eq(fl_ring_pop(&r.head, &r.tail, r.e, 8, &e), -EBADMSG);
		/* The tail did not move. */
		ck_assert_uint_eq(atomic_load(&r.tail), t);
		/* Exactly full is plausible. */
		atomic_store(&r.head, t + 8);
		ck_assert_int_eq(fl_ring_pop(&r.head, &r.tail, r.e, 8, &e), 1);
		ck_assert_uint_eq(atomic_load(&r.tail), t + 1);
	}
}
END_TEST

START_TEST(ring_push_refuses_when_consumer_tail_is_ahead)
{
	struct ring r;

	/* A hostile consumer's tail past the head: the ring looks full, never overrun. */
	ring_start(&r, 10);
	atomic_store(&r.tail, 11);
	ck_assert_int_eq(push(&r, 0), -EAGAIN);
	ck_assert_uint_eq(atomic_load(&r.head), 10);
}
END_TEST

#define THREAD_ENTRIES 1000000u

struct shared_ring {
	struct fl_shm_header *h;
	void *entries;
	uint32_t n;
};

static void *producer(void *arg)
{
	struct shared_ring *s = arg;

	for (uint32_t i = 0; i < THREAD_ENTRIES; i++) {
		struct fl_shm_entry e = entry(i);

		while (fl_ring_push(&s->h->request_head, &s->h->request_tail, s->entries,
				    s->n, &e) == -EAGAIN)
			sched_yield();
	}
	return NULL;
}

START_TEST(ring_moves_a_million_entries_between_threads_in_order)
{
	struct region r;
	struct shared_ring s;
	pthread_t t;
	uint32_t i = 0;

	region_new(&r, 16, 64, 16);
	s.h = r.mem;
	s.entries = (unsigned char *)r.mem + r.l.requests_offset;
	s.n = r.l.request_entries;
	ck_assert_int_eq(pthread_create(&t, NULL, producer, &s), 0);
	while (i < THREAD_ENTRIES) {
		struct fl_shm_entry e, want;
		int ret = fl_ring_pop(&s.h->request_head, &s.h->request_tail, s.entries,
				      s.n, &e);

		if (ret == 0) {
			sched_yield();
			continue;
		}
		ck_assert_int_eq(ret, 1);
		want = entry(i);
		if (memcmp(&e, &want, sizeof(e)))
			ck_abort_msg("entry %u: seq %u value %llu", i, e.seq,
				     (unsigned long long)e.value);
		i++;
	}
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	{
		struct fl_shm_entry e;

		ck_assert_int_eq(fl_ring_pop(&s.h->request_head, &s.h->request_tail,
					     s.entries, s.n, &e), 0);
	}
	ck_assert_uint_eq(atomic_load(&s.h->request_head), THREAD_ENTRIES);
	ck_assert_uint_eq(atomic_load(&s.h->request_tail), THREAD_ENTRIES);
	free(r.mem);
}
END_TEST

Suite *proto_suite(void)
{
	Suite *s = suite_create("proto");
	TCase *msg = unit_tcase("messages");
	TCase *hdr = unit_tcase("header");
	TCase *body = unit_tcase("bodies");
	TCase *shm = unit_tcase("region");
	TCase *ring = unit_tcase("rings");

	tcase_add_test(msg, hello_decodes_with_its_fields_and_one_fd);
	tcase_add_test(msg, module_add_decodes_with_its_fields_name_and_one_fd);
	tcase_add_test(msg, module_add_without_sections_takes_no_fd);
	tcase_add_test(msg, module_remove_decodes);
	tcase_add_test(msg, symbols_decode_and_walk_in_order);
	tcase_add_test(msg, symbols_with_no_entries_walk_to_nothing);
	tcase_add_test(msg, query_decodes_every_kind);
	tcase_add_test(msg, request_decodes_every_kind);
	tcase_add_test(msg, welcome_decodes);
	tcase_add_test(msg, error_decodes_with_its_text);
	tcase_add_test(msg, reply_decodes_with_its_text_and_more_flag);
	tcase_add_test(msg, largest_message_is_accepted);
	suite_add_tcase(s, msg);

	tcase_add_test(hdr, every_truncation_is_rejected_without_reading_past_the_end);
	tcase_add_test(hdr, message_shorter_than_a_header_names_its_size);
	tcase_add_test(hdr, bad_magic_is_rejected);
	tcase_add_test(hdr, other_version_is_not_supported);
	tcase_add_test(hdr, length_field_must_match_the_datagram);
	tcase_add_test(hdr, oversize_message_is_rejected);
	tcase_add_test(hdr, unknown_type_is_a_protocol_error);
	tcase_add_test(hdr, wrong_fd_count_is_a_protocol_error);
	tcase_add_test(hdr, diag_names_type_and_seq);
	tcase_add_test(hdr, fixed_size_messages_reject_extra_bytes);
	suite_add_tcase(s, hdr);

	/* One test a case: a failure names its case. */
	tcase_add_loop_test(body, body_rule, 0, (int)(sizeof(body_cases) / sizeof(body_cases[0])));
	suite_add_tcase(s, body);

	tcase_add_test(shm, shm_layout_is_aligned_disjoint_and_inside);
	tcase_add_test(shm, shm_layout_rejects_bad_sizes);
	tcase_add_test(shm, shm_init_then_check_round_trips);
	tcase_add_test(shm, shm_check_rejects_each_tampered_field);
	suite_add_tcase(s, shm);

	tcase_add_test(ring, ring_fills_then_drains_in_order);
	tcase_add_test(ring, ring_indices_wrap_around);
	tcase_add_test(ring, ring_rejects_implausible_head);
	tcase_add_test(ring, ring_push_refuses_when_consumer_tail_is_ahead);
	tcase_add_test(ring, ring_moves_a_million_entries_between_threads_in_order);
	suite_add_tcase(s, ring);
	return s;
}
