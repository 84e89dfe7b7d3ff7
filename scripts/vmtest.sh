#!/bin/bash
# Runs kernel-facing selftests in QEMU (TCG) on Debian 12's 6.1 kernel.
#
#   vmtest.sh [-o DIR] [-t SECONDS] [-f PATH]... [--] 'NAME::COMMAND'...
#
#   -o DIR      work and cache directory (default build/vm)
#   -t SECONDS  outer timeout for QEMU, boot to result (default 300)
#   -f PATH     a file or directory to copy into the guest, at the same
#               absolute path as on the host (relative paths are taken from
#               the current directory, which is also the guest's working
#               directory); ELF files among them bring their shared
#               libraries (ldd) and the dynamic loader
#   NAME::COMMAND  one guest test: COMMAND runs under the guest's /bin/sh
#               (busybox) from the working directory; exit 0 passes, 77
#               skips, anything else fails
#
# Steps: resolve the kernel package Debian's linux-image-amd64 depends on
# (linux-image-6.1.0-*-amd64) with apt-cache, `apt-get download` it into
# DIR/kernel/ once and extract vmlinuz (everything the tests need is built
# in: CONFIG_USERFAULTFD, CONFIG_BPF_SYSCALL, CONFIG_DEBUG_INFO_BTF,
# CONFIG_DEVTMPFS, CONFIG_SERIAL_8250_CONSOLE, CONFIG_BLK_DEV_INITRD,
# CONFIG_RD_GZIP: no modules); build a gzip cpio initramfs with
# busybox-static, bash, the files and their libraries, a static debug-exit
# helper and an /init that mounts proc, sysfs, devtmpfs and bpffs (not
# tracefs: nothing needs it),
# writes /etc/passwd and /etc/group (root, nobody), puts /usr/bin (the
# copied host tools) before busybox's applets in PATH, exports
# VMTEST_WHERE="QEMU guest", prints `uname -r`, runs the tests and prints
# "vmtest: N passed, N failed", then ends QEMU through isa-debug-exit
# (written 0: QEMU exits 1; written 1: QEMU exits 3).
#
# The serial console is printed with a "guest| " prefix and saved to
# DIR/console.log.  Exit status: 0 iff the guest ran every test and none
# failed; 1 if a test failed; 2 if the kernel did not boot, init did not
# finish, or the timeout struck (the message says which); 3 on a setup
# error on the host.
set -u

out=build/vm
timeout_s=300
files=()
while getopts o:t:f: opt; do
	case $opt in
	o) out=$OPTARG ;;
	t) timeout_s=$OPTARG ;;
	f) files+=("$OPTARG") ;;
	*) sed -n '2,14p' "$0" >&2; exit 3 ;;
	esac
done
shift $((OPTIND - 1))
tests=("$@")
here=$(cd "$(dirname "$0")" && pwd)
cwd=$(pwd)

die() { echo "vmtest: $*" >&2; exit 3; }

mkdir -p "$out" || die "cannot create $out"
out=$(cd "$out" && pwd)

# ---- kernel ---------------------------------------------------------------

resolve_pkg() {
	apt-cache depends linux-image-amd64 2>/dev/null |
		awk '$1 == "Depends:" && $2 ~ /^linux-image-6\.1\.0-.*-amd64$/ { print $2; exit }'
}
pkg=$(resolve_pkg)
if [ -z "$pkg" ]; then
	echo "vmtest: apt lists have no linux-image-amd64: apt-get update"
	apt-get update -qq >/dev/null 2>&1 || true
	pkg=$(resolve_pkg)
fi
if [ -z "$pkg" ]; then
	# Offline: use the newest kernel already downloaded.
	pkg=$(ls -1 "$out/kernel" 2>/dev/null | grep '^linux-image-6\.1\.0-' | sort -V | tail -n 1)
	[ -n "$pkg" ] || die "cannot resolve Debian's 6.1 kernel package (apt-cache depends linux-image-amd64)"
	echo "vmtest: apt-cache failed; using the cached $pkg"
fi
kdir=$out/kernel/$pkg
vmlinuz=$kdir/vmlinuz
if [ ! -s "$vmlinuz" ]; then
	echo "vmtest: downloading $pkg"
	rm -rf "$kdir" && mkdir -p "$kdir/dl" "$kdir/x" || die "cannot create $kdir"
	(cd "$kdir/dl" && apt-get download "$pkg" >/dev/null 2>&1) ||
		(cd "$kdir/dl" && apt-get download "$pkg") ||
		die "apt-get download $pkg failed"
	deb=$(ls "$kdir"/dl/*.deb | head -n 1)
	dpkg-deb -x "$deb" "$kdir/x" || die "dpkg-deb -x $deb failed"
	cp "$kdir"/x/boot/config-* "$kdir/config" &&
		cp "$kdir"/x/boot/vmlinuz-* "$vmlinuz.tmp" &&
		mv "$vmlinuz.tmp" "$vmlinuz" || die "no vmlinuz in $deb"
	basename "$deb" > "$kdir/deb"
	# The modules are not needed (see above): keep only vmlinuz and config.
	rm -rf "$kdir/x" "$kdir/dl"
fi
for c in USERFAULTFD BPF_SYSCALL DEBUG_INFO_BTF DEVTMPFS SERIAL_8250_CONSOLE \
	BLK_DEV_INITRD RD_GZIP FTRACE BPF_EVENTS; do
	grep -qx "CONFIG_$c=y" "$kdir/config" ||
		die "$pkg: CONFIG_$c is not built in (the initramfs carries no modules)"
done

# ---- initramfs ------------------------------------------------------------

busybox=/bin/busybox
[ -x "$busybox" ] && ! ldd "$busybox" >/dev/null 2>&1 ||
	die "$busybox is missing or not busybox-static (scripts/deps.sh installs busybox-static)"
for t in qemu-system-x86_64 cpio gzip gcc; do
	command -v $t >/dev/null || die "$t not found (scripts/deps.sh installs it)"
done

root=$out/root
rm -rf "$root" && mkdir -p "$root"/{bin,sbin,dev,proc,sys,tmp,etc,vmtest,lib64} ||
	die "cannot create $root"
cp "$busybox" "$root/bin/busybox"
helper=$out/debug-exit
if [ ! -x "$helper" ] || [ "$here/vmtest/debug-exit.c" -nt "$helper" ]; then
	gcc -static -O2 -Wall -Werror -o "$helper" "$here/vmtest/debug-exit.c" ||
		die "cannot build the debug-exit helper (gcc -static: libc6-dev has libc.a)"
fi
cp "$helper" "$root/vmtest/debug-exit"

# copy_path SRC: SRC (absolute) into the root at the same path, symlinks
# followed; directories whole.
copy_path() {
	local src=$1
	mkdir -p "$root$(dirname "$src")"
	cp -rL "$src" "$root$src" || die "cannot copy $src"
}

# Every copied ELF file brings the libraries ldd names and the loader.
libs_of() {
	ldd "$1" 2>/dev/null | awk '
		$2 == "=>" && $3 ~ /^\// { print $3 }
		$1 ~ /^\// { print $1 }'
}

copy_path /bin/bash
for f in "${files[@]}"; do
	case $f in /*) ;; *) f=$cwd/$f ;; esac
	[ -e "$f" ] || die "$f does not exist"
	copy_path "$f"
done
mapfile -t elves < <(find "$root" -type f -perm -u+x -o -type f -name '*.so*' | sort)
declare -A seen=()
for e in "${elves[@]}"; do
	head -c 4 "$e" 2>/dev/null | grep -q 'ELF' || continue
	for l in $(libs_of "${e#"$root"}"); do
		[ -n "${seen[$l]:-}" ] && continue
		seen[$l]=1
		[ -e "$root$l" ] || copy_path "$l"
	done
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
echo "vmtest: guest kernel $kernel ($(nproc) CPUs, $(awk '/MemTotal/ { print $2 " kB" }' /proc/meminfo))"
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
if [ "$failed" = 0 ]; then /vmtest/debug-exit 0; else /vmtest/debug-exit 1; fi
echo "vmtest: isa-debug-exit did not end QEMU"
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

log=$out/console.log
start=$(date +%s.%N)
timeout -k 10 "$timeout_s" qemu-system-x86_64 -machine q35,accel=tcg -cpu max -m 1G -smp 2 \
	-nographic -no-reboot -nic none -vga none \
	-device isa-debug-exit,iobase=0xf4,iosize=0x04 \
	-kernel "$vmlinuz" -initrd "$initrd" \
	-append "console=ttyS0 panic=-1 quiet loglevel=3 oops=panic" </dev/null 2>&1 |
	tr -d '\r' | tee "$log" | sed -u 's/^/guest| /'
rc=${PIPESTATUS[0]}
end=$(date +%s.%N)
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
echo "vmtest: ${result#vmtest: }; QEMU boot to result $took s"
case $rc in
1) exit 0 ;;
3) exit 1 ;;
*) echo "vmtest: unexpected QEMU exit status $rc"; exit 2 ;;
esac
