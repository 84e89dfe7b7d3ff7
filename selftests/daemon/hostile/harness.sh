# SPDX-License-Identifier: MIT
# Sourced by run.sh and fair.sh, with SUITE (its name) and W (its work
# directory) set: counted checks, and every process a test started (in
# PIDS) killed at the end, also when it fails; W removed when all passed.

pass=0
fail=0
ok() { pass=$((pass + 1)); echo "  ok   $*"; }
bad() { fail=$((fail + 1)); echo "  FAIL $*"; }
check() { local what=$1; shift; if "$@"; then ok "$what"; else bad "$what"; fi; }

PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
	if [ $fail = 0 ]; then rm -rf "$W"; else echo "$SUITE: logs kept in $W"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
