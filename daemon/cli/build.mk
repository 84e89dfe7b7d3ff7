# faultline, the command-line tool (daemon/cli/).

CLI_SRCS := $(wildcard daemon/cli/*.c)
CLI_OBJS := $(patsubst %.c,$(B)/obj/%.o,$(CLI_SRCS))
CLI := $(B)/bin/faultline

# faultline healable (cmd_healable.c, heal_env.c) runs the healing planner
# (lib/patch/heal_plan.c), which decodes with Zydis.
$(B)/obj/daemon/cli/main.o: ALL_CFLAGS += -DFL_VERSION='"$(VERSION)"'
# The metrics and the JSON accessors: daemon/metrics/ (#include "metrics/...").
$(CLI_OBJS) $(METRICS_OBJS): ALL_CFLAGS += -Idaemon
$(B)/obj/daemon/cli/cmd_run.o: ALL_CFLAGS += -DFL_LIBDIR='"$(LIBDIR)"'

$(CLI): $(CLI_OBJS) $(METRICS_OBJS) $(LIB_A)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $(CLI_OBJS) $(METRICS_OBJS) $(BPF_LOADER_OBJ) $(LIB_A) $(PKG_LIBS) -lZydis

# faultline profile (cmd_profile.c, symbolize.c) loads the eBPF program
# through bpf/loader.c and its skeleton, so the tool links both and libbpf.
$(B)/obj/daemon/cli/cmd_profile.o: $(BPF_SKEL)
$(B)/obj/daemon/cli/cmd_profile.o: ALL_CFLAGS += -I$(BPF_OUT) -Ibpf $(BPF_TEST_CFLAGS)
$(CLI): PKG_LIBS += $(BPF_TEST_LIBS)
$(CLI): $(BPF_LOADER_OBJ)
