# The metrics exposition (daemon/metrics/): a STATS document as OpenMetrics
# or Prometheus text, and the tolerant JSON accessors it reads it with.
# faultline stats --openmetrics/--prometheus and faultlined's /metrics
# (--metrics-listen) both link it, so that the two expose the same series.

METRICS_SRCS := $(wildcard daemon/metrics/*.c)
METRICS_OBJS := $(patsubst %.c,$(B)/obj/%.o,$(METRICS_SRCS))

$(B)/obj/daemon/metrics/metrics.o: ALL_CFLAGS += -DFL_VERSION='"$(VERSION)"'
