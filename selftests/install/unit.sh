#!/bin/bash
# The installed systemd units: systemd-analyze verify finds nothing to say,
# the service's exposure (systemd-analyze security --offline=yes) is at
# most what its sandbox reached, and faultlined still works in as much of
# that sandbox as can be built without systemd as PID 1: only CAP_BPF and
# CAP_PERFMON (setpriv --bounding-set), no new privileges, /sys read-only
# (ProtectKernelTunables=), a /proc of processes only (ProcSubset=pid) and no
# network (PrivateNetwork=): it loads its eBPF program and a process
# registers with it.  The seccomp filter is not reproduced here: the unit
# allows what strace -f showed the daemon call (see faultlined.service).
#   unit.sh ROOT PREFIX WORKDIR    (ROOT: the DESTDIR)
set -u
ROOT=$1
PREFIX=$2
W=$3
# The exposure the unit reached (9.6 without a sandbox); a change that
# raises it fails here.
MAX_EXPOSURE=1.1
rm -rf "$W" && mkdir -p "$W" && cd "$W" || exit 1
U=$ROOT$PREFIX/lib/systemd/system
status=0

# verify: with ExecStart pointed at the staged binary, which must exist.
mkdir -p units
sed "s|^ExecStart=$PREFIX/|ExecStart=$ROOT$PREFIX/|" "$U/faultlined.service" >units/faultlined.service
cp "$U/faultlined.socket" units/
if ! systemd-analyze verify --man=no units/faultlined.socket units/faultlined.service >verify.out 2>&1 ||
	[ -s verify.out ]; then
	echo "unit: systemd-analyze verify:"; sed 's/^/  | /' verify.out
	status=1
fi
systemd-analyze security --offline=yes "$U/faultlined.service" >security.out 2>&1
exposure=$(sed -n 's/.*Overall exposure level for faultlined.service: \([0-9.]*\).*/\1/p' security.out)
if [ -z "$exposure" ]; then
	echo "unit: systemd-analyze security said no exposure:"; sed 's/^/  | /' security.out | tail -5
	status=1
elif awk -v e="$exposure" -v m="$MAX_EXPOSURE" 'BEGIN { exit !(e > m) }'; then
	echo "unit: faultlined.service's exposure is $exposure, above $MAX_EXPOSURE:"
	grep '✗' security.out | sed 's/^/  | /'
	status=1
fi

# The daemon in the sandbox's reproducible part.
if [ "$(ps -p 1 -o comm=)" = systemd ]; then
	echo "unit: note: systemd is PID 1, but this test does not start units on the machine"
fi
DPID= SPID=
cleanup() {
	[ -n "$SPID" ] && kill "$SPID" 2>/dev/null
	[ -n "$DPID" ] && kill "$DPID" 2>/dev/null
	wait 2>/dev/null
}
trap cleanup EXIT
FLD=$ROOT$PREFIX/bin/faultlined
FL=$ROOT$PREFIX/bin/faultline
mkdir -p state
unshare --mount --net --propagation private -- bash -c '
	set -e
	mount --bind /sys /sys && mount -o remount,bind,ro /sys
	mount -t proc -o subset=pid proc /proc
	exec setpriv --bounding-set -all,+bpf,+perfmon --inh-caps -all --no-new-privs \
		"$0" --socket "$1" --state-dir "$2"' \
	"$FLD" "$W/fld.sock" "$W/state" 2>fld.log &
DPID=$!
for _ in $(seq 300); do
	grep -q 'listening on' fld.log && break
	kill -0 "$DPID" 2>/dev/null || break
	sleep 0.1
done
if ! grep -q 'listening on .*eBPF on' fld.log; then
	echo "unit: faultlined in the sandbox did not start with its eBPF program:"
	sed 's/^/  | /' fld.log
	exit 1
fi
# The sandbox is the one meant: the daemon holds CAP_BPF (39) and
# CAP_PERFMON (38), no other.
caps=$(awk '$1 == "CapBnd:" || $1 == "CapEff:" { printf "%s %s ", $1, $2 }' /proc/$DPID/status)
if [ "$caps" != "CapEff: 000000c000000000 CapBnd: 000000c000000000 " ]; then
	echo "unit: the sandboxed faultlined's capabilities are: $caps"
	status=1
fi
FAULTLINE_SOCKET=$W/fld.sock "$FL" run sleep 300 &
SPID=$!
for _ in $(seq 100); do
	"$FL" ps --socket "$W/fld.sock" 2>/dev/null | grep -q "^$SPID .* live" && break
	sleep 0.1
done
if ! "$FL" ps --socket "$W/fld.sock" | grep -q "^$SPID .* live"; then
	echo "unit: a process did not register with the sandboxed faultlined:"
	sed 's/^/  | /' fld.log
	status=1
fi
if grep -qi 'denied\|not permitted\|EPERM' fld.log; then
	echo "unit: the sandboxed faultlined was refused something:"
	sed 's/^/  | /' fld.log
	status=1
fi
[ $status -eq 0 ] && echo "unit: ok (verify clean, exposure $exposure <= $MAX_EXPOSURE, eBPF loaded and a process registered with only CAP_BPF and CAP_PERFMON, /sys read-only, /proc subset=pid, no network)"
exit $status
