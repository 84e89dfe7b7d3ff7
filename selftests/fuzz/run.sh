#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Runs libFuzzer targets one after the other (the Makefile's fuzz and
# check-fuzz targets):
#
#   selftests/fuzz/run.sh SECONDS OUTDIR NAME:MAX_LEN...
#
# Each target OUTDIR/fuzz_NAME runs for SECONDS on OUTDIR/corpus-NAME/, a
# copy of the seeds in selftests/fuzz/corpus/NAME/ that keeps what libFuzzer
# adds between runs (the seeds in the tree are never written).  Inputs are
# at most MAX_LEN bytes; one that takes longer than FUZZ_TIMEOUT seconds
# (default 10) is a failure.  The log is OUTDIR/logs/NAME.log; a crash, leak
# or timeout is saved as OUTDIR/artifacts/NAME-{crash,leak,timeout}-*, and
# reproduced with: OUTDIR/fuzz_NAME FILE
#
# Exit status: 0 when no target found anything, 1 otherwise.
set -u

if [ $# -lt 3 ]; then
	echo "usage: $0 SECONDS OUTDIR NAME:MAX_LEN..." >&2
	exit 2
fi
seconds=$1
out=$2
shift 2
timeout=${FUZZ_TIMEOUT:-60}
seeds=$(dirname "$0")/corpus
status=0

mkdir -p "$out/logs" "$out/artifacts"
for spec in "$@"; do
	name=${spec%%:*}
	max_len=${spec#*:}
	corpus=$out/corpus-$name
	log=$out/logs/$name.log
	mkdir -p "$corpus"
	# Seeds that are not in the copy yet (cp -n would warn on coreutils 9).
	for f in "$seeds/$name"/*; do
		[ -e "$corpus/${f##*/}" ] || cp "$f" "$corpus/"
	done
	printf '  FUZZ    %-9s %ss, max_len %s ... ' "$name" "$seconds" "$max_len"
	if "$out/fuzz_$name" -max_total_time="$seconds" -max_len="$max_len" \
		-timeout="$timeout" -rss_limit_mb=2048 -use_value_profile=1 \
		-print_final_stats=1 -artifact_prefix="$out/artifacts/$name-" \
		"$corpus" >"$log" 2>&1; then
		runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
		rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
		cov=$(sed -n 's/^#[0-9]*[[:space:]]*DONE[[:space:]]*cov: \([0-9]*\).*/\1/p' "$log")
		echo "ok: $runs runs ($rate/s), cov $cov, corpus $(ls "$corpus" | wc -l) files"
	else
		echo "FAILED (log: $log)"
		grep -E 'ERROR: |invariant violated|SUMMARY|Test unit written' "$log" | head -20
		status=1
	fi
done
exit $status
