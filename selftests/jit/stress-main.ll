; SPDX-License-Identifier: MIT
;
; Implicit null checks linked into the stress test program itself
; (llc-14 -O2 -relocation-model=pic -enable-implicit-null-checks, gcc -pie
; -z notext: the fault map gets R_X86_64_RELATIVE relocations, TEXTREL).
; The null blocks return values no valid call returns.
;   st_load   FaultingLoad        null: -1
;   st_store  FaultingStore       null: -2, else 0
;   st_rmw    FaultingLoadStore   null: -3, else 0 (addl $1, (%rdi))

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

define i32 @st_load(i32* %p) {
entry:
  %c = icmp eq i32* %p, null
  br i1 %c, label %isnull, label %ok, !make.implicit !0
ok:
  %v = load i32, i32* %p
  ret i32 %v
isnull:
  ret i32 -1
}

define i32 @st_store(i64* %p, i64 %x) {
entry:
  %c = icmp eq i64* %p, null
  br i1 %c, label %isnull, label %ok, !make.implicit !0
ok:
  store i64 %x, i64* %p
  ret i32 0
isnull:
  ret i32 -2
}

define i32 @st_rmw(i32* %p) {
entry:
  %c = icmp eq i32* %p, null
  br i1 %c, label %isnull, label %ok, !make.implicit !0
ok:
  %v = load i32, i32* %p
  %a = add i32 %v, 1
  store i32 %a, i32* %p
  ret i32 0
isnull:
  ret i32 -3
}

!0 = !{}
