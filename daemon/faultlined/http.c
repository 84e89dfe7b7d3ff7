/* SPDX-License-Identifier: MIT */
/*
 * faultlined --metrics-listen ADDRESS:PORT: GET /metrics over HTTP, so that
 * a Prometheus server scrapes the daemon itself (the textfile route,
 * faultline stats --prometheus, stays).  Off unless asked for.
 *
 * libmicrohttpd parses HTTP; it runs in the daemon's own thread, with no
 * thread of its own (MHD_USE_EPOLL, driven by MHD_run): its epoll
 * descriptor and a one-second timerfd (its connection timeouts) sit in an
 * epoll set of ours that the event loop watches (fld_loop_watch).  So the
 * handler reads the registry as any callback does, and nothing here locks.
 *
 * A scrape suspends its connection (MHD_suspend_connection) and waits for
 * a STATS query of the daemon's own (fld_query_internal): the document a
 * client would get about every process, with each one's METRICS_TOP sites
 * that failed most and its faults by module (all the metrics need),
 * built a slice at a time like any answer, so a scrape never holds the
 * loop.
 * Scrapes that come while one is being built wait for that one.  The
 * document becomes text through daemon/metrics, the series faultline stats
 * --prometheus prints; OpenMetrics when the scraper's Accept asks for it.
 * Then every waiting connection is resumed with it.
 *
 * The exposition holds every process, as root sees them: who can connect
 * sees every process's comm and counts.  faultlined(8) says so; bind it to
 * a loopback address unless the network is trusted.
 */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <json-c/json.h>
#include <microhttpd.h>

#include "metrics/metrics.h"

#include "dlog.h"
#include "http.h"
#include "loop.h"
#include "query.h"
#include "work.h"

/*
 * Connections at once (MHD_OPTION_CONNECTION_LIMIT).  Not bounded per
 * address: a scraper's closed connections linger in libmicrohttpd's count
 * until its next round, and one address is the common case.
 */
#define MAX_CONNECTIONS 64
/* An idle or slow connection is closed after this many seconds. */
#define TIMEOUT_S 10
/* Memory for one connection's request (headers); a larger request gets 431/413. */
#define CONNECTION_MEMORY (32u << 10)

static const char openmetrics_type[] = "application/openmetrics-text; version=1.0.0; charset=utf-8";
static const char prometheus_type[] = "text/plain; version=0.0.4; charset=utf-8";

/* One request for /metrics, waiting (suspended) for the document. */
struct scrape {
	struct MHD_Connection *conn;
	struct scrape *next;	/* waiting for the query under way */
	bool openmetrics;	/* the Accept header asks for OpenMetrics */
	bool waiting;		/* suspended until the document comes */
	bool ready;		/* resumed: answer with the text below */
	char *text;		/* the exposition, or NULL: 503 */
	size_t len;
};

static struct {
	struct MHD_Daemon *mhd;
	struct fld_loop *loop;
	int epfd, timerfd;
	struct fld_job *job;		/* the query under way, or NULL */
	struct scrape *waiting;		/* the scrapes waiting for it */
	bool in_run;			/* inside MHD_run (its callbacks) */
} http = { .epfd = -1, .timerfd = -1 };

/* libmicrohttpd's work: what its sockets and timer have, resumed connections. */
static void run_mhd(void)
{
	http.in_run = true;
	MHD_run(http.mhd);
	http.in_run = false;
}

/* ------------------------------------------------------------------------
 * Answers
 */

static enum MHD_Result respond(struct MHD_Connection *conn, unsigned status, const char *type,
			       const char *body, size_t len)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result respond_text(struct MHD_Connection *conn, unsigned status,
				    const char *msg)
{
	return respond(conn, status, "text/plain; charset=utf-8", msg, strlen(msg));
}

/* Whether the scraper's Accept header names OpenMetrics (as Prometheus's does). */
static bool wants_openmetrics(struct MHD_Connection *conn)
{
	const char *accept = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
							 MHD_HTTP_HEADER_ACCEPT);

	return accept && strstr(accept, "application/openmetrics-text");
}

/* The document as an exposition in fmt: a new NUL-terminated text, or NULL. */
static char *render(json_object *doc, enum metrics_format fmt, size_t *len)
{
	char *text = NULL;
	FILE *f = open_memstream(&text, len);
	int err;

	if (!f)
		return NULL;
	err = metrics_print(f, doc, fmt, METRICS_TOP);
	if (fclose(f) != 0 || err != 0) {
		free(text);
		return NULL;
	}
	return text;
}

/*
 * The query's document came (text NULL: out of memory): every waiting
 * scrape gets its exposition and is resumed.
 */
static void on_document(void *ctx, char *text, size_t len)
{
	struct json_tokener *tok = json_tokener_new_ex(JSON_TOKENER_DEFAULT_DEPTH);
	json_object *doc = NULL;
	char *rendered[2] = { NULL, NULL };
	size_t lens[2] = { 0, 0 };
	struct scrape *s, *next;

	(void)ctx;
	if (text && tok) {
		doc = json_tokener_parse_ex(tok, text, (int)len);
		if (json_tokener_get_error(tok) != json_tokener_success) {
			json_object_put(doc);
			doc = NULL;
		}
	}
	if (!doc)
		fld_warn("metrics: no document to expose (%s)", text ? "not JSON" : "out of memory");
	free(text);
	json_tokener_free(tok);
	for (s = http.waiting; s; s = next) {
		int i = s->openmetrics ? METRICS_OPENMETRICS : METRICS_PROMETHEUS;

		next = s->next;
		if (doc && !rendered[i])
			rendered[i] = render(doc, (enum metrics_format)i, &lens[i]);
		if (rendered[i]) {
			s->text = malloc(lens[i] ? lens[i] : 1);
			if (s->text) {
				memcpy(s->text, rendered[i], lens[i]);
				s->len = lens[i];
			}
		}
		s->ready = true;
		s->waiting = false;
		s->next = NULL;
		MHD_resume_connection(s->conn);
	}
	http.waiting = NULL;
	json_object_put(doc);
	free(rendered[0]);
	free(rendered[1]);
	/*
	 * Answered now: a resumed connection is served by the next MHD_run,
	 * which no event of libmicrohttpd's own would bring before its timer.
	 */
	if (!http.in_run)
		run_mhd();
}

/* ------------------------------------------------------------------------
 * libmicrohttpd's callbacks
 */

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version,
				  const char *upload_data, size_t *upload_size, void **req_cls)
{
	struct scrape *s = *req_cls;
	enum MHD_Result ret;

	(void)cls;
	(void)version;
	(void)upload_data;
	if (!s) {
		/* The headers: what is asked for. */
		if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
			return respond_text(conn, MHD_HTTP_METHOD_NOT_ALLOWED,
					    "faultlined serves GET /metrics only\n");
		if (strcmp(url, "/metrics") != 0)
			return respond_text(conn, MHD_HTTP_NOT_FOUND,
					    "faultlined serves /metrics only\n");
		s = calloc(1, sizeof(*s));
		if (!s)
			return MHD_NO;
		s->conn = conn;
		s->openmetrics = wants_openmetrics(conn);
		*req_cls = s;
		return MHD_YES;
	}
	if (*upload_size) {
		*upload_size = 0;	/* a body with a GET: read and ignored */
		return MHD_YES;
	}
	if (s->ready) {
		if (!s->text)
			return respond_text(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
					    "faultlined: no metrics (out of memory)\n");
		ret = respond(conn, MHD_HTTP_OK, s->openmetrics ? openmetrics_type : prometheus_type,
			      s->text, s->len);
		free(s->text);
		s->text = NULL;
		return ret;
	}
	if (s->waiting)
		return MHD_YES;
	/*
	 * Wait for the query under way, or start one: each process's top sites
	 * and its sums by module, all the metrics need however many failed.
	 */
	if (!http.job && fld_query_internal(FL_QUERY_STATS, METRICS_TOP | FL_QUERY_FAILED_ONLY,
					    on_document, NULL, &http.job) != 0)
		return respond_text(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
				    "faultlined: no metrics (out of memory)\n");
	s->waiting = true;
	s->next = http.waiting;
	http.waiting = s;
	MHD_suspend_connection(conn);
	return MHD_YES;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
			 enum MHD_RequestTerminationCode why)
{
	struct scrape *s = *req_cls;

	(void)cls;
	(void)conn;
	(void)why;
	if (!s)
		return;
	/* Not on the waiting list: a suspended connection is not completed. */
	free(s->text);
	free(s);
	*req_cls = NULL;
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	char msg[256];
	size_t n;

	(void)cls;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	n = strlen(msg);
	while (n && msg[n - 1] == '\n')
		msg[--n] = 0;
	fld_debug("metrics: libmicrohttpd: %s", msg);
}

/* Our epoll set is readable: the timer, libmicrohttpd's own events. */
static void on_ready(void *ctx)
{
	struct epoll_event ev[2];
	uint64_t ticks;
	int n;

	(void)ctx;
	while ((n = epoll_wait(http.epfd, ev, 2, 0)) > 0) {
		for (int i = 0; i < n; i++)
			if (ev[i].data.fd == http.timerfd)
				(void)!read(http.timerfd, &ticks, sizeof(ticks));
		run_mhd();
	}
	/* Resumed connections are sent to now, not at the next event. */
	run_mhd();
}

/* ------------------------------------------------------------------------
 * Starting and stopping
 */

/*
 * ADDRESS:PORT, a numeric IPv4 address or a bracketed IPv6 one ([::1]:9464),
 * into *out.  Returns 0, or -EINVAL with *why set.
 */
static int parse_listen(const char *spec, struct sockaddr_storage *out, socklen_t *len,
			const char **why)
{
	struct addrinfo hints = { .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE,
				  .ai_socktype = SOCK_STREAM };
	char host[INET6_ADDRSTRLEN + 2];
	const char *colon = strrchr(spec, ':'), *port;
	struct addrinfo *res = NULL;
	size_t n;
	char *end;
	unsigned long p;

	*why = "not ADDRESS:PORT (127.0.0.1:9464, [::1]:9464)";
	if (!colon || colon == spec)
		return -EINVAL;
	port = colon + 1;
	n = (size_t)(colon - spec);
	if (spec[0] == '[') {
		if (n < 3 || spec[n - 1] != ']')
			return -EINVAL;
		spec++;
		n -= 2;
	} else if (memchr(spec, ':', n)) {
		*why = "an IPv6 address goes in brackets ([::1]:9464)";
		return -EINVAL;
	}
	if (n >= sizeof(host))
		return -EINVAL;
	memcpy(host, spec, n);
	host[n] = 0;
	errno = 0;
	p = strtoul(port, &end, 10);
	if (!*port || *end || errno || p > 65535 || port[0] == '-' || port[0] == '+') {
		*why = "the port is not a number from 0 to 65535";
		return -EINVAL;
	}
	if (getaddrinfo(host, port, &hints, &res) != 0 || !res) {
		*why = "the address is not a numeric IPv4 or IPv6 address";
		return -EINVAL;
	}
	memcpy(out, res->ai_addr, res->ai_addrlen);
	*len = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

int fld_http_check(const char *spec, const char **why)
{
	struct sockaddr_storage sa;
	socklen_t len;

	return parse_listen(spec, &sa, &len, why);
}

int fld_http_start(struct fld_loop *loop, const char *spec)
{
	struct itimerspec every = { { 1, 0 }, { 1, 0 } };
	struct epoll_event ev = { .events = EPOLLIN };
	const union MHD_DaemonInfo *info;
	struct sockaddr_storage sa;
	const char *why;
	socklen_t len;
	int err, mfd;

	if (parse_listen(spec, &sa, &len, &why) != 0) {
		fld_err("--metrics-listen %s: %s", spec, why);
		return -EINVAL;
	}
	http.mhd = MHD_start_daemon(MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME |
				    (sa.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0) | MHD_USE_ERROR_LOG,
				    0, NULL, NULL, on_request, NULL,
				    MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
				    MHD_OPTION_CONNECTION_LIMIT, (unsigned)MAX_CONNECTIONS,
				    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)TIMEOUT_S,
				    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONNECTION_MEMORY,
				    MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
				    MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, NULL,
				    MHD_OPTION_END);
	if (!http.mhd) {
		err = errno ? -errno : -EADDRNOTAVAIL;
		fld_err("--metrics-listen %s: cannot listen there: %s", spec, strerror(-err));
		return err;
	}
	info = MHD_get_daemon_info(http.mhd, MHD_DAEMON_INFO_EPOLL_FD);
	mfd = info ? info->epoll_fd : -1;
	http.epfd = epoll_create1(EPOLL_CLOEXEC);
	http.timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	err = mfd < 0 || http.epfd < 0 || http.timerfd < 0 ? -errno : 0;
	if (!err) {
		ev.data.fd = mfd;
		if (epoll_ctl(http.epfd, EPOLL_CTL_ADD, mfd, &ev) != 0)
			err = -errno;
		ev.data.fd = http.timerfd;
		if (!err && (epoll_ctl(http.epfd, EPOLL_CTL_ADD, http.timerfd, &ev) != 0 ||
			     timerfd_settime(http.timerfd, 0, &every, NULL) != 0))
			err = -errno;
	}
	if (!err)
		err = fld_loop_watch(loop, http.epfd, on_ready, NULL);
	if (err) {
		fld_err("--metrics-listen %s: %s", spec, strerror(-err));
		fld_http_stop();
		return err;
	}
	http.loop = loop;
	/* The port it got (port 0 asks for any free one). */
	info = MHD_get_daemon_info(http.mhd, MHD_DAEMON_INFO_BIND_PORT);
	fld_info("metrics: GET /metrics served on %s (port %u)", spec,
		 info ? (unsigned)info->port : 0u);
	return 0;
}

void fld_http_stop(void)
{
	/* Scrapes still waiting get no answer: their connections are closed. */
	if (http.job)
		fld_query_cancel(http.job);
	http.job = NULL;
	for (struct scrape *s = http.waiting, *next; s; s = next) {
		next = s->next;
		s->ready = true;
		s->waiting = false;
		s->next = NULL;
		MHD_resume_connection(s->conn);
	}
	http.waiting = NULL;
	if (http.loop && http.epfd >= 0)
		fld_loop_unwatch(http.loop, http.epfd);
	http.loop = NULL;
	if (http.mhd)
		MHD_stop_daemon(http.mhd);
	http.mhd = NULL;
	if (http.epfd >= 0)
		close(http.epfd);
	if (http.timerfd >= 0)
		close(http.timerfd);
	http.epfd = http.timerfd = -1;
}
