; SPDX-License-Identifier: MIT
;
; What a local user would go for in a set-id program linked with
; libfaultline (selftests/daemon/hostile/setid.c), built by llc-14 -O2
; -enable-implicit-null-checks:
;   setid_load   an implicit null check (faultline sites, heal)
;   setid_sm     stack map record 42 with a 16-byte shadow (faultline
;                stackmaps, invalidate: a call written there runs the
;                requester's target)
;   setid_pp     patch point 7, 16 bytes of nops, whose result is rax
;                (faultline patch)

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

declare void @llvm.experimental.stackmap(i64, i32, ...)
declare i64 @llvm.experimental.patchpoint.i64(i64, i32, i8*, i32, ...)

define i32 @setid_load(i32* %p) {
entry:
  %c = icmp eq i32* %p, null
  br i1 %c, label %isnull, label %notnull, !make.implicit !0
notnull:
  %v = load i32, i32* %p
  ret i32 %v
isnull:
  ret i32 -1
}

define i64 @setid_sm(i64 %a) {
entry:
  call void (i64, i32, ...) @llvm.experimental.stackmap(i64 42, i32 16, i64 %a)
  %b = add i64 %a, 1
  ret i64 %b
}

define i64 @setid_pp() {
entry:
  %r = call i64 (i64, i32, i8*, i32, ...) @llvm.experimental.patchpoint.i64(i64 7, i32 16, i8* null, i32 0)
  ret i64 %r
}

!0 = !{}
