#!/bin/bash
# faultlined end to end (make check-daemon-e2e):
#   run.sh E2E FAULTLINED PRELOAD PROG LOAD OUTDIR [GROUP...]
# Groups (group-GROUP.c; harness.c): counts, churn, restart, persist (a live
# process's counts file), request,
# security, load, kernel (the daemon with its eBPF program: kernel counts
# equal to dispatch's), bell (the completion bell and DONE, with fake
# processes and a fake daemon) (default: all; E2E_GROUPS="..." too); each runs
# alone, in a driver and with a daemon of its own.  Runs as root: some
# clients and programs drop to nobody.  Daemon and program logs:
# OUTDIR/GROUP-*.log.
set -u
echo "kernel: $(uname -r) (${VMTEST_WHERE:-host})"
E2E=$(realpath "$1")
FLD=$(realpath "$2")
PRELOAD=$(realpath "$3")
PROG=$(realpath "$4")
LOAD=$(realpath "$5")
OUT=$(realpath -m "$6")
shift 6
groups=${*:-${E2E_GROUPS:-counts churn restart persist request security load kernel bell}}
mkdir -p "$OUT"
rm -f "$OUT"/*.log

if [ "$(id -u)" != 0 ]; then
	echo "skip - daemon e2e: runs as root (clients and programs drop to nobody)"
	exit 0
fi

# A short directory every user can traverse: the socket (a path has at
# most 107 bytes), state directories, and what nobody runs.
T=$(mktemp -d /tmp/fld-e2e.XXXXXX)
chmod 755 "$T"
# The group running, killed when this script ends early (its daemons and
# programs die with it: harness.c), before its directory goes.
running=
cleanup() {
	if [ -n "$running" ]; then
		kill -KILL "$running" 2>/dev/null
		wait "$running" 2>/dev/null
	fi
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
install -m 755 "$PROG" "$T/e2e-prog"
install -m 755 "$(dirname "$PROG")/libe2e-sites.so" "$T/libe2e-sites.so"
install -m 755 "$PRELOAD" "$T/libfaultline-preload.so"

passed=0
failed=0
for g in $groups; do
	echo "-- $g"
	start=$SECONDS
	"$E2E" "$g" "$OUT" "$T" "$FLD" "$T/libfaultline-preload.so" "$T/e2e-prog" "$LOAD" \
		>"$OUT/$g.out" 2>&1 &
	running=$!
	wait "$running"
	rc=$?
	running=
	sed -n '/^\(ok\|FAIL\|skip\|#\) /p' "$OUT/$g.out" | sed 's/^/  /'
	p=$(grep -c '^ok - ' "$OUT/$g.out")
	f=$(grep -c '^FAIL - ' "$OUT/$g.out")
	if [ $rc != 0 ] && [ "$f" = 0 ]; then
		echo "  FAIL - $g: exit $rc: $(tail -3 "$OUT/$g.out")"
		f=1
	fi
	echo "  $g: $p passed, $f failed ($((SECONDS - start)) s)"
	passed=$((passed + p))
	failed=$((failed + f))
	rm -rf "$T"/state-* "$T/d.sock"
done
echo "daemon e2e: $passed passed, $failed failed"
[ $failed = 0 ]
