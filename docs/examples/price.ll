; SPDX-License-Identifier: MIT
;
; docs/codegen.md's implicit null checks: a load and a store whose explicit
; null checks llc-14 folds into the memory access itself.  LLVM 14 IR
; (typed pointers).  The AOT examples link it into programs and libraries;
; the JIT examples (mcjit.c, orc.c) compile this same file in memory.

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

; The price at *item, or -1 when item is null.
define i32 @price_of(i32* %item) {
entry:
  %is_null = icmp eq i32* %item, null
  br i1 %is_null, label %no_item, label %load, !make.implicit !0

load:
  %price = load i32, i32* %item
  ret i32 %price

no_item:
  ret i32 -1
}

; Sets *item to price; returns 0, or 1 when item is null.
define i32 @set_price(i32* %item, i32 %price) {
entry:
  %is_null = icmp eq i32* %item, null
  br i1 %is_null, label %no_item, label %store, !make.implicit !0

store:
  store i32 %price, i32* %item
  ret i32 0

no_item:
  ret i32 1
}

!0 = !{}
