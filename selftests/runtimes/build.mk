# Real runtimes that install their own SIGSEGV handlers, run without and
# with libfaultline-preload.so (selftests/runtimes/): Debian's OpenJDK 17
# (NullPointerExceptions from C2 code in several threads, StackOverflowError,
# a fatal error report), Node.js (WebAssembly out-of-bounds traps in V8's
# guard regions), CPython (faulthandler; children dying of SIGSEGV).  The
# runs must print the same and exit the same; a third run has the shim and
# healing on (FAULTLINE_HEAL_AFTER=1).  Java sources are compiled
# at test time; runs and logs are in $(B)/tests/runtimes/.  About 10 s.

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
