# selftests/region: userfaultfd regions (lib/region/, the handler side in
# lib/dispatch/region_fault.c).  One small program per feature, most run in
# both modes (default: UFFD_FEATURE_SIGBUS; FL_REGION_HELPER_THREAD):
# populating (zero pages, template), commit and reset, implicit checks past
# the committed limit (hand-written code registered with
# fl_jit_register), faults at unregistered PCs dying as without
# faultline, 8 threads at once, the helper thread's forwarded SIGBUS.
#
#   make check-region   the tests, then again built with ASan + UBSan
#                       (SAN=1 runs only that build)

RG_DIR := selftests/region
RG_OUT := $(B)/tests/region
RG_SRCS := $(wildcard $(RG_DIR)/*.c)
RG_OBJS := $(patsubst %.c,$(B)/obj/%.o,$(RG_SRCS))
RG_BINS := $(patsubst $(RG_DIR)/%.c,$(RG_OUT)/%,$(RG_SRCS))
.SECONDARY: $(RG_OBJS)

$(RG_OUT)/%: $(B)/obj/$(RG_DIR)/%.o $(LIB_A)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $< $(LIB_A) $(LIB_LIBS)

.PHONY: check-region
check-region: $(RG_BINS)
	$(Q)$(RG_DIR)/run.sh $(RG_OUT)
ifneq ($(SAN),1)
	$(Q)$(MAKE) --no-print-directory SAN=1 check-region
endif
