# The command-line tool's behaviour (exit codes, messages, JSON, hostile
# input): selftests/cli/run.sh.
#
#   make check-cli

JSON_CHECK := $(B)/tests/json_check

$(JSON_CHECK): $(B)/obj/selftests/cli/json_check.o
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(PKG_LIBS)

.PHONY: check-cli
check-cli: $(CLI) $(JSON_CHECK) $(PRELOAD_SO) | deps
	$(Q)selftests/cli/run.sh $(CLI) $(JSON_CHECK) $(B)/tests/cli
