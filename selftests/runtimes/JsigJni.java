// faultline runtimes test (selftests/runtimes/run.sh): a JNI library that
// installs its own SIGSEGV handler, under HotSpot's libjsig (LD_PRELOAD'ed
// first), with and without libfaultline-preload.so after it.  libjsig
// promises the library that its sigaction sees the action it would have
// seen without the JVM (SIG_DFL: prev), and the JVM that its own handler
// stays first: the NullPointerExceptions of C2 code (NpeStress.work, its
// implicit null checks faulting) reach HotSpot's handler, never the
// library's (which would end the process with status 99).
public class JsigJni {
	static native String install();

	public static void main(String[] args) throws Exception {
		System.load(args[0]);
		System.out.println("the library's sigaction(SIGSEGV) saw as the previous action: "
				   + install());
		NpeStress.Result r = NpeStress.work(0, Integer.parseInt(args[1]), 50);
		System.out.println(r.npes + " NullPointerExceptions caught");
		NpeStress.leaveTraces();
		System.out.println("done");
	}
}
