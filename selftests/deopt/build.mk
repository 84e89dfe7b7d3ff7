# selftests/deopt: deoptimization (lib/deopt/: __llvm_deoptimize,
# fl_stackmap_record_at, fl_location_read; deopt.h).  One small program per
# property (run.sh):
#
#   widened_once.sh                      the check-widening examples (widen.ll,
#                                        range.ll) after opt-14 guard-widening and
#                                        lower-guard-intrinsic keep one widened
#                                        check, with the first guard's state: one
#                                        compare in widen's code, two in range's
#   widening_matches_unoptimized         ... and, compiled with a C interpreter as
#                                        the handler, behave as the unoptimized
#                                        program for every length (and i)
#   deopt_values_every_kind_and_size_*   values.ll at -O0..-O3, deopt values spilled
#                                        and in registers, linked non-PIE, PIE and
#                                        as a shared library: every value decoded
#                                        as passed, every kind and size seen, the
#                                        caller's callee-saved registers restored
#   returns_every_type                   i32, i64, pointer, float, double, void
#   threads_deopt_at_once                8 threads, JIT stack maps registered and
#                                        unregistered meanwhile
#   deopt_in_a_signal_handler            a signal handler's callee deoptimizes
#   no_handler_aborts_naming_the_site    no handler: the message, then SIGABRT
#   record_at_and_locations_refuse_bad_input
#                                        fl_stackmap_record_at finds every record of
#                                        a JIT registration and nothing else; bad
#                                        stack maps and locations get clear errors
#   eh_frame_checked_before_registration a JIT's .eh_frame registered with libunwind
#                                        while its module is; malformed ones refused
#                                        with clear errors, nothing registered
#   deopt_from_mcjit_code                returns.ll and values.ll compiled by MCJIT
#                                        (selftests/jit/mcjit.c) and registered with
#                                        their .eh_frame deoptimize as linked code
#                                        does; code registered where unregistered
#                                        code was is unwound with its own frame
#   deopt_left_by_longjmp_keeps_memory_flat
#                                        100,000 deoptimizations with 70 deopt values
#                                        (a mapped array) left by longjmp, and
#                                        10,000 that deoptimize again in the
#                                        handler: RSS flat, the values right
#   deopt_left_by_exception_keeps_memory_flat
#                                        the same, left by a C++ exception (a C++
#                                        program): RSS flat, destructors run
#   cxx_exceptions_stay_with_libgcc_s    a C program's C++ library (cxx_unwind.cc)
#                                        throws, rethrows and has a thread cancelled,
#                                        without faultline, under the shim and linked
#                                        with libfaultline.so first: libgcc_s's
#                                        _Unwind_* unwind it in each, not libunwind's
#
#   make check-deopt   the tests, then again built with ASan + UBSan (SAN=1
#                      runs only that build)

DEOPT_DIR := selftests/deopt
DEOPT_OUT := $(B)/tests/deopt
# The IR is compiled for the ARCH built (make ARCH=aarch64: llc-14
# -mtriple=aarch64-linux-gnu, whose bl __llvm_deoptimize lib/deopt/aarch64/
# takes).
DEOPT_TRIPLE_x86_64 := x86_64-unknown-linux-gnu
DEOPT_TRIPLE_aarch64 := aarch64-linux-gnu
DEOPT_LLC := $(LLC) -mtriple=$(DEOPT_TRIPLE_$(ARCH)) -filetype=obj
DEOPT_VARIANTS := O0_stack O1_stack O2_stack O3_stack O0_reg O1_reg O2_reg O3_reg

# values.ll, one copy per variant (its functions renamed) and relocation model.
# $(1) variant (O<level>_<stack|reg>), $(2) static|pic
define DEOPT_VALUES_RULE
$(DEOPT_OUT)/ll/values-$(1)-$(2).o: $(DEOPT_DIR)/values.ll | deps
	@mkdir -p $$(@D)
	@$$(if $$(Q),echo "  LLC     $$@")
	$$(Q)sed 's/@values\b/@values_$(1)/g; s/@keeps\b/@keeps_$(1)/g' $$< | \
		$$(DEOPT_LLC) -$(firstword $(subst _, ,$(1))) -relocation-model=$(2) \
		$(if $(filter %_reg,$(1)),-use-registers-for-deopt-values) -o $$@
endef
$(foreach v,$(DEOPT_VARIANTS),$(foreach m,static pic,$(eval $(call DEOPT_VALUES_RULE,$(v),$(m)))))
deopt_values = $(foreach v,$(DEOPT_VARIANTS),$(DEOPT_OUT)/ll/values-$(v)-$(1).o)

# The check-widening examples: opt-14 as the seed says, then llc-14.
$(DEOPT_OUT)/ll/%.opt.ll: $(DEOPT_DIR)/%.ll | deps
	@mkdir -p $(@D)
	@$(if $(Q),echo "  OPT     $@")
	$(Q)opt-14 -S -passes='guard-widening,lower-guard-intrinsic' $< -o $@

$(DEOPT_OUT)/ll/widen.o $(DEOPT_OUT)/ll/range.o: $(DEOPT_OUT)/ll/%.o: $(DEOPT_OUT)/ll/%.opt.ll
	@$(if $(Q),echo "  LLC     $@")
	$(Q)$(DEOPT_LLC) -O2 -relocation-model=static $< -o $@

$(DEOPT_OUT)/ll/returns.o: $(DEOPT_DIR)/returns.ll | deps
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LLC     $@")
	$(Q)$(DEOPT_LLC) -O2 -relocation-model=static -use-registers-for-deopt-values $< -o $@

$(DEOPT_OUT)/ll/many_values.o: $(DEOPT_DIR)/many_values.ll | deps
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LLC     $@")
	$(Q)$(DEOPT_LLC) -O2 -relocation-model=static $< -o $@

DEOPT_RETURNS_BINS := $(DEOPT_OUT)/returns_every_type $(DEOPT_OUT)/threads_deopt_at_once \
	$(DEOPT_OUT)/deopt_in_a_signal_handler $(DEOPT_OUT)/no_handler_aborts_naming_the_site
DEOPT_VALUES := $(DEOPT_OUT)/deopt_values_every_kind_and_size
DEOPT_JIT := $(DEOPT_OUT)/deopt_from_mcjit_code
DEOPT_BINS := $(DEOPT_OUT)/widening_matches_unoptimized $(DEOPT_RETURNS_BINS) \
	$(DEOPT_OUT)/record_at_and_locations_refuse_bad_input \
	$(DEOPT_OUT)/eh_frame_checked_before_registration $(DEOPT_JIT) \
	$(DEOPT_OUT)/deopt_left_by_longjmp_keeps_memory_flat \
	$(DEOPT_OUT)/deopt_left_by_exception_keeps_memory_flat \
	$(DEOPT_VALUES)_nopie $(DEOPT_VALUES)_pie $(DEOPT_VALUES)_shared
# -lunwind: two tests ask libunwind themselves whether faultline's
# registration of JIT code is seen (the same copy, lib/table/libunwind.c).
DEOPT_LIBS = $(LIB_A) $(LIB_LIBS) -lunwind -ldl -pthread
.SECONDARY: $(call deopt_values,static) $(call deopt_values,pic) \
	$(DEOPT_OUT)/ll/widen.opt.ll $(DEOPT_OUT)/ll/range.opt.ll \
	$(DEOPT_OUT)/ll/widen.o $(DEOPT_OUT)/ll/range.o $(DEOPT_OUT)/ll/returns.o \
	$(DEOPT_OUT)/ll/many_values.o \
	$(patsubst $(DEOPT_OUT)/%,$(B)/obj/$(DEOPT_DIR)/%.o,$(DEOPT_RETURNS_BINS))

$(DEOPT_OUT)/widening_matches_unoptimized: $(B)/obj/$(DEOPT_DIR)/widening_matches_unoptimized.o \
		$(DEOPT_OUT)/ll/widen.o $(DEOPT_OUT)/ll/range.o $(LIB_A)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -no-pie -o $@ $(filter %.o,$^) $(DEOPT_LIBS)

$(DEOPT_OUT)/record_at_and_locations_refuse_bad_input $(DEOPT_OUT)/eh_frame_checked_before_registration: \
		$(DEOPT_OUT)/%: $(B)/obj/$(DEOPT_DIR)/%.o $(LIB_A)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $(filter %.o,$^) $(DEOPT_LIBS)

$(DEOPT_OUT)/deopt_left_by_longjmp_keeps_memory_flat: \
		$(B)/obj/$(DEOPT_DIR)/deopt_left_by_longjmp_keeps_memory_flat.o \
		$(DEOPT_OUT)/ll/many_values.o $(LIB_A)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -no-pie -o $@ $(filter %.o,$^) $(DEOPT_LIBS)

# A C++ program: its handler throws through the deoptimized frame.
$(DEOPT_OUT)/deopt_left_by_exception_keeps_memory_flat: \
		$(DEOPT_DIR)/deopt_left_by_exception_keeps_memory_flat.cc \
		$(DEOPT_OUT)/ll/many_values.o $(LIB_A)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CXX     $@")
	$(Q)g++ -O2 -g -Wall -Wextra -Werror -Iinclude $(SANFLAGS) -no-pie -o $@ \
		$(filter %.cc %.o,$^) $(DEOPT_LIBS)

# -rdynamic: MCJIT resolves __llvm_deoptimize and opaque in the program.
$(DEOPT_JIT): $(B)/obj/$(DEOPT_DIR)/deopt_from_mcjit_code.o $(B)/obj/selftests/jit/mcjit.o $(LIB_A)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -rdynamic -o $@ $(filter %.o,$^) $(DEOPT_LIBS) $(JIT_LLVM_LIBS)

$(DEOPT_RETURNS_BINS): $(DEOPT_OUT)/%: $(B)/obj/$(DEOPT_DIR)/%.o $(DEOPT_OUT)/ll/returns.o $(LIB_A)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -no-pie -o $@ $(filter %.o,$^) $(DEOPT_LIBS)

# -rdynamic: the test finds each variant with dlsym.  GNU ld needs -z notext
# for the stack maps' relocations in PIE and shared code (selftests/progs).
$(DEOPT_VALUES)_nopie: $(B)/obj/$(DEOPT_DIR)/deopt_values_every_kind_and_size.o \
		$(call deopt_values,static) $(LIB_A)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -no-pie -rdynamic -o $@ $(filter %.o,$^) $(DEOPT_LIBS)

$(DEOPT_VALUES)_pie: $(B)/obj/$(DEOPT_DIR)/deopt_values_every_kind_and_size.o \
		$(call deopt_values,pic) $(LIB_A)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -pie -Wl,-z,notext -rdynamic -o $@ $(filter %.o,$^) $(DEOPT_LIBS)

$(DEOPT_OUT)/libdeoptvalues.so: $(call deopt_values,pic)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -shared -Wl,-z,notext -Wl,-soname,$(@F) -o $@ $^

# The variants call back the program's opaque(): -rdynamic exports it.  The
# program names no symbol of the library (dlsym finds them): --no-as-needed.
$(DEOPT_VALUES)_shared: $(B)/obj/$(DEOPT_DIR)/deopt_values_every_kind_and_size.o \
		$(DEOPT_OUT)/libdeoptvalues.so $(LIB_A)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -pie -rdynamic -Wl,-rpath,'$$ORIGIN' -o $@ $(filter %.o,$^) \
		-Wl,--no-as-needed $(DEOPT_OUT)/libdeoptvalues.so -Wl,--as-needed $(DEOPT_LIBS)

# cxx_exceptions_stay_with_libgcc_s: the C++ code is a library, so that
# the program does not need libgcc_s itself (--no-as-needed keeps
# libfaultline.so, whose functions only the -DLINKED program calls, first).
$(DEOPT_OUT)/libcxx_unwind.so: $(DEOPT_DIR)/cxx_unwind.cc | deps
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CXX     $@")
	$(Q)g++ -O2 -g -fPIC -shared -Wall -Wextra -Werror $(SANFLAGS) -pthread \
		-Wl,-soname,$(@F) -o $@ $<

$(DEOPT_OUT)/cxx_unwind_plain: $(DEOPT_DIR)/cxx_unwind_main.c $(DEOPT_OUT)/libcxx_unwind.so
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -Wl,-rpath,'$$ORIGIN' -o $@ $< \
		$(DEOPT_OUT)/libcxx_unwind.so -ldl

# The loader finds libfaultline.so by its soname, beside the program.
$(DEOPT_OUT)/libfaultline.so.0: $(LIB_SO)
	@mkdir -p $(@D)
	$(Q)ln -sf $(abspath $(LIB_SO)) $@

$(DEOPT_OUT)/cxx_unwind_linked: $(DEOPT_DIR)/cxx_unwind_main.c $(DEOPT_OUT)/libcxx_unwind.so \
		$(DEOPT_OUT)/libfaultline.so.0
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(ALL_CFLAGS) -DLINKED $(ALL_LDFLAGS) -Wl,-rpath,'$$ORIGIN' -o $@ $< \
		-Wl,--no-as-needed $(LIB_SO) $(DEOPT_OUT)/libcxx_unwind.so -ldl

DEOPT_CXX_BINS := $(DEOPT_OUT)/cxx_unwind_plain $(DEOPT_OUT)/cxx_unwind_linked
# Under the sanitizers the shim needs ASan's runtime loaded before it.
DEOPT_PRELOAD = $(if $(filter 1,$(SAN)),$(shell $(CC) -print-file-name=libasan.so) )$(abspath $(PRELOAD_SO))

.PHONY: check-deopt
check-deopt: $(DEOPT_BINS) $(DEOPT_CXX_BINS) $(PRELOAD_SO) $(DEOPT_OUT)/ll/widen.opt.ll \
		$(DEOPT_OUT)/ll/range.opt.ll
	$(Q)LLVM_READELF=$(LLVM_READELF) LLVM_OBJDUMP=$(LLVM_OBJDUMP) \
		DEOPT_PRELOAD="$(DEOPT_PRELOAD)" \
		$(DEOPT_DIR)/run.sh $(DEOPT_OUT) $(if $(filter 1,$(SAN)),2000)
ifneq ($(SAN),1)
	$(Q)$(MAKE) --no-print-directory SAN=1 check-deopt
endif

# make check-deopt-aarch64-user: the deopt and gc tests that need no
# userfaultfd, bpf or perf, built for AArch64 (make ARCH=aarch64, under
# build/aarch64/) and run under qemu-user (RUN_TARGET: scripts/qemu-user.sh)
# by selftests/deopt/run_user.sh, which says what it does not run and why.
# From another ARCH it makes itself with ARCH=aarch64.
DEOPT_USER_BINS := $(DEOPT_OUT)/widening_matches_unoptimized $(DEOPT_RETURNS_BINS) \
	$(DEOPT_VALUES)_nopie $(DEOPT_VALUES)_pie $(DEOPT_VALUES)_shared \
	$(DEOPT_OUT)/record_at_and_locations_refuse_bad_input \
	$(DEOPT_OUT)/eh_frame_checked_before_registration
# selftests/gc's (its build.mk, read after this one, has their rules).
DEOPT_USER_GC_BINS := $(foreach v,$(DEOPT_VARIANTS),$(B)/tests/gc/moved_roots_keep_results_$(v)) \
	$(B)/tests/gc/walk_refuses_bad_input $(B)/tests/gc/signal_frame_is_the_context

.PHONY: check-deopt-aarch64-user
ifeq ($(ARCH),aarch64)
check-deopt-aarch64-user: $(DEOPT_USER_BINS) $(DEOPT_USER_GC_BINS) $(DEOPT_OUT)/ll/widen.opt.ll \
		$(DEOPT_OUT)/ll/range.opt.ll
	$(Q)LLVM_READELF=$(LLVM_READELF) LLVM_OBJDUMP=$(LLVM_OBJDUMP) \
		$(RUN_TARGET) $(DEOPT_DIR)/run_user.sh $(DEOPT_OUT) $(B)/tests/gc
else
check-deopt-aarch64-user:
	$(Q)$(MAKE) --no-print-directory ARCH=aarch64 check-deopt-aarch64-user
endif
