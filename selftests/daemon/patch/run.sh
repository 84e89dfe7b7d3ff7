#!/bin/bash
# Patch requests end to end (make check-daemon-patch):
#   run.sh FAULTLINE FAULTLINED PRELOAD OUTDIR
# faultlined on a private socket in a fresh directory, patch-prog (patch
# point 7, stack map record 9: points.ll) and faultline patch / invalidate
# against it.  Every process started here is killed when the script ends,
# however it ends; nothing from an earlier run is used (the directory is
# made anew).  Waits are for events, up to WAIT_S.  Runs as root.
set -u

FL=$(realpath "$1")
FLD=$(realpath "$2")
PRELOAD=$(realpath "$3")
OUT=$(realpath -m "$4")
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=$OUT
. "$HERE/../wait.sh"

if [ "$(id -u)" != 0 ]; then
	echo "skip - daemon patch: runs as root (clients drop to nobody)"
	exit 0
fi
mkdir -p "$OUT"
# A short directory that nobody can traverse too (the socket, the copies nobody runs).
W=$(mktemp -d /tmp/fl-patch.XXXXXX)
chmod 755 "$W"
cleanup() {
	local p
	for p in $(jobs -p); do kill -KILL "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
cd "$W" || exit 1
install -m 755 "$BIN/patch-prog" "$BIN/patch-prog-shim" "$BIN/patch-sandbox" "$FL" "$W/"
install -m 755 "$PRELOAD" "$W/libfaultline-preload.so"
FL=$W/faultline

. "$HERE/../checks.sh"

SOCK=$W/fl.sock
export FAULTLINE_SOCKET=$SOCK
# fl_init waits for the whole registration: "ready" means registered.
export FAULTLINE_REGISTER_WAIT_MS=300000
unset FAULTLINE_ALLOW_PATCH

# start_daemon [WRAPPER...]: faultlined (in WRAPPER) on $SOCK; DPID
start_daemon() {
	rm -rf "$W/state" "$SOCK"
	"$@" "$FLD" --socket "$SOCK" --state-dir "$W/state" --no-bpf --log-level info \
		2>>"$OUT/daemon.log" &
	DPID=$!
	if ! eventually test -S "$SOCK"; then
		bad "faultlined did not listen"
		exit 1
	fi
}

# start NAME CMD...: CMD with stdin from NAME.in (a fifo held open on fd
# 10+i), stdout NAME.out; waits for "ready PID TARGET"; sets PID, TARGET.
NFD=10
declare -A IN
start() {
	local name=$1 line
	shift
	mkfifo "$W/$name.in"
	chmod 666 "$W/$name.in"
	"$@" <"$W/$name.in" >"$W/$name.out" 2>"$W/$name.err" &
	eval "exec $NFD>\"$W/$name.in\""
	IN[$name]=$NFD
	NFD=$((NFD + 1))
	if ! eventually grep -q '^ready ' "$W/$name.out"; then
		bad "$name did not start: $(head -3 "$W/$name.err")"
		exit 1
	fi
	line=$(grep '^ready ' "$W/$name.out")
	PID=$(echo "$line" | cut -d' ' -f2)
	TARGET=$(echo "$line" | cut -d' ' -f3)
}
# values_past NAME N: NAME has printed more than N values (counted at each
# try: eventually expands its arguments once).
values_past() {
	[ "$(grep -c '^value ' "$W/$1.out")" -gt "$2" ]
}
# call NAME: what pp_value returns now in NAME
call() {
	local n
	n=$(grep -c '^value ' "$W/$1.out")
	echo call >&"${IN[$1]}"
	eventually values_past "$1" "$n" || return 1
	grep '^value ' "$W/$1.out" | tail -1 | cut -d' ' -f2
}

# The records' addresses (no PIE: the stack map's are the runtime ones).
"$FL" stackmap --json patch-prog >stackmap.json || exit 1
pc_of() {
	python3 - "$1" <<'EOF'
import json, sys
t = json.load(open("stackmap.json"))["files"][0]["tables"][0]
for r in t["records"]:
    if r["id"] == int(sys.argv[1]):
        print(hex(t["functions"][r["function"]]["address"] + r["instruction_offset"]))
EOF
}
PP_PC=$(pc_of 7)
SM_PC=$(pc_of 9)
MOV42="48 c7 c0 2a 00 00 00"
NOPS16="2e 66 0f 1f 84 00 00 02 00 00 66 0f 1f 44 00 08"

echo "-- command lines"
run usage-no-pid 2 "$FL" patch
run usage-no-record 2 "$FL" patch 1 --bytes 90
run usage-both-names 2 "$FL" patch 1 --patchpoint 7 --pc 0x1000 --bytes 90
run usage-no-bytes 2 "$FL" patch 1 --patchpoint 7
run usage-odd-hex 2 "$FL" patch 1 --patchpoint 7 --bytes 909
has usage-odd-hex-says usage-odd-hex.err "expected hex bytes"
run usage-not-hex 2 "$FL" patch 1 --patchpoint 7 --bytes zz
run usage-too-many 2 "$FL" patch 1 --patchpoint 7 --bytes "$(printf '90%.0s' $(seq 257))"
has usage-too-many-says usage-too-many.err "more than 256 bytes"
run usage-reset-bytes 2 "$FL" patch 1 --reset --patchpoint 7 --bytes 90
run usage-pc-zero 2 "$FL" patch 1 --pc 0 --bytes 90
run usage-bad-pid 2 "$FL" patch 0 --patchpoint 7 --bytes 90
run usage-extra 2 "$FL" patch 1 2 --patchpoint 7 --bytes 90
run usage-inv-no-target 2 "$FL" invalidate 1 --id 9
run usage-inv-target-zero 2 "$FL" invalidate 1 --id 9 --target 0
run usage-inv-no-record 2 "$FL" invalidate 1 --target 0x1000
run help-patch 0 "$FL" patch --help
has help-patch-says help-patch.out "--expect HEX"
run help-invalidate 0 "$FL" invalidate --help
run no-daemon 1 "$FL" patch 1 --patchpoint 7 --bytes 90
has no-daemon-says no-daemon.err "faultlined is not running"

echo "-- patch requests"
start_daemon
start a env FAULTLINE_ALLOW_PATCH=0 ./patch-prog flag
A=$PID
A_TARGET=$TARGET
run write "0" "$FL" patch "$A" --patchpoint 7 --bytes "$MOV42"
has write-prints-before write.out "before: $NOPS16"
has write-prints-now write.out "now:    $MOV42 "
has write-prints-record write.out "patch point 7 at $PP_PC (16 bytes, changed)"
v=$(call a)
[ "$v" = 42 ] && ok "the rewritten patch point runs: pp_value returns 42" ||
	bad "pp_value returns '$v' after the write, not 42"

run write-stale 1 "$FL" patch "$A" --pc "$PP_PC" --bytes 90 --expect "$NOPS16"
has write-stale-says write-stale.err "refused"
has write-stale-errno write-stale.err "Stale file handle"
has write-stale-shows-now write-stale.out "now:    $MOV42 "
v=$(call a)
[ "$v" = 42 ] && ok "a stale --expect changed nothing (still 42)" || bad "pp_value returns '$v'"

run write-expect-short 1 "$FL" patch "$A" --pc "$PP_PC" --bytes "48c7c007000000" --expect "$MOV42"
has write-expect-short-says write-expect-short.err "expected, its region has 16"
# The whole region as it is now, from a refused write's answer.
"$FL" patch "$A" --patchpoint 7 --bytes 90 --expect 00 --json >expect-json.out 2>/dev/null
EXPECT_FULL=$(python3 -c 'import json; print(json.load(open("expect-json.out"))["now"]["bytes"])')
run write-expect 0 "$FL" patch "$A" --pc "$PP_PC" --bytes "48c7c007000000" --expect "$EXPECT_FULL"
v=$(call a)
[ "$v" = 7 ] && ok "a write with the right --expect runs (pp_value returns 7)" ||
	bad "pp_value returns '$v', not 7"

run write-json 0 "$FL" patch "$A" --patchpoint 7 --bytes "$MOV42" --json
python3 - <<'EOF' && ok "--json: status 0, before and now with id, pc, size, bytes" || bad "--json document"
import json
d = json.load(open("write-json.out"))
assert d["status"] == 0 and d["request"] == "patchpoint_write", d
assert d["before"]["bytes"].startswith("48c7c007000000"), d
assert d["now"]["bytes"].startswith("48c7c02a000000") and d["now"]["size"] == 16, d
assert d["now"]["id"] == 7 and d["now"]["changed"] is True, d
EOF

run unknown-record 1 "$FL" patch "$A" --patchpoint 12345 --bytes 90
has unknown-record-says unknown-record.err "No such file or directory"
run too-long 1 "$FL" patch "$A" --patchpoint 7 --bytes "$(printf '90%.0s' $(seq 17))"
v=$(call a)
[ "$v" = 42 ] && ok "refused writes changed nothing (still 42)" || bad "pp_value returns '$v'"

run reset 0 "$FL" patch "$A" --reset --patchpoint 7
has reset-now reset.out "now:    $NOPS16"
has reset-as-compiled reset.out "as compiled"

run invalidate 0 "$FL" invalidate "$A" --id 9 --target "$A_TARGET"
has invalidate-record invalidate.out "stack map record 9 at $SM_PC (16 bytes, declared, changed)"
has invalidate-call invalidate.out "now:    e8 "
run invalidate-by-pc 0 "$FL" invalidate "$A" --pc "$SM_PC" --target "$A_TARGET" --json
python3 -c '
import json
d = json.load(open("invalidate-by-pc.out"))
assert d["status"] == 0 and d["request"] == "stackmap_invalidate", d
assert d["before"]["bytes"][:2] == "e8" and d["now"]["bytes"][:2] == "e8", d
' && ok "invalidate by pc: --json" || bad "invalidate by pc: --json"
run invalidate-unknown 1 "$FL" invalidate "$A" --id 4242 --target "$A_TARGET"

echo "-- who may do what"
NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups)
run nobody-write 1 "${NOBODY[@]}" "$FL" patch "$A" --patchpoint 7 --bytes "$MOV42"
has nobody-write-says nobody-write.err "no registered process $A"
start n "${NOBODY[@]}" env FAULTLINE_ALLOW_PATCH=1 ./patch-prog env
N=$PID
run nobody-write-own 1 "${NOBODY[@]}" "$FL" patch "$N" --patchpoint 7 --bytes "$MOV42"
has nobody-write-own-says nobody-write-own.err "only from root"
run nobody-reset-own 0 "${NOBODY[@]}" "$FL" patch "$N" --reset --patchpoint 7
run nobody-invalidate-own 0 "${NOBODY[@]}" "$FL" invalidate "$N" --id 9 --target "$TARGET"
run root-write-nobodys 0 "$FL" patch "$N" --patchpoint 7 --bytes "$MOV42"
v=$(call n)
[ "$v" = 42 ] && ok "FAULTLINE_ALLOW_PATCH=1 opted in (root's write runs)" || bad "pp_value returns '$v'"

start p env FAULTLINE_ALLOW_PATCH=0 ./patch-prog env
P=$PID
run not-opted-in 1 "$FL" patch "$P" --patchpoint 7 --bytes "$MOV42"
has not-opted-in-says not-opted-in.err "did not opt in"
run not-opted-in-reset 0 "$FL" patch "$P" --reset --patchpoint 7
has not-opted-in-unchanged not-opted-in-reset.out "now:    $NOPS16"

start s env LD_PRELOAD="$W/libfaultline-preload.so" FAULTLINE_ALLOW_PATCH=1 ./patch-prog-shim
S=$PID
run shim-write 0 "$FL" patch "$S" --patchpoint 7 --bytes "$MOV42"
v=$(call s)
[ "$v" = 42 ] && ok "the preload shim honours FAULTLINE_ALLOW_PATCH=1" || bad "pp_value returns '$v'"
start t env LD_PRELOAD="$W/libfaultline-preload.so" ./patch-prog-shim
run shim-not-opted-in 1 "$FL" patch "$PID" --patchpoint 7 --bytes "$MOV42"
stop_daemon
grep -q 'ERROR\|error' "$OUT/daemon.log" && echo "# (daemon log: $OUT/daemon.log)"

echo "-- without ptrace"
./patch-sandbox true >sandbox-can.out 2>&1
if [ $? = 77 ]; then
	echo "skip - without ptrace: $(cat sandbox-can.out)"
else
	run sandbox-ptrace 159 ./patch-sandbox --try ptrace
	run sandbox-vm 159 ./patch-sandbox --try vm
	run sandbox-mem 0 ./patch-sandbox --try mem
	has sandbox-mem-says sandbox-mem.out "Permission denied"
	start_daemon ./patch-sandbox
	start z ./patch-sandbox ./patch-prog flag 2
	Z=$PID
	run sandboxed-write 0 ./patch-sandbox "$FL" patch "$Z" --patchpoint 7 --bytes "$MOV42"
	v=$(call z)
	[ "$v" = 42 ] && ok "patched in the sandbox, with 2 threads running it: pp_value returns 42" ||
		bad "pp_value returns '$v' in the sandbox"
	run sandboxed-invalidate 0 ./patch-sandbox "$FL" invalidate "$Z" --id 9 --target "$TARGET"
	kill -0 "$DPID" 2>/dev/null && ok "faultlined lived through it in the sandbox" ||
		bad "faultlined died in the sandbox"
	kill -0 "$Z" 2>/dev/null && ok "the program lived through it in the sandbox" ||
		bad "the program died in the sandbox"
	stop_daemon
fi

echo "daemon patch: $pass passed, $fail failed"
[ "$fail" = 0 ]
