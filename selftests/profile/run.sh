#!/bin/bash
# faultline profile end to end (make check-profile), as root:
#   null      null_loop takes N NULL faults at one labelled load: profile PID
#             counts exactly N read faults at that address, named
#             null_loop+0x... (null_load+0x1), and says the process exited;
#   jit       jit_null faults N times in code it generated into anonymous
#             memory and described in /tmp/perf-PID.map: --json names it
#             fl_jit_null_load+0x1 with exactly N faults;
#   jit-link  a perf map that is a symlink is not read (/dev/zero here);
#   jit-owner a perf map owned by another user than the process's (or
#             root) is not read;
#   jvm       OpenJDK 17 (ProfileNpe.java) throws NullPointerExceptions from
#             JIT-compiled code; the perf map comes from
#             `jcmd PID Compiler.perfmap`: the top address is a ProfileNpe
#             method named from it, and jcmd Compiler.codelist says which
#             tier compiled it;
#   jvm-c2    the same with C2 alone (-XX:-TieredCompilation): C2's code
#             faults and is named too (HotSpot then deoptimizes it and
#             recompiles with an explicit check, so only a few faults);
#   all       profile --all, stopped by SIGINT, sees null_loop's faults
#             under its PID and name;
#   errors    bad arguments, no such PID, not privileged (which capability
#             is missing): a message and a non-zero exit status.
# Prints "ok - CHECK" or "FAIL - CHECK: why", the kernel it ran on, and a
# summary; exits 1 when a check failed.  Waits are for events (a line, a
# process's exit), up to WAIT_S; profile's --seconds is only an outer
# bound: it ends when its process does, or at SIGINT.  Every process
# started here, and its perf map, is gone when the script ends.
#
#   run.sh CLI OUTDIR      (the test programs are built in OUTDIR)
set -u

if [ $# -ne 2 ]; then
	echo "usage: run.sh CLI OUTDIR" >&2
	exit 2
fi
cli=$(realpath -e "$1") || exit 1
bin=$(realpath -e "$2") || exit 1
here=$(cd "$(dirname "$0")" && pwd)
work=$bin/work
rm -rf "$work"
mkdir -p "$work"
java_home=${FL_JAVA_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}
N=1000
# How long to wait for what must happen: minutes, for QEMU's TCG.
WAIT_S=300

# The programs started, for the end: killed, and their perf maps removed.
started=()
cleanup() {
	local p
	for p in $(jobs -p); do kill -KILL "$p" 2>/dev/null; done
	wait 2>/dev/null
	for p in "${started[@]}"; do rm -f "/tmp/perf-$p.map"; done
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

npass=0
nfail=0
failed=()
ok() {
	echo "ok - $1"
	npass=$((npass + 1))
}
notok() {
	echo "FAIL - $1: $2"
	nfail=$((nfail + 1))
	failed+=("$1")
}
show() {
	sed -n "1,${2:-20}p" "$1" | sed 's/^/#   /'
}

echo "profile: kernel $(uname -r)"
if [ "$(id -u)" != 0 ]; then
	echo "profile: skipped: needs root (loads an eBPF program); run make check-profile as root"
	exit 0
fi

# wait_for FILE PATTERN: until FILE has a line matching PATTERN (up to WAIT_S).
wait_for() {
	local end=$((SECONDS + WAIT_S))
	until grep -q "$2" "$1" 2>/dev/null; do
		[ $SECONDS -lt $end ] || return 1
		sleep 0.05
	done
}

# start_profile NAME ARGS...: runs faultline profile ARGS in the background
# (stdout NAME.out, stderr NAME.err, pid in $prof) and waits until it counts.
start_profile() {
	local name=$1
	shift
	"$cli" profile "$@" >"$work/$name.out" 2>"$work/$name.err" &
	prof=$!
	if ! wait_for "$work/$name.err" "counting the page faults"; then
		notok "$name" "profile did not start counting"
		show "$work/$name.err"
		kill "$prof" 2>/dev/null
		return 1
	fi
}

# ---- null: exact count at a labelled instruction, named by its function
"$bin/null_loop" $N "$work/go-null" >"$work/null_loop.out" &
child=$!
started+=("$child")
wait_for "$work/null_loop.out" '^ip '
read -r _ ip _ func <"$work/null_loop.out"
if start_profile null --seconds "$WAIT_S" -n 5 "$child"; then
	touch "$work/go-null"
	wait "$child"
	cstatus=$?
	wait "$prof"
	pstatus=$?
	# FAULTS READ WRITE IFETCH ADDRESS SYMBOL...
	row=$(awk -v ip="$ip" '$5 == ip' "$work/null.out")
	read -r faults reads writes ifetch _ sym <<<"$row"
	want_sym="null_loop+0x"
	if [ "$cstatus" != 0 ] || [ "$pstatus" != 0 ]; then
		notok "null" "null_loop exit $cstatus, profile exit $pstatus"
		show "$work/null.err"
	elif [ -z "$row" ]; then
		notok "null" "no row for $ip"
		show "$work/null.out"
	elif [ "$faults" != $N ] || [ "$reads" != $N ] || [ "$writes" != 0 ] || [ "$ifetch" != 0 ]; then
		notok "null" "faults/read/write/ifetch $faults/$reads/$writes/$ifetch, expected $N/$N/0/0"
		show "$work/null.out"
	elif [[ "$sym" != "$want_sym"*" ($func)" ]]; then
		notok "null" "named '$sym', expected '$want_sym... ($func)'"
	elif ! grep -q "PID $child exited" "$work/null.err"; then
		notok "null" "profile did not say that PID $child exited"
		show "$work/null.err"
	else
		ok "null: exactly $N read faults at $ip, named $sym; the exit was noticed"
	fi
fi

# ---- jit: a perf map names anonymous code; --json
"$bin/jit_null" $N "$work/go-jit" >"$work/jit_null.out" &
child=$!
started+=("$child")
wait_for "$work/jit_null.out" '^ip '
read -r _ ip _ name <"$work/jit_null.out"
if start_profile jit --json --seconds "$WAIT_S" "$child"; then
	touch "$work/go-jit"
	wait "$child"
	cstatus=$?
	wait "$prof"
	pstatus=$?
	if [ "$cstatus" != 0 ] || [ "$pstatus" != 0 ]; then
		notok "jit" "jit_null exit $cstatus, profile exit $pstatus"
		show "$work/jit.err"
	elif why=$(python3 - "$work/jit.out" "$ip" "$N" "$child" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
ip, n, pid = int(sys.argv[2], 16), int(sys.argv[3]), int(sys.argv[4])
top = doc["top"][0]
want = {"ip": ip, "faults": n, "read": n, "kind": "jit", "function": "fl_jit_null_load",
        "function_offset": 1, "symbol": "[jit] fl_jit_null_load+0x1", "pid": pid,
        "module": "/tmp/perf-%d.map" % pid}
bad = ["%s %r, expected %r" % (k, top.get(k), v) for k, v in want.items() if top.get(k) != v]
if doc["pid"] != pid or not doc["exited"] or doc["all"]:
    bad.append("document: pid %r exited %r all %r" % (doc["pid"], doc["exited"], doc["all"]))
print("; ".join(bad))
sys.exit(1 if bad else 0)
EOF
); then
		ok "jit: exactly $N faults at $ip, named from /tmp/perf-$child.map: [jit] $name (--json)"
	else
		notok "jit" "$why"
		show "$work/jit.out" 40
	fi
	rm -f "/tmp/perf-$child.map"
fi

# ---- jit-link: a perf map that is a symlink (here to /dev/zero, which
# never ends) is not followed: the code is plain anonymous memory
rm -f "$work/go-jitlink"
"$bin/jit_null" $N "$work/go-jitlink" >"$work/jit_link.out" &
child=$!
started+=("$child")
wait_for "$work/jit_link.out" '^ip '
read -r _ ip _ <"$work/jit_link.out"
ln -sf /dev/zero "/tmp/perf-$child.map"
if start_profile jitlink --seconds $((2 * WAIT_S)) "$child"; then
	touch "$work/go-jitlink"
	wait "$child"
	# Reading /dev/zero as a perf map would never end: profile must.
	timeout "$WAIT_S" tail --pid="$prof" -f /dev/null
	if kill -0 "$prof" 2>/dev/null; then
		kill "$prof"
		notok "jit-link" "profile still running $WAIT_S s after the process exited"
	elif ! wait "$prof"; then
		notok "jit-link" "profile failed"
		show "$work/jitlink.err"
	elif ! awk -v ip="$ip" '$5 == ip && $6 == "[anon]+0x1" { found = 1 } END { exit !found }' \
		"$work/jitlink.out"; then
		notok "jit-link" "$ip not named [anon]+0x1"
		show "$work/jitlink.out"
	else
		ok "jit-link: a perf map symlinked to /dev/zero is not read: $ip is [anon]+0x1"
	fi
fi
rm -f "/tmp/perf-$child.map"

# ---- jit-owner: a perf map someone else owns (here nobody, for a process
# of root's) is not believed: anyone can write /tmp/perf-PID.map first
rm -f "$work/go-jitowner"
"$bin/jit_null" $N "$work/go-jitowner" >"$work/jit_owner.out" &
child=$!
started+=("$child")
wait_for "$work/jit_owner.out" '^ip '
read -r _ ip _ <"$work/jit_owner.out"
chown nobody "/tmp/perf-$child.map"
if start_profile jitowner --seconds "$WAIT_S" "$child"; then
	touch "$work/go-jitowner"
	wait "$child"
	cstatus=$?
	wait "$prof"
	pstatus=$?
	if [ "$cstatus" != 0 ] || [ "$pstatus" != 0 ]; then
		notok "jit-owner" "jit_null exit $cstatus, profile exit $pstatus"
		show "$work/jitowner.err"
	elif ! awk -v ip="$ip" '$5 == ip && $6 == "[anon]+0x1" { found = 1 } END { exit !found }' \
		"$work/jitowner.out"; then
		notok "jit-owner" "$ip not named [anon]+0x1"
		show "$work/jitowner.out"
	else
		ok "jit-owner: a perf map owned by nobody for a process of root's is not read: $ip is [anon]+0x1"
	fi
fi
rm -f "/tmp/perf-$child.map"

# ---- jvm: HotSpot's implicit null checks in JIT-compiled code
# jvm_run NAME JAVA_OPTS...: ProfileNpe under profile; leaves NAME.out
# (profile's table), NAME.codelist (jcmd Compiler.codelist) and sets $child.
jvm_run() {
	local name=$1
	shift
	rm -f "$work/go-$name" "$work/done-$name"
	# AlwaysPreTouch: the heap is touched before profiling starts, so that
	# the allocation faults do not crowd the table; -Xbatch: compiled
	# before the loop ends, deterministically.
	"$java_home/bin/java" -Xms64m -Xmx64m -XX:+AlwaysPreTouch -Xbatch "$@" \
		-cp "$work/classes" ProfileNpe 200000 "$work/go-$name" "$work/done-$name" \
		>"$work/$name.java.out" 2>&1 &
	child=$!
	started+=("$child")
	if ! wait_for "$work/$name.java.out" '^warm'; then
		notok "$name" "the JVM did not warm up"
		show "$work/$name.java.out"
		kill "$child"
		return 1
	fi
	if ! start_profile "$name" --seconds "$WAIT_S" -n 10 "$child"; then
		kill "$child"
		return 1
	fi
	touch "$work/go-$name"
	wait_for "$work/$name.java.out" '^npes'
	# The JVM writes /tmp/perf-PID.map when asked; profile reads it at the end.
	"$java_home/bin/jcmd" "$child" Compiler.perfmap >"$work/$name.jcmd" 2>&1
	"$java_home/bin/jcmd" "$child" Compiler.codelist >"$work/$name.codelist" 2>&1
	touch "$work/done-$name"
	wait "$child"
	jstatus=$?
	wait "$prof"
	pstatus=$?
	rm -f "/tmp/perf-$child.map"
	if [ "$jstatus" != 0 ] || [ "$pstatus" != 0 ]; then
		notok "$name" "java exit $jstatus, profile exit $pstatus"
		show "$work/$name.java.out"
		show "$work/$name.err"
		return 1
	fi
}

# tier ADDRESS CODELIST: the compilation level of the nmethod holding
# ADDRESS ("id level state name [start, code - end]" lines), or "?".
tier() {
	python3 - "$1" "$2" <<'EOF'
import re, sys
ip = int(sys.argv[1], 16)
for line in open(sys.argv[2]):
    m = re.match(r"\s*\d+\s+(\d+)\s+\d+\s+(\S+)\s+\[(0x[0-9a-f]+), (0x[0-9a-f]+) - (0x[0-9a-f]+)\]", line)
    if m and int(m.group(3), 16) <= ip < int(m.group(5), 16):
        print(m.group(1), m.group(2))
        sys.exit(0)
print("? ?")
EOF
}

mkdir -p "$work/classes"
if ! "$java_home/bin/javac" -d "$work/classes" "$here/ProfileNpe.java" >"$work/javac.out" 2>&1; then
	notok "jvm" "javac failed"
	show "$work/javac.out"
elif jvm_run jvm; then
	npes=$(awk '/^npes/ { print $2 }' "$work/jvm.java.out")
	top=$(awk 'NR == 3' "$work/jvm.out")
	read -r faults _ _ _ ip sym <<<"$top"
	read -r level method < <(tier "$ip" "$work/jvm.codelist")
	jit_sum=$(awk '$6 == "[jit]" && $0 ~ /ProfileNpe\./ { s += $1 } END { print s + 0 }' "$work/jvm.out")
	if [[ "$sym" != "[jit] "*"ProfileNpe."* ]]; then
		notok "jvm" "top address $ip is '$sym', not a ProfileNpe method from the perf map"
		show "$work/jvm.out"
	elif [ "$faults" -lt 1000 ] || [ "$jit_sum" -gt "$npes" ]; then
		notok "jvm" "top $faults faults (want >= 1000), ProfileNpe code $jit_sum faults for $npes NullPointerExceptions"
		show "$work/jvm.out"
	else
		ok "jvm: $npes NullPointerExceptions; top address $faults faults, $sym (tier $level $method); $jit_sum faults in ProfileNpe's compiled code"
	fi
fi

if [ -d "$work/classes" ] && jvm_run jvm-c2 -XX:-TieredCompilation; then
	c2=0
	c2_names=()
	while read -r faults _ _ _ ip sym; do
		[[ "$sym" == "[jit] "*"ProfileNpe."* ]] || continue
		read -r level _ < <(tier "$ip" "$work/jvm-c2.codelist")
		if [ "$level" = 4 ]; then
			c2=$((c2 + faults))
			c2_names+=("$sym")
		fi
	done < <(tail -n +3 "$work/jvm-c2.out")
	if [ "$c2" -gt 0 ]; then
		ok "jvm-c2: $c2 faults in C2-compiled code, named ${c2_names[0]}"
	else
		notok "jvm-c2" "no fault in a C2 (tier 4) ProfileNpe nmethod"
		show "$work/jvm-c2.out"
		grep ProfileNpe "$work/jvm-c2.codelist" | sed 's/^/#   /'
	fi
fi

# ---- all: every process; SIGINT ends it early and it still prints
rm -f "$work/go-all"
"$bin/null_loop" $N "$work/go-all" >"$work/all_loop.out" &
child=$!
started+=("$child")
wait_for "$work/all_loop.out" '^ip '
read -r _ ip _ func <"$work/all_loop.out"
# Ended by SIGINT once the process has exited; --seconds only bounds it.
if start_profile all --all --json --seconds $((2 * WAIT_S)) -n 1000000; then
	touch "$work/go-all"
	wait "$child"
	kill -INT "$prof"
	wait "$prof"
	pstatus=$?
	if [ "$pstatus" != 0 ]; then
		notok "all" "profile exit $pstatus"
		show "$work/all.err"
	elif why=$(python3 - "$work/all.out" "$ip" "$N" "$child" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
ip, n, pid = int(sys.argv[2], 16), int(sys.argv[3]), int(sys.argv[4])
rows = [r for r in doc["top"] if r["pid"] == pid and r["ip"] == ip]
bad = []
if not doc["all"] or not doc["interrupted"]:
    bad.append("document: all %r interrupted %r elapsed %r" % (doc["all"], doc["interrupted"], doc["elapsed"]))
if len(rows) != 1:
    bad.append("%d rows for pid %d ip %s among %d" % (len(rows), pid, ip, len(doc["top"])))
elif rows[0]["faults"] != n or rows[0]["comm"] != "null_loop" or rows[0]["function"] != "null_load":
    bad.append("row %r" % rows[0])
print("; ".join(bad))
sys.exit(1 if bad else 0)
EOF
); then
		ok "all: PID $child (null_loop) seen with $N faults at $ip among every process; SIGINT ended it ($(python3 -c 'import json, sys; print("%.1f" % json.load(open(sys.argv[1]))["elapsed"])' "$work/all.out") s)"
	else
		notok "all" "$why"
		show "$work/all.err"
	fi
fi

# ---- errors: a message on stderr and the documented exit status
# err NAME STATUS PATTERN CMD...: CMD must exit STATUS and print PATTERN.
err() {
	local name=$1 want=$2 pattern=$3
	shift 3
	"$@" >"$work/err.out" 2>"$work/err.err"
	local got=$?
	if [ "$got" != "$want" ]; then
		notok "errors: $name" "exit $got, expected $want"
		show "$work/err.err"
	elif ! grep -q -- "$pattern" "$work/err.err"; then
		notok "errors: $name" "no '$pattern' on stderr"
		show "$work/err.err"
	elif [ -s "$work/err.out" ]; then
		notok "errors: $name" "wrote to stdout"
	else
		ok "errors: $name: exit $got, $(head -n 1 "$work/err.err")"
	fi
}
# A PID that is surely free: the last one the kernel allows, if not taken.
free_pid=$(cat /proc/sys/kernel/pid_max)
while [ -e "/proc/$free_pid" ]; do free_pid=$((free_pid - 1)); done
err "no such PID" 1 "no process with PID $free_pid" "$cli" profile -s 1 "$free_pid"
err "no PID" 2 "no PID given" "$cli" profile
err "PID and --all" 2 "either PID or --all" "$cli" profile --all 1
err "two PIDs" 2 "one PID only" "$cli" profile 1 2
err "bad PID" 2 "expected a process ID, not 'x1'" "$cli" profile x1
err "bad --seconds" 2 "expected a positive number of seconds, not 'soon'" "$cli" profile -s soon 1
err "--seconds 0" 2 "expected a positive number of seconds, not '0'" "$cli" profile --seconds 0 1
err "bad -n" 2 "expected a number of addresses" "$cli" profile -n 0 1
err "unknown option" 2 "unknown option '--frobnicate'" "$cli" profile --frobnicate 1
err "missing value" 2 "needs a value" "$cli" profile 1 --seconds
err "not privileged" 1 "CAP_BPF and CAP_PERFMON are missing" \
	setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all "$cli" profile --all
err "CAP_BPF alone" 1 "CAP_PERFMON is missing" \
	setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all,+bpf \
	--ambient-caps=+bpf "$cli" profile --all

echo "profile: $npass passed, $nfail failed on kernel $(uname -r)${failed:+ (${failed[*]})}"
[ "$nfail" = 0 ]
