; SPDX-License-Identifier: MIT
;
; llvm.experimental.patchpoint.void / .i64: with and without a call target,
; several numBytes, the C and anyregcc conventions.
;
; What llc-14 makes of it (llvm-readelf-14 --stackmap):
;  - a patch point record has live-outs: the registers live across it
;    (callee-saved ones the function keeps values in, and the return value
;    register for .i64);
;  - with the C convention the call arguments are not recorded; with
;    anyregcc they are: the locations are the return value (for .i64), then
;    the numArgs arguments, then the live values;
;  - with a target the reserved bytes start with movabsq $target, %r11;
;    callq *%r11 (13 bytes).  numBytes must be at least 13: llc-14 does not
;    check, and with 12 it writes an object of over 4 GiB of nops; a function
;    target becomes an R_X86_64_64 relocation in .text in every relocation
;    model (so a PIE or shared object gets a text relocation), a constant
;    one does not;
;  - with a null target any numBytes, 0 included, is accepted and only
;    nops are emitted.

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

declare void @llvm.experimental.patchpoint.void(i64, i32, i8*, i32, ...)
declare i64 @llvm.experimental.patchpoint.i64(i64, i32, i8*, i32, ...)
declare void @callee()

; Null targets: 0, 1, 5, 16 and 32 bytes of nops.
define void @pp_null_targets(i64 %a, i64 %b) {
entry:
  call void (i64, i32, i8*, i32, ...) @llvm.experimental.patchpoint.void(i64 1000, i32 0, i8* null, i32 0)
  call void (i64, i32, i8*, i32, ...) @llvm.experimental.patchpoint.void(i64 1001, i32 1, i8* null, i32 0, i64 %a)
  call void (i64, i32, i8*, i32, ...) @llvm.experimental.patchpoint.void(i64 1002, i32 5, i8* null, i32 0, i64 %a, i64 %b)
  call void (i64, i32, i8*, i32, ...) @llvm.experimental.patchpoint.void(i64 1003, i32 16, i8* null, i32 0, i64 %b, i64 -1)
  call void (i64, i32, i8*, i32, ...) @llvm.experimental.patchpoint.void(i64 1004, i32 32, i8* null, i32 0, i64 4294967296)
  ret void
}

; Constant targets (the address from the LLVM documentation), C convention,
; arguments in rdi/rsi and a return value in rax.
define i64 @pp_const_target(i64 %a, i64 %b) {
entry:
  %t = inttoptr i64 -281474976710654 to i8*
  %r1 = call i64 (i64, i32, i8*, i32, ...) @llvm.experimental.patchpoint.i64(i64 1010, i32 15, i8* %t, i32 2, i64 %a, i64 %b, i64 %b)
  %r2 = call i64 (i64, i32, i8*, i32, ...) @llvm.experimental.patchpoint.i64(i64 1011, i32 13, i8* %t, i32 1, i64 %r1)
  call void (i64, i32, i8*, i32, ...) @llvm.experimental.patchpoint.void(i64 1012, i32 40, i8* %t, i32 0, i64 %a, i64 %r2)
  %s = add i64 %r1, %r2
  ret i64 %s
}

; A function as the target (a relocation in the reserved bytes).
define i64 @pp_function_target(i64 %a) {
entry:
  %r = call i64 (i64, i32, i8*, i32, ...) @llvm.experimental.patchpoint.i64(i64 1020, i32 16, i8* bitcast (void ()* @callee to i8*), i32 0, i64 %a)
  %s = add i64 %r, %a
  ret i64 %s
}

; anyregcc: arguments and result in registers of LLVM's choice, recorded.
define i64 @pp_anyreg(i64* %p, i64 %b, i64 %c) {
entry:
  %t = inttoptr i64 -281474976710654 to i8*
  %r = call anyregcc i64 (i64, i32, i8*, i32, ...) @llvm.experimental.patchpoint.i64(i64 1030, i32 20, i8* %t, i32 2, i64* %p, i64 %b, i64 77, i64 %c)
  %q = add i64 %r, %b
  %q2 = add i64 %q, %c
  call anyregcc void (i64, i32, i8*, i32, ...) @llvm.experimental.patchpoint.void(i64 1031, i32 24, i8* null, i32 1, i64 %q)
  %r3 = call anyregcc i64 (i64, i32, i8*, i32, ...) @llvm.experimental.patchpoint.i64(i64 1032, i32 15, i8* null, i32 3, i64 %q, i64 %q2, i64 -2147483649)
  %s = add i64 %q2, %r3
  ret i64 %s
}

; anyregcc with many arguments and live values: some live values end up on
; the stack.  (Ten anyregcc arguments plus six live values make llc-14 -O0
; run out of registers.)
define i64 @pp_anyreg_many(i64 %a, i64 %b, i64 %c, i64 %d, i64 %e, i64 %f) {
entry:
  %x1 = add i64 %a, 1
  %x2 = add i64 %b, 2
  %x3 = add i64 %c, 3
  %x4 = mul i64 %a, %b
  %x5 = mul i64 %c, %d
  %x6 = mul i64 %e, %f
  %r = call anyregcc i64 (i64, i32, i8*, i32, ...) @llvm.experimental.patchpoint.i64(i64 1040, i32 16, i8* null, i32 6,
      i64 %x1, i64 %x2, i64 %x3, i64 %x4, i64 %x5, i64 %x6,
      i64 %a, i64 %b, i64 %c, i64 %d, i64 %e, i64 %f)
  %s1 = add i64 %r, %a
  %s2 = add i64 %s1, %b
  %s3 = add i64 %s2, %c
  %s4 = add i64 %s3, %d
  %s5 = add i64 %s4, %e
  %s6 = add i64 %s5, %f
  ret i64 %s6
}

; A patch point after a call, with values kept in callee-saved registers
; across it (they show up as live-outs).  No call may follow a patch point in
; the same function: llc-14 (any -O) then crashes in
; StackMaps::createLiveOutReg, because the live-out set holds a register with
; no DWARF number (-enable-patchpoint-liveness=false avoids the crash, and the
; live-outs).
define i64 @pp_liveouts(i64 %a, i64 %b, i64 %c) {
entry:
  call void @callee()
  call void (i64, i32, i8*, i32, ...) @llvm.experimental.patchpoint.void(i64 1050, i32 8, i8* null, i32 0, i64 %a)
  %s1 = add i64 %a, %b
  %s2 = add i64 %s1, %c
  ret i64 %s2
}
