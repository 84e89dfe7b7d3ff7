/* SPDX-License-Identifier: MIT */
/* Answers to a client: see reply.h. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "proto/proto.h"
#include "reply.h"

void fld_send_error(struct fld_client *c, uint32_t seq, int err, const char *fmt, ...)
{
	char buf[sizeof(struct fl_msg_error) + 512];
	struct fl_msg_error e;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf + sizeof(e), sizeof(buf) - sizeof(e), fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if ((size_t)n >= sizeof(buf) - sizeof(e))
		n = (int)(sizeof(buf) - sizeof(e) - 1);
	memset(&e, 0, sizeof(e));
	fl_proto_header(&e, FL_MSG_ERROR, sizeof(e) + (size_t)n, seq);
	e.err = err;
	e.len = (uint32_t)n;
	memcpy(buf, &e, sizeof(e));
	fld_client_send(c, buf, sizeof(e) + (size_t)n, NULL, 0);
}

int fld_send_reply(struct fld_client *c, uint32_t seq, const char *text, size_t len)
{
	static char buf[FL_PROTO_MAX_MESSAGE];
	const size_t room = sizeof(buf) - sizeof(struct fl_msg_reply);
	int err;

	do {
		struct fl_msg_reply r;
		size_t n = len > room ? room : len;

		memset(&r, 0, sizeof(r));
		fl_proto_header(&r, FL_MSG_REPLY, sizeof(r) + n, seq);
		r.flags = len > n ? FL_REPLY_MORE : 0;
		r.len = (uint32_t)n;
		memcpy(buf, &r, sizeof(r));
		memcpy(buf + sizeof(r), text, n);
		err = fld_client_send(c, buf, sizeof(r) + n, NULL, 0);
		if (err)
			break;
		/*
		 * The first message met the queue limits: the rest of the
		 * answer is queued whole (a big host's stats is megabytes).
		 */
		fld_client_bulk(c, 1);
		text += n;
		len -= n;
	} while (len);
	fld_client_bulk(c, 0);
	return err;
}
