# faultlined (daemon/faultlined/): one io_uring event loop (liburing), a
# poll(2) fallback, the protocol (session.c), the eBPF program's counts
# (kbpf*.c).  Its unit files (faultlined.service, faultlined.socket) are
# installed with @BINDIR@ replaced.

FLD_SRCS := $(wildcard daemon/faultlined/*.c)
FLD_OBJS := $(patsubst %.c,$(B)/obj/%.o,$(FLD_SRCS))
FLD := $(B)/bin/faultlined
FLD_UNITS := daemon/faultlined/faultlined.service daemon/faultlined/faultlined.socket
FLD_CFLAGS = $(shell pkg-config --cflags liburing libmicrohttpd) -Idaemon
FLD_LIBS = $(shell pkg-config --libs liburing json-c libbpf libmicrohttpd)

$(FLD_OBJS): ALL_CFLAGS += $(FLD_CFLAGS)
$(B)/obj/daemon/faultlined/main.o $(B)/obj/daemon/faultlined/query.o: ALL_CFLAGS += -DFL_VERSION='"$(VERSION)"'

$(FLD): $(FLD_OBJS) $(METRICS_OBJS) $(LIB_A)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $(FLD_OBJS) $(METRICS_OBJS) $(BPF_LOADER_OBJ) $(LIB_A) $(LIB_LIBS) $(FLD_LIBS)

$(FLD): $(BPF_LOADER_OBJ)

# faultlined's eBPF side (kbpf*.c) uses the program's maps through the skeleton.
KBPF_OBJS := $(filter $(B)/obj/daemon/faultlined/kbpf%,$(FLD_OBJS))
$(KBPF_OBJS): $(BPF_SKEL)
$(KBPF_OBJS): ALL_CFLAGS += -I$(BPF_OUT) -Ibpf $(BPF_TEST_CFLAGS)
