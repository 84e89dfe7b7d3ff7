#!/bin/bash
# Exact counts, whatever happens to faultlined (make check-daemon-counts):
# a process's final counts reach the daemon and its state file exactly,
# each process is one entry.
#
#   - kill -9 of the daemon, and the process exits while it is down;
#   - a daemon stopped (SIGSTOP) while a program runs and exits;
#   - kill -9 of a stopped daemon, registrations waiting in its backlog;
#   - JIT code unregistered before exit, with and without a pause;
#   - a process that exits right after registering;
#   - deferred registration (the shim's): one failed check and an exit at
#     once, and a daemon that starts 100 ms after the program;
#   - a JIT module with a stack map alone: faultline stackmaps finds its
#     record (by PC and by ID);
#   - a process of 100,000 sites, five of them failed (each its own number
#     of times), exits: each of the five has its count, no other site any,
#     in the daemon, in its record, and after a restart from the records;
#   - the soak: 20 kill -9s of the daemon (restarted each time on the same
#     state directory) while 20 programs of random lifetimes fail checks,
#     load and unload JIT code and exit (half of them with _exit), in
#     SOAK_RUNS runs (default 4) of different seeds (SOAK_SEED: the first;
#     printed); then every count must be exact, in the daemon and in its
#     state file.
#
#   run.sh FAULTLINE FAULTLINED PROG OUTDIR
#
# Waits are for events, up to WAIT_S (wait.sh).  Every process started is
# stopped when the script ends, however it ends; the logs of a failed run
# are copied to OUTDIR.
set -u

FL=$(realpath "$1")
FLD=$(realpath "$2")
PROG=$(realpath "$3")
OUT=$(realpath -m "$4")
HERE=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3
. "$HERE/../wait.sh"

if [ "$(id -u)" != 0 ]; then
	echo "skip - daemon counts: runs as root (faultlined's eBPF program)"
	exit 0
fi
echo "kernel: $(uname -r) (${VMTEST_WHERE:-host})"

W=$(mktemp -d /tmp/fl-counts.XXXXXX) || exit 1
mkdir -p "$OUT"
rm -f "$OUT"/*.log "$OUT"/*.out
SOCK=$W/d.sock
STATE=$W/state
export FAULTLINE_SOCKET=$SOCK

pass=0
fail=0
ok() { pass=$((pass + 1)); echo "  ok   $*"; }
bad() { fail=$((fail + 1)); echo "  FAIL $*"; }

DPID=
dlogs=0
DLOG=
cleanup() {
	local p
	exec 7>&- 2>/dev/null
	[ -n "$DPID" ] && kill -CONT "$DPID" 2>/dev/null
	for p in $(jobs -p) $(cat "$W/soak.pids" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
	wait 2>/dev/null
	# A daemon killed last leaves its keeper, which goes with its directory.
	[ $fail = 0 ] || cp "$W"/*.log "$W"/*.out "$OUT"/ 2>/dev/null
	rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# dstart: faultlined on $SOCK and $STATE, once it listens.
dstart() {
	dlogs=$((dlogs + 1))
	DLOG=$W/daemon.$dlogs.log
	rm -f "$DLOG"
	"$FLD" --socket "$SOCK" --state-dir "$STATE" --log-level debug >"$DLOG" 2>&1 7>&- &
	DPID=$!
	if ! eventually grep -qs "listening on" "$DLOG"; then
		bad "faultlined did not start: $(tail -3 "$DLOG")"
		exit 1
	fi
}
dkill9() { kill -KILL "$DPID"; wait "$DPID" 2>/dev/null; DPID=; }
dstop() {
	kill -TERM "$DPID"
	wait "$DPID"
	local rc=$?
	DPID=
	[ $rc = 0 ] || bad "faultlined exited $rc on SIGTERM"
}

# stats FILE: faultline stats --json into FILE.
stats() { "$FL" stats --all --json >"$1" 2>"$1.err"; }

# exited PID...: every entry of each PID is listed and exited.
exited() {
	stats "$W/exited.json" || return 1
	"$PY" - "$W/exited.json" "$@" <<'EOF'
import json, sys
procs = json.load(open(sys.argv[1]))["processes"]
for pid in map(int, sys.argv[2:]):
    mine = [p for p in procs if p["pid"] == pid]
    if not mine or not all(p["exited"] and p["final"] for p in mine):
        sys.exit(1)
EOF
}

# exact NAME DONE_FILE...: the daemon's counts of those programs are exact.
exact() {
	local name=$1
	shift
	stats "$W/$name.json"
	if "$PY" "$HERE/check.py" stats "$W/$name.json" "$@" >"$W/$name.check"; then
		ok "$name"
	else
		bad "$name"
		sed 's/^/       | /' "$W/$name.check" | head -12
	fi
}

# exact_state NAME DONE_FILE...: so are those in the state file.
exact_state() {
	local name=$1
	shift
	if "$PY" "$HERE/check.py" state "$STATE" "$@" >"$W/$name.check"; then
		ok "$name"
	else
		bad "$name"
		sed 's/^/       | /' "$W/$name.check" | head -12
		rm -rf "$OUT/state"
		cp -r "$STATE" "$OUT/state" && echo "       | (the state directory: $OUT/state)"
	fi
}

test_lines() { [ "$(grep -c "^$2" "$1")" = "$3" ]; }
pid_of() { awk '$1 == "pid" { print $2; exit }' "$1"; }

# prog NAME STEP...: the program in the background, stdin from fd 7.
prog() {
	local name=$1
	shift
	rm -f "$W/$name.in"
	mkfifo "$W/$name.in"
	"$PROG" "$@" <"$W/$name.in" >"$W/$name.out" 2>"$W/$name.err" &
	PPID_=$!
	exec 7>"$W/$name.in"
}
say() { echo go >&7; }
saw() { eventually grep -qs "^$2" "$W/$1.out"; }
# reap: the program in the background ends (stdin closed).
reap() { exec 7>&-; wait "$PPID_"; }

# state_holds PID N: the records hold N faults for PID (all its entries).
state_holds() { "$PY" "$HERE/check.py" holds "$STATE" "$1" "$2" 2>/dev/null; }

# stats_say PID EXPR: EXPR (Python, over ps: the pid's entries in stats) holds.
stats_say() {
	stats "$W/say.json" || return 1
	"$PY" - "$W/say.json" "$1" "$2" <<'EOF'
import json, sys
ps = [p for p in json.load(open(sys.argv[1]))["processes"] if p["pid"] == int(sys.argv[2])]
sys.exit(not eval(sys.argv[3]))
EOF
}

mkdir -m 700 "$STATE"

echo "-- kill -9: the process exits while the daemon is down"
dstart
# While it is down, the program also loads and unloads JIT code, then exits.
prog k9 load:3500 wait load:31500 wait jit:7 store:5
saw k9 wait
pid=$(pid_of "$W/k9.out")
# The daemon saves live counts now and then: 3,500 is in the state file.
eventually state_holds "$pid" 3500 || bad "the records never held 3500 for $pid"
say
eventually test_lines "$W/k9.out" wait 2
dkill9
say
reap
dstart
eventually exited "$pid" || bad "pid $pid not listed as exited"
exact "kill -9, exit while down: 35,000 faults kept exactly, and a JIT module's 7" "$W/k9.out"
dstop
exact_state "kill -9, exit while down: records" "$W/k9.out"

echo "-- a daemon stopped (SIGSTOP) while a program runs and exits"
dstart
kill -STOP "$DPID"
prog stop load:30000
reap
kill -CONT "$DPID"
pid=$(pid_of "$W/stop.out")
# Every entry of the pid exited and, together, all of its faults counted.
eventually stats_say "$pid" \
	'ps and all(p["exited"] for p in ps) and sum(p["faults"] for p in ps) == 30000' || bad "stopped daemon: pid $pid's 30,000 faults never all counted"
exact "stopped daemon: one entry, 30,000 faults" "$W/stop.out"
# Its modules came behind its HELLO, before any answer: they have names.
if stats_say "$pid" '(any(s["module"] == "'"$PROG"'" for p in ps for s in p["sites"]) and
		    not any(s["module"] == "(unnamed)" for p in ps for s in p["sites"]))'; then
	ok "stopped daemon: its module named"
else
	bad "stopped daemon: its module not named"
fi
dstop
exact_state "stopped daemon: records" "$W/stop.out"

echo "-- kill -9 of a stopped daemon: registrations waiting in its backlog"
dstart
kill -STOP "$DPID"
prog backlog load:5000
reap
# SIGKILL ends a stopped process too.
dkill9
dstart
eventually exited "$(pid_of "$W/backlog.out")" || bad "backlog: the program never listed"
exact "a registration the dead daemon never read: 5,000 faults kept" "$W/backlog.out"
dstop
exact_state "a registration the dead daemon never read: records" "$W/backlog.out"

echo "-- JIT code unregistered before exit"
dstart
prog jitp jit:4 wait
saw jitp wait
pid=$(pid_of "$W/jitp.out")
# The daemon has heard of the unregistration.
eventually stats_say "$pid" \
	'any(s["module"] == "counts-jit" and s["unloaded"] for p in ps for s in p["sites"])' || bad "the JIT module's unregistration never reached the daemon"
say
reap
eventually exited "$pid" || bad "pid $pid not listed as exited"
exact "JIT unregistered, a pause, exit: its 4 faults kept" "$W/jitp.out"
if stats_say "$pid" 'sum(s["faults"] for p in ps for s in p["sites"] if s["module"] == "counts-jit") == 4'
then
	ok "JIT unregistered, a pause, exit: the 4 faults are counts-jit's"
else
	bad "JIT unregistered, a pause, exit: counts-jit has not the 4 faults"
fi
prog jitq jit:4
reap
eventually exited "$(pid_of "$W/jitq.out")" || bad "JIT without a pause: not listed as exited"
exact "JIT unregistered, exit at once: its sites and 4 faults kept" "$W/jitq.out"
prog quick load:777 store:3 _exit
reap
eventually exited "$(pid_of "$W/quick.out")" || bad "exit right after registering: not listed as exited"
exact "exit right after registering (_exit): counts kept" "$W/quick.out"
dstop
exact_state "JIT and quick exits: records" "$W/jitp.out" "$W/jitq.out" "$W/quick.out"

echo "-- deferred registration (FL_INIT_DEFER_DISCOVERY, the shim's)"
dstart
# One failed check at once, then exit: the fault waits for the sites, the exit for their registration.
prog dq defer load:1
reap
eventually exited "$(pid_of "$W/dq.out")" || bad "deferred, exit at once: not listed as exited"
exact "deferred, one failed check, exit at once: counted exactly" "$W/dq.out"
dstop
# A daemon that starts 100 ms after the program: the counts arrive once it is up.
prog dl defer load:1 wait
saw dl wait
pid=$(pid_of "$W/dl.out")
sleep 0.1
dstart
eventually stats_say "$pid" 'ps and not ps[0]["exited"] and sum(p["faults"] for p in ps) == 1' ||
	bad "deferred, daemon 100 ms later: the live program's count never arrived"
say
reap
eventually exited "$pid" || bad "deferred, daemon 100 ms later: not listed as exited"
exact "deferred, daemon started 100 ms later: counted exactly" "$W/dl.out"
dstop
exact_state "deferred registrations: records" "$W/dq.out" "$W/dl.out"

echo "-- a JIT module with a stack map alone: faultlined knows its records"
dstart
prog sm smjit wait
saw sm wait
pid=$(pid_of "$W/sm.out")
smpc=$(awk '$1 == "smjit" { print $2; exit }' "$W/sm.out")
# faultline stackmaps PID --pc: the process's own lookup (fl_stackmap_record_at).
if eventually sh -c '"$1" stackmaps --pc "$2" "$3" 2>&1 | grep -q "record 77 at $2"' _ "$FL" "$smpc" "$pid"; then
	ok "stack map only JIT module: faultline stackmaps --pc $smpc finds record 77"
else
	bad "stack map only JIT module: faultline stackmaps --pc $smpc: $("$FL" stackmaps --pc "$smpc" "$pid" 2>&1 | head -3)"
fi
if "$FL" stackmaps --id 77 "$pid" 2>&1 | grep -q "1 stack map record"; then
	ok "stack map only JIT module: faultline stackmaps --id 77 lists it"
else
	bad "stack map only JIT module: faultline stackmaps --id 77: $("$FL" stackmaps --id 77 "$pid" 2>&1 | head -3)"
fi
say
reap
dstop

# many_exact NAME stats|state PATH DONE_FILE: counts-many's faults are at exactly its failed sites.
many_exact() {
	local name=$1
	shift
	if "$PY" "$HERE/check.py" many "$@" >"$W/many.check" 2>&1; then
		ok "$name"
	else
		bad "$name"
		sed 's/^/       | /' "$W/many.check" | head -12
	fi
}

echo "-- a process of 100,000 sites, five of them failed, exits"
dstart
prog many many:100000
reap
pid=$(pid_of "$W/many.out")
eventually exited "$pid" || bad "100,000 sites: pid $pid not listed as exited"
# The records are written after the exit: the restart below must find the final one.
eventually state_holds "$pid" 15 || bad "100,000 sites: the records never held its 15 faults"
exact "100,000 sites, five failed, exit: counted exactly" "$W/many.out"
stats "$W/many.json"
many_exact "100,000 sites, five failed, exit: each failed site its own count, no other site any" \
	stats "$W/many.json" "$W/many.out"
dstop
many_exact "100,000 sites, five failed, exit: its record holds the 100,000 sites and those counts" \
	state "$STATE" "$W/many.out"
dstart
eventually exited "$pid" || bad "100,000 sites: pid $pid not restored"
exact "100,000 sites, five failed: restored from the records, counted exactly" "$W/many.out"
stats "$W/many-restored.json"
many_exact "100,000 sites, five failed: restored, each failed site its own count, no other site any" \
	stats "$W/many-restored.json" "$W/many.out"
dstop

# ---- the soak
soak() {
	local seed=$1 n=20 kills=20 i
	local -a delay life quick deferred down up
	RANDOM=$seed
	# The whole plan from the seed first (subshells draw other numbers).
	for ((i = 0; i < n; i++)); do
		delay[i]=$((RANDOM % 400))
		life[i]=$((RANDOM % 4000))
		quick[i]=$((RANDOM % 2))
		deferred[i]=$((RANDOM % 2))
	done
	for ((i = 0; i < kills; i++)); do
		up[i]=$((RANDOM % 500))
		down[i]=$((RANDOM % 300))
	done
	rm -rf "$STATE" "$W"/soak.*.out
	mkdir -m 700 "$STATE"
	dstart
	(
		for ((i = 0; i < n; i++)); do
			sleep "$(printf '0.%03d' "${delay[i]}")"
			steps="soak:$((seed + i)):${life[i]}"
			[ "${deferred[i]}" = 1 ] && steps="defer $steps"
			[ "${quick[i]}" = 1 ] && steps="$steps _exit"
			"$PROG" $steps </dev/null >"$W/soak.$i.out" 2>&1 &
			echo $! >>"$W/soak.pids"
		done
		wait
	) &
	local progs=$!
	for ((i = 0; i < kills; i++)); do
		sleep "$(printf '0.%03d' "${up[i]}")"
		dkill9
		sleep "$(printf '0.%03d' "${down[i]}")"
		dstart
	done
	wait "$progs"
	local outs=("$W"/soak.*.out) pids=()
	for f in "${outs[@]}"; do pids+=("$(pid_of "$f")"); done
	eventually exited "${pids[@]}" || bad "soak $seed: not every program listed as exited"
	exact "soak seed $seed: $n programs, $kills kill -9s: every count exact" "${outs[@]}"
	dstop
	exact_state "soak seed $seed: records exact" "${outs[@]}"
	SOAK_PROGS=$((SOAK_PROGS + n))
}

SOAK_PROGS=0
first=${SOAK_SEED:-$(( $(date +%s) % 100000 ))}
runs=${SOAK_RUNS:-4}
for ((r = 0; r < runs; r++)); do
	seed=$((first + r * 7919))
	echo "-- soak $((r + 1)) of $runs: seed $seed (SOAK_SEED=$seed repeats it)"
	start=$SECONDS
	soak "$seed"
	echo "   ($((SECONDS - start)) s)"
done

echo "daemon counts: $pass passed, $fail failed ($SOAK_PROGS soak programs)"
[ $fail = 0 ]
