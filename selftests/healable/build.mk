# How many implicit-check sites can be healed: faultline healable over the
# corpus (selftests/progs/build.mk), a random one and a dense one, in every
# link mode (selftests/healable/run.sh).
#
#   make check-healable    fails unless every site can be healed, or its
#                          function cannot move for a reason of its own
#                          (a computed jump, exception tables, ...), each
#                          named with its reason; and below HEALABLE_MIN
#                          percent (99) in all
#
# The random corpus: gen-random-nullchecks.py's module (HEALABLE_FUNCTIONS
# functions, seed HEALABLE_SEED) compiled as the corpus's modules are (every
# O level, both relocation models; -function-sections), and, as llc-14 emits
# implicit checks only from -O1 on, linked at -O1, -O2 and -O3 in every link
# mode of the corpus.  Built once into $(B)/progs (about 15 s).

HEALABLE_MIN ?= 99
HEALABLE_SEED ?= 1
HEALABLE_FUNCTIONS ?= 600
# The dense module: accessors with 1 to 10 checks from their entry on,
# several in their first 16 bytes (gen-random-nullchecks.py --dense).
HEALABLE_DENSE_SEED ?= 2
HEALABLE_DENSE_FUNCTIONS ?= 120
HEALABLE_LINK_OPTS := O1 O2 O3

$(PROGS_OUT)/src/random.ll: selftests/progs/gen-random-nullchecks.py selftests/healable/build.mk
	@mkdir -p $(@D)
	@$(if $(Q),echo "  GEN     $@")
	$(Q)python3 $< --seed $(HEALABLE_SEED) --functions $(HEALABLE_FUNCTIONS) > $@

$(PROGS_OUT)/src/dense.ll: selftests/progs/gen-random-nullchecks.py selftests/healable/build.mk
	@mkdir -p $(@D)
	@$(if $(Q),echo "  GEN     $@")
	$(Q)python3 $< --dense --seed $(HEALABLE_DENSE_SEED) \
		--functions $(HEALABLE_DENSE_FUNCTIONS) > $@

# The progs rules append to PROGS_OBJS and PROGS_LINKED, which the corpus
# (CORPUS_FILES, already fixed) does not see: what they add is the random one.
healable_before := $(PROGS_OBJS) $(PROGS_LINKED)
HEALABLE_MODULES := random dense
$(foreach m,$(HEALABLE_MODULES),$(foreach o,$(PROGS_OPTS),$(foreach r,$(PROGS_RELOCS),\
	$(eval $(call PROGS_OBJ_RULE,$(m),$(o),$(r),,)))))
$(foreach m,$(HEALABLE_MODULES),$(foreach o,$(HEALABLE_LINK_OPTS),$(foreach r,$(PROGS_RELOCS),\
	$(eval $(call PROGS_OBJ_RULE,$(m),$(o),$(r),-fs,-function-sections)))))
# $(1) module, $(2) O level, $(3) mode
healable_inputs = $(PROGS_OUT)/obj/$(1)-$(2)-$(PROGS_RELOC_$(3))$(PROGS_FS_$(3)).o \
	$(if $(PROGS_MAIN_$(3)),$(PROGS_OUT)/obj/$(PROGS_MAIN_$(3)).o)
$(foreach m,$(HEALABLE_MODULES),$(foreach o,$(HEALABLE_LINK_OPTS),$(foreach mode,$(PROGS_MODES),\
	$(eval $(call PROGS_LINK_RULE,$(m)-$(o).$(mode),$(strip $(call \
	healable_inputs,$(m),$(o),$(mode))),$(PROGS_CMD_$(mode)))))))
HEALABLE_RANDOM := $(filter-out $(healable_before),$(PROGS_OBJS) $(PROGS_LINKED))

.PHONY: check-healable
check-healable: $(CLI) $(CORPUS_FILES) $(HEALABLE_RANDOM)
	$(Q)selftests/healable/run.sh --min $(HEALABLE_MIN) $(CLI) $(CORPUS_FILES) $(HEALABLE_RANDOM)
