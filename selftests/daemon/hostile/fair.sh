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
#
# Then, each against a daemon of its own:
#   - five processes of nobody's write 2,000,000 sites into their regions'
#     site tables and exit without a MODULE_ADD: with --max-user-sites 1000
#     the daemon keeps 1,000 of them (the first process's), says so once,
#     and its RSS and the state directory stay small (printed); restarted
#     with --max-user-sites 500, the restored records over it are dropped;
#   - with --max-user-state-bytes 1000000, nobody's records never hold
#     more (its oldest exited processes go first), and one larger than the
#     whole budget is not written, said once;
#   - with --heal-after 5 --unheal-after 10, 700 processes of nobody's
#     register at once and never answer the daemon's policy requests:
#     those are charged to nobody (64 in flight), so root's faultline
#     request PID ping and faultline unheal are answered throughout, and
#     the log says so once (its lines are counted).
#
#   fair.sh FAULTLINE FAULTLINED PRELOAD MANYSITES PROG MANYPROCS
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
	eventually grep -qs "listening on" "$W/$name.log" ||
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

rss_kib() { awk '/VmRSS/ { print $2 }' /proc/$DPID/status; }
# nobody_sites FILE: the sites nobody's processes hold, from FILE (faultline stats --all --json).
nobody_sites() {
	"$PY" -c '
import json, sys
print(sum(p["num_sites"] for p in json.load(open(sys.argv[1]))["processes"] if p["uid"] == 65534))' "$1"
}
# nobody_state_bytes DIR: the bytes of the records (and counts files) in DIR.
state_bytes() { cat "$1"/proc.* 2>/dev/null | wc -c; }
# written PID LOG: the daemon has written a record of PID.
record_written() { grep -q "state: pid $1: proc\.[0-9]*\.json written" "$2"; }

echo "# nobody's site tables, never described by a MODULE_ADD, are charged to its budget"
# Five processes of nobody's write 2,000,000 sites into their regions' site
# tables (no MODULE_ADD) and exit: the daemon finds them there
# (fld_proc_scan), and keeps no more than nobody's --max-user-sites.
daemon table --max-user-sites 1000
rss0=$(rss_kib)
st0=$(state_bytes "$W/table.state")
for k in 1 2 3 4 5; do
	many t$k "$W/table.sock" 2000000 0 0 exit
	t=$MPID
	wait $t
	check "nobody's process $k wrote 2,000,000 sites into its site table, registered none" \
		grep -q "^registered pid $t: 0 of 0 modules (2000000 sites)" "$W/t$k.out"
	eventually record_written $t "$W/table.log"
done
rss1=$(rss_kib)
st1=$(state_bytes "$W/table.state")
FAULTLINE_SOCKET=$W/table.sock timeout 300 "$FL" stats --all --json >"$W/table.json" 2>&1
held=$(nobody_sites "$W/table.json")
echo "  # daemon: RSS $((rss0 / 1024)) MiB before, $((rss1 / 1024)) MiB after; state directory: $st0 bytes before, $st1 after; nobody holds $held sites"
check "nobody holds at most its budget of 1,000 sites after 5 x 2,000,000 in its site tables ($held)" \
	test "${held:-99999999}" -le 1000
check "the sites that fit are kept: the first process's 1,000 ($held)" test "${held:-0}" = 1000
check "the daemon's RSS grew by less than 64 MiB ($((rss0 / 1024)) -> $((rss1 / 1024)) MiB)" \
	test $((rss1 - rss0)) -lt 65536
check "the state directory holds less than 1 MiB ($st1 bytes)" test "$st1" -lt 1048576
check "the daemon warns of it once, not per process ($(grep -c "warn: refused: pid .*site table" "$W/table.log"))" \
	test "$(grep -c "warn: refused: pid .*site table" "$W/table.log")" = 1
check "...with what was kept and the budget" \
	grep -q "warn: refused: pid $(awk '{ print $3 }' "$W/t1.out" | tr -d :)'s site table holds 2000000 sites it did not register: 1000 of them kept, uid $NOBODY holding 0 of its budget of 1000 (--max-user-sites)" \
	"$W/table.log"
check "the later ones at debug level" grep -q "debug: refused: pid .*site table" "$W/table.log"

echo "# records restored at start are charged to the budget"
stop_daemon
nrec=$(ls "$W/table.state" | grep -c '^proc\.[0-9]*\.json$')
daemon table --max-user-sites 500
FAULTLINE_SOCKET=$W/table.sock timeout 300 "$FL" stats --all --json >"$W/table2.json" 2>&1
held=$(nobody_sites "$W/table2.json")
check "restored under --max-user-sites 500: nobody holds at most 500 sites ($held)" \
	test "${held:-99999999}" -le 500
check "the daemon says which were dropped, once" \
	test "$(grep -c "warn: refused: uid $NOBODY's restored processes held 1000 sites" "$W/table.log")" = 1
check "the dropped process's record is removed ($nrec records before, $(ls "$W/table.state" | grep -c '^proc\.[0-9]*\.json$') after)" \
	test "$(ls "$W/table.state" | grep -c '^proc\.[0-9]*\.json$')" -lt "$nrec"
stop_daemon

echo "# nobody's records in the state directory are charged to its budget (--max-user-state-bytes)"
for v in 0 -5 12x "" 281474976710657; do
	"$FLD" --socket "$W/bad.sock" --state-dir "$W/bad.state" --max-user-state-bytes "$v" \
		>"$W/bad.out" 2>&1
	rc=$?
	check "--max-user-state-bytes '$v': a usage error that says why (exit $rc), nothing made" \
		test $rc = 2 -a ! -e "$W/bad.sock" -a ! -e "$W/bad.state"
	check "...naming the option and the range" \
		grep -q -- "--max-user-state-bytes: '$v' is not a number from 1 to 2^48" "$W/bad.out"
done
daemon sb --max-user-state-bytes 1000000
over=0
for k in 1 2 3; do
	# 20,000 sites: a record of about 720 KB.
	many s$k "$W/sb.sock" 20000 1 0 exit
	t=$MPID
	wait $t
	eventually record_written $t "$W/sb.log"
	b=$(state_bytes "$W/sb.state")
	echo "  # after nobody's process $k of 20,000 sites: its records hold $b bytes"
	[ "$b" -le 1000000 ] || over=$((over + 1))
done
check "nobody's records never hold more than its 1,000,000 bytes (the oldest go first)" test $over = 0
check "the last one's record is there" test "$(ls "$W/sb.state" | grep -c '^proc\.[0-9]*\.json$')" -ge 1
many s4 "$W/sb.sock" 50000 1 0 exit
t=$MPID
wait $t
eventually grep -q "refused: pid $t's record is larger than" "$W/sb.log"
b=$(state_bytes "$W/sb.state")
check "a record larger than the whole budget (50,000 sites) is not written, and the daemon says so ($b bytes held)" \
	grep -q "warn: refused: pid $t's record is larger than the .* bytes left of uid $NOBODY's budget in the state directory (--max-user-state-bytes): not written" \
	"$W/sb.log"
check "...and nobody's records still hold at most 1,000,000 bytes ($b)" test "$b" -le 1000000
check "no record write failed otherwise" test -z "$(grep "cannot write" "$W/sb.log")"
stop_daemon

echo "# the daemon's own requests are charged to the process's user (--heal-after 5 --unheal-after 10)"
# 700 processes of nobody's register at once and never answer a request (no
# agent: the daemon's heal policy requests to them stay in flight until they
# time out); meanwhile root's faultline request PID ping and faultline
# unheal are answered, and the log says nobody's are refused once.
NPROCS=${FAIR_NPROCS:-700}
cp "$6" "$W/manyprocs" && chmod 755 "$W/manyprocs"
daemon policy --heal-after 5 --unheal-after 10 --log-level info
mkfifo "$W/root.in" "$W/procs.in"
FAULTLINE_SOCKET=$W/policy.sock timeout 900 "$FL" run --preload "$PRELOAD" -- "$PROG" wait 6 0 0 \
	<"$W/root.in" >"$W/root.out" 2>"$W/root.err" &
PIDS+=($!)
exec 7>"$W/root.in"
eventually grep -q "^ready" "$W/root.out"
rpid=$(awk '/^ready/ { print $2 }' "$W/root.out")
check "root's program is registered (pid $rpid)" test -n "$rpid"
FAULTLINE_SOCKET=$W/policy.sock timeout 300 "$FL" sites --json "$rpid" >"$W/root-sites.json" 2>&1
pc=$("$PY" -c '
import json, sys
s = [s for s in json.load(open(sys.argv[1]))["processes"][0]["sites"] if s["function"] == "e2e_load"]
print(hex(s[0]["faulting_pc"]) if s else "")' "$W/root-sites.json" 2>/dev/null)
check "root's program's e2e_load site is known ($pc)" test -n "$pc"
setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups "$W/manyprocs" "$W/policy.sock" "$NPROCS" \
	<"$W/procs.in" >"$W/procs.out" 2>&1 &
PIDS+=($!)
exec 8>"$W/procs.in"
# Root's pings while nobody's processes register, and for a while after.
: >"$W/pings.out"
after=0
end=$((SECONDS + WAIT_S))
while [ $after -lt 40 ] && [ $SECONDS -lt $end ]; do
	if FAULTLINE_SOCKET=$W/policy.sock timeout 60 "$FL" request "$rpid" ping >>"$W/pings.out" 2>&1; then
		echo "answered" >>"$W/pings.out"
	else
		echo "NOT ANSWERED" >>"$W/pings.out"
	fi
	if grep -q "^registered\|^FAIL" "$W/procs.out"; then
		[ $after = 0 ] && FAULTLINE_SOCKET=$W/policy.sock timeout 60 "$FL" unheal "$rpid" "$pc" \
			>"$W/unheal.out" 2>&1
		after=$((after + 1))
	fi
	sleep 0.02
done
pings=$(grep -c "^answered" "$W/pings.out")
missed=$(grep -c "^NOT ANSWERED" "$W/pings.out")
echo "  # nobody: $(cat "$W/procs.out"); root: $pings pings answered, $missed not"
check "nobody's $NPROCS processes registered" grep -q "^registered $NPROCS of $NPROCS" "$W/procs.out"
check "every ping of root's was answered while nobody's processes registered ($missed not)" \
	test "$missed" = 0 -a "$pings" -gt 0
hasnt_in_flight() { ! grep -q "in flight" "$1"; }
check "no answer to root said 'in flight'" hasnt_in_flight "$W/pings.out"
check "root's faultline unheal was served ($(head -1 "$W/unheal.out"))" \
	grep -q "^$pc: unhealed\|: $pc: not healed" "$W/unheal.out"
check "...not refused for requests in flight" hasnt_in_flight "$W/unheal.out"
lines=$(wc -l <"$W/policy.log")
policy=$(grep -c "heal policy" "$W/policy.log")
echo "  # the daemon's log: $lines lines, $policy of them about a heal policy not given"
# Once per change of state: nobody's requests that time out (2 s) let its
# next ones in, and a refusal after that is said again.
check "the log says once (per change of state) that nobody's processes get no heal policy ($policy lines)" \
	test "$policy" -ge 1 -a "$policy" -le 4
check "...that it is uid $NOBODY's 64 requests in flight" \
	grep -q "warn: refused: 64 requests of uid $NOBODY in flight: pid [0-9]* (uid $NOBODY) gets no heal policy" \
	"$W/policy.log"
check "no flood: the log has a line per process registered and a few more ($lines for $NPROCS)" \
	test "$lines" -le $((NPROCS + 20))
exec 7>&- 8>&-
stop_daemon

echo "daemon fair: $pass passed, $fail failed"
[ $fail = 0 ]
