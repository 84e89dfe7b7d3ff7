# selftests/patch: code patching (lib/patch/, the SIGTRAP side in
# lib/dispatch/trap.c).  One small program per property: rewrites while
# threads call the code, what is refused (and changes nothing), SIGTRAP
# chaining to the application's handlers, patching without membarrier;
# and what a program must not notice (issue 26): blocking calls never cut
# short, the EINTR race counted, 1,000 threads, workers that block
# signals, the program's own traps, raw fork, a pid namespace without its
# /proc, a denied thread listing or membarrier, a stack in a huge mapping,
# gdb.
#
#   make check-patch   the tests, then again built with ASan + UBSan
#                      (SAN=1 runs only that build)

PT_DIR := selftests/patch
PT_OUT := $(B)/tests/patch
# sigtrap_program is an unmodified program: it links nothing of faultline.
PT_PROG := $(PT_OUT)/sigtrap_program
PT_SRCS := $(filter-out $(PT_DIR)/sigtrap_program.c,$(wildcard $(PT_DIR)/*.c))
PT_OBJS := $(patsubst %.c,$(B)/obj/%.o,$(PT_SRCS))
PT_BINS := $(patsubst $(PT_DIR)/%.c,$(PT_OUT)/%,$(PT_SRCS))
.SECONDARY: $(PT_OBJS)

$(PT_OUT)/%: $(B)/obj/$(PT_DIR)/%.o $(LIB_A)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -pthread -o $@ $< $(LIB_A) $(LIB_LIBS) $(PT_LIBS)

# Libraries a test needs beyond libfaultline's.
$(PT_OUT)/blocking_calls_are_never_cut_short: PT_LIBS = $(shell pkg-config --libs liburing)

# The shim's mask interposers, and the application's own mask calls in a
# library of their own (toggle/, libtoggle.so beside the test).
PT_TOGGLE := $(PT_OUT)/sigtrap_blocked_around_each_call_under_the_shims_mask
$(PT_OUT)/libtoggle.so: $(B)/obj/$(PT_DIR)/toggle/toggle.o
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -shared -o $@ $<
$(PT_TOGGLE): $(B)/obj/lib/preload/mask.o $(B)/obj/lib/preload/threads.o $(PT_OUT)/libtoggle.so
$(PT_TOGGLE): PT_LIBS = $(B)/obj/lib/preload/mask.o $(B)/obj/lib/preload/threads.o \
	-L$(PT_OUT) -ltoggle \
	-Wl,-rpath,'$$ORIGIN' -ldl

$(PT_PROG): $(B)/obj/$(PT_DIR)/sigtrap_program.o
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $<

.PHONY: check-patch
# The sanitizer build rewrites 10,000 times: it runs several times slower.
check-patch: $(PT_BINS) $(PT_PROG) $(PRELOAD_SO)
	$(Q)$(PT_DIR)/run.sh $(PT_OUT) $(PRELOAD_SO) $(if $(filter 1,$(SAN)),10000)
ifneq ($(SAN),1)
	$(Q)$(MAKE) --no-print-directory SAN=1 check-patch
endif
