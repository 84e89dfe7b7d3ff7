#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Latency of a remote patch request (make bench-remote-patch, part of make
# bench):
#
#   selftests/bench/remote_patch.sh CLI FAULTLINED PROG [RUNS]
#
# faultlined on a private socket, PROG (selftests/daemon/patch's
# patch-prog, opted in) with 0, then 3 busy threads calling its patch point;
# patch point 7 rewritten RUNS times (default 200), alternating two
# contents, measured three ways: the same change made in the process
# itself (patch-prog's "local": fl_patchpoint_write timed around the call,
# the floor of the other two; once by the main thread, once by another
# thread while the main one waits in the kernel, where it waits while a
# request runs on fl-requests); from the client's POINT message to the
# daemon's REPLY (a raw client on the socket, Python's clock around
# send/recv); and as a whole `faultline patch` run (fork, exec, connect,
# request, print: bash's $EPOCHREALTIME around it, which forks nothing).
# Beside the whole run, /bin/true run the same way: fork, exec and wait,
# which with 3 busy threads on 2 cores is mostly the scheduler's.  Prints
# the medians and p90s.  Nothing waits for a timer: the daemon's
# FUTEX_WAKE of the request doorbell wakes the process's fl-requests
# thread, and its DONE, sent as it pushes the completion, wakes the daemon
# (docs/protocol.md, "Rings"); POINT to REPLY is the change, four wake-ups
# (the daemon twice, the fl-requests thread, the client) and the JSON of
# the answer.  Everything started here is killed at the end.  Runs as root
# (raw bytes are root's).
set -u
CLI=$(realpath "$1")
FLD=$(realpath "$2")
PROG=$(realpath "$3")
RUNS=${4:-200}
[ "$(id -u)" = 0 ] || { echo "remote patch: skipped (raw bytes need root)"; exit 0; }
W=$(mktemp -d /tmp/fl-bench-patch.XXXXXX)
cleanup() {
	local p
	for p in $(jobs -p); do kill -KILL "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$W"
}
trap cleanup EXIT
SOCK=$W/fl.sock
export FAULTLINE_SOCKET=$SOCK FAULTLINE_REGISTER_WAIT_MS=300000
"$FLD" --socket "$SOCK" --state-dir "$W/state" --no-bpf --log-level warn 2>"$W/daemon.log" &
for _ in $(seq 600); do [ -S "$SOCK" ] && break; sleep 0.05; done

# summary THREADS WHAT US...: the median and p90 of the figures.
summary() {
	local t=$1 what=$2
	shift 2
	printf '%s\n' "$@" | sort -n | awk -v t="$t" -v what="$what" -v runs="$RUNS" '
		NF { v[++n] = $1 }
		END {
			if (!n) { print "remote patch, " t " busy threads: " what ": every run failed"; exit }
			p90 = int(n * 0.9); if (p90 < 1) p90 = 1
			printf "remote patch, %s busy threads: %s: median %d us, p90 %d us (%d of %d ok)\n", t, what, v[int((n + 1) / 2)], v[p90], n, runs
		}'
}

for threads in 0 3; do
	mkfifo "$W/in.$threads"
	"$PROG" flag "$threads" <"$W/in.$threads" >"$W/out.$threads" 2>&1 &
	exec 9>"$W/in.$threads"
	for _ in $(seq 600); do grep -q '^ready' "$W/out.$threads" && break; sleep 0.05; done
	pid=$(cut -d' ' -f2 "$W/out.$threads")
	echo "local $RUNS" >&9
	for _ in $(seq 1200); do grep -q '^local ' "$W/out.$threads" && break; sleep 0.05; done
	echo "local-thread $RUNS" >&9
	for _ in $(seq 1200); do [ "$(grep -c '^local ' "$W/out.$threads")" -ge 2 ] && break; sleep 0.05; done
	grep '^local ' "$W/out.$threads" | awk -v t="$threads" -v runs="$RUNS" '
		$2 == "median" { printf "remote patch, %s busy threads: the same change in the process%s: median %.1f us, p90 %.1f us (%d runs)\n", t, NR == 1 ? ", by its main thread" : ", by another thread while the main one waits (as during a request)", $3, $5, runs; next }
		{ print "remote patch, " t " busy threads: " $0 }'
	python3 - "$SOCK" "$pid" "$RUNS" "$threads" <<'PY'
import socket, struct, sys, time
path, pid, runs, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
codes = [bytes.fromhex("48c7c02a000000"), bytes.fromhex("48c7c007000000")]
lat, refused = [], 0
for i in range(runs):
    b = codes[i & 1]
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect(path)
    body = struct.pack("<IIQQQII", pid, 3, 7, 0, 0, len(b), 0) + b
    msg = struct.pack("<IHHII", 0x504C4C46, 1, 18, 16 + len(body), i + 1) + body
    t0 = time.perf_counter()
    s.send(msg)
    r = s.recv(65536)
    t1 = time.perf_counter()
    s.close()
    if struct.unpack_from("<H", r, 6)[0] != 66 or b'"status":0' not in r:
        refused += 1
        continue
    lat.append((t1 - t0) * 1e6)
lat.sort()
if lat:
    print("remote patch, %s busy threads: POINT to REPLY: median %.1f us, p90 %.1f us "
          "(%d runs, %d refused)" % (threads, lat[len(lat) // 2], lat[len(lat) * 9 // 10],
                                    len(lat), refused))
else:
    print("remote patch, %s busy threads: every request refused" % threads)
PY
	# Interleaved with /bin/true run the same way: what fork, exec and
	# the wait cost here, whatever the command.
	whole=()
	floor=()
	for i in $(seq "$RUNS"); do
		b=$([ $((i & 1)) = 1 ] && echo 48c7c02a000000 || echo 48c7c007000000)
		t0=$EPOCHREALTIME
		"$CLI" patch "$pid" --patchpoint 7 --bytes "$b" >/dev/null 2>&1 && t1=$EPOCHREALTIME && \
			whole+=($(( (${t1/./} - ${t0/./}) )))
		t0=$EPOCHREALTIME
		/bin/true
		t1=$EPOCHREALTIME
		floor+=($(( (${t1/./} - ${t0/./}) )))
	done
	summary "$threads" "whole faultline patch run" "${whole[@]}"
	summary "$threads" "/bin/true run the same way" "${floor[@]}"
	exec 9>&-
done
