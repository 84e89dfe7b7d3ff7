# The layers (docs/architecture.md): scripts/layers.sh derives the dependency
# graph between lib/'s directories, bpf/, the CLI and the daemon's files from
# the objects' symbols (nm) and the sources' includes, and fails on a circle
# or on an edge the document's allowed-edges block does not list.  -v prints
# every edge.
#
#   make check-layers

.PHONY: check-layers
check-layers: $(LIB_OBJS) $(PRELOAD_OBJS) $(BPF_LOADER_OBJ) $(CLI_OBJS) $(FLD_OBJS)
	$(Q)scripts/layers.sh $(B)/obj docs/architecture.md
