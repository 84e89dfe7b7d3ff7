#!/bin/bash
# Every function libfaultline exports (lib/libfaultline.map) has a man page
# in docs/man/, every alias page is a symlink to a page there, and every
# page renders without an error or warning.
set -u
cd "$(dirname "$0")/../.."
status=0
symbols=$(sed -n '/global:/,/local:/p' lib/libfaultline.map |
	grep -oE '^[[:space:]]*[a-z_][a-z0-9_]*;' | tr -d ' \t;')
n=0
for s in $symbols; do
	n=$((n + 1))
	if [ ! -f "docs/man/$s.3" ]; then
		echo "missing man page: docs/man/$s.3"
		status=1
	fi
done
# An alias page is a symlink to the page that documents it: a .so link
# renders only from the top of a manpath (man-db resolves it from the
# current directory), and docs/man is read with man -l from anywhere.
# make install writes the .so links.
aliases=0
for f in docs/man/*.[0-9]; do
	if [ -L "$f" ]; then
		aliases=$((aliases + 1))
		target=$(readlink "$f")
		if [ "$target" != "${target##*/}" ] || [ ! -f "docs/man/$target" ] || [ -L "docs/man/$target" ]; then
			echo "$f: an alias of '$target', which is no page of docs/man"
			status=1
		fi
	elif grep -q '^\.so' "$f"; then
		echo "$f: a .so link (make it a symlink: ln -sf PAGE $f)"
		status=1
	fi
done
pages=(docs/man/*.[0-9])
selftests/docs/render-man.sh / "${pages[@]/#/$PWD/}" || status=1
echo "docs: $n exported functions checked; ${#pages[@]} pages ($aliases aliases) render with man -l and groff -ww"
exit $status
