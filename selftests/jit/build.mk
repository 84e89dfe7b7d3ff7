# selftests/jit: implicit null checks in JIT code, and dispatch while the
# handler table changes under faulting threads.
#
#   make check-jit           jit: a module compiled by MCJIT (LLVM-C of LLVM
#                            14, -enable-implicit-null-checks, OptLevel 2)
#                            whose .llvm_faultmaps/.llvm_stackmaps are taken
#                            from its memory manager and passed to
#                            fl_jit_register; dispatch, counts, errors,
#                            unregistration (a NULL call then dies of
#                            SIGSEGV, in a child), registering again
#   make check-stress        stress for STRESS_SECONDS (default 30): two
#                            threads fail checks in this program and a
#                            linked library while a third dlopens/dlcloses a
#                            library (fl_refresh) and registers/unregisters
#                            MCJIT code; 0 wrong results, exact counts
#   make check-stress-tsan   the same built with ThreadSanitizer, library
#                            included, for STRESS_TSAN_SECONDS (default 10)
#
# With SAN=1 both are built with ASan + UBSan like the rest ($(B)/tests/jit).
# The TSan build compiles the library's sources again into build/tsan/
# (never mixed with the other objects).  -Wno-tsan there: gcc warns that
# TSan does not model atomic_thread_fence (the seqlocks in lib/core/log.c
# and lib/dispatch/chain.c); every field those fences order is itself
# accessed atomically, so TSan cannot report a race on them.  Under TSan,
# faultline's handler is installed with glibc's __sigaction, which TSan does
# not intercept: the kernel calls it directly (TSan's own SIGSEGV handler,
# installed at start, becomes the chain) and TSan's checks of signal
# handlers (unsafe calls, errno) do not apply to it.

JIT_DIR := selftests/jit
JIT_OUT := $(B)/tests/jit
LLVM_CONFIG := llvm-config-14
# Recursive: llvm-config runs after deps.sh has installed llvm-14-dev.
JIT_LLVM_CFLAGS = $(shell $(LLVM_CONFIG) --cflags)
JIT_LLVM_LIBS = $(shell $(LLVM_CONFIG) --ldflags --libs)
JIT_LLC_FLAGS := -O2 -relocation-model=pic -mtriple=x86_64-unknown-linux-gnu \
	-enable-implicit-null-checks -filetype=obj
STRESS_SECONDS ?= 30
STRESS_TSAN_SECONDS ?= 10

$(B)/obj/selftests/jit/%.o: ALL_CFLAGS += $(JIT_LLVM_CFLAGS)
# Made by chains of pattern rules: keep them, or every make rebuilds them.
.SECONDARY: $(JIT_OUT)/stress-keep.o $(JIT_OUT)/stress-dl.o \
	$(JIT_OUT)/libstress-keep.so $(JIT_OUT)/libstress-dl.so

$(JIT_OUT)/%.o: $(JIT_DIR)/%.ll | deps
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LLC     $@")
	$(Q)$(LLC) $(JIT_LLC_FLAGS) $< -o $@

# -z notext: the fault maps' symbolic relocations make them TEXTREL.
$(JIT_OUT)/libstress-%.so: $(JIT_OUT)/stress-%.o
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -shared -Wl,-z,notext -Wl,-soname,$(@F) -o $@ $<

$(JIT_OUT)/jit: $(B)/obj/selftests/jit/jit.o $(B)/obj/selftests/jit/mcjit.o $(LIB_A)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $(filter %.o,$^) $(LIB_A) $(LIB_LIBS) $(JIT_LLVM_LIBS)

STRESS_OBJS := $(B)/obj/selftests/jit/stress.o $(B)/obj/selftests/jit/mcjit.o \
	$(JIT_OUT)/stress-main.o
# stress-main.o is a pic-model object: -pie -z notext (RELATIVE, TEXTREL).
$(JIT_OUT)/stress: $(STRESS_OBJS) $(JIT_OUT)/libstress-keep.so \
		$(JIT_OUT)/libstress-dl.so $(LIB_A)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -pie -Wl,-z,notext -Wl,-rpath,'$$ORIGIN' -o $@ \
		$(STRESS_OBJS) $(JIT_OUT)/libstress-keep.so $(LIB_A) $(LIB_LIBS) \
		$(JIT_LLVM_LIBS) -lpthread

.PHONY: check-jit check-stress check-stress-tsan
check-jit: $(JIT_OUT)/jit
	$(Q)$(JIT_OUT)/jit

check-stress: $(JIT_OUT)/stress
	$(Q)STRESS_SECONDS=$(STRESS_SECONDS) $(JIT_OUT)/stress $(JIT_OUT)/libstress-dl.so

TSAN_OUT := build/tsan
TSAN_CFLAGS = -std=gnu11 -D_GNU_SOURCE -fPIC -Iinclude -Ilib $(ARCH_CFLAGS) $(WARN) -Wno-tsan \
	-O1 -g -fsanitize=thread $(PKG_CFLAGS)
# Assembly is not instrumented: the library's own objects.
TSAN_LIB_OBJS := $(patsubst %.c,$(TSAN_OUT)/obj/%.o,$(LIB_SRCS)) \
	$(patsubst %.S,$(B)/obj/%.o,$(LIB_ASM))
TSAN_LIB_A := $(TSAN_OUT)/lib/libfaultline-tsan.a
TSAN_JIT_OUT := $(TSAN_OUT)/tests/jit
TSAN_STRESS_OBJS := $(TSAN_OUT)/obj/selftests/jit/stress.o \
	$(TSAN_OUT)/obj/selftests/jit/mcjit.o $(JIT_OUT)/stress-main.o

$(TSAN_OUT)/obj/selftests/jit/%.o: TSAN_CFLAGS += $(JIT_LLVM_CFLAGS)

$(TSAN_OUT)/obj/%.o: %.c | deps
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(TSAN_CFLAGS) -MMD -MP -c $< -o $@

$(TSAN_LIB_A): $(TSAN_LIB_OBJS)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && $(AR) rcs $@ $^

$(TSAN_JIT_OUT)/libstress-%.so: $(JIT_OUT)/libstress-%.so
	@mkdir -p $(@D)
	$(Q)cp $< $@

$(TSAN_JIT_OUT)/stress: $(TSAN_STRESS_OBJS) $(TSAN_JIT_OUT)/libstress-keep.so \
		$(TSAN_JIT_OUT)/libstress-dl.so $(TSAN_LIB_A)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -fsanitize=thread -pie -Wl,-z,notext -Wl,-rpath,'$$ORIGIN' -o $@ \
		$(TSAN_STRESS_OBJS) $(TSAN_JIT_OUT)/libstress-keep.so $(TSAN_LIB_A) \
		$(LIB_LIBS) $(JIT_LLVM_LIBS) -lpthread

# halt_on_error: the first report fails the run (exit 66).
check-stress-tsan: $(TSAN_JIT_OUT)/stress
	$(Q)TSAN_OPTIONS="halt_on_error=1 $(TSAN_OPTIONS)" \
		STRESS_SECONDS=$(STRESS_TSAN_SECONDS) \
		$(TSAN_JIT_OUT)/stress $(TSAN_JIT_OUT)/libstress-dl.so
