// faultline profile test (selftests/profile/run.sh): HotSpot's own implicit
// null checks, seen from the kernel.
//
// java ProfileNpe N GO_FILE DONE_FILE: warms up load() and the loop in main
// without nulls, so that the JIT compiles them with implicit null checks
// (the field load itself is the check: a null faults, HotSpot's SIGSEGV
// handler turns it into a NullPointerException); prints "warm"; once
// GO_FILE exists, calls load() N times, every other time with null,
// catching the NullPointerExceptions; prints "npes COUNT"; then waits for
// DONE_FILE (so that jcmd can ask for the perf map) and exits.
import java.nio.file.Files;
import java.nio.file.Path;

public class ProfileNpe {
	static final class Box {
		int v;
		Box(int v) { this.v = v; }
	}

	static int load(Box b) {
		return b.v;
	}

	public static void main(String[] args) throws Exception {
		int n = Integer.parseInt(args[0]);
		Path go = Path.of(args[1]), done = Path.of(args[2]);
		Box box = new Box(1);
		Box[] boxes = { box, null };
		long sum = 0;
		int npes = 0;

		for (int i = 0; i < 3_000_000; i++)
			sum += load(box);
		System.out.println("warm " + sum);
		while (!Files.exists(go))
			Thread.sleep(5);
		for (int i = 0; i < n; i++) {
			try {
				sum += load(boxes[i & 1]);
			} catch (NullPointerException e) {
				npes++;
			}
		}
		System.out.println("npes " + npes);
		while (!Files.exists(done))
			Thread.sleep(5);
	}
}
