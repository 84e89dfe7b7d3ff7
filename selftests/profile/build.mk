# faultline profile end to end (selftests/profile/run.sh, as root): exact
# counts at a labelled NULL load named by its function, a JIT's perf map
# name, HotSpot's compiled code (jcmd Compiler.perfmap), --all, and the errors.  About 20 s.
#
#   make check-profile

PROFILE_DIR := selftests/profile
PROFILE_OUT := $(B)/tests/profile
PROFILE_SRCS := $(wildcard $(PROFILE_DIR)/*.c)
PROFILE_BINS := $(patsubst $(PROFILE_DIR)/%.c,$(PROFILE_OUT)/%,$(PROFILE_SRCS))
.SECONDARY: $(patsubst %.c,$(B)/obj/%.o,$(PROFILE_SRCS))

$(PROFILE_OUT)/%: $(B)/obj/$(PROFILE_DIR)/%.o
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $<

.PHONY: check-profile
check-profile: $(CLI) $(PROFILE_BINS) | deps
	$(Q)$(FRESH_NS) $(PROFILE_DIR)/run.sh $(CLI) $(PROFILE_OUT)
