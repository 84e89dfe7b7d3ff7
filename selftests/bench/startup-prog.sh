#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Builds the program of the startup benchmark: a non-PIE executable with
# about 100,000 .llvm_faultmaps entries that does nothing and exits 0.
#
#   startup-prog.sh OUT FUNCTIONS [K]
#
# The functions come from selftests/progs/gen-many.sh, in two modules of
# FUNCTIONS/2 each (the second renamed many_* -> manyb_*) so that the two
# llc-14 runs, about 30 s each, use both cores.  llc-14 leaves a few of the
# checks explicit: 59,410 functions give about 100,000 entries (run.sh
# prints the count).  Environment: LLC (default llc-14), CC (default gcc).
set -euo pipefail

if [ $# -ne 2 ] && [ $# -ne 3 ]; then
	echo "usage: $0 OUT FUNCTIONS [K]" >&2
	exit 2
fi
out=$1
half=$(($2 / 2))
# K checks in every function (gen-many.sh's second argument), or its mix.
k=${3:-}
llc=${LLC:-llc-14}
cc=${CC:-gcc}
here=$(dirname "$0")
dir=$(dirname "$out")
tmp=$out.tmp

mkdir -p "$tmp"
sh "$here/../progs/gen-many.sh" "$half" $k > "$tmp/a.ll"
sh "$here/../progs/gen-many.sh" "$half" $k | sed 's/@many_/@manyb_/g' > "$tmp/b.ll"
flags=(-O2 -relocation-model=static -mtriple=x86_64-unknown-linux-gnu
	-enable-implicit-null-checks -filetype=obj)
"$llc" "${flags[@]}" "$tmp/a.ll" -o "$tmp/a.o" &
pa=$!
"$llc" "${flags[@]}" "$tmp/b.ll" -o "$tmp/b.o" &
pb=$!
st=0
wait "$pa" || st=$?
wait "$pb" || st=$?
[ "$st" -eq 0 ] || exit "$st"
mkdir -p "$dir"
"$cc" -O2 -no-pie -fno-pie -o "$out" "$here/startup_main.c" "$tmp/a.o" "$tmp/b.o"
rm -rf "$tmp"
