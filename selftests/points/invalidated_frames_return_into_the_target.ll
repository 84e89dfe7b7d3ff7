; SPDX-License-Identifier: MIT
;
; The stack map records invalidated_frames_return_into_the_target
; invalidates.  In each function a call to sm_block comes right before the
; llvm.experimental.stackmap, so a thread blocked in sm_block has the
; record's address as its return address.  The shadows hold the code that
; follows (a load, an add, the epilogue), not nops: the test declares them.
;  - ID 40, 16-byte shadow: invalidated to a near target (callq rel32);
;  - ID 41, 16-byte shadow: to a target beyond +-2 GiB (movabsq+callq, 13);
;  - ID 42, 8-byte shadow: the far target does not fit, the near one does;
;  - ID 43, 4-byte shadow: no call fits.

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

declare void @llvm.experimental.stackmap(i64, i32, ...)
declare void @sm_block(i64*)

define i64 @sm_near(i64 %a) {
  %slot = alloca i64
  store i64 %a, i64* %slot
  call void @sm_block(i64* %slot)
  call void (i64, i32, ...) @llvm.experimental.stackmap(i64 40, i32 16, i64* %slot)
  %v = load i64, i64* %slot
  %r = add i64 %v, 1
  ret i64 %r
}

define i64 @sm_far(i64 %a) {
  %slot = alloca i64
  store i64 %a, i64* %slot
  call void @sm_block(i64* %slot)
  call void (i64, i32, ...) @llvm.experimental.stackmap(i64 41, i32 16, i64* %slot)
  %v = load i64, i64* %slot
  %r = add i64 %v, 2
  ret i64 %r
}

define i64 @sm_small(i64 %a) {
  %slot = alloca i64
  store i64 %a, i64* %slot
  call void @sm_block(i64* %slot)
  call void (i64, i32, ...) @llvm.experimental.stackmap(i64 42, i32 8, i64* %slot)
  %v = load i64, i64* %slot
  %r = add i64 %v, 3
  ret i64 %r
}

define i64 @sm_tiny(i64 %a) {
  %slot = alloca i64
  store i64 %a, i64* %slot
  call void @sm_block(i64* %slot)
  call void (i64, i32, ...) @llvm.experimental.stackmap(i64 43, i32 4, i64* %slot)
  %v = load i64, i64* %slot
  %r = add i64 %v, 4
  ret i64 %r
}
