#!/bin/bash
# The compiled check-widening examples really have one widened check:
#   widened_once.sh DIR
# DIR holds NAME.opt.ll (opt-14 -passes='guard-widening,lower-guard-intrinsic')
# and NAME.o (llc-14 of it) for widen and range.  For each: no guard is
# left, one deoptimization is, with the first guard's state (its deopt
# bundle starts with i32 0); one branch leads to it, on the widened
# condition: for widen the seed's single `3 u< len` (len u>= 4), for range
# its pair `i + 3 u< len` and `i u< len`; the object has one stack map
# record and one call of __llvm_deoptimize; and its code checks that many
# times, no more: one compare and one conditional branch for widen, two of
# each for range, where the unwidened code had four.  The objects may be
# x86-64's or AArch64's (their ELF header says which): on AArch64 a
# compare is cmp, cmn or tst, a conditional branch b.COND, and cbz, cbnz,
# tbz and tbnz are both.
set -u
dir=$1
readelf=${LLVM_READELF:-llvm-readelf-14}
objdump=${LLVM_OBJDUMP:-llvm-objdump-14}
status=0
bad() { echo "FAIL widened_once: $*"; status=1; }

# The widened condition as opt-14 writes it, and the compares it is.
cond_widen='%wide.chk2 = icmp uge i32 %len, 4$'
cond_range='%wide.chk2 = and i1 %c3, %c0$'
compares_widen=1
compares_range=2

for name in widen range; do
	ll=$dir/$name.opt.ll
	obj=$dir/$name.o
	cond_var=cond_$name; compares_var=compares_$name
	want_compares=${!compares_var}
	guards=$(grep -c 'call void (i1, ...) @llvm.experimental.guard' "$ll")
	deopts=$(grep -c 'call void (...) @llvm.experimental.deoptimize' "$ll")
	first=$(grep -c '@llvm.experimental.deoptimize.isVoid() \[ "deopt"(i32 0,' "$ll")
	branches=$(grep -c 'br i1 %wide.chk2, label %guarded, label %deopt' "$ll")
	records=$("$readelf" --stackmap "$obj" | sed -n 's/^Num Records: //p')
	if "$readelf" -h "$obj" | grep -q 'Machine:.*AArch64'; then
		call_relocs='R_AARCH64_CALL26	__llvm_deoptimize\|R_AARCH64_JUMP26	__llvm_deoptimize'
		call_insn='__llvm_deoptimize'
		compare_re='\s(cmp|cmn|tst|cbn?z|tbn?z)\s'
		jcc_re='\s(b\.[a-z]+|cbn?z|tbn?z)\s'
		jmp_re='^$'
	else
		call_relocs='R_X86_64_PLT32	__llvm_deoptimize\|R_X86_64_PC32	__llvm_deoptimize'
		call_insn='call'
		compare_re='\s(cmp|test)[bwlq]?\s'
		jcc_re='\sj[a-z]+\s'
		jmp_re='\sjmp[q]?\s'
	fi
	calls=$("$objdump" -dr "$obj" | grep -c "$call_relocs")
	cond=$(grep -c -- "${!cond_var}" "$ll")
	c3=$(grep -c -- '%c3 = icmp ult i32 %i3, %len$' "$ll")
	c0=$(grep -c -- '%c0 = icmp ult i32 %i, %len$' "$ll")
	# The function's code up to the call: its compares and conditional jumps.
	code=$("$objdump" -dr --no-show-raw-insn "$obj" | sed -n "/^[0-9a-f]* <[a-z]*>:\$/,/$call_insn/p")
	compares=$(grep -cE "$compare_re" <<<"$code")
	jccs=$(grep -E "$jcc_re" <<<"$code" | grep -vcE "$jmp_re")
	[ "$guards" = 0 ] || bad "$name: $guards guards left"
	[ "$cond" = 1 ] || bad "$name: the branch's condition is not the widened one (${!cond_var})"
	[ "$name" = widen ] || [ "$c3$c0" = 11 ] || bad "$name: the widened condition is not i + 3 u< len and i u< len"
	[ "$compares" = "$want_compares" ] || bad "$name: the code compares $compares times before deoptimizing, not $want_compares"
	[ "$jccs" = "$want_compares" ] || bad "$name: the code has $jccs conditional branches, not $want_compares"
	[ "$deopts" = 1 ] || bad "$name: $deopts deoptimizations, not 1"
	[ "$first" = 1 ] || bad "$name: the deoptimization is not the first guard's state"
	[ "$branches" = 1 ] || bad "$name: the four checks are not one widened branch"
	[ "$records" = 1 ] || bad "$name: $records stack map records, not 1"
	[ "$calls" = 1 ] || bad "$name: $calls calls of __llvm_deoptimize, not 1"
	[ $status = 0 ] && echo "ok $name: one widened check ($want_compares compare(s) in the code; the first guard's state), one record, one call"
done
[ $status = 0 ] && echo "PASS widened_once"
exit $status
