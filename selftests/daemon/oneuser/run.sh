#!/bin/bash
# One daemon for every user: a process that is not root registers with the
# system faultlined (root's, at /run/faultline/faultlined.sock) when it has
# no daemon of its own, and says so at --log info; the user's own daemon
# wins when it runs; with none, the process says which paths it tried.
# The system daemon serves the user's process as any other, within the
# permission model: nobody sees its own processes, not root's.
#
# The real default path is tested, hermetically: the script runs in a mount
# namespace of its own (make runs it under scripts/fresh-ns.sh) with a
# tmpfs on /run, so that it neither sees nor touches this machine's
# /run/faultline.
#
#   run.sh FAULTLINE FAULTLINED PRELOAD E2E_PROG
set -u

FL=$(realpath "$1")
FLD=$(realpath "$2")
PRELOAD=$(realpath "$3")
PROG=$(realpath "$4")
PY=/usr/bin/python3
NOBODY=65534
SYS=/run/faultline/faultlined.sock
# Under /tmp, where nobody reaches its own directories; removed at the end.
W=$(mktemp -d /tmp/fl-oneuser.XXXXXX) || exit 1
chmod 755 "$W"

SUITE="daemon oneuser"
. "$(dirname "$0")/../hostile/harness.sh"
. "$(dirname "$0")/../wait.sh"
. "$(dirname "$0")/../own_run.sh"

as_nobody() { setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups "$@"; }

own_run oneuser "the test runs the system daemon as root and a client as nobody"

# A runtime directory of nobody's own, where no daemon of nobody's runs yet.
mkdir -m 700 "$W/nxdg" "$W/nstate" && chown $NOBODY:$NOBODY "$W/nxdg" "$W/nstate"
NENV=(env -u FAULTLINE_SOCKET -u FAULTLINE_REGISTER_WAIT_MS XDG_RUNTIME_DIR="$W/nxdg"
	XDG_STATE_HOME="$W/nstate" FAULTLINE_LOG=info LD_PRELOAD="$PRELOAD")
RENV=(env -u FAULTLINE_SOCKET -u FAULTLINE_REGISTER_WAIT_MS FAULTLINE_LOG=info
	LD_PRELOAD="$PRELOAD")

echo "# the system daemon, root's, at its default path"
mkdir -m 700 "$W/state"
daemon system env -u FAULTLINE_SOCKET "$FLD" --no-bpf --state-dir "$W/state" --log-level debug
check "it listens at $SYS" test -S $SYS
check "its socket is 0666: every user may connect (the daemon checks each request's uid)" \
	test "$(stat -c %a $SYS)" = 666
check "/run/faultline is root's and 0755: no other user can bind the path first" \
	test "$(stat -c '%u %a' /run/faultline)" = "0 755"
as_nobody "$PY" -c 'import socket,sys; socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET).bind(sys.argv[1])' \
	/run/faultline/other.sock 2>"$W/bind.err"
check "nobody cannot bind a socket in /run/faultline (EACCES)" \
	grep -q "Permission denied" "$W/bind.err"

echo "# nobody's process, no daemon of its own: the system daemon's"
as_nobody "${NENV[@]}" "$PROG" run 2 1 0 >"$W/n1.out" 2>"$W/n1.err"
check "nobody's process ran (exit $?)" grep -q "^pid " "$W/n1.out"
npid=$(awk '/^pid/ { print $2 }' "$W/n1.out")
check "its info line names the system daemon" \
	grep -qF "faultline: info: registered with faultlined at $SYS (system daemon)" "$W/n1.err"
# stats_has FILE PID UID FAULTS: FILE (stats --json) has PID of UID, exited, with FAULTS.
stats_has() {
	"$PY" -c '
import json, sys
d = json.load(open(sys.argv[1]))
p = [p for p in d["processes"] if p["pid"] == int(sys.argv[2])]
sys.exit(not (p and p[0]["uid"] == int(sys.argv[3]) and p[0]["exited"] and
              p[0]["faults"] == int(sys.argv[4])))' "$@" 2>/dev/null
}
root_stats() { env -u FAULTLINE_SOCKET "$FL" stats --json >"$W/rstats.json" 2>"$W/rstats.err"; }
counted() { root_stats && stats_has "$W/rstats.json" "${npid:-0}" $NOBODY 3; }
check "root's faultline stats counts it: uid $NOBODY, 3 faults" eventually counted
grep -q "(pid ${npid:-none} uid $NOBODY) registered" "$W/system.log" ||
	grep -q "pid ${npid:-none} (.*uid $NOBODY) registered" "$W/system.log"
check "the system daemon says it registered nobody's process" test $? = 0

echo "# root's process beside it, and what nobody sees"
"${RENV[@]}" "$PROG" run 1 0 0 >"$W/r1.out" 2>"$W/r1.err"
rpid=$(awk '/^pid/ { print $2 }' "$W/r1.out")
check "root's process names the system daemon" \
	grep -qF "registered with faultlined at $SYS (system daemon)" "$W/r1.err"
rcounted() { root_stats && stats_has "$W/rstats.json" "${rpid:-0}" 0 1; }
check "root's process is counted (1 fault)" eventually rcounted
as_nobody env -u FAULTLINE_SOCKET XDG_RUNTIME_DIR="$W/nxdg" "$FL" stats --json \
	>"$W/nstats.json" 2>"$W/nstats.err"
check "nobody's faultline stats, no daemon of its own, asks the system daemon: its process" \
	stats_has "$W/nstats.json" "${npid:-0}" $NOBODY 3
check "...and not root's" test -n "$rpid" -a -z "$(grep "\"pid\": *${rpid:-none}[,}]" "$W/nstats.json")"
as_nobody env -u FAULTLINE_SOCKET XDG_RUNTIME_DIR="$W/nxdg" "$FL" stats --pid "${rpid:-0}" \
	>/dev/null 2>"$W/nstats-root.err"
check "nobody's stats --pid of root's process is refused (exit $?)" test $? != 0

echo "# requests: to one's own process, not to another user's"
mkfifo -m 666 "$W/rin" "$W/nin"
"${RENV[@]}" "$PROG" wait 1 0 0 <"$W/rin" >"$W/rw.out" 2>"$W/rw.err" &
PIDS+=($!)
exec 8>"$W/rin"
# setpriv itself in the background: the pid kept is the program's.
setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups "${NENV[@]}" "$PROG" wait 1 0 0 \
	<"$W/nin" >"$W/nw.out" 2>"$W/nw.err" &
PIDS+=($!)
exec 7>"$W/nin"
ready() { grep -q "^ready" "$1"; }
eventually ready "$W/rw.out" && eventually ready "$W/nw.out"
check "root's and nobody's waiting programs are up" test $? = 0
rwpid=$(awk '/^ready/ { print $2 }' "$W/rw.out")
nwpid=$(awk '/^ready/ { print $2 }' "$W/nw.out")
# FAULTLINE_LOG=info: the WELCOME may come after the line "ready".
check "nobody's waiting program registered with the system daemon" \
	eventually grep -qF "registered with faultlined at $SYS (system daemon)" "$W/nw.err"
nreq() {
	as_nobody env -u FAULTLINE_SOCKET XDG_RUNTIME_DIR="$W/nxdg" "$FL" request "$@"
}
nreq "${nwpid:-0}" ping >"$W/ping-own.out" 2>"$W/ping-own.err"
check "nobody's request to its own process, through the system daemon, is answered (exit $?)" \
	test $? = 0
nreq "${rwpid:-0}" ping >/dev/null 2>"$W/ping-root.err"
check "nobody's request to root's process is answered as if there were none (exit $?)" \
	grep -q "no registered process ${rwpid:-none}" "$W/ping-root.err"
env -u FAULTLINE_SOCKET "$FL" request "${nwpid:-0}" ping >/dev/null 2>"$W/ping-root-n.err"
check "root's request to nobody's process is answered (exit $?)" test $? = 0
exec 7>&- 8>&-

echo "# nobody's own daemon wins over the system one"
# setpriv itself, not as_nobody (a function, run in a subshell): the pid
# kept must be the daemon's.
daemon user setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups env -u FAULTLINE_SOCKET XDG_RUNTIME_DIR="$W/nxdg" \
	XDG_STATE_HOME="$W/nstate" "$FLD" --no-bpf --log-level debug
as_nobody "${NENV[@]}" "$PROG" run 1 1 0 >"$W/n2.out" 2>"$W/n2.err"
n2pid=$(awk '/^pid/ { print $2 }' "$W/n2.out")
check "the info line names nobody's own daemon" \
	grep -qF "registered with faultlined at $W/nxdg/faultline/faultlined.sock (user daemon)" \
	"$W/n2.err"
ncounted() {
	as_nobody env -u FAULTLINE_SOCKET XDG_RUNTIME_DIR="$W/nxdg" "$FL" stats --json \
		>"$W/nstats2.json" 2>"$W/nstats2.err" &&
		stats_has "$W/nstats2.json" "${n2pid:-0}" $NOBODY 2
}
check "nobody's faultline stats asks its own daemon, which counted it (2 faults)" eventually ncounted
check "...and the system daemon never saw it" \
	test -n "$n2pid" -a -z "$(grep "pid ${n2pid:-none}\b" "$W/system.log")"

echo "# FAULTLINE_SOCKET names one daemon, and no other is tried"
as_nobody "${NENV[@]}" FAULTLINE_SOCKET="$W/nxdg/none.sock" "$PROG" run 1 0 0 \
	>/dev/null 2>"$W/n3.err"
check "the info line says none answered at FAULTLINE_SOCKET's path, and names no other" \
	grep -qxF "faultline: info: no faultlined answered at $W/nxdg/none.sock (FAULTLINE_SOCKET): not registered; trying again in the background" \
	"$W/n3.err"

echo "# no daemon at all"
stop_daemons
as_nobody "${NENV[@]}" "$PROG" run 1 0 0 >"$W/n4.out" 2>"$W/n4.err"
check "nobody's process runs without a daemon" grep -q "^pid " "$W/n4.out"
check "its info line says none answered, at its own path and then the system's" \
	grep -qF "faultline: info: no faultlined answered at $W/nxdg/faultline/faultlined.sock (user daemon), $SYS (system daemon): not registered" \
	"$W/n4.err"
"${RENV[@]}" "$PROG" run 1 0 0 >/dev/null 2>"$W/r2.err"
check "root's says none answered at the system path alone" \
	grep -qF "faultline: info: no faultlined answered at $SYS (system daemon): not registered" \
	"$W/r2.err"
as_nobody env -u FAULTLINE_SOCKET -u XDG_RUNTIME_DIR FAULTLINE_LOG=info LD_PRELOAD="$PRELOAD" \
	"$PROG" run 1 0 0 >/dev/null 2>"$W/n5.err"
check "without XDG_RUNTIME_DIR, nobody's looks at the system path alone" \
	grep -qF "faultline: info: no faultlined answered at $SYS (system daemon): not registered" \
	"$W/n5.err"

echo "daemon oneuser: $pass passed, $fail failed"
[ $fail = 0 ]
