# kbpf_procs.c's index of the kernel views by process, against a walk of
# every view, over a random sequence of views made and forgotten
# (selftests/daemon/kprocs/kprocs.c; no daemon, no eBPF).
#
#   make check-daemon-kprocs [KPROCS_SEED=S]

KPROCS_OUT := $(B)/tests/daemon/kprocs

$(B)/obj/selftests/daemon/kprocs/kprocs.o: $(BPF_SKEL)
$(B)/obj/selftests/daemon/kprocs/kprocs.o: ALL_CFLAGS += -Idaemon/faultlined -Ibpf $(BPF_TEST_CFLAGS)

$(KPROCS_OUT)/kprocs: $(B)/obj/selftests/daemon/kprocs/kprocs.o \
		$(B)/obj/daemon/faultlined/kbpf_procs.o
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^

.PHONY: check-daemon-kprocs
check-daemon-kprocs: $(KPROCS_OUT)/kprocs
	$(Q)$(KPROCS_OUT)/kprocs $(KPROCS_SEED)
