# selftests/gc: the statepoint example (fl_stack_walk, deopt.h).  One small
# program per property (run.sh):
#
#   moved_roots_keep_results_*    workload.ll, through opt-14
#                                 rewrite-statepoints-for-gc and llc-14 at
#                                 -O0..-O3, references spilled (stack) or in
#                                 callee-saved registers (reg), gives the
#                                 right results while a moving collector
#                                 (heap.c, collector.c) runs at every
#                                 safepoint: called from C, from IR, and from
#                                 a signal handler (runs.c)
#   moved_roots_in_mcjit_code     the same, workload.ll compiled by MCJIT
#                                 (selftests/jit/mcjit.c) and registered
#                                 with its stack map and .eh_frame
#   walk_refuses_bad_input        fl_stack_walk's errors (no callback, bad
#                                 start, a context that is not a signal
#                                 handler's, before fl_init); what the walk
#                                 yields and skips, and the callback's stop
#   walk_ends_at_a_frame_it_cannot_step_out_of
#                                 JIT code whose CFA libunwind cannot
#                                 compute: -ENODATA (the same code with
#                                 plain rules: walked to the end)
#   walk_gives_up_past_max_frames JIT code with an ordinary frame, over a
#                                 stack of its own frames one past another:
#                                 FL_WALK_MAX_FRAMES of them walked to the
#                                 end, one more: -ELOOP
#   signal_frame_is_the_context   from a signal context, the interrupted
#                                 frame's registers are the context's, and a
#                                 write to one is what the code sees next
#                                 (sigframe.ll, llc-14 -O0..-O3)
#
#   make check-gc   the tests, then again built with ASan + UBSan (SAN=1
#                   runs only that build)

GC_DIR := selftests/gc
GC_OUT := $(B)/tests/gc
GC_VARIANTS := O0_stack O1_stack O2_stack O3_stack O0_reg O1_reg O2_reg O3_reg
# Interior pointers are relocated, not recomputed from their base.
GC_OPT := opt-14 -passes=rewrite-statepoints-for-gc -spp-rematerialization-threshold=0
# The reg variants: up to 4 references kept in callee-saved registers.
GC_REG_FLAGS := -max-registers-for-gc-values=4 -fixup-allow-gcptr-in-csr

$(GC_OUT)/ll/workload.opt.ll: $(GC_DIR)/workload.ll | deps
	@mkdir -p $(@D)
	@$(if $(Q),echo "  OPT     $@")
	$(Q)$(GC_OPT) -S $< -o $@

# $(1) variant (O<level>_<stack|reg>)
define GC_VARIANT_RULE
$(GC_OUT)/ll/workload-$(1).o: $(GC_OUT)/ll/workload.opt.ll
	@$$(if $$(Q),echo "  LLC     $$@")
	$$(Q)$$(LLC) -mtriple=$(DEOPT_TRIPLE_$(ARCH)) -filetype=obj -relocation-model=static \
		-$(firstword $(subst _, ,$(1))) $(if $(filter %_reg,$(1)),$(GC_REG_FLAGS)) $$< -o $$@

$(GC_OUT)/moved_roots_keep_results_$(1): $(B)/obj/$(GC_DIR)/moved_roots_keep_results.o \
		$(GC_OUT)/ll/workload-$(1).o $(GC_COMMON_OBJS) $(LIB_A)
	@$$(if $$(Q),echo "  LD      $$@")
	$$(Q)$$(CC) $$(ALL_LDFLAGS) -no-pie -o $$@ $$(filter %.o,$$^) $$(GC_LIBS)
endef

GC_COMMON_OBJS := $(B)/obj/$(GC_DIR)/heap.o $(B)/obj/$(GC_DIR)/collector.o \
	$(B)/obj/$(GC_DIR)/runs.o
GC_LIBS = $(LIB_A) $(LIB_LIBS) -ldl -pthread
$(foreach v,$(GC_VARIANTS),$(eval $(call GC_VARIANT_RULE,$(v))))

$(GC_OUT)/walk_refuses_bad_input: $(B)/obj/$(GC_DIR)/walk_refuses_bad_input.o \
		$(GC_OUT)/ll/workload-O2_stack.o $(GC_COMMON_OBJS) $(LIB_A)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -no-pie -o $@ $(filter %.o,$^) $(GC_LIBS)

$(GC_OUT)/walk_ends_at_a_frame_it_cannot_step_out_of: \
		$(B)/obj/$(GC_DIR)/walk_ends_at_a_frame_it_cannot_step_out_of.o $(LIB_A)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $(filter %.o,$^) $(GC_LIBS)

$(GC_OUT)/walk_gives_up_past_max_frames: \
		$(B)/obj/$(GC_DIR)/walk_gives_up_past_max_frames.o $(LIB_A)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $(filter %.o,$^) $(GC_LIBS)

# -rdynamic: MCJIT resolves the collector's functions and safepoint_fn in
# the program.
$(GC_OUT)/moved_roots_in_mcjit_code: $(B)/obj/$(GC_DIR)/moved_roots_in_mcjit_code.o \
		$(B)/obj/selftests/jit/mcjit.o $(GC_COMMON_OBJS) $(LIB_A)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -rdynamic -o $@ $(filter %.o,$^) $(GC_LIBS) $(JIT_LLVM_LIBS)

# sigframe.ll, once per -O level, its function renamed for each.
GC_LEVELS := O0 O1 O2 O3
$(GC_OUT)/ll/sigframe-%.o: $(GC_DIR)/sigframe.ll | deps
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LLC     $@")
	$(Q)sed 's/@load_after_stackmap\b/@load_after_stackmap_$*/' $< | \
		$(LLC) -mtriple=$(DEOPT_TRIPLE_$(ARCH)) -filetype=obj -relocation-model=static \
		-$* -o $@

$(GC_OUT)/signal_frame_is_the_context: $(B)/obj/$(GC_DIR)/signal_frame_is_the_context.o \
		$(foreach l,$(GC_LEVELS),$(GC_OUT)/ll/sigframe-$(l).o) $(LIB_A)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -no-pie -o $@ $(filter %.o,$^) $(GC_LIBS)

GC_BINS := $(foreach v,$(GC_VARIANTS),$(GC_OUT)/moved_roots_keep_results_$(v)) \
	$(GC_OUT)/walk_refuses_bad_input $(GC_OUT)/walk_ends_at_a_frame_it_cannot_step_out_of \
	$(GC_OUT)/walk_gives_up_past_max_frames \
	$(GC_OUT)/signal_frame_is_the_context \
	$(GC_OUT)/moved_roots_in_mcjit_code
.SECONDARY: $(GC_OUT)/ll/workload.opt.ll $(foreach v,$(GC_VARIANTS),$(GC_OUT)/ll/workload-$(v).o) \
	$(foreach l,$(GC_LEVELS),$(GC_OUT)/ll/sigframe-$(l).o)

.PHONY: check-gc
check-gc: $(GC_BINS) $(GC_OUT)/ll/workload.opt.ll
	$(Q)$(GC_DIR)/run.sh $(GC_OUT)
ifneq ($(SAN),1)
	$(Q)$(MAKE) --no-print-directory SAN=1 check-gc
endif
