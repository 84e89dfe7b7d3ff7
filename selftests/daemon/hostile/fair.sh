#!/bin/bash
# One user's load against everyone else's, as nobody against root's daemon,
# the way an attacker did it: two processes of nobody's register 2,000,000
# sites each (within the per-process limits) and exit.
#
#   - while the daemon still writes nobody's records, root's faultline stats
#     is answered and a root program under the shim registers (the daemon's
#     log says so before it says nobody's records are written): the work on
#     one user's data is done a slice at a time, users in turn;
#   - root's counts are exact, nobody's too; stats about every process lists
#     4,096 of a process's sites and counts the others;
#   - the daemon stays small (no JSON document of everything is built), and
#     each exit writes that process's record only;
#   - nobody's next processes make room by dropping its exited ones, and one
#     over its budget of sites (or of section bytes) is refused with an
#     ERROR that says so, and stays registered; the daemon says so once;
#     root is not held to the budget;
#   - after a restart the records are read back: nobody's 2,000,000-site
#     processes and root's, with their counts.
# Nothing here is timed: what happens first is read from the daemon's log.
#
#   fair.sh FAULTLINE FAULTLINED PRELOAD MANYSITES PROG
set -u
. "$(dirname "$0")/../wait.sh"

FLD=$(realpath "$2")
PRELOAD=$(realpath "$3")
PROG=$(realpath "$5")
PY=/usr/bin/python3
NOBODY=65534
# Under /tmp, where nobody reaches its own files; nobody runs copies.
W=$(mktemp -d /tmp/fl-fair.XXXXXX) || exit 1
chmod 755 "$W"
cp "$1" "$W/faultline" && cp "$4" "$W/manysites" && chmod 755 "$W/faultline" "$W/manysites"
FL=$W/faultline
MANY=$W/manysites

SUITE="daemon fair"
. "$(dirname "$0")/harness.sh"

echo "kernel: $(uname -r) (${VMTEST_WHERE:-host})"

# daemon NAME [OPTIONS...]: faultlined on $W/NAME.sock, state in
# $W/NAME.state, log $W/NAME.log; waits until it listens.
daemon() {
	local name=$1
	shift
	rm -f "$W/$name.log"
	"$FLD" --socket "$W/$name.sock" --state-dir "$W/$name.state" --log-level debug "$@" \
		>"$W/$name.log" 2>&1 &
	DPID=$!
	PIDS+=($DPID)
	eventually grep -q "listening on" "$W/$name.log" ||
		bad "$name: faultlined did not start (log $W/$name.log)"
}
stop_daemon() {
	kill -TERM "$DPID" 2>/dev/null
	wait "$DPID" 2>/dev/null
}

# many NAME SOCK SITES MODULES SECTIONS hold|exit: nobody's manysites,
# output in $W/NAME.out, its pid in MPID.
many() {
	local name=$1 sock=$2
	shift 2
	setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups "$MANY" "$sock" "$1" "$2" "$3" 0 \
		"$4" >"$W/$name.out" 2>&1 &
	MPID=$!
	PIDS+=($MPID)
}
registered() { grep -q "^registered pid\|^FAIL" "$W/$1.out"; }

# line_of PATTERN LOG: the number of the first line of LOG matching PATTERN (or 999999999).
line_of() { grep -n -m1 -- "$1" "$2" | cut -d: -f1 | grep . || echo 999999999; }
last_line_of() { grep -n -- "$1" "$2" | tail -1 | cut -d: -f1 | grep . || echo 0; }

# The sum of i % 7 for i below 2,000,000: manysites's counters.
NOBODY_FAULTS=5999995

echo "# nobody registers 2,000,000 sites twice; both exit"
daemon fair
many n1 "$W/fair.sock" 2000000 1 0 hold
n1=$MPID
many n2 "$W/fair.sock" 2000000 1 0 hold
n2=$MPID
eventually registered n1
eventually registered n2
check "nobody's first process registered its 2,000,000 sites" \
	grep -q "^registered pid $n1: 1 of 1 modules (2000000 sites)" "$W/n1.out"
check "nobody's second process registered its 2,000,000 sites" \
	grep -q "^registered pid $n2: 1 of 1 modules (2000000 sites)" "$W/n2.out"
kill -TERM $n1 $n2
wait $n1 $n2 2>/dev/null
eventually grep -q "pid $n2 (manysites) unregistered" "$W/fair.log"
eventually grep -q "pid $n1 (manysites) unregistered" "$W/fair.log"

# Root, at once: a program under the shim, and faultline stats.
FAULTLINE_SOCKET=$W/fair.sock timeout 300 "$FL" run --preload "$PRELOAD" -- "$PROG" run 3 2 1 \
	>"$W/prog.out" 2>"$W/prog.err" &
prog=$!
PIDS+=($prog)
t0=$(date +%s%N)
FAULTLINE_SOCKET=$W/fair.sock timeout 300 "$FL" stats --all --json >"$W/stats.json" 2>"$W/stats.err"
rc=$?
t1=$(date +%s%N)
wait $prog
prc=$?
echo "  # root's faultline stats --json: $(( (t1 - t0) / 1000000 )) ms, $(wc -c <"$W/stats.json") bytes"
check "root's faultline stats is answered (exit $rc)" test $rc = 0
check "root's program under the shim runs to its end (exit $prc)" test $prc = 0
ppid=$(awk '/^pid / { print $2 }' "$W/prog.out")
check "root's program said its pid" test -n "$ppid"

# written N: the daemon has written N records of 2,000,000 sites.
written() { test "$(grep -c "json written: 2000000 sites" "$W/fair.log")" -ge "$1"; }
eventually written 2
done_line=$(last_line_of "json written: 2000000 sites" "$W/fair.log")
check "nobody's two records are written" test "$done_line" -gt 0
answered=$(line_of "(uid 0): query 1 answered" "$W/fair.log")
check "root's stats was answered while nobody's records were still being written (log line $answered before $done_line)" \
	test "$answered" -lt "$done_line"
reg=$(line_of "pid $ppid (e2e-prog, uid 0) registered" "$W/fair.log")
check "root's program registered while nobody's records were still being written (log line $reg before $done_line)" \
	test "$reg" -lt "$done_line"

# What root's stats said, while nobody's work went on.
"$PY" - "$W/stats.json" "$n1" "$n2" "$NOBODY_FAULTS" >"$W/stats.check" 2>&1 <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
want = int(sys.argv[4])
for pid in map(int, sys.argv[2:4]):
    p = [p for p in doc["processes"] if p["pid"] == pid]
    assert len(p) == 1, "pid %d listed %d times" % (pid, len(p))
    p = p[0]
    assert p["uid"] == 65534 and p["exited"], p["uid"]
    assert p["num_sites"] == 2000000 and p["faults"] == want, (p["num_sites"], p["faults"])
    assert len(p["sites"]) == 4096 and p["sites_unlisted"] == 2000000 - 4096, len(p["sites"])
    # The ones with the most faults (6), the first in site order.
    assert all(s["faults"] == 6 for s in p["sites"]), "a listed site with fewer faults"
print("ok")
EOF
check "root's stats: nobody's processes with 2,000,000 sites and $NOBODY_FAULTS faults each, 4,096 sites listed" \
	grep -qx ok "$W/stats.check"
grep -v '^ok$' "$W/stats.check" | tail -3 | sed 's/^/    | /'

# Root's program, exactly.
FAULTLINE_SOCKET=$W/fair.sock timeout 300 "$FL" stats --all --json --pid "$ppid" >"$W/prog.json" 2>&1
check "root's program is counted exactly: 3, 2 and 1 faults at its three sites" \
	"$PY" -c '
import json, sys
p = json.load(open(sys.argv[1]))["processes"][0]
sys.exit(not (p["faults"] == 6 and sorted(s["faults"] for s in p["sites"]) == [1, 2, 3]))' \
	"$W/prog.json"

rss=$(awk '/VmRSS/ { print $2 }' /proc/$DPID/status)
hwm=$(awk '/VmHWM/ { print $2 }' /proc/$DPID/status)
echo "  # daemon: RSS $((rss / 1024)) MiB, peak $((hwm / 1024)) MiB; state: $(du -sm "$W/fair.state" | cut -f1) MiB in $(ls "$W/fair.state" | wc -l) files"
check "the daemon's peak RSS stays under 1 GiB ($((hwm / 1024)) MiB)" test "${hwm:-9999999}" -lt 1048576
check "each process has a record of its own (nobody's two, root's program)" \
	test "$(ls "$W/fair.state" | grep -c '^proc\.[0-9]*\.json$')" = 3
# A record is written once, when its process exits: root's program's exit
# wrote only its own.
check "an exit writes that process's record only (no record of nobody's rewritten)" \
	test "$(grep -c "json written: 2000000 sites" "$W/fair.log")" = 2

echo "# nobody's budget of sites (default 4,194,304)"
many n3 "$W/fair.sock" 2000000 1 0 hold
n3=$MPID
eventually registered n3
check "a new process of nobody's registers 2,000,000 sites: its exited ones make room" \
	grep -q "^registered pid $n3: 1 of 1 modules" "$W/n3.out"
many n4 "$W/fair.sock" 2000000 1 0 hold
n4=$MPID
eventually registered n4
check "so does a second one" grep -q "^registered pid $n4: 1 of 1 modules" "$W/n4.out"
check "nobody's exited processes were dropped to make room (their records too)" \
	test "$(ls "$W/fair.state" | grep -c '^proc\.[0-9]*\.json$')" -le 3
many n5 "$W/fair.sock" 2000000 1 0 exit
n5=$MPID
wait $n5
rc=$?
check "a third live one goes over nobody's budget: its module is refused" \
	grep -q "^refused: module 1 (mod1, 2000000 sites) not registered: uid $NOBODY's live processes hold 4000000 sites: 2000000 more would go over its budget of 4194304 (--max-user-sites)" \
	"$W/n5.out"
check "the refused process stays registered: the daemon answers its SYNC (exit $rc)" \
	grep -q "^registered pid $n5: 0 of 1 modules" "$W/n5.out"
many n6 "$W/fair.sock" 2000000 1 0 exit
wait $MPID
check "a second one is refused too" grep -q "^refused: " "$W/n6.out"
check "the daemon warns of nobody's refusal once" \
	test "$(grep -c "warn: refused: uid $NOBODY" "$W/fair.log")" = 1
check "...and logs the later ones at debug level" grep -q "debug: refused: uid $NOBODY" "$W/fair.log"
check "no client was dropped for it" test -z "$(grep "dropped" "$W/fair.log")"
FAULTLINE_SOCKET=$W/fair.sock timeout 300 "$W/manysites" "$W/fair.sock" 2000000 1 0 0 exit \
	>"$W/root.out" 2>&1
check "root is not held to the budget: its 2,000,000 sites register" \
	grep -q "^registered pid .*: 1 of 1 modules" "$W/root.out"

echo "# a restart reads the records back"
kill -TERM $n3 $n4
wait $n3 $n4 2>/dev/null
stop_daemon
daemon fair
FAULTLINE_SOCKET=$W/fair.sock timeout 300 "$FL" ps --json >"$W/ps.json" 2>&1
check "restored: nobody's 2,000,000-site processes with their faults, root's program with its 6" \
	"$PY" -c '
import json, sys
procs = {p["pid"]: p for p in json.load(open(sys.argv[1]))["processes"]}
n3, n4, prog, want = map(int, sys.argv[2:6])
sys.exit(not all(procs[p]["num_sites"] == 2000000 and procs[p]["faults"] == want and
                 procs[p]["exited"] for p in (n3, n4)) or procs[prog]["faults"] != 6)' \
	"$W/ps.json" "$n3" "$n4" "$ppid" "$NOBODY_FAULTS"
FAULTLINE_SOCKET=$W/fair.sock timeout 300 "$FL" run --preload "$PRELOAD" -- "$PROG" run 1 1 1 \
	>"$W/prog2.out" 2>&1
ppid2=$(awk '/^pid / { print $2 }' "$W/prog2.out")
FAULTLINE_SOCKET=$W/fair.sock timeout 300 "$FL" stats --all --json --pid "${ppid2:-0}" >"$W/prog2.json" 2>&1
check "a root program after the restart is counted exactly" \
	"$PY" -c 'import json, sys; sys.exit(json.load(open(sys.argv[1]))["processes"][0]["faults"] != 3)' \
	"$W/prog2.json"
stop_daemon

echo "# nobody's budget of section bytes"
daemon bytes --max-user-section-bytes 1000000
# 50,000 sites: a fault map of 600,024 bytes each.
many b1 "$W/bytes.sock" 50000 1 1 hold
b1=$MPID
eventually registered b1
check "nobody's process with a 600,024-byte fault map registers" \
	grep -q "^registered pid $b1: 1 of 1 modules" "$W/b1.out"
many b2 "$W/bytes.sock" 50000 1 1 exit
wait $MPID
check "a second one goes over nobody's 1,000,000 bytes: refused, and told why" \
	grep -q "^refused: .*hold 600024 bytes of sections and names: 600024 more would go over its budget of 1000000 (--max-user-section-bytes)" \
	"$W/b2.out"
kill -TERM $b1
wait $b1 2>/dev/null
stop_daemon

echo "daemon fair: $pass passed, $fail failed"
[ $fail = 0 ]
