# The command-line tool's behaviour (exit codes, messages, JSON, hostile
# input): selftests/cli/run.sh.
#
#   make check-cli

JSON_CHECK := $(B)/tests/json_check

$(JSON_CHECK): $(B)/obj/selftests/cli/json_check.o
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(PKG_LIBS)

.PHONY: check-cli
# e2e-prog (selftests/daemon/e2e/build.mk, read later: spelt out here) fails
# checks a given number of times, for run --summary.
check-cli: $(CLI) $(JSON_CHECK) $(PRELOAD_SO) $(B)/tests/daemon/e2e/e2e-prog | deps
	$(Q)selftests/cli/run.sh $(CLI) $(JSON_CHECK) $(B)/tests/cli $(B)/tests/daemon/e2e/e2e-prog
