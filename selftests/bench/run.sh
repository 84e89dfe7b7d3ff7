#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The benchmarks (make bench):
#
#   selftests/bench/run.sh OUTDIR CLI
#
# OUTDIR holds bench_parse, bench_exec, bench_dispatch, bench_region and
# startup/many (startup-prog.sh), and receives the data files; CLI is
# build/bin/faultline.  Environment: BENCH_REPEAT (bench_parse repetitions,
# dispatch and region batches, default 15), BENCH_RUNS (whole-process runs
# of each command, default 7), BENCH_STARTUP_RUNS (runs of each side of the
# startup comparison, default 21), PRELOAD (libfaultline-preload.so, default
# ../lib/libfaultline-preload.so next to OUTDIR), LLVM_READELF,
# LLVM_OBJDUMP, LLVM_OBJCOPY, LLVM_MC (default the -14 tools).
#
#  1. Format layer: bench_parse on the synthetic sections (synth.h) of
#     1,000, 10,000, 100,000 and 1,000,000 entries: build rates and lookup
#     times at each size (the scaling table).
#  2. Whole process, at the same sizes, on ELF objects holding the same two
#     sections (one table each, since LLVM's tools print only the first):
#     faultline stackmap vs llvm-readelf --stackmap, faultline faultmap vs
#     llvm-objdump --fault-map-section, then a table of the times and ratios
#     at each size.  The outputs are compared first (llvm-objdump's is taken
#     from "FaultMap table:" on: before that it names the file, which
#     faultline does only when given several); a pair whose outputs differ
#     is reported and not timed, and the script then exits 1.
#  3. Dispatch: bench_dispatch (faultline vs the floor, claimed and
#     unclaimed faults at 1 to 1,000,000 sites: the scaling table; two
#     threads).
#  4. userfaultfd regions: bench_region (guard faults repeated and first
#     of a guard tail, with the floor handler's rows for the kernel's and
#     the helper thread's part; skipped, with the reason, where userfaultfd
#     is unavailable).
#  5. Startup: startup/many, startup/one and startup/ten (about 100,000
#     fault map entries each: 1 to 4 a function, 1, 10; the counts are
#     printed, and the number the preload library registered) run to
#     completion with and without LD_PRELOAD=libfaultline-preload.so, with
#     no daemon and with a faultlined listening, by bench_exec, all through
#     env(1) so that they differ only there; the difference of the medians
#     is the start-up's cost.
#  6. faultlined: bench_daemon (registration latency; stats query p50/p99,
#     also --pid, daemon memory per process and idle CPU with 1,000
#     registered processes; BENCH_DAEMON_PROCESSES changes the number; the
#     scaling table: processes of 1,000 to 1,000,000 sites (BENCH_DAEMON_SITES
#     the largest), registration, bytes a site, stats, idle CPU, the cost of
#     persisting a change and an exit; 100 processes of 100,000 sites, half
#     exited, idle (BENCH_DAEMON_BIG, 0 to leave it out); faultline stats
#     and the metrics at 100 x 100,000, 10 x 100,000 and 100 x 10,000 sites
#     (processes x sites, BENCH_DAEMON_STATS_LOADS; one site in 100 failed,
#     half of the processes exited): the STATS query faultline stats sends,
#     also --top 10 and --pid, p50/p99 and bytes; faultline stats
#     --prometheus, median wall time and series; GET /metrics (faultlined
#     --metrics-listen), p50/p99, bytes, series and the daemon's CPU per
#     scrape).
#  7. The eBPF program: bench_bpf (ns per page fault with no program, with
#     an empty program at the same attach point (the floor), with the
#     program and this process not registered, and registered, also with
#     1,000 to 1,000,000 sites in fl_sites; the program's own run time; ring buffer loss with sample_every = 1 at the
#     highest fault rate, with and without a consumer).  Needs root (skipped,
#     with the reason, where the program cannot be loaded).
#  8. make vmtest, boot to result: scripts/vmtest.sh with only check-bpf's
#     bpf_count (OUTDIR/../tests/bpf/bpf_count), BENCH_VMTEST_RUNS times
#     (default 1), its work directory OUTDIR/vm sharing the kernel that
#     make vmtest downloaded into build/vm/kernel; and the per-test times of
#     the last full make vmtest (build/vm/console.log), when there is one.
#  9. Code patching: bench_patch (one call's latency, one site and 100 by
#     the int3 protocol, one site by the thread handshake, with 1, 2 and 8
#     threads running the code; a patch storm's cost for a running thread;
#     a boundary-moving change's median and p90 with 10 threads calling the
#     code, beside 1,000 threads of which 990 are blocked; the EINTR count
#     of 1,000 such changes against poll and nanosleep loops).
# 10. faultline healable (healable.sh): shared libraries of about 10^4,
#     10^5 and 10^6 implicit-check sites (built once into OUTDIR/healable,
#     about a minute), text and --json, median wall time, time per site and
#     peak memory.
# 11. Healing: bench_heal (a storm of failing checks unhealed, healed and
#     explicit; the non-failing path of each; fl_site_heal's latency with 0,
#     1, 2 and 8 threads running the code).
# 12. Deoptimization: bench_deopt (fl_stackmap_record_at at 10^3..10^6
#     records, hot and random, beside the format layer's binary search; a
#     deoptimization's round trip against a plain call and a fault
#     dispatch; a stack walk of 100 frames of statepoints with fl_stack_walk
#     beside libunwind's bare unw_step over the same frames).
# Figures only, measured side by side: nothing here asserts a time.
set -euo pipefail

if [ $# -ne 2 ]; then
	echo "usage: $0 OUTDIR CLI" >&2
	exit 2
fi
out=$1
cli=$2
repeat=${BENCH_REPEAT:-15}
runs=${BENCH_RUNS:-7}
startup_runs=${BENCH_STARTUP_RUNS:-21}
preload=$(realpath "${PRELOAD:-$out/../lib/libfaultline-preload.so}")
readelf=${LLVM_READELF:-llvm-readelf-14}
objdump=${LLVM_OBJDUMP:-llvm-objdump-14}
objcopy=${LLVM_OBJCOPY:-llvm-objcopy-14}
mc=${LLVM_MC:-llvm-mc-14}
data=$out/data
# The sizes of parts 1 and 2, in entries (bench_parse's).
sizes="1000 10000 100000 1000000"
status=0

echo "== 1. Format layer (bench_parse -n $repeat)"
"$out/bench_parse" -n "$repeat"

echo
echo "== 2. Whole process (bench_exec -n $runs) at ${sizes// /, } entries"
rm -rf "$data"
mkdir -p "$data"
"$out/bench_parse" --write "$data"
"$mc" -filetype=obj -triple=x86_64-unknown-linux-gnu /dev/null -o "$data/empty.o"
for n in $sizes; do
	# Flags and alignment as llc-14 gives them.
	"$objcopy" \
		--add-section .llvm_faultmaps="$data/faultmap.$n.bin" \
		--set-section-flags .llvm_faultmaps=alloc,readonly \
		--add-section .llvm_stackmaps="$data/stackmap.$n.bin" \
		--set-section-flags .llvm_stackmaps=alloc,readonly \
		--set-section-alignment .llvm_stackmaps=8 \
		"$data/empty.o" "$data/maps.$n.o"
	rm -f "$data/faultmap.$n.bin" "$data/stackmap.$n.bin"
done
rm -f "$data/empty.o"

# Compares the outputs of a pair; prints why and returns 1 if they differ.
same_output() { # name A-output B-output
	if cmp -s "$2" "$3"; then
		echo "  $1: outputs identical ($(stat -c %s "$2") bytes)"
		rm -f "$2" "$3"
		return 0
	fi
	echo "  $1: OUTPUTS DIFFER, not timed ($2 vs $3):"
	diff "$2" "$3" | head -10 | sed 's/^/    /'
	status=1
	return 1
}

# Times a pair with bench_exec, keeping its report for the table.
timed() { # report-file bench_exec-arguments...
	local report=$1
	shift
	"$out/bench_exec" -n "$runs" "$@" | tee "$report" || status=1
}

# "median-wall-A median-wall-B ratio-wall ratio-cpu" from a bench_exec report.
figures() {
	awk '/ wall .* cpu .* maxrss/ { for (i = 1; i <= NF; i++) if ($i == "wall") w[++n] = $(i + 1) }
	     /^ *ratio / { rw = $3; rc = $5 }
	     END { sub(/x,$/, "", rw); sub(/x$/, "", rc); print w[1], w[2], rw, rc }' "$1"
}

for n in $sizes; do
	obj=$data/maps.$n.o
	echo "  -- $n entries: $obj ($(stat -c %s "$obj") bytes: the sections of part 1, one table each)"
	"$cli" stackmap "$obj" > "$data/stackmap.faultline"
	"$readelf" --stackmap "$obj" > "$data/stackmap.llvm"
	if same_output stackmap "$data/stackmap.faultline" "$data/stackmap.llvm"; then
		timed "$data/report.stackmap.$n" \
			-- "faultline stackmap" "$cli" stackmap "$obj" \
			-- "${readelf##*/} --stackmap" "$readelf" --stackmap "$obj"
	fi
	"$cli" faultmap "$obj" > "$data/faultmap.faultline"
	"$objdump" --fault-map-section "$obj" | sed -n '/^FaultMap table:$/,$p' \
		> "$data/faultmap.llvm"
	if same_output faultmap "$data/faultmap.faultline" "$data/faultmap.llvm"; then
		timed "$data/report.faultmap.$n" \
			-- "faultline faultmap" "$cli" faultmap "$obj" \
			-- "${objdump##*/} --fault-map-section" "$objdump" --fault-map-section "$obj"
	fi
done
echo
echo "  Scaling: median wall ms of each, and faultline's time / LLVM's (wall, cpu)"
printf '  %10s  %10s %15s %6s %6s  %10s %15s %6s %6s\n' entries "faultmap" \
	"${objdump##*/}" wall cpu "stackmap" "${readelf##*/}" wall cpu
for n in $sizes; do
	fm="- - - -"
	sm="- - - -"
	[ -s "$data/report.faultmap.$n" ] && fm=$(figures "$data/report.faultmap.$n")
	[ -s "$data/report.stackmap.$n" ] && sm=$(figures "$data/report.stackmap.$n")
	# shellcheck disable=SC2086 # word splitting of the figures is meant
	printf '  %10s  %10s %15s %6s %6s  %10s %15s %6s %6s\n' "$n" $fm $sm
done

echo
echo "== 3. Dispatch (bench_dispatch -n $repeat)"
"$out/bench_dispatch" -n "$repeat" || status=1

echo
echo "== 4. userfaultfd regions (bench_region -n $repeat)"
rc=0
"$out/bench_region" -n "$repeat" || rc=$?
if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; then
	echo "  bench_region failed (exit status $rc)"
	status=1
fi

echo
echo "== 5. Startup (bench_exec -n $startup_runs)"
# A faultlined for the runs with a daemon listening, stopped when the part ends.
sdir=$(mktemp -d /tmp/fl-bench-startup.XXXXXX)
"$(dirname "$cli")/faultlined" --socket "$sdir/s" --state-dir "$sdir/state" >"$sdir/log" 2>&1 &
sdaemon=$!
for _ in $(seq 100); do [ -S "$sdir/s" ] && break; sleep 0.05; done
for prog in "$out/startup/many" "$out/startup/one" "$out/startup/ten"; do
	entries=$("$cli" faultmap "$prog" | grep -c 'Fault kind')
	functions=$("$cli" faultmap "$prog" | grep -c 'FunctionAddress')
	# With an argument the program stays a second: the fl-agent thread says what it registered.
	registered=$(FAULTLINE_LOG=debug FAULTLINE_SOCKET=$sdir/none LD_PRELOAD=$preload \
		"$prog" wait 2>&1 | sed -n 's/.*the main program: \([0-9]*\) implicit checks.*/\1/p')
	echo "  program: $prog (non-PIE, $entries fault map entries in $functions functions;" \
		"the preload library registered ${registered:-an unreported number})"
	if [ -n "$registered" ] && [ "$registered" -ne "$entries" ]; then
		echo "  the preload library did not register the program's entries: not timed"
		status=1
		continue
	fi
	"$out/bench_exec" -n "$startup_runs" \
		-- "with the shim, no daemon" env FAULTLINE_SOCKET="$sdir/none" \
			LD_PRELOAD="$preload" "$prog" \
		-- "without" env FAULTLINE_SOCKET="$sdir/none" "$prog"
	"$out/bench_exec" -n "$startup_runs" \
		-- "with the shim, faultlined listening" env FAULTLINE_SOCKET="$sdir/s" \
			LD_PRELOAD="$preload" "$prog" \
		-- "without" env FAULTLINE_SOCKET="$sdir/s" "$prog"
done
kill "$sdaemon" 2>/dev/null || true
wait "$sdaemon" 2>/dev/null || true
rm -rf "$sdir"

echo
echo "== 6. faultlined (bench_daemon: ${BENCH_DAEMON_PROCESSES:-1000} processes)"
"$out/bench_daemon" "$(dirname "$cli")/faultlined" -n "${BENCH_DAEMON_PROCESSES:-1000}" \
	-q 200 -i 10 -m "${BENCH_DAEMON_SITES:-1000000}" -P "${BENCH_DAEMON_BIG:-100}" \
	-S 100000 -L "${BENCH_DAEMON_STATS_LOADS:-100x100000,10x100000,100x10000}" || status=1

echo
echo "== 7. eBPF program (bench_bpf -n $repeat)"
rc=0
"$out/bench_bpf" -n "$repeat" || rc=$?
if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; then
	echo "  bench_bpf failed (exit status $rc)"
	status=1
fi

vm_runs=${BENCH_VMTEST_RUNS:-1}
echo
echo "== 8. make vmtest: QEMU boot to result (bpf_count only, $vm_runs run(s))"
top=$(cd "$(dirname "$0")/../.." && pwd)
bpf_test=$(realpath "$out/../tests/bpf/bpf_count")
vmdir=$(realpath "$out")/vm
# The kernel package make vmtest keeps in build/vm (VMTEST_OUT), not a
# second download.
mkdir -p "$top/build/vm/kernel" "$vmdir"
ln -sfn "$top/build/vm/kernel" "$vmdir/kernel"
qemu_times=()
for ((i = 1; i <= vm_runs; i++)); do
	t0=$(date +%s.%N)
	rc=0
	(cd "$top" && scripts/vmtest.sh -o "$vmdir" -t 300 -f "$bpf_test" -- \
		"bpf::$bpf_test") > "$vmdir/run.log" 2>&1 || rc=$?
	t1=$(date +%s.%N)
	# vmtest.sh's last line: "vmtest: kernel K: N passed, ...; QEMU boot to
	# result S s"; the guest's: "... (uptime S s)" and "PASS bpf (S s)".
	qemu=$(sed -n 's/.*QEMU boot to result \([0-9.]*\) s$/\1/p' "$vmdir/run.log" | tail -n 1)
	uptime=$(sed -n 's/.*vmtest: kernel .*(uptime \([0-9.]*\) s)$/\1/p' \
		"$vmdir/console.log" 2>/dev/null | tail -n 1)
	bpf_s=$(sed -n 's/.*vmtest: PASS bpf (\([0-9.]*\) s)$/\1/p' \
		"$vmdir/console.log" 2>/dev/null | tail -n 1)
	kernel=$(sed -n 's/.*vmtest: guest kernel \([^ ]*\).*/\1/p' \
		"$vmdir/console.log" 2>/dev/null | tail -n 1)
	if [ "$rc" -ne 0 ] || [ -z "$qemu" ]; then
		echo "  run $i: vmtest.sh exit status $rc; its last lines ($vmdir/run.log):"
		grep -v '^guest| ' "$vmdir/run.log" | tail -n 5 | sed 's/^/    /'
		status=1
		break
	fi
	qemu_times+=("$qemu")
	printf '  run %d: QEMU boot to result %s s (kernel %s; guest uptime at the result %s s,\n' \
		"$i" "$qemu" "${kernel:-?}" "${uptime:-?}"
	printf '         bpf_count %s s); vmtest.sh in all %.1f s (with the initramfs)\n' \
		"${bpf_s:-?}" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')"
done
if [ "${#qemu_times[@]}" -gt 1 ]; then
	printf '%s\n' "${qemu_times[@]}" | sort -n | awk '{ v[NR] = $1 }
		END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		      printf "  QEMU boot to result: median %.1f s [%.1f .. %.1f], %d runs\n",
			m, v[1], v[NR], NR }'
fi
# The full suite's figures, from the last make vmtest (not run here: 1 to
# 2.5 minutes under TCG).
log=$top/build/vm/console.log
if [ -s "$log" ] && grep -q '^vmtest: kernel .*passed' "$log"; then
	echo "  last full make vmtest ($log, $(date -r "$log" '+%F %T')):"
	sed -n 's/^vmtest: \(PASS\|FAIL\|SKIP\) \([^ :]*\).*(\([0-9.]*\) s)$/    \2: \3 s (\1)/p' "$log"
	sed -n 's/^vmtest: kernel \(.*\) (uptime \([0-9.]*\) s)$/    \1; guest uptime at the result \2 s/p' \
		"$log" | tail -n 1
fi

echo
echo "== 9. Code patching (bench_patch -n $repeat)"
"$out/bench_patch" -n "$repeat" || status=1

echo
echo "== 10. faultline healable on 10^4, 10^5 and 10^6 sites (median of $runs runs)"
BENCH_RUNS=$runs LLC=${LLC:-llc-14} LLVM_OBJCOPY=$objcopy \
	"$(dirname "$0")/healable.sh" "$out/healable" "$cli" || status=1

echo
echo "== 11. Healing (bench_heal -n 10)"
"$out/bench_heal" -n 10 || status=1

echo
echo "== 12. Deoptimization (bench_deopt -n $repeat)"
"$out/bench_deopt" -n "$repeat" || status=1
exit $status
