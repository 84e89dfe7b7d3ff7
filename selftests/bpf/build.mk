# selftests/bpf/bpf_count.c loads the eBPF program through the skeleton and
# checks the kernel's counts of its own faults exactly.  Runs as root.
#
#   make check-bpf

BPF_TEST := $(B)/tests/bpf/bpf_count

$(B)/obj/selftests/bpf/bpf_count.o: $(BPF_SKEL)
$(B)/obj/selftests/bpf/bpf_count.o: ALL_CFLAGS += -I$(BPF_OUT) -Ibpf $(BPF_TEST_CFLAGS)

$(BPF_TEST): $(B)/obj/selftests/bpf/bpf_count.o
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $< $(BPF_TEST_LIBS)

.PHONY: check-bpf
bpf: $(BPF_TEST)

check-bpf: $(BPF_TEST)
	$(Q)$(FRESH_NS) $(BPF_TEST)
