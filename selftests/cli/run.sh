#!/bin/bash
# The faultline command line: exit codes, messages, JSON, hostile input.
#   run.sh FAULTLINE JSON_CHECK WORKDIR E2E_PROG
set -u

FL=$(realpath "$1")
JSON_CHECK=$(realpath "$2")
W=$3
# A program whose implicit checks fail a given number of times (selftests/daemon/e2e/prog.c).
E2E_PROG=$(realpath "$4")
HERE=$(cd "$(dirname "$0")" && pwd)
rm -rf "$W" && mkdir -p "$W" && cd "$W" || exit 1

pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
# A command still running after this long is hung (never a slow machine's
# doing: minutes, for QEMU's TCG).
HANG_S=300

# run NAME EXPECTED_STATUS CMD...: runs CMD (at most HANG_S), output in NAME.out/.err
run() {
	local name=$1 want=$2 got
	shift 2
	timeout "$HANG_S" "$@" >"$name.out" 2>"$name.err"
	got=$?
	if [ "$got" = "$want" ]; then ok; else bad "$name: exit $got, expected $want"; sed 's/^/  | /' "$name.err" | head -5; fi
}

# has NAME FILE TEXT: FILE contains TEXT (fixed string)
has() {
	if grep -qF -- "$3" "$2"; then ok; else bad "$1: '$3' not in $2"; sed 's/^/  | /' "$2" | head -5; fi
}

empty() {
	if [ ! -s "$2" ]; then ok; else bad "$1: $2 is not empty"; head -3 "$2"; fi
}

# ---- a sample object, and llvm's view of it
llc-14 -O2 -enable-implicit-null-checks -filetype=obj "$HERE/sample.ll" -o sample.o || exit 1
llvm-objdump-14 --fault-map-section sample.o | sed -n '/^FaultMap table:/,$p' >sample.faultmap.llvm
llvm-readelf-14 --stackmap sample.o >sample.stackmap.llvm
cp sample.o other.o

# ---- usage
run help 0 "$FL" --help
has help help.out "Usage: faultline COMMAND"
run help_sub 0 "$FL" faultmap --help
has help_sub help_sub.out "Usage: faultline faultmap"
run version 0 "$FL" --version
has version version.out "faultline "
run no_args 2 "$FL"
run unknown_command 2 "$FL" frobnicate
has unknown_command unknown_command.err "unknown command 'frobnicate'"
if grep -q 'did you mean' unknown_command.err; then bad "unknown_command: a hint for frobnicate"; else ok; fi
# A slip of one or two edits names the nearest commands.
run did_you_mean 2 "$FL" stat
has did_you_mean did_you_mean.err "unknown command 'stat' (did you mean 'stats'?)"
run did_you_mean_two 2 "$FL" stackmapz
has did_you_mean_two did_you_mean_two.err "(did you mean 'stackmap' or 'stackmaps'?)"
run did_you_mean_swap 2 "$FL" porfile
has did_you_mean_swap did_you_mean_swap.err "(did you mean 'profile'?)"
# A PID given to a file command: the daemon's command for it.
run pid_to_stackmap 1 "$FL" stackmap 22799
has pid_to_stackmap pid_to_stackmap.err "faultline stackmaps 22799"
run pid_to_faultmap 1 "$FL" faultmap 22799
has pid_to_faultmap pid_to_faultmap.err "faultline sites 22799"
# Every --help ends with its exit status (help_vs_man.py checks each command's).
has help help.out "Exit status: "
run unknown_option 2 "$FL" --frobnicate
run no_file 2 "$FL" faultmap
has no_file no_file.err "no FILE given"
run bad_option 2 "$FL" stackmap --jsn sample.o
has bad_option bad_option.err "unknown option '--jsn'"
empty bad_option bad_option.out

# ---- good input: LLVM's output
run faultmap_text 0 "$FL" faultmap sample.o
cmp -s faultmap_text.out sample.faultmap.llvm && ok || { bad "faultmap differs from llvm-objdump"; diff faultmap_text.out sample.faultmap.llvm | head; }
run stackmap_text 0 "$FL" stackmap sample.o
cmp -s stackmap_text.out sample.stackmap.llvm && ok || { bad "stackmap differs from llvm-readelf"; diff stackmap_text.out sample.stackmap.llvm | head; }
# Several files: the same per-file headers as the LLVM tools.
run faultmap_two 0 "$FL" faultmap sample.o other.o
llvm-objdump-14 --fault-map-section sample.o other.o >two.llvm
cmp -s faultmap_two.out two.llvm && ok || { bad "two-file faultmap differs"; diff faultmap_two.out two.llvm | head; }
run stackmap_two 0 "$FL" stackmap sample.o other.o
llvm-readelf-14 --stackmap sample.o other.o >two.llvm
cmp -s stackmap_two.out two.llvm && ok || { bad "two-file stackmap differs"; diff stackmap_two.out two.llvm | head; }
# A file without the sections.
printf 'int main(void) { return 0; }\n' >plain.c && gcc -c plain.c -o plain.o
run faultmap_none 0 "$FL" faultmap plain.o
printf 'FaultMap table:\n<not found>\n' | cmp -s - faultmap_none.out && ok || bad "no section: not '<not found>'"
run stackmap_none 0 "$FL" stackmap plain.o
empty stackmap_none stackmap_none.out

# ---- JSON
run json_faultmap 0 "$FL" faultmap --json sample.o plain.o
"$JSON_CHECK" command='"faultmap"' files.0.ok=true files.0.found=true \
	files.0.tables.0.version=1 files.0.tables.0.functions.0.symbol='"load_field"' \
	files.0.tables.0.functions.0.faults.0.kind='"load"' \
	files.0.tables.0.functions.1.symbol='"store_field"' \
	files.0.tables.0.functions.1.faults.0.kind='"store"' \
	files.0.machine='"x86_64"' files.0.e_machine=62 \
	files.1.found=false files.1.tables='[]' <json_faultmap.out && ok || bad "faultmap JSON"
run json_stackmap 0 "$FL" stackmap --json sample.o
"$JSON_CHECK" command='"stackmap"' files.0.tables.0.version=3 \
	files.0.tables.0.functions.0.symbol='"with_stackmap"' \
	files.0.tables.0.records.0.id=7 \
	files.0.tables.0.records.0.locations.1.kind='"constant"' \
	files.0.tables.0.records.0.locations.1.value=-3 \
	files.0.tables.0.records.0.locations.2.kind='"constant_index"' \
	files.0.tables.0.records.0.locations.2.value=8589934592 \
	files.0.tables.0.records.0.locations.3.kind='"direct"' <json_stackmap.out && ok || bad "stackmap JSON"

# ---- byte order: LLVM writes both sections in the target's byte order.
# A big-endian AArch64 object reads exactly as the little-endian one.
llc-14 -mtriple=aarch64-linux-gnu -O2 -enable-implicit-null-checks -filetype=obj "$HERE/sample.ll" -o le.o
llc-14 -mtriple=aarch64_be-linux-gnu -O2 -enable-implicit-null-checks -filetype=obj "$HERE/sample.ll" -o be.o
for cmd in faultmap stackmap; do
	run "le_$cmd" 0 "$FL" $cmd le.o
	run "be_$cmd" 0 "$FL" $cmd be.o
	cmp -s "le_$cmd.out" "be_$cmd.out" && ok || { bad "$cmd: big-endian differs from little-endian"; diff "le_$cmd.out" "be_$cmd.out" | head; }
done
has be_faultmap be_faultmap.out "Fault kind: FaultingStore"
run be_json 0 "$FL" faultmap --json be.o
"$JSON_CHECK" files.0.big_endian=true files.0.tables.0.functions.1.faults.0.kind='"store"' <be_json.out && ok || bad "big-endian JSON"
# --json names the architecture of each file.
run arch_json 0 "$FL" stackmap --json le.o sample.o
"$JSON_CHECK" files.0.machine='"aarch64"' files.0.e_machine=183 files.0.big_endian=false \
	files.1.machine='"x86_64"' files.1.e_machine=62 <arch_json.out && ok || bad "the architecture in JSON"

# ---- malformed input: exit 1, the file and the diagnostic on stderr, nothing on stdout
run missing 1 "$FL" faultmap does-not-exist.o
has missing missing.err "does-not-exist.o"
empty missing missing.out
printf 'this is not an ELF file\n' >text.o
run not_elf 1 "$FL" stackmap text.o
has not_elf not_elf.err "text.o"
# A fault map whose NumFunctions reaches past the end.
printf '\001\000\000\000\377\377\377\377' >bad.faultmap
# (its relocations go too: they would point past the new section's end)
llvm-objcopy-14 --remove-section .rela.llvm_faultmaps \
	--update-section .llvm_faultmaps=bad.faultmap sample.o bad_faultmap.o
run bad_faultmap 1 "$FL" faultmap bad_faultmap.o
has bad_faultmap bad_faultmap.err "bad_faultmap.o: .llvm_faultmaps: table 0: NumFunctions 4294967295"
empty bad_faultmap bad_faultmap.out
# One bad file among good ones: the good ones are still printed, exit 1.
run bad_among_good 1 "$FL" faultmap sample.o bad_faultmap.o other.o
if [ "$(grep -c '^FaultMap table:' bad_among_good.out)" = 2 ]; then ok; else bad "bad_among_good: good files not printed"; fi
run bad_json 1 "$FL" faultmap --json sample.o bad_faultmap.o
"$JSON_CHECK" files.0.ok=true files.1.ok=false <bad_json.out && ok || bad "JSON with a bad file"
has bad_json bad_json.out "NumFunctions 4294967295"

# ---- --strict: a non-zero reserved byte is accepted, but rejected when strict
llvm-objcopy-14 --dump-section .llvm_stackmaps=sm.bin sample.o
printf '\001' | dd of=sm.bin bs=1 seek=1 conv=notrunc 2>/dev/null
llvm-objcopy-14 --update-section .llvm_stackmaps=sm.bin sample.o reserved.o
run reserved_lax 0 "$FL" stackmap reserved.o
run reserved_strict 1 "$FL" stackmap --strict reserved.o
has reserved_strict reserved_strict.err "(strict)"

# ---- write errors are reported
if [ -w /dev/full ]; then
	timeout "$HANG_S" "$FL" faultmap sample.o >/dev/full 2>full.err
	[ $? = 1 ] && ok || bad "write error to /dev/full not reported"
fi

# ---- hostile input: never a crash, never a hang (status 0 or 1 only)
hostile() {
	local f=$1 cmd s
	for cmd in faultmap stackmap healable; do
		for opt in "" --json --strict; do
			[ $cmd = healable ] && [ "$opt" = --strict ] && continue
			timeout "$HANG_S" "$FL" $cmd $opt "$f" >/dev/null 2>hostile.err
			s=$?
			if [ $s != 0 ] && [ $s != 1 ]; then
				bad "hostile $f ($cmd $opt): status $s"
				cp "$f" "crash-$(basename "$f")"
				return
			fi
		done
	done
	ok
}
size=$(stat -c %s sample.o)
for len in 0 1 4 16 52 63 64 65 100 200 $((size / 2)) $((size - 9)) $((size - 1)); do
	head -c "$len" sample.o >"trunc-$len.o"
	hostile "trunc-$len.o"
done
for i in $(seq 1 20); do
	head -c $((RANDOM % 4096 + 1)) /dev/urandom >"random-$i.o"
	hostile "random-$i.o"
	# An ELF header followed by garbage.
	{ head -c 64 sample.o; head -c $((RANDOM % 4096)) /dev/urandom; } >"elfish-$i.o"
	hostile "elfish-$i.o"
	# The sample with a few bytes flipped.
	cp sample.o "flip-$i.o"
	for k in 1 2 3 4; do
		printf "\\x$(printf %02x $((RANDOM % 256)))" |
			dd of="flip-$i.o" bs=1 seek=$((RANDOM % size)) conv=notrunc 2>/dev/null
	done
	hostile "flip-$i.o"
done
run directory 1 "$FL" faultmap .

# ---- faultline healable: the healing planner on files
llc-14 -O2 -enable-implicit-null-checks -function-sections -filetype=obj "$HERE/healable.ll" -o heal.o || exit 1
llc-14 -O2 -enable-implicit-null-checks -relocation-model=pic -filetype=obj "$HERE/healable.ll" -o heal-pic.o || exit 1
printf 'void throw_npe(void) {}\nint main(void) { return 0; }\n' >heal-main.c
gcc -shared -fPIC -Wl,-z,notext heal-pic.o heal-main.c -o heal.so || exit 1
gcc -no-pie -fno-pie heal.o heal-main.c -o heal.exe || exit 1
run healable_help 0 "$FL" healable --help
has healable_help healable_help.out "Usage: faultline healable"
has healable_help healable_help.out "--load-address ADDR"
run healable_no_file 2 "$FL" healable
has healable_no_file healable_no_file.err "no FILE given"
run healable_bad_option 2 "$FL" healable --jsn heal.o
has healable_bad_option healable_bad_option.err "unknown option '--jsn'"
empty healable_bad_option healable_bad_option.out
run healable_bad_load 2 "$FL" healable --load-address somewhere heal.o
has healable_bad_load healable_bad_load.err "--load-address: expected a user-space address"
run healable_low_load 2 "$FL" healable --load-address 0x1000 heal.o
run healable_unaligned 2 "$FL" healable --load-address 0x555555554001 heal.o
has healable_unaligned healable_unaligned.err "is not page-aligned"
# An object: a punned jump heals the 2-byte load; the back-to-back 3-byte
# sites in a section of their own cannot be healed in place (--tactics
# without REL says why), and are healed by relocating their function.
run healable_object 0 "$FL" healable heal.o
has healable_object healable_object.out "heal.o: relocatable, assumed loaded at 0x555555554000"
has healable_object healable_object.out "load_i32+0x1"
grep -E '^  load_i32\+0x1 +0x1 +2  8b 07 +B2$' healable_object.out >/dev/null && ok ||
	bad "healable_object: load_i32's line is not '... 2  8b 07  B2'"
has healable_object healable_object.out "several+0x1"
grep -E '^  several\+0x4 .* 3  89 46 08 +REL$' healable_object.out >/dev/null && ok ||
	bad "healable_object: several+0x4 is not healed by relocation"
has healable_object healable_object.out "heal.o: 5 of 5 sites can be healed (100.00%): B1 0 (0.00%), B2 3 (60.00%), T1 0 (0.00%), T2 0 (0.00%), T3 0 (0.00%), REL 2 (40.00%)"
has healable_object healable_object.out "total: 5 of 5 sites can be healed (100.00%)"
run healable_in_place 0 "$FL" healable --tactics B1,B2,T1,T2,T3 heal.o
grep -E '^  several\+0x4 .* 3  89 46 08 +none: a 3-byte instruction: no free place for a stub' \
	healable_in_place.out >/dev/null && ok || bad "healable_in_place: several+0x4 without its reason"
has healable_in_place healable_in_place.out "heal.o: 3 of 5 sites can be healed (60.00%)"
has healable_in_place healable_in_place.out "heal.o: 2 cannot (40.00%): no free place for a stub in reach, and no neighbour to evict: 2"
run healable_bad_tactics 2 "$FL" healable --tactics B1,T9 heal.o
has healable_bad_tactics healable_bad_tactics.err "--tactics: 'B1,T9' is not a list of B1, B2, T1, T2, T3, REL"
# A shared library (assumed load address, which --load-address moves) and
# an executable (its link-time addresses); with a file without a fault map.
run healable_linked 0 "$FL" healable heal.so heal.exe plain.o
has healable_linked healable_linked.out "heal.so: shared, assumed loaded at 0x555555554000"
has healable_linked healable_linked.out "heal.exe: executable, loaded at its link-time addresses"
has healable_linked healable_linked.out "plain.o: relocatable, no .llvm_faultmaps"
has healable_linked healable_linked.out "plain.o: 0 of 0 sites can be healed (100.00%)"
grep -qE '^total: [0-9]+ of 10 sites can be healed \([0-9.]+%\): B1 [0-9]+ \([0-9.]+%\), B2 [0-9]+ \([0-9.]+%\), T1 [0-9]+ \([0-9.]+%\), T2 [0-9]+ \([0-9.]+%\), T3 [0-9]+ \([0-9.]+%\), REL [0-9]+ \([0-9.]+%\)$' \
	healable_linked.out && ok || bad "healable_linked: no total line over 10 sites"
run healable_json 0 "$FL" healable --json heal.o heal.so plain.o
"$JSON_CHECK" command='"healable"' schema=1 load_address=93824992231424 \
	files.0.ok=true files.0.type='"relocatable"' files.0.found=true \
	files.0.sites.0.function='"load_i32"' files.0.sites.0.function_offset=1 \
	files.0.sites.0.length=2 files.0.sites.0.bytes='"8b07"' files.0.sites.0.kind='"load"' \
	files.0.sites.0.healable=true files.0.sites.0.tactic='"B2"' files.0.sites.0.why=null \
	files.0.sites.0.runtime_address=93824992231425 \
	files.0.sites.2.healable=true files.0.sites.2.tactic='"REL"' files.0.sites.2.why=null \
	files.0.sites.2.reason=null files.0.sites.2.relocation.checks_made_explicit=4 \
	files.0.summary.sites=5 files.0.summary.healable=5 files.0.summary.B2=3 \
	files.0.summary.REL=2 files.0.summary.percent_by_tactic.REL=40.0 \
	files.1.type='"shared"' files.2.found=false files.2.sites='[]' files.2.summary.sites=0 \
	summary.sites=10 <healable_json.out && ok || bad "healable JSON"
run healable_json_exe 0 "$FL" healable --json --load-address 0x7f0000000000 heal.exe heal.so
"$JSON_CHECK" load_address=139637976727552 files.0.type='"executable"' files.0.load_address=null \
	files.1.load_address=139637976727552 <healable_json_exe.out && ok || bad "healable JSON, --load-address"
# Bad files: exit 1, the file and what is wrong on stderr; the others still printed.
run healable_missing 1 "$FL" healable does-not-exist.o
has healable_missing healable_missing.err "does-not-exist.o: No such file or directory"
empty healable_missing healable_missing.out
run healable_not_elf 1 "$FL" healable text.o
has healable_not_elf healable_not_elf.err "text.o: not an ELF file"
run healable_aarch64 1 "$FL" healable le.o
has healable_aarch64 healable_aarch64.err "le.o: e_machine 183 is not x86-64"
run healable_bad_faultmap 1 "$FL" healable heal.o bad_faultmap.o heal.so
has healable_bad_faultmap healable_bad_faultmap.err "bad_faultmap.o: .llvm_faultmaps: table 0: NumFunctions 4294967295"
has healable_bad_faultmap healable_bad_faultmap.out "heal.so: 5 of 5 sites"
run healable_bad_json 1 "$FL" healable --json heal.o bad_faultmap.o does-not-exist.o
"$JSON_CHECK" files.0.ok=true files.1.ok=false files.2.ok=false summary.sites=5 \
	<healable_bad_json.out && ok || bad "healable JSON with bad files"
has healable_bad_json healable_bad_json.out "NumFunctions 4294967295"
run healable_directory 1 "$FL" healable .
if [ -w /dev/full ]; then
	timeout "$HANG_S" "$FL" healable heal.o >/dev/full 2>full.err
	[ $? = 1 ] && ok || bad "healable: write error to /dev/full not reported"
fi

# ---- faultline run: the preload library next to the tool
PRELOAD=$(dirname "$FL")/../lib/libfaultline-preload.so
run run_help 0 "$FL" run --help
has run_help run_help.out "Usage: faultline run"
run run_no_program 2 "$FL" run
has run_no_program run_no_program.err "no program to run"
run run_bad_log 2 "$FL" run --log loud -- true
has run_bad_log run_bad_log.err "--log: expected error, warn, info or debug"
run run_bad_bound 2 "$FL" run --null-bound -1 -- true
run run_missing_program 127 "$FL" run -- ./no-such-program
has run_missing_program run_missing_program.err "./no-such-program: No such file or directory"
run run_not_executable 126 "$FL" run -- ./sample.o
has run_not_executable run_not_executable.err "./sample.o: not executable (its mode is 6"
has run_not_executable run_not_executable.err "sample.o is a source or object file"
run run_missing_preload 127 "$FL" run --preload ./no-such.so -- true
has run_missing_preload run_missing_preload.err "--preload ./no-such.so: No such file or directory"
# What was looked for: PATH for a bare name (not the current directory),
# the file's mode, what a source file is.
printf 'int main(void) { return 0; }\n' >main.c
run run_source_in_path 127 "$FL" run main.c
has run_source_in_path run_source_in_path.err "main.c: no such command in PATH"
has run_source_in_path run_source_in_path.err "main.c is a source or object file: build a program from it first"
cp "$(type -P true)" here-prog && chmod 644 here-prog
run run_cwd_not_searched 127 "$FL" run here-prog
has run_cwd_not_searched run_cwd_not_searched.err "the current directory is not searched: did you mean ./here-prog?"
run run_mode 126 "$FL" run ./here-prog
has run_mode run_mode.err "./here-prog: not executable (its mode is 644)"
run run_directory 126 "$FL" run -- "$PWD"
has run_directory run_directory.err "a directory, not a program"
# --preload takes an x86-64 ELF shared object only: ld.so would warn and
# run the program without faultline.
run run_preload_source 127 "$FL" run --preload main.c -- true
has run_preload_source run_preload_source.err "faultline: run: --preload main.c: not an ELF file, so not a shared library"
empty run_preload_source run_preload_source.out
run run_preload_object 127 "$FL" run --preload sample.o -- true
has run_preload_object run_preload_object.err "an ELF file, but no shared library"
run run_preload_program 127 "$FL" run --preload "$FL" -- true
has run_preload_program run_preload_program.err "a program (position-independent), not a shared library"
run run_preload_env 127 env FAULTLINE_PRELOAD=main.c "$FL" run -- true
has run_preload_env run_preload_env.err "FAULTLINE_PRELOAD=main.c: not an ELF file"
if [ -e "$PRELOAD" ] && ldd "$PRELOAD" | grep -q libasan; then
	# SAN=1: an ASan-built library cannot load into uninstrumented programs
	# ("ASan runtime does not come first"); the plain build runs these.
	echo "skip: run_env, run_status, run_args, summary_*: the preload library is ASan-built (checked in the plain build)"
elif [ -e "$PRELOAD" ]; then
	# The program sees the library in LD_PRELOAD, after what was there (a
	# libjsig or ASan's runtime must stay first), once (run under run),
	# and its own options and exit status pass through.
	run run_env 0 env LD_PRELOAD=/nonexistent-but-kept.so "$FL" run -- sh -c 'echo "$LD_PRELOAD"; exit 0'
	if grep -qE '^/nonexistent-but-kept\.so:[^:]*/libfaultline-preload\.so$' run_env.out; then ok; else
		bad "run_env: the library is not after what LD_PRELOAD had"; sed 's/^/  | /' run_env.out; fi
	run run_env_once 0 env LD_PRELOAD="/x/libjsig.so $PRELOAD" "$FL" run -- sh -c 'echo "[$LD_PRELOAD]"; exit 0'
	has run_env_once run_env_once.out "[/x/libjsig.so $PRELOAD]"
	run run_status 3 "$FL" run -- sh -c 'exit 3'
	run run_args 0 "$FL" run -- echo --log x
	has run_args run_args.out "--log x"

	# --summary and FAULTLINE_SUMMARY=1: at exit, each site that failed,
	# most failures first, named as faultline profile names an address;
	# with no daemon anywhere (FAULTLINE_SOCKET names none).  E2E_PROG
	# run 2 1 0 fails e2e_load's check twice, e2e_store's once.
	nod=(env -u FAULTLINE_SUMMARY FAULTLINE_SOCKET="$PWD/no-daemon-for-summary.sock")
	# site FUNCTION: "E2E_PROG+0xPC (FUNCTION+0xOFF)", PC from nm and the fault map.
	site() {
		local fn=$1 addr off=
		addr=$(nm "$E2E_PROG" | awk -v f="$fn" '$3 == f { print $1 }')
		# "FunctionAddress: 0x..., ..." then its "... faulting PC offset: N, ...".
		off=$("$FL" faultmap "$E2E_PROG" | awk -v a="$(printf 'FunctionAddress: 0x%x,' $((16#$addr)))" '
			index($0, a) == 1 { found = 1; next }
			found && /faulting PC offset:/ { sub(",", "", $7); print $7; exit }')
		printf '%s+0x%x (%s+0x%x)' "$(basename "$E2E_PROG")" $((16#$addr + off)) "$fn" "$off"
	}
	want_summary() {
		printf 'faultline:          2  %s\nfaultline:          1  %s\n' \
			"$(site e2e_load)" "$(site e2e_store)"
	}
	# summary_is NAME: NAME.err is the summary of 3 failures at 2 sites, exactly.
	summary_is() {
		local pid
		pid=$(awk '/^pid/ { print $2 }' "$1.out")
		if { echo "faultline: pid $pid (e2e-prog): 3 implicit checks failed at 2 sites"
		     want_summary; } | cmp -s - "$1.err"; then ok; else
			bad "$1: not the summary expected:"; sed 's/^/  | /' "$1.err" | head -5
			want_summary | sed 's/^/  want | /'
		fi
	}
	run summary_opt 0 "${nod[@]}" "$FL" run --summary -- "$E2E_PROG" run 2 1 0
	summary_is summary_opt
	run summary_env 0 "${nod[@]}" FAULTLINE_SUMMARY=1 LD_PRELOAD="$PRELOAD" "$E2E_PROG" run 2 1 0
	summary_is summary_env
	run summary_not_asked 0 "${nod[@]}" "$FL" run -- "$E2E_PROG" run 2 1 0
	empty summary_not_asked summary_not_asked.err
	run summary_env_0 0 "${nod[@]}" FAULTLINE_SUMMARY=0 "$FL" run -- "$E2E_PROG" run 2 1 0
	empty summary_env_0 summary_env_0.err
	run summary_none_failed 0 "${nod[@]}" "$FL" run --summary -- "$E2E_PROG" run 0 0 0
	empty summary_none_failed summary_none_failed.err
	run summary_bad_env 0 "${nod[@]}" FAULTLINE_SUMMARY=yes "$FL" run -- "$E2E_PROG" run 2 1 0
	if [ "$(cat summary_bad_env.err)" = "faultline: error: FAULTLINE_SUMMARY: expected 1 (a summary at exit) or 0; no summary" ]
	then ok; else bad "summary_bad_env: not the one error line"; sed 's/^/  | /' summary_bad_env.err; fi
	# Four threads fail 2 and 1 each, the main thread waits for them.
	run summary_threads 0 "${nod[@]}" "$FL" run --summary -- "$E2E_PROG" threads 2 1 0
	has summary_threads summary_threads.err "12 implicit checks failed at 2 sites"
	has summary_threads summary_threads.err "faultline:          8  $(site e2e_load)"
	has summary_threads summary_threads.err "faultline:          4  $(site e2e_store)"
	# Counts are said in the singular for one.
	llc-14 -O2 -enable-implicit-null-checks -relocation-model=pic -filetype=obj \
		"$HERE/one_check.ll" -o one_check.o && gcc -Wl,-z,notext -o one_check one_check.o
	run run_one_check 7 "$FL" run --log debug ./one_check
	has run_one_check run_one_check.err "the main program: 1 implicit check, 0 stack map records"
else
	bad "run: $PRELOAD not built"
fi

# ---- the shim's interposed functions: README.md, faultline(1) and
# preload.c's header list exactly what libfaultline-preload.so exports.
ROOT=$(cd "$HERE/../.." && pwd)
nm -D --defined-only "$PRELOAD" | awk '{ print $3 }' | sort >interposed.exported
awk '/the shim interposes/ { on = 1 } on { print } on && /no other function/ { exit }' "$ROOT/README.md" |
	grep -o '`[A-Za-z_][A-Za-z0-9_]*`' | tr -d '`' | sort >interposed.readme
sed -n '/The preload library interposes/,/no other function/p' "$ROOT/docs/man/faultline.1" |
	sed -n 's/^\.BR\{0,1\} \([A-Za-z_][A-Za-z0-9_]*\).*/\1/p' | sort >interposed.man
sed -n '/The library interposes these functions/,/^ \*$/p' "$ROOT/lib/preload/preload.c" |
	grep -E '^ \*   [a-z_]+(, [a-z_]+)*$' | sed 's/^ \*   //; s/, /\n/g' | sort >interposed.source
[ "$(wc -l <interposed.exported)" -gt 0 ] && ok || bad "interposed: nm -D $PRELOAD lists nothing"
for where in readme man source; do
	if diff -u interposed.exported "interposed.$where" >"interposed.$where.diff"; then
		ok
	else
		bad "interposed: the $where's list is not what the library exports (- nm -D, + $where):"
		sed 's/^/  | /' "interposed.$where.diff"
	fi
done

# ---- every command's options: --help and faultline(1) agree
if python3 "$HERE/help_vs_man.py" "$FL" "$ROOT/docs/man/faultline.1" >help_vs_man.out; then
	ok
else
	bad "help_vs_man: --help and faultline(1) differ:"
	sed 's/^/  | /' help_vs_man.out
fi

# ---- the daemon's commands: bad command lines (exit 2, nothing sent), and
# no daemon (exit 1, the socket named).  End to end: selftests/daemon/cli/.
NOSOCK=$PWD/no-daemon.sock
for cmd in stats top ps sites stackmaps request; do
	run "help_$cmd" 0 "$FL" $cmd --help
	has "help_$cmd" "help_$cmd.out" "Usage: faultline $cmd"
	run "bad_option_$cmd" 2 "$FL" $cmd --frobnicate
	has "bad_option_$cmd" "bad_option_$cmd.err" "unknown option '--frobnicate'"
	empty "bad_option_$cmd" "bad_option_$cmd.out"
	run "no_socket_arg_$cmd" 2 "$FL" $cmd --socket
	has "no_socket_arg_$cmd" "no_socket_arg_$cmd.err" "option '--socket' needs an argument"
done
run stats_two_formats 2 "$FL" stats --json --openmetrics
has stats_two_formats stats_two_formats.err "exclude each other"
run stats_bad_sort 2 "$FL" stats --sort size
has stats_bad_sort stats_bad_sort.err "--sort: expected faults or recent, not 'size'"
run stats_bad_pid 2 "$FL" stats --pid 12x
has stats_bad_pid stats_bad_pid.err "--pid: expected a process ID, not '12x'"
run stats_zero_pid 2 "$FL" stats --pid 0
run stats_extra 2 "$FL" stats extra
has stats_extra stats_extra.err "unexpected argument 'extra'"
run ps_extra 2 "$FL" ps 1
run sites_no_pid 2 "$FL" sites
has sites_no_pid sites_no_pid.err "no PID given"
run sites_bad_pid 2 "$FL" sites -5
run sites_bad_pid2 2 "$FL" sites abc
has sites_bad_pid2 sites_bad_pid2.err "PID: expected a process ID, not 'abc'"
run sites_two_pids 2 "$FL" sites 1 2
run stackmaps_no_pid 2 "$FL" stackmaps --id 7
has stackmaps_no_pid stackmaps_no_pid.err "no PID given"
run stackmaps_bad_id 2 "$FL" stackmaps --id seven 1
has stackmaps_bad_id stackmaps_bad_id.err "--id: expected a non-negative integer, not 'seven'"
run top_bad_interval 2 "$FL" top --interval 0
has top_bad_interval top_bad_interval.err "--interval: expected seconds"
run top_bad_interval2 2 "$FL" top --interval soon
run top_bad_iterations 2 "$FL" top --iterations 0
run top_extra 2 "$FL" top now
run request_nothing 2 "$FL" request
has request_nothing request_nothing.err "no PID given"
run request_no_kind 2 "$FL" request 1
has request_no_kind request_no_kind.err "no request given"
run request_bad_kind 2 "$FL" request 1 reboot
has request_bad_kind request_bad_kind.err "unknown request 'reboot'"
run request_no_value 2 "$FL" request 1 heal-threshold
has request_no_value request_no_value.err "heal-threshold: no value given"
run request_bad_value 2 "$FL" request 1 heal-threshold -1
run request_big_value 2 "$FL" request 1 heal-threshold 4294967296
run request_window_alone 2 "$FL" request 1 heal-threshold 0/5
has request_window_alone request_window_alone.err "a window without a count"
run request_bad_window 2 "$FL" request 1 heal-threshold 3/x
run request_unheal_no_value 2 "$FL" request 1 unheal-after
run heal_no_pid 2 "$FL" heal
has heal_no_pid heal_no_pid.err "no PID given"
run heal_no_site 2 "$FL" heal 1
has heal_no_site heal_no_site.err "no SITE given"
run heal_both 2 "$FL" heal 1 0x401000 --over 3
has heal_both heal_both.err "not both"
run heal_bad_site 2 "$FL" heal 1 zzz
run heal_zero_site 2 "$FL" heal 1 0
has heal_zero_site heal_zero_site.err "0 is no address"
run unheal_over 2 "$FL" unheal 1 --over 3
run heal_help 0 "$FL" heal --help
has heal_help heal_help.out "Usage: faultline heal"
run unheal_help 0 "$FL" unheal --help
has unheal_help unheal_help.out "Usage: faultline unheal"
run request_extra 2 "$FL" request 1 ping 2 3
# What every command's options share (daemon/cli/opts.c): --name=ARG, an
# unambiguous abbreviation, an ambiguous one refused, the first bad option
# the one reported, and -h's help listing the table's options in one column,
# the same for every command: no sooner than 16 columns after the indent.
run opt_equals 1 "$FL" stats --sort=recent --socket="$NOSOCK"
has opt_equals opt_equals.err "$NOSOCK"
run opt_abbrev 1 "$FL" ps --so "$NOSOCK"
has opt_abbrev opt_abbrev.err "$NOSOCK"
run opt_ambiguous 2 "$FL" stats --s x
has opt_ambiguous opt_ambiguous.err "unknown option '--s'"
run opt_first_error 2 "$FL" stats --sort size --pid 0
has opt_first_error opt_first_error.err "--sort: expected faults or recent, not 'size'"
run opt_flag_arg 2 "$FL" ps --json=1
has opt_flag_arg opt_flag_arg.err "unknown option '--json=1'"
run stats_json_twice 2 "$FL" stats --json --json
has stats_json_twice stats_json_twice.err "exclude each other"
run stats_in_order 2 "$FL" stats extra --json
has stats_in_order stats_in_order.err "unexpected argument 'extra'"
run stackmaps_reserved_id 2 "$FL" stackmaps --id 18446744073709551615 1
has stackmaps_reserved_id stackmaps_reserved_id.err "--id: 18446744073709551615 is reserved"
run stackmaps_id_and_pc 2 "$FL" stackmaps --id 1 --pc 2 3
has stackmaps_id_and_pc stackmaps_id_and_pc.err "--id and --pc do not go together"
run top_decimal_iterations 2 "$FL" top --iterations 0x10
has top_decimal_iterations top_decimal_iterations.err "--iterations: expected a positive number, not '0x10'"
run run_missing_log 2 "$FL" run --log
has run_missing_log run_missing_log.err "unknown option '--log'"
for cmd in faultmap stackmap healable run stats top ps sites stackmaps request; do
	run "help_column_$cmd" 0 "$FL" $cmd -h
	col=$(grep -E '^  --' "help_column_$cmd.out" | head -1 | awk '{ match($0, /^  --[^ ]+( [A-Z]+)? +/); print RLENGTH }')
	want=$(grep -E '^  -h, --help +show this help$' "help_column_$cmd.out" |
		awk '{ match($0, /^  -h, --help +/); print RLENGTH }')
	if [ -n "$col" ] && [ "$col" = "$want" ] && [ "$col" -ge 18 ]; then ok; else
		bad "help_column_$cmd: options at column ${col:-?}, -h at ${want:-?}"; fi
done
# The socket: --socket, else $FAULTLINE_SOCKET, else $XDG_RUNTIME_DIR's
# (not root) or /run/faultline's (root); not running: exit 1, path named.
run nodaemon_opt 1 "$FL" stats --socket "$NOSOCK"
has nodaemon_opt nodaemon_opt.err "faultlined is not running at $NOSOCK"
empty nodaemon_opt nodaemon_opt.out
run nodaemon_env 1 env FAULTLINE_SOCKET="$NOSOCK.env" "$FL" ps
has nodaemon_env nodaemon_env.err "$NOSOCK.env"
run nodaemon_opt_wins 1 env FAULTLINE_SOCKET="$NOSOCK.env" "$FL" sites --socket "$NOSOCK" 1
has nodaemon_opt_wins nodaemon_opt_wins.err "at $NOSOCK "
if [ "$(id -u)" = 0 ]; then
	want=/run/faultline/faultlined.sock
	# Whatever listens there on this machine is not this test's: the
	# command sees an empty /run, in a mount namespace of its own.
	empty_run=(unshare -m sh -c 'mount -t tmpfs none /run && exec "$@"' sh)
else
	want=$PWD/xdg/faultline/faultlined.sock
	empty_run=()
fi
run nodaemon_default 1 env -u FAULTLINE_SOCKET XDG_RUNTIME_DIR="$PWD/xdg" "${empty_run[@]}" \
	"$FL" request 1 ping
has nodaemon_default nodaemon_default.err "$want"
run nodaemon_top 1 "$FL" top --socket "$NOSOCK" --iterations 1
has nodaemon_top nodaemon_top.err "$NOSOCK"
# Something that is not faultlined listening there: a clear error, exit 1.
printf 'not a socket\n' >"$NOSOCK.file"
run nodaemon_file 1 "$FL" stats --socket "$NOSOCK.file"
has nodaemon_file nodaemon_file.err "$NOSOCK.file"

echo "cli: $pass passed, $fail failed"
[ "$fail" = 0 ]
