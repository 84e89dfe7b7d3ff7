# make install into a temporary DESTDIR: headers, libraries, pkg-config,
# man pages, exports, and the packages each goal needs.
#
#   make check-install

.PHONY: check-install
check-install: all
	$(Q)selftests/install/run.sh $(B)/tests/install
