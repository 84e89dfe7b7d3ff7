# selftests/patch: code patching (lib/patch/, the SIGTRAP side in
# lib/dispatch/trap.c).  One small program per property: rewrites while
# threads call the code, what is refused (and changes nothing), SIGTRAP
# chaining to the application's handlers, patching without membarrier.
#
#   make check-patch   the tests, then again built with ASan + UBSan
#                      (SAN=1 runs only that build)

PT_DIR := selftests/patch
PT_OUT := $(B)/tests/patch
PT_SRCS := $(wildcard $(PT_DIR)/*.c)
PT_OBJS := $(patsubst %.c,$(B)/obj/%.o,$(PT_SRCS))
PT_BINS := $(patsubst $(PT_DIR)/%.c,$(PT_OUT)/%,$(PT_SRCS))
.SECONDARY: $(PT_OBJS)

$(PT_OUT)/%: $(B)/obj/$(PT_DIR)/%.o $(LIB_A)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -pthread -o $@ $< $(LIB_A) $(LIB_LIBS)

.PHONY: check-patch
# The sanitizer build rewrites 10,000 times: it runs several times slower.
check-patch: $(PT_BINS)
	$(Q)$(PT_DIR)/run.sh $(PT_OUT) $(if $(filter 1,$(SAN)),10000)
ifneq ($(SAN),1)
	$(Q)$(MAKE) --no-print-directory SAN=1 check-patch
endif
