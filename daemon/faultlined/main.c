// SPDX-License-Identifier: MIT
/*
 * faultlined: options, paths, the listening socket (created here or handed
 * over by systemd socket activation), then the event loop until SIGTERM.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "dlog.h"
#include "requests.h"
#include "safedir.h"
#include "kbpf.h"
#include "http.h"
#include "keeper.h"
#include "session.h"
#include "state.h"
#include "loop.h"
#ifdef FLD_TRANSPORT_TEST
/* The transport tests' build (selftests/daemon/echo.h): PING/PONG. */
#include "echo.h"
#endif

#ifndef FL_VERSION
#define FL_VERSION "unknown"
#endif

#define EXIT_USAGE 2
#define SD_LISTEN_FDS_START 3

struct config {
	const char *socket_path;
	char socket_buf[PATH_MAX];
	const char *state_dir;
	char state_buf[PATH_MAX];
	int no_bpf;
	unsigned max_clients;
	unsigned silent_s;
	uint64_t max_user_sites;
	uint64_t max_user_bytes;
	uint64_t max_user_state_bytes;
	uint64_t heal_arg;	/* FL_REQ_HEAL_THRESHOLD's, 0: none */
	uint32_t unheal_after_s;
	const char *metrics_listen;	/* --metrics-listen, or NULL */
};

static void usage(FILE *out)
{
	fputs("Usage: faultlined [OPTIONS]\n"
	      "\n"
	      "The faultline daemon: processes running faultline register with it over a\n"
	      "Unix socket.  Runs in the foreground and logs to stderr.\n"
	      "\n"
	      "Options:\n"
	      "  --socket PATH        listen on PATH (default: $FAULTLINE_SOCKET, else\n"
	      "                       /run/faultline/faultlined.sock as root and\n"
	      "                       $XDG_RUNTIME_DIR/faultline/faultlined.sock otherwise)\n"
	      "  --state-dir DIR      keep state in DIR (default: /var/lib/faultline as root,\n"
	      "                       else $XDG_STATE_HOME/faultline, $XDG_STATE_HOME\n"
	      "                       defaulting to ~/.local/state)\n"
	      "  --no-bpf             do not load the eBPF program that counts the\n"
	      "                       processes' faults in the kernel (loaded by default\n"
	      "                       when faultlined has CAP_BPF and CAP_PERFMON)\n"
	      "  --log-level LEVEL    error, warn, info (default) or debug\n"
	      "  --max-clients N      serve at most N clients at once (default 4096); one\n"
	      "                       user other than root holds at most half, and the\n"
	      "                       last N/16 are kept for root\n"
	      "  --silent-timeout S   drop a client that is not a registered process once\n"
	      "                       it has neither sent nor been sent a message for S\n"
	      "                       seconds (default 60)\n"
	      "  --max-user-sites N   sites one user other than root may register, over its\n"
	      "                       live processes and the exited ones kept (default\n"
	      "                       4194304); the exited ones make room first\n"
	      "  --max-user-section-bytes N\n"
	      "                       the same for bytes of sections and site names\n"
	      "                       (default 268435456, 256 MiB)\n"
	      "  --max-user-state-bytes N\n"
	      "                       the same for the bytes of its processes' records in\n"
	      "                       the state directory (default 536870912, 512 MiB)\n"
	      "  --heal-after N[/S]   heal a registered process's implicit-check site in\n"
	      "                       place once it fails N times (within S seconds);\n"
	      "                       a policy the process sets itself wins (default:\n"
	      "                       none)\n"
	      "  --unheal-after S     unheal a healed site that has not failed for S\n"
	      "                       seconds (default: never)\n"
	      "  --metrics-listen ADDRESS:PORT\n"
	      "                       serve Prometheus metrics (GET /metrics) over HTTP\n"
	      "                       there, e.g. 127.0.0.1:9464 or [::1]:9464: every\n"
	      "                       process's counts, to whoever can connect (default:\n"
	      "                       off)\n"
	      "  -h, --help           show this help\n"
	      "  --version            show the version\n"
	      "\n"
	      "Under systemd socket activation (LISTEN_FDS, LISTEN_PID) it serves the\n"
	      "socket it is given instead.  FAULTLINED_NO_IO_URING=1 forces the poll(2)\n"
	      "event loop used when io_uring is unavailable (a debugging aid).\n"
	      "\n"
	      "See faultlined(8).\n",
	      out);
}

static void __attribute__((format(printf, 1, 2))) usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("faultlined: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nTry 'faultlined --help' for more information.\n", stderr);
}

static int join(char *buf, size_t size, const char *a, const char *b)
{
	int n = snprintf(buf, size, "%s%s", a, b);

	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

/* Returns 0, or 2 after printing why (usage error). */
static int resolve_paths(struct config *cfg)
{
	int root = geteuid() == 0;
	const char *env;

	if (!cfg->socket_path) {
		env = getenv("FAULTLINE_SOCKET");
		if (env && *env) {
			cfg->socket_path = env;
		} else if (root) {
			cfg->socket_path = "/run/faultline/faultlined.sock";
		} else {
			env = getenv("XDG_RUNTIME_DIR");
			if (!env || env[0] != '/') {
				usage_error("XDG_RUNTIME_DIR is not set (or not absolute): "
					    "give the socket with --socket or $FAULTLINE_SOCKET");
				return EXIT_USAGE;
			}
			if (join(cfg->socket_buf, sizeof(cfg->socket_buf), env,
				 "/faultline/faultlined.sock") < 0) {
				usage_error("XDG_RUNTIME_DIR is too long");
				return EXIT_USAGE;
			}
			cfg->socket_path = cfg->socket_buf;
		}
	}
	if (!cfg->state_dir) {
		if (root) {
			cfg->state_dir = "/var/lib/faultline";
		} else if ((env = getenv("XDG_STATE_HOME")) && env[0] == '/') {
			if (join(cfg->state_buf, sizeof(cfg->state_buf), env, "/faultline") < 0) {
				usage_error("XDG_STATE_HOME is too long");
				return EXIT_USAGE;
			}
			cfg->state_dir = cfg->state_buf;
		} else if ((env = getenv("HOME")) && env[0] == '/') {
			if (join(cfg->state_buf, sizeof(cfg->state_buf), env,
				 "/.local/state/faultline") < 0) {
				usage_error("HOME is too long");
				return EXIT_USAGE;
			}
			cfg->state_dir = cfg->state_buf;
		} else {
			usage_error("neither XDG_STATE_HOME nor HOME is set: give --state-dir");
			return EXIT_USAGE;
		}
	}
	return 0;
}

/*
 * The directory that holds path, created if missing and checked
 * (safedir.c).  Returns its descriptor, or -1 after logging.
 */
static int socket_dir(const char *path)
{
	char dir[PATH_MAX], why[PATH_MAX + 128];
	char *slash;
	int fd;

	if (strlen(path) >= sizeof(dir)) {
		fld_err("%s: path too long", path);
		return -1;
	}
	strcpy(dir, path);
	slash = strrchr(dir, '/');
	if (!slash) {
		fld_err("%s: the socket path must be absolute", path);
		return -1;
	}
	if (slash == dir)
		slash[1] = 0;
	else
		*slash = 0;
	fd = fld_safedir_open(dir, 0755, true, why, sizeof(why));
	if (fd < 0)
		fld_err("%s: its directory is not safe to serve from: %s", path, why);
	return fd;
}

/* fd 3 from systemd: returns it, 0 when not activated, or -1 after logging. */
static int activated_socket(void)
{
	const char *pid_s = getenv("LISTEN_PID"), *fds_s = getenv("LISTEN_FDS");
	int fd = SD_LISTEN_FDS_START, type = 0, domain = 0, listening = 0;
	socklen_t len;
	char *end;
	long pid, n;

	if (!pid_s || !fds_s)
		return 0;
	errno = 0;
	pid = strtol(pid_s, &end, 10);
	if (errno || *end || pid != (long)getpid())
		return 0;
	n = strtol(fds_s, &end, 10);
	if (errno || *end || n < 1)
		return 0;
	/* As sd_listen_fds(1): children must not think the sockets are theirs. */
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	if (n > 1)
		fld_warn("socket activation: %ld sockets passed; serving only fd 3", n);
	len = sizeof(type);
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0) {
		fld_err("socket activation: fd 3 is not a listening AF_UNIX SOCK_SEQPACKET "
			"socket: %s", strerror(errno));
		return -1;
	}
	len = sizeof(domain);
	getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len);
	len = sizeof(listening);
	getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len);
	if (domain != AF_UNIX || type != SOCK_SEQPACKET || !listening) {
		fld_err("socket activation: fd 3 is not a listening AF_UNIX SOCK_SEQPACKET socket "
			"(use ListenSequentialPacket= in the socket unit)");
		return -1;
	}
	fcntl(fd, F_SETFD, FD_CLOEXEC);
	return fd;
}

/*
 * Creates, binds and listens.  A socket file left by a daemon that died is
 * removed, but only when nothing answers on it.  Returns the fd, or -1
 * after logging; *ino is the socket file's inode.
 */
static int listen_on(const char *path, ino_t *ino)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	mode_t old_mask;
	int fd, err, dir;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		fld_err("%s: socket path longer than %zu bytes", path, sizeof(sa.sun_path) - 1);
		return -1;
	}
	strcpy(sa.sun_path, path);
	dir = socket_dir(path);
	if (dir < 0)
		return -1;
	close(dir);
	if (lstat(path, &st) == 0) {
		int probe, r;

		if (!S_ISSOCK(st.st_mode)) {
			fld_err("%s exists and is not a socket: not touching it", path);
			return -1;
		}
		if (st.st_uid != geteuid()) {
			fld_err("%s is a socket of uid %u, not of faultlined's uid %u: not "
				"touching it", path, (unsigned)st.st_uid, (unsigned)geteuid());
			return -1;
		}
		/*
		 * A daemon just killed may still answer for a few milliseconds
		 * (io_uring releases its files after the process is gone):
		 * only one that keeps answering for a second is alive.
		 */
		for (int i = 0; i < 20; i++) {
			probe = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
			if (probe < 0) {
				fld_err("socket: %s", strerror(errno));
				return -1;
			}
			r = connect(probe, (struct sockaddr *)&sa, sizeof(sa));
			close(probe);
			if (r != 0 && errno != EAGAIN)
				break;
			usleep(50000);
		}
		if (r == 0 || errno == EAGAIN) {
			fld_err("another faultlined is listening on %s: not starting", path);
			return -1;
		}
		if (errno != ECONNREFUSED) {
			fld_err("%s: %s: something else owns it: not starting", path,
				strerror(errno));
			return -1;
		}
		fld_info("%s: removing a stale socket (nothing listens on it)", path);
		if (unlink(path) < 0 && errno != ENOENT) {
			fld_err("%s: %s", path, strerror(errno));
			return -1;
		}
	}
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		fld_err("socket: %s", strerror(errno));
		return -1;
	}
	/*
	 * Any process may register itself (each request is checked with
	 * SO_PEERCRED): the socket is 0666.  The mode comes from the umask at
	 * bind, not from a chmod of the path afterwards, which would follow
	 * whatever stands at the path by then.
	 */
	old_mask = umask(0111);
	err = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old_mask);
	if (err < 0) {
		fld_err("%s: bind: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	if (lstat(path, &st) < 0 || listen(fd, SOMAXCONN) < 0) {
		fld_err("%s: %s", path, strerror(errno));
		unlink(path);
		close(fd);
		return -1;
	}
	*ino = st.st_ino;
	return fd;
}

/*
 * The listening socket the keeper held (keeper.h), when it listens on
 * path in a directory still safe to serve from: returns it with *ino the
 * socket file's inode, or -1 (fd closed).
 */
static int kept_socket(int fd, const char *path, ino_t *ino)
{
	struct sockaddr_un sa;
	socklen_t len = sizeof(sa);
	struct stat st;
	int dir;

	if (fd < 0)
		return -1;
	memset(&sa, 0, sizeof(sa));
	if (getsockname(fd, (struct sockaddr *)&sa, &len) != 0 || sa.sun_family != AF_UNIX ||
	    strncmp(sa.sun_path, path, sizeof(sa.sun_path)) != 0 ||
	    lstat(path, &st) != 0 || !S_ISSOCK(st.st_mode) || st.st_uid != geteuid() ||
	    (dir = socket_dir(path)) < 0) {
		close(fd);
		return -1;
	}
	close(dir);
	fcntl(fd, F_SETFD, FD_CLOEXEC);
	*ino = st.st_ino;
	return fd;
}

/* Room for max_clients sockets and the daemon's own files. */
static void raise_nofile(unsigned max_clients)
{
	struct rlimit rl;
	rlim_t want = (rlim_t)max_clients + 64;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= want)
		return;
	rl.rlim_cur = rl.rlim_max < want ? rl.rlim_max : want;
	setrlimit(RLIMIT_NOFILE, &rl);
	if (rl.rlim_cur < want)
		fld_warn("RLIMIT_NOFILE is %llu: fewer than --max-clients %u clients fit",
			 (unsigned long long)rl.rlim_cur, max_clients);
}

static void lib_log(enum fl_log_level level, const char *msg, void *ctx)
{
	(void)ctx;
	fld_log(level, "libfaultline: %s", msg);
}

int main(int argc, char **argv)
{
	enum { OPT_SOCKET = 256, OPT_STATE_DIR, OPT_NO_BPF, OPT_LOG_LEVEL, OPT_MAX_CLIENTS,
	       OPT_SILENT, OPT_USER_SITES, OPT_USER_BYTES, OPT_USER_STATE, OPT_HEAL_AFTER, OPT_UNHEAL_AFTER,
	       OPT_VERSION, OPT_METRICS_LISTEN };
	static const struct option longopts[] = {
		{ "socket", required_argument, NULL, OPT_SOCKET },
		{ "state-dir", required_argument, NULL, OPT_STATE_DIR },
		{ "no-bpf", no_argument, NULL, OPT_NO_BPF },
		{ "log-level", required_argument, NULL, OPT_LOG_LEVEL },
		{ "max-clients", required_argument, NULL, OPT_MAX_CLIENTS },
		{ "silent-timeout", required_argument, NULL, OPT_SILENT },
		{ "max-user-sites", required_argument, NULL, OPT_USER_SITES },
		{ "max-user-section-bytes", required_argument, NULL, OPT_USER_BYTES },
		{ "max-user-state-bytes", required_argument, NULL, OPT_USER_STATE },
		{ "heal-after", required_argument, NULL, OPT_HEAL_AFTER },
		{ "unheal-after", required_argument, NULL, OPT_UNHEAL_AFTER },
		{ "metrics-listen", required_argument, NULL, OPT_METRICS_LISTEN },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ NULL, 0, NULL, 0 },
	};
	struct config cfg = { .max_clients = 4096, .silent_s = 60,
			      .max_user_sites = 4u << 20, .max_user_bytes = 256u << 20,
			      .max_user_state_bytes = 512u << 20 };
	struct fld_loop_opts lopts = { .sz = sizeof(lopts) };
	struct fld_loop *loop;
	ino_t ino = 0;
	char why[PATH_MAX + 128];
	int opt, lfd, err, level, activated, state_fd, status = 0, kept_lfd = -1;
	bool bpf;
	char *end;
	long v;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (opt) {
		case OPT_SOCKET:
			if (!*optarg) {
				usage_error("--socket: empty path");
				return EXIT_USAGE;
			}
			cfg.socket_path = optarg;
			break;
		case OPT_STATE_DIR:
			if (!*optarg) {
				usage_error("--state-dir: empty path");
				return EXIT_USAGE;
			}
			cfg.state_dir = optarg;
			break;
		case OPT_NO_BPF:
			cfg.no_bpf = 1;
			break;
		case OPT_METRICS_LISTEN: {
			const char *bad;

			if (fld_http_check(optarg, &bad) != 0) {
				usage_error("--metrics-listen: '%s': %s", optarg, bad);
				return EXIT_USAGE;
			}
			cfg.metrics_listen = optarg;
			break;
		}
		case OPT_LOG_LEVEL:
			level = fld_log_parse_level(optarg);
			if (level < 0) {
				usage_error("--log-level: '%s' is not error, warn, info or debug",
					    optarg);
				return EXIT_USAGE;
			}
			fld_log_set_level((enum fl_log_level)level);
			break;
		case OPT_MAX_CLIENTS:
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || v < 1 || v > 1000000) {
				usage_error("--max-clients: '%s' is not a number from 1 to 1000000",
					    optarg);
				return EXIT_USAGE;
			}
			cfg.max_clients = (unsigned)v;
			break;
		case OPT_SILENT:
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || v < 1 || v > 86400) {
				usage_error("--silent-timeout: '%s' is not a number of seconds from "
					    "1 to 86400", optarg);
				return EXIT_USAGE;
			}
			cfg.silent_s = (unsigned)v;
			break;
		case OPT_HEAL_AFTER: {
			unsigned long long n, w = 0;

			errno = 0;
			n = strtoull(optarg, &end, 10);
			if (!errno && end != optarg && *end == '/' && end[1] && end[1] != '-')
				w = strtoull(end + 1, &end, 10);
			if (errno || end == optarg || *end || optarg[0] == '-' || n < 1 ||
			    n > UINT32_MAX || w > 0x7fffffffu) {
				usage_error("--heal-after: '%s' is not N or N/SECONDS (N from 1 to "
					    "%u, SECONDS up to %u)", optarg, UINT32_MAX, 0x7fffffffu);
				return EXIT_USAGE;
			}
			cfg.heal_arg = n | w << 32 | FL_HEAL_DEFAULT;
			break;
		}
		case OPT_UNHEAL_AFTER:
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || v < 1 || v > UINT32_MAX) {
				usage_error("--unheal-after: '%s' is not a number of seconds from 1 "
					    "to %u", optarg, UINT32_MAX);
				return EXIT_USAGE;
			}
			cfg.unheal_after_s = (uint32_t)v;
			break;
		case OPT_USER_SITES:
		case OPT_USER_BYTES:
		case OPT_USER_STATE: {
			unsigned long long u;

			errno = 0;
			u = strtoull(optarg, &end, 10);
			if (errno || end == optarg || *end || optarg[0] == '-' || u < 1 ||
			    u > (1ull << 48)) {
				usage_error("%s: '%s' is not a number from 1 to 2^48",
					    opt == OPT_USER_SITES ? "--max-user-sites" :
					    opt == OPT_USER_BYTES ? "--max-user-section-bytes" :
					    "--max-user-state-bytes", optarg);
				return EXIT_USAGE;
			}
			if (opt == OPT_USER_SITES)
				cfg.max_user_sites = u;
			else if (opt == OPT_USER_BYTES)
				cfg.max_user_bytes = u;
			else
				cfg.max_user_state_bytes = u;
			break;
		}
		case 'h':
			usage(stdout);
			return 0;
		case OPT_VERSION:
			printf("faultlined %s\n", FL_VERSION);
			return 0;
		case ':':
			usage_error("option '%s' needs an argument", argv[optind - 1]);
			return EXIT_USAGE;
		default:
			usage_error("unknown option '%s'", argv[optind - 1]);
			return EXIT_USAGE;
		}
	}
	if (optind < argc) {
		usage_error("unexpected argument '%s'", argv[optind]);
		return EXIT_USAGE;
	}
	fl_set_log(lib_log, NULL);
	signal(SIGPIPE, SIG_IGN);

	activated = activated_socket();
	if (activated < 0)
		return 1;
	if ((err = resolve_paths(&cfg)))
		return err;
	raise_nofile(cfg.max_clients);
	state_fd = fld_safedir_open(cfg.state_dir, geteuid() == 0 ? 0755 : 0700, true, why,
				    sizeof(why));
	if (state_fd < 0) {
		fld_err("--state-dir %s: %s", cfg.state_dir, why);
		return 1;
	}
	{
		struct stat st;

		/*
		 * Sticky is not enough here: another user could take the
		 * state file's names first (and a hard link to a file of
		 * ours would be read as the state).
		 */
		if (fstat(state_fd, &st) != 0 || (st.st_mode & (S_IWGRP | S_IWOTH))) {
			fld_err("--state-dir %s: writable by other users (mode %04o): the state "
				"directory must be the daemon's alone", cfg.state_dir,
				(unsigned)(st.st_mode & 07777));
			close(state_fd);
			return 1;
		}
	}
#ifndef FLD_TRANSPORT_TEST
	{
		struct fld_session_opts so = {
			.max_exited = 256,
			.max_modules = 4096,
			/* What one process may make the daemon hold (parsed: ~4x). */
			.max_section_bytes = 64u << 20,
			.max_sites = 1u << 21,
			.max_user_sites = cfg.max_user_sites,
			.max_user_bytes = cfg.max_user_bytes,
			.max_user_state_bytes = cfg.max_user_state_bytes,
			.request_timeout_ms = 2000,
			.state_dir = cfg.state_dir,
		};

		struct fld_kept *kept;
		size_t nkept;

		/* Before listening: a process registering now finds its old entry. */
		fld_session_init(&so);
		err = fld_state_load(state_fd, cfg.state_dir);
		if (err < 0)
			fld_warn("state: %s: %s; nothing will be persisted", cfg.state_dir,
				 strerror(-err));
		/* And the regions the keeper held, with the listening socket. */
		err = fld_keeper_start(state_fd, &kept_lfd, &kept, &nkept);
		if (err == -EBUSY) {
			fld_err("--state-dir %s: another faultlined uses it (its keeper serves that "
				"one): not starting", cfg.state_dir);
			close(state_fd);
			return 1;
		}
		if (err)
			fld_warn("keeper: %s: going on without one (a daemon killed loses the "
				 "counts of the processes that exit before it is back)",
				 strerror(-err));
		fld_session_adopt(kept, nkept);
		free(kept);
	}
#endif
	if (activated) {
		lfd = activated;
		if (kept_lfd >= 0)
			close(kept_lfd);
	} else if ((lfd = kept_socket(kept_lfd, cfg.socket_path, &ino)) >= 0) {
		fld_info("%s: the listening socket the keeper held (connections made while no "
			 "daemon ran are waiting on it)", cfg.socket_path);
	} else {
		lfd = listen_on(cfg.socket_path, &ino);
		if (lfd < 0)
			return 1;
	}
#ifndef FLD_TRANSPORT_TEST
	fld_keeper_listen(lfd);
#endif

	lopts.max_clients = cfg.max_clients;
	lopts.root_reserve = cfg.max_clients >= 2 ? (cfg.max_clients / 16 ? cfg.max_clients / 16 : 1)
						  : 0;
	lopts.silent_ms = cfg.silent_s * 1000;
	/*
	 * A process tells of its completions itself (DONE, requests.c); the
	 * tick is the net under that (a DONE that found no room, an older
	 * agent) and times requests out: what it catches waits 50 ms at most.
	 */
	lopts.tick_ms = 50;
#ifdef FLD_TRANSPORT_TEST
	/* The transport tests' build: PING/PONG instead of the protocol. */
	err = fld_loop_new(lfd, &fld_echo_ops, NULL, &lopts, &loop);
#else
	err = fld_loop_new(lfd, &fld_session_ops, NULL, &lopts, &loop);
#endif
	if (err < 0) {
		fld_err("event loop: %s", strerror(-err));
		status = 1;
		goto out;
	}
#ifdef FLD_TRANSPORT_TEST
	bpf = false;
#else
	bpf = fld_bpf_start(loop, !cfg.no_bpf);
	err = fld_requests_start(loop);
	if (err < 0)
		fld_warn("requests' answers wait for the loop's tick: %s", strerror(-err));
	fld_requests_policy(cfg.heal_arg, cfg.unheal_after_s);
	if (cfg.metrics_listen && fld_http_start(loop, cfg.metrics_listen) != 0) {
		status = 1;
		goto stop;
	}
#endif
	fld_info("faultlined %s: listening on %s%s (%s loop, state in %s, eBPF %s)", FL_VERSION,
		 activated ? "fd 3" : cfg.socket_path,
		 activated ? " from socket activation" : "", fld_loop_backend(loop),
		 cfg.state_dir, bpf ? "on" : "off");
	if (fld_loop_run(loop) < 0)
		status = 1;
#ifndef FLD_TRANSPORT_TEST
stop:
	fld_http_stop();
#endif
	/* Every client goes: the processes exit (for this daemon), then are saved. */
#ifndef FLD_TRANSPORT_TEST
	fld_requests_stop();
#endif
	fld_loop_free(loop);
#ifndef FLD_TRANSPORT_TEST
	fld_session_stop();
	fld_state_save();
#endif
#ifndef FLD_TRANSPORT_TEST
	fld_bpf_stop();
#endif
out:
#ifndef FLD_TRANSPORT_TEST
	/* Stopped on purpose (or failed to start): nothing is kept for a next daemon. */
	fld_keeper_stop();
#endif
	if (!activated) {
		struct stat st;

		/* Only the file this daemon bound: another may have replaced it. */
		if (stat(cfg.socket_path, &st) == 0 && st.st_ino == ino)
			unlink(cfg.socket_path);
	}
	close(lfd);
	close(state_fd);
	return status;
}
