// SPDX-License-Identifier: MIT
/*
 * faultline top [--interval SECONDS] [--iterations N] [--socket PATH]
 *
 * A live view of faultlined's statistics: every interval one STATS query,
 * and the sites that failed most since the previous one.  On a terminal it
 * takes the alternate screen and redraws it; 'q' or Ctrl-C (or SIGTERM,
 * SIGHUP) restores the terminal and exits 0.  When stdout is not a
 * terminal it prints one plain frame per interval.
 *
 * Signals are taken through a signalfd polled with stdin, so that no
 * signal handler has to touch the terminal: every exit goes through
 * restore().
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <proto/proto.h>

#include "cli.h"
#include "client.h"
#include "opts.h"
#include "tables.h"

/* One site in one frame, and what identifies it across frames. */
struct row {
	int64_t pid;
	uint64_t registered_ms;	/* tells apart two processes with one pid */
	uint64_t pc;
	const char *module;
	json_object *site;	/* the module and function columns: cli_site_where */
	const char *comm;
	const char *kind;
	uint64_t faults;
	double rate;		/* faults per second since the last frame; NAN: unknown */
};

/* What the previous frame saw: its sites' keys and counts. */
struct seen {
	int64_t pid;
	uint64_t registered_ms;
	uint64_t pc;
	char *module;
	uint64_t faults;
};

struct top {
	bool tty;		/* stdout is a terminal: redraw in place */
	bool keys;		/* stdin is a terminal too: read 'q' */
	bool term_saved;
	struct termios saved;
	int sfd;
	struct seen *prev;
	size_t num_prev;
	struct timespec prev_time;
};

static int cmp_key(int64_t pa, uint64_t ra, uint64_t ca, const char *ma,
		   int64_t pb, uint64_t rb, uint64_t cb, const char *mb)
{
	if (pa != pb)
		return pa < pb ? -1 : 1;
	if (ra != rb)
		return ra < rb ? -1 : 1;
	if (ca != cb)
		return ca < cb ? -1 : 1;
	return strcmp(ma ? ma : "", mb ? mb : "");
}

static int cmp_seen(const void *pa, const void *pb)
{
	const struct seen *a = pa, *b = pb;

	return cmp_key(a->pid, a->registered_ms, a->pc, a->module,
		       b->pid, b->registered_ms, b->pc, b->module);
}

/* Most faults per second first, then most faults, then by pid and PC. */
static int cmp_row(const void *pa, const void *pb)
{
	const struct row *a = pa, *b = pb;
	double ra = isnan(a->rate) ? -1 : a->rate, rb = isnan(b->rate) ? -1 : b->rate;

	if (ra != rb)
		return ra > rb ? -1 : 1;
	if (a->faults != b->faults)
		return a->faults > b->faults ? -1 : 1;
	return cmp_key(a->pid, a->registered_ms, a->pc, a->module,
		       b->pid, b->registered_ms, b->pc, b->module);
}

static void free_seen(struct seen *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(s[i].module);
	free(s);
}

static void restore(struct top *t)
{
	if (t->tty) {
		fputs("\033[?25h\033[?1049l", stdout);
		fflush(stdout);
	}
	if (t->term_saved)
		tcsetattr(STDIN_FILENO, TCSAFLUSH, &t->saved);
	t->term_saved = false;
	t->tty = false;
}

static int setup(struct top *t)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGWINCH);
	if (sigprocmask(SIG_BLOCK, &set, NULL) != 0)
		return -errno;
	t->sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (t->sfd < 0)
		return -errno;
	t->tty = isatty(STDOUT_FILENO);
	t->keys = t->tty && isatty(STDIN_FILENO);
	if (t->keys && tcgetattr(STDIN_FILENO, &t->saved) == 0) {
		struct termios raw = t->saved;

		/* Keys one at a time, not echoed; Ctrl-C still sends SIGINT. */
		raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		raw.c_cc[VMIN] = 1;
		raw.c_cc[VTIME] = 0;
		if (tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw) == 0)
			t->term_saved = true;
	}
	if (t->tty)
		fputs("\033[?1049h\033[?25l", stdout);
	return 0;
}

static void window(int *rows, int *cols)
{
	struct winsize ws;

	*rows = 24;
	*cols = 80;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row && ws.ws_col) {
		*rows = ws.ws_row;
		*cols = ws.ws_col;
	}
}

/* One line of a frame, cut to the terminal's width when there is one. */
static void line(FILE *f, int cols, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void line(FILE *f, int cols, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (cols > 0 && strlen(buf) > (size_t)cols)
		buf[cols] = 0;
	fputs(buf, f);
	fputs(cols > 0 ? "\033[K\n" : "\n", f);
}

/* Draws one frame from a STATS document; remembers its counts for the next. */
static int frame(struct top *t, json_object *doc, double interval)
{
	json_object *procs;
	size_t np = jv_array(doc, "processes", &procs), nrows = 0, live = 0, shown;
	struct row *rows = NULL;
	struct seen *now = NULL;
	struct timespec ts;
	double elapsed;
	uint64_t total = 0;
	double total_rate = 0;
	bool have_rate = t->prev != NULL;
	int trows, tcols;
	char when[32];
	time_t wall = time(NULL);
	FILE *f = stdout;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	elapsed = (double)(ts.tv_sec - t->prev_time.tv_sec) +
		  (double)(ts.tv_nsec - t->prev_time.tv_nsec) / 1e9;
	if (elapsed <= 0)
		elapsed = interval;

	for (size_t i = 0; i < np; i++) {
		json_object *sites;

		nrows += jv_array(json_object_array_get_idx(procs, i), "sites", &sites);
	}
	rows = calloc(nrows ? nrows : 1, sizeof(*rows));
	now = calloc(nrows ? nrows : 1, sizeof(*now));
	if (!rows || !now) {
		free(rows);
		free(now);
		return -ENOMEM;
	}
	nrows = 0;
	for (size_t i = 0; i < np; i++) {
		json_object *p = json_object_array_get_idx(procs, i), *sites;
		size_t ns = jv_array(p, "sites", &sites);

		live += !jv_bool(p, "exited");
		total += jv_u64(p, "faults");
		for (size_t k = 0; k < ns; k++) {
			json_object *s = json_object_array_get_idx(sites, k);
			struct row *r = &rows[nrows];
			struct seen key, *old;

			*r = (struct row){
				.pid = jv_i64(p, "pid"), .registered_ms = jv_u64(p, "registered_ms"),
				.pc = jv_u64(s, "faulting_pc"), .module = jv_str(s, "module"),
				.site = s, .comm = jv_str(p, "comm"),
				.kind = jv_str(s, "kind"), .faults = jv_u64(s, "faults"),
				.rate = NAN,
			};
			key = (struct seen){ r->pid, r->registered_ms, r->pc, (char *)r->module, 0 };
			old = t->prev ? bsearch(&key, t->prev, t->num_prev, sizeof(key), cmp_seen) : NULL;
			if (have_rate) {
				/* A site new since the last frame counts from 0. */
				uint64_t before = old ? old->faults : 0;

				r->rate = r->faults >= before ? (double)(r->faults - before) / elapsed : 0;
				total_rate += r->rate;
			}
			now[nrows] = key;
			now[nrows].module = strdup(r->module ? r->module : "");
			now[nrows].faults = r->faults;
			nrows++;
		}
	}
	qsort(rows, nrows, sizeof(*rows), cmp_row);

	if (t->tty) {
		window(&trows, &tcols);
		fputs("\033[H", f);
	} else {
		trows = 0;
		tcols = 0;
	}
	/* Short enough for 80 columns with a rate in the millions. */
	strftime(when, sizeof(when), "%H:%M:%S", localtime(&wall));
	if (have_rate)
		line(f, tcols, "faultline top - %s - %zu process%s (%zu live) - "
		     "%" PRIu64 " fault%s, %.1f/s", when, np, np == 1 ? "" : "es", live, total,
		     CLI_S(total), total_rate);
	else
		line(f, tcols, "faultline top - %s - %zu process%s (%zu live) - "
		     "%" PRIu64 " fault%s", when, np, np == 1 ? "" : "es", live, total, CLI_S(total));
	if (t->tty)
		line(f, tcols, "%s", t->keys ? "q: quit" : "");
	/*
	 * The counts first, so that an 80-column terminal shows them; then
	 * the site's columns in faultline stats's order.
	 */
	line(f, tcols, "%-8s %-15s %10s %12s  %-16s %-24s %-18s %s", "PID", "COMM", "FAULTS/S",
	     "FAULTS", "MODULE+OFFSET", "FUNCTION+OFFSET", "FAULTING PC", "KIND");
	shown = nrows;
	if (t->tty && trows > 4 && shown > (size_t)(trows - 4))
		shown = (size_t)(trows - 4);
	for (size_t i = 0; i < shown; i++) {
		const struct row *r = &rows[i];
		char rate[32], mod[256], fn[256];

		if (isnan(r->rate))
			snprintf(rate, sizeof(rate), "-");
		else
			snprintf(rate, sizeof(rate), "%.1f", r->rate);
		cli_site_where(r->site, mod, sizeof(mod), fn, sizeof(fn));
		line(f, tcols, "%-8" PRId64 " %-15s %10s %12" PRIu64 "  %-16s %-24s 0x%-16" PRIx64
		     " %s", r->pid, cli_safe(r->comm), rate, r->faults, mod, fn, r->pc,
		     cli_safe(r->kind));
	}
	if (!nrows)
		line(f, tcols, "(no sites)");
	if (t->tty)
		fputs("\033[J", f);
	else
		fputc('\n', f);
	fflush(f);

	qsort(now, nrows, sizeof(*now), cmp_seen);
	free_seen(t->prev, t->num_prev);
	t->prev = now;
	t->num_prev = nrows;
	t->prev_time = ts;
	free(rows);
	if (ferror(f))
		return -EIO;
	return 0;
}

enum wake { WAKE_TIMEOUT, WAKE_QUIT, WAKE_REDRAW };

/* Waits up to ms for a key or a signal. */
static enum wake wait_event(struct top *t, int ms)
{
	struct pollfd pfd[2] = {
		{ .fd = t->sfd, .events = POLLIN },
		{ .fd = t->keys ? STDIN_FILENO : -1, .events = POLLIN },
	};
	int n = poll(pfd, 2, ms);

	if (n <= 0)
		return WAKE_TIMEOUT;
	if (pfd[0].revents & POLLIN) {
		struct signalfd_siginfo si;

		while (read(t->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
			if (si.ssi_signo != SIGWINCH)
				return WAKE_QUIT;
		return WAKE_REDRAW;
	}
	if (pfd[1].revents & POLLIN) {
		char c;

		if (read(STDIN_FILENO, &c, 1) != 1)
			return WAKE_QUIT;	/* the terminal went away */
		if (c == 'q' || c == 'Q')
			return WAKE_QUIT;
		return WAKE_REDRAW;
	}
	if (pfd[1].revents & (POLLHUP | POLLERR))
		return WAKE_QUIT;
	return WAKE_TIMEOUT;
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const char top_usage[] =
	"Usage: faultline top [--interval SECONDS] [--iterations N] [--socket PATH]\n"
	"\n"
	"A live view of faultlined's statistics: the sites whose checks failed\n"
	"most since the last refresh (faults per second), and the totals.  On a\n"
	"terminal, q or Ctrl-C quits; otherwise one plain frame per interval.\n";

int cmd_top(int argc, char **argv)
{
	const char *socket = NULL;
	double interval = 2;
	uint64_t iterations = 0;
	const struct cli_opt opts[] = {
		{ "interval", CLI_OPT_DOUBLE, &interval, .lo = 0.05, .hi = 86400,
		  .expect = "seconds from 0.05 to 86400", .arg = "SECONDS",
		  .help = "between refreshes (default 2; fractions allowed)" },
		{ "iterations", CLI_OPT_U64, &iterations, .base = 10, .min = 1,
		  .expect = "a positive number", .arg = "N",
		  .help = "stop after N frames (default: until quit)" },
		CLI_OPT_SOCKET(&socket),
		{ NULL },
	};
	const struct cli_opts cli = { "top", top_usage, NULL, opts };
	struct top t = { .sfd = -1 };
	char path[512];
	int first, ret;

	if ((ret = cli_opts_parse(&cli, argc, argv, &first)) != CLI_OPTS_GO)
		return ret;
	if (first < argc) {
		usage_error("top", "unexpected argument '%s'", argv[first]);
		return EXIT_USAGE;
	}
	if (cli_socket("top", socket, path, sizeof(path)) != 0)
		return 1;
	if ((ret = setup(&t)) < 0) {
		restore(&t);
		fprintf(stderr, "faultline: top: %s\n", strerror(-ret));
		return 1;
	}
	ret = 0;
	for (uint64_t i = 0; !iterations || i < iterations; i++) {
		int64_t deadline = mono_ms() + (int64_t)(interval * 1000);
		struct cli_reply r;
		enum wake w = WAKE_TIMEOUT;
		int err;

		if (cli_query(path, FL_QUERY_STATS, 0, FL_QUERY_FAILED_ONLY, &r) != 0) {
			restore(&t);
			cli_reply_fail("top", &r);
			ret = 1;
			break;
		}
		cli_name_from_perf_maps(r.doc);
		err = frame(&t, r.doc, interval);
		json_object_put(r.doc);
		if (err) {
			restore(&t);
			fprintf(stderr, "faultline: top: %s\n", err == -ENOMEM ? "out of memory" :
				"write error");
			ret = 1;
			break;
		}
		if (iterations && i + 1 == iterations)
			break;
		for (int64_t left; (left = deadline - mono_ms()) > 0;) {
			w = wait_event(&t, (int)left);
			if (w != WAKE_TIMEOUT)
				break;
		}
		if (w == WAKE_QUIT)
			break;
	}
	restore(&t);
	free_seen(t.prev, t.num_prev);
	if (t.sfd >= 0)
		close(t.sfd);
	return ret;
}
