; SPDX-License-Identifier: MIT
;
; docs/codegen.md's deoptimization: compiled code that assumes every item
; has a price (a guard), and when one has none hands its state, in "deopt"
; operand bundles, to the runtime (deopt.c) to finish the work another way.
; llvm.experimental.guard must be lowered before llc:
;   opt-14 -passes=lower-guard-intrinsic
; turns each guard into a branch to llvm.experimental.deoptimize, which
; llc-14 lowers to a call to __llvm_deoptimize (libfaultline) with a stack
; map record (ID 0xABCDEF0F) of the deopt state.

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

declare void @llvm.experimental.guard(i1, ...)

; The sum of prices[0..n), assuming every price is positive; a price of 0
; or less deoptimizes with the index and the sum so far.
define i64 @total(i32* %prices, i32 %n) {
entry:
  br label %loop

loop:
  %i = phi i32 [ 0, %entry ], [ %next, %body ]
  %sum = phi i64 [ 0, %entry ], [ %sum.next, %body ]
  %done = icmp sge i32 %i, %n
  br i1 %done, label %exit, label %body

body:
  %slot = getelementptr i32, i32* %prices, i32 %i
  %price = load i32, i32* %slot
  %positive = icmp sgt i32 %price, 0
  call void (i1, ...) @llvm.experimental.guard(i1 %positive) [ "deopt"(i32 %i, i64 %sum) ]
  %wide = sext i32 %price to i64
  %sum.next = add i64 %sum, %wide
  %next = add i32 %i, 1
  br label %loop

exit:
  ret i64 %sum
}
