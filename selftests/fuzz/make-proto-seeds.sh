#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Regenerates the seeds of fuzz_proto in selftests/fuzz/corpus/proto/:
#
#   selftests/fuzz/make-proto-seeds.sh      (from anywhere in the tree)
#
# Each seed is fuzz_proto's input: one selector byte (bits 0-3: the number
# of file descriptors modulo 5; bit 4: the region's real size from the
# header's bytes at 48; bit 5: the peer's pid from its bytes at 56),
# then a message (docs/protocol.md).  One well-formed message of every type
# (the number of fds it takes in the selector), and a valid region header
# (capacity 64, rings of 16) as such and with its real size and pid in the
# padding.  Host byte order is little-endian (x86-64).
#
# The seeds are committed; rerun this when the protocol changes.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
out=$top/selftests/fuzz/corpus/proto
mkdir -p "$out"
rm -f "$out"/*

hex=
int() { # value nbytes
	local v=$1 n=$2 i
	for ((i = 0; i < n; i++)); do
		hex+=$(printf '%02x' $(((v >> (8 * i)) & 255)))
	done
}
u8() { int "$1" 1; }
u16() { int "$1" 2; }
u32() { int "$1" 4; }
u64() { int "$1" 8; }
str() { # bytes of a string, no NUL
	hex+=$(printf '%s' "$1" | od -An -tx1 -v | tr -d ' \n')
}
zeros() { # n
	local i
	for ((i = 0; i < $1; i++)); do hex+=00; done
}
put() { # file
	printf "$(sed 's/../\\x&/g' <<<"$hex")" > "$out/$1"
	hex=
}

# msg FILE NFDS TYPE: the body is in $hex; prefixes the selector and header.
msg() {
	local body=$hex
	hex=
	u8 "$2"
	u32 0x504c4c46; u16 1; u16 "$3"; u32 $((16 + ${#body} / 2)); u32 7
	hex+=$body
	put "$1"
}

# HELLO: pid, flags, region_size, comm[16]
u32 1234; u32 0; u64 3840; str seedproc; zeros 8
msg hello 1 1
# with every flag an agent sets (FIRST, SYNC, ALLOW_PATCH, DONE, DUMP, DUMPABLE)
u32 1234; u32 63; u64 3840; str seedproc; zeros 8
msg hello-flags 1 1

# MODULE_ADD: module, flags, code_start, code_size, first_counter,
# num_sites, faultmap_size, stackmap_size, name_len, sm_functions, base; name
u32 1; u32 1; u64 0x400000; u64 0x1000; u32 0; u32 4; u32 92; u32 400; u32 9; u32 2; u64 0
str /bin/seed
msg module-add 1 2
u32 2; u32 1; u64 0x7f0000000000; u64 0x10; u32 4; u32 0; u32 0; u32 0; u32 4; u32 0
u64 0x7f0000000000
str anon
msg module-add-no-sections 0 2

# MODULE_REMOVE: module, reserved
u32 1; u32 0
msg module-remove 0 3

# SYMBOLS: module, count; entries of site u32, offset u32, len u16, name
u32 1; u32 3
u32 0; u32 4; u16 4; str main
u32 3; u32 0xffffffff; u16 11; str parse_input
u32 1; u32 0; u16 1; str f
msg symbols 0 4

# SYNC, COMPLETE and DONE: the header alone
msg sync 0 5
msg complete 0 6
msg done 0 7
# DUMPABLE: dumpable, reserved
u32 0; u32 0
msg dumpable 0 8

# QUERY: what, pid, arg
u32 1; u32 0; u64 0
msg query-stats 0 16
u32 2; u32 0; u64 0
msg query-ps 0 16
u32 3; u32 1234; u64 0
msg query-sites 0 16
u32 4; u32 1234; u64 0xffffffffffffffff
msg query-stackmaps 0 16
u32 5; u32 1234; u64 0x401a2b
msg query-stackmap-pc 0 16

# REQUEST: pid, kind, arg
u32 1234; u32 1; u64 42
msg request-ping 0 17
u32 1234; u32 2; u64 1000
msg request-heal-threshold 0 17
u32 1234; u32 2; u64 $((3 | 60 << 32 | 1 << 63))
msg request-heal-threshold-default 0 17
u32 1234; u32 6; u64 0x401b94
msg request-heal 0 17
u32 1234; u32 7; u64 0x401b94
msg request-unheal 0 17
u32 1234; u32 8; u64 10
msg request-heal-over 0 17
u32 1234; u32 9; u64 30
msg request-unheal-after 0 17

# POINT: pid, kind, id, pc, target, len, expect_len; bytes, expected bytes
u32 1234; u32 3; u64 7; u64 0; u64 0; u32 7; u32 16
hex+=48c7c02a000000; hex+=2e660f1f840000020000660f1f440008
msg point-write 0 18
u32 1234; u32 3; u64 0; u64 0x401b94; u64 0; u32 1; u32 0; hex+=cc
msg point-write-by-pc 0 18
u32 1234; u32 4; u64 7; u64 0; u64 0; u32 0; u32 0
msg point-reset 0 18
u32 1234; u32 5; u64 9; u64 0; u64 0x401136; u32 0; u32 0
msg point-invalidate 0 18

# WELCOME: daemon pid, reserved
u32 1; u32 0
msg welcome 0 64

# ERROR: err, len, text
u32 $(((1 << 32) - 93)); u32 19; str "unsupported version"
msg error 0 65

# REPLY: flags, len, text
u32 1; u32 15; str '{"processes":[]'
msg reply-more 0 66
u32 0; u32 1; str '}'
msg reply-last 0 66

# A region header: capacity 64, rings of 16 entries.
region() { # selector
	u8 "$1"
	u32 0x484c4c46; u16 2; u16 256; u32 1234; u32 64; u64 25344
	u32 256; u32 2304; u32 2816; u32 16; u32 3328; u32 16
	# sites_high, the slots' offsets, padding (bits 4, 5 read 48 and 56)
	u32 0; u32 3840; u32 13056; u32 0
	zeros 192
}
region 0
put region-header
region 0x30
put region-header-size-pid-in-padding

ls -l "$out"
