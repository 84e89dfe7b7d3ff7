# Unit tests (Check), one suite per test_*.c.
#
#   make check-unit

UNIT_SRCS := $(wildcard selftests/unit/*.c)
UNIT_OBJS := $(patsubst %.c,$(B)/obj/%.o,$(UNIT_SRCS))
UNIT := $(B)/tests/unit

# selftests/unit/ARCH/jit_arch.h: the architecture's hand-made JIT code.
$(B)/obj/selftests/unit/%.o: ALL_CFLAGS += $(CHECK_CFLAGS) -Iselftests/unit/$(ARCH)

$(UNIT): $(UNIT_OBJS) $(LIB_A)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $(UNIT_OBJS) $(LIB_A) $(LIB_LIBS) $(CHECK_LIBS)

.PHONY: check-unit
check-unit: $(UNIT)
	$(Q)echo "kernel: $$(uname -r) ($${VMTEST_WHERE:-$(RUN_WHERE)})"; CK_FORK=yes $(RUN_TARGET) $(UNIT)
