#!/bin/sh
# Lists, then kills, the processes a test run in the tree ROOT left behind:
# those running a program under ROOT (faultlined, a test program, a tool),
# those whose command line names ROOT/build (QEMU booting the test kernel,
# a shell running a test script), and those with a library of ROOT
# preloaded (a program under faultline run); and, when FL_CHECK_RUN is set
# (make check sets it to a token of its own), every process whose
# environment has the same FL_CHECK_RUN: whatever the run started, a
# python3 or a sleep too, inherits it.  The caller's own ancestors (make,
# the shell running make check) are never counted.
#
#   scripts/leftovers.sh --list ROOT
#	prints such processes as "PID ARGS" lines, and nothing else
#   scripts/leftovers.sh ROOT WHAT [BEFORE]
#	A process may take a moment to go after the kill that stopped it, so
#	this waits for them to go, up to 60 s, before it counts one.  Exits 0
#	when none is left, 1 after listing and killing (SIGKILL) those that
#	were.  BEFORE is a file of what --list printed before WHAT ran: those
#	processes were not started by WHAT (a developer's own faultlined)
#	and are left alone.
set -u
self=$$
list_only=0
if [ "${1:-}" = --list ]; then
	list_only=1
	shift
fi
root=$(realpath "$1")
what=${2:-the tests}
before=${3:-/dev/null}

ancestors() {
	p=$$
	while [ "$p" -gt 1 ] 2>/dev/null; do
		echo "$p"
		p=$(awk '{ print $4 }' "/proc/$p/stat" 2>/dev/null) || break
	done
}

# True when pid is this script or runs under it (the subshells of $(...)
# and their commands inherit FL_CHECK_RUN too).
mine_below() {
	q=$1
	while [ "$q" -gt 1 ] 2>/dev/null; do
		[ "$q" = "$self" ] && return 0
		q=$(awk '{ print $4 }' "/proc/$q/stat" 2>/dev/null) || return 1
	done
	return 1
}

find_left() {
	mine=" $(ancestors | tr '\n' ' ') "
	for d in /proc/[0-9]*; do
		pid=${d#/proc/}
		case "$mine" in *" $pid "*) continue ;; esac
		grep -q "^$pid " "$before" 2>/dev/null && continue
		# Zombies have no exe and are their parent's to reap.
		[ "$(awk '{ print $3 }' "$d/stat" 2>/dev/null)" = Z ] && continue
		exe=$(readlink "$d/exe" 2>/dev/null) || continue
		args=$(tr '\0' ' ' 2>/dev/null <"$d/cmdline") || continue
		left=0
		case "$exe" in "$root"/*) left=1 ;; esac
		case "$args" in *"$root/build"*) left=1 ;; esac
		if [ $left = 0 ] && tr '\0' '\n' 2>/dev/null <"$d/environ" |
			grep -q -e "^LD_PRELOAD=.*$root/" ${FL_CHECK_RUN:+-e "^FL_CHECK_RUN=$FL_CHECK_RUN\$"}; then
			left=1
		fi
		if [ $left = 1 ] && ! mine_below "$pid"; then
			echo "$pid $args"
		fi
	done
}

if [ $list_only = 1 ]; then
	find_left
	exit 0
fi
left=$(find_left)
tries=0
while [ -n "$left" ] && [ $tries -lt 60 ]; do
	sleep 1
	tries=$((tries + 1))
	left=$(find_left)
done
[ -z "$left" ] && exit 0

echo "leftovers: $what left these processes running:"
echo "$left" | cut -c1-300 | sed 's/^/leftovers:   /'
for pid in $(echo "$left" | awk '{ print $1 }'); do
	kill -KILL "$pid" 2>/dev/null
done
exit 1
