/* SPDX-License-Identifier: MIT */
/*
 * Messages of the faultline protocol: decoding with validation of every
 * field (docs/protocol.md).  The buffer is never read outside [0, len).
 */
#include <errno.h>
#include <string.h>

#include "core/fmt.h"
#include "proto/proto.h"

_Static_assert(sizeof(struct fl_msg_header) == 16, "header layout");
_Static_assert(sizeof(struct fl_msg_hello) == 48, "HELLO layout");
_Static_assert(sizeof(struct fl_msg_module_add) == 72, "MODULE_ADD layout");
_Static_assert(sizeof(struct fl_msg_module_remove) == 24, "MODULE_REMOVE layout");
_Static_assert(sizeof(struct fl_msg_symbols) == 24, "SYMBOLS layout");
_Static_assert(sizeof(struct fl_msg_query) == 32, "QUERY layout");
_Static_assert(sizeof(struct fl_msg_request) == 32, "REQUEST layout");
_Static_assert(sizeof(struct fl_msg_point) == 56, "POINT layout");
_Static_assert(sizeof(struct fl_msg_dumpable) == 24, "DUMPABLE layout");
_Static_assert(sizeof(struct fl_msg_welcome) == 24, "WELCOME layout");
_Static_assert(sizeof(struct fl_msg_error) == 24, "ERROR layout");
_Static_assert(sizeof(struct fl_msg_reply) == 24, "REPLY layout");


static int bad(struct fl_diag *diag, int err, const char *what, const struct fl_msg *m,
	       unsigned long long value)
{
	if (diag) {
		diag->err = err;
		fl_fmt(diag->msg, sizeof(diag->msg), "message type %u seq %u: %s (%llu)",
		       (unsigned)m->type, (unsigned)m->seq, what, value);
	}
	return err;
}

static bool has_nul(const char *s, size_t n)
{
	return memchr(s, 0, n) != NULL;
}

/* Copies the fixed part when the sizes agree exactly (len must be == fixed + extra). */
static int fixed(const void *buf, size_t len, size_t size, void *out)
{
	if (len < size)
		return -EBADMSG;
	memcpy(out, buf, size);
	return 0;
}

static int check_symbols(struct fl_msg *m, const unsigned char *p, size_t n,
			 struct fl_diag *diag)
{
	size_t pos = 0;

	for (uint32_t i = 0; i < m->symbols.count; i++) {
		uint16_t len;

		if (n - pos < FL_SYMBOL_ENTRY_HEAD)
			return bad(diag, -EBADMSG, "SYMBOLS entry past the end", m, i);
		memcpy(&len, p + pos + 8, sizeof(len));
		pos += FL_SYMBOL_ENTRY_HEAD;
		if (len == 0 || n - pos < len)
			return bad(diag, -EBADMSG, "SYMBOLS name empty or past the end", m, i);
		if (has_nul((const char *)p + pos, len))
			return bad(diag, -EBADMSG, "SYMBOLS name with a NUL byte", m, i);
		pos += len;
	}
	if (pos != n)
		return bad(diag, -EBADMSG, "SYMBOLS bytes after the last entry", m, n - pos);
	m->entries = p;
	m->entries_size = n;
	return 0;
}

int fl_proto_decode(const void *buf, size_t len, size_t nfds, struct fl_msg *m,
		    struct fl_diag *diag)
{
	const unsigned char *p = buf;
	struct fl_msg_header h;
	size_t want_fds = 0;
	size_t extra;

	memset(m, 0, sizeof(*m));
	if (len < sizeof(h)) {
		if (diag) {
			diag->err = -EBADMSG;
			fl_fmt(diag->msg, sizeof(diag->msg),
			       "message of %zu bytes: shorter than a header", len);
		}
		return -EBADMSG;
	}
	memcpy(&h, p, sizeof(h));
	m->type = (enum fl_msg_type)h.type;
	m->seq = h.seq;
	if (h.magic != FL_PROTO_MAGIC)
		return bad(diag, -EBADMSG, "bad magic", m, h.magic);
	if (h.version != FL_PROTO_VERSION)
		return bad(diag, -EPROTONOSUPPORT, "unsupported version", m, h.version);
	if (len > FL_PROTO_MAX_MESSAGE)
		return bad(diag, -EMSGSIZE, "message too large", m, len);
	if (h.length != len)
		return bad(diag, -EBADMSG, "length field does not match the message size", m,
			   h.length);

	switch (h.type) {
	case FL_MSG_HELLO:
		if (len != sizeof(m->hello))
			return bad(diag, -EBADMSG, "HELLO of the wrong size", m, len);
		fixed(p, len, sizeof(m->hello), &m->hello);
		if (m->hello.pid == 0 ||
		    (m->hello.flags & ~(FL_HELLO_FIRST | FL_HELLO_SYNC | FL_HELLO_ALLOW_PATCH |
					FL_HELLO_DONE | FL_HELLO_DUMP | FL_HELLO_DUMPABLE)) ||
		    (m->hello.flags & (FL_HELLO_DUMP | FL_HELLO_DUMPABLE)) == FL_HELLO_DUMPABLE)
			return bad(diag, -EBADMSG, "HELLO pid 0, unknown flags set, or DUMPABLE "
				   "without DUMP", m, m->hello.flags);
		if (m->hello.region_size < FL_SHM_HEADER_SIZE ||
		    m->hello.region_size > FL_PROTO_MAX_REGION)
			return bad(diag, -EBADMSG, "HELLO region size out of range", m,
				   m->hello.region_size);
		if (!has_nul(m->hello.comm, sizeof(m->hello.comm)))
			return bad(diag, -EBADMSG, "HELLO comm not terminated", m, 0);
		want_fds = 1;
		break;
	case FL_MSG_MODULE_ADD: {
		struct fl_msg_module_add *a = &m->module_add;

		if (fixed(p, len, sizeof(*a), a))
			return bad(diag, -EBADMSG, "MODULE_ADD too short", m, len);
		extra = len - sizeof(*a);
		if ((a->flags & ~FL_MODULE_BASE) || (!(a->flags & FL_MODULE_BASE) && a->base))
			return bad(diag, -EBADMSG, "MODULE_ADD unknown flags, or a base without its flag",
				   m, a->flags);
		if (a->name_len != extra || a->name_len > FL_PROTO_MAX_NAME)
			return bad(diag, -EBADMSG, "MODULE_ADD name length", m, a->name_len);
		m->name = (const char *)p + sizeof(*a);
		if (has_nul(m->name, a->name_len))
			return bad(diag, -EBADMSG, "MODULE_ADD name with a NUL byte", m, 0);
		if (a->module == 0)
			return bad(diag, -EBADMSG, "MODULE_ADD module id 0", m, 0);
		if (a->code_size == 0 || a->code_start + a->code_size < a->code_start)
			return bad(diag, -EBADMSG, "MODULE_ADD code range", m, a->code_size);
		if (a->base > a->code_start)
			return bad(diag, -EBADMSG, "MODULE_ADD base above the code", m, a->base);
		if ((uint64_t)a->first_counter + a->num_sites > UINT32_MAX)
			return bad(diag, -EBADMSG, "MODULE_ADD counter range", m, a->num_sites);
		if ((uint64_t)a->faultmap_size + a->stackmap_size + 8ull * a->sm_functions >
		    FL_PROTO_MAX_REGION)
			return bad(diag, -EBADMSG, "MODULE_ADD sections too large", m,
				   (uint64_t)a->faultmap_size + a->stackmap_size);
		if (a->sm_functions && !a->stackmap_size)
			return bad(diag, -EBADMSG, "MODULE_ADD function addresses without a stack map",
				   m, a->sm_functions);
		want_fds = a->faultmap_size + a->stackmap_size ? 1 : 0;
		break;
	}
	case FL_MSG_MODULE_REMOVE:
		if (len != sizeof(m->module_remove))
			return bad(diag, -EBADMSG, "MODULE_REMOVE of the wrong size", m, len);
		fixed(p, len, sizeof(m->module_remove), &m->module_remove);
		if (m->module_remove.module == 0 || m->module_remove.reserved)
			return bad(diag, -EBADMSG, "MODULE_REMOVE module 0 or reserved set", m,
				   m->module_remove.reserved);
		break;
	case FL_MSG_SYMBOLS:
		if (fixed(p, len, sizeof(m->symbols), &m->symbols))
			return bad(diag, -EBADMSG, "SYMBOLS too short", m, len);
		if (m->symbols.module == 0)
			return bad(diag, -EBADMSG, "SYMBOLS module id 0", m, 0);
		{
			int err = check_symbols(m, p + sizeof(m->symbols),
						len - sizeof(m->symbols), diag);

			if (err)
				return err;
		}
		break;
	case FL_MSG_SYNC:
		if (len != sizeof(m->sync))
			return bad(diag, -EBADMSG, "SYNC of the wrong size", m, len);
		fixed(p, len, sizeof(m->sync), &m->sync);
		break;
	case FL_MSG_COMPLETE:
		if (len != sizeof(m->complete))
			return bad(diag, -EBADMSG, "COMPLETE of the wrong size", m, len);
		fixed(p, len, sizeof(m->complete), &m->complete);
		break;
	case FL_MSG_DONE:
		if (len != sizeof(m->done))
			return bad(diag, -EBADMSG, "DONE of the wrong size", m, len);
		fixed(p, len, sizeof(m->done), &m->done);
		break;
	case FL_MSG_DUMPABLE:
		if (len != sizeof(m->dumpable))
			return bad(diag, -EBADMSG, "DUMPABLE of the wrong size", m, len);
		fixed(p, len, sizeof(m->dumpable), &m->dumpable);
		if (m->dumpable.dumpable > 1 || m->dumpable.reserved)
			return bad(diag, -EBADMSG, "DUMPABLE neither 0 nor 1, or reserved set", m,
				   m->dumpable.dumpable);
		break;
	case FL_MSG_QUERY:
		if (len != sizeof(m->query))
			return bad(diag, -EBADMSG, "QUERY of the wrong size", m, len);
		fixed(p, len, sizeof(m->query), &m->query);
		if (m->query.what < FL_QUERY_STATS || m->query.what > FL_QUERY_STACKMAP_PC)
			return bad(diag, -EBADMSG, "QUERY of an unknown kind", m, m->query.what);
		if (m->query.what == FL_QUERY_STATS &&
		    (m->query.arg & ~(FL_QUERY_TOP | FL_QUERY_FAILED_ONLY)))
			return bad(diag, -EBADMSG, "STATS QUERY with unknown bits in its arg", m,
				   m->query.arg >> 32);
		break;
	case FL_MSG_REQUEST:
		if (len != sizeof(m->request))
			return bad(diag, -EBADMSG, "REQUEST of the wrong size", m, len);
		fixed(p, len, sizeof(m->request), &m->request);
		if (m->request.pid == 0 ||
		    !((m->request.kind >= FL_REQ_PING && m->request.kind <= FL_REQ_HEAL_THRESHOLD) ||
		      (m->request.kind >= FL_REQ_HEAL && m->request.kind <= FL_REQ_UNHEAL_AFTER)))
			return bad(diag, -EBADMSG, "REQUEST pid 0 or unknown kind", m,
				   m->request.kind);
		break;
	case FL_MSG_POINT: {
		struct fl_msg_point *q = &m->point;
		const char *why;

		if (fixed(p, len, sizeof(*q), q))
			return bad(diag, -EBADMSG, "POINT too short", m, len);
		if (q->pid == 0)
			return bad(diag, -EBADMSG, "POINT pid 0", m, 0);
		why = fl_point_args_why(q->kind, q->target, q->len, q->expect_len);
		if (why)
			return bad(diag, -EBADMSG, why, m, q->kind);
		if (len - sizeof(*q) != (size_t)q->len + q->expect_len)
			return bad(diag, -EBADMSG, "POINT byte counts do not match the message", m,
				   len - sizeof(*q));
		m->bytes = p + sizeof(*q);
		m->expect = m->bytes + q->len;
		break;
	}
	case FL_MSG_WELCOME:
		if (len != sizeof(m->welcome))
			return bad(diag, -EBADMSG, "WELCOME of the wrong size", m, len);
		fixed(p, len, sizeof(m->welcome), &m->welcome);
		if (m->welcome.flags & ~FL_WELCOME_BPF)
			return bad(diag, -EBADMSG, "WELCOME unknown flags", m, m->welcome.flags);
		break;
	case FL_MSG_ERROR:
		if (fixed(p, len, sizeof(m->error), &m->error) ||
		    m->error.len != len - sizeof(m->error))
			return bad(diag, -EBADMSG, "ERROR text length", m, len);
		if (m->error.err >= 0)
			return bad(diag, -EBADMSG, "ERROR with a non-negative code", m,
				   (unsigned long long)m->error.err);
		m->text = (const char *)p + sizeof(m->error);
		break;
	case FL_MSG_REPLY:
		if (fixed(p, len, sizeof(m->reply), &m->reply) ||
		    m->reply.len != len - sizeof(m->reply))
			return bad(diag, -EBADMSG, "REPLY text length", m, len);
		if (m->reply.flags & ~FL_REPLY_MORE)
			return bad(diag, -EBADMSG, "REPLY unknown flags", m, m->reply.flags);
		m->text = (const char *)p + sizeof(m->reply);
		break;
	default:
		return bad(diag, -EPROTO, "unknown message type", m, h.type);
	}
	if (nfds != want_fds)
		return bad(diag, -EPROTO, "wrong number of file descriptors", m, nfds);
	m->nfds = want_fds;
	return 0;
}

int fl_symbols_next(const struct fl_msg *m, size_t *pos, struct fl_symbol *s)
{
	uint16_t len;

	if (*pos + FL_SYMBOL_ENTRY_HEAD > m->entries_size)
		return 0;
	memcpy(&s->site, m->entries + *pos, sizeof(s->site));
	memcpy(&s->offset, m->entries + *pos + 4, sizeof(s->offset));
	memcpy(&len, m->entries + *pos + 8, sizeof(len));
	s->len = len;
	s->name = (const char *)m->entries + *pos + FL_SYMBOL_ENTRY_HEAD;
	*pos += FL_SYMBOL_ENTRY_HEAD + len;
	return 1;
}

size_t fl_symbols_put(void *at, uint32_t site, uint32_t offset, const char *name,
		      uint16_t len)
{
	unsigned char *p = at;

	memcpy(p, &site, 4);
	memcpy(p + 4, &offset, 4);
	memcpy(p + 8, &len, 2);
	memcpy(p + FL_SYMBOL_ENTRY_HEAD, name, len);
	return FL_SYMBOL_ENTRY_HEAD + len;
}

size_t fl_proto_header(void *buf, enum fl_msg_type type, size_t length, uint32_t seq)
{
	struct fl_msg_header h = {
		.magic = FL_PROTO_MAGIC,
		.version = FL_PROTO_VERSION,
		.type = (uint16_t)type,
		.length = (uint32_t)length,
		.seq = seq,
	};

	memcpy(buf, &h, sizeof(h));
	return length;
}
