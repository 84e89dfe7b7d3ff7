# Every exported function has a man page, every .so link a target.
#
#   make check-docs

.PHONY: check-docs
check-docs:
	$(Q)selftests/docs/check-man.sh
