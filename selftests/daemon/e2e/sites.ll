; SPDX-License-Identifier: MIT
;
; The workload of the daemon's end-to-end tests (prog.c): three implicit
; null checks, one of each kind, and a stack map record, compiled by
; llc-14 -O2 -enable-implicit-null-checks.  A NULL argument ends in the
; null block, which returns a sentinel: each call with NULL is one failed
; check, counted by faultline in the process's shared region.
;   e2e_load    FaultingLoad       returns -1
;   e2e_store   FaultingStore      returns nothing
;   e2e_rmw     FaultingLoadStore  returns nothing
;   e2e_sm      a stack map record, ID 4242, one constant and one register

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

declare void @llvm.experimental.stackmap(i64, i32, ...)

define i32 @e2e_load(i32* %p) {
entry:
  %c = icmp eq i32* %p, null
  br i1 %c, label %isnull, label %notnull, !make.implicit !0
notnull:
  %v = load i32, i32* %p
  ret i32 %v
isnull:
  ret i32 -1
}

define i32 @e2e_store(i32* %p, i32 %x) {
entry:
  %c = icmp eq i32* %p, null
  br i1 %c, label %isnull, label %notnull, !make.implicit !0
notnull:
  store i32 %x, i32* %p
  ret i32 0
isnull:
  ret i32 -1
}

define i32 @e2e_rmw(i32* %p, i32 %x) {
entry:
  %c = icmp eq i32* %p, null
  br i1 %c, label %isnull, label %notnull, !make.implicit !0
notnull:
  %v = load i32, i32* %p
  %a = add i32 %v, %x
  store i32 %a, i32* %p
  ret i32 0
isnull:
  ret i32 -1
}

define i64 @e2e_sm(i64 %x) {
entry:
  %y = mul i64 %x, 3
  call void (i64, i32, ...) @llvm.experimental.stackmap(i64 4242, i32 0, i64 7, i64 %y)
  ret i64 %y
}

!0 = !{}
