# Sourced by the daemon's end-to-end scripts (bash), after wait.sh: their
# results and the checks they share.  The script prints "NAME: $pass
# passed, $fail failed" at the end.

pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok - $1"; }
bad() { fail=$((fail + 1)); echo "FAIL - $*"; }
# check NAME CMD...: ok when CMD succeeds
check() {
	local name=$1
	shift
	if "$@"; then ok "$name"; else bad "$name"; fi
}

# run NAME STATUS CMD...: CMD (at most WAIT_S), its output in NAME.out/.err
run() {
	local name=$1 want=$2 got
	shift 2
	timeout "$WAIT_S" "$@" >"$name.out" 2>"$name.err"
	got=$?
	if [ "$got" = "$want" ]; then
		ok "$name: exit $want"
	else
		bad "$name: exit $got, expected $want"
		sed 's/^/  | /' "$name.err" "$name.out" | head -8
	fi
}
# has NAME FILE TEXT: TEXT is in FILE; hasnt: it is not
has() {
	if grep -qF -- "$3" "$2"; then ok "$1"; else bad "$1: '$3' not in $2"; sed 's/^/  | /' "$2" | head -8; fi
}
hasnt() {
	if ! grep -qF -- "$3" "$2"; then ok "$1"; else bad "$1: '$3' in $2"; sed 's/^/  | /' "$2" | head -8; fi
}

# stop_daemon: the faultlined the script started (its pid in DPID)
stop_daemon() {
	kill "$DPID" 2>/dev/null
	wait "$DPID" 2>/dev/null
}
