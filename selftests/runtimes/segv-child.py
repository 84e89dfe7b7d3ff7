# faultline runtimes test (selftests/runtimes/run.sh): CPython's
# faulthandler.  Children that die of SIGSEGV: faulthandler's handler dumps
# the Python traceback, restores the previous disposition (SIG_DFL) and
# re-raises the signal, so the child still dies of SIGSEGV (returncode -11,
# and a core dump when core dumps are on).  The parent has faulthandler
# enabled too.  Prints each child's returncode, whether it dumped core, and
# its stderr; run.sh masks the hex thread ids in faulthandler's "Current
# thread 0x..." lines, the only nondeterministic text.
#
#   python3 segv-child.py WORKDIR
import faulthandler
import os
import resource
import subprocess
import sys

faulthandler.enable()

if os.environ.get("RT_MAPS"):
    with open("/proc/self/maps") as src, open(os.environ["RT_MAPS"], "w") as dst:
        dst.write(src.read())
# The names of this process's threads (run.sh looks for faultline's healer).
if os.environ.get("RT_TASKS"):
    with open(os.environ["RT_TASKS"], "w") as dst:
        for t in os.listdir("/proc/self/task"):
            try:
                with open(f"/proc/self/task/{t}/comm") as comm:
                    dst.write(comm.read())
            except OSError:
                pass

workdir = sys.argv[1]
os.makedirs(workdir, exist_ok=True)

# Core dumps, when the kernel writes them to a plain file (a relative
# core_pattern lands in the child's cwd, workdir): a shim that re-raised the
# signal differently could lose the core dump.  With a piped core_pattern
# the system's handler would get them: leave core dumps off then.
# The soft limit goes up to the hard limit; a hard limit of 0 means no
# core dumps.
with open("/proc/sys/kernel/core_pattern") as f:
    pattern = f.read().strip()
hard = resource.getrlimit(resource.RLIMIT_CORE)[1]
if pattern.startswith("|") or pattern.startswith("/"):
    cores = False
    print("core dumps: off (core_pattern %r)" % pattern)
elif hard != resource.RLIM_INFINITY and hard < 64 << 20:
    cores = False
    print("core dumps: off (hard limit %d)" % hard)
else:
    cores = True
    print("core dumps: on")


def child_limits():
    resource.setrlimit(resource.RLIMIT_CORE, (hard if cores else 0, hard))


CASES = [
    # A read of address 0 in C (strlen(NULL) in ctypes): a kernel SIGSEGV.
    ("ctypes.string_at(0), faulthandler", ["-X", "faulthandler"],
     "import ctypes\ndef f():\n    ctypes.string_at(0)\nf()\n"),
    ("ctypes.string_at(0), no faulthandler", [],
     "import ctypes\nctypes.string_at(0)\n"),
    # The same signal sent by the process to itself (si_code SI_TKILL).
    ("os.kill(SIGSEGV), faulthandler", ["-X", "faulthandler"],
     "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n"),
    # A kernel SIGSEGV in a thread other than the main thread.
    # (The faulting thread only: where the main thread is, in start() or
    # join(), is a race.)
    ("ctypes.string_at(0) in a thread, faulthandler", [],
     "import ctypes, faulthandler, threading\n"
     "faulthandler.enable(all_threads=False)\n"
     "t = threading.Thread(target=lambda: ctypes.string_at(0))\nt.start()\nt.join()\n"),
]

for label, flags, code in CASES:
    for name in os.listdir(workdir):
        if name == "core" or name.startswith("core."):
            os.unlink(os.path.join(workdir, name))
    p = subprocess.run([sys.executable, *flags, "-c", code], cwd=workdir,
                       capture_output=True, preexec_fn=child_limits)
    core = [n for n in os.listdir(workdir) if n == "core" or n.startswith("core.")]
    print("== %s" % label)
    print("returncode:", p.returncode)
    if cores:
        print("core dumped:", "yes" if core else "no")
    print("stdout: %r" % p.stdout.decode())
    print("stderr:")
    sys.stdout.write(p.stderr.decode())
    sys.stdout.flush()
    for n in core:
        os.unlink(os.path.join(workdir, n))
