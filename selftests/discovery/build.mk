# selftests/discovery: the discovery layer on programs linked in every mode.
# globals.ll and locals.ll (llc-14: implicit null checks, stack maps) are
# linked into a test program (check.c with -DDT_SELF) or into a library a
# host program dlopens; each asks the discovery API for its own module and
# checks every runtime function address against &f or dlsym, and the
# file-level API's names and link-time addresses.
#
#   make check-discovery
#
# Modes (lld through gcc -fuse-ld=lld, so that SAN=1 links gcc's runtime):
#   nopie-gnu, nopie-lld  -no-pie, static-model objects: addresses final
#   pie-gnu               -pie -z notext: R_X86_64_RELATIVE, TEXTREL
#   pie-gnu-relr          ... -z pack-relative-relocs: some in DT_RELR
#   pie-lld               -pie: no relocation, link-time value + load bias;
#                         globals.ll only (lld cannot link locals.ll so)
#   pie-lld-notext        -pie -z notext: R_X86_64_RELATIVE, TEXTREL
#   so-gnu, so-lld-notext -shared -z notext, dlopen'd: R_X86_64_64 against
#                         the global functions, RELATIVE for the others
# and: the ld -r object of both (names from relocations), a library
# replaced on disk after dlopen (-ESTALE), a library whose dt_load the host
# program preempts (-ERANGE).

DT_DIR := selftests/discovery
DT_OUT := $(B)/tests/discovery
DT_LLC_FLAGS := -O2 -mtriple=x86_64-unknown-linux-gnu -enable-implicit-null-checks \
	-filetype=obj
DT_LIBS = $(LIB_A) $(LIB_LIBS)

$(DT_OUT)/%-pic.o: $(DT_DIR)/%.ll | deps
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LLC     $@")
	$(Q)$(LLC) $(DT_LLC_FLAGS) -relocation-model=pic $< -o $@

$(DT_OUT)/%-static.o: $(DT_DIR)/%.ll | deps
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LLC     $@")
	$(Q)$(LLC) $(DT_LLC_FLAGS) -relocation-model=static $< -o $@

$(DT_OUT)/funcs.o: $(DT_OUT)/globals-pic.o $(DT_OUT)/locals-pic.o
	@$(if $(Q),echo "  LD -r   $@")
	$(Q)ld -r -o $@ $^

# check.c three ways: the self-test program, the dlopen host, and a host
# that exports its own dt_load.
$(DT_OUT)/check-self.o: $(DT_DIR)/check.c | deps
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(ALL_CFLAGS) -DDT_SELF -MMD -MP -c $< -o $@

$(DT_OUT)/check-host.o: $(DT_DIR)/check.c | deps
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(ALL_CFLAGS) -MMD -MP -c $< -o $@

$(DT_OUT)/check-preempt.o: $(DT_DIR)/check.c | deps
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(ALL_CFLAGS) -DDT_PREEMPT -MMD -MP -c $< -o $@

DT_PIC := $(DT_OUT)/globals-pic.o $(DT_OUT)/locals-pic.o
DT_STATIC := $(DT_OUT)/globals-static.o $(DT_OUT)/locals-static.o

DT_EXE_MODES := nopie-gnu nopie-lld pie-gnu pie-gnu-relr pie-lld pie-lld-notext
DT_OBJS_nopie-gnu := $(DT_STATIC)
DT_LINK_nopie-gnu := -no-pie
DT_OBJS_nopie-lld := $(DT_STATIC)
DT_LINK_nopie-lld := -fuse-ld=lld -no-pie
DT_OBJS_pie-gnu := $(DT_PIC)
DT_LINK_pie-gnu := -pie -Wl,-z,notext
DT_OBJS_pie-gnu-relr := $(DT_PIC)
DT_LINK_pie-gnu-relr := -pie -Wl,-z,notext -Wl,-z,pack-relative-relocs
DT_OBJS_pie-lld := $(DT_OUT)/globals-pic.o
DT_LINK_pie-lld := -fuse-ld=lld -pie
DT_OBJS_pie-lld-notext := $(DT_PIC)
DT_LINK_pie-lld-notext := -fuse-ld=lld -pie -Wl,-z,notext

DT_SO_MODES := so-gnu so-lld-notext
DT_LINK_so-gnu := -shared -Wl,-z,notext
DT_LINK_so-lld-notext := -fuse-ld=lld -shared -Wl,-z,notext

define DT_EXE_RULE
$(DT_OUT)/dt-$(1): $(DT_OUT)/check-self.o $(DT_OBJS_$(1)) $(LIB_A)
	@$$(if $$(Q),echo "  LD      $$@")
	$$(Q)$$(CC) $$(ALL_LDFLAGS) $(DT_LINK_$(1)) -o $$@ $(DT_OUT)/check-self.o \
		$(DT_OBJS_$(1)) $$(DT_LIBS)
endef

define DT_SO_RULE
$(DT_OUT)/libdt-$(1).so: $(DT_PIC)
	@$$(if $$(Q),echo "  LD      $$@")
	$$(Q)$$(CC) $(DT_LINK_$(1)) -o $$@ $(DT_PIC)
endef

$(foreach m,$(DT_EXE_MODES),$(eval $(call DT_EXE_RULE,$(m))))
$(foreach m,$(DT_SO_MODES),$(eval $(call DT_SO_RULE,$(m))))

$(DT_OUT)/dt-host: $(DT_OUT)/check-host.o $(LIB_A)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $< $(DT_LIBS)

$(DT_OUT)/dt-preempt: $(DT_OUT)/check-preempt.o $(LIB_A)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -rdynamic -o $@ $< $(DT_LIBS)

# The corpus (selftests/progs, linked by the corpus rules above: ten modes,
# several tables per section, --gc-sections with keep-sections.ld, stack
# maps of every kind) with dt-probe.so preloaded, which checks every module
# with maps against its own symbol table before main.  The gc-nokeep files
# have no maps, by design.  With SAN=1, ASan's runtime must be preloaded
# first.
$(DT_OUT)/probe.o: $(DT_DIR)/probe.c | deps
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(ALL_CFLAGS) -MMD -MP -c $< -o $@

$(DT_OUT)/stubs.o: $(PROGS_DIR)/stubs.c | deps
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -c $< -o $@

$(DT_OUT)/dt-probe.so: $(DT_OUT)/probe.o $(DT_OUT)/stubs.o $(LIB_A)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -shared -o $@ $(DT_OUT)/probe.o $(DT_OUT)/stubs.o $(DT_LIBS)

DT_CORPUS = $(filter-out %gc-nokeep-gnu,$(PROGS_LINKED))
DT_PRELOAD = $(if $(filter 1,$(SAN)),$(shell $(CC) -print-file-name=libasan.so) )$(DT_OUT)/dt-probe.so

DT_ALL = $(foreach m,$(DT_EXE_MODES),$(DT_OUT)/dt-$(m)) \
	$(foreach m,$(DT_SO_MODES),$(DT_OUT)/libdt-$(m).so) \
	$(DT_OUT)/dt-host $(DT_OUT)/dt-preempt $(DT_OUT)/funcs.o \
	$(DT_OUT)/dt-probe.so $(DT_CORPUS)

.PHONY: check-discovery
check-discovery: $(DT_ALL)
	$(Q)selftests/discovery/run.sh $(DT_OUT) "$(DT_EXE_MODES)" "$(DT_SO_MODES)" \
		"$(DT_PRELOAD)" "$(DT_CORPUS)"
