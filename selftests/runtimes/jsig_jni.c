// SPDX-License-Identifier: MIT
/*
 * JsigJni's native half (selftests/runtimes/JsigJni.java): install()
 * sets a SIGSEGV handler of its own, as a JNI library with a crash
 * handler does, and says which action sigaction reported as the previous
 * one.  The handler ends the process with status 99: under libjsig it
 * must never run while the JVM's own faults are the JVM's.
 */
#include <jni.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	static const char msg[] = "the JNI library's SIGSEGV handler ran\n";

	(void)sig;
	(void)si;
	(void)uc;
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(98);
	_exit(99);
}

JNIEXPORT jstring JNICALL Java_JsigJni_install(JNIEnv *env, jclass cls);

JNIEXPORT jstring JNICALL Java_JsigJni_install(JNIEnv *env, jclass cls)
{
	struct sigaction sa, prev;

	(void)cls;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSEGV, &sa, &prev) != 0)
		return (*env)->NewStringUTF(env, "none (sigaction failed)");
	return (*env)->NewStringUTF(env, !(prev.sa_flags & SA_SIGINFO) &&
				    prev.sa_handler == SIG_DFL ? "SIG_DFL" : "another handler");
}
