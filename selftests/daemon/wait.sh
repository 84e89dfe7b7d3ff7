# Sourced by the daemon's test scripts (bash): waiting for what must happen.

# How long to wait for it: minutes, for QEMU's TCG on a busy machine.
WAIT_S=300

# eventually CMD...: CMD succeeds, tried again every 50 ms for up to WAIT_S.
eventually() {
	local end=$((SECONDS + WAIT_S))
	until "$@"; do
		[ $SECONDS -lt $end ] || return 1
		sleep 0.05
	done
}
