#!/bin/bash
# Real runtimes that install their own SIGSEGV handlers behave the same with
# libfaultline-preload.so as without it: each program below runs three
# times, without the shim ("plain"), with LD_PRELOAD=<shim> ("shim"), and
# with the shim and healing on ("heal": FAULTLINE_HEAL_AFTER=1, the healer
# thread running; the runtimes' own faults are not faultline's sites, so
# nothing is counted or healed), and the runs must have the same stdout, the
# same stderr and the same exit status.
#
#   run.sh PRELOAD_SO OUTDIR        (make check-runtimes)
#
# The programs (selftests/runtimes/), with Debian 12's runtimes:
#   jvm-npe      OpenJDK 17 (NpeStress.java): NullPointerExceptions in
#                several threads from a method C2 compiles with an implicit
#                null check (the load faults, HotSpot's handler sends it to
#                an uncommon trap), each caught with HotSpot's helpful
#                message; StackOverflowError caught in two threads;
#                -Xcheck:jni, whose periodic checks warn when a signal
#                handler is not HotSpot's.
#   jvm-jsig     OpenJDK 17 under its libjsig (JsigJni.java, jsig_jni.c): a
#                JNI library installs its own SIGSEGV handler; it must see
#                SIG_DFL as the previous action, and C2 code's NPEs stay
#                the JVM's (libjsig first, the shim after it).
#   jvm-crash    OpenJDK 17 (Crash.java): a read of address 0 in the VM's
#                native code; HotSpot's handler writes hs_err and aborts.
#   node-wasm    Node.js (wasm-oob.js): out-of-bounds WebAssembly loads
#                fault in V8's guard region and are caught as RuntimeError,
#                in the main thread and two workers.
#   node-kill    Node.js sends itself SIGSEGV (si_code SI_TKILL): Node's
#                handler finds no wasm trap, restores SIG_DFL and re-raises.
#   python       CPython (segv-child.py): faulthandler on, children that die
#                of SIGSEGV (kernel-generated and sent) keep returncode -11,
#                their traceback and their core dump.
#   jvm-zgc, jvm-shenandoah  NpeStress with ZGC and with Shenandoah (their
#                load barriers and relocation under NullPointerExceptions).
#   sbcl-gc      SBCL (sbcl-gc.lisp): 4 threads consing with errors caught
#                (int3 traps: SIGTRAP, whose handler has no SA_ONSTACK),
#                stop-for-GC signals, a full GC, under SIGPROF sampling.
#   sbcl-suite   SBCL's own tests of sb-concurrency (sbcl-source's
#                contrib/sb-concurrency/tests, run by sb-rt): queues,
#                mailboxes, gates, frlocks, with threads.
#   mono-nre     Mono (NullStress.cs): NullReferenceExceptions from JIT
#                code in 4 threads.
#   mono-bus     Mono reading a truncated file's mapping: its crash report
#                (SIGBUS, a handler without SA_ONSTACK) and abort.
#   go-cgo       Go with cgo (nilrecover.go): nil dereferences recovered in
#                4 goroutines, os/signal, a cgo call.
#   python-tests CPython's own test_threading and test_subprocess.
#   unshare-user unshare(1) --user --map-root-user id -u: a user namespace
#                needs a single-threaded caller.
# Each run's wall time is kept (wall), and a table at the end gives each
# workload's times and its shim/plain and heal/plain ratios.
# Besides the comparison, each run is checked for what it is meant to
# exercise (expected exit status, the expected output, C2 really compiled
# the method and really faulted in it), so that two runs that fail the same
# way do not pass, and the shim's run is checked to have the shim mapped.
#
# Each run has its own directory OUTDIR/{plain,shim,heal}/NAME/ (its cwd)
# with stdout, stderr, status and what else the program leaves (maps: a
# copy of its /proc/self/maps; tasks: its threads' names; compilation.log,
# hs_err.log).  Java sources are
# compiled into OUTDIR/classes.  Runs are limited to FL_RT_TIMEOUT seconds
# (default 600: a guard against a hang, minutes for QEMU's TCG on a busy
# machine) each; core dumps are off except where segv-child.py turns them
# on for its children.
#
# Prints "ok - CHECK" or "FAIL - CHECK: why" per check, then a summary; exits
# 1 when a check failed.
# The expect() checks are single-quoted on purpose (bash -c expands them);
# the mask functions are called through same().
# shellcheck disable=SC2016,SC2317
set -u

if [ $# -ne 2 ]; then
	echo "usage: run.sh PRELOAD_SO OUTDIR" >&2
	exit 2
fi
if ! so=$(realpath -e "$1"); then
	echo "FAIL - setup: preload library $1 not found"
	exit 1
fi
mkdir -p "$2" || exit 1
out=$(realpath "$2")
here=$(cd "$(dirname "$0")" && pwd)

# Debian's own runtimes, not whatever comes first in PATH (pyenv, nvm, ...).
java_home=${FL_JAVA_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}
java=$java_home/bin/java
javac=$java_home/bin/javac
node=${FL_NODE:-/usr/bin/node}
python=${FL_PYTHON:-/usr/bin/python3}
sbcl=${FL_SBCL:-/usr/bin/sbcl}
mono=${FL_MONO:-/usr/bin/mono}
mcs=${FL_MCS:-/usr/bin/mcs}
go=${FL_GO:-/usr/bin/go}
sbcl_source=/usr/share/sbcl-source/contrib/sb-concurrency/tests
timeout_s=${FL_RT_TIMEOUT:-600}

npass=0
nfail=0
failed=()

ok() {
	echo "ok - $1"
	npass=$((npass + 1))
}

notok() {
	echo "FAIL - $1: $2"
	nfail=$((nfail + 1))
	failed+=("$1")
}

# Shows a file's first lines under a FAIL line.
show() {
	sed -n "1,${2:-25}p" "$1" | sed 's/^/#   /'
}

for tool in "$java" "$javac" "$node" "$python" "$sbcl" "$mono" "$mcs" "$go" unshare timeout; do
	if ! command -v "$tool" >/dev/null; then
		notok "setup" "$tool not found (scripts/deps.sh installs it)"
		echo "runtimes: $npass passed, $nfail failed"
		exit 1
	fi
done

# run NAME MODE CMD...: runs CMD in OUTDIR/MODE/NAME.  The shim is preloaded
# into CMD, not into timeout(1).  The exit status recorded is the shell's:
# 128+N when CMD died of signal N (timeout re-raises it; it also writes
# "timeout: the monitored command dumped core" to stderr when it did).
run() {
	local name=$1 mode=$2 d=$out/$2/$1
	shift 2
	rm -rf "$d"
	mkdir -p "$d"
	local preload=(env -u LD_PRELOAD -u FAULTLINE_HEAL_AFTER -u FAULTLINE_UNHEAL_AFTER)
	[ "$mode" = shim ] && preload+=("LD_PRELOAD=$so")
	[ "$mode" = heal ] && preload+=("LD_PRELOAD=$so" FAULTLINE_HEAL_AFTER=1)
	# (The braces' 2>/dev/null: bash's own "Segmentation fault" notice.)
	local t0 t1 st
	t0=$(date +%s.%N)
	{
		(
			cd "$d" || exit 125
			ulimit -S -c 0
			# Debian's default soft limit, with room above it for
			# faultline's descriptors (lib/core/ownfd.c), in every run.
			ulimit -S -n 1024 2>/dev/null
			export RT_MAPS=$d/maps RT_TASKS=$d/tasks
			exec timeout -k 5 "$timeout_s" "${preload[@]}" "$@" >stdout 2>stderr
		)
	} 2>/dev/null
	st=$?
	t1=$(date +%s.%N)
	echo $st >"$d/status"
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", b - a }' >"$d/wall"
	walls+=("$name")
}
walls=()

# both NAME CMD...: the plain run, then the shim's run, then the shim's
# with healing on.
both() {
	local name=$1
	shift
	run "$name" plain "$@"
	run "$name" shim "$@"
	run "$name" heal "$@"
}

# same NAME FILE [FILTER...]: FILE of the plain run and of each of the
# shim's runs, each through FILTER (default cat), must be identical.
same() {
	local name=$1 file=$2 mode
	shift 2
	[ $# -eq 0 ] && set -- cat
	for mode in shim heal; do
		local a=$out/plain/$name/$file b=$out/$mode/$name/$file
		local diff=$out/$name.$mode.$file.diff what="$name: $file identical"
		[ $mode = heal ] && what="$what (healing on)"
		if [ ! -e "$a" ] || [ ! -e "$b" ]; then
			notok "$what" "missing $([ -e "$a" ] || echo "$a ")$([ -e "$b" ] || echo "$b")"
			continue
		fi
		if diff -u --label "plain/$name/$file" --label "$mode/$name/$file" \
			<("$@" <"$a") <("$@" <"$b") >"$diff"; then
			ok "$what"
			rm -f "$diff"
		else
			notok "$what" "$(tail -n +3 "$diff" | grep -c '^[-+]') lines, see $diff"
			show "$diff" 40
		fi
	done
}

# expect NAME CHECK COMMAND...: COMMAND must succeed for both runs; it is
# run with D set to the run's directory.
expect() {
	local name=$1 what=$2 mode why=
	shift 2
	for mode in plain shim heal; do
		if ! D=$out/$mode/$name bash -c "$1"; then
			why="$why${why:+, }not in the $mode run"
		fi
	done
	if [ -z "$why" ]; then
		ok "$name: $what"
	else
		notok "$name: $what" "$why"
	fi
}

status_is() {
	expect "$1" "exit status $2 (every run)" "[ \"\$(cat \"\$D/status\")\" = $2 ]"
}

# The shim is mapped in the shim's runs of NAME and only there; in the heal
# run, faultline's healer thread runs (the policy is on).
mapped() {
	local name=$1
	if ! grep -qF "$so" "$out/shim/$name/maps" 2>/dev/null; then
		notok "$name: shim loaded" "$so not in the shim run's /proc/self/maps"
	elif ! grep -qF "$so" "$out/heal/$name/maps" 2>/dev/null; then
		notok "$name: shim loaded" "$so not in the heal run's /proc/self/maps"
	elif ! grep -qx "fl-healer" "$out/heal/$name/tasks" 2>/dev/null; then
		notok "$name: healing on" "no fl-healer thread in the heal run (its tasks: $(tr '\n' ' ' <"$out/heal/$name/tasks" 2>/dev/null | head -c 300))"
	elif grep -qx "fl-healer" "$out/shim/$name/tasks" 2>/dev/null; then
		notok "$name: healing on" "an fl-healer thread in the shim run, without FAULTLINE_HEAL_AFTER"
	elif grep -qF "$so" "$out/plain/$name/maps" 2>/dev/null; then
		notok "$name: shim loaded" "$so mapped in the plain run too"
	elif [ ! -s "$out/plain/$name/maps" ]; then
		notok "$name: shim loaded" "the plain run wrote no maps"
	else
		ok "$name: shim loaded in the shim runs only, healing on in the heal run"
	fi
}

# Nondeterministic text, masked before comparing, and nothing else:
#  - HotSpot's fatal error banner: the faulting pc (ASLR), pid and tid;
#  - faulthandler's "Current thread 0x...": the thread's pthread_t (ASLR).
mask_hs_banner() {
	sed -E 's/pc=0x[0-9a-f]+, pid=[0-9]+, tid=[0-9]+/pc=PC, pid=PID, tid=TID/'
}
mask_thread_ids() {
	sed -E 's/([Tt]hread) 0x[0-9a-f]+/\1 0x.../'
}
# The deterministic parts of a HotSpot fatal error report (hs_err): the
# siginfo line (signal, si_code, si_addr); the page fault error code and
# trap number from the ucontext; the crashing thread's name and state; the
# native stack (library offsets: no ASLR); the signal handlers as HotSpot
# reads them back with sigaction(), with their masks, flags and whether
# each is blocked in the crashing thread.
hs_err_excerpt() {
	awk '
		/^siginfo:/ { print }
		/ERR=0x/ { if (match($0, /ERR=0x[0-9a-f]+/)) print substr($0, RSTART, RLENGTH) }
		/^ *TRAPNO=/ { sub(/^ */, ""); print }
		/^Current thread/ {
			sub(/^Current thread \(0x[0-9a-f]+\): */, "Current thread: ")
			sub(/, id=[0-9]+, stack\(.*$/, "")
			print
		}
		/^Native frames:/ || /^Signal Handlers:/ { s = 1 }
		s { print; if ($0 == "") s = 0 }
	'
}

start=$(date +%s.%N)
echo "runtimes: shim $so"

# ---- Java: compile ----
classes=$out/classes
rm -rf "$classes"
mkdir -p "$classes"
# Crash.java uses sun.misc.Unsafe: javac warns about it whatever the options.
if "$javac" -nowarn -d "$classes" "$here/NpeStress.java" "$here/Crash.java" "$here/JsigJni.java" \
	>"$out/javac.log" 2>&1; then
	ok "javac"
	java_ok=1
else
	notok "javac" "see $out/javac.log"
	show "$out/javac.log"
	java_ok=0
fi

if [ $java_ok = 1 ]; then
	# ---- jvm-npe ----
	# 4 threads x 300000 calls, null in every 50th of the second half; 2 rounds.
	# -Xbatch: a method is compiled before it runs on, so that C2's code is
	# there before the nulls come however slow the machine (in the
	# background, the first half could end before C2 had compiled it).
	# -XX:-OmitStackTraceInFastThrow: every NullPointerException has
	# HotSpot's helpful message (JEP 358).  By default, once a null check
	# has trapped a few times, C2 recompiles it to throw a preallocated
	# exception without a message or a stack trace, and a thread that came
	# to its nulls after that (a busy machine; -Xbatch, C2's code ready
	# early, made it likelier) had a null message, with or without the shim.
	both jvm-npe "$java" -Xbatch -XX:-OmitStackTraceInFastThrow \
		-XX:+ShowCodeDetailsInExceptionMessages -Xcheck:jni \
		-XX:+UnlockDiagnosticVMOptions \
		-XX:+LogCompilation -XX:LogFile=compilation.log \
		-cp "$classes" NpeStress 4 300000 50 2
	status_is jvm-npe 0
	same jvm-npe stdout
	same jvm-npe stderr
	expect jvm-npe "all NullPointerExceptions and StackOverflowErrors caught" \
		'[ "$(grep -c "3000 NullPointerExceptions caught" "$D/stdout")" = 8 ] &&
		 [ "$(grep -c "^round [01] thread [0-3]: 3000 with the message: Cannot read field \"v\" because " "$D/stdout")" = 8 ] &&
		 [ "$(grep -o "StackOverflowError caught (depth > 1000: true)" "$D/stdout" | wc -l)" = 6 ] &&
		 [ "$(tail -n 1 "$D/stdout")" = done ]'
	# C2 (level 4) compiled work(), and its implicit null check faulted: the
	# first null_check uncommon trap is in code C2 compiled before any null
	# came, with the check implicit, and is reached only through HotSpot's
	# SIGSEGV handler.  (The later ones can be the explicit checks C2
	# recompiles with.)
	expect jvm-npe "C2 compiled NpeStress.work" \
		'grep "<nmethod " "$D/compilation.log" | grep "compiler=.c2. level=.4." |
		 grep -q "method=.NpeStress work "'
	expect jvm-npe "null check faults in C2 code (uncommon traps)" \
		'grep "<uncommon_trap thread=" "$D/compilation.log" |
		 grep -m 1 "reason=.null_check." | grep -q "compiler=.c2."'
	for m in plain shim heal; do
		n=$(grep "<uncommon_trap thread=" "$out/$m/jvm-npe/compilation.log" 2>/dev/null |
			grep "reason=.null_check." | grep -c "compiler=.c2.")
		echo "#   $m: $n null check uncommon traps in C2 code"
	done
	mapped jvm-npe

	# ---- jvm-jsig ----
	# HotSpot's libjsig first in LD_PRELOAD (where faultline run keeps it),
	# the shim after it in the shim's runs: a JNI library's sigaction sees
	# SIG_DFL as the previous SIGSEGV action, and C2 code's NPEs stay the
	# JVM's (the library's handler would exit 99).
	jsig=$java_home/lib/libjsig.so
	jni=$out/libjsig-jni.so
	# shellcheck disable=SC2016
	both jvm-jsig sh -c 'LD_PRELOAD=$0${LD_PRELOAD:+:$LD_PRELOAD} exec "$@"' "$jsig" \
		"$java" -Xbatch -cp "$classes" JsigJni "$jni" 300000
	status_is jvm-jsig 0
	same jvm-jsig stdout
	same jvm-jsig stderr
	expect jvm-jsig "the library saw SIG_DFL; every NPE was the JVM's" \
		'grep -qx "the library.s sigaction(SIGSEGV) saw as the previous action: SIG_DFL" "$D/stdout" &&
		 grep -qx "3000 NullPointerExceptions caught" "$D/stdout" &&
		 [ "$(tail -n 1 "$D/stdout")" = done ]'
	expect jvm-jsig "libjsig mapped" 'grep -q "/libjsig.so$" "$D/maps"'
	mapped jvm-jsig
	# The shim before libjsig, by hand: libjsig's sigaction is bypassed
	# (the library sees the JVM's handler, and its handler ends the JVM at
	# the first NPE), and the shim says so on stderr, at every level.
	d=$out/order/jvm-jsig
	rm -rf "$d" && mkdir -p "$d"
	(cd "$d" && ulimit -S -c 0 && exec env -u FAULTLINE_HEAL_AFTER LD_PRELOAD="$so:$jsig" \
		timeout -k 5 "$timeout_s" "$java" -Xbatch -cp "$classes" JsigJni "$jni" 3000 \
		>stdout 2>stderr)
	if grep -q "^faultline: error: libjsig.so comes after libfaultline-preload.so in LD_PRELOAD: " \
		"$d/stderr" && ! grep -qx "the library.s sigaction(SIGSEGV) saw as the previous action: SIG_DFL" \
		"$d/stdout"; then
		ok "jvm-jsig: the shim before libjsig says so (and libjsig's chaining is bypassed)"
	else
		notok "jvm-jsig: the shim before libjsig says so" "its stderr and stdout:"
		show "$d/stderr" 5
		show "$d/stdout" 5
	fi

	# ---- jvm-crash ----
	both jvm-crash "$java" -XX:ErrorFile=hs_err.log -cp "$classes" Crash
	status_is jvm-crash 134
	same jvm-crash stdout mask_hs_banner
	same jvm-crash stderr
	expect jvm-crash "hs_err: SIGSEGV at address 0" \
		'grep -q "^siginfo: si_signo: 11 (SIGSEGV), si_code: 1 (SEGV_MAPERR), si_addr: 0x0000000000000000$" "$D/hs_err.log"'
	same jvm-crash hs_err.log hs_err_excerpt
fi

# ---- node-wasm ----
# 10000 iterations x 4 out-of-bounds loads, in the main thread and 2 workers.
both node-wasm "$node" "$here/wasm-oob.js" 10000 2
status_is node-wasm 0
same node-wasm stdout
same node-wasm stderr
expect node-wasm "all out-of-bounds loads caught as RuntimeError" \
	'[ "$(grep -c "10000 iterations, in-bounds sum 920443736, 40000 traps caught$" "$D/stdout")" = 3 ] &&
	 [ "$(grep -c "RuntimeError \"memory access out of bounds\" x 40000$" "$D/stdout")" = 3 ] &&
	 [ "$(tail -n 1 "$D/stdout")" = done ]'
mapped node-wasm

# ---- node-kill ----
both node-kill "$node" -e 'process.kill(process.pid, "SIGSEGV"); setTimeout(() => {}, 5000)'
status_is node-kill 139
same node-kill stdout
same node-kill stderr

# ---- python ----
both python "$python" "$here/segv-child.py" children
status_is python 0
same python stdout mask_thread_ids
same python stderr
expect python "children died of SIGSEGV (-11) with faulthandler's traceback" \
	'[ "$(grep -c "^returncode: -11$" "$D/stdout")" = 4 ] &&
	 [ "$(grep -c "^Fatal Python error: Segmentation fault$" "$D/stdout")" = 3 ]'
if grep -q "^core dumps: on" "$out/plain/python/stdout" 2>/dev/null; then
	expect python "children dumped core" \
		'[ "$(grep -c "^core dumped: yes$" "$D/stdout")" = 4 ]'
fi
mapped python

# ---- jvm-zgc, jvm-shenandoah ----
if [ $java_ok = 1 ]; then
	for gc in ZGC ShenandoahGC; do
		n=jvm-zgc
		[ "$gc" = ShenandoahGC ] && n=jvm-shenandoah
		both $n "$java" -XX:+Use$gc -Xbatch -XX:-OmitStackTraceInFastThrow \
			-XX:+ShowCodeDetailsInExceptionMessages -cp "$classes" NpeStress 4 300000 50 1
		status_is $n 0
		same $n stdout
		same $n stderr
		expect $n "all NullPointerExceptions caught" \
			'[ "$(grep -c "3000 NullPointerExceptions caught" "$D/stdout")" = 4 ] &&
			 [ "$(tail -n 1 "$D/stdout")" = done ]'
		mapped $n
	done
fi

# ---- sbcl-gc, sbcl-suite ----
both sbcl-gc "$sbcl" --non-interactive --no-sysinit --no-userinit --load "$here/sbcl-gc.lisp"
status_is sbcl-gc 0
same sbcl-gc stdout
same sbcl-gc stderr
expect sbcl-gc "every error caught in every thread, SIGPROF samples taken" \
	'grep -qx "caught (4000 4000 4000 4000)" "$D/stdout" && grep -qx "profiled: yes" "$D/stdout"'
mapped sbcl-gc
if [ -d "$sbcl_source" ]; then
	both sbcl-suite env SB_CONCURRENCY_TESTS="$sbcl_source" "$sbcl" --non-interactive \
		--no-sysinit --no-userinit --load "$here/sbcl-suite.lisp"
	status_is sbcl-suite 0
	same sbcl-suite stdout
	same sbcl-suite stderr
	expect sbcl-suite "sb-concurrency's tests passed" \
		'grep -qx "No tests failed." "$D/stdout" && grep -qx "suite: passed" "$D/stdout"'
else
	notok "sbcl-suite" "$sbcl_source not found (scripts/deps.sh installs sbcl-source)"
fi

# ---- mono-nre, mono-bus ----
if "$mcs" -unsafe -out:"$out/NullStress.exe" "$here/NullStress.cs" >"$out/mcs.log" 2>&1; then
	ok "mcs"
	both mono-nre "$mono" "$out/NullStress.exe"
	status_is mono-nre 0
	same mono-nre stdout
	same mono-nre stderr
	expect mono-nre "every NullReferenceException caught" \
		'[ "$(grep -c ": 5000 NullReferenceExceptions caught$" "$D/stdout")" = 4 ] &&
		 [ "$(tail -n 1 "$D/stdout")" = done ]'
	mapped mono-nre
	both mono-bus "$mono" "$out/NullStress.exe" bus
	status_is mono-bus 134
	# The report up to its native stack trace (addresses and gdb's thread list differ).
	same mono-bus stdout sed -n '1,/Native stacktrace:/p'
	expect mono-bus "Mono's crash report" \
		'grep -q "Native Crash Reporting" "$D/stdout" && grep -q "^Got a SIG" "$D/stdout"'
else
	notok "mcs" "see $out/mcs.log"
	show "$out/mcs.log"
fi

# ---- go-cgo ----
if (cd "$out" && GOCACHE=$out/gocache GOPATH=$out/gopath GO111MODULE=off GOFLAGS= \
	"$go" build -o "$out/nilrecover" "$here/nilrecover.go") >"$out/go.log" 2>&1; then
	ok "go build (cgo)"
	both go-cgo "$out/nilrecover"
	status_is go-cgo 0
	same go-cgo stdout
	same go-cgo stderr
	expect go-cgo "every nil dereference recovered; os/signal; cgo" \
		'[ "$(grep -c ": 4000 nil dereferences recovered$" "$D/stdout")" = 4 ] &&
		 grep -qx "os/signal: user defined signal 1" "$D/stdout" &&
		 grep -qx "cgo: 42" "$D/stdout" && [ "$(tail -n 1 "$D/stdout")" = done ]'
	expect go-cgo "a cgo binary" 'grep -q "libc.so" "$D/maps"'
	mapped go-cgo
else
	notok "go build (cgo)" "see $out/go.log"
	show "$out/go.log"
fi

# ---- python-tests ----
# Sequential, so that the order of the lines is the run's.
both python-tests "$python" -m test test_threading test_subprocess
status_is python-tests 0
same python-tests stdout sh -c 'grep -E "^(== Tests result|All [0-9]+ tests OK|Tests result)"'
expect python-tests "both suites passed" \
	'grep -qx "All 2 tests OK." "$D/stdout" && grep -qx "Tests result: SUCCESS" "$D/stdout"'

# ---- unshare-user ----
both unshare-user unshare --user --map-root-user id -u
status_is unshare-user 0
same unshare-user stdout
same unshare-user stderr
expect unshare-user "uid 0 in the new user namespace" 'grep -qx 0 "$D/stdout"'

# ---- wall times ----
echo "# wall time, seconds (this machine, side by side in one run)"
printf '#   %-16s %9s %9s %9s %10s %10s\n' workload plain shim heal shim/plain heal/plain
declare -A seen=()
for n in "${walls[@]}"; do
	[ -n "${seen[$n]:-}" ] && continue
	seen[$n]=1
	p=$(cat "$out/plain/$n/wall" 2>/dev/null) s=$(cat "$out/shim/$n/wall" 2>/dev/null)
	h=$(cat "$out/heal/$n/wall" 2>/dev/null)
	awk -v n="$n" -v p="${p:-0}" -v s="${s:-0}" -v h="${h:-0}" 'BEGIN {
		rs = 0; rh = 0
		if (p + 0 > 0) { rs = s / p; rh = h / p }
		printf "#   %-16s %9.2f %9.2f %9.2f %10.2f %10.2f\n", n, p, s, h, rs, rh }'
done

end=$(date +%s.%N)
secs=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
if [ $nfail -eq 0 ]; then
	echo "runtimes: all $npass checks passed (${secs} s)"
	exit 0
fi
echo "runtimes: $npass passed, $nfail failed (${secs} s):"
printf '  %s\n' "${failed[@]}"
exit 1
