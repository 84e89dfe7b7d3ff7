# The daemon's commands end to end (selftests/daemon/cli/run.sh): faultlined
# on a temporary socket, a program under faultline run failing known checks,
# then faultline stats (exact per-site counts in --json; --openmetrics and
# --prometheus read by prometheus_client's parsers), ps, sites, stackmaps,
# request, and top in a real terminal (tmux).
#
#   make check-daemon-cli

.PHONY: check-daemon-cli
check-daemon-cli: $(CLI) $(FLD) $(PRELOAD_SO) | deps
	$(Q)$(FRESH_NS) selftests/daemon/cli/run.sh $(CLI) $(FLD) $(B)/tests/daemon/cli
