#!/bin/bash
# Healing end to end (make check-daemon-heal):
#   run.sh FAULTLINE FAULTLINED PRELOAD OUTDIR
# faultlined (with its eBPF program, which counts the fault signals the
# kernel delivers: "kernel_faults") on a private socket in a fresh
# directory, heal-prog (heal.ll's five implicit checks) and faultline heal /
# unheal / request against it; faultlined --heal-after / --unheal-after;
# an unmodified program under the preload shim with FAULTLINE_HEAL_AFTER;
# a site's healing kept when its process exits, in its record (state.c)
# and after a kill -9 and restart of the daemon; records with healing, and
# without, read back.
# Every program under test has a twin, the explicit-check build without
# faultline, that gets the same commands: their answers must be equal.
# Every process started here is killed when the script ends, however it
# ends; nothing from an earlier run is used (the directory is made anew).
# Waits are for events, up to WAIT_S.  Runs as root.
set -u

FL=$(realpath "$1")
FLD=$(realpath "$2")
PRELOAD=$(realpath "$3")
OUT=$(realpath -m "$4")
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../wait.sh"

if [ "$(id -u)" != 0 ]; then
	echo "skip - daemon heal: runs as root (clients drop to nobody)"
	exit 0
fi
mkdir -p "$OUT"
rm -f "$OUT/daemon.log"
# A short directory that nobody can traverse too (the socket, the copies nobody runs).
W=$(mktemp -d /tmp/fl-heal.XXXXXX)
chmod 755 "$W"
cleanup() {
	local p
	# (bash's "Killed" notices of the programs killed here.)
	exec 2>/dev/null
	for p in $(jobs -p); do kill -KILL "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
cd "$W" || exit 1
install -m 755 "$OUT/heal-prog" "$OUT/heal-prog-shim-imp" "$OUT/heal-prog-shim-exp" "$FL" "$W/"
install -m 755 "$PRELOAD" "$W/libfaultline-preload.so"
FL=$W/faultline
REF=$W/heal-prog-shim-exp

. "$HERE/../checks.sh"

SOCK=$W/fl.sock
export FAULTLINE_SOCKET=$SOCK
# fl_init waits for the whole registration: "ready" means registered.
export FAULTLINE_REGISTER_WAIT_MS=300000
unset FAULTLINE_HEAL_AFTER FAULTLINE_UNHEAL_AFTER FAULTLINE_ALLOW_PATCH LD_PRELOAD

# run_daemon [ARG...]: faultlined on $SOCK and $W/state, as it is, with ARG...; DPID
run_daemon() {
	rm -f "$SOCK"
	echo "# faultlined $*" >>"$OUT/daemon.log"
	"$FLD" --socket "$SOCK" --state-dir "$W/state" --log-level info "$@" \
		2>>"$OUT/daemon.log" &
	DPID=$!
	if ! eventually test -S "$SOCK"; then
		bad "faultlined did not listen"
		exit 1
	fi
}
# start_daemon [ARG...]: run_daemon on an empty state directory
start_daemon() {
	rm -rf "$W/state"
	run_daemon "$@"
}

# start NAME CMD...: CMD with stdin from NAME.in (a fifo held open on a
# file descriptor of this shell), stdout NAME.out, and its twin NAME-ref
# (the explicit build, without faultline); waits for both to be ready;
# sets PID (CMD's).
NFD=10
declare -A IN K
spawn() {
	local name=$1
	shift
	mkfifo "$W/$name.in"
	chmod 666 "$W/$name.in"
	"$@" <"$W/$name.in" >"$W/$name.out" 2>"$W/$name.err" &
	eval "exec $NFD>\"$W/$name.in\""
	IN[$name]=$NFD
	K[$name]=0
	NFD=$((NFD + 1))
	if ! eventually grep -q '^ready ' "$W/$name.out"; then
		bad "$name did not start: $(head -3 "$W/$name.err")"
		exit 1
	fi
	PID=$(grep '^ready ' "$W/$name.out" | cut -d' ' -f2)
}
start() {
	local name=$1
	shift
	spawn "$name-ref" env -u LD_PRELOAD "$REF"
	spawn "$name" "$@"
}
# answered NAME K: NAME has printed its answer to command K (a function:
# eventually expands its arguments once, this reads the file at each try).
answered() {
	grep -q "^$2 " "$W/$1.out"
}
# answer NAME K: that answer, without its number
answer() {
	grep "^$2 " "$W/$1.out" | head -1 | cut -d' ' -f2-
}
# say NAME LINE: LINE to NAME and its twin; sets ANSWER to NAME's answer.
# The twin's must be the same (else FAIL).
say() {
	local name=$1 line=$2 k ref
	k=$((K[$name] + 1))
	K[$name]=$k
	K[$name-ref]=$k
	echo "$line" >&"${IN[$name]}"
	echo "$line" >&"${IN[$name-ref]}"
	if ! eventually answered "$name" "$k" || ! eventually answered "$name-ref" "$k"; then
		bad "$name: no answer to '$line'"
		ANSWER=
		return 1
	fi
	ANSWER=$(answer "$name" "$k")
	ref=$(answer "$name-ref" "$k")
	if [ "$ANSWER" != "$ref" ]; then
		bad "$name: '$line' answered '$ANSWER', the explicit build '$ref'"
		return 1
	fi
}

# sites_json PID: faultline sites --json PID into sites.json
sites_json() {
	"$FL" sites --json "$1" >sites.json 2>sites.err
}
# field PID FUNCTION KEY: KEY of FUNCTION's site ("none": null or absent)
field() {
	sites_json "$1" || { echo "?"; return; }
	python3 - "$2" "$3" <<'PY'
import json, sys
for s in json.load(open("sites.json"))["processes"][0]["sites"]:
    if s["function"] == sys.argv[1]:
        v = s.get(sys.argv[2])
        print("none" if v is None else hex(v) if sys.argv[2] == "faulting_pc" else v)
PY
}
# is PID FUNCTION KEY VALUE: KEY of FUNCTION's site is VALUE now
is() {
	[ "$(field "$1" "$2" "$3")" = "$4" ]
}
# expect NAME PID FUNCTION KEY VALUE: is, now
expect() {
	local got
	got=$(field "$2" "$3" "$4")
	if [ "$got" = "$5" ]; then
		ok "$1"
	else
		bad "$1: $3's $4 is $got, expected $5"
	fi
}
# expect_soon NAME PID FUNCTION KEY VALUE: is, within WAIT_S
expect_soon() {
	if eventually is "$2" "$3" "$4" "$5"; then
		ok "$1"
	else
		bad "$1: $3's $4 is $(field "$2" "$3" "$4"), expected $5"
	fi
}
# counts PID FUNCTION: "faults/kernel_faults/healed STATE"
counts() {
	echo "$(field "$1" "$2" faults)/$(field "$1" "$2" kernel_faults)/$(field "$1" "$2" healed) $(field "$1" "$2" state)"
}
# expect_counts NAME PID FUNCTION "FAULTS/KERNEL/HEALED STATE"
expect_counts() {
	local got
	got=$(counts "$2" "$3")
	if [ "$got" = "$4" ]; then
		ok "$1 ($3: faults/kernel_faults/healed $got)"
	else
		bad "$1: $3: faults/kernel_faults/healed $got, expected $4"
	fi
}

FUNCS=(- h_load_i32 h_load_i8 h_load_i64_off h_store_i32 h_rmw_add_i32)

echo "-- command lines"
run usage-heal-no-pid 2 "$FL" heal
run usage-heal-no-site 2 "$FL" heal 1
has usage-heal-no-site-says usage-heal-no-site.err "no SITE given (or --over N)"
run usage-heal-both 2 "$FL" heal 1 0x1000 --over 3
has usage-heal-both-says usage-heal-both.err "not both"
run usage-heal-site-zero 2 "$FL" heal 1 0
has usage-heal-site-zero-says usage-heal-site-zero.err "0 is no address"
run usage-heal-site-not-number 2 "$FL" heal 1 zz
run usage-heal-over-not-number 2 "$FL" heal 1 --over x
run usage-heal-bad-pid 2 "$FL" heal 0 0x1000
run usage-unheal-no-site 2 "$FL" unheal 1
run usage-unheal-over 2 "$FL" unheal 1 --over 3
run usage-request-no-value 2 "$FL" request 1 heal-threshold
run usage-request-window-no-count 2 "$FL" request 1 heal-threshold 0/5
has usage-request-window-no-count-says usage-request-window-no-count.err "a window without a count"
run usage-request-bad-window 2 "$FL" request 1 heal-threshold 3/x
run usage-request-too-big 2 "$FL" request 1 heal-threshold 4294967296
run usage-request-window-too-big 2 "$FL" request 1 heal-threshold 3/2147483648
run usage-request-extra 2 "$FL" request 1 heal-threshold 3 4
run usage-unheal-after-slash 2 "$FL" request 1 unheal-after 3/4
run usage-unheal-after-no-value 2 "$FL" request 1 unheal-after
run help-heal 0 "$FL" heal --help
has help-heal-says help-heal.out "--over N"
run help-unheal 0 "$FL" unheal --help
run no-daemon 1 "$FL" heal 1 0x1000
has no-daemon-says no-daemon.err "faultlined is not running"
run fld-heal-after-zero 2 "$FLD" --socket "$W/x.sock" --heal-after 0
run fld-heal-after-junk 2 "$FLD" --socket "$W/x.sock" --heal-after 3/x
run fld-heal-after-window-only 2 "$FLD" --socket "$W/x.sock" --heal-after /5
run fld-unheal-after-zero 2 "$FLD" --socket "$W/x.sock" --unheal-after 0
run fld-unheal-after-junk 2 "$FLD" --socket "$W/x.sock" --unheal-after 1s

echo "-- faultline heal and unheal"
start_daemon
start a ./heal-prog
A=$PID
PC1=$(field "$A" h_load_i32 faulting_pc)
say a "null 1 10"
expect_counts "10 nulls, 10 fault signals" "$A" h_load_i32 "10/10/0 implicit"
run heal "0" "$FL" heal "$A" "$PC1"
has heal-says-tactic heal.out "$PC1: healed ("
TACTIC1=$(sed -n 's/.*healed (\(.*\))$/\1/p' heal.out)
expect "heal: the site's state is healed" "$A" h_load_i32 state healed
expect "heal: the site's tactic is $TACTIC1" "$A" h_load_i32 tactic "$TACTIC1"
check "heal: healed_at is now" [ $(( $(date +%s) - $(field "$A" h_load_i32 healed_at) )) -lt 600 ]
say a "null 1 1000"
check "1000 nulls through the healed site: the null block ran for each (the explicit build's answer)" \
	[ "$ANSWER" = "$(echo "$ANSWER" | sed 's/hits [0-9]*/hits 1010/')" ]
expect_counts "the healed site costs no signal, its stub counts the failures" "$A" h_load_i32 "10/10/1000 healed"
say a "valid 1 500"
expect_counts "valid pointers through the healed site: right values, nothing counted" "$A" h_load_i32 "10/10/1000 healed"
run sites-table 0 "$FL" sites "$A"
has sites-table-healed-column sites-table.out "HEALED  STATE"
has sites-table-state sites-table.out "healed ($TACTIC1) since"
grep -F h_load_i32 sites-table.out | grep -q ' 1000  healed' && ok "sites: h_load_i32's HEALED is 1000" ||
	{ bad "sites: h_load_i32's HEALED is not 1000"; sed 's/^/  | /' sites-table.out; }
grep -F h_load_i8 sites-table.out | grep -q ' 0  implicit$' && ok "sites: h_load_i8's STATE is implicit" ||
	{ bad "sites: h_load_i8's STATE is not implicit"; sed 's/^/  | /' sites-table.out; }
run stats-table 0 "$FL" stats --pid "$A"
has stats-table-healed-column stats-table.out "HEALED  STATE"
has stats-table-state stats-table.out "healed ($TACTIC1) since"
run heal-again 0 "$FL" heal "$A" "$PC1"
has heal-again-says heal-again.out "healed ($TACTIC1)"
run heal-json 0 "$FL" heal --json "$A" "$PC1"
python3 - "$A" <<'PY' && ok "heal --json: pid, request, status 0, tactic, why null" || bad "heal --json: $(cat heal-json.out)"
import json, sys
d = json.load(open("heal-json.out"))
assert d["pid"] == int(sys.argv[1]) and d["request"] == "heal" and d["status"] == 0, d
assert d["error"] == "" and d["tactic"] in ("B1", "B2", "T1", "T3") and d["why"] is None, d
PY
run unheal 0 "$FL" unheal "$A" "$PC1"
has unheal-says unheal.out "$PC1: unhealed (the implicit check is back)"
expect_counts "unhealed: the healed count stays" "$A" h_load_i32 "10/10/1000 implicit"
say a "null 1 5"
expect_counts "unhealed: nulls fault again" "$A" h_load_i32 "15/15/1000 implicit"
expect "unhealed: no tactic" "$A" h_load_i32 tactic none

echo "-- every site healed by hand"
for f in 1 2 3 4 5; do
	fn=${FUNCS[$f]}
	pc=$(field "$A" "$fn" faulting_pc)
	say a "null $f 3"
	before=$(field "$A" "$fn" faults)
	run "heal-$fn" 0 "$FL" heal "$A" "$pc"
	echo "#   $fn: $(cat "heal-$fn.out")"
	say a "null $f 200"
	say a "valid $f 200"
	say a "null $f 200"
	expect_counts "$fn healed: 400 nulls, no signal" "$A" "$fn" "$before/$before/$(( f == 1 ? 1400 : 400 )) healed"
done
say a "pattern 3000"
echo "#   pattern 3000 with every site healed: $ANSWER"
check "with every site healed, no signal at all" [ "$(field "$A" h_load_i32 faults)" = 18 ]
run unheal-all 0 "$FL" unheal "$A" $(for f in 1 2 3 4 5; do field "$A" "${FUNCS[$f]}" faulting_pc; done)
check "unheal of 5 sites: 5 lines" [ "$(grep -c ': unhealed' unheal-all.out)" = 5 ]
say a "pattern 100"
check "unhealed: the pattern's nulls fault again" [ "$(field "$A" h_load_i32 faults)" -gt 18 ]

echo "-- refusals"
run heal-no-site 1 "$FL" heal "$A" 0x1234
has heal-no-site-says heal-no-site.err "0x1234: not an implicit-check site of pid $A"
run heal-next-to-site 1 "$FL" heal "$A" "$(printf '0x%x' $((PC1 + 1)))"
has heal-next-to-site-says heal-next-to-site.err "not an implicit-check site"
run heal-no-site-json 1 "$FL" heal --json "$A" 0x1234
python3 -c '
import json
d = json.load(open("heal-no-site-json.out"))
assert d["status"] == -2 and d["tactic"] is None, d
' && ok "heal --json of no site: status -ENOENT" || bad "heal --json of no site: $(cat heal-no-site-json.out)"
run unheal-not-healed 1 "$FL" unheal "$A" "$PC1"
has unheal-not-healed-says unheal-not-healed.err "$PC1: not healed"
run unheal-no-site 1 "$FL" unheal "$A" 0x1234
run heal-some-refused 1 "$FL" heal "$A" 0x1234 "$PC1"
has heal-some-refused-heals-the-rest heal-some-refused.out "$PC1: healed"
run unheal-it 0 "$FL" unheal "$A" "$PC1"
run heal-no-process 1 "$FL" heal 999999999 0x1000
has heal-no-process-says heal-no-process.err "no registered process"
NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups)
run nobody-heal 1 "${NOBODY[@]}" "$FL" heal "$A" "$PC1"
has nobody-heal-says nobody-heal.err "no registered process $A"
run nobody-unheal 1 "${NOBODY[@]}" "$FL" unheal "$A" "$PC1"
has nobody-unheal-says nobody-unheal.err "no registered process $A"
run nobody-heal-over 1 "${NOBODY[@]}" "$FL" heal "$A" --over 0
run nobody-threshold 1 "${NOBODY[@]}" "$FL" request "$A" heal-threshold 1
has nobody-threshold-says nobody-threshold.err "no registered process $A"
run nobody-unheal-after 1 "${NOBODY[@]}" "$FL" request "$A" unheal-after 1
expect "nobody's requests changed nothing" "$A" h_load_i32 state implicit
say a "null 1 2"
expect "nobody's heal-threshold 1 changed nothing (nulls still fault)" "$A" h_load_i32 state implicit
start n "${NOBODY[@]}" ./heal-prog
N=$PID
NPC=$(field "$N" h_load_i8 faulting_pc)
run nobody-heals-its-own 0 "${NOBODY[@]}" "$FL" heal "$N" "$NPC"
say n "null 2 50"
expect_counts "nobody healed its own process's site" "$N" h_load_i8 "0/0/50 healed"
run nobody-unheals-its-own 0 "${NOBODY[@]}" "$FL" unheal "$N" "$NPC"
run root-heals-nobodys 0 "$FL" heal "$N" "$NPC"

echo "-- faultline heal --over N"
start b ./heal-prog
B=$PID
say b "null 1 5"
say b "null 2 3"
say b "null 3 4"
run heal-over 0 "$FL" heal "$B" --over 3
has heal-over-says heal-over.out "pid $B: 2 sites healed, 0 cannot be healed in place (sites with more than 3 failures)"
expect "--over 3: h_load_i32 (5 failures) healed" "$B" h_load_i32 state healed
expect "--over 3: h_load_i64_off (4 failures) healed" "$B" h_load_i64_off state healed
expect "--over 3: h_load_i8 (3 failures) not healed" "$B" h_load_i8 state implicit
say b "pattern 500"
expect_counts "--over: the healed sites cost no signal" "$B" h_load_i32 "5/5/$(field "$B" h_load_i32 healed) healed"
run heal-over-json 0 "$FL" heal --json "$B" --over 0
python3 -c '
import json
d = json.load(open("heal-over-json.out"))
assert d["status"] == 0 and d["value"] == 5, d
' && ok "heal --json --over 0: every site (5: the healed ones too)" || bad "heal --over --json: $(cat heal-over-json.out)"
run heal-over-none 0 "$FL" heal "$B" --over 1000000
has heal-over-none-says heal-over-none.out "0 sites healed"

echo "-- faultline request heal-threshold and unheal-after"
start c ./heal-prog
C=$PID
run threshold 0 "$FL" request "$C" heal-threshold 3
has threshold-says threshold.out "pid $C: heal threshold 3/0 s (was 0/0 s)"
say c "null 1 10"
check "heal-threshold 3: the null block ran 10 times" [ "${ANSWER#*hits }" != "$ANSWER" ]
expect_counts "heal-threshold 3: exactly 3 fault signals, then healed" "$C" h_load_i32 "3/3/7 healed"
say c "null 1 10"
expect_counts "heal-threshold 3: no signal after" "$C" h_load_i32 "3/3/17 healed"
run threshold-window 0 "$FL" request --json "$C" heal-threshold 2/60
python3 -c '
import json
d = json.load(open("threshold-window.out"))
assert d["status"] == 0 and d["request"] == "heal_threshold" and d["value"] == 3, d
' && ok "request --json heal-threshold 2/60: the one before (3)" || bad "request --json: $(cat threshold-window.out)"
say c "null 2 10"
expect_counts "heal-threshold 2/60: 2 failures within 60 s heal" "$C" h_load_i8 "2/2/8 healed"
run threshold-short-window 0 "$FL" request "$C" heal-threshold 2/3
has threshold-short-window-says threshold-short-window.out "heal threshold 2/3 s (was 2/60 s)"
say c "null 3 1"
# Two failures 4 s apart are in two windows of 3 s (the window's clock
# counts whole seconds).
sleep 4
say c "null 3 1"
expect_counts "heal-threshold 2/3: 2 failures 4 s apart do not heal" "$C" h_load_i64_off "2/2/0 implicit"
say c "null 3 5"
expect_counts "heal-threshold 2/3: the next one, within 3 s of the second, does" "$C" h_load_i64_off "3/3/4 healed"
run threshold-off 0 "$FL" request "$C" heal-threshold 0
has threshold-off-says threshold-off.out "heal threshold 0/0 s (was 2/3 s)"
say c "null 4 10"
expect_counts "heal-threshold 0: no policy, every null faults" "$C" h_store_i32 "10/10/0 implicit"
run unheal-after 0 "$FL" request "$C" unheal-after 2
has unheal-after-says unheal-after.out "pid $C: unheal after 2 s (was 0)"
expect_soon "unheal-after 2: a healed site quiet for 2 s is unhealed" "$C" h_load_i32 state implicit
expect_soon "unheal-after 2: every quiet healed site" "$C" h_load_i8 state implicit
say c "null 1 2"
expect_counts "unheal-after: the unhealed site faults again" "$C" h_load_i32 "5/5/17 implicit"
run unheal-after-off 0 "$FL" request "$C" unheal-after 0
has unheal-after-off-says unheal-after-off.out "unheal after 0 s (was 2)"
run threshold-of-nothing 1 "$FL" request 999999999 heal-threshold 3
has threshold-of-nothing-says threshold-of-nothing.err "no registered process 999999999"
stop_daemon

echo "-- faultlined --heal-after, --unheal-after"
start_daemon --heal-after 3
start d ./heal-prog
D=$PID
# The policy is the daemon's first request after the registration: a ping
# after it is answered after it.
run d-ping 0 "$FL" request "$D" ping 1
say d "null 1 10"
expect_counts "faultlined --heal-after 3: the process heals after 3 failures" "$D" h_load_i32 "3/3/7 healed"
start e env FAULTLINE_HEAL_AFTER=5 ./heal-prog
E=$PID
run e-ping 0 "$FL" request "$E" ping 1
say e "null 1 10"
expect_counts "FAULTLINE_HEAL_AFTER=5 wins over faultlined --heal-after 3" "$E" h_load_i32 "5/5/5 healed"
run e-threshold 0 "$FL" request "$E" heal-threshold 2
has e-threshold-says e-threshold.out "(was 5/0 s)"
say e "null 2 10"
expect_counts "faultline request heal-threshold wins over the process's own" "$E" h_load_i8 "2/2/8 healed"
stop_daemon

start_daemon --heal-after 2/600 --unheal-after 1
start g ./heal-prog
G=$PID
run g-ping 0 "$FL" request "$G" ping 1
say g "null 5 10"
# Healed, then quiet: unhealed a second later (the healer looks every second).
expect_soon "faultlined --unheal-after 1: the quiet healed site is unhealed" "$G" h_rmw_add_i32 state implicit
expect_counts "faultlined --heal-after 2/600: healed after 2 failures, then unhealed" "$G" h_rmw_add_i32 "2/2/8 implicit"
stop_daemon

echo "-- an unmodified program under the preload shim, FAULTLINE_HEAL_AFTER=3"
# heal-prog-shim-imp has no faultline code: libfaultline-preload.so
# registers it and reads FAULTLINE_HEAL_AFTER.  Its twin is the explicit
# build (the same IR without -enable-implicit-null-checks), without the shim.
start_daemon
start s env LD_PRELOAD="$W/libfaultline-preload.so" FAULTLINE_HEAL_AFTER=3 ./heal-prog-shim-imp
S=$PID
grep -qF "$W/libfaultline-preload.so" "/proc/$S/maps" && ok "the shim is loaded" || bad "the shim is not in /proc/$S/maps"
say s "pattern 2000"
echo "#   pattern 2000 (the explicit build's answer too): $ANSWER"
for f in 1 2 3 4 5; do
	fn=${FUNCS[$f]}
	expect_counts "shim: $fn took exactly 3 fault signals (library and kernel), then healed" \
		"$S" "$fn" "3/3/$(( $(echo "$ANSWER" | sed 's/.*nulls //' | cut -d/ -f$f) - 3 )) healed"
done
say s "pattern 2000"
total=0
for f in 1 2 3 4 5; do
	total=$((total + $(field "$S" "${FUNCS[$f]}" kernel_faults)))
done
check "shim: 15 fault signals in all (the kernel's count) after 2 x 2000 rounds" [ "$total" = 15 ]
start t env LD_PRELOAD="$W/libfaultline-preload.so" ./heal-prog-shim-imp
T=$PID
say t "pattern 200"
expect_counts "shim without FAULTLINE_HEAL_AFTER: every null faults" "$T" h_load_i32 \
	"$(echo "$ANSWER" | sed 's/.*nulls //' | cut -d/ -f1)/$(echo "$ANSWER" | sed 's/.*nulls //' | cut -d/ -f1)/0 implicit"
stop_daemon
start_daemon --heal-after 3
start u env LD_PRELOAD="$W/libfaultline-preload.so" ./heal-prog-shim-imp
U=$PID
run u-ping 0 "$FL" request "$U" ping 1
say u "null 4 10"
expect_counts "shim: faultlined --heal-after 3 reaches a program under the shim" "$U" h_store_i32 "3/3/7 healed"
stop_daemon

# The heal policy's corners (each was a bug once): the daemon's
# --unheal-after is a default, an unhealed site heals again, a threshold
# lowered below a site's count heals it at its next failure.
{
	echo "-- the policy's corners"
	start_daemon --unheal-after 1
	start kh env FAULTLINE_HEAL_AFTER=3 FAULTLINE_UNHEAL_AFTER=600 ./heal-prog
	KH=$PID
	run kh-ping 0 "$FL" request "$KH" ping 1
	say kh "null 1 10"
	sleep 4
	expect_counts "the process's own FAULTLINE_UNHEAL_AFTER=600 wins over faultlined --unheal-after 1" \
		"$KH" h_load_i32 "3/3/7 healed"
	start ki env FAULTLINE_HEAL_AFTER=3 ./heal-prog
	KI=$PID
	say ki "null 1 10"
	run ki-unheal 0 "$FL" unheal "$KI" "$(field "$KI" h_load_i32 faulting_pc)"
	say ki "null 1 10"
	expect_counts "unhealed, the policy heals the site again after 3 more failures" \
		"$KI" h_load_i32 "6/6/14 healed"
	start kj ./heal-prog
	KJ=$PID
	run kj-10 0 "$FL" request "$KJ" heal-threshold 10
	say kj "null 2 5"
	run kj-3 0 "$FL" request "$KJ" heal-threshold 3
	say kj "null 2 10"
	expect_counts "a threshold lowered below a site's failures heals it at the next" \
		"$KJ" h_load_i8 "6/6/9 healed"
	stop_daemon
}

# What a site's healing was is kept like its count: frozen when its process
# exits, in the process's record; while it lives, in its counts file
# (written when only the healing changed: failures through a stub, a heal
# that no failure came with; its record is not), and read back by a daemon
# started on the same state directory after a kill -9.
echo "-- healing kept: after the process exits, and across a kill -9 of the daemon"
# heal_of PID FUNCTION: "FAULTS/HEALED STATE TACTIC HEALED_AT" of FUNCTION's
# site in faultline stats (PID's entries, live or exited)
heal_of() {
	"$FL" stats --all --json >stats.json 2>stats.err || { echo "?"; return; }
	python3 - "$1" "$2" <<'PY'
import json, sys
for p in json.load(open("stats.json"))["processes"]:
    for s in p["sites"] if p["pid"] == int(sys.argv[1]) else []:
        if s["function"] == sys.argv[2]:
            print("%d/%d %s %s %s" % (s["faults"], s["healed"], s["state"], s["tactic"],
                                      s["healed_at"]))
PY
}
# expect_heal NAME PID FUNCTION "FAULTS/HEALED STATE TACTIC HEALED_AT"
expect_heal() {
	local got
	got=$(heal_of "$2" "$3")
	if [ "$got" = "$4" ]; then
		ok "$1 ($3: $got)"
	else
		bad "$1: $3 is '$got', expected '$4'"
	fi
}
# on_disk PID PC: "EXITED HEALED STATE TACTIC WHY HEALED_AT" of the site at
# PC in PID's record in $W/state (docs/state.md: a site line of 12 values
# has its healing, one of 7 none), or in its counts file when the record
# has one (of its stamp, the site's module not removed)
on_disk() {
	python3 - "$W/state" "$1" "$2" <<'PY'
import glob, json, struct, sys
for name in glob.glob(sys.argv[1] + "/proc.*.json"):
    try:
        lines = open(name).read().splitlines()
        head = json.loads(lines[0])
    except (OSError, IndexError, ValueError):
        continue
    if head.get("pid") != int(sys.argv[2]):
        continue
    try:
        counts = open(name[:-len(".json")] + ".counts", "rb").read()
        magic, version, serial, stamp, slots, size = struct.unpack_from("<IIQQII", counts)
        if (magic, version, serial, stamp, size) != (0x434c4c46, 1, head["serial"],
                                                     head.get("stamp"), 32):
            counts = None
    except (OSError, struct.error):
        counts = None
    removed = True
    for line in lines[1:]:
        v = json.loads(line)
        if isinstance(v, dict):
            removed = v.get("removed", True)
        elif v[0] == int(sys.argv[3], 0):
            # The function's offset after its name, when known (docs/state.md).
            if isinstance(v[-1], int) and isinstance(v[-2], str):
                v = v[:-1]
            heal = v[6:11] if len(v) == 12 else None
            if counts is not None and not removed and v[4] < slots:
                # faults, populations, healed u64; healed_at u32; state, tactic, why u8
                _, _, healed, at, state, tactic, why = struct.unpack_from(
                    "<QQQIBBB", counts, 64 + 32 * v[4])
                heal = [healed, state, tactic, why, at] if healed or state or tactic \
                    or why or at else None
            print(str(head["exited"]).lower(), *(heal if heal else ["none"]))
PY
}
# on_disk_is PID PC WANT: on_disk says WANT
on_disk_is() {
	[ "$(on_disk "$1" "$2")" = "$3" ]
}
# tactic_code NAME: the tactic's code in a record (docs/protocol.md, heal slots)
tactic_code() {
	case $1 in B1) echo 1 ;; B2) echo 2 ;; T1) echo 3 ;; T3) echo 4 ;; T2) echo 5 ;; REL) echo 6 ;;
	*) echo "?" ;; esac
}
start_daemon
start x ./heal-prog
X=$PID
XPC1=$(field "$X" h_load_i32 faulting_pc)
XPC2=$(field "$X" h_load_i8 faulting_pc)
XPC3=$(field "$X" h_load_i64_off faulting_pc)
say x "null 1 3"
run x-heal-1 0 "$FL" heal "$X" "$XPC1"
XT1=$(field "$X" h_load_i32 tactic)
XAT1=$(field "$X" h_load_i32 healed_at)
say x "null 1 40"
say x "null 2 2"
run x-heal-2 0 "$FL" heal "$X" "$XPC2"
say x "null 2 30"
run x-unheal-2 0 "$FL" unheal "$X" "$XPC2"
say x "null 2 1"
XAT2=$(field "$X" h_load_i8 healed_at)
expect_heal "live: healed, failures through its stub" "$X" h_load_i32 "3/40 healed $XT1 $XAT1"
expect_heal "live: unhealed, its stub's failures and healed_at stay" "$X" h_load_i8 \
	"3/30 implicit None $XAT2"
# A live process's counts file is brought up to date every 5 s (state.c, SAVE_PERIOD_MS).
check "live: its counts file holds the healed site's healing" \
	eventually on_disk_is "$X" "$XPC1" "false 40 1 $(tactic_code "$XT1") 0 $XAT1"
say x "null 1 25"
check "live: failures through the stub alone (no fault, nothing marked) reach the counts file" \
	eventually on_disk_is "$X" "$XPC1" "false 65 1 $(tactic_code "$XT1") 0 $XAT1"
run x-heal-3 0 "$FL" heal "$X" "$XPC3"
XT3=$(field "$X" h_load_i64_off tactic)
XAT3=$(field "$X" h_load_i64_off healed_at)
check "live: a heal that no failure came with reaches the counts file" \
	eventually on_disk_is "$X" "$XPC3" "false 0 1 $(tactic_code "$XT3") 0 $XAT3"
# EOF: the program and its twin exit.
eval "exec ${IN[x]}>&- ${IN[x-ref]}>&-"
wait "$X"
check "exited: its final record is written" \
	eventually on_disk_is "$X" "$XPC1" "true 65 1 $(tactic_code "$XT1") 0 $XAT1"
for when in "exited" "after a kill -9 and a restart on the same state directory"; do
	expect_heal "$when: the healed site's failures, state, tactic and healed_at" \
		"$X" h_load_i32 "3/65 healed $XT1 $XAT1"
	expect_heal "$when: the unhealed site's failures and healed_at" \
		"$X" h_load_i8 "3/30 implicit None $XAT2"
	expect_heal "$when: the site healed without failing" \
		"$X" h_load_i64_off "0/0 healed $XT3 $XAT3"
	expect_heal "$when: a site never healed" "$X" h_store_i32 "0/0 implicit None None"
	[ "$when" = exited ] || break
	kill -KILL "$DPID"
	wait "$DPID" 2>/dev/null
	run_daemon
done
stop_daemon

# The site lines a daemon reads back (docs/state.md): with the healing
# (12 values), without it (7 values, and 5: records older than slots), and
# lines with healing no daemon writes, which keep their record aside
# (proc.N.json.corrupt-TIME) as any line that does not parse.
echo "-- healing in records read back"
R=$W/records
mkdir -m 700 "$R"
# record SERIAL SITE_LINE: proc.SERIAL.json, pid 4300 + SERIAL, one site (function "f")
record() {
	printf '%s\n' "{\"version\":2,\"serial\":$1,\"pid\":$((4300 + $1)),\"uid\":0,\"comm\":\"r$1\",\"exited\":true}" \
		'{"module":"m","id":1,"removed":true,"sites":1}' "$2" >"$R/proc.$1.json"
}
record 1 '[4096,4100,1,5,0,0,"f"]'
record 2 '[4096,4100,1,5,"f"]'
record 3 '[4096,4100,1,5,0,0,9,1,2,0,1700000000,"f"]'
# An escape: json-c reads it (parse_site), not the plain reader.
record 4 '[4096,4100,1,5,0,0,4,2,0,5,0,"\u0066"]'
record 5 '[4096,4100,1,5,0,0,9,3,0,0,0,"f"]'
record 6 '[4096,4100,1,5,0,0,9,1,7,0,1700000000,"f"]'
record 7 '[4096,4100,1,5,0,0,0,2,0,16,0,"f"]'
record 8 '[4096,4100,1,5,0,0,9,1,2,0,4294967296,"f"]'
record 9 '[4096,4100,1,5,0,0,-1,1,2,0,1700000000,"f"]'
record 10 '[4096,4100,1,5,0,0,9,1,2,0,"f"]'
record 11 '[4096,4100,1,5,0,0,9,"1",2,0,1700000000,"f"]'
record 12 '[4096,4100,1,5,0,0,9,1,2,0,1700000000,"\u0066"]'
# A function's offset after its name, and the module's base (module offsets).
record_at() { # SERIAL SITE_LINE: as record, the module at base 4000
	printf '%s\n' "{\"version\":2,\"serial\":$1,\"pid\":$((4300 + $1)),\"uid\":0,\"comm\":\"r$1\",\"exited\":true}" \
		'{"module":"m","id":1,"removed":true,"sites":1,"base":4000}' "$2" >"$R/proc.$1.json"
}
record_at 13 '[4096,4100,1,5,0,0,"f",7]'
record_at 14 '[4096,4100,1,5,0,0,"\u0066",7]'
record_at 15 '[4096,4100,1,5,0,0,9,1,2,0,1700000000,"f",3]'
record_at 16 '[4096,4100,1,5,0,0,"f",4294967295]'
record_at 17 '[4096,4100,1,5,0,0,null,7]'
record_at 18 '[4096,4100,1,5,0,0,"f",-1]'
"$FLD" --no-bpf --socket "$R/s" --state-dir "$R" --log-level info 2>"$OUT/records.log" &
DPID=$!
eventually test -S "$R/s" || bad "records: faultlined did not listen"
export FAULTLINE_SOCKET=$R/s
expect_heal "a site line without healing (7 values): implicit, nothing healed" 4301 f \
	"5/0 implicit None None"
expect_heal "a site line of 5 values: implicit, nothing healed" 4302 f "5/0 implicit None None"
expect_heal "a site line with healing: its failures, state, tactic, healed_at" 4303 f \
	"5/9 healed B2 1700000000"
expect_heal "the same, read by json-c (an escaped name)" 4312 f "5/9 healed B2 1700000000"
expect_heal "an unhealable site, read by json-c" 4304 f "5/4 unhealable None None"
check "the unhealable site's reason" python3 -c '
import json, sys
p = [p for p in json.load(open("stats.json"))["processes"] if p["pid"] == 4304]
sys.exit(not p or p[0]["sites"][0]["why"] !=
         "no free place for a stub in reach, and no neighbour to evict")'
# where_of PID: "MODULE_OFFSET FUNCTION_OFFSET" of PID's site (stats.json)
where_of() {
	python3 - "$1" <<'PY'
import json, sys
for p in json.load(open("stats.json"))["processes"]:
    for s in p["sites"] if p["pid"] == int(sys.argv[1]) else []:
        print(s["module_offset"], s["function_offset"])
PY
}
expect_heal "a name and its offset" 4313 f "5/0 implicit None None"
check "its offset and its module's base read back" [ "$(where_of 4313)" = "96 7" ]
expect_heal "a name and its offset, read by json-c (an escaped name)" 4314 f "5/0 implicit None None"
check "its offset, by json-c" [ "$(where_of 4314)" = "96 7" ]
expect_heal "healing, a name and its offset" 4315 f "5/9 healed B2 1700000000"
check "its offset after the healing" [ "$(where_of 4315)" = "96 3" ]
check "a record without base or offsets: null" [ "$(where_of 4301)" = "None None" ]
export FAULTLINE_SOCKET=$SOCK
stop_daemon
for n in 5:"heal state 3" 16:"an offset of 32 bits" 17:"an offset without a name" \
	 18:"a negative offset" 6:"tactic 7" 7:"why 16" 8:"healed_at past 32 bits" \
	 9:"negative failures" 10:"11 values" 11:"a state that is a string"; do
	check "a site line with ${n#*:}: its record is kept aside" \
		test -e "$(ls "$R/proc.${n%%:*}.json".corrupt-* 2>/dev/null | head -1)"
done
check "the daemon says why" grep -q "proc.5.json is not a faultlined record of version 2: kept as" \
	"$OUT/records.log"

grep -q ' ERROR \| error ' "$OUT/daemon.log" && echo "# (daemon log: $OUT/daemon.log)"
echo "daemon heal: $pass passed, $fail failed"
[ "$fail" = 0 ]
