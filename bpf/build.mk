# The eBPF program (bpf/faultline.bpf.c): CO-RE, built by clang-14 against a
# vmlinux.h dumped from this machine's BTF, and a bpftool skeleton for it.
# faultlined and faultline profile load it through the skeleton; libbpf's
# flags are BPF_TEST_CFLAGS and BPF_TEST_LIBS.
#
#   make bpf

BPF_OUT := $(B)/bpf
BPF_VMLINUX := $(BPF_OUT)/vmlinux.h
BPF_OBJ := $(BPF_OUT)/faultline.bpf.o
BPF_SKEL := $(BPF_OUT)/faultline.skel.h
BPF_CLANG_FLAGS := -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_x86 -Wall -Werror \
	-I$(BPF_OUT) -Ibpf
BPF_TEST_CFLAGS = $(shell pkg-config --cflags libbpf)
BPF_TEST_LIBS = $(shell pkg-config --libs libbpf)

$(BPF_VMLINUX): | deps
	@mkdir -p $(@D)
	@$(if $(Q),echo "  GEN     $@")
	$(Q)bpftool btf dump file /sys/kernel/btf/vmlinux format c > $@

$(BPF_OBJ): bpf/faultline.bpf.c bpf/faultline_bpf.h $(BPF_VMLINUX)
	@$(if $(Q),echo "  BPF     $@")
	$(Q)$(CLANG) $(BPF_CLANG_FLAGS) -c $< -o $@

$(BPF_SKEL): $(BPF_OBJ)
	@$(if $(Q),echo "  GEN     $@")
	$(Q)bpftool gen skeleton $< > $@

# One loader (bpf/loader.c: capabilities, open, load, attach) for faultlined
# (kbpf_load.c) and faultline profile (cmd_profile.c); both link it.
BPF_LOADER_OBJ := $(B)/obj/bpf/loader.o
$(BPF_LOADER_OBJ): $(BPF_SKEL)
$(BPF_LOADER_OBJ): ALL_CFLAGS += -I$(BPF_OUT) -Ibpf $(BPF_TEST_CFLAGS)

.PHONY: bpf
bpf: $(BPF_OBJ) $(BPF_SKEL)
