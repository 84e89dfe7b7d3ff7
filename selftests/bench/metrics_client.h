/* SPDX-License-Identifier: MIT */
/*
 * The clients of faultline's metrics, for bench_daemon: a scrape of
 * faultlined's GET /metrics as a scraper does it (plain HTTP/1.1 over a
 * TCP socket: the body is read up to its Content-Length), and faultline
 * stats --prometheus as a user runs it; and what their expositions hold.
 */
#ifndef FL_BENCH_METRICS_CLIENT_H
#define FL_BENCH_METRICS_CLIENT_H

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "stats.h"

/* The lines of an exposition, and its series: the lines that are not comments. */
static inline void exposition_count(const char *text, size_t len, long *lines, long *series)
{
	*lines = *series = 0;
	for (size_t i = 0; i < len;) {
		const char *nl = memchr(text + i, '\n', len - i);
		size_t end = nl ? (size_t)(nl - text) : len;

		(*lines)++;
		if (end > i && text[i] != '#')
			(*series)++;
		i = end + 1;
	}
}

/* Appends what fd gives until its end to *buf (of *len bytes).  Returns 0, or -1. */
static inline int read_all(int fd, char **buf, size_t *len)
{
	size_t cap = *len;

	for (;;) {
		ssize_t n;

		if (cap - *len < 65536) {
			char *grown = realloc(*buf, cap * 2 + 65536);

			if (!grown)
				return -1;
			*buf = grown;
			cap = cap * 2 + 65536;
		}
		n = read(fd, *buf + *len, cap - *len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		*len += (size_t)n;
	}
	(*buf)[*len] = 0;
	return 0;
}

/*
 * A scrape with no answer after this many seconds is given up (a
 * scraper's timeout: Prometheus's default is 10 s), so that a daemon that
 * never answers is reported, not waited for.
 */
#define SCRAPE_TIMEOUT_S 30

/*
 * The size of an HTTP response in buf[0..len) once its head is complete:
 * the head's and the body's (its Content-Length), with *head the head's;
 * 0 while the head is incomplete; SIZE_MAX when it has no Content-Length
 * (it ends at the connection's end).
 */
static inline size_t response_size(const char *buf, size_t len, size_t *head)
{
	const char *end = memmem(buf, len, "\r\n\r\n", 4), *cl;

	if (!end)
		return 0;
	*head = (size_t)(end - buf) + 4;
	cl = memmem(buf, *head, "\r\nContent-Length:", 17);
	if (!cl)
		cl = memmem(buf, *head, "\r\ncontent-length:", 17);
	return cl ? *head + strtoul(cl + 17, NULL, 10) : SIZE_MAX;
}

/*
 * GET /metrics from 127.0.0.1:port over a new TCP connection (HTTP/1.1),
 * read as a scraper reads it: up to the end of the body its Content-Length
 * gives (or the connection's end without one).  Returns the body's size
 * with *body its text (caller frees), or -1 after saying why (no
 * connection, no answer within SCRAPE_TIMEOUT_S, not a 200, a body
 * shorter than its Content-Length).
 */
static inline long scrape(int port, char **body)
{
	static const char req[] = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
	struct timeval tv = { .tv_sec = SCRAPE_TIMEOUT_S };
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	size_t len = 0, cap = 0, head = 0, size = 0;
	char *buf = NULL;

	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) != 0 ||
	    connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL) != (ssize_t)(sizeof(req) - 1))
		goto failed;
	while (!size || len < size) {
		ssize_t n;

		if (cap - len < 65536) {
			char *grown = realloc(buf, cap * 2 + 65536);

			if (!grown)
				goto failed;
			buf = grown;
			cap = cap * 2 + 65536;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			goto failed;
		if (n == 0)
			break;
		len += (size_t)n;
		buf[len] = 0;
		if (!size)
			size = response_size(buf, len, &head);
	}
	close(fd);
	if (!buf || strncmp(buf, "HTTP/1.1 200 ", 13) != 0 || !size) {
		fprintf(stderr, "bench_daemon: GET /metrics: not a 200: %.80s\n", buf ? buf : "");
		free(buf);
		return -1;
	}
	if (size != SIZE_MAX && len != size) {
		fprintf(stderr, "bench_daemon: GET /metrics: %zu bytes of a body of %zu\n",
			len - head, size - head);
		free(buf);
		return -1;
	}
	memmove(buf, buf + head, len - head);
	buf[len - head] = 0;
	*body = buf;
	return (long)(len - head);
failed:
	if (errno == EAGAIN)
		fprintf(stderr, "bench_daemon: GET /metrics on port %d: no answer within %d s\n",
			port, SCRAPE_TIMEOUT_S);
	else
		fprintf(stderr, "bench_daemon: GET /metrics on port %d: %s\n", port, strerror(errno));
	if (fd >= 0)
		close(fd);
	free(buf);
	return -1;
}

/*
 * faultline stats --prometheus as a user runs it, FAULTLINE_SOCKET set to
 * socket, its output read through a pipe.  Returns its wall
 * time in seconds, with the bytes, lines and series of its output, or -1
 * after saying why (it could not run, or did not exit 0).
 */
static inline double cli_prometheus(const char *cli, const char *socket, long *bytes, long *lines,
				    long *series)
{
	double t0 = bench_now(), t;
	char *out = NULL;
	size_t len = 0;
	int p[2], status = -1, rd;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) != 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		if (dup2(p[1], 1) < 0 || setenv("FAULTLINE_SOCKET", socket, 1) != 0)
			_exit(127);
		execl(cli, cli, "stats", "--prometheus", (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	rd = pid > 0 ? read_all(p[0], &out, &len) : -1;
	close(p[0]);
	if (pid > 0)
		waitpid(pid, &status, 0);
	t = bench_now() - t0;
	if (rd != 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "bench_daemon: %s stats --prometheus: exit status %d\n", cli,
			WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		free(out);
		return -1;
	}
	*bytes = (long)len;
	exposition_count(out, len, lines, series);
	free(out);
	return t;
}

#endif /* FL_BENCH_METRICS_CLIENT_H */
