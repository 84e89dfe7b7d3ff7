#!/bin/bash
# Set-id programs and faultlined: nobody reads and changes through the
# daemon only what nobody could ptrace (issue 27).  Each case worked
# against its owner before, run as nobody:
#
#   - a setgid program (group mail) linked with libfaultline, run by
#     nobody, registered with root's system daemon: nobody's faultline
#     stackmaps, sites, stats --pid, invalidate, patch, heal and request
#     are refused as for another user's process ("no registered process");
#     ps, statistics without addresses, still lists it; root is served
#     (its invalidate runs win(): the program's code, changed by root);
#   - with FAULTLINE_SOCKET naming a daemon nobody runs, it registers
#     there not at all, but with the system daemon; FAULTLINE_ALLOW_PATCH=1
#     and FL_INIT_ALLOW_PATCH give root no raw code bytes;
#   - a setuid-root program likewise, and with FAULTLINE_SOCKET naming
#     another daemon of root's it registers with the system daemon only;
#   - a setgid program that loads the preload shim (it needs the library):
#     the shim reads no FAULTLINE_* variable either (FAULTLINE_LOG=debug
#     says nothing, FAULTLINE_SOCKET is not taken);
#   - a program of nobody's own that turns itself undumpable after it
#     registered: nobody is served before, refused after (live, and once
#     it exited, as its agent last reported), root throughout;
#   - a DUMPABLE message before HELLO, or after a HELLO that did not say
#     it reports: the connection is dropped, the message changes nothing.
#
# The system daemon's real path is used, hermetically: the script runs in a
# mount namespace of its own (make runs it under scripts/fresh-ns.sh) with
# a tmpfs on /run.  The programs are copies in a directory under /tmp,
# whose filesystem must allow set-id programs (no nosuid).
#
#   setid.sh FAULTLINE FAULTLINED SETID_PROG PRELOAD SETID_SHIM
set -u

FLD=$(realpath "$2")
PROG=$(realpath "$3")
PRELOAD=$(realpath "$4")
SHIM=$(realpath "$5")
PY=/usr/bin/python3
NOBODY=65534
GROUP=mail
SYS=/run/faultline/faultlined.sock
# Under /tmp, where nobody reaches its own files; removed at the end.
W=$(mktemp -d /tmp/fl-setid.XXXXXX) || exit 1
chmod 755 "$W"
cp "$1" "$W/faultline" && chmod 755 "$W/faultline"
FL=$W/faultline

SUITE="daemon setid"
. "$(dirname "$0")/harness.sh"
. "$(dirname "$0")/../wait.sh"
. "$(dirname "$0")/../own_run.sh"

as_nobody() { setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups "$@"; }

own_run setid "the test makes programs set-id and runs them as nobody"
if findmnt -n -o OPTIONS -T "$W" | tr , '\n' | grep -qx nosuid; then
	bad "$W is on a filesystem mounted nosuid: set-id programs cannot be tested there"
	exit 1
fi
gid=$(getent group $GROUP | cut -d: -f3)
if [ -z "$gid" ]; then
	bad "no group $GROUP to make the program setgid to"
	exit 1
fi
echo "kernel: $(uname -r) (${VMTEST_WHERE:-host}); setgid $GROUP ($gid), $W on" \
	"$(findmnt -n -o FSTYPE -T "$W")"

cp "$PROG" "$W/setgid-prog" && chgrp $GROUP "$W/setgid-prog" && chmod 2755 "$W/setgid-prog"
cp "$PROG" "$W/setuid-prog" && chown root:root "$W/setuid-prog" && chmod 4755 "$W/setuid-prog"
cp "$PROG" "$W/plain-prog" && chmod 755 "$W/plain-prog"
cp "$SHIM" "$W/setgid-shim" && chgrp $GROUP "$W/setgid-shim" && chmod 2755 "$W/setgid-shim"
# Where setgid-shim finds the shim (its run path), on the tmpfs of this namespace.
mkdir -m 755 /run/fl-setid-lib && cp "$PRELOAD" /run/fl-setid-lib/ &&
	chmod 755 /run/fl-setid-lib/libfaultline-preload.so

echo "# the daemons: root's system one, nobody's own, another of root's"
mkdir -m 700 "$W/state" "$W/rstate"
mkdir -m 755 "$W/r"
mkdir -m 700 "$W/n" && chown $NOBODY:$NOBODY "$W/n"
daemon system env -u FAULTLINE_SOCKET "$FLD" --no-bpf --state-dir "$W/state" --log-level debug
daemon other "$FLD" --no-bpf --socket "$W/r/s" --state-dir "$W/rstate" --log-level debug
# setpriv itself, not as_nobody (a function, run in a subshell): the pid
# kept must be the daemon's.
daemon nobody setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups "$FLD" --no-bpf \
	--socket "$W/n/s" --state-dir "$W/n/state" --log-level debug
check "root's system daemon listens at $SYS" test -S $SYS

# start NAME PROG [ARG...]: PROG run by nobody with stdin from a fifo (fd
# 8 + the slot), its output in $W/NAME.out and .err; sets PID and WIN
# from its "ready" line, FD to its fifo.  FAULTLINE_SOCKET is $SOCK when
# set, else unset (the process looks for the system daemon).  Its
# environment asks for raw code bytes: a set-id program must not believe
# it.
slot=0
start() {
	local name=$1
	shift
	mkfifo -m 666 "$W/$name.in"
	# setpriv itself in the background: the pid kept is the program's.
	setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups \
		env -u FAULTLINE_SOCKET -u XDG_RUNTIME_DIR ${SOCK:+FAULTLINE_SOCKET=$SOCK} \
		FAULTLINE_ALLOW_PATCH=1 "$@" <"$W/$name.in" >"$W/$name.out" 2>"$W/$name.err" &
	PIDS+=($!)
	eval "exec $((8 + slot))>\"\$W/\$name.in\""
	eventually grep -q "^ready" "$W/$name.out"
	PID=$(awk '/^ready/ { print $2 }' "$W/$name.out")
	WIN=$(awk '/^ready/ { print $3 }' "$W/$name.out")
	FD=$((8 + slot))
	slot=$((slot + 1))
	[ -n "$PID" ] || bad "$name: the program did not start ($(head -c 300 "$W/$name.err"))"
}
# say FD LINE FILE WANT: LINE to the program, until FILE has a line WANT.
say() {
	echo "$2" >&"$1"
	eventually grep -qx -- "$4" "$3"
}
registered_with() { grep -q "pid $2 (.*) registered" "$W/$1.log"; }
# nobody's faultline through the system daemon; root's.
nfl() { as_nobody "$FL" "$1" --socket $SYS "${@:2}"; }
rfl() { "$FL" "$1" --socket $SYS "${@:2}"; }
# refused NAME CMD...: CMD (nobody's faultline) fails, saying "no
# registered process PID" as for another user's process.
refused() {
	local name=$1
	shift
	"$@" >"$W/$name.cmd.out" 2>"$W/$name.cmd.err"
	local rc=$?
	if [ $rc != 0 ] && grep -q "no registered process $PID" "$W/$name.cmd.err"; then
		ok "$name: refused, 'no registered process $PID' (exit $rc)"
	else
		bad "$name: not refused (exit $rc): $(head -c 300 "$W/$name.cmd.out" "$W/$name.cmd.err" | tr '\n' ' ')"
	fi
}
# reaches NAME CMD...: CMD (root's) is passed on by the daemon: it
# succeeds, or the process itself answers why not.
reaches() {
	local name=$1
	shift
	"$@" >"$W/$name.cmd.out" 2>"$W/$name.cmd.err"
	local rc=$?
	if [ $rc = 0 ] || { ! grep -q "no registered process" "$W/$name.cmd.err" &&
			   grep -q "pid $PID" "$W/$name.cmd.err"; }; then
		ok "$name: passed on to the process (exit $rc$(head -c 200 "$W/$name.cmd.err" | tr '\n' ' ' | sed 's/^./: &/'))"
	else
		bad "$name: not passed on (exit $rc): $(head -c 300 "$W/$name.cmd.err" | tr '\n' ' ')"
	fi
}
# served NAME CMD...: CMD succeeds.
served() {
	local name=$1
	shift
	"$@" >"$W/$name.cmd.out" 2>"$W/$name.cmd.err"
	local rc=$?
	if [ $rc = 0 ]; then
		ok "$name: served (exit 0)"
	else
		bad "$name: not served (exit $rc): $(head -c 300 "$W/$name.cmd.err" | tr '\n' ' ')"
	fi
}
# site_of PID: its setid_load site's faulting PC, as root reads it.
site_of() {
	rfl sites --json "$1" 2>/dev/null | "$PY" -c '
import json, sys
for p in json.load(sys.stdin)["processes"]:
    for s in p.get("sites", []):
        if s.get("function") == "setid_load":
            print(hex(s["faulting_pc"]))' | head -1
}

# --- A setgid program run by nobody ----------------------------------------
echo "# a setgid program ($GROUP) run by nobody"
start sg "$W/setgid-prog" patch
check "it runs with the group $GROUP (egid $gid) and nobody's real ids" \
	test "$(awk '/^Gid:/ { print $2, $3 }' /proc/${PID:-0}/status 2>/dev/null)" = "$NOBODY $gid"
check "it registers with root's system daemon" eventually registered_with system "${PID:-none}"
say $FD call "$W/sg.out" "value 2"
check "its check failed once (a site to heal)" eventually test -n "$(site_of "${PID:-0}")"
SITE=$(site_of "${PID:-0}")
refused "sg: nobody's stackmaps" nfl stackmaps "$PID"
refused "sg: nobody's sites" nfl sites "$PID"
refused "sg: nobody's stats --pid" nfl stats --pid "$PID"
refused "sg: nobody's invalidate --id 42 --target win" nfl invalidate "$PID" --id 42 --target "$WIN"
refused "sg: nobody's patch --reset" nfl patch "$PID" --reset --patchpoint 7
refused "sg: nobody's heal" nfl heal "$PID" "${SITE:-0x1}"
refused "sg: nobody's unheal" nfl unheal "$PID" "${SITE:-0x1}"
refused "sg: nobody's request ping" nfl request "$PID" ping
refused "sg: nobody's request heal-threshold" nfl request "$PID" heal-threshold 1
nfl stats --json >"$W/sg.stats" 2>&1
check "sg: nobody's stats of every process leaves it out" \
	test -z "$(grep "\"pid\": *$PID[,}]" "$W/sg.stats")"
nfl ps --json >"$W/sg.ps" 2>&1
check "sg: nobody's ps (no addresses) still lists it" grep -q "\"pid\": *$PID[,}]" "$W/sg.ps"
say $FD call "$W/sg.out" "value 2"
check "sg: the program runs on unchanged (no win)" test -z "$(grep '^win' "$W/sg.out")"
served "sg: root's stackmaps" rfl stackmaps "$PID"
check "sg: ...which list record 42" grep -qw "42" "$W/sg: root's stackmaps.cmd.out"
served "sg: root's sites" rfl sites "$PID"
served "sg: root's request ping" rfl request "$PID" ping
served "sg: root's heal" rfl heal "$PID" "${SITE:-0x1}"
reaches "sg: root's unheal" rfl unheal "$PID" "${SITE:-0x1}"
served "sg: root's patch --reset" rfl patch "$PID" --reset --patchpoint 7
reaches "sg: root's invalidate --id 42 --target win" rfl invalidate "$PID" --id 42 --target "$WIN"
rfl patch "$PID" --patchpoint 7 --bytes 48c7c02a000000 >"$W/sg.patch.out" 2>&1
check "sg: root's raw code bytes are refused: a set-id program never opts in (exit $?)" \
	grep -q "did not opt in to raw code bytes" "$W/sg.patch.out"
check "sg: the program said it ignores FL_INIT_ALLOW_PATCH" \
	grep -q "a set-id program takes no raw code bytes" "$W/sg.err"

echo "# the setgid program with FAULTLINE_SOCKET naming nobody's daemon"
SOCK=$W/n/s start sgn "$W/setgid-prog"
check "it registers with root's system daemon" eventually registered_with system "${PID:-none}"
check "not with nobody's daemon, which FAULTLINE_SOCKET names" \
	test -n "$PID" -a -z "$(grep "pid $PID\b" "$W/nobody.log")"

# --- A setuid-root program run by nobody ------------------------------------
echo "# a setuid-root program run by nobody"
start su "$W/setuid-prog" patch
check "it runs as root (euid 0) with nobody's real uid" \
	test "$(awk '/^Uid:/ { print $2, $3 }' /proc/${PID:-0}/status 2>/dev/null)" = "$NOBODY 0"
check "it registers with root's system daemon" eventually registered_with system "${PID:-none}"
refused "su: nobody's stackmaps" nfl stackmaps "$PID"
refused "su: nobody's sites" nfl sites "$PID"
refused "su: nobody's invalidate" nfl invalidate "$PID" --id 42 --target "$WIN"
refused "su: nobody's patch --reset" nfl patch "$PID" --reset --patchpoint 7
refused "su: nobody's heal" nfl heal "$PID" 0x1
refused "su: nobody's request ping" nfl request "$PID" ping
served "su: root's stackmaps" rfl stackmaps "$PID"
served "su: root's request ping" rfl request "$PID" ping
rfl patch "$PID" --patchpoint 7 --bytes 48c7c02a000000 >"$W/su.patch.out" 2>&1
check "su: root's raw code bytes are refused: a set-id program never opts in (exit $?)" \
	grep -q "did not opt in to raw code bytes" "$W/su.patch.out"
SUPID=${PIDS[-1]}
served "su: root's invalidate --id 42 --target win" rfl invalidate "$PID" --id 42 --target "$WIN"
echo call >&$FD
check "su: ...which made it call win(), as root" \
	eventually grep -q "^win: uid $NOBODY euid 0 gid $NOBODY egid $NOBODY" "$W/su.out"
wait "$SUPID"
rc=$?
check "su: ...and win() ended it (exit $rc)" test $rc = 42
for sock in "$W/n/s" "$W/r/s"; do
	d=$([ "$sock" = "$W/n/s" ] && echo nobody || echo other)
	SOCK=$sock start "su-$d" "$W/setuid-prog"
	check "with FAULTLINE_SOCKET naming the $d daemon: it registers with the system daemon" \
		eventually registered_with system "${PID:-none}"
	check "...and not with the $d daemon" test -n "$PID" -a -z "$(grep "pid $PID\b" "$W/$d.log")"
done

# --- A setgid program with the shim ------------------------------------------
echo "# a setgid program that loads the preload shim, run by nobody"
SOCK=$W/n/s start sh env FAULTLINE_LOG=debug FAULTLINE_SUMMARY=1 "$W/setgid-shim"
check "it registers with root's system daemon" eventually registered_with system "${PID:-none}"
check "not with nobody's daemon, which FAULTLINE_SOCKET names" \
	test -n "$PID" -a -z "$(grep "pid $PID\b" "$W/nobody.log")"
eval "exec $FD>&-"
shim_done() { [ ! -e /proc/${PID:-0}/status ] || grep -qs "^State:.*Z" /proc/$PID/status; }
check "it ends (EOF)" eventually shim_done
check "FAULTLINE_LOG=debug and FAULTLINE_SUMMARY=1 are not read: the shim said nothing" \
	test ! -s "$W/sh.err"

# --- A program that turns itself undumpable ---------------------------------
echo "# nobody's own program, which turns itself undumpable after it registered"
start ud "$W/plain-prog"
check "it registers with root's system daemon" eventually registered_with system "${PID:-none}"
say $FD call "$W/ud.out" "value 2"
served "ud: nobody's stackmaps while it is dumpable" nfl stackmaps "$PID"
served "ud: nobody's request ping while it is dumpable" nfl request "$PID" ping
say $FD undumpable "$W/ud.out" undumpable
refused "ud: nobody's stackmaps once undumpable" nfl stackmaps "$PID"
refused "ud: nobody's sites once undumpable" nfl sites "$PID"
refused "ud: nobody's stats --pid once undumpable" nfl stats --pid "$PID"
refused "ud: nobody's invalidate once undumpable" nfl invalidate "$PID" --id 42 --target "$WIN"
refused "ud: nobody's patch --reset once undumpable" nfl patch "$PID" --reset --patchpoint 7
refused "ud: nobody's request ping once undumpable" nfl request "$PID" ping
served "ud: root's stackmaps" rfl stackmaps "$PID"
served "ud: root's request ping" rfl request "$PID" ping
check "ud: its agent told the daemon" eventually grep -q "pid $PID: not dumpable" "$W/system.log"
eval "exec $FD>&-"
exited() {
	rfl ps --json 2>/dev/null | "$PY" -c '
import json, sys
sys.exit(not [p for p in json.load(sys.stdin)["processes"]
              if p["pid"] == int(sys.argv[1]) and p["exited"]])' "$PID"
}
check "ud: it exits (EOF)" eventually exited
refused "ud: nobody's stats --pid once it exited (as its agent last said)" nfl stats --pid "$PID"
served "ud: root's stats --pid once it exited" rfl stats --pid "$PID"

# --- DUMPABLE out of place ----------------------------------------------------
echo "# DUMPABLE out of place"
cat >"$W/dumpable.py" <<'EOF'
import os, socket, struct, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
# magic, version, type DUMPABLE (8), length, seq; dumpable 1, reserved 0.
s.send(struct.pack("<IHHIIII", 0x504c4c46, 1, 8, 24, 7, 1, 0))
s.settimeout(60)
try:
    while s.recv(65536):
        pass
    print("closed")
except OSError as e:
    print("error", e)
EOF
as_nobody "$PY" "$W/dumpable.py" $SYS >"$W/dumpable.out" 2>&1
check "a DUMPABLE before HELLO: the connection is closed" grep -qx closed "$W/dumpable.out"
check "...and the daemon says why" eventually grep -q "DUMPABLE: before HELLO" "$W/system.log"

stop_daemons
echo "daemon setid: $pass passed, $fail failed"
[ $fail = 0 ]
