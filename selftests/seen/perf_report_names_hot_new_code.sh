#!/bin/bash
# perf_report_names_hot_new_code.sh HOT_NEW_CODE: perf record of a program
# whose registered new code is hot (hot_new_code.c); perf report must name
# it as fl_seen_add did in the program's perf map, with most of the
# samples.  Exits 0 (pass), 77 (skip, with the reason) or 1 (fail).
set -u
name=perf_report_names_hot_new_code
prog=$1
if [ -n "${VMTEST_WHERE:-}" ]; then
	# The guest has busybox and the test binaries only; linux-perf's perf
	# needs its own libraries (libpython, libperl, libdw, ...) and the
	# perf_event sampling QEMU's TCG gives is the software clock only.
	echo "SKIP $name: host only (the QEMU guest has no perf)"
	exit 77
fi
if ! command -v perf > /dev/null; then
	echo "FAIL $name: perf is missing (linux-perf: scripts/deps.sh test installs it)"
	exit 1
fi
tmp=$(mktemp -d)
pid=
cleanup() {
	[ -n "$pid" ] && rm -f "/tmp/perf-$pid.map"
	rm -rf "$tmp"
}
trap cleanup EXIT
# The software clock: the same on bare metal, in a VM and in a container.
if ! perf record -q -e cpu-clock -F 999 -o "$tmp/perf.data" -- "$prog" 1.5 \
		> "$tmp/out" 2> "$tmp/err"; then
	echo "FAIL $name: perf record failed:"
	cat "$tmp/err"
	exit 1
fi
read -r pid want < "$tmp/out"
if [ -z "$pid" ] || [ -z "$want" ]; then
	echo "FAIL $name: the program printed no PID and name"
	cat "$tmp/err"
	exit 1
fi
perf report -q -i "$tmp/perf.data" --stdio --sort sym --pid "$pid" 2> "$tmp/rerr" \
	> "$tmp/report"
echo "  perf report (top 5):"
head -5 "$tmp/report" | sed 's/^/    /'
pct=$(awk -v want="$want" '$NF == want { sub("%", "", $1); print $1; exit }' "$tmp/report")
if [ -z "$pct" ]; then
	echo "FAIL $name: perf report does not name $want"
	cat "$tmp/rerr"
	exit 1
fi
echo "  $want: $pct% of the samples"
if ! awk -v p="$pct" 'BEGIN { exit !(p >= 50) }'; then
	echo "FAIL $name: $want has $pct% of the samples, not most of them"
	exit 1
fi
echo "PASS $name"
