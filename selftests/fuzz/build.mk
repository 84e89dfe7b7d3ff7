# libFuzzer targets (selftests/fuzz/): the format layer's fault map, stack
# map and .eh_frame parsers, the discovery layer's ELF reader, and the
# protocol's message decoder, region header check and ring consumer, and the
# process's side of a point request (fuzz_request) and of a healing request
# (fuzz_heal), on arbitrary bytes.
# Built by clang-14 with -fsanitize=fuzzer plus ASan and UBSan, from the
# library's sources compiled again with the same instrumentation into
# build/fuzz/obj/ (never mixed with the gcc objects).
#
#   make fuzz         run each target for FUZZ_SECONDS (default 300)
#   make check-fuzz   run each for FUZZ_SMOKE_SECONDS (default 20): fails on a
#                     crash, a sanitizer report, a leak, an input that takes
#                     longer than FUZZ_TIMEOUT seconds, or a broken invariant
#
# Runs start from build/fuzz/corpus-NAME/, a copy of the seeds in
# selftests/fuzz/corpus/NAME/ (regenerate them with make-seeds.sh, or
# make-proto-seeds.sh for proto); findings
# go to build/fuzz/artifacts/, logs to build/fuzz/logs/ (see run.sh).

FUZZ_SECONDS ?= 300
FUZZ_SMOKE_SECONDS ?= 20
FUZZ_TIMEOUT ?= 60
FUZZ_OUT := build/fuzz
# NAME:MAX_LEN.  Sections of a few KiB reach every path; ELF files need
# room for headers, section tables and a few sections; messages up to a
# MODULE_ADD with the longest name.
FUZZ_TARGETS := faultmap:8192 stackmap:8192 ehframe:4096 elf:65536 proto:8192 request:1400 heal:64
FUZZ_BINS := $(foreach t,$(FUZZ_TARGETS),$(FUZZ_OUT)/fuzz_$(firstword $(subst :, ,$(t))))
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_CFLAGS = -std=gnu11 -D_GNU_SOURCE -Iinclude -Ilib $(ARCH_CFLAGS) $(WARN) -O1 -g $(FUZZ_SAN) \
	$(PKG_CFLAGS)
# Assembly is not instrumented: the library's own objects.
FUZZ_LIB_OBJS := $(patsubst %.c,$(FUZZ_OUT)/obj/%.o,$(LIB_SRCS)) \
	$(patsubst %.S,$(B)/obj/%.o,$(LIB_ASM))
FUZZ_LIB_A := $(FUZZ_OUT)/libfaultline-fuzz.a
FUZZ_OBJS := $(patsubst $(FUZZ_OUT)/%,$(FUZZ_OUT)/obj/selftests/fuzz/%.o,$(FUZZ_BINS))
# Made by a chain of pattern rules: keep them, or every make rebuilds them.
.SECONDARY: $(FUZZ_OBJS)

# The library: coverage instrumentation without libFuzzer's main.
$(FUZZ_OUT)/obj/lib/%.o: lib/%.c | deps
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CLANG   $@")
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@

$(FUZZ_OUT)/obj/selftests/fuzz/%.o: selftests/fuzz/%.c | deps
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CLANG   $@")
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer -MMD -MP -c $< -o $@

$(FUZZ_LIB_A): $(FUZZ_LIB_OBJS)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && $(AR) rcs $@ $^

$(FUZZ_OUT)/fuzz_%: $(FUZZ_OUT)/obj/selftests/fuzz/fuzz_%.o $(FUZZ_LIB_A)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CLANG) -fsanitize=fuzzer $(FUZZ_SAN) -o $@ $< $(FUZZ_LIB_A) $(LIB_LIBS) $(PKG_LIBS) -pthread

.PHONY: fuzz check-fuzz fuzz-build
fuzz-build: $(FUZZ_BINS)

fuzz: $(FUZZ_BINS)
	$(Q)FUZZ_TIMEOUT=$(FUZZ_TIMEOUT) selftests/fuzz/run.sh $(FUZZ_SECONDS) \
		$(FUZZ_OUT) $(FUZZ_TARGETS)

check-fuzz: $(FUZZ_BINS)
	$(Q)FUZZ_TIMEOUT=$(FUZZ_TIMEOUT) selftests/fuzz/run.sh $(FUZZ_SMOKE_SECONDS) \
		$(FUZZ_OUT) $(FUZZ_TARGETS)
