#!/bin/bash
# One user's 2,000,000 sites against root's use of the daemon, measured for
# each faultlined given (side by side, runs interleaved, medians):
#
#   fair.sh FAULTLINE PRELOAD MANYSITES PROG RUNS FAULTLINED...
#
# Each run: a fresh daemon (--no-bpf), nobody's manysites registers
# 2,000,000 sites and exits; at once root's faultline stats --json and a root
# program under the shim (e2e-prog run 3 2 1, whose start waits for the
# daemon's WELCOME): how long each took, and whether the program's 6 faults
# were recorded; then, the daemon idle, root's
# stats again, the daemon's RSS and peak RSS, the state directory's size,
# and how long one more exit (a root program's) takes to reach the disk.
# Figures only (make bench's rule): nothing is asserted.
set -u
FL=$(realpath "$1")
PRELOAD=$(realpath "$2")
MANY=$(realpath "$3")
PROG=$(realpath "$4")
RUNS=$5
shift 5
W=$(mktemp -d /tmp/fl-bench-fair.XXXXXX) || exit 1
chmod 755 "$W"
cp "$MANY" "$W/manysites" && chmod 755 "$W/manysites"
DPID=
cleanup() {
	[ -n "$DPID" ] && kill -KILL "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
	rm -rf "$W"
}
trap cleanup EXIT
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }

# saved DIR PID: PID's final counts are in DIR (either state format).
saved() {
	if [ -e "$1/state.json" ]; then
		grep -q "\"pid\":$2,\"uid\":0,\"comm\":\"e2e-prog\",\"exited\":true" "$1/state.json"
	else
		head -qn1 "$1"/proc.*.json 2>/dev/null | grep -q "\"pid\":$2,\"uid\":0,\"comm\":\"e2e-prog\",\"exited\":true"
	fi
}

# one FLD RUN: prints "stats_while prog_ms counted stats_after rss_mib hwm_mib state_mib save_ms".
one() {
	local fld=$1 d=$W/r$2 t pid stats_while prog_ms counted stats_after save_ms
	mkdir -m 755 "$d"
	"$fld" --no-bpf --socket "$d/s" --state-dir "$d/state" --log-level info >"$d/log" 2>&1 &
	DPID=$!
	until grep -qs "listening on" "$d/log"; do sleep 0.05; done
	setpriv --reuid=65534 --regid=65534 --clear-groups "$W/manysites" "$d/s" 2000000 1 0 0 exit \
		>"$d/many.out"
	until grep -q "(manysites) unregistered" "$d/log"; do sleep 0.01; done
	# While the daemon saves (or writes nobody's record): the program's
	# whole run (it waits for the daemon's WELCOME at start), and stats.
	(
		t=$(date +%s%N)
		FAULTLINE_SOCKET=$d/s "$FL" run --preload "$PRELOAD" -- "$PROG" run 3 2 1 \
			>"$d/prog.out" 2>&1
		ms "$t" >"$d/prog.ms"
	) &
	local prog=$!
	t=$(date +%s%N)
	FAULTLINE_SOCKET=$d/s timeout 600 "$FL" stats --json >/dev/null 2>&1
	stats_while=$(ms "$t")
	wait $prog
	prog_ms=$(cat "$d/prog.ms")
	pid=$(awk '/^pid/ { print $2 }' "$d/prog.out")
	# Idle: nothing written for a second, no temporary file.
	while [ -n "$(find "$d/state" -newermt '-1 second' 2>/dev/null)" ] ||
		ls "$d/state" | grep -q tmp; do sleep 0.2; done
	counted=$(FAULTLINE_SOCKET=$d/s timeout 600 "$FL" stats --json --pid "$pid" 2>/dev/null |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["processes"][0]["faults"])' 2>/dev/null)
	t=$(date +%s%N)
	FAULTLINE_SOCKET=$d/s timeout 600 "$FL" stats --json >/dev/null 2>&1
	stats_after=$(ms "$t")
	# One more exit: how long until its counts are on disk.
	FAULTLINE_SOCKET=$d/s "$FL" run --preload "$PRELOAD" -- "$PROG" run 1 1 1 >"$d/prog2.out" 2>&1
	t=$(date +%s%N)
	pid=$(awk '/^pid/ { print $2 }' "$d/prog2.out")
	until saved "$d/state" "$pid"; do sleep 0.005; done
	save_ms=$(ms "$t")
	echo "$stats_while $prog_ms ${counted:-0} $stats_after" \
		"$(( $(awk '/VmRSS/ { print $2 }' /proc/$DPID/status) / 1024 ))" \
		"$(( $(awk '/VmHWM/ { print $2 }' /proc/$DPID/status) / 1024 ))" \
		"$(du -sm "$d/state" | cut -f1)" "$save_ms"
	kill -TERM $DPID
	wait $DPID
	DPID=
	rm -rf "$d"
}

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

for ((r = 1; r <= RUNS; r++)); do
	i=0
	for fld in "$@"; do
		i=$((i + 1))
		echo "$i $(one "$fld" "$r.$i")" >>"$W/results"
	done
done
printf '%-44s %s\n' "" "$(i=0; for fld in "$@"; do i=$((i + 1)); printf '%14s' "daemon $i"; done)"
col=1
for what in "root's stats --json while (ms)" "root's program while (ms)" "  its faults recorded (of 6)" \
	"root's stats --json after (ms)" "daemon RSS after (MiB)" "daemon peak RSS (MiB)" \
	"state directory (MiB)" "one exit to disk (ms)"; do
	col=$((col + 1))
	printf '%-44s' "$what"
	i=0
	for fld in "$@"; do
		i=$((i + 1))
		printf '%14s' "$(awk -v i=$i -v c=$col '$1 == i { print $c }' "$W/results" | median)"
	done
	echo
done
i=0
for fld in "$@"; do i=$((i + 1)); echo "daemon $i: $fld"; done
echo "(medians of $RUNS runs)"
