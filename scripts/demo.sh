#!/bin/bash
# make demo: faultline's main job, end to end, in under a minute.
#   demo.sh BINDIR WORKDIR
# Builds a small "managed" workload whose null checks LLVM made implicit,
# shows it crash alone, starts faultlined on a temporary socket, runs the
# workload under `faultline run`, and shows what faultlined counted.
set -eu
BIN=$(realpath "$1")
W=$(realpath -m "$2")
HERE=$(cd "$(dirname "$0")" && pwd)
rm -rf "$W" && mkdir -p "$W"

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }

export FAULTLINE_SOCKET=$W/faultlined.sock
daemon=
stop_daemon() {
	if [ -n "$daemon" ] && kill -0 "$daemon" 2>/dev/null; then
		kill "$daemon" && wait "$daemon" 2>/dev/null || true
	fi
}
trap stop_daemon EXIT

say "1. A managed workload, compiled by LLVM with implicit null checks"
echo "The null checks in scripts/demo/workload.ll are marked !make.implicit, so"
echo "llc-14 drops the compare-and-branch and lets the memory access fault instead."
echo "The fault map says, for each such access, where the explicit check would"
echo "have sent a null:"
llc-14 -O2 -enable-implicit-null-checks -filetype=obj "$HERE/demo/workload.ll" -o "$W/workload.o"
llc-14 -O2 -filetype=obj "$HERE/demo/workload.ll" -o "$W/workload-explicit.o"
gcc -O2 -no-pie -pthread -o "$W/shop" "$HERE/demo/main.c" "$W/workload.o"
gcc -O2 -no-pie -pthread -o "$W/shop-explicit" "$HERE/demo/main.c" "$W/workload-explicit.o"
"$BIN/faultline" faultmap "$W/shop" | sed 's/^/    /'

say "2. With explicit checks (no faultline), the reference output"
run "$W/shop-explicit"

say "3. With implicit checks and nobody to catch the faults, it crashes"
printf '$ %s\n' "$W/shop"
set +e
"$W/shop"
status=$?
set -e
echo "(exit status $status: killed by SIGSEGV at the first null)"

say "4. faultlined, the daemon every faultline process reports to"
printf '$ %s &\n' "$BIN/faultlined --socket $FAULTLINE_SOCKET --state-dir $W/state"
"$BIN/faultlined" --socket "$FAULTLINE_SOCKET" --state-dir "$W/state" \
	--log-level info >"$W/faultlined.log" 2>&1 &
daemon=$!
for _ in $(seq 1 50); do [ -S "$FAULTLINE_SOCKET" ] && break; sleep 0.1; done
echo "(listening on $FAULTLINE_SOCKET)"

say "5. The same binary under faultline run: each fault resumes at its handler"
printf '$ %s\n' "$BIN/faultline run -- $W/shop"
"$BIN/faultline" run -- "$W/shop" | tee "$W/shop.out"
"$W/shop-explicit" >"$W/shop-explicit.out"
if cmp -s "$W/shop.out" "$W/shop-explicit.out"; then
	echo "(the same output as the explicit build)"
else
	echo "(the output differs from the explicit build!)"
	exit 1
fi

say "6. What faultlined counted, per implicit check"
run "$BIN/faultline" stats
echo
echo "customer_level and cache_touch fail often: a runtime would heal those"
echo "checks (make them explicit again) and keep the rare ones implicit."

say "Done"
stop_daemon
