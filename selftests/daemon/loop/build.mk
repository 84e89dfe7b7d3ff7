# The daemon's transport (selftests/daemon/loop/): ping, 1,000 clients,
# floods, oversized messages, fds, clients that never read, SIGTERM, a second
# daemon, socket activation; io_uring and poll.
#
#   make check-daemon-loop

FLD_TEST_DIR := selftests/daemon/loop
FLD_TEST_OUT := $(B)/tests/daemon/loop
FLD_TEST_SRCS := $(wildcard $(FLD_TEST_DIR)/*.c)
FLD_TEST_BINS := $(patsubst $(FLD_TEST_DIR)/%.c,$(FLD_TEST_OUT)/%,$(FLD_TEST_SRCS))
.SECONDARY: $(patsubst %.c,$(B)/obj/%.o,$(FLD_TEST_SRCS))

$(FLD_TEST_OUT)/%: $(B)/obj/$(FLD_TEST_DIR)/%.o
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $<

# The transport tests run a build of the daemon that answers PING with PONG
# (selftests/daemon/echo.c, not part of faultlined) instead of speaking the
# protocol (session.c).
FLD_ECHO := $(B)/tests/daemon/faultlined-echo

$(B)/obj/selftests/daemon/main-echo.o: daemon/faultlined/main.c | deps
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(ALL_CFLAGS) $(FLD_CFLAGS) -DFL_VERSION='"$(VERSION)"' -DFLD_TRANSPORT_TEST \
		-Iselftests/daemon -Idaemon/faultlined -MMD -MP -c $< -o $@

$(B)/obj/selftests/daemon/echo.o: ALL_CFLAGS += $(FLD_CFLAGS) -Idaemon/faultlined

$(FLD_ECHO): $(filter-out %/main.o,$(FLD_OBJS)) $(METRICS_OBJS) $(B)/obj/selftests/daemon/main-echo.o \
		$(B)/obj/selftests/daemon/echo.o $(BPF_LOADER_OBJ) $(LIB_A)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIB_LIBS) $(FLD_LIBS)

.PHONY: check-daemon-loop
check-daemon-loop: $(FLD_ECHO) $(FLD_TEST_BINS)
	$(Q)$(FLD_TEST_DIR)/run.sh $(FLD_ECHO) $(FLD_TEST_OUT)
