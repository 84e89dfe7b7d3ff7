#!/bin/bash
# Runs kernel-facing selftests in QEMU (TCG) on Debian 12's 6.1 kernel, for
# x86-64 or arm64.
#
#   vmtest.sh [-a ARCH] [-o DIR] [-t SECONDS] [-f PATH]... [--] 'NAME::COMMAND'...
#
#   -a ARCH     the guest's architecture: x86_64 (default) or aarch64
#               (amd64 and arm64 are accepted too)
#   -o DIR      work and cache directory (default build/vm, or
#               build/vm-aarch64 for aarch64)
#   -t SECONDS  outer timeout for QEMU, boot to result (default 300)
#   -f PATH     a file or directory to copy into the guest, at the same
#               absolute path as on the host (relative paths are taken from
#               the current directory, which is also the guest's working
#               directory); ELF files among them bring their shared
#               libraries and the dynamic loader
#   NAME::COMMAND  one guest test: COMMAND runs under the guest's /bin/sh
#               (busybox) from the working directory; exit 0 passes, 77
#               skips, anything else fails
#
# Steps: resolve the kernel package Debian's linux-image-amd64 (or
# linux-image-arm64:arm64) depends on (linux-image-6.1.0-*-amd64, -arm64)
# with apt-cache, `apt-get download` it into DIR/kernel/ once and extract
# vmlinuz (everything the tests need is built in: CONFIG_USERFAULTFD,
# CONFIG_BPF_SYSCALL, CONFIG_DEBUG_INFO_BTF, CONFIG_DEVTMPFS, the serial
# console (CONFIG_SERIAL_8250_CONSOLE, CONFIG_SERIAL_AMBA_PL011_CONSOLE on
# arm64), CONFIG_BLK_DEV_INITRD, CONFIG_RD_GZIP: no modules, so no virtio
# and no 9p); build a gzip cpio initramfs with busybox-static, bash, the
# files and their libraries, a static exit helper and an /init that mounts
# proc, sysfs, devtmpfs and bpffs (not tracefs: nothing needs it),
# writes /etc/passwd and /etc/group (root, nobody), puts /usr/bin (the
# copied host tools) before busybox's applets in PATH, exports
# VMTEST_WHERE="QEMU guest", prints `uname -r`, runs the tests and prints
# "vmtest: N passed, N failed", then ends QEMU through the exit helper
# (x86_64: /vmtest/exit 0: QEMU exits 1; /vmtest/exit 1: QEMU exits 3;
# aarch64: it powers off, and the summary line says which).
#
# x86_64: qemu-system-x86_64 -machine q35 -cpu max, console ttyS0; the
# host's /bin/busybox and /bin/bash, libraries as ldd names them; the exit
# helper is debug-exit (vmtest/debug-exit.c, gcc -static), which writes to
# isa-debug-exit.
# aarch64: qemu-system-aarch64 -M virt -cpu max,pauth-impdef=on
# (pointer authentication's default algorithm is very slow under TCG),
# -kernel/-initrd with no firmware (Debian's arm64 vmlinuz is a plain
# Image: no EFI_ZBOOT), console ttyAMA0.  busybox-static, bash
# and libtinfo6 for arm64 are `apt-get download`ed into DIR/debs/ once and
# unpacked with dpkg -x, not installed (they cannot be co-installed with
# the amd64 ones).  The test programs are cross-built: ldd cannot run them,
# so the arm64 dynamic loader itself lists their libraries
# (qemu-aarch64-static /lib/ld-linux-aarch64.so.1 --list: the libraries'
# libraries too, RUNPATH and $ORIGIN as in the guest), found among the host's
# /usr/lib/aarch64-linux-gnu (Debian's arm64 multiarch packages) and the
# unpacked ones.  -M virt has no isa-debug-exit, and semihosting from user
# space would let every guest program reach the host's files: the exit
# helper is poweroff -f (PSCI SYSTEM_OFF: QEMU exits 0), and the result is
# the console's summary line alone (its failed count).
#
# The serial console is printed with a "guest| " prefix and saved to
# DIR/console.log.  QEMU runs under timeout(1) and is stopped when this
# script ends for any reason (a signal too).  Exit status: 0 iff the guest
# ran every test and none failed; 1 if a test failed; 2 if the kernel did
# not boot, init did not finish, the timeout struck (the message says
# which) or a signal ended the script; 3 on a setup error on the host.
set -u

arch=x86_64
out=
timeout_s=300
files=()
while getopts a:o:t:f: opt; do
	case $opt in
	a) arch=$OPTARG ;;
	o) out=$OPTARG ;;
	t) timeout_s=$OPTARG ;;
	f) files+=("$OPTARG") ;;
	*) sed -n '2,19p' "$0" >&2; exit 3 ;;
	esac
done
shift $((OPTIND - 1))
tests=("$@")
here=$(cd "$(dirname "$0")" && pwd)
cwd=$(pwd)

die() { echo "vmtest: $*" >&2; exit 3; }

case $arch in
x86_64 | amd64) arch=x86_64 deb_arch=amd64 ;;
aarch64 | arm64) arch=aarch64 deb_arch=arm64 ;;
*) die "-a $arch: the guest is x86_64 or aarch64" ;;
esac
if [ "$arch" = x86_64 ]; then
	: "${out:=build/vm}"
	# The kernel's meta package, and how apt names its packages.
	kmeta=linux-image-amd64 qual=
	serial_config=SERIAL_8250_CONSOLE
	console=ttyS0
	tools=(qemu-system-x86_64 cpio gzip gcc)
else
	: "${out:=build/vm-aarch64}"
	kmeta=linux-image-arm64:arm64 qual=:arm64
	serial_config=SERIAL_AMBA_PL011_CONSOLE
	console=ttyAMA0
	tools=(qemu-system-aarch64 qemu-aarch64-static aarch64-linux-gnu-gcc cpio gzip)
fi
for t in "${tools[@]}"; do
	command -v "$t" >/dev/null || die "$t not found (scripts/deps.sh test installs it)"
done

mkdir -p "$out" || die "cannot create $out"
out=$(cd "$out" && pwd)

# download PKG DIR: `apt-get download PKG` into DIR, once more after an
# apt-get update if the lists name a version the mirror no longer has.
download() {
	(cd "$2" && apt-get download "$1" >/dev/null 2>&1) && return 0
	echo "vmtest: apt-get download $1 failed: apt-get update, then again"
	apt-get update -qq >/dev/null 2>&1 || true
	(cd "$2" && apt-get download "$1")
}

# ---- kernel ---------------------------------------------------------------

resolve_pkg() {
	apt-cache depends "$kmeta" 2>/dev/null |
		awk -v a="$deb_arch" -v q="$qual" '
			$1 == "Depends:" && $2 ~ ("^linux-image-6\\.1\\.0-.*-" a q "$") {
				sub(q "$", "", $2); print $2; exit }'
}
pkg=$(resolve_pkg)
if [ -z "$pkg" ]; then
	echo "vmtest: apt lists have no $kmeta: apt-get update"
	apt-get update -qq >/dev/null 2>&1 || true
	pkg=$(resolve_pkg)
fi
if [ -z "$pkg" ]; then
	# Offline: use the newest kernel already downloaded.
	pkg=$(ls -1 "$out/kernel" 2>/dev/null | grep '^linux-image-6\.1\.0-' | sort -V | tail -n 1)
	[ -n "$pkg" ] || die "cannot resolve Debian's 6.1 kernel package (apt-cache depends $kmeta${qual:+; scripts/deps.sh test adds the arm64 architecture})"
	echo "vmtest: apt-cache failed; using the cached $pkg"
fi
kdir=$out/kernel/$pkg
vmlinuz=$kdir/vmlinuz
if [ ! -s "$vmlinuz" ]; then
	echo "vmtest: downloading $pkg$qual"
	rm -rf "$kdir" && mkdir -p "$kdir/dl" "$kdir/x" || die "cannot create $kdir"
	download "$pkg$qual" "$kdir/dl" || die "apt-get download $pkg$qual failed"
	deb=$(ls "$kdir"/dl/*.deb | head -n 1)
	dpkg-deb -x "$deb" "$kdir/x" || die "dpkg-deb -x $deb failed"
	cp "$kdir"/x/boot/config-* "$kdir/config" &&
		cp "$kdir"/x/boot/vmlinuz-* "$vmlinuz.tmp" &&
		mv "$vmlinuz.tmp" "$vmlinuz" || die "no vmlinuz in $deb"
	basename "$deb" > "$kdir/deb"
	# The modules are not needed (see above): keep only vmlinuz and config.
	rm -rf "$kdir/x" "$kdir/dl"
fi
for c in USERFAULTFD BPF_SYSCALL DEBUG_INFO_BTF DEVTMPFS $serial_config \
	BLK_DEV_INITRD RD_GZIP FTRACE BPF_EVENTS; do
	grep -qx "CONFIG_$c=y" "$kdir/config" ||
		die "$pkg: CONFIG_$c is not built in (the initramfs carries no modules)"
done

# ---- the guest's own programs ----------------------------------------------

if [ "$arch" = x86_64 ]; then
	busybox=/bin/busybox
	bash_bin=/bin/bash
	[ -x "$busybox" ] && ! ldd "$busybox" >/dev/null 2>&1 ||
		die "$busybox is missing or not busybox-static (scripts/deps.sh installs busybox-static)"
	helper=$out/debug-exit helper_src=$here/vmtest/debug-exit.c helper_cc=gcc
else
	# Debian's arm64 packages, unpacked once into DIR/debs/root.
	debs=$out/debs
	guest_debs="busybox-static bash libtinfo6"
	if [ "$(cat "$debs/list" 2>/dev/null)" != "$guest_debs" ] ||
		[ ! -x "$debs/root/bin/busybox" ] || [ ! -x "$debs/root/bin/bash" ]; then
		echo "vmtest: downloading $guest_debs for arm64"
		rm -rf "$debs" && mkdir -p "$debs/dl" "$debs/root" || die "cannot create $debs"
		for p in $guest_debs; do
			download "$p:arm64" "$debs/dl" || die "apt-get download $p:arm64 failed"
		done
		for d in "$debs"/dl/*.deb; do
			dpkg -x "$d" "$debs/root" || die "dpkg -x $d failed"
		done
		(cd "$debs/dl" && ls -- *.deb) > "$debs/debs"
		rm -rf "$debs/dl"
		echo "$guest_debs" > "$debs/list"
	fi
	busybox=$debs/root/bin/busybox
	bash_bin=$debs/root/bin/bash
	[ -x "$busybox" ] && [ -x "$bash_bin" ] || die "no bin/busybox or bin/bash in $debs/root"
	helper=
	ld_so=/lib/ld-linux-aarch64.so.1
	[ -x "$ld_so" ] || die "no $ld_so (scripts/deps.sh test installs libc6-dev:arm64)"
fi
if [ -n "$helper" ] && { [ ! -x "$helper" ] || [ "$helper_src" -nt "$helper" ]; }; then
	$helper_cc -static -O2 -Wall -Werror -o "$helper" "$helper_src" ||
		die "cannot build $helper ($helper_cc -static: libc6-dev${qual} has libc.a)"
fi

# ---- initramfs ------------------------------------------------------------

root=$out/root
rm -rf "$root" && mkdir -p "$root"/{bin,sbin,dev,proc,sys,tmp,etc,vmtest} ||
	die "cannot create $root"
cp "$busybox" "$root/bin/busybox" || die "cannot copy $busybox"
cp "$bash_bin" "$root/bin/bash" || die "cannot copy $bash_bin"
if [ -n "$helper" ]; then
	cp "$helper" "$root/vmtest/exit" || die "cannot copy $helper"
else
	# The status is the console's: the summary line, then power off.
	printf '#!/bin/sh\nsync\nexec /bin/busybox poweroff -f\n' > "$root/vmtest/exit" &&
		chmod 755 "$root/vmtest/exit" || die "cannot write $root/vmtest/exit"
fi

# copy_path SRC: SRC (absolute) into the root at the same path, symlinks
# followed; directories whole.
copy_path() {
	local src=$1
	mkdir -p "$root$(dirname "$src")"
	cp -rL "$src" "$root$src" || die "cannot copy $src"
}

# elf_machine FILE: prints FILE's e_machine (62 x86-64, 183 AArch64) if it
# is an ELF executable or shared object (e_type 2 or 3), nothing otherwise.
elf_machine() {
	[ "$(head -c 4 "$1" 2>/dev/null | od -An -c | tr -d ' ')" = '177ELF' ] || return 0
	od -An -tu2 -j16 -N4 "$1" | awk '$1 == 2 || $1 == 3 { print $2 }'
}

# libs_of FILE: the libraries FILE (a guest path, in the root) needs and
# the loader, one path a line.  x86_64: ldd on the host's copy.  aarch64:
# "not found: NAME" for a library that is missing; the arm64 loader
# lists them as it would in the guest, with the root's library directories
# (the unpacked arm64 packages') first and the host's arm64 multiarch
# directories after them.
if [ "$arch" = x86_64 ]; then
	libs_of() {
		ldd "$1" 2>/dev/null | awk '
			$2 == "=>" && $3 ~ /^\// { print $3 }
			$1 ~ /^\// { print $1 }'
	}
else
	libs_of() {
		[ "$(elf_machine "$root$1")" = 183 ] || return 0
		qemu-aarch64-static "$ld_so" \
			--library-path "$root/lib/aarch64-linux-gnu:$root/usr/lib/aarch64-linux-gnu" \
			--list "$root$1" 2>&1 | awk -v r="$root" '
			# The loader stops at the first library it cannot find.
			/error while loading shared libraries: / {
				sub(/.*error while loading shared libraries: /, "")
				sub(/: cannot open shared object file.*/, "")
				print "not found: " $0; next }
			$2 == "=>" && $3 == "not" { print "not found: " $1; next }
			$2 == "=>" && $3 ~ /^\// { p = $3 }
			$2 != "=>" && $1 ~ /^\// { p = $1 }
			p != "" { if (index(p, r "/") == 1) p = substr(p, length(r) + 1); print p; p = "" }'
	}
	# The unpacked packages' libraries (libtinfo for bash), where the
	# guest's loader looks.
	for d in lib/aarch64-linux-gnu usr/lib/aarch64-linux-gnu; do
		[ -d "$debs/root/$d" ] || continue
		mkdir -p "$root/$d" && cp -a "$debs/root/$d"/*.so* "$root/$d/" 2>/dev/null
	done
fi

for f in "${files[@]}"; do
	case $f in /*) ;; *) f=$cwd/$f ;; esac
	[ -e "$f" ] || die "$f does not exist"
	if [ "$arch" = aarch64 ] && [ -f "$f" ] && [ "$(elf_machine "$f")" = 62 ]; then
		echo "vmtest: warning: $f is an x86-64 program: it cannot run in the arm64 guest"
	fi
	copy_path "$f"
done
# The loader's list is whole (the libraries' libraries too), as ldd's is.
mapfile -t elves < <(find "$root" -type f -perm -u+x -o -type f -name '*.so*' | sort)
declare -A seen=()
for e in "${elves[@]}"; do
	head -c 4 "$e" 2>/dev/null | grep -q 'ELF' || continue
	while IFS= read -r l; do
		case $l in
		"not found: "*)
			echo "vmtest: warning: ${e#"$root"} needs ${l#not found: }, which is not found" ;;
		?*)
			[ -n "${seen[$l]:-}" ] && continue
			seen[$l]=1
			[ -e "$root$l" ] || copy_path "$l"
			;;
		esac
	done < <(libs_of "${e#"$root"}")
done

# The tests: one per line, NAME<TAB>COMMAND.
: > "$root/vmtest/tests"
for t in "${tests[@]}"; do
	case $t in *::*) ;; *) die "test '$t' is not NAME::COMMAND" ;; esac
	printf '%s\t%s\n' "${t%%::*}" "${t#*::}" >> "$root/vmtest/tests"
done
printf '%s\n' "$cwd" > "$root/vmtest/cwd"

cat > "$root/init" <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
# /usr first: the host tools copied in with -f (GNU realpath, install and
# env, util-linux setpriv and prlimit) take the place of busybox's applets of
# the same name, which lack options the test scripts use (and busybox's env
# runs its own applets before any program in PATH).
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
mount -t devtmpfs devtmpfs /dev
exec </dev/console >/dev/console 2>&1
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t bpf bpf /sys/fs/bpf
# No tmpfs on /tmp: the initramfs is writable already, and the tree under
# test may itself live under /tmp (a CI clone) at its host path.
chmod 1777 /tmp
# Tests drop to nobody (65534) and name users.
printf '%s\n' 'root:x:0:0:root:/root:/bin/sh' 'nobody:x:65534:65534:nobody:/nonexistent:/bin/false' > /etc/passwd
printf '%s\n' 'root:x:0:' 'nogroup:x:65534:' > /etc/group
mount -t tmpfs tmpfs /dev/shm 2>/dev/null || { mkdir -p /dev/shm && mount -t tmpfs tmpfs /dev/shm; }
ulimit -c 0
# The tests print where their kernel runs: "kernel: RELEASE (QEMU guest)".
export VMTEST_WHERE="QEMU guest"
kernel=$(uname -r)
echo "vmtest: guest kernel $kernel ($(uname -m), $(nproc) CPUs, $(awk '/MemTotal/ { print $2 " kB" }' /proc/meminfo); init at uptime $(cut -d' ' -f1 /proc/uptime) s)"
cd "$(cat /vmtest/cwd)"
passed=0 failed=0 skipped=0
tab=$(printf '\t')
while IFS=$tab read -r name cmd; do
	echo "vmtest: ==> $name on kernel $kernel: $cmd"
	t0=$(cut -d' ' -f1 /proc/uptime)
	sh -c "$cmd" </dev/null
	rc=$?
	t1=$(cut -d' ' -f1 /proc/uptime)
	took=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
	case $rc in
	0) passed=$((passed + 1)); echo "vmtest: PASS $name (${took} s)" ;;
	77) skipped=$((skipped + 1)); echo "vmtest: SKIP $name (${took} s)" ;;
	*) failed=$((failed + 1)); echo "vmtest: FAIL $name: exit status $rc (${took} s)" ;;
	esac
done < /vmtest/tests
echo "vmtest: kernel $kernel: $passed passed, $failed failed, $skipped skipped (uptime $(cut -d' ' -f1 /proc/uptime) s)"
sync
if [ "$failed" = 0 ]; then /vmtest/exit 0; else /vmtest/exit 1; fi
echo "vmtest: the exit helper did not end QEMU"
poweroff -f
EOF
chmod 755 "$root/init"

initrd=$out/initramfs.cpio.gz
(cd "$root" && find . -print0 | cpio --null -o -H newc --quiet -R 0:0 | gzip -1) \
	> "$initrd.tmp" && mv "$initrd.tmp" "$initrd" || die "cannot build $initrd"
# The staging tree is as large as the libraries (libLLVM): not kept.
rm -rf "$root"
echo "vmtest: $pkg ($(cat "$kdir/deb" 2>/dev/null)), initramfs $(du -k "$initrd" | cut -f1) KiB," \
	"${#tests[@]} tests, timeout ${timeout_s} s"

# ---- QEMU -----------------------------------------------------------------

append="console=$console panic=-1 quiet loglevel=3 oops=panic"
if [ "$arch" = x86_64 ]; then
	qemu=(qemu-system-x86_64 -machine q35,accel=tcg -cpu max -m 1G -smp 2
		-nographic -no-reboot -nic none -vga none
		-device isa-debug-exit,iobase=0xf4,iosize=0x04)
else
	qemu=(qemu-system-aarch64 -machine virt,accel=tcg -cpu max,pauth-impdef=on -m 1G -smp 2
		-nographic -no-reboot -nic none)
fi

# QEMU's output goes through a FIFO to the printer, so that QEMU (under
# timeout) is this shell's own job: waiting for it can be interrupted, and
# the EXIT trap stops it on any way out of this script.
log=$out/console.log
fifo=$out/console.fifo
rm -f "$fifo" && mkfifo "$fifo" || die "cannot create $fifo"
qemu_pid=
stop_qemu() {
	[ -n "$qemu_pid" ] || return 0
	echo "vmtest: stopping QEMU" >&2
	kill -TERM "$qemu_pid" 2>/dev/null
	wait "$qemu_pid" 2>/dev/null
	qemu_pid=
}
trap 'stop_qemu; rm -f "$fifo"' EXIT
trap 'echo "vmtest: interrupted" >&2; exit 2' INT TERM HUP
tr -d '\r' < "$fifo" | tee "$log" | sed -u 's/^/guest| /' &
printer=$!
start=$(date +%s.%N)
timeout -k 10 "$timeout_s" "${qemu[@]}" -kernel "$vmlinuz" -initrd "$initrd" \
	-append "$append" </dev/null >"$fifo" 2>&1 &
qemu_pid=$!
wait "$qemu_pid"
rc=$?
qemu_pid=
end=$(date +%s.%N)
# The printer ends when QEMU's end of the FIFO closes.
wait "$printer"
took=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')

result=$(grep -E '^vmtest: kernel .*: [0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
	# Not at a line's start: the firmware's escape codes come first.
	if grep -q 'vmtest: guest kernel' "$log"; then
		echo "vmtest: TIMED OUT after ${timeout_s} s: the kernel booted but the tests did not finish (log: $log)"
	else
		echo "vmtest: TIMED OUT after ${timeout_s} s: the kernel did not boot to init (log: $log)"
	fi
	exit 2
fi
if [ -z "$result" ]; then
	# Not at a line's start: the firmware's escape codes come first.
	if grep -q 'vmtest: guest kernel' "$log"; then
		echo "vmtest: init did not finish (QEMU exit status $rc, a panic?) after $took s (log: $log)"
	else
		echo "vmtest: the kernel did not boot to init (QEMU exit status $rc) after $took s (log: $log)"
	fi
	exit 2
fi
# Boot: the kernel's start to init by the guest's clock, and QEMU's start
# to init by the host's (the run's time less the guest's after init).
init_up=$(sed -n 's/.*vmtest: guest kernel .*; init at uptime \([0-9.]*\) s)$/\1/p' "$log" | tail -n 1)
end_up=$(sed -n 's/^vmtest: kernel .*(uptime \([0-9.]*\) s)$/\1/p' "$log" | tail -n 1)
if [ -n "$init_up" ] && [ -n "$end_up" ]; then
	echo "vmtest: boot to init: $init_up s of guest uptime, $(awk -v t="$took" -v a="$init_up" \
		-v b="$end_up" 'BEGIN { printf "%.1f", t - (b - a) }') s from QEMU's start"
fi
echo "vmtest: ${result#vmtest: }; QEMU boot to result $took s"
if [ "$arch" = aarch64 ]; then
	# Powered off (QEMU exits 0): the summary line says how it went.
	[ "$rc" = 0 ] || { echo "vmtest: unexpected QEMU exit status $rc"; exit 2; }
	nfailed=$(echo "$result" | sed -n 's/.*: [0-9]* passed, \([0-9]*\) failed.*/\1/p')
	[ "$nfailed" = 0 ] && exit 0
	exit 1
fi
case $rc in
1) exit 0 ;;
3) exit 1 ;;
*) echo "vmtest: unexpected QEMU exit status $rc"; exit 2 ;;
esac
