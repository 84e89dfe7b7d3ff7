; SPDX-License-Identifier: MIT
;
; llvm.experimental.stackmap: every location kind, shadow bytes, IDs.
;
; What llc-14 makes of it (checked with llvm-readelf-14 --stackmap; the
; register numbers are DWARF numbers: 0 rax, 3 rbx, 6 rbp, 7 rsp, 17+ xmm):
;  - a constant that fits in int32 is a Constant location (its 32 bits are
;    printed unsigned by llvm-readelf: -1 shows as 4294967295); anything else
;    is a ConstantIndex into the constants array, which holds each distinct
;    value once;
;  - Constant and ConstantIndex locations are always size 8, whatever the
;    type; a Register location has the size of the integer type (1, 2, 4, 8)
;    and 16 for any value in an XMM register (float, double, vector);
;  - an alloca passed directly is a Direct location [rbp or rsp + offset];
;  - a value live across a call that regalloc spilled is Indirect
;    [rbp or rsp + offset];
;  - a stackmap record has no live-outs (only patch points have them);
;  - shadow bytes are covered with the code that follows the stackmap, or
;    with nops when that code is too short; two shadows never overlap.

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

declare void @llvm.experimental.stackmap(i64, i32, ...)
declare void @callee()
declare i64 @callee_i64(i64)

@global_counter = global i64 0

; Constant and ConstantIndex: small, negative, INT32_MIN, INT32_MIN - 1,
; 2^31, 2^32, UINT32_MAX, i64 max and min, a repeated large value, i1/i8/i16
; constants, a null pointer.
define void @sm_constants() {
entry:
  call void (i64, i32, ...) @llvm.experimental.stackmap(i64 1, i32 0,
      i64 0, i64 1, i64 -1, i64 2147483647, i64 -2147483648,
      i64 -2147483649, i64 2147483648, i64 4294967295, i64 4294967296,
      i64 9223372036854775807, i64 -9223372036854775808,
      i64 4294967296, i1 true, i8 -3, i16 -300, i32 -7, i8* null,
      double 1.5, float -2.0)
  ret void
}

; Register locations of several sizes.  (An i1 live value crashes llc-14 at
; -O1 and above, "X86 DAG->DAG Instruction Selection": none here.)
define i64 @sm_registers(i64 %a, i32 %b, i16 %c, i8 %d, double %f,
                         float %g, i8* %h, <4 x i32> %v) {
entry:
  call void (i64, i32, ...) @llvm.experimental.stackmap(i64 2, i32 0,
      i64 %a, i32 %b, i16 %c, i8 %d, double %f, float %g, i8* %h,
      <4 x i32> %v)
  ret i64 %a
}

; Direct locations: allocas of several sizes (fixed frame: see dynamic.ll for
; a realigned one).
define void @sm_direct() {
entry:
  %a = alloca i64
  %b = alloca [16 x i32]
  %c = alloca i8, align 16
  %d = alloca { i64, double }
  call void (i64, i32, ...) @llvm.experimental.stackmap(i64 3, i32 0,
      i64* %a, [16 x i32]* %b, i8* %c, { i64, double }* %d)
  call void @callee()
  ret void
}

; Indirect locations: more values live across calls than there are
; callee-saved registers, so regalloc spills some of them.
define i64 @sm_spills(i64 %a, i64 %b, i64 %c, i64 %d, i64 %e, i64 %f) {
entry:
  %x1 = call i64 @callee_i64(i64 %a)
  %x2 = call i64 @callee_i64(i64 %b)
  %x3 = call i64 @callee_i64(i64 %c)
  call void (i64, i32, ...) @llvm.experimental.stackmap(i64 4, i32 0,
      i64 %a, i64 %b, i64 %c, i64 %d, i64 %e, i64 %f, i64 %x1, i64 %x2,
      i64 %x3)
  call void @callee()
  %s1 = add i64 %a, %b
  %s2 = add i64 %c, %d
  %s3 = add i64 %e, %f
  %s4 = add i64 %x1, %x2
  %s5 = add i64 %s1, %s2
  %s6 = add i64 %s3, %s4
  %s7 = add i64 %s5, %s6
  %s8 = add i64 %s7, %x3
  ret i64 %s8
}

; Shadow bytes: 0, 1, 8, 16 and 64 bytes, back to back (nop padding) and
; followed by code that covers them.
define i64 @sm_shadows(i64* %p) {
entry:
  call void (i64, i32, ...) @llvm.experimental.stackmap(i64 10, i32 0)
  call void (i64, i32, ...) @llvm.experimental.stackmap(i64 11, i32 1)
  call void (i64, i32, ...) @llvm.experimental.stackmap(i64 12, i32 8, i64* %p)
  %v = load i64, i64* %p
  %w = add i64 %v, 3
  store i64 %w, i64* %p
  call void (i64, i32, ...) @llvm.experimental.stackmap(i64 13, i32 16, i64 %w)
  call void @callee()
  call void (i64, i32, ...) @llvm.experimental.stackmap(i64 14, i32 64, i64 %w)
  ret i64 %w
}

; IDs: 0, the largest u64, above 2^32, and the same ID twice.
define void @sm_ids(i64 %a) {
entry:
  call void (i64, i32, ...) @llvm.experimental.stackmap(i64 0, i32 0)
  call void (i64, i32, ...) @llvm.experimental.stackmap(i64 -1, i32 0, i64 %a)
  call void @callee()
  call void (i64, i32, ...) @llvm.experimental.stackmap(i64 81985529216486895, i32 4, i64 %a)
  call void @callee()
  call void (i64, i32, ...) @llvm.experimental.stackmap(i64 77, i32 0, i64 %a)
  call void @callee()
  call void (i64, i32, ...) @llvm.experimental.stackmap(i64 77, i32 0, i64 %a)
  ret void
}

; A global's address and a value loaded from it (static model: an absolute
; address in the code; pic: through the GOT).
define void @sm_global() {
entry:
  %v = load i64, i64* @global_counter
  call void (i64, i32, ...) @llvm.experimental.stackmap(i64 20, i32 0,
      i64* @global_counter, i64 %v)
  ret void
}

; A loop with a stackmap in it and a phi live across it.
define i64 @sm_loop(i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i1, %loop ]
  %acc = phi i64 [ 1, %entry ], [ %acc1, %loop ]
  call void (i64, i32, ...) @llvm.experimental.stackmap(i64 21, i32 0, i64 %i, i64 %acc, i64 %n)
  %acc1 = call i64 @callee_i64(i64 %acc)
  %i1 = add i64 %i, 1
  %done = icmp eq i64 %i1, %n
  br i1 %done, label %exit, label %loop
exit:
  ret i64 %acc1
}

; A function with many records (a long record list for one function).
define void @sm_many_records(i64 %a, i64 %b) {
entry:
  call void (i64, i32, ...) @llvm.experimental.stackmap(i64 100, i32 0, i64 %a)
  call void @callee()
  call void (i64, i32, ...) @llvm.experimental.stackmap(i64 101, i32 0, i64 %b)
  call void @callee()
  call void (i64, i32, ...) @llvm.experimental.stackmap(i64 102, i32 0, i64 %a, i64 %b)
  call void @callee()
  call void (i64, i32, ...) @llvm.experimental.stackmap(i64 103, i32 0, i64 %b, i64 %a, i64 5)
  call void @callee()
  call void (i64, i32, ...) @llvm.experimental.stackmap(i64 104, i32 0, i64 4294967296)
  call void @callee()
  call void (i64, i32, ...) @llvm.experimental.stackmap(i64 105, i32 0, i64 %a, i64 -4294967296)
  call void @callee()
  call void (i64, i32, ...) @llvm.experimental.stackmap(i64 106, i32 0)
  call void @callee()
  call void (i64, i32, ...) @llvm.experimental.stackmap(i64 107, i32 0, i64 %b)
  ret void
}
