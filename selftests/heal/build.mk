# selftests/heal: healing implicit null checks in place (lib/patch/heal.c,
# heal_plan.c, stubs.c; fl_site_heal(3)).  One small program per property:
# the healed corpus computes what the explicit checks compute and costs no
# signal; heal and unheal while threads run the site, counts exact;
# registers and flags through the stub, both paths; a site with no room
# for a stub is unhealable and still works; unheal gives back the compiled
# bytes and the stubs' pages.
#
# The code healed is LLVM IR compiled by llc-14 -O2: selftests/progs's
# nullchecks.ll and mixed.ll and shapes.ll here, each twice: with
# -enable-implicit-null-checks (the sites) and without (the explicit
# test/je, the reference: corpus_explicit).  Static model linked -no-pie,
# and pic linked -pie for the PIE variant of the address-space test.
#
#   make check-heal   the tests, then again built with ASan + UBSan
#                     (SAN=1 runs only that build)

HEAL_DIR := selftests/heal
HEAL_OUT := $(B)/tests/heal
HEAL_LLC_FLAGS := -O2 -mtriple=x86_64-unknown-linux-gnu -filetype=obj
HEAL_IR := selftests/progs/nullchecks.ll selftests/progs/mixed.ll $(HEAL_DIR)/shapes.ll

# $(1) IR file, $(2) variant name, $(3) llc flags
define HEAL_LL_RULE
$(HEAL_OUT)/ll/$(basename $(notdir $(1)))-$(2).o: $(1) | deps
	@mkdir -p $$(@D)
	@$$(if $$(Q),echo "  LLC     $$@")
	$$(Q)$$(LLC) $$(HEAL_LLC_FLAGS) $(3) $$< -o $$@
endef
$(foreach f,$(HEAL_IR),$(eval $(call HEAL_LL_RULE,$(f),implicit,\
	-relocation-model=static -enable-implicit-null-checks)))
$(foreach f,$(HEAL_IR),$(eval $(call HEAL_LL_RULE,$(f),explicit,-relocation-model=static)))
$(foreach f,$(HEAL_IR),$(eval $(call HEAL_LL_RULE,$(f),implicit-pic,\
	-relocation-model=pic -enable-implicit-null-checks)))

heal_ll = $(foreach f,$(HEAL_IR),$(HEAL_OUT)/ll/$(basename $(notdir $(f)))-$(1).o)
HEAL_CORPUS := $(B)/obj/$(HEAL_DIR)/corpus.o

# The programs, and what each links besides its own object and libfaultline.
HEAL_EXPLICIT := $(HEAL_OUT)/corpus_explicit
HEAL_BINS := $(HEAL_EXPLICIT) \
	$(HEAL_OUT)/healed_corpus_matches_explicit \
	$(HEAL_OUT)/heal_unheal_while_threads_call \
	$(HEAL_OUT)/registers_and_flags_survive_the_stub \
	$(HEAL_OUT)/no_room_for_a_stub_is_unhealable \
	$(HEAL_OUT)/unheal_restores_the_compiled_bytes \
	$(HEAL_OUT)/heals_wanted_at_once_share_a_change \
	$(HEAL_OUT)/stub_frames_unwind_to_main
HEAL_LINK_corpus_explicit := $(HEAL_CORPUS) $(call heal_ll,explicit)
HEAL_LINK_healed_corpus_matches_explicit := $(HEAL_CORPUS) $(call heal_ll,implicit)
HEAL_LINK_heal_unheal_while_threads_call := $(HEAL_OUT)/ll/nullchecks-implicit.o
HEAL_LINK_no_room_for_a_stub_is_unhealable := $(HEAL_CORPUS) $(call heal_ll,implicit)
HEAL_LINK_unheal_restores_the_compiled_bytes := $(HEAL_CORPUS) $(call heal_ll,implicit)
HEAL_LINK_heals_wanted_at_once_share_a_change := $(HEAL_CORPUS) $(call heal_ll,implicit)
HEAL_LINK_stub_frames_unwind_to_main := $(HEAL_OUT)/ll/nullchecks-implicit.o
# Each program's libraries besides libfaultline's.
HEAL_LIBS_stub_frames_unwind_to_main := -lunwind
# The same test, PIE: the IR in the pic model; GNU ld needs -z notext for the
# fault maps' relocations (selftests/progs/build.mk, pie-gnu).
HEAL_PIE := $(HEAL_OUT)/no_room_for_a_stub_is_unhealable_pie
.SECONDARY: $(call heal_ll,implicit) $(call heal_ll,explicit) $(call heal_ll,implicit-pic) \
	$(HEAL_CORPUS) $(patsubst $(HEAL_OUT)/%,$(B)/obj/$(HEAL_DIR)/%.o,$(HEAL_BINS))

# -rdynamic: the tests name the corpus's functions (dladdr).
.SECONDEXPANSION:
$(HEAL_BINS): $(HEAL_OUT)/%: $(B)/obj/$(HEAL_DIR)/%.o $$(HEAL_LINK_$$*) $(LIB_A)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -no-pie -rdynamic -pthread -o $@ $(filter %.o,$^) $(LIB_A) \
		$(LIB_LIBS) -ldl $(HEAL_LIBS_$*)

$(HEAL_PIE): $(B)/obj/$(HEAL_DIR)/no_room_for_a_stub_is_unhealable.o $(HEAL_CORPUS) \
		$(call heal_ll,implicit-pic) $(LIB_A)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -pie -Wl,-z,notext -rdynamic -pthread -o $@ $(filter %.o,$^) \
		$(LIB_A) $(LIB_LIBS) -ldl

# A shared object of nullchecks.ll (pic) for heals_go_with_their_module,
# which loads it, heals a site, closes it and loads it again.
HEAL_SO := $(HEAL_OUT)/libnullchecks.so
HEAL_MODULE := $(HEAL_OUT)/heals_go_with_their_module
$(HEAL_SO): $(HEAL_OUT)/ll/nullchecks-implicit-pic.o
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -shared -Wl,-z,notext -o $@ $<

$(HEAL_MODULE): $(B)/obj/$(HEAL_DIR)/heals_go_with_their_module.o $(LIB_A)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -no-pie -rdynamic -pthread -o $@ $< $(LIB_A) $(LIB_LIBS) -ldl

# A C++ program: the exception its null path throws is caught by its caller.
HEAL_CXX := $(HEAL_OUT)/cxx_exception_through_healed_null_path
$(HEAL_CXX): $(HEAL_DIR)/cxx_exception_through_healed_null_path.cc \
		$(HEAL_OUT)/ll/nullchecks-implicit.o $(LIB_A)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CXX     $@")
	$(Q)g++ -O2 -g -Wall -Wextra -Werror -Wno-missing-field-initializers -Iinclude $(SANFLAGS) \
		-no-pie -pthread -o $@ \
		$(filter %.cc %.o,$^) $(LIB_A) $(LIB_LIBS) -ldl

.PHONY: check-heal
# The sanitizer build heals and unheals 10,000 times under load: several
# times slower.
check-heal: $(HEAL_BINS) $(HEAL_PIE) $(HEAL_SO) $(HEAL_MODULE) $(HEAL_CXX)
	$(Q)$(HEAL_DIR)/run.sh $(HEAL_OUT) $(if $(filter 1,$(SAN)),5000)
ifneq ($(SAN),1)
	$(Q)$(MAKE) --no-print-directory SAN=1 check-heal
endif
