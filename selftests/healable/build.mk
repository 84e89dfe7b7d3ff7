# How many implicit-check sites can be healed in place: faultline healable
# over the corpus (selftests/progs/build.mk) and a random one, in every link
# mode (selftests/healable/run.sh).
#
#   make check-healable    fails below HEALABLE_MIN percent (99), naming
#                          every site that cannot be healed, with its reason
#
# The random corpus: gen-random-nullchecks.py's module (HEALABLE_FUNCTIONS
# functions, seed HEALABLE_SEED) compiled as the corpus's modules are (every
# O level, both relocation models; -function-sections), and, as llc-14 emits
# implicit checks only from -O1 on, linked at -O1, -O2 and -O3 in every link
# mode of the corpus.  Built once into $(B)/progs (about 15 s).

HEALABLE_MIN ?= 99
HEALABLE_SEED ?= 1
HEALABLE_FUNCTIONS ?= 600
HEALABLE_LINK_OPTS := O1 O2 O3

$(PROGS_OUT)/src/random.ll: selftests/progs/gen-random-nullchecks.py selftests/healable/build.mk
	@mkdir -p $(@D)
	@$(if $(Q),echo "  GEN     $@")
	$(Q)python3 $< --seed $(HEALABLE_SEED) --functions $(HEALABLE_FUNCTIONS) > $@

# The progs rules append to PROGS_OBJS and PROGS_LINKED, which the corpus
# (CORPUS_FILES, already fixed) does not see: what they add is the random one.
healable_before := $(PROGS_OBJS) $(PROGS_LINKED)
$(foreach o,$(PROGS_OPTS),$(foreach r,$(PROGS_RELOCS),\
	$(eval $(call PROGS_OBJ_RULE,random,$(o),$(r),,))))
$(foreach o,$(HEALABLE_LINK_OPTS),$(foreach r,$(PROGS_RELOCS),\
	$(eval $(call PROGS_OBJ_RULE,random,$(o),$(r),-fs,-function-sections))))
# $(1) O level, $(2) mode
healable_inputs = $(PROGS_OUT)/obj/random-$(1)-$(PROGS_RELOC_$(2))$(PROGS_FS_$(2)).o \
	$(if $(PROGS_MAIN_$(2)),$(PROGS_OUT)/obj/$(PROGS_MAIN_$(2)).o)
$(foreach o,$(HEALABLE_LINK_OPTS),$(foreach mode,$(PROGS_MODES),$(eval $(call \
	PROGS_LINK_RULE,random-$(o).$(mode),$(strip $(call healable_inputs,$(o),$(mode))),$(PROGS_CMD_$(mode))))))
HEALABLE_RANDOM := $(filter-out $(healable_before),$(PROGS_OBJS) $(PROGS_LINKED))

.PHONY: check-healable
check-healable: $(CLI) $(CORPUS_FILES) $(HEALABLE_RANDOM)
	$(Q)selftests/healable/run.sh --min $(HEALABLE_MIN) $(CLI) $(CORPUS_FILES) $(HEALABLE_RANDOM)
