// faultline runtimes test (selftests/runtimes/run.sh): a fault HotSpot does
// not expect, a read of address 0 through sun.misc.Unsafe in the VM's own
// native code.  HotSpot's SIGSEGV handler writes its fatal error report
// (hs_err) and aborts.  run.sh compares the report's deterministic lines
// (the signal, si_code and si_addr, the problematic frame, the signal
// handlers as HotSpot sees them) and the exit status with and without the
// shim.
import java.lang.reflect.Field;
import sun.misc.Unsafe;

public class Crash {
	public static void main(String[] args) throws Exception {
		Field f = Unsafe.class.getDeclaredField("theUnsafe");
		f.setAccessible(true);
		Unsafe u = (Unsafe) f.get(null);
		System.out.println("reading address 0");
		System.out.flush();
		System.out.println(u.getInt(0L));
	}
}
