// SPDX-License-Identifier: MIT
/*
 * The command-line side of the protocol: one connection per command, one
 * QUERY or REQUEST on it, then REPLY messages until one without MORE, or
 * an ERROR.  What the daemon sends is decoded and checked by lib/proto like
 * anything else read from a socket; file descriptors it might attach are
 * closed unread.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <proto/proto.h>

#include "cli.h"
#include "client.h"

/* The whole reply of one query: a bound, so a broken daemon cannot eat memory. */
#define MAX_REPLY (256u << 20)
/* The daemon answers queries at once; requests within its request timeout. */
#define REPLY_TIMEOUT_MS 120000

#define SYSTEM_SOCKET "/run/faultline/faultlined.sock"

/*
 * Whether a daemon the command would believe (root's or this user's)
 * answers at path: the connection is closed at once, which the daemon
 * takes as a client that left.
 */
static bool answers(const char *path)
{
	int fd = fl_proto_connect(path, NULL);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

int cli_socket_path(const char *opt, char *buf, size_t len)
{
	const char *env = getenv("FAULTLINE_SOCKET");
	const char *dir = getenv("XDG_RUNTIME_DIR");
	int n;

	if (dir && dir[0] != '/')
		dir = NULL;
	if (opt && *opt)
		n = snprintf(buf, len, "%s", opt);
	else if (env && *env)
		n = snprintf(buf, len, "%s", env);
	else if (geteuid() == 0)
		n = snprintf(buf, len, SYSTEM_SOCKET);
	else {
		/*
		 * As the library looks (fl_init(3)): the user's own daemon,
		 * else the system one, which serves every user; when neither
		 * answers, the user's is named in the error (it is the one a
		 * user starts), or the system one without XDG_RUNTIME_DIR.
		 */
		n = dir ? snprintf(buf, len, "%s/faultline/faultlined.sock", dir) : -1;
		if (n >= 0 && (size_t)n < len && answers(buf))
			;
		else if (answers(SYSTEM_SOCKET) || !dir)
			n = snprintf(buf, len, SYSTEM_SOCKET);
	}
	if (n < 0 || (size_t)n >= len || (size_t)n >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
		snprintf(buf, len, "the socket path is too long");
		return -ENAMETOOLONG;
	}
	return 0;
}

static int fail(struct cli_reply *r, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct cli_reply *r, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->msg, sizeof(r->msg), fmt, ap);
	va_end(ap);
	r->err = err;
	return err;
}

/*
 * Connects without blocking, and believes only a daemon of root or of this
 * user: anyone else may have bound the path first to show made-up figures.
 */
static int connect_daemon(const char *path, struct cli_reply *r)
{
	uint32_t uid = 0;
	int fd = fl_proto_connect(path, &uid);

	if (fd >= 0)
		return fd;
	switch (fd) {
	case -ENAMETOOLONG:
		return fail(r, fd, "%s: the socket path is too long", path);
	case -ENOENT:
	case -ECONNREFUSED:
		return fail(r, fd, "faultlined is not running at %s (%s)", path, strerror(-fd));
	case -EAGAIN:
		return fail(r, fd, "faultlined at %s is not accepting connections (stopped, "
			    "or its backlog is full)", path);
	case -EPERM:
		return fail(r, fd, "%s is served by uid %u, neither root nor you (uid %u): "
			    "not believing it", path, uid, (unsigned)geteuid());
	default:
		return fail(r, fd, "cannot connect to faultlined at %s: %s", path,
			    strerror(-fd));
	}
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Closes whatever descriptors came with a message (we never want any) and
 * returns how many there were.
 */
static size_t close_fds(struct msghdr *mh)
{
	size_t total = 0;

	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
			size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			int fd;

			for (size_t i = 0; i < n; i++) {
				memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
				close(fd);
			}
			total += n;
		}
	}
	return total;
}

/*
 * Sends msg (len bytes, sequence number seq) and collects the REPLY text
 * until one without MORE.  Returns 0 with r->doc set, or a negative errno.
 */
static int call(const char *path, const void *msg, size_t len, uint32_t seq,
		struct cli_reply *r)
{
	static unsigned char buf[FL_PROTO_MAX_MESSAGE + 1];
	union {
		char b[CMSG_SPACE(FL_PROTO_MAX_FDS * sizeof(int))];
		struct cmsghdr align;
	} cbuf;
	char *text = NULL;
	size_t text_len = 0;
	int64_t deadline = mono_ms() + REPLY_TIMEOUT_MS;
	int fd, ret;

	memset(r, 0, sizeof(*r));
	fd = connect_daemon(path, r);
	if (fd < 0)
		return fd;
	ret = fl_proto_send(fd, msg, len, NULL, 0, 0);
	if (ret) {
		ret = fail(r, ret, "faultlined at %s: send: %s", path, strerror(-ret));
		goto out;
	}
	for (;;) {
		struct iovec iov = { buf, sizeof(buf) };
		struct msghdr mh = {
			.msg_iov = &iov, .msg_iovlen = 1,
			.msg_control = cbuf.b, .msg_controllen = sizeof(cbuf.b),
		};
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		struct fl_msg m;
		struct fl_diag d = { 0 };
		int64_t left = deadline - mono_ms();
		ssize_t n;
		size_t nfds = 0;
		char *grown;

		if (left <= 0 || poll(&pfd, 1, (int)left) == 0) {
			ret = fail(r, -ETIMEDOUT, "faultlined at %s did not answer in %d s", path,
				   REPLY_TIMEOUT_MS / 1000);
			goto out;
		}
		n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0) {
			ret = fail(r, -errno, "faultlined at %s: %s", path, strerror(errno));
			goto out;
		}
		nfds += close_fds(&mh);
		if (n == 0) {
			ret = fail(r, -ECONNRESET, "faultlined at %s closed the connection "
				   "before answering", path);
			goto out;
		}
		if ((mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || (size_t)n > FL_PROTO_MAX_MESSAGE) {
			ret = fail(r, -EPROTO, "faultlined at %s: oversized message", path);
			goto out;
		}
		if (fl_proto_decode(buf, (size_t)n, nfds, &m, &d) != 0) {
			ret = fail(r, -EPROTO, "faultlined at %s: bad message: %s", path, d.msg);
			goto out;
		}
		if (m.seq != seq) {
			ret = fail(r, -EPROTO, "faultlined at %s: a reply to another message", path);
			goto out;
		}
		if (m.type == FL_MSG_ERROR) {
			int err = m.error.err < 0 ? m.error.err : -EPROTO;

			r->from_daemon = true;
			ret = fail(r, err, "%.*s", (int)m.error.len, m.text);
			goto out;
		}
		if (m.type != FL_MSG_REPLY) {
			ret = fail(r, -EPROTO, "faultlined at %s: unexpected message type %d",
				   path, (int)m.type);
			goto out;
		}
		if (text_len + m.reply.len > MAX_REPLY) {
			ret = fail(r, -EMSGSIZE, "faultlined at %s: reply larger than %u MiB",
				   path, MAX_REPLY >> 20);
			goto out;
		}
		grown = realloc(text, text_len + m.reply.len + 1);
		if (!grown) {
			ret = fail(r, -ENOMEM, "out of memory");
			goto out;
		}
		text = grown;
		memcpy(text + text_len, m.text, m.reply.len);
		text_len += m.reply.len;
		text[text_len] = 0;
		if (!(m.reply.flags & FL_REPLY_MORE))
			break;
	}

	{
		struct json_tokener *tok = json_tokener_new_ex(JSON_TOKENER_DEFAULT_DEPTH);
		enum json_tokener_error jerr;

		if (!tok) {
			ret = fail(r, -ENOMEM, "out of memory");
			goto out;
		}
		json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
		r->doc = json_tokener_parse_ex(tok, text ? text : "", (int)text_len);
		jerr = json_tokener_get_error(tok);
		if (jerr == json_tokener_continue)
			jerr = json_tokener_error_parse_eof;
		else if (jerr == json_tokener_success &&
			 json_tokener_get_parse_end(tok) != text_len)
			jerr = json_tokener_error_parse_unexpected;
		json_tokener_free(tok);
		if (jerr != json_tokener_success || !json_object_is_type(r->doc, json_type_object)) {
			json_object_put(r->doc);
			r->doc = NULL;
			ret = fail(r, -EPROTO, "faultlined at %s: the reply is not a JSON object (%s)",
				   path, json_tokener_error_desc(jerr));
			goto out;
		}
	}
	ret = 0;
out:
	free(text);
	close(fd);
	return ret;
}

static uint32_t next_seq(void)
{
	return (uint32_t)getpid() ^ (uint32_t)mono_ms();
}

int cli_query(const char *path, uint32_t what, uint32_t pid, uint64_t arg,
	      struct cli_reply *r)
{
	struct fl_msg_query q;
	uint32_t seq = next_seq();

	memset(&q, 0, sizeof(q));
	fl_proto_header(&q, FL_MSG_QUERY, sizeof(q), seq);
	q.what = what;
	q.pid = pid;
	q.arg = arg;
	return call(path, &q, sizeof(q), seq, r);
}

int cli_request(const char *path, uint32_t pid, uint32_t kind, uint64_t arg,
		struct cli_reply *r)
{
	struct fl_msg_request q;
	uint32_t seq = next_seq();

	memset(&q, 0, sizeof(q));
	fl_proto_header(&q, FL_MSG_REQUEST, sizeof(q), seq);
	q.pid = pid;
	q.kind = kind;
	q.arg = arg;
	return call(path, &q, sizeof(q), seq, r);
}

int cli_point_request(const char *path, const struct fl_msg_point *q, const void *bytes,
		      const void *expect, struct cli_reply *r)
{
	unsigned char msg[sizeof(*q) + 2 * FL_PROTO_POINT_MAX];
	uint32_t seq = next_seq();
	size_t len = sizeof(*q) + q->len + q->expect_len;

	if (q->len > FL_PROTO_POINT_MAX || q->expect_len > FL_PROTO_POINT_MAX)
		return fail(r, -E2BIG, "more than %u bytes", FL_PROTO_POINT_MAX);
	memcpy(msg, q, sizeof(*q));
	fl_proto_header(msg, FL_MSG_POINT, len, seq);
	/* A reset or an invalidation has no bytes: NULL, which memcpy may not take even for 0. */
	if (q->len)
		memcpy(msg + sizeof(*q), bytes, q->len);
	if (q->expect_len)
		memcpy(msg + sizeof(*q) + q->len, expect, q->expect_len);
	return call(path, msg, len, seq, r);
}

int cli_reply_fail(const char *cmd, const struct cli_reply *r)
{
	fprintf(stderr, "faultline: %s: ", cmd);
	/* An ERROR's text is whatever the daemon sent: no control characters
	 * reach the terminal. */
	for (const char *c = r->msg; *c; c++)
		fputc((unsigned char)*c < 0x20 || *c == 0x7f ? '?' : *c, stderr);
	fputc('\n', stderr);
	return 1;
}

int cli_reply_fail_pid(const char *cmd, uint32_t pid, const struct cli_reply *r)
{
	if (r->from_daemon && r->err == -ESRCH) {
		fprintf(stderr, "faultline: %s: no registered process %u\n", cmd, pid);
		return 1;
	}
	return cli_reply_fail(cmd, r);
}

int cli_socket(const char *cmd, const char *opt, char *buf, size_t len)
{
	if (cli_socket_path(opt, buf, len) != 0) {
		fprintf(stderr, "faultline: %s: %s\n", cmd, buf);
		return 1;
	}
	return 0;
}

int cli_command_query(const char *cmd, const char *socket, uint32_t what, uint32_t pid,
		      uint64_t arg, struct cli_reply *r)
{
	char path[512];

	if (cli_socket(cmd, socket, path, sizeof(path)) != 0)
		return 1;
	if (cli_query(path, what, pid, arg, r) != 0)
		return cli_reply_fail_pid(cmd, pid, r);
	return 0;
}

int cli_finish(const char *cmd, int err)
{
	if (err == -ENOMEM) {
		fprintf(stderr, "faultline: %s: out of memory\n", cmd);
		return 1;
	}
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "faultline: %s: write error: %s\n", cmd, strerror(errno));
		return 1;
	}
	return 0;
}

int cli_parse_pid(const char *cmd, const char *what, const char *s, uint32_t *pid)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (s[0] < '0' || s[0] > '9' || errno || *end || v == 0 || v > INT_MAX) {
		usage_error(cmd, "%s: expected a process ID, not '%s'", what, s);
		return -EINVAL;
	}
	*pid = (uint32_t)v;
	return 0;
}

void cli_print_json(json_object *doc)
{
	puts(json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PRETTY |
					    JSON_C_TO_STRING_NOSLASHESCAPE));
}

const char *cli_basename(const char *path)
{
	const char *slash = path ? strrchr(path, '/') : NULL;

	if (!path)
		return "?";
	return slash && slash[1] ? slash + 1 : path;
}

const char *cli_safe(const char *s)
{
	static char bufs[8][256];
	static unsigned next;
	char *b = bufs[next++ % 8];
	size_t i;

	if (!s)
		return "?";
	for (i = 0; s[i] && i < sizeof(bufs[0]) - 1; i++)
		b[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
	b[i] = 0;
	return b;
}
