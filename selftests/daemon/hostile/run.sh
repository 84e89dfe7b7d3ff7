#!/bin/bash
# A local user against faultlined and the processes that register with it:
# each case is an attack that worked before, run as nobody against root.
#
#   - a socket path bound first by nobody: root's program must not hand it
#     its region, root's faultline stats must not believe it;
#   - a listener that never accepts (its backlog full): a program under the
#     shim and faultline stats must go on, not wait in connect();
#   - directories nobody could change (a state or socket directory of
#     nobody's, one writable by all and not sticky, a link of nobody's on
#     the way), and a state "directory" that is a file: refused at start,
#     with the reason;
#   - a state.json.tmp planted by nobody in a sticky state directory, a
#     link to a file of root's: the file must stay as it was;
#   - a corrupt, a too large and a version 2 state.json: kept aside as
#     state.json.corrupt-TIME, byte for byte, never overwritten; a record
#     (proc.N.json) with a site missing, or that is a link, likewise, the
#     other records restored;
#   - the state is loaded before the daemon listens;
#   - a program that closes every descriptor from 3 to 1023 at start, then
#     opens its own files, takes faults, loads a library and forks (the
#     child living through a kill -9 and restart of the daemon): faultline
#     must never write, close or send one of the program's files.
#
#   - memfd_create denied by a seccomp filter: the program's implicit
#     checks still dispatch, with counters in private memory;
#   - RLIMIT_NOFILE 4: the program keeps its one free descriptor, and its
#     checks dispatch, counted in private memory;
#   - a stopped daemon: fl_init and fork wait 10 ms at most, and
#     the process is registered once when the daemon runs again, its
#     kernel counts not claimed whole; a running one: whole, for a forked
#     child too;
#   - two users holding every connection they can: root's queries and
#     programs still get in, and connections that say nothing are dropped,
#     as is one that sent a query and then nothing; a registered process
#     stays however silent.
#
#   run.sh FAULTLINE FAULTLINED PRELOAD FDCLOSE LIB NOMEMFD PROG REGION
set -u

FLD=$(realpath "$2")
PRELOAD=$(realpath "$3")
FDCLOSE=$(realpath "$4")
LIB=$(realpath "$5")
NOMEMFD=$(realpath "$6")
E2EPROG=$(realpath "$7")
E2EREGION=$(realpath "$8")
PY=/usr/bin/python3
NOBODY=65534
# Under /tmp, where nobody reaches its own files (the tree may not be
# reachable), removed at the end; nobody runs a copy of faultline.
W=$(mktemp -d /tmp/fl-hostile.XXXXXX) || exit 1
chmod 755 "$W"
cp "$1" "$W/faultline" && chmod 755 "$W/faultline"
FL=$W/faultline

SUITE="daemon hostile"
. "$(dirname "$0")/harness.sh"

as_nobody() { setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups "$@"; }

# wait_for FILE: until it exists (an event), 120 s at most.
wait_for() {
	local i
	for ((i = 0; i < 1200; i++)); do
		[ -e "$1" ] && return 0
		sleep 0.1
	done
	return 1
}

echo "kernel: $(uname -r) (${VMTEST_WHERE:-host})"

# A listener that records what it is sent: "data BYTES fds N" per message.
cat >"$W/fake.py" <<'EOF'
import array, os, socket, sys, time
path, log, backlog, accept = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1"
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.bind(path)
s.listen(backlog)
open(log + ".ready", "w").close()
if not accept:
    time.sleep(600)
s.settimeout(600)
with open(log, "a") as out:
    while True:
        c, _ = s.accept()
        c.settimeout(5)
        try:
            while True:
                fds = array.array("i")
                msg, anc, flags, addr = c.recvmsg(65536, socket.CMSG_SPACE(64 * 4))
                for level, kind, data in anc:
                    if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                        fds.frombytes(data[:len(data) - len(data) % fds.itemsize])
                for fd in fds:
                    os.close(fd)
                if not msg:
                    break
                out.write("data %d fds %d\n" % (len(msg), len(fds)))
                out.flush()
        except OSError:
            pass
        c.close()
EOF

# fake NAME UID BACKLOG ACCEPT: starts a fake daemon at $W/NAME/s.
fake() {
	local name=$1 uid=$2 backlog=$3 accept=$4
	mkdir -p "$W/$name"
	chmod 1777 "$W/$name"
	if [ "$uid" = 0 ]; then
		"$PY" "$W/fake.py" "$W/$name/s" "$W/$name/log" "$backlog" "$accept" &
	else
		# setpriv itself in the background (it execs python3), not a
		# function: the pid kept must be the listener's.
		setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups \
			"$PY" "$W/fake.py" "$W/$name/s" "$W/$name/log" "$backlog" "$accept" &
	fi
	PIDS+=($!)
	wait_for "$W/$name/log.ready" || bad "$name: the fake daemon did not start"
}

# --- A socket path squatted by nobody -------------------------------------
echo "# squatted socket"
fake own 0 16 1
fake squat $NOBODY 16 1
FAULTLINE_SOCKET=$W/own/s timeout 120 "$FL" run --preload "$PRELOAD" -- /bin/true
FAULTLINE_SOCKET=$W/squat/s timeout 120 "$FL" run --preload "$PRELOAD" --log warn -- /bin/true 2>"$W/squat/run.err"
# The agent sends HELLO with its region at once, or never.
sleep 1
check "control: a fake daemon of root's own uid receives HELLO with the region" \
	grep -q "fds 1" "$W/own/log"
check "a socket of nobody's receives nothing from root's program (no HELLO, no region)" \
	test ! -s "$W/squat/log"
check "the program says why it does not register" \
	grep -q "served by uid $NOBODY, neither root nor this process's uid 0" "$W/squat/run.err"
FAULTLINE_SOCKET=$W/squat/s timeout 120 "$FL" stats >"$W/squat/stats.out" 2>"$W/squat/stats.err"
rc=$?
check "root's faultline stats does not believe nobody's daemon (exit $rc)" test $rc = 1
check "faultline stats says who serves the path" \
	grep -q "is served by uid $NOBODY, neither root nor you" "$W/squat/stats.err"
check "faultline stats prints no figures from it" test ! -s "$W/squat/stats.out"
as_nobody env FAULTLINE_SOCKET=$W/squat/s timeout 120 "$FL" stats >/dev/null 2>"$W/squat/nstats.err"
check "nobody's own faultline stats does talk to it (the check is by uid)" \
	grep -q "data" "$W/squat/log"

# --- A listener that never accepts ----------------------------------------
echo "# a listener that never accepts, backlog 1"
fake stuck 0 1 0
for i in 1 2 3 4; do
	t0=$(date +%s.%N)
	FAULTLINE_SOCKET=$W/stuck/s timeout 120 "$FL" run --preload "$PRELOAD" -- /bin/true
	rc=$?
	t1=$(date +%s.%N)
	check "program $i under the shim runs to its end (exit $rc; $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f s", b - a }'))" \
		test $rc = 0
done
FAULTLINE_SOCKET=$W/stuck/s timeout 120 "$FL" stats 2>"$W/stuck/stats.err"
rc=$?
check "faultline stats fails at once, not in connect() (exit $rc)" test $rc = 1
check "faultline stats says the daemon is not accepting" \
	grep -q "not accepting connections" "$W/stuck/stats.err"

# --- Directories another user could change ---------------------------------
echo "# state and socket directories"
# start_refused NAME SOCKET STATE MESSAGE: faultlined must exit 1 at once, saying MESSAGE.
start_refused() {
	local name=$1 sock=$2 state=$3 msg=$4 rc log
	log=$W/refused.$((++refused)).log
	timeout 120 "$FLD" --no-bpf --socket "$sock" --state-dir "$state" >"$log" 2>&1
	rc=$?
	check "$name: refused at start (exit $rc)" test $rc = 1
	check "$name: says why ($msg)" grep -qF -- "$msg" "$log"
	[ $rc = 1 ] || sed 's/^/    | /' "$log" | tail -3
}
refused=0
mkdir -m 700 "$W/d"
mkdir "$W/nd" && chown $NOBODY:$NOBODY "$W/nd"
start_refused "state directory of nobody's" "$W/d/s" "$W/nd" \
	"$W/nd belongs to uid $NOBODY, neither root nor faultlined's uid 0"
start_refused "state directory under one of nobody's" "$W/d/s" "$W/nd/state" \
	"$W/nd belongs to uid $NOBODY"
start_refused "socket directory of nobody's" "$W/nd/s" "$W/d/state" \
	"its directory is not safe to serve from: $W/nd belongs to uid $NOBODY"
mkdir "$W/ww" && chmod 0777 "$W/ww"
start_refused "socket directory writable by all, not sticky" "$W/ww/s" "$W/d/state" \
	"$W/ww is writable by other users (mode 0777) and not sticky"
ln -s "$W/d" "$W/nlink" && chown -h $NOBODY:$NOBODY "$W/nlink"
start_refused "state path through a link of nobody's" "$W/d/s" "$W/nlink/state" \
	"$W/nlink is a symbolic link of uid $NOBODY"
start_refused "--state-dir /etc/passwd (checked at start, not at exit)" "$W/d/s" /etc/passwd \
	"--state-dir /etc/passwd: /etc/passwd: Not a directory"
check "nothing was created in nobody's directory" test -z "$(ls -A "$W/nd")"
# A link of root's on the way is followed, a relative one with ".." too
# (Fedora's /var/run -> ../run).
mkdir -m 755 "$W/var"
ln -s ../d "$W/var/run"
timeout 120 "$FLD" --no-bpf --socket "$W/var/run/rel.sock" --state-dir "$W/var/run/relstate" \
	>"$W/rel.log" 2>&1 &
rel=$!
PIDS+=($rel)
wait_for "$W/d/rel.sock"
check "a relative link of root's with .. on the way is followed (socket and state in $W/d)" \
	test -S "$W/d/rel.sock" -a -d "$W/d/relstate"
kill -TERM $rel 2>/dev/null
wait $rel 2>/dev/null

# daemon NAME SOCKET STATE: starts faultlined, waits until it listens and
# has said so.
daemon() {
	local name=$1 i
	"$FLD" --no-bpf --socket "$2" --state-dir "$3" --log-level debug ${4:-} >"$W/$name.log" 2>&1 &
	DPID=$!
	PIDS+=($DPID)
	wait_for "$2" || bad "$name: faultlined did not listen (log $W/$name.log)"
	for ((i = 0; i < 1200; i++)); do
		grep -q "listening on" "$W/$name.log" && return
		sleep 0.1
	done
	bad "$name: faultlined did not say it listens (log $W/$name.log)"
}
stop_daemon() {
	kill -TERM "$DPID" 2>/dev/null
	wait "$DPID" 2>/dev/null
}

echo "# a sticky state directory, a planted state.json.tmp"
mkdir -m 1777 "$W/sticky"
echo "root's secret" >"$W/d/victim" && chmod 600 "$W/d/victim"
cp "$W/d/victim" "$W/victim.orig"
as_nobody ln -s "$W/d/victim" "$W/sticky/state.json.tmp"
start_refused "a sticky state directory writable by all" "$W/d/s1" "$W/sticky" \
	"writable by other users (mode 1777): the state directory must be the daemon's alone"
check "the root file behind nobody's state.json.tmp link is unchanged" \
	cmp -s "$W/d/victim" "$W/victim.orig"
# In a directory of its own, a state.json.tmp link is never written through.
mkdir -m 700 "$W/ownstate"
ln -s "$W/d/victim" "$W/ownstate/state.json.tmp"
ln "$W/d/victim" "$W/ownstate/state.json"
daemon planted "$W/d/s1" "$W/ownstate"
FAULTLINE_SOCKET=$W/d/s1 timeout 120 "$FL" run --preload "$PRELOAD" -- /bin/true
stop_daemon
check "a state.json.tmp link is replaced, not written through: the file behind is unchanged" \
	cmp -s "$W/d/victim" "$W/victim.orig"
check "a state.json with another name (a hard link) is not read as the state, but kept aside" \
	grep -q "has other names (hard links): kept as" "$W/planted.log"
# record_ok DIR: DIR holds a process's record (proc.N.json, version 2) of
# root's, with one name and mode 0600.
record_ok() {
	"$PY" -c '
import glob, json, os, sys
names = glob.glob(sys.argv[1] + "/proc.*.json")
ok = names and all(os.lstat(n).st_uid == 0 and os.lstat(n).st_nlink == 1 and
                   (os.lstat(n).st_mode & 0o777) == 0o600 and
                   json.loads(open(n).readline())["version"] == 2 for n in names)
sys.exit(not ok)' "$1"
}
check "the state is saved all the same, in a file of its own (a record)" record_ok "$W/ownstate"

# --- State files that cannot be read ---------------------------------------
echo "# corrupt, huge and foreign state files"
# aside NAME: the state file written into $W/NAME/state.json must be kept
# aside byte for byte, the daemon start empty, and save a new one.
aside() {
	local name=$1 why=$2 kept
	cp "$W/$name/state.json" "$W/$name.orig" 2>/dev/null
	daemon "$name" "$W/$name/s" "$W/$name"
	FAULTLINE_SOCKET=$W/$name/s timeout 120 "$FL" run --preload "$PRELOAD" -- /bin/true
	stop_daemon
	kept=$(ls "$W/$name"/state.json.corrupt-* 2>/dev/null | head -1)
	check "$name: kept aside as $(basename "${kept:-nothing}")" test -n "$kept"
	if [ -n "$kept" ] && [ -e "$W/$name.orig" ]; then
		check "$name: the kept file is the original, byte for byte" cmp -s "$kept" "$W/$name.orig"
	fi
	check "$name: the daemon says why ($why) and where it is kept" \
		grep -q "$why: kept as state.json.corrupt-" "$W/$name.log"
	check "$name: the process's record is written" record_ok "$W/$name"
}
mkdir -m 700 "$W/corrupt" "$W/huge" "$W/v2" "$W/order"
printf '{"version": 1, "processes": [ {"pid": 12' >"$W/corrupt/state.json"
aside corrupt "is not a faultlined state file"
printf '{"version": 2, "processes": []}' >"$W/v2/state.json"
aside v2 "is not of version 1"
# Sparse: 1 GiB that takes no disk; read whole it took 1 GiB of memory.
truncate -s 1G "$W/huge/state.json"
daemon huge "$W/huge/s" "$W/huge"
rss=$(awk '/VmHWM/ { print $2 }' /proc/$DPID/status)
stop_daemon
check "huge: the 1 GiB file is not read (daemon's peak RSS ${rss} KiB)" test "${rss:-999999}" -lt 65536
check "huge: kept aside" test -e "$(ls "$W/huge"/state.json.corrupt-* 2>/dev/null | head -1)"
check "huge: the daemon says why" grep -q "is larger than 256 MiB: kept as" "$W/huge.log"

# Records (proc.N.json, one per process) are read back the same way: one
# that cannot be read is kept aside, the others are restored.
mkdir -m 700 "$W/records"
printf '%s\n' '{"version":2,"serial":8,"pid":4343,"uid":0,"comm":"good","exited":true}' \
	'{"module":"m","removed":true,"sites":1}' '[4096,4100,1,5,"f"]' >"$W/records/proc.8.json"
printf '%s\n' '{"version":2,"serial":7,"pid":4242,"uid":0,"comm":"bad","exited":true}' \
	'{"module":"m","removed":true,"sites":2}' '[4096,4100,1,5,"f"]' >"$W/records/proc.7.json"
printf '%s\n' '{"version":2,"serial":9,"pid":4444,"uid":0,"comm":"other","exited":true}' \
	>"$W/records.other"
ln -s "$W/records.other" "$W/records/proc.9.json"
cp "$W/records/proc.7.json" "$W/records.7.orig"
daemon records "$W/records/s" "$W/records"
FAULTLINE_SOCKET=$W/records/s timeout 120 "$FL" ps --json >"$W/records.ps" 2>&1
stop_daemon
kept=$(ls "$W/records"/proc.7.json.corrupt-* 2>/dev/null | head -1)
check "a record with a site missing is kept aside as $(basename "${kept:-nothing}"), byte for byte" \
	cmp -s "${kept:-/nonexistent}" "$W/records.7.orig"
check "the daemon says why" grep -q "proc.7.json is not a faultlined record of version 2: kept as" \
	"$W/records.log"
check "a record that is a symbolic link is kept aside, not followed" \
	grep -q "proc.9.json is a symbolic link: kept as" "$W/records.log"
check "the good record is restored, with its count" \
	"$PY" -c 'import json,sys; p=json.load(open(sys.argv[1]))["processes"]; sys.exit(not (len(p) == 1 and p[0]["pid"] == 4343 and p[0]["faults"] == 5))' \
	"$W/records.ps"

# The state is read before the socket exists: nothing can register into a
# daemon that has not yet restored what it knew.  A state of 300,000 sites
# takes the daemon a while to read: when the socket appears, the log must
# already say it is restored.
echo "# state loaded before listening"
"$PY" - "$W/order/state.json" <<'EOF'
import json, sys
sites = [{"faulting_pc": 0x400000 + 8 * i, "handler_pc": 0x500000 + 8 * i, "kind": 1,
          "function": "f%d" % i, "faults": i % 7} for i in range(300000)]
doc = {"version": 1, "processes": [{"pid": 4242, "uid": 0, "comm": "old", "exited": True,
       "modules": [{"name": "big", "removed": True, "sites": sites}]}]}
json.dump(doc, open(sys.argv[1], "w"))
EOF
"$FLD" --no-bpf --socket "$W/order/s" --state-dir "$W/order" --log-level debug >"$W/order.log" 2>&1 &
DPID=$!
PIDS+=($DPID)
wait_for "$W/order/s" || bad "order: faultlined did not listen"
grep -q "1 processes restored" "$W/order.log"
rc=$?
stop_daemon
check "when the socket appears, the state is already restored" test $rc = 0

# --- A program that closes every descriptor --------------------------------
echo "# a program that closes 3..1023 at start"
mkdir -m 700 "$W/fdc" "$W/fdc/files"
daemon fdc "$W/fdc/s" "$W/fdc"
mkfifo "$W/fdc/in"
FAULTLINE_SOCKET=$W/fdc/s "$FL" run --preload "$PRELOAD" --log info -- \
	"$FDCLOSE" "$LIB" "$W/fdc/files" <"$W/fdc/in" >"$W/fdc/out" 2>"$W/fdc/err" &
PROG=$!
PIDS+=($PROG)
exec 8>"$W/fdc/in"
for ((i = 0; i < 1200; i++)); do
	grep -q "^child \|^FAIL" "$W/fdc/out" && break
	sleep 0.1
done
child=$(awk '/^child / { print $2 }' "$W/fdc/out")
check "the child of the program says it is ready" test -n "$child"
# stats_of PID: "EXITED FAULTS" of that pid in faultline stats --json.
stats_of() {
	FAULTLINE_SOCKET=$W/fdc/s timeout 300 "$FL" stats --all --json 2>/dev/null | "$PY" -c '
import json, sys
pid = int(sys.argv[1])
for p in json.load(sys.stdin).get("processes", []):
    if p.get("pid") == pid:
        print(int(p.get("exited", False)), p.get("faults"))
' "$1" | tail -1
}
# until_reads FN PID WANT: waits (5 minutes at most) for FN PID to print WANT.
until_reads() {
	local i got
	for ((i = 0; i < 600; i++)); do
		got=$("$1" "$2")
		[ "$got" = "$3" ] && return 0
		sleep 0.5
	done
	echo "    | pid $2: stats read '$got', not '$3'"
	return 1
}
# until_stats PID WANT: waits for stats_of PID to read WANT.
until_stats() { until_reads stats_of "$@"; }
if [ -n "$child" ]; then
	check "the child registered itself, live, with its 3 faults" until_stats "$child" "0 3"
	kill -KILL "$DPID"
	wait "$DPID" 2>/dev/null
	daemon fdc2 "$W/fdc/s" "$W/fdc"
	check "after kill -9 and a restart of the daemon, the child registered again, live, 3 faults" \
		until_stats "$child" "0 3"
fi
echo go >&8
exec 8>&-
wait "$PROG"
rc=$?
check "the program's files hold exactly what it wrote, it exits 0 (exit $rc)" test $rc = 0
grep "^FAIL" "$W/fdc/out" | sed 's/^/    | /'
check "the program says it is ok" grep -q "^ok " "$W/fdc/out"
check "the parent says it will not register again, without touching the descriptor" \
	grep -q "closed or reused" "$W/fdc/err"
stop_daemon
check "the daemon saw no bad region or message" \
	test -z "$(grep -h -i "bad magic\|violat\|dropped" "$W/fdc.log" "$W/fdc2.log")"

# --- memfd_create denied ----------------------------------------------------
echo "# memfd_create denied"
daemon nomem "$W/nomem/s" "$W/d/nomem-state"
FAULTLINE_SOCKET=$W/nomem/s timeout 300 "$NOMEMFD" "$FL" run --preload "$PRELOAD" --log warn -- \
	"$E2EPROG" run 3 2 1 >"$W/nomem.out" 2>"$W/nomem.err"
rc=$?
check "with memfd_create denied the program's checks still dispatch (exit $rc)" test $rc = 0
check "it says it counts without faultlined" grep -q "memfd_create: .*counting in private memory" \
	"$W/nomem.err"
stop_daemon

# --- RLIMIT_NOFILE 4 ---------------------------------------------------------
# The program's one free number (3) stays the program's: faultline keeps
# descriptors only at 512 or above, and counts in private memory when it
# cannot (before, it took 3 for its counters, could not open the program's
# file, and the program died at its first check).
echo "# RLIMIT_NOFILE 4"
daemon nofile "$W/nofile/s" "$W/d/nofile-state"
(ulimit -n 4 && FAULTLINE_SOCKET=$W/nofile/s FAULTLINE_LOG=info LD_PRELOAD=$PRELOAD \
	timeout 300 "$E2EPROG" run 3 2 1 >"$W/nofile.out" 2>"$W/nofile.err")
rc=$?
check "at RLIMIT_NOFILE 4 the program's checks dispatch and it exits 0 (exit $rc)" test $rc = 0
check "it says it counts in private memory, without faultlined" \
	grep -q "no descriptor free at 512 or above (RLIMIT_NOFILE): counting in private memory" \
	"$W/nofile.err"
stop_daemon

# --- A stopped daemon --------------------------------------------------------
# The program must never wait for a daemon that does not answer longer than
# FAULTLINE_REGISTER_WAIT_MS (10 ms by default): fl_init in the main thread,
# and fork in the child.  Checked on what the
# threads asked of the kernel (strace), not on how long they took: every
# poll and every send timeout of the program's own threads is within the
# wait (before, fl_init polled 1000 ms and a forked child 200 ms).
echo "# a stopped daemon"
mkdir -m 700 "$W/stop"
# bpf_daemon NAME SOCKET STATE: as daemon, with the eBPF program.
bpf_daemon() {
	"$FLD" --socket "$2" --state-dir "$3" --log-level debug >"$W/$1.log" 2>&1 &
	DPID=$!
	PIDS+=($DPID)
	wait_for "$2" || bad "$1: faultlined did not listen (log $W/$1.log)"
}
# traced NAME ARGS...: e2e-prog ARGS under the shim and strace; the trace
# in $W/stop/NAME.trace, its output in $W/stop/NAME.out.
traced() {
	local name=$1
	shift
	FAULTLINE_SOCKET=$W/stop/s timeout 300 strace -f -qq -o "$W/stop/$name.trace" \
		-e trace=poll,ppoll,setsockopt,connect \
		env LD_PRELOAD="$PRELOAD" "$E2EPROG" "$@" >"$W/stop/$name.out" 2>"$W/stop/$name.err"
}
# waits_within TRACE MS PID...: every poll and SO_SNDTIMEO of those threads
# is at most MS milliseconds; prints the ones that are not.
waits_within() {
	local trace=$1 ms=$2
	shift 2
	"$PY" - "$trace" "$ms" "$@" <<'PYEOF'
import codecs, re, sys
trace, ms, tids = sys.argv[1], int(sys.argv[2]), set(sys.argv[3:])
bad = seen = 0
for line in open(trace):
    tid, call = (line.split(None, 1) + [""])[:2]
    if tid not in tids:
        continue
    m = re.match(r"poll\(.*\], \d+, (-?\d+)", call)
    if m:
        seen += 1
        if not 0 <= int(m.group(1)) <= ms:
            bad += 1
            print("    | " + line.strip())
    if call.startswith("ppoll("):
        bad += 1
        print("    | " + line.strip())
    # struct timeval, as strace prints it decoded or as its 16 raw bytes.
    m = re.search(r"SO_SNDTIMEO\w*, \{tv_sec=(\d+), tv_usec=(\d+)\}", call)
    if m:
        sec, usec = int(m.group(1)), int(m.group(2))
    else:
        m = re.search(r'SO_SNDTIMEO\w*, "((?:[^"\\]|\\.)*)", 16\)', call)
        if m:
            raw = codecs.escape_decode(m.group(1).encode())[0]
            sec, usec = int.from_bytes(raw[:8], "little"), int.from_bytes(raw[8:16], "little")
    if m:
        seen += 1
        if sec * 1000 + usec // 1000 > ms:
            bad += 1
            print("    | " + line.strip())
print("    | %d polls and send timeouts of thread(s) %s looked at" % (seen, " ".join(sorted(tids))))
# None at all would prove nothing: the trace would not be what is meant.
sys.exit(1 if bad or not seen else 0)
PYEOF
}
# polls TRACE PID: how many polls that thread made.
polls() { grep -cE "^$2 +poll\(" "$1"; }
bpf_daemon stop "$W/stop/s" "$W/stop"
kill -STOP "$DPID"
# traced_fork NAME WHAT: e2e-prog fork under strace (traced); checks that
# it ran to its end; sets parent and child.
traced_fork() {
	local rc
	traced "$1" fork 3 2 1 1 1 1
	rc=$?
	parent=$(awk '/^parent / { print $2 }' "$W/stop/$1.out")
	child=$(awk '/^child / { print $2 }' "$W/stop/$1.out")
	check "$2, a program that forks runs to its end (exit $rc)" \
		test $rc = 0 -a -n "$parent" -a -n "$child"
}
traced_fork stopped "with the daemon stopped"
check "its main thread waited 10 ms at most in each poll and send" \
	waits_within "$W/stop/stopped.trace" 10 "$parent"
check "its child's main thread too" waits_within "$W/stop/stopped.trace" 10 "$child"
kill -CONT "$DPID"
# kernel_of PID: "EXITED FAULTS COMPLETE" of that pid in faultline stats --json
# (one line per entry: a pid listed twice prints two).
kernel_of() {
	FAULTLINE_SOCKET=$W/stop/s timeout 300 "$FL" stats --all --json 2>/dev/null | "$PY" -c '
import json, sys
pid = int(sys.argv[1])
for p in json.load(sys.stdin).get("processes", []):
    if p.get("pid") == pid:
        print(int(p.get("exited", False)), p.get("faults"),
              int(p.get("kernel", {}).get("complete", False)))
' "$1"
}
# until_kernel PID WANT: waits for kernel_of PID to read WANT.
until_kernel() { until_reads kernel_of "$@"; }
# Registered late, they faulted before the kernel counted them: their
# counts are exact, one entry each, and the kernel's are not claimed whole
# (which would report dispatch as wrong).
check "once the daemon runs again, the parent is one exited entry, 12 faults, kernel count partial" \
	until_kernel "$parent" "1 12 0"
check "the child is one exited entry, 3 faults, kernel count partial" \
	until_kernel "$child" "1 3 0"
# A daemon that answers: fl_init and fork wait for the whole handshake (as
# long as they are allowed to), and the kernel's counts of both are whole.
FAULTLINE_REGISTER_WAIT_MS=300000 traced_fork running "with the daemon running"
check "the child of a registered process waited for the daemon's answer (it polled)" \
	test "$(polls "$W/stop/running.trace" "$child")" -gt 0
check "the parent's kernel count is whole (COMPLETE), 12 faults" until_kernel "$parent" "1 12 1"
check "the child's is whole too (counted from its fork), 3 faults" until_kernel "$child" "1 3 1"
# The first touch of a region page at a site is a fault signal there, not
# a failed check: counted apart ("populations"), and the kernel's count of
# the site is the sum (before, it read as "a fault dispatch missed").
FAULTLINE_SOCKET=$W/stop/s FAULTLINE_REGISTER_WAIT_MS=300000 timeout 300 "$E2EREGION" \
	>"$W/stop/region.out" 2>"$W/stop/region.err"
rc=$?
rpid=$(awk '/^region / { print $2 }' "$W/stop/region.out")
check "a program touches a region page first at a site, then fails the check past the limit (exit $rc)" \
	test $rc = 0 -a -n "$rpid"
# site_of PID: "FAULTS POPULATIONS KERNEL_FAULTS" of its e2e_load site.
site_of() {
	FAULTLINE_SOCKET=$W/stop/s timeout 300 "$FL" stats --all --json --pid "$1" 2>/dev/null | "$PY" -c '
import json, sys
for p in json.load(sys.stdin).get("processes", []):
    for s in p.get("sites", []):
        if s.get("function") == "e2e_load":
            print(s.get("faults"), s.get("populations"), s.get("kernel_faults"))
'
}
for ((i = 0; i < 600; i++)); do
	[ "$(site_of "$rpid")" = "1 1 2" ] && break
	sleep 0.5
done
check "its site: 1 failed check, 1 population apart, and the kernel's 2 ($(site_of "$rpid"))" \
	test "$(site_of "$rpid")" = "1 1 2"
FAULTLINE_SOCKET=$W/stop/s timeout 300 "$FL" stats --all --pid "$rpid" >"$W/stop/region.stats" 2>&1
check "faultline stats does not call it a dispatch error" \
	test -z "$(grep "differs" "$W/stop/region.stats")"
check "the daemon found no site where dispatch and the kernel differ" \
	test -z "$(grep -h "dispatch counted" "$W/stop.log")"
stop_daemon

# --- Two users hold every connection they can ------------------------------
echo "# two users fill the clients"
cat >"$W/hold.py" <<'EOF'
import socket, sys, time
path, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
conns = []
for _ in range(n):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        s.connect(path)
        conns.append(s)
    except OSError:
        s.close()
time.sleep(1)
held = 0
for s in conns:
    try:
        held += s.recv(1, socket.MSG_DONTWAIT | socket.MSG_PEEK) != b""
    except BlockingIOError:
        held += 1
    except OSError:
        pass
open(out, "w").write("%d\n" % held)
time.sleep(600)
EOF
mkdir -m 1777 "$W/full"
daemon full "$W/full/s" "$W/d/full-state" "--max-clients 32 --silent-timeout 5"
for u in 65534 65533; do
	setpriv --reuid=$u --regid=$u --clear-groups "$PY" "$W/hold.py" "$W/full/s" 40 "$W/full/held.$u" &
	PIDS+=($!)
	wait_for "$W/full/held.$u"
done
check "the first user holds half of the 32 clients ($(cat "$W/full/held.65534"))" \
	test "$(cat "$W/full/held.65534")" = 16
check "the second user holds the rest but root's 2 ($(cat "$W/full/held.65533"))" \
	test "$(cat "$W/full/held.65533")" = 14
FAULTLINE_SOCKET=$W/full/s timeout 300 "$FL" stats >/dev/null 2>"$W/full/stats.err"
rc=$?
check "root's faultline stats is served meanwhile (exit $rc)" test $rc = 0
for ((i = 0; i < 600; i++)); do
	grep -q "sent nothing since it connected" "$W/full.log" && break
	sleep 0.1
done
check "connections that send nothing are dropped after --silent-timeout" \
	grep -q "sent nothing since it connected" "$W/full.log"
# A registered process stays however silent; a client that sent one query
# and then says nothing does not.
mkfifo "$W/full/in"
FAULTLINE_SOCKET=$W/full/s "$FL" run --preload "$PRELOAD" -- "$E2EPROG" wait 1 1 1 \
	<"$W/full/in" >"$W/full/prog.out" 2>&1 &
PIDS+=($!)
exec 9>"$W/full/in"
for ((i = 0; i < 1200; i++)); do
	grep -q "^ready" "$W/full/prog.out" && break
	sleep 0.1
done
rpid=$(awk '/^ready/ { print $2 }' "$W/full/prog.out")
cat >"$W/once.py" <<'EOF'
import socket, struct, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
# QUERY PS about every process: magic, version, type, length, seq; what, pid, arg.
s.send(struct.pack("<IHHIIIIQ", 0x504c4c46, 1, 16, 32, 1, 2, 0, 0))
# REPLY messages until one without MORE (flags, after the 16-byte header).
while struct.unpack_from("<I", s.recv(65536), 16)[0] & 1:
    pass
open(sys.argv[2], "w").write("answered\n")
time.sleep(600)
EOF
# setpriv itself in the background (it execs python3): the pid kept is the client's.
setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups "$PY" "$W/once.py" "$W/full/s" \
	"$W/full/once.out" &
PIDS+=($!)
wait_for "$W/full/once.out"
for ((i = 0; i < 1200; i++)); do
	grep -q "uid $NOBODY): silent for 5 s, and not a registered process: dropped" "$W/full.log" &&
		break
	sleep 0.1
done
check "a client that sent one query and then nothing is dropped after --silent-timeout" \
	grep -q "uid $NOBODY): silent for 5 s, and not a registered process: dropped" "$W/full.log"
check "a registered process, silent longer, stays (pid ${rpid:-none})" \
	test -n "$rpid" -a -z "$(grep "(pid ${rpid:-none} uid 0).*dropped" "$W/full.log")"
FAULTLINE_SOCKET=$W/full/s timeout 300 "$FL" stats --all --pid "${rpid:-0}" --json 2>/dev/null |
	"$PY" -c 'import json,sys; p=json.load(sys.stdin)["processes"][0]; sys.exit(p["exited"] or p["faults"] != 3)'
check "...and is counted live" test $? = 0
exec 9>&-
stop_daemon

echo "daemon hostile: $pass passed, $fail failed"
[ $fail = 0 ]
