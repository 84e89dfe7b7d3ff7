// faultline runtimes test (selftests/runtimes/run.sh): HotSpot's own SIGSEGV
// use, run with and without libfaultline-preload.so.  Everything printed
// here is deterministic; run.sh compares it byte for byte.
//
//  - NullPointerExceptions thrown by a hot method that C2 compiles with an
//    implicit null check (a load from the null page, caught by HotSpot's
//    SIGSEGV handler), caught by a try/catch in another compiled method,
//    in several threads at once, each with HotSpot's helpful message
//    (with -XX:-OmitStackTraceInFastThrow: see work());
//  - StackOverflowError (a stack bang into the guard pages: SIGSEGV) caught
//    and reported, in the main thread and in a thread with a small stack;
//  - safepoints forced meanwhile by System.gc() (HotSpot arms its polling
//    page; compiled code polling it faults).
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

public class NpeStress {
	static final class Box {
		int v;
		Box(int v) { this.v = v; }
	}

	// The hot method: b.v is a load with C2's implicit null check.
	static int load(Box b) {
		return b.v;
	}

	static int load2(Box b, int k) {
		return b.v * k + 1;
	}

	static final class Result {
		long sum;
		int npes;
		String firstMessage;
		int withFirstMessage;	// NPEs whose message is firstMessage (not null)
	}

	static Result work(int tid, int iters, int every) {
		Result r = new Result();
		Box box = new Box(tid + 1);
		// The first half never passes null: C2 compiles the loop (OSR) and
		// work() with load() inlined, its null check implicit (the load
		// itself, an uncommon trap when it faults).  The second half passes
		// null every `every` calls: the compiled code faults, deoptimizes
		// and is recompiled with an explicit check.  By default, that code
		// would throw and catch one preallocated NullPointerException with
		// no message; run.sh turns OmitStackTraceInFastThrow off, so that
		// every NullPointerException is a new one with HotSpot's message.
		for (int i = 0; i < iters; i++) {
			Box b = (i >= iters / 2 && i % every == 0) ? null : box;
			try {
				r.sum += load(b);
				r.sum += load2(b, i & 7);
			} catch (NullPointerException e) {
				String m = e.getMessage();
				if (r.npes++ == 0)
					r.firstMessage = m;
				if (m != null && m.equals(r.firstMessage))
					r.withFirstMessage++;
			}
		}
		return r;
	}

	static int depth;

	static void recurse() {
		depth++;
		recurse();
	}

	static String overflow() {
		depth = 0;
		try {
			recurse();
			return "no StackOverflowError";
		} catch (StackOverflowError e) {
			return "StackOverflowError caught (depth > 1000: " + (depth > 1000) + ")";
		}
	}

	// What run.sh reads of the process: a copy of its maps (RT_MAPS) and
	// the names of its threads (RT_TASKS: faultline's healer is looked for).
	static void leaveTraces() throws java.io.IOException {
		String maps = System.getenv("RT_MAPS");
		if (maps != null)
			Files.copy(Path.of("/proc/self/maps"), Path.of(maps));
		String tasks = System.getenv("RT_TASKS");
		if (tasks != null) {
			StringBuilder names = new StringBuilder();
			try (var list = Files.list(Path.of("/proc/self/task"))) {
				for (Path t : (Iterable<Path>) list::iterator) {
					try {
						names.append(Files.readString(t.resolve("comm")));
					} catch (java.io.IOException e) {
						// the thread exited meanwhile
					}
				}
			}
			Files.writeString(Path.of(tasks), names.toString());
		}
	}

	public static void main(String[] args) throws Exception {
		int threads = Integer.parseInt(args[0]);
		int iters = Integer.parseInt(args[1]);
		int every = Integer.parseInt(args[2]);
		int rounds = Integer.parseInt(args[3]);

		leaveTraces();

		for (int round = 0; round < rounds; round++) {
			Result[] results = new Result[threads];
			List<Thread> ts = new ArrayList<>();
			for (int t = 0; t < threads; t++) {
				final int tid = t;
				Thread th = new Thread(() -> results[tid] = work(tid, iters, every), "npe-" + t);
				ts.add(th);
				th.start();
			}
			for (int i = 0; i < 5; i++) {
				System.gc();
				Thread.sleep(2);
			}
			for (Thread th : ts)
				th.join();
			for (int t = 0; t < threads; t++)
				System.out.printf("round %d thread %d: %d NullPointerExceptions caught, sum %d%n",
						round, t, results[t].npes, results[t].sum);
			for (int t = 0; t < threads; t++)
				System.out.printf("round %d thread %d: %d with the message: %s%n",
						round, t, results[t].withFirstMessage, results[t].firstMessage);
		}

		for (int i = 0; i < 3; i++)
			System.out.println("main: " + overflow());
		String[] small = new String[1];
		Thread th = new Thread(null, () -> {
			StringBuilder sb = new StringBuilder();
			for (int i = 0; i < 3; i++)
				sb.append(i == 0 ? "" : "; ").append(overflow());
			small[0] = sb.toString();
		}, "small-stack", 256 * 1024);
		th.start();
		th.join();
		System.out.println("small-stack thread: " + small[0]);
		System.out.println("done");
	}
}
