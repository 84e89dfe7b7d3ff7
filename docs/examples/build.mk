# docs/examples: the examples of docs/codegen.md (LLVM 14 code generation
# for faultline: implicit null checks, link modes, --gc-sections, stack
# maps, patch points, deoptimization, MCJIT, ORC LLJIT).
#
#   make check-codegen   install into a scratch prefix, then run every
#                        command of the guide's console blocks and compare
#                        their output with the guide's, and compare every
#                        quoted excerpt with its example file
#                        (docs/examples/check.py): the guide and the
#                        examples cannot drift apart

.PHONY: check-codegen
check-codegen: all
	$(Q)docs/examples/run.sh $(B)/tests/codegen
