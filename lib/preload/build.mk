# libfaultline-preload.so: the shim for unmodified programs.  The library is
# linked in statically with its symbols hidden (--exclude-libs), so that the
# shim exports only what it interposes, unversioned (a versioned definition
# would not match the programs' sigaction@GLIBC_2.2.5 references).

PRELOAD_SO := $(B)/lib/libfaultline-preload.so
PRELOAD_OBJS := $(B)/obj/lib/preload/preload.o $(B)/obj/lib/preload/summary.o \
	$(B)/obj/lib/preload/mask.o $(B)/obj/lib/preload/threads.o

$(PRELOAD_SO): $(PRELOAD_OBJS) $(LIB_A)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -shared -Wl,-z,defs -Wl,--exclude-libs,ALL $(ALL_LDFLAGS) -o $@ \
		$(PRELOAD_OBJS) $(LIB_A) $(LIB_LIBS)
