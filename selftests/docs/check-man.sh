#!/bin/bash
# Every function libfaultline exports (lib/libfaultline.map) has a man page
# in docs/man/, and every page's .so link points at a page that exists.
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
for f in docs/man/*.[0-9]; do
	target=$(sed -n 's/^\.so man[0-9]\///p' "$f")
	if [ -n "$target" ] && [ ! -f "docs/man/$target" ]; then
		echo "$f: .so to missing page $target"
		status=1
	fi
done
echo "docs: $n exported functions checked"
exit $status
