#!/bin/bash
# make demo: what faultline reads from a program compiled by LLVM.
#   demo.sh FAULTLINE WORKDIR
# (The daemon issue turns this into a live run under faultlined.)
set -eu
FL=$(realpath "$1")
W=$2
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$W"

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

say "1. Compile a small managed workload with implicit null checks (llc-14)"
echo "   llc-14 -O2 -enable-implicit-null-checks scripts/demo/workload.ll"
llc-14 -O2 -enable-implicit-null-checks -filetype=obj "$HERE/demo/workload.ll" -o "$W/workload.o"
cat >"$W/main.c" <<'C'
#include <stdio.h>
void throw_npe(void) { puts("NullPointerException"); }
int main(void) { return 0; }
C
gcc -no-pie -o "$W/workload" "$W/workload.o" "$W/main.c"
echo "   linked: $W/workload"

say "2. The fault map: each faulting PC and the handler PC it stands for"
"$FL" faultmap "$W/workload"

say "3. The stack map: live values at the safepoint (record 100)"
"$FL" stackmap "$W/workload"

say "4. The same, as JSON, with function names"
"$FL" faultmap --json "$W/workload.o" | grep -E '"(symbol|kind|faulting_pc_offset|handler_pc_offset)"'

say "Done"
echo "A runtime (or LD_PRELOAD=libfaultline-preload.so, next) sends each fault at"
echo "those PCs to its handler PC; faultlined will count them per site."
