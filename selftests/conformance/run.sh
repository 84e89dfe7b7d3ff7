#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Conformance of `faultline faultmap` and `faultline stackmap` with LLVM 14:
#
#   run.sh [--cli PATH] [-v] FILE...
#
# For every FILE (an object or a linked file of the corpus, see the
# Makefile's corpus section; `make check-conformance` runs this on all of it):
#
#   faultline faultmap FILE   must print exactly
#       llvm-objdump-14 --fault-map-section FILE | sed -n '/^FaultMap table:/,$p'
#   faultline stackmap FILE   must print exactly
#       llvm-readelf-14 --stackmap FILE
#
# and both must exit 0.  A mismatch prints a unified diff (expected = LLVM,
# actual = faultline).  The summary line is "N passed, N failed" (one check
# per file and section); the exit status is 1 if any check failed.
#
# Files with several tables.  A linked file holds one table per input object
# that has the section, back to back in link order.  LLVM's tools print the
# first table only; faultline prints every table, each in LLVM's format.  So
# for such a file the expected output is built per table:
#
#   1. FILE.parts (written by the link rule) lists the link inputs in order.
#      The size of each input's section is the size of its table (there is
#      no padding between tables: fault maps are byte-aligned, and stack map
#      tables are 8-byte-aligned and a multiple of 8 long).  The sizes must
#      add up to the size of FILE's section, or the check fails.
#   2. Table i is cut out of FILE's section (so it has FILE's function
#      addresses, not the object's zeros) and wrapped, alone, as the section
#      of the same name of a fresh ELF object (objcopy -I binary).
#   3. The expected output is the concatenation, in order, of LLVM's output
#      for each wrapped table.  As a check of the method itself, LLVM's
#      output for FILE must equal its output for the first wrapped table.
#
# A file whose section holds one table (or that has no FILE.parts) is
# compared directly.  So is a file without the section: LLVM then prints
# "FaultMap table:" and "<not found>" for the fault map and nothing for the
# stack map, and so must faultline.
#
# LLVM is started once per section kind for all files together (its start is
# what takes time); its output is split per file at the headers it prints
# between files.
#
# Environment: LLVM_OBJDUMP (llvm-objdump-14), LLVM_READELF (llvm-readelf-14),
# OBJCOPY (objcopy: it wraps tables as x86-64 objects, which LLVM's tools
# print as they print any), OBJCOPY_DUMP (OBJCOPY: the one that reads the
# files' machine, aarch64-linux-gnu-objcopy for AArch64's).  Also uses
# binutils' size and GNU dd.
set -u

LLVM_OBJDUMP=${LLVM_OBJDUMP:-llvm-objdump-14}
LLVM_READELF=${LLVM_READELF:-llvm-readelf-14}
OBJCOPY=${OBJCOPY:-objcopy}
OBJCOPY_DUMP=${OBJCOPY_DUMP:-$OBJCOPY}
cli=build/bin/faultline
verbose=0

usage() {
	echo "usage: $0 [--cli PATH] [-v] FILE..." >&2
	exit 2
}

while [ $# -gt 0 ]; do
	case $1 in
	--cli) [ $# -ge 2 ] || usage; cli=$2; shift 2 ;;
	-v) verbose=1; shift ;;
	--) shift; break ;;
	-*) usage ;;
	*) break ;;
	esac
done
[ $# -gt 0 ] || usage

for tool in "$LLVM_OBJDUMP" "$LLVM_READELF" "$OBJCOPY" "$OBJCOPY_DUMP" size dd; do
	command -v "$tool" >/dev/null 2>&1 || {
		echo "$0: $tool not found" >&2
		exit 2
	}
done
[ -x "$cli" ] || { echo "$0: $cli: not an executable" >&2; exit 2; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/fl-conformance.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT

kinds="faultmap stackmap"

declare -A section_of=([faultmap]=.llvm_faultmaps [stackmap]=.llvm_stackmaps)

# llvm_chunks KIND PREFIX FILE...: runs LLVM once on all FILEs and writes
# the output for the i-th FILE (from 1) to PREFIX.i: exactly what
#   faultmap: llvm-objdump-14 --fault-map-section F | sed -n '/^FaultMap table:/,$p'
#   stackmap: llvm-readelf-14 --stackmap F
# print for that file alone.  Before each file's output LLVM prints a blank
# line and a header naming the file ("File: F" from llvm-readelf when given
# several files, "F:<tab>file format elf64-x86-64" from llvm-objdump); they
# are dropped.  A header is recognised only with the name of a file still to
# come, so a file LLVM fails on (no header, its error on PREFIX.err) leaves
# an empty chunk instead of shifting the others.  LLVM's fault map and stack
# map output has no blank line of its own.
llvm_chunks() {
	local kind=$1 prefix=$2 n=$(($# - 2))
	shift 2
	printf '%s\n' "$@" >"$prefix.names"
	case $kind in
	faultmap) "$LLVM_OBJDUMP" --fault-map-section "$@" ;;
	stackmap) "$LLVM_READELF" --stackmap "$@" ;;
	esac 2>"$prefix.err" | awk -v kind="$kind" -v prefix="$prefix" -v n="$n" \
		-v names="$prefix.names" '
		BEGIN {
			while ((getline line < names) > 0)
				name[++k] = line
			for (j = 1; j <= n; j++)
				printf "" > (prefix "." j)
			# llvm-readelf prints no header for a single file
			i = (kind == "stackmap" && n == 1) ? 1 : 0
			# the sed of the fault map command: from "FaultMap table:" on
			on = (kind == "stackmap")
		}
		function out(line) {
			if (kind == "faultmap" && line == "FaultMap table:")
				on = 1
			if (i > 0 && on)
				print line > (prefix "." i)
		}
		# the index (> i) of the file this header names, or 0
		function header(line,    j, h) {
			for (j = i + 1; j <= n; j++) {
				if (kind == "stackmap")
					h = (line == "File: " name[j])
				else
					h = (index(line, name[j] ":\tfile format ") == 1)
				if (h)
					return j
			}
			return 0
		}
		{
			if ($0 == "") {
				if (held)
					out("")
				held = 1
				next
			}
			if (held && (j = header($0)) > 0) {
				if (i > 0)
					close(prefix "." i)
				i = j
				held = 0
				on = (kind == "stackmap")
				next
			}
			if (held)
				out("")
			held = 0
			out($0)
		}
		END { if (held) out("") }'
}

# section_sizes SECTION FILE...: prints, for each FILE in order, the size of
# its SECTION in bytes, or "-" when it has none.
section_sizes() {
	local sec=$1
	shift
	size -A -d "$@" 2>/dev/null | awk -v sec="$sec" -v n=$# '
		/^[^ ].* :$/ { sz[++i] = "-"; next }
		$1 == sec && i > 0 { sz[i] = $2 }
		END { for (j = 1; j <= n; j++) print (j in sz) ? sz[j] : "-" }'
}

# The plan.  For each file f and kind, LLVM inputs are queued on the kind's
# list (inputs_<kind>); plan[$f,$kind] says how to build the expected output
# from LLVM's outputs:
#   "direct J"      the output for input J
#   "tables J N"    input J is FILE, inputs J+1..J+N its tables: compare J
#                   with J+1, expect J+1..J+N concatenated
#   "error MESSAGE" no expected output (the check fails with MESSAGE)
declare -A plan
inputs_faultmap=()
inputs_stackmap=()

# plan_file F FILE KIND
plan_file() {
	local f=$1 file=$2 kind=$3 sec part size total=- off i j n
	local -n inputs=inputs_$kind
	local parts=() sizes=() with=()

	sec=${section_of[$kind]}
	if [ -f "$file.parts" ]; then
		while IFS= read -r part; do
			[ -n "$part" ] && parts+=("$part")
		done <"$file.parts"
	fi
	if [ ${#parts[@]} -gt 0 ]; then
		# The first size is FILE's own.
		while read -r size; do
			sizes+=("$size")
		done < <(section_sizes "$sec" "$file" "${parts[@]}")
		if [ ${#sizes[@]} -ne $((${#parts[@]} + 1)) ]; then
			plan[$f,$kind]="error cannot read the sections of $file and its parts"
			return
		fi
		total=${sizes[0]}
		for size in "${sizes[@]:1}"; do
			[ "$size" = - ] || with+=("$size")
		done
	fi
	n=${#with[@]}
	if [ "$n" -le 1 ] || [ "$total" = - ]; then
		plan[$f,$kind]="direct $((${#inputs[@]} + 1))"
		inputs+=("$file")
		return
	fi

	off=0
	for size in "${with[@]}"; do off=$((off + size)); done
	if [ "$off" -ne "$total" ]; then
		plan[$f,$kind]="error $sec is $total bytes but the tables of $file.parts add up to $off"
		return
	fi

	# Cut the tables out of FILE's section and wrap each as the only table
	# of an object.
	local dir=$tmp/tables.$f.$kind
	mkdir "$dir" &&
		"$OBJCOPY_DUMP" --dump-section "$sec=$dir/whole.bin" "$file" "$dir/copy" || {
		plan[$f,$kind]="error cannot copy $sec out of $file"
		return
	}
	j=$((${#inputs[@]} + 1))
	inputs+=("$file")
	off=0
	i=1
	for size in "${with[@]}"; do
		dd if="$dir/whole.bin" of="$dir/$i.bin" iflag=skip_bytes,count_bytes \
			skip="$off" count="$size" bs=65536 status=none &&
			"$OBJCOPY" -I binary -O elf64-x86-64 -B i386:x86-64 \
				--rename-section ".data=$sec,alloc,load,readonly,data,contents" \
				"$dir/$i.bin" "$dir/$i.o" || {
			plan[$f,$kind]="error cannot wrap table $i of $sec of $file"
			return
		}
		inputs+=("$dir/$i.o")
		off=$((off + size))
		i=$((i + 1))
	done
	plan[$f,$kind]="tables $j $n"
}

files=("$@")
for ((f = 0; f < ${#files[@]}; f++)); do
	for kind in $kinds; do
		if [ -f "${files[f]}" ]; then
			plan_file "$f" "${files[f]}" "$kind"
		else
			plan[$f,$kind]="error no such file"
		fi
	done
done

for kind in $kinds; do
	declare -n inputs=inputs_$kind
	if [ ${#inputs[@]} -gt 0 ]; then
		llvm_chunks "$kind" "$tmp/llvm.$kind" "${inputs[@]}"
	fi
	unset -n inputs
done

passed=0
failed=0

# same A B: whether files A and B are equal (NUL-free text; no fork).
same() {
	local a b
	IFS= read -r -d '' a <"$1"
	IFS= read -r -d '' b <"$2"
	[ "$a" == "$b" ]
}

# check F KIND: compares faultline with LLVM for one file and kind.
check() {
	local f=$1 kind=$2 file=${files[$1]} how j n i
	local name="$kind $file" exp=$tmp/expected act=$tmp/actual

	read -r how j n <<<"${plan[$f,$kind]}"
	case $how in
	error)
		echo "FAIL $name: ${plan[$f,$kind]#error }"
		return 1
		;;
	direct)
		exp=$tmp/llvm.$kind.$j
		;;
	tables)
		if ! same "$tmp/llvm.$kind.$j" "$tmp/llvm.$kind.$((j + 1))"; then
			echo "FAIL $name: LLVM's output for the file differs from its output for the first table cut out of it (the .parts split is wrong):"
			diff -u "$tmp/llvm.$kind.$j" "$tmp/llvm.$kind.$((j + 1))" | head -20
			return 1
		fi
		local chunks=()
		for ((i = j + 1; i <= j + n; i++)); do
			chunks+=("$tmp/llvm.$kind.$i")
		done
		cat "${chunks[@]}" >"$exp"
		[ "$verbose" = 1 ] && echo "     ($file: $n ${section_of[$kind]} tables)"
		;;
	esac

	"$cli" "$kind" "$file" >"$act" 2>"$tmp/stderr"
	local rc=$?
	if [ "$rc" -ne 0 ]; then
		echo "FAIL $name: faultline exited $rc"
		sed 's/^/    /' "$tmp/stderr"
		return 1
	fi
	if ! same "$exp" "$act"; then
		echo "FAIL $name: output differs from LLVM's"
		diff -u --label "expected ($kind, LLVM)" --label "actual (faultline $kind)" \
			"$exp" "$act" >"$tmp/diff"
		head -60 "$tmp/diff"
		[ "$(wc -l <"$tmp/diff")" -le 60 ] ||
			echo "    ... (diff cut at 60 of $(wc -l <"$tmp/diff") lines)"
		return 1
	fi
	[ "$verbose" = 1 ] && echo "ok   $name"
	return 0
}

for ((f = 0; f < ${#files[@]}; f++)); do
	for kind in $kinds; do
		if check "$f" "$kind"; then
			passed=$((passed + 1))
		else
			failed=$((failed + 1))
		fi
	done
done

for kind in $kinds; do
	if [ -s "$tmp/llvm.$kind.err" ]; then
		echo "(LLVM's messages for $kind:)"
		sed 's/^/    /' "$tmp/llvm.$kind.err"
	fi
done

echo "conformance: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
