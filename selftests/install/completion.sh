#!/bin/bash
# The installed bash completion of faultline, driven as bash drives it
# (COMP_WORDS, COMP_CWORD, then COMPREPLY): commands, each command's
# options from its --help, option arguments, files, and the PIDs of the
# processes registered with a faultlined of this test's own.
#   completion.sh ROOT WORKDIR    (ROOT: the installed prefix)
set -u
R=$1
W=$2
mkdir -p "$W" && cd "$W" || exit 1
pass=0
fail=0
DPID= SPID=
cleanup() {
	[ -n "$SPID" ] && kill "$SPID" 2>/dev/null
	[ -n "$DPID" ] && kill "$DPID" 2>/dev/null
	wait 2>/dev/null
}
trap cleanup EXIT

export PATH=$R/bin:$PATH
# shellcheck source=/dev/null
source "$R/share/bash-completion/completions/faultline" ||
	{ echo "completion: cannot source it"; exit 1; }
[ "$(complete -p faultline)" = "complete -F _faultline faultline" ] ||
	{ echo "completion: 'complete -p faultline' says '$(complete -p faultline)'"; exit 1; }

# expect "WORDS..." "COMPLETIONS": completing the last word of WORDS
# (may be empty) offers exactly COMPLETIONS, sorted.
expect() {
	local got
	read -ra COMP_WORDS <<<"$1"
	[[ $1 == *" " ]] && COMP_WORDS+=("")
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMPREPLY=()
	_faultline
	got=$(printf '%s\n' "${COMPREPLY[@]}" | sort -u | tr '\n' ' ')
	if [ "${got% }" = "$2" ]; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		echo "FAIL: completing '$1': '${got% }', expected '$2'"
	fi
}

expect "faultline st" "stackmap stackmaps stats"
expect "faultline he" "heal healable"
expect "faultline --v" "--version"
expect "faultline profile --" "--all --help --json --seconds --top"
expect "faultline stats --s" "--socket --sort"
expect "faultline stats --sort " "faults recent"
expect "faultline run --log d" "debug"
expect "faultline run --n" "--null-bound"
expect "faultline request 1 " "heal-threshold ping unheal-after"
touch prog.o prog.so
expect "faultline faultmap prog" "prog.o prog.so"
expect "faultline stackmap --json prog.s" "prog.so"
expect "faultline run --preload prog.s" "prog.so"
# run's PROGRAM is a command or a file; what follows is its own.
expect "faultline run -- faultli" "faultline faultlined"
expect "faultline run ./prog.o --j" ""

# The PIDs: only the live processes registered with the daemon at the
# socket named on the line.
expect "faultline sites --socket $W/fld.sock " ""
"$R/bin/faultlined" --no-bpf --socket "$W/fld.sock" --state-dir "$W/state" 2>fld.log &
DPID=$!
FAULTLINE_SOCKET=$W/fld.sock "$R/bin/faultline" run sleep 300 &
SPID=$!
for _ in $(seq 100); do
	"$R/bin/faultline" ps --socket "$W/fld.sock" 2>/dev/null | grep -q "^$SPID " && break
	sleep 0.1
done
expect "faultline sites --socket $W/fld.sock " "$SPID"
expect "faultline heal --socket=$W/fld.sock ${SPID:0:1}" "$SPID"
expect "faultline request --socket $W/fld.sock $SPID p" "ping"
FAULTLINE_SOCKET=$W/fld.sock expect "faultline stats --pid " "$SPID"
expect "faultline sites --socket $W/other.sock " ""
echo "completion: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
