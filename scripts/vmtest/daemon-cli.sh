#!/bin/bash
# faultline's commands against faultlined in the QEMU guest (make vmtest):
#   daemon-cli.sh FAULTLINE FAULTLINED PROG
# PROG is the daemon e2e's e2e-prog.  A program run under faultline run
# fails 3, 5 and 7 checks; faultline stats must show those counts with the
# eBPF program's (the KERNEL column) equal, and ps must list the process.
# make check-daemon-cli's suite is left out here (it says why).
set -u
fl=$(realpath "$1")
fld=$(realpath "$2")
prog=$(realpath "$3")
passed=0
failed=0
ok() { echo "ok - $*"; passed=$((passed + 1)); }
bad() { echo "FAIL - $*"; failed=$((failed + 1)); }

echo "left out in the guest: make check-daemon-cli: it builds its program with llc-14 and" \
	"gcc, reads the exposition formats with python3's prometheus_client and drives top" \
	"in tmux, none of which the initramfs carries; runs natively"

# How long to wait for what must happen: minutes, for TCG on a busy machine.
WAIT_S=300
T=$(mktemp -d /tmp/fl-cli.XXXXXX)
dpid=
cleanup() {
	if [ -n "$dpid" ]; then
		kill -KILL "$dpid" 2>/dev/null
		wait "$dpid" 2>/dev/null
	fi
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
export FAULTLINE_SOCKET=$T/d.sock
# fl_init waits for the whole handshake (10 ms by default): the kernel's
# per-site counts checked below then cover the program, however slow TCG is.
export FAULTLINE_REGISTER_WAIT_MS=300000
"$fld" --socket "$FAULTLINE_SOCKET" --state-dir "$T/state" 2>"$T/daemon.log" &
dpid=$!
end=$((SECONDS + WAIT_S))
until grep -q "listening on" "$T/daemon.log" || ! kill -0 "$dpid" 2>/dev/null ||
	[ $SECONDS -ge $end ]; do
	sleep 0.05
done
grep -q "listening on" "$T/daemon.log" || { bad "faultlined did not start: $(cat "$T/daemon.log")"; exit 1; }
echo "# $(grep -o 'listening on .*' "$T/daemon.log")"

out=$("$fl" run -- "$prog" run 3 5 7 2>&1)
pid=${out#pid }
[ "$pid" -gt 0 ] 2>/dev/null && ok "faultline run: the program ran (pid $pid)" ||
	{ bad "faultline run: $out"; exit 1; }

# The table: one row per site, FAULTS and KERNEL its last two columns
# (KERNEL once the daemon has the eBPF program's view of the exited
# process: a tick or two later), each function with its offset.
end=$((SECONDS + WAIT_S))
until "$fl" stats --pid "$pid" >"$T/stats" 2>&1 && grep -q 'FAULTS *KERNEL$' "$T/stats"; do
	[ $SECONDS -lt $end ] || break
	sleep 0.1
done
sed 's/^/  | /' "$T/stats"
sites=$(awk '{ for (i = 2; i <= NF; i++) if ($i ~ /^0x[0-9a-f]+$/ && $(i - 1) ~ /^e2e_/)
	print $(i - 1) "=" $(NF - 1) "/" $NF }' "$T/stats" | sort | tr '\n' ' ')
[ "$sites" = "e2e_load+0x0=3/3 e2e_rmw+0x0=7/7 e2e_store+0x0=5/5 " ] &&
	ok "faultline stats: faults 3, 5, 7 at the three sites, the kernel's counts equal" ||
	bad "faultline stats: site=faults/kernel: $sites"
"$fl" stats --json --pid "$pid" | grep -q '"bpf":true' &&
	ok "faultline stats --json: \"bpf\": true" || bad "faultline stats --json: no \"bpf\":true"
"$fl" ps | awk -v p="$pid" '$1 == p && $3 == "exited" { f = 1 } END { exit !f }' &&
	ok "faultline ps: the process listed as exited" || bad "faultline ps: $("$fl" ps 2>&1)"

kill -TERM $dpid
wait $dpid
rc=$?
dpid=
[ $rc = 0 ] && ok "SIGTERM: faultlined exits 0" || bad "SIGTERM: faultlined exits $rc"
echo "daemon cli: $passed passed, $failed failed"
[ $failed = 0 ]
