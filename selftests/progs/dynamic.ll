; SPDX-License-Identifier: MIT
;
; Functions whose frame size is not known at compile time.
;
; What llc-14 makes of it (llvm-readelf-14 --stackmap): a function with a
; variable-sized alloca, or one whose stack must be realigned (an alloca
; aligned more than the 16-byte ABI alignment), gets StackSize UINT64_MAX
; (18446744073709551615); Direct and Indirect locations in it are relative
; to rbp (DWARF 6) or, when realigned, to rbx or rsp.

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

declare void @llvm.experimental.stackmap(i64, i32, ...)
declare void @llvm.experimental.patchpoint.void(i64, i32, i8*, i32, ...)
declare void @callee()
declare i64 @callee_i64(i64)

; A variable-sized alloca.
define void @dyn_vla(i64 %n) {
entry:
  %a = alloca i8, i64 %n
  call void (i64, i32, ...) @llvm.experimental.stackmap(i64 2000, i32 0, i8* %a, i64 %n)
  call void @callee()
  ret void
}

; A realigned frame (no variable-sized object).
define void @dyn_realigned(i64 %x) {
entry:
  %a = alloca i64, align 64
  %b = alloca [4 x i64]
  store i64 %x, i64* %a
  call void (i64, i32, ...) @llvm.experimental.stackmap(i64 2001, i32 0, i64* %a, [4 x i64]* %b, i64 %x)
  call void @callee()
  ret void
}

; Both, with spilled values across calls and a patch point.
define i64 @dyn_both(i64 %n, i64 %a, i64 %b, i64 %c, i64 %d) {
entry:
  %big = alloca i64, align 128
  %v = alloca i64, i64 %n
  store i64 %a, i64* %big
  %x = call i64 @callee_i64(i64 %a)
  %y = call i64 @callee_i64(i64 %b)
  %z = call i64 @callee_i64(i64 %c)
  ; no call after a patch point: see patchpoints.ll
  call void (i64, i32, i8*, i32, ...) @llvm.experimental.patchpoint.void(i64 2002, i32 16, i8* null, i32 0,
      i64* %big, i64* %v, i64 %a, i64 %b, i64 %c, i64 %d, i64 %x, i64 %y)
  %s1 = add i64 %x, %y
  %s2 = add i64 %s1, %z
  %s3 = add i64 %s2, %d
  %s4 = add i64 %s3, %a
  %s5 = add i64 %s4, %b
  ret i64 %s5
}

; A fixed frame in the same table, for contrast.
define void @dyn_fixed() {
entry:
  %a = alloca [8 x i64]
  call void (i64, i32, ...) @llvm.experimental.stackmap(i64 2003, i32 0, [8 x i64]* %a)
  call void @callee()
  ret void
}
