#!/bin/bash
# Runs the discovery tests built by `make check-discovery`.
#   run.sh OUT "EXE_MODES" "SO_MODES" "PRELOAD" "CORPUS_FILES"
# PRELOAD: dt-probe.so (after ASan's runtime with SAN=1); CORPUS_FILES: the
# linked corpus files, libraries named *.so-*.
set -u
out=$1
exe_modes=$2
so_modes=$3
preload=$4
corpus=$5
failed=()

run() {
	local name=$1
	shift
	echo "==> $name"
	if ! "$@"; then
		failed+=("$name")
	fi
}

for m in $exe_modes; do
	run "$m" "$out/dt-$m" self "$m"
done
for m in $so_modes; do
	run "$m" "$out/dt-host" dlopen "$m" "$out/libdt-$m.so"
done
run object "$out/dt-host" object object "$out/funcs.o"
run stale "$out/dt-host" stale stale "$out/libdt-so-gnu.so" "$out/libdt-so-lld-notext.so" "$out"
for m in $so_modes; do
	run "preempted-$m" "$out/dt-preempt" preempted "preempted-$m" "$out/libdt-$m.so"
done

for f in $corpus; do
	name=corpus:$(basename "$f")
	case $(basename "$f") in
	*.so-*)	run "$name" env DT_PROBE_LABEL="$name" LD_PRELOAD="$preload $f" /bin/true ;;
	*)	run "$name" env DT_PROBE_LABEL="$name" LD_PRELOAD="$preload" "$f" ;;
	esac
done

if [ ${#failed[@]} -ne 0 ]; then
	echo "check-discovery: FAILED: ${failed[*]}"
	exit 1
fi
echo "check-discovery: all passed"
