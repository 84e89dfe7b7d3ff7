; Deopt values of every location kind and size, for deopt_values.c.
;
; @values deoptimizes when %go is true, with the deopt state below; the test
; checks every decoded value against what it passed.  Which location kind
; each value gets depends on the optimization level: at -O0 the arguments
; are spilled (Indirect, of their own size: 1, 2, 4 and 8 bytes); at -O2
; and -O3 the values that live across the call are kept in callee-saved
; registers (Register) as far as there are some, the rest spilled; the
; alloca is Direct at every level, small constants Constant and 64-bit
; ones ConstantIndex.  Compiled with -use-registers-for-deopt-values, llc
; keeps deopt values in registers: at -O0 in caller-saved ones too (rax,
; rcx, rdx, rsi, r8-r11, xmm0, xmm1: live at the call), at -O2 in every
; callee-saved one, of sizes 1, 2, 4 and 8.
;
; @keeps holds values in callee-saved registers across its call of
; @values, which deoptimizes: they must come back as they were.
;
; build.mk renames both per variant (@values_O2_reg, ...).
target triple = "x86_64-unknown-linux-gnu"

declare i64 @llvm.experimental.deoptimize.i64(...)
declare void @opaque(i64*)

define i64 @values(i8 %a, i16 %b, i32 %c, i64 %d, float %e, double %f, i8* %p, i1 %go) {
entry:
  %slot = alloca i64
  store i64 %d, i64* %slot
  call void @opaque(i64* %slot)
  %a2 = add i8 %a, 1
  %b2 = add i16 %b, 2
  %c2 = add i32 %c, 3
  %d2 = add i64 %d, 4
  %d3 = mul i64 %d, 3
  %d4 = xor i64 %d, 255
  br i1 %go, label %deopt, label %fast

deopt:
  %r = call i64 (...) @llvm.experimental.deoptimize.i64(i64 %d) [ "deopt"(
      i8 %a, i16 %b, i32 %c, i64 %d, float %e, double %f, i8* %p, i64* %slot,
      i8 %a2, i16 %b2, i32 %c2, i64 %d2, i64 %d3, i64 %d4,
      i32 42, i64 -7, i64 81985529216486895, i8 -3, i16 -300, double 2.5) ]
  ret i64 %r

fast:
  %s1 = zext i8 %a2 to i64
  %s2 = zext i16 %b2 to i64
  %s3 = zext i32 %c2 to i64
  %t1 = add i64 %s1, %s2
  %t2 = add i64 %t1, %s3
  %t3 = add i64 %t2, %d2
  %t4 = add i64 %t3, %d3
  %t5 = add i64 %t4, %d4
  ret i64 %t5
}

define i64 @keeps(i64 %x, i8* %p) {
entry:
  %v1 = mul i64 %x, 3
  %v2 = add i64 %x, 1000
  %v3 = xor i64 %x, 12345
  %v4 = mul i64 %x, 7
  %v5 = sub i64 %x, 99
  %v6 = shl i64 %x, 2
  %v7 = add i64 %x, 77
  %r = call i64 @values(i8 5, i16 6, i32 7, i64 %x, float 1.5, double 3.25, i8* %p, i1 true)
  %s1 = add i64 %r, %v1
  %m2 = mul i64 %v2, 3
  %s2 = add i64 %s1, %m2
  %m3 = mul i64 %v3, 5
  %s3 = add i64 %s2, %m3
  %m4 = mul i64 %v4, 9
  %s4 = add i64 %s3, %m4
  %m5 = mul i64 %v5, 17
  %s5 = add i64 %s4, %m5
  %m6 = mul i64 %v6, 33
  %s6 = add i64 %s5, %m6
  %m7 = mul i64 %v7, 65
  %s7 = add i64 %s6, %m7
  ret i64 %s7
}
