# Real runtimes that install their own signal handlers, run without and
# with libfaultline-preload.so (selftests/runtimes/run.sh says what each
# workload proves): Debian's OpenJDK 17 (G1, ZGC, Shenandoah, libjsig, a
# fatal error report), Node.js, CPython (faulthandler, its test_threading
# and test_subprocess), SBCL (a threaded GC workload, sb-concurrency's
# tests), Mono, Go with cgo, unshare --user.  The runs must print the same
# and exit the same; a third run has the shim and healing on
# (FAULTLINE_HEAL_AFTER=1).  Java and C# sources are compiled, and the Go
# program built, at test time; runs and logs are in $(B)/tests/runtimes/,
# with a table of the wall times.  About 3 minutes.

RUNTIMES_OUT := $(B)/tests/runtimes
# jvm-jsig's JNI library (jsig_jni.c), built against Debian's OpenJDK 17.
RT_JAVA_HOME := /usr/lib/jvm/java-17-openjdk-amd64
RT_JNI_SO := $(RUNTIMES_OUT)/libjsig-jni.so

$(RT_JNI_SO): selftests/runtimes/jsig_jni.c | deps
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) -std=gnu11 -O2 -g $(WARN) -fPIC -shared -I$(RT_JAVA_HOME)/include \
		-I$(RT_JAVA_HOME)/include/linux $< -o $@

.PHONY: check-runtimes
check-runtimes: $(PRELOAD_SO) $(RT_JNI_SO) | deps
	$(Q)selftests/runtimes/run.sh $(PRELOAD_SO) $(RUNTIMES_OUT)
