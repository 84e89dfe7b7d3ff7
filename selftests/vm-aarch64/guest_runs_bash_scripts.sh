#!/bin/bash
# The guest runs the project's bash test scripts: /bin/bash there is
# Debian's arm64 bash (unpacked with its libtinfo), and arrays and [[ ]]
# work in it.
echo "kernel: $(uname -r) $(uname -m) (${VMTEST_WHERE:-host})"
echo "bash $BASH_VERSION ($MACHTYPE)"
if [[ $MACHTYPE != aarch64-* ]]; then
	echo "FAIL guest_runs_bash_scripts: bash is built for $MACHTYPE, not aarch64"
	exit 1
fi
words=(one two three)
if [[ ${#words[@]} -ne 3 || ${words[2]} != three ]]; then
	echo "FAIL guest_runs_bash_scripts: arrays do not work"
	exit 1
fi
echo "PASS guest_runs_bash_scripts"
