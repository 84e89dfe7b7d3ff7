; SPDX-License-Identifier: MIT
;
; The implicit null checks the shim tests run (LLVM 14 IR, typed pointers).
; Built twice at -O2: with -enable-implicit-null-checks (the checks become
; faulting memory operations listed in .llvm_faultmaps) and without (an
; explicit test/je stays).  Either way a NULL argument ends in the null
; block, which records the site (site_null, record.c) and returns a
; sentinel, so the two builds print the same thing when faultline handles
; the implicit one's faults.
;
; Every function is global with default visibility: lld -pie accepts only
; those in a fault map (a hidden one fails with "cannot preempt symbol").
; Kinds, as llvm-objdump-14 --fault-map-section lists them:
;   site_load_i32       FaultingLoad       id 1, returns -1
;   site_load_i8        FaultingLoad       id 2, returns -2
;   site_load_i64_off   FaultingLoad       id 3, returns -3 (offset 4000)
;   site_store_i32      FaultingStore      id 4
;   site_store_i64_off  FaultingStore      id 6 (offset 2048)
;   site_rmw_add_i32    FaultingLoadStore  id 5 (addl %esi,(%rdi))
;   site_load_nocall    FaultingLoad       returns -7, calls nothing (the
;                                          dlclose test runs a copy of it)

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

declare void @site_null(i32)

define i32 @site_load_i32(i32* %p) {
entry:
  %c = icmp eq i32* %p, null
  br i1 %c, label %isnull, label %notnull, !make.implicit !0
notnull:
  %v = load i32, i32* %p
  ret i32 %v
isnull:
  call void @site_null(i32 1)
  ret i32 -1
}

define i32 @site_load_i8(i8* %p) {
entry:
  %c = icmp eq i8* %p, null
  br i1 %c, label %isnull, label %notnull, !make.implicit !0
notnull:
  %v = load i8, i8* %p
  %z = zext i8 %v to i32
  ret i32 %z
isnull:
  call void @site_null(i32 2)
  ret i32 -2
}

define i64 @site_load_i64_off(i64* %p) {
entry:
  %c = icmp eq i64* %p, null
  br i1 %c, label %isnull, label %notnull, !make.implicit !0
notnull:
  %f = getelementptr i64, i64* %p, i64 500
  %v = load i64, i64* %f
  ret i64 %v
isnull:
  call void @site_null(i32 3)
  ret i64 -3
}

define void @site_store_i32(i32* %p, i32 %x) {
entry:
  %c = icmp eq i32* %p, null
  br i1 %c, label %isnull, label %notnull, !make.implicit !0
notnull:
  store i32 %x, i32* %p
  ret void
isnull:
  call void @site_null(i32 4)
  ret void
}

define void @site_rmw_add_i32(i32* %p, i32 %x) {
entry:
  %c = icmp eq i32* %p, null
  br i1 %c, label %isnull, label %notnull, !make.implicit !0
notnull:
  %v = load i32, i32* %p
  %a = add i32 %v, %x
  store i32 %a, i32* %p
  ret void
isnull:
  call void @site_null(i32 5)
  ret void
}

define void @site_store_i64_off(i64* %p, i64 %x) {
entry:
  %c = icmp eq i64* %p, null
  br i1 %c, label %isnull, label %notnull, !make.implicit !0
notnull:
  %f = getelementptr i64, i64* %p, i64 256
  store i64 %x, i64* %f
  ret void
isnull:
  call void @site_null(i32 6)
  ret void
}

define i32 @site_load_nocall(i32* %p) {
entry:
  %c = icmp eq i32* %p, null
  br i1 %c, label %isnull, label %notnull, !make.implicit !0
notnull:
  %v = load i32, i32* %p
  ret i32 %v
isnull:
  ret i32 -7
}

!0 = !{}
