# Sourced by the one-program-per-property suites' run.sh (selftests/patch,
# selftests/points): runs a test program and counts how it ended.
#   t_run TIMEOUT PROGRAM [ARGS...]   runs it; exit 0 is a pass, 77 a skip
#                                     (the program printed why), 124 (from
#                                     timeout) a hang, anything else a fail
#   t_summary SUITE                   prints the counts; returns 1 if any
#                                     test failed
# timeout signals the test's whole process group, its children too.
# t_summary also removes the perf maps (/tmp/perf-PID.map) that the tests'
# heals wrote since the suite began: files of this user that name nothing
# but faultline's code, so that no run leaves them behind.

passed=0
skipped=()
failed=()
t_perf_since=$(mktemp)

t_run() {
	local limit=$1 prog=$2 rc
	shift 2
	timeout "$limit" "$prog" "$@"
	rc=$?
	case $rc in
	0)	passed=$((passed + 1)) ;;
	77)	skipped+=("${prog##*/}") ;;
	124)	echo "FAIL ${prog##*/}: no result after ${limit}s"; failed+=("${prog##*/}") ;;
	*)	echo "FAIL ${prog##*/}: exit status $rc"; failed+=("${prog##*/}") ;;
	esac
}

t_perf_maps_clean() {
	local f
	for f in $(find /tmp -maxdepth 1 -name 'perf-*.map' -user "$(id -u)" -newer "$t_perf_since" 2>/dev/null); do
		grep -qv ' faultline:heal:' "$f" || rm -f "$f"
	done
	rm -f "$t_perf_since"
}

t_summary() {
	t_perf_maps_clean
	echo "$1: $passed passed, ${#failed[@]} failed${skipped[0]:+, ${#skipped[@]} skipped (${skipped[*]})}"
	if [ ${#failed[@]} -ne 0 ]; then
		for f in "${failed[@]}"; do echo "  FAILED: $f"; done
		return 1
	fi
}
