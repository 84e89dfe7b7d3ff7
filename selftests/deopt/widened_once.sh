#!/bin/bash
# The compiled check-widening examples really have one widened check:
#   widened_once.sh DIR
# DIR holds NAME.opt.ll (opt-14 -passes='guard-widening,lower-guard-intrinsic')
# and NAME.o (llc-14 of it) for widen and range.  For each: no guard is
# left, one deoptimization is, with the first guard's state (its deopt
# bundle starts with i32 0); every guard's condition feeds its one branch;
# the object has one stack map record and one call of __llvm_deoptimize.
set -u
dir=$1
readelf=${LLVM_READELF:-llvm-readelf-14}
objdump=${LLVM_OBJDUMP:-llvm-objdump-14}
status=0
bad() { echo "FAIL widened_once: $*"; status=1; }

for name in widen range; do
	ll=$dir/$name.opt.ll
	obj=$dir/$name.o
	guards=$(grep -c 'call void (i1, ...) @llvm.experimental.guard' "$ll")
	deopts=$(grep -c 'call void (...) @llvm.experimental.deoptimize' "$ll")
	first=$(grep -c '@llvm.experimental.deoptimize.isVoid() \[ "deopt"(i32 0,' "$ll")
	branches=$(grep -c 'br i1 %wide.chk2, label %guarded, label %deopt' "$ll")
	records=$("$readelf" --stackmap "$obj" | sed -n 's/^Num Records: //p')
	calls=$("$objdump" -dr "$obj" | grep -c 'R_X86_64_PLT32	__llvm_deoptimize\|R_X86_64_PC32	__llvm_deoptimize')
	[ "$guards" = 0 ] || bad "$name: $guards guards left"
	[ "$deopts" = 1 ] || bad "$name: $deopts deoptimizations, not 1"
	[ "$first" = 1 ] || bad "$name: the deoptimization is not the first guard's state"
	[ "$branches" = 1 ] || bad "$name: the four checks are not one widened branch"
	[ "$records" = 1 ] || bad "$name: $records stack map records, not 1"
	[ "$calls" = 1 ] || bad "$name: $calls calls of __llvm_deoptimize, not 1"
	[ $status = 0 ] && echo "ok $name: one widened check (the first guard's state), one record, one call"
done
[ $status = 0 ] && echo "PASS widened_once"
exit $status
