# One daemon for every user (selftests/daemon/oneuser/run.sh): a system
# faultlined, root's, at the real default path /run/faultline/faultlined.sock
# (a tmpfs on /run in a mount namespace of the test's own) serves a process
# of nobody's that has no daemon of its own; a user's own daemon wins over
# it; with none, the process says where it looked.
#
#   make check-daemon-oneuser

.PHONY: check-daemon-oneuser
check-daemon-oneuser: $(CLI) $(FLD) $(PRELOAD_SO) $(E2E_OUT)/e2e-prog | deps
	$(Q)$(FRESH_NS) selftests/daemon/oneuser/run.sh $(CLI) $(FLD) $(PRELOAD_SO) \
		$(E2E_OUT)/e2e-prog
