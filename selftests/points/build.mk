# selftests/points: patch points and stack map shadows (lib/patch/points.c,
# include/faultline/points.h).  One small program per property, each with
# the LLVM IR of the same name compiled by llc-14 (static model, linked
# -no-pie: a patch point's call target is an absolute address in .text):
# rewrites while threads call the code, a thread in the way of a boundary
# move, what is refused (and changes nothing), invalidated frames landing
# in the runtime's entry, the records of every table of a program linked
# from several objects (several_tables_*.ll); and patch points in MCJIT
# code, also of code registered with a stack map alone (no .ll: their IR
# is compiled at run time by selftests/jit/mcjit.c).
#
#   make check-points  the tests, then again built with ASan + UBSan
#                      (SAN=1 runs only that build)

PTS_DIR := selftests/points
PTS_OUT := $(B)/tests/points
PTS_LLC_FLAGS := -O2 -relocation-model=static -mtriple=x86_64-unknown-linux-gnu \
	-filetype=obj
PTS_LL := $(wildcard $(PTS_DIR)/*.ll)
# several_tables_*.ll: the objects of one program, each with its own table.
PTS_TABLES_LL := $(wildcard $(PTS_DIR)/several_tables_*.ll)
PTS_TABLES := $(PTS_OUT)/records_of_every_table_are_placed
PTS_LL_BINS := $(patsubst $(PTS_DIR)/%.ll,$(PTS_OUT)/%,$(filter-out $(PTS_TABLES_LL),$(PTS_LL)))
PTS_JIT := $(PTS_OUT)/jit_patch_points_are_rewritten $(PTS_OUT)/jit_stackmap_only_points_work
PTS_BINS := $(PTS_LL_BINS) $(PTS_TABLES) $(PTS_JIT)
.SECONDARY: $(patsubst $(PTS_DIR)/%.ll,$(PTS_OUT)/ll/%.o,$(PTS_LL)) \
	$(patsubst $(PTS_OUT)/%,$(B)/obj/$(PTS_DIR)/%.o,$(PTS_BINS))

$(PTS_OUT)/ll/%.o: $(PTS_DIR)/%.ll | deps
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LLC     $@")
	$(Q)$(LLC) $(PTS_LLC_FLAGS) $< -o $@

$(PTS_LL_BINS): $(PTS_OUT)/%: $(B)/obj/$(PTS_DIR)/%.o $(PTS_OUT)/ll/%.o $(LIB_A)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -no-pie -pthread -o $@ $(filter %.o,$^) $(LIB_A) $(LIB_LIBS)

# The objects in the order of their .ll names: the first table first.
$(PTS_TABLES): $(B)/obj/$(PTS_DIR)/records_of_every_table_are_placed.o \
		$(patsubst $(PTS_DIR)/%.ll,$(PTS_OUT)/ll/%.o,$(PTS_TABLES_LL)) $(LIB_A)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -no-pie -pthread -o $@ $(filter %.o,$^) $(LIB_A) $(LIB_LIBS)

$(PTS_JIT): $(PTS_OUT)/%: $(B)/obj/$(PTS_DIR)/%.o $(B)/obj/selftests/jit/mcjit.o $(LIB_A)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -pthread -o $@ $(filter %.o,$^) $(LIB_A) $(LIB_LIBS) \
		$(JIT_LLVM_LIBS)

.PHONY: check-points
# The sanitizer build rewrites 10,000 times: it runs several times slower.
check-points: $(PTS_BINS)
	$(Q)$(PTS_DIR)/run.sh $(PTS_OUT) $(if $(filter 1,$(SAN)),10000)
ifneq ($(SAN),1)
	$(Q)$(MAKE) --no-print-directory SAN=1 check-points
endif
