; SPDX-License-Identifier: MIT
;
; docs/codegen.md's stack maps and patch points.  discount() calls
; full_price through a patch point: llc-14 reserves 16 bytes (movabsq
; $full_price, %r11; callq *%r11; nops) that the runtime may rewrite
; (points.c).  Both intrinsics leave a record in .llvm_stackmaps: its ID,
; its offset in the function, and where each live value is.

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

declare void @llvm.experimental.stackmap(i64, i32, ...)
declare i64 @llvm.experimental.patchpoint.i64(i64, i32, i8*, i32, ...)

define i64 @full_price(i64 %price) {
  ret i64 %price
}

define i64 @discount(i64 %price) {
entry:
  ; Record 8: where %price is here (no shadow bytes).
  call void (i64, i32, ...) @llvm.experimental.stackmap(i64 8, i32 0, i64 %price)
  ; Record 7: 16 bytes that call full_price(%price) until rewritten.
  %r = call i64 (i64, i32, i8*, i32, ...) @llvm.experimental.patchpoint.i64(
           i64 7, i32 16, i8* bitcast (i64 (i64)* @full_price to i8*), i32 1, i64 %price)
  ret i64 %r
}
