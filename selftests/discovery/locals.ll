; SPDX-License-Identifier: MIT
;
; Functions the discovery tests look for that have no preemptible symbol:
; in an object the maps refer to dt_local as .text + offset, in -shared both
; get R_X86_64_RELATIVE.  lld 14 -pie without -z notext refuses to link them
; ("cannot preempt symbol: dt_hidden", "relocation R_X86_64_64 cannot be used
; against local symbol"), so that mode links only globals.ll.
;   dt_hidden  hidden: fault map
;   dt_local   internal: fault map and stack map; dt_local_addr returns it

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

declare void @llvm.experimental.stackmap(i64, i32, ...)

define hidden i32 @dt_hidden(i32* %p) {
entry:
  %c = icmp eq i32* %p, null
  br i1 %c, label %isnull, label %notnull, !make.implicit !0
notnull:
  %v = load i32, i32* %p
  %r = add i32 %v, 7
  ret i32 %r
isnull:
  ret i32 -2
}

define internal i64 @dt_local(i64* %p, i64 %a) noinline {
entry:
  call void (i64, i32, ...) @llvm.experimental.stackmap(i64 11, i32 0, i64 %a)
  %c = icmp eq i64* %p, null
  br i1 %c, label %isnull, label %notnull, !make.implicit !0
notnull:
  %v = load i64, i64* %p
  %r = add i64 %v, %a
  ret i64 %r
isnull:
  ret i64 -3
}

define i8* @dt_local_addr() {
  ret i8* bitcast (i64 (i64*, i64)* @dt_local to i8*)
}

define i64 @dt_call_local(i64* %p, i64 %a) {
  %r = call i64 @dt_local(i64* %p, i64 %a)
  ret i64 %r
}

!0 = !{}
