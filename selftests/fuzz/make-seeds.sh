#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Regenerates the fuzzers' seed corpora in selftests/fuzz/corpus/:
#
#   selftests/fuzz/make-seeds.sh      (from the top of the tree)
#
#   faultmap/  .llvm_faultmaps sections: extracted from objects llc-14 makes
#              of seed.ll (x86-64, AArch64 big-endian, a linked file with
#              two tables) and hand-made ones (empty tables, several tables,
#              a function without faults, two malformed ones)
#   stackmap/  .llvm_stackmaps sections: extracted as above, and hand-made
#              v1 and v2 tables in both byte orders, an empty v3 table, a
#              section holding a v3, a v2 and a v1 table back to back
#   ehframe/   .eh_frame sections: extracted from objects llc-14 makes of
#              seed.ll for x86-64 (small code model: PC-relative 4-byte
#              pointers; large: 8-byte ones), not relocated
#   elf/       small ELF files: the ET_REL objects, an lld -shared -z notext
#              library (two tables, R_X86_64_64 dynamic relocations), a GNU ld
#              -pie executable (DT_TEXTREL, R_X86_64_RELATIVE), an lld static
#              ET_EXEC
#
# The seeds are committed; this script only has to be rerun when seed.ll or
# the hand-made tables below change.  Intermediate files go to
# build/fuzz/seedwork/.  Needs llc-14, llvm-objcopy-14, ld.lld-14 and GNU ld.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
work=build/fuzz/seedwork
out=selftests/fuzz/corpus
rm -rf "$work"
mkdir -p "$work" "$out/faultmap" "$out/stackmap" "$out/elf" "$out/ehframe"
rm -f "$out"/faultmap/* "$out"/stackmap/* "$out"/elf/* "$out"/ehframe/*

LLC="llc-14 -O2 -enable-implicit-null-checks -filetype=obj"

# ---------------------------------------------------------------------------
# Objects from seed.ll

$LLC selftests/fuzz/seed.ll -o "$work/seed.o"
sed -e '/^target datalayout/d' \
    -e 's/^target triple.*/target triple = "aarch64_be-unknown-linux-gnu"/' \
    selftests/fuzz/seed.ll > "$work/be.ll"
$LLC "$work/be.ll" -o "$work/be.o"
# A second object with other symbol names, so both link into one file.
llvm-objcopy-14 --prefix-symbols=b_ "$work/seed.o" "$work/seed_b.o"
ld.lld-14 -shared -z notext "$work/seed.o" "$work/seed_b.o" -o "$work/two.so"
ld.lld-14 -z notext --unresolved-symbols=ignore-all -e fm_load \
	"$work/seed.o" -o "$work/seed.exe"
ld -pie -z noseparate-code -z max-page-size=0x1000 -z norelro \
	--unresolved-symbols=ignore-all -e fm_load --no-warn-rwx-segments \
	"$work/seed.o" -o "$work/gnu.pie" 2>/dev/null ||
ld -pie -z noseparate-code -z max-page-size=0x1000 -z norelro \
	--unresolved-symbols=ignore-all -e fm_load \
	"$work/seed.o" -o "$work/gnu.pie" 2>/dev/null

cp "$work/seed.o" "$out/elf/x86_64-rel"
cp "$work/be.o" "$out/elf/aarch64_be-rel"
cp "$work/two.so" "$out/elf/lld-shared-two-tables"
cp "$work/seed.exe" "$out/elf/lld-static-exec"
cp "$work/gnu.pie" "$out/elf/gnu-ld-pie-textrel"

dump() { # object section output
	llvm-objcopy-14 --dump-section "$2=$3" "$1" "$work/dump.tmp"
}
dump "$work/seed.o" .llvm_faultmaps "$out/faultmap/llc-x86_64"
dump "$work/be.o" .llvm_faultmaps "$out/faultmap/llc-aarch64_be"
dump "$work/two.so" .llvm_faultmaps "$out/faultmap/lld-two-tables"
dump "$work/seed.o" .llvm_stackmaps "$out/stackmap/llc-x86_64-v3"
dump "$work/be.o" .llvm_stackmaps "$out/stackmap/llc-aarch64_be-v3"
dump "$work/two.so" .llvm_stackmaps "$out/stackmap/lld-two-tables-v3"
dump "$work/seed.o" .eh_frame "$out/ehframe/llc-x86_64"
$LLC -code-model=large selftests/fuzz/seed.ll -o "$work/large.o"
dump "$work/large.o" .eh_frame "$out/ehframe/llc-x86_64-large"

# ---------------------------------------------------------------------------
# Hand-made tables.  The emitters append hex digits to $hex in the byte
# order $be (0 little, 1 big); put writes $hex to a file.

hex=
be=0
int() { # value nbytes
	local v=$1 n=$2 i b s=
	for ((i = 0; i < n; i++)); do
		b=$(printf '%02x' $(((v >> (8 * i)) & 255)))
		if ((be)); then s=$b$s; else s=$s$b; fi
	done
	hex+=$s
}
u8() { int "$1" 1; }
u16() { int "$1" 2; }
u32() { int "$1" 4; }
u64() { int "$1" 8; }
pad8() { # zero bytes up to 8-byte alignment of the current table
	while ((((${#hex} / 2 - table_start) % 8) != 0)); do hex+=00; done
}
put() { # file
	printf "$(sed 's/../\\x&/g' <<<"$hex")" > "$1"
	hex=
}

# Fault map: header, then functions of (address, kind:off:handler ...).
fm_table() { # function specs: "address kind,off,handler kind,off,handler ..."
	local f
	u8 1; u8 0; u16 0; u32 $#
	for f in "$@"; do
		set -- $f
		u64 "$1"; shift
		u32 $#; u32 0
		local e
		for e in "$@"; do
			IFS=, read -r k o h <<<"$e"
			u32 "$k"; u32 "$o"; u32 "$h"
		done
	done
}

fm_table
put "$out/faultmap/empty-table"
fm_table "0x1000 1,3,20 3,9,20" "0x2000" "0xffffffffffffff00 2,4294967295,0"
fm_table
fm_table "0x3000 1,0,1"
put "$out/faultmap/three-tables"
fm_table "0x1000 1,3,20 4,9,20"
put "$out/faultmap/bad-kind"
fm_table "0x1000 1,3,20 3,9,20"
hex=${hex:0:$((${#hex} - 8))}
put "$out/faultmap/truncated"

# Stack map records: "id offset locs liveouts", where locs is
# kind:size:reg:offset,... and liveouts reg:size,... ("-" for none).
table_start=0
sm_table() { # version nconst "functions" "constants" records...
	local ver=$1 funcs=$2 consts=$3 f c r l
	shift 3
	table_start=$((${#hex} / 2))
	u8 "$ver"; u8 0; u16 0
	local fa=($funcs) ca=($consts)
	u32 $((${#fa[@]} / 3)); u32 ${#ca[@]}; u32 $#
	for ((f = 0; f < ${#fa[@]}; f += 3)); do
		u64 "${fa[f]}"; u64 "${fa[f + 1]}"
		((ver >= 2)) && u64 "${fa[f + 2]}"
	done
	for c in $consts; do u64 "$c"; done
	for r in "$@"; do
		set -- $r
		local locs=() los=()
		[ "$3" != - ] && IFS=, read -ra locs <<<"$3"
		[ "$4" != - ] && IFS=, read -ra los <<<"$4"
		u64 "$1"; u32 "$2"; u16 0; u16 ${#locs[@]}
		for l in "${locs[@]}"; do
			IFS=: read -r k s g o <<<"$l"
			u8 "$k"
			if ((ver == 3)); then u8 0; u16 "$s"; u16 "$g"; u16 0;
			else u8 "$s"; u16 "$g"; fi
			u32 "$o"
		done
		((ver == 3)) && pad8
		u16 0; u16 ${#los[@]}
		for l in "${los[@]}"; do
			IFS=: read -r g s <<<"$l"
			u16 "$g"; u8 0; u8 "$s"
		done
		pad8
	done
}

# Two functions (one with a dynamic frame), two large constants, records
# with every location kind, live-outs, a deopt-like record.
sm_seed() { # version
	sm_table "$1" "0x401000 16 2 0x402000 -1 1" "4294967296 -9223372036854775808" \
		"1 10 4:8:0:-1,5:8:0:1,1:8:3:0,2:8:6:-16,3:8:7:8 -" \
		"2 24 1:16:17:0 3:8,6:8,12:8" \
		"2882400015 40 4:8:0:0,4:8:0:1,4:8:0:1,5:8:0:0 -"
}
for v in 1 2 3; do
	for be in 0 1; do
		sm_seed $v
		put "$out/stackmap/hand-v$v-$( ((be)) && echo be || echo le)"
	done
done
be=0
sm_table 3 "" ""
put "$out/stackmap/empty-v3"
sm_seed 3
sm_seed 2
sm_seed 1
put "$out/stackmap/three-versions"
sm_table 3 "0x1000 8 1" "" "5 0 - 0:8"
put "$out/stackmap/live-outs-only"
sm_table 3 "0x1000 8 1" "7" "5 0 5:8:0:1 -"
put "$out/stackmap/bad-constant-index"

ls -l "$out"/*
