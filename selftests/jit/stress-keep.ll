; SPDX-License-Identifier: MIT
;
; Implicit null checks in a library the stress test program links (it
; stays loaded; fl_init finds it).  gcc -shared -z notext: symbolic
; R_X86_64_64 relocations in the fault map.
;   sk_load   FaultingLoad        null: -4
;   sk_store  FaultingStore       null: -5, else 0

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

define i64 @sk_load(i64* %p) {
entry:
  %c = icmp eq i64* %p, null
  br i1 %c, label %isnull, label %ok, !make.implicit !0
ok:
  %v = load i64, i64* %p
  ret i64 %v
isnull:
  ret i64 -4
}

define i32 @sk_store(i32* %p, i32 %x) {
entry:
  %c = icmp eq i32* %p, null
  br i1 %c, label %isnull, label %ok, !make.implicit !0
ok:
  store i32 %x, i32* %p
  ret i32 0
isnull:
  ret i32 -5
}

!0 = !{}
