# Every exported function has a man page, every alias page is a symlink to
# one, and every page renders without a warning (man -l, groff -ww).
#
#   make check-docs

.PHONY: check-docs
check-docs: | deps
	$(Q)selftests/docs/check-man.sh
