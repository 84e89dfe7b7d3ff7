; SPDX-License-Identifier: MIT
;
; Functions the discovery tests look for (llc-14 -enable-implicit-null-checks):
; global, default visibility, so every link mode accepts them.  In -shared
; they get a symbolic R_X86_64_64 (GNU ld, lld -z notext); lld -pie gives
; them canonical PLT entries and leaves link-time values in the maps.
;   dt_load    fault map (FaultingLoad)
;   dt_store   fault map (FaultingStore)
;   dt_sm      stack map

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

declare void @llvm.experimental.stackmap(i64, i32, ...)

define i32 @dt_load(i32* %p) {
entry:
  %c = icmp eq i32* %p, null
  br i1 %c, label %isnull, label %notnull, !make.implicit !0
notnull:
  %v = load i32, i32* %p
  ret i32 %v
isnull:
  ret i32 -1
}

define void @dt_store(i64* %p, i64 %x) {
entry:
  %c = icmp eq i64* %p, null
  br i1 %c, label %isnull, label %notnull, !make.implicit !0
notnull:
  store i64 %x, i64* %p
  ret void
isnull:
  ret void
}

define i64 @dt_sm(i64 %a) {
entry:
  call void (i64, i32, ...) @llvm.experimental.stackmap(i64 7, i32 0, i64 %a)
  %r = add i64 %a, 1
  ret i64 %r
}

!0 = !{}
