; SPDX-License-Identifier: MIT
;
; The records faultline patch and faultline invalidate change in the tests
; (selftests/daemon/patch/run.sh), built by llc-14 -O2:
;  - patch point 7: 16 bytes of nops and no call target, in pp_value, whose
;    result is rax after the region (so that a region rewritten with
;    "mov $42, %rax" makes pp_value return 42);
;  - stack map record 9 in sm_fn, with a 16-byte shadow (which holds
;    sm_fn's own last instructions: prog.c declares its size).

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

declare i64 @llvm.experimental.patchpoint.i64(i64, i32, i8*, i32, ...)
declare void @llvm.experimental.stackmap(i64, i32, ...)

define i64 @pp_value() {
entry:
  %r = call i64 (i64, i32, i8*, i32, ...) @llvm.experimental.patchpoint.i64(i64 7, i32 16, i8* null, i32 0)
  ret i64 %r
}

define i64 @sm_fn(i64 %a) {
entry:
  call void (i64, i32, ...) @llvm.experimental.stackmap(i64 9, i32 16, i64 %a)
  %b = add i64 %a, 1
  ret i64 %b
}
