# selftests/seen: code faultline writes, made visible to unwinders and
# profilers (lib/patch/seen.h: fl_seen_add, fl_seen_remove, fl_seen_name).
# One small program per property (run.sh), each on the hand-made new code
# of seen_asm.S (seen_test.h):
#
#   unwinders_step_out_of_new_code       a thread inside registered new code (a
#                                        null path's 144 bytes pushed) and inside
#                                        its callee (16 more), interrupted by a
#                                        signal: libunwind's and backtrace()'s
#                                        walks reach main; removed, they do not
#   cxx_exception_crosses_new_code       a C++ exception thrown by the new code's
#                                        callee is caught by the original's caller;
#                                        removed, std::terminate
#   perf_map_written_only_when_ours      /tmp/perf-PID.map: created and appended
#                                        when absent; the program's own left alone
#                                        unless FAULTLINE_PERF_MAP=1; =0 never; never
#                                        through a symlink or into another user's
#                                        file; a child's own after fork
#   bad_input_registers_nothing          bad rows, len 0, no FDE, rows in two FDEs:
#                                        clear errors, no perf map line, no FDE for
#                                        either unwinder; a CFA expression with
#                                        pushed: -ENOTSUP, named but not unwindable
#   perf_report_names_hot_new_code.sh    perf record of a program whose registered
#                                        new code is hot: perf report names it
#                                        (host only: the guest has no perf)
#
#   make check-seen

SEEN_DIR := selftests/seen
SEEN_OUT := $(B)/tests/seen
SEEN_C := unwinders_step_out_of_new_code perf_map_written_only_when_ours \
	bad_input_registers_nothing hot_new_code
SEEN_BINS := $(addprefix $(SEEN_OUT)/,$(SEEN_C) cxx_exception_crosses_new_code)
# -lunwind: the tests ask libunwind themselves (the copy faultline loads,
# lib/table/libunwind.c).
SEEN_LIBS = $(LIB_A) $(LIB_LIBS) -lunwind -ldl -pthread

$(addprefix $(SEEN_OUT)/,$(SEEN_C)): $(SEEN_OUT)/%: $(B)/obj/$(SEEN_DIR)/%.o \
		$(B)/obj/$(SEEN_DIR)/seen_asm.o $(LIB_A)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $(filter %.o,$^) $(SEEN_LIBS)

$(SEEN_OUT)/cxx_exception_crosses_new_code: $(SEEN_DIR)/cxx_exception_crosses_new_code.cc \
		$(B)/obj/$(SEEN_DIR)/seen_asm.o $(LIB_A)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CXX     $@")
	$(Q)g++ -O2 -g -Wall -Wextra -Werror -Iinclude -Ilib $(ARCH_CFLAGS) $(SANFLAGS) -o $@ \
		$(filter %.cc %.o,$^) $(SEEN_LIBS)

.PHONY: check-seen
check-seen: $(SEEN_BINS)
	$(Q)$(SEEN_DIR)/run.sh $(SEEN_OUT)
