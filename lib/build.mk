# libfaultline: every layer's .c under lib/ (docs/architecture.md), one
# archive and one shared object (exports: libfaultline.map).  The shim
# (lib/preload/) is built on it, in its own build.mk.

# Each layer's files, and those of its ARCH directory (the per-architecture
# part, e.g. lib/dispatch/x86_64/).
LIB_SRCS := $(filter-out lib/preload/%,$(wildcard lib/*/*.c lib/*/$(ARCH)/*.c))
# Assembly: the deoptimization's and the stack walk's entries (lib/deopt/ARCH/).
LIB_ASM := $(wildcard lib/*/*.S lib/*/$(ARCH)/*.S)
LIB_OBJS := $(patsubst %.c,$(B)/obj/%.o,$(LIB_SRCS)) $(patsubst %.S,$(B)/obj/%.o,$(LIB_ASM))
LIB_SO := $(B)/lib/libfaultline.so
LIB_A := $(B)/lib/libfaultline.a
LIB_MAP := lib/libfaultline.map
# The library needs libelf and Zydis; json-c is for the command-line tool.
# libunwind (the deoptimized frame's return, stack walks) is not linked: it
# is loaded with RTLD_LOCAL (lib/table/libunwind.c says why), so only its
# header is needed here, and its libunwind.so.8 at run time.
LIB_PKGS := libelf
# Zydis 4 (the patch layer's decoder) has no pkg-config file in Debian 12.
LIB_LIBS = $(shell pkg-config --libs $(LIB_PKGS)) -lZydis

$(B)/obj/%.o: %.S | deps
	@mkdir -p $(@D)
	@$(if $(Q),echo "  AS      $<")
	$(Q)$(CC) $(SANFLAGS) -MMD -MP -c $< -o $@

$(LIB_A): $(LIB_OBJS)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && $(AR) rcs $@ $^

$(LIB_SO): $(LIB_OBJS) $(LIB_MAP)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -shared -Wl,-soname,libfaultline.so.0 -Wl,--version-script=$(LIB_MAP) \
		-Wl,-z,defs $(ALL_LDFLAGS) -o $@ $(LIB_OBJS) $(LIB_LIBS)
