#!/bin/bash
# SPDX-License-Identifier: MIT
#
# faultline healable's cost and how it grows: shared libraries of about
# 10^4, 10^5 and 10^6 implicit-check sites, each run BENCH_RUNS times (text
# to /dev/null, then --json to /dev/null); the median wall time, the time
# per site and the peak resident memory of one run are printed.
#
#   healable.sh DATADIR CLI
#
# The libraries (built once into DATADIR, about 20 s): one object of
# selftests/progs/gen-many.sh's functions (5,941 functions, about 10,000
# sites: llc-14 -O2, pic), copied 1, 10 and 100 times with every symbol
# renamed (llvm-objcopy --prefix-symbols, cheaper than 100 llc-14 runs),
# linked with gcc -shared -z notext as the corpus's so-gnu mode.
# Environment: BENCH_RUNS (default 7), LLC (llc-14), LLVM_OBJCOPY
# (llvm-objcopy-14), CC (gcc).
set -euo pipefail

if [ $# -ne 2 ]; then
	echo "usage: $0 DATADIR CLI" >&2
	exit 2
fi
dir=$1
cli=$(realpath "$2")
runs=${BENCH_RUNS:-7}
llc=${LLC:-llc-14}
objcopy=${LLVM_OBJCOPY:-llvm-objcopy-14}
cc=${CC:-gcc}
here=$(cd "$(dirname "$0")" && pwd)
functions=5941

mkdir -p "$dir"
if [ ! -e "$dir/base.o" ]; then
	sh "$here/../progs/gen-many.sh" "$functions" >"$dir/base.ll"
	"$llc" -O2 -relocation-model=pic -mtriple=x86_64-unknown-linux-gnu \
		-enable-implicit-null-checks -filetype=obj "$dir/base.ll" -o "$dir/base.o.tmp"
	mv "$dir/base.o.tmp" "$dir/base.o"
fi
for copies in 1 10 100; do
	lib=$dir/healable-$copies.so
	[ -e "$lib" ] && continue
	objs=()
	for i in $(seq 1 "$copies"); do
		"$objcopy" --prefix-symbols="c${i}_" "$dir/base.o" "$dir/copy-$i.o"
		objs+=("$dir/copy-$i.o")
	done
	"$cc" -shared -Wl,-z,notext -o "$lib.tmp" "${objs[@]}"
	mv "$lib.tmp" "$lib"
done
rm -f "$dir"/copy-*.o

# median of the wall times (s) of runs of "$@", output to /dev/null
median_s() {
	local t=()
	for _ in $(seq 1 "$runs"); do
		local a b
		a=$(date +%s%N)
		"$@" >/dev/null
		b=$(date +%s%N)
		t+=($(( (b - a) / 1000 )))
	done
	printf '%s\n' "${t[@]}" | sort -n | awk '{ v[NR] = $1 } END { printf "%.3f", v[int((NR + 1) / 2)] / 1e6 }'
}

printf '%-22s %9s %9s %10s %9s %10s %9s\n' file sites "text s" "us/site" "json s" "us/site" "max RSS"
for copies in 1 10 100; do
	lib=$dir/healable-$copies.so
	summary=$("$cli" healable "$lib" | tail -1)
	sites=$(sed -E 's/^total: [0-9]+ of ([0-9]+) sites.*/\1/' <<<"$summary")
	text=$(median_s "$cli" healable "$lib")
	json=$(median_s "$cli" healable --json "$lib")
	rss=$( { /usr/bin/time -f %M "$cli" healable --json "$lib" >/dev/null; } 2>&1 | tail -1)
	printf '%-22s %9d %9s %10.3f %9s %10.3f %7d MB\n' "$(basename "$lib")" "$sites" "$text" \
		"$(awk -v t="$text" -v n="$sites" 'BEGIN { print t * 1e6 / n }')" "$json" \
		"$(awk -v t="$json" -v n="$sites" 'BEGIN { print t * 1e6 / n }')" $((rss / 1024))
	echo "  ${summary#total: }"
done
