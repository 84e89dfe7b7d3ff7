# faultlined --metrics-listen (selftests/daemon/metrics/run.sh): GET /metrics
# over HTTP against a program failing known checks (the same series as
# faultline stats --prometheus, OpenMetrics by Accept), the errors (405,
# 404, a bad or taken address), a load of concurrent scrapes while the
# program fails more, and hostile HTTP (fuzz_http.py) after which the
# daemon still answers, and 300 more processes (e2e-load) whose STATS
# answer is many messages long.
#
#   make check-daemon-metrics

.PHONY: check-daemon-metrics
check-daemon-metrics: $(CLI) $(FLD) $(PRELOAD_SO) $(E2E_OUT)/e2e-load | deps
	$(Q)$(FRESH_NS) selftests/daemon/metrics/run.sh $(CLI) $(FLD) $(B)/tests/daemon/metrics \
		$(E2E_OUT)/e2e-load
