// NullReferenceExceptions from Mono's JIT code (a load through null faults;
// Mono's SIGSEGV handler turns it into the exception), in several threads;
// "bus": a read of a truncated file's mapping, Mono's SIGBUS crash report.
using System;
using System.IO;
using System.IO.MemoryMappedFiles;
using System.Threading;

class Node { public int v; }

class NullStress {
	static int Work(Node n) { return n.v; }

	static int Churn(int calls, int every) {
		int caught = 0;
		Node real = new Node { v = 1 };
		for (int i = 0; i < calls; i++) {
			try { Work(i % every == 0 ? null : real); }
			catch (NullReferenceException) { caught++; }
		}
		return caught;
	}

	static unsafe void Bus(string path) {
		using (var f = new FileStream(path, FileMode.Create, FileAccess.ReadWrite)) {
			f.SetLength(8192);
			using (var m = MemoryMappedFile.CreateFromFile(f, null, 8192, MemoryMappedFileAccess.ReadWrite,
					HandleInheritability.None, true))
			using (var a = m.CreateViewAccessor(0, 8192)) {
				byte *p = null;
				a.SafeMemoryMappedViewHandle.AcquirePointer(ref p);
				f.SetLength(0);
				Console.WriteLine("reading the truncated mapping");
				Console.Out.Flush();
				Console.WriteLine(p[4096]);
			}
		}
	}

	// RT_MAPS: a copy of /proc/self/maps; RT_TASKS: the threads' names (run.sh's mapped).
	static void LeaveTraces() {
		string maps = Environment.GetEnvironmentVariable("RT_MAPS");
		if (maps != null)
			File.WriteAllText(maps, File.ReadAllText("/proc/self/maps"));
		string tasks = Environment.GetEnvironmentVariable("RT_TASKS");
		if (tasks != null) {
			var names = new System.Text.StringBuilder();
			foreach (string t in Directory.GetDirectories("/proc/self/task")) {
				try { names.Append(File.ReadAllText(t + "/comm")); }
				catch (IOException) { /* the thread exited meanwhile */ }
			}
			File.WriteAllText(tasks, names.ToString());
		}
	}

	static int Main(string[] args) {
		LeaveTraces();
		if (args.Length == 1 && args[0] == "bus") { Bus("truncated.bin"); return 0; }
		int threads = 4, calls = 200000, every = 40;
		var results = new int[threads];
		var ts = new Thread[threads];
		for (int t = 0; t < threads; t++) {
			int k = t;
			ts[t] = new Thread(() => results[k] = Churn(calls, every));
			ts[t].Start();
		}
		foreach (var t in ts) t.Join();
		for (int t = 0; t < threads; t++)
			Console.WriteLine("thread " + t + ": " + results[t] + " NullReferenceExceptions caught");
		Console.WriteLine("done");
		return 0;
	}
}
