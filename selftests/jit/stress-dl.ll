; SPDX-License-Identifier: MIT
;
; The library the stress test dlopens and dlcloses in a loop (gcc -shared
; -z notext).
;   sd_load   FaultingLoad        null: -6

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

define i32 @sd_load(i32* %p) {
entry:
  %c = icmp eq i32* %p, null
  br i1 %c, label %isnull, label %ok, !make.implicit !0
ok:
  %v = load i32, i32* %p
  ret i32 %v
isnull:
  ret i32 -6
}

!0 = !{}
