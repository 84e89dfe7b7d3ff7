#!/bin/bash
# Renders man pages as a reader would, and fails on any error or warning.
#   render-man.sh DIR PAGE...
# From DIR (man-db resolves a .so link from the current directory, as man
# does from the top of its manpath), each PAGE must render with
# `man --warnings -l PAGE` and with `groff -ww -z` to a non-empty page with
# nothing on stderr.  Prints one line per page that does not, and exits 1.
set -u
cd "$1" || exit 1
shift
status=0
for p in "$@"; do
	err=$(MANWIDTH=80 man --warnings -l "$p" 2>&1 >/dev/null)
	lines=$(MANWIDTH=80 man -l "$p" 2>/dev/null | wc -l)
	if [ -n "$err" ] || [ "$lines" -lt 5 ]; then
		echo "$p: man -l: $lines lines; ${err:-no message}" | head -3
		status=1
	fi
	# groff reads a .so link itself, relative to the current directory too.
	err=$(groff -man -ww -z "$p" 2>&1)
	if [ -n "$err" ]; then
		echo "$p: groff -ww: $err" | head -3
		status=1
	fi
done
exit $status
