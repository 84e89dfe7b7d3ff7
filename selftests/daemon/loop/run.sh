#!/bin/bash
# faultlined's event loop, end to end (make check-daemon-loop):
#   run.sh FAULTLINED OUTDIR
# Everything but socket activation runs twice: on io_uring, then on the
# poll(2) fallback (FAULTLINED_NO_IO_URING=1).  Daemon logs: OUTDIR/*.log.
# Waits are for events (a log line, an answer), up to WAIT_S: a slow
# machine only makes the test slower.  Every process started here is
# killed when the script ends, however it ends.
set -u
echo "kernel: $(uname -r) (${VMTEST_WHERE:-host})"
FLD=$(realpath "$1")
OUT=$(realpath -m "$2")
C=$OUT/loopclient
mkdir -p "$OUT"
# A short directory: a socket path has at most 107 bytes.
T=$(mktemp -d /tmp/fld-loop.XXXXXX)
S=$T/d.sock
DPID=
PRE=     # a command to start the daemon under (prlimit)
EXTRA=   # more daemon options
passed=0
failed=0
# WAIT_S and eventually.
. "$(dirname "$0")/../wait.sh"

# Every job still running (daemons, clients), then the directory.
cleanup() {
	local p
	for p in $(jobs -p); do kill -KILL "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

ok() { echo "  ok   $*"; passed=$((passed + 1)); }
bad() { echo "  FAIL $*"; failed=$((failed + 1)); }

# check NAME CMD...: CMD exits 0 and prints the detail.
check() {
	local name=$1 out
	shift
	if out=$("$@" 2>&1); then ok "$name: $out"; else bad "$name: $out"; fi
}

# start MODE LOG [ENV...]: the daemon on $S, in the background, as $DPID.
start() {
	local mode=$1 log=$2
	shift 2
	local envs=("$@")
	[ "$mode" = poll ] && envs+=(FAULTLINED_NO_IO_URING=1)
	# Removed here, not only truncated by the shell in the child: an
	# earlier run's log says "listening on" already, and read before the
	# child truncates it let the test on before the daemon had bound.
	rm -f "$log"
	$PRE env "${envs[@]}" "$FLD" --socket "$S" --state-dir "$T/state" --log-level debug \
		$EXTRA 2>"$log" &
	DPID=$!
	eventually listening "$log" && return 0
	bad "$mode: daemon did not start listening on $S: $(cat "$log")"
	kill -KILL "$DPID" 2>/dev/null
	wait "$DPID" 2>/dev/null
	DPID=
	return 1
}

# listening LOG: the daemon said so, or it is gone (no use waiting).
listening() {
	grep -q "listening on" "$1" || ! kill -0 "$DPID" 2>/dev/null
}

# stop: SIGTERM; sets rc to the daemon's exit status.
stop() {
	kill -TERM "$DPID"
	wait "$DPID"
	rc=$?
	DPID=
}

nfds() { ls "/proc/$DPID/fd" | wc -l; }
fds_at_most() { [ "$(nfds)" -le "$1" ]; }
rss_kib() { awk '/^VmRSS/ { print $2 }' "/proc/$DPID/status"; }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$DPID/stat"; }

# wait_log LOG PATTERN: the daemon logs PATTERN (within WAIT_S).
wait_log() {
	eventually grep -q -- "$2" "$1"
}

suite() {
	local mode=$1 log=$OUT/$1.log before after i pids
	echo "-- $mode loop"
	start "$mode" "$log" || return
	grep -q "($mode loop" "$log" && ok "$mode: daemon says it runs the $mode loop" ||
		bad "$mode: wrong loop: $(head -1 "$log")"
	[ "$(stat -c %a "$S")" = 666 ] && ok "$mode: socket mode 0666" ||
		bad "$mode: socket mode $(stat -c %a "$S")"

	check "$mode: ping" "$C" ping "$S" 100
	check "$mode: 1000 concurrent clients" "$C" many "$S" 1000

	"$C" flood "$S" >"$T/flood.out" 2>&1 &
	local flood=$!
	check "$mode: others served during a flood" "$C" ping "$S" 200
	if wait $flood; then ok "$mode: $(cat "$T/flood.out")"; else bad "$mode: $(cat "$T/flood.out")"; fi
	grep -q "flooding: over" "$log" && ok "$mode: flood logged" || bad "$mode: no flood log line"

	check "$mode: oversized message" "$C" big "$S" 70000
	grep -q "exceeds the limit of 65536" "$log" && ok "$mode: oversized message logged" ||
		bad "$mode: no oversized log line"
	check "$mode: served after the oversized message" "$C" ping "$S"

	before=$(nfds)
	check "$mode: descriptors passed" "$C" fds "$S" 4 100
	check "$mode: too many descriptors" "$C" fds "$S" 10
	# Closed when the daemon has seen those clients go.
	eventually fds_at_most "$before"
	after=$(nfds)
	[ "$after" -le "$before" ] && ok "$mode: passed descriptors closed ($before open before, $after after)" ||
		bad "$mode: daemon had $before descriptors, now $after"
	grep -q "control data truncated" "$log" && ok "$mode: truncated control data logged" ||
		bad "$mode: no truncation log line"

	before=$(rss_kib)
	pids=
	for i in $(seq 20); do
		"$C" noread "$S" 5000 >"$T/noread.$i" 2>&1 &
		pids="$pids $!"
	done
	local nfail=0
	for i in $pids; do wait "$i" || nfail=$((nfail + 1)); done
	after=$(rss_kib)
	[ $nfail = 0 ] && ok "$mode: 20 clients not reading dropped ($(cat "$T/noread.1"))" ||
		bad "$mode: $nfail clients not reading were not dropped: $(cat "$T"/noread.* | grep FAIL | head -1)"
	[ $((after - before)) -lt 32768 ] && ok "$mode: memory bounded (RSS $before -> $after KiB)" ||
		bad "$mode: RSS grew from $before to $after KiB"
	grep -q "not reading: .* queued: dropped" "$log" && ok "$mode: slow reader logged" ||
		bad "$mode: no slow reader log line"
	check "$mode: served after the slow readers" "$C" ping "$S" 10

	timeout "$WAIT_S" "$FLD" --socket "$S" --state-dir "$T/state" >"$T/second.out" 2>&1
	i=$?
	[ $i = 1 ] && grep -q "another faultlined is listening" "$T/second.out" &&
		ok "$mode: second daemon refuses to start" ||
		bad "$mode: second daemon: exit $i: $(cat "$T/second.out")"
	check "$mode: first daemon still serves" "$C" ping "$S"

	stop
	[ $rc = 0 ] && ok "$mode: SIGTERM: exit 0" || bad "$mode: SIGTERM: exit $rc"
	[ ! -e "$S" ] && ok "$mode: socket removed" || bad "$mode: socket left behind"

	# kill -9 leaves the socket file: the next daemon replaces it.
	start "$mode" "$log.2" || return
	kill -KILL "$DPID"
	wait "$DPID" 2>/dev/null
	DPID=
	[ -S "$S" ] || bad "$mode: no socket file after kill -9"
	start "$mode" "$log.3" || return
	grep -q "removing a stale socket" "$log.3" && ok "$mode: stale socket replaced" ||
		bad "$mode: stale socket: $(cat "$log.3")"
	check "$mode: served on the replaced socket" "$C" ping "$S"
	stop

	# Out of descriptors: accepting pauses a tick at a time, no busy loop.
	PRE="prlimit --nofile=24:24"
	start "$mode" "$log.4" || { PRE=; return; }
	PRE=
	before=$(cpu_ticks)
	# Centiseconds since boot: busybox's date (the QEMU guest) has no %N.
	t0=$(awk '{ printf "%d", $1 * 100 }' /proc/uptime)
	check "$mode: connections past RLIMIT_NOFILE" "$C" hold "$S" 60 3
	after=$(cpu_ticks)
	# The daemon's CPU time against the time that passed meanwhile (at
	# least the 3 s held): a busy loop takes all of a CPU it can get.
	# USER_HZ is 100 on x86-64; busybox (the QEMU guest) has no getconf.
	hz=$(getconf CLK_TCK 2>/dev/null) || hz=100
	wall=$((($(awk '{ printf "%d", $1 * 100 }' /proc/uptime) - t0) * hz / 100))
	wait_log "$log.4" "Too many open files: not accepting until the next tick" &&
		ok "$mode: EMFILE pauses accepting" || bad "$mode: no EMFILE log line"
	[ $((2 * (after - before))) -lt "$wall" ] &&
		ok "$mode: no busy loop on EMFILE ($((after - before)) of $wall clock ticks on the CPU)" ||
		bad "$mode: $((after - before)) of $wall clock ticks on the CPU at EMFILE"
	check "$mode: served after EMFILE" "$C" ping "$S"
	stop

	EXTRA="--max-clients 5"
	start "$mode" "$log.5" || { EXTRA=; return; }
	EXTRA=
	# Five connected (accepted in order, before the next), held until killed.
	"$C" hold "$S" 5 >"$T/hold.out" &
	i=$!
	eventually grep -q "^holding 5" "$T/hold.out" || bad "$mode: hold: $(cat "$T/hold.out")"
	out=$("$C" ping "$S" 2>&1) && bad "$mode: client past --max-clients served: $out" ||
		ok "$mode: client past --max-clients refused"
	wait_log "$log.5" "5 clients: refusing new connections" &&
		ok "$mode: --max-clients logged" || bad "$mode: no --max-clients log line"
	kill "$i"
	wait "$i" 2>/dev/null
	# Once the daemon has seen them go.
	eventually "$C" ping "$S" >/dev/null 2>&1 && ok "$mode: served after the others left" ||
		bad "$mode: not served after the others left: $("$C" ping "$S" 2>&1)"
	stop
}

suite io_uring
suite poll

echo "-- socket activation"
if [ -x /usr/bin/systemd-socket-activate ]; then
	log=$OUT/activation.log
	rm -f "$log"
	systemd-socket-activate --seqpacket -l "$S" "$FLD" --state-dir "$T/state" \
		--log-level debug 2>"$log" &
	DPID=$!
	check "activated: ping" "$C" ping "$S" 10
	grep -q "listening on fd 3 from socket activation" "$log" &&
		ok "activated: serves fd 3" || bad "activated: $(cat "$log")"
	stop
	[ $rc = 0 ] && ok "activated: SIGTERM: exit 0" || bad "activated: exit $rc"
	[ -S "$S" ] && ok "activated: socket file left to the activator" ||
		bad "activated: socket file removed"
	rm -f "$S"
else
	echo "  skip activation: no /usr/bin/systemd-socket-activate (package systemd)"
fi
out=$(LISTEN_FDS=1 timeout "$WAIT_S" sh -c 'LISTEN_PID=$$ exec "$0" --state-dir "$1" 3</dev/null' \
	"$FLD" "$T/state" 2>&1)
i=$?
[ $i = 1 ] && grep -q "not a listening AF_UNIX SOCK_SEQPACKET" <<<"$out" &&
	ok "activated with a file, not a socket: refused" || bad "bad fd 3: exit $i: $out"

echo "-- options"
out=$("$FLD" --bogus 2>&1); i=$?
[ $i = 2 ] && grep -q "^faultlined: unknown option '--bogus'" <<<"$out" &&
	ok "unknown option: exit 2" || bad "unknown option: exit $i: $out"
out=$("$FLD" --log-level loud 2>&1); i=$?
[ $i = 2 ] && ok "bad --log-level: exit 2" || bad "bad --log-level: exit $i: $out"
out=$("$FLD" --max-clients 0 2>&1); i=$?
[ $i = 2 ] && ok "bad --max-clients: exit 2" || bad "bad --max-clients: exit $i: $out"
out=$("$FLD" --socket 2>&1); i=$?
[ $i = 2 ] && ok "--socket without a path: exit 2" || bad "--socket: exit $i: $out"
asuser=
[ "$(id -u)" = 0 ] && asuser="setpriv --reuid=65534 --regid=65534 --clear-groups"
# setpriv before timeout: busybox's timeout (the QEMU guest) runs its own
# setpriv applet, which lacks --reuid, rather than util-linux's.
out=$(env -u FAULTLINE_SOCKET -u XDG_RUNTIME_DIR $asuser timeout "$WAIT_S" "$FLD" \
	--state-dir /tmp 2>&1); i=$?
[ $i = 2 ] && grep -q XDG_RUNTIME_DIR <<<"$out" && ok "not root, no XDG_RUNTIME_DIR: exit 2" ||
	bad "no XDG_RUNTIME_DIR: exit $i: $out"
"$FLD" --help | grep -q -- "--no-bpf" && ok "--help" || bad "--help"
"$FLD" --version | grep -q "^faultlined " && ok "--version" || bad "--version"

echo "daemon loop: $passed passed, $failed failed"
[ $failed = 0 ]
