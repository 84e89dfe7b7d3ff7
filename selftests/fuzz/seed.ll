; SPDX-License-Identifier: MIT
;
; Seed input for the fuzzers (selftests/fuzz/make-seeds.sh): one small module
; that makes llc-14 emit every kind of entry faultline parses, so that the
; extracted sections and objects start the fuzzers from real LLVM output:
; implicit null checks of the three fault kinds, a stack map with Constant,
; ConstantIndex, Register, Direct and Indirect locations, a patch point with
; live-outs, a deoptimization record and a function with a dynamic frame.

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

declare void @llvm.experimental.stackmap(i64, i32, ...)
declare void @llvm.experimental.patchpoint.void(i64, i32, i8*, i32, ...)
declare i64 @llvm.experimental.deoptimize.i64(...)
declare void @throw_npe()
declare void @callee()
declare void @use(i8*)

; FaultingLoad.
define i64 @fm_load(i64* %p) {
entry:
  %c = icmp eq i64* %p, null
  br i1 %c, label %isnull, label %notnull, !make.implicit !0
notnull:
  %v = load i64, i64* %p
  ret i64 %v
isnull:
  call void @throw_npe()
  ret i64 0
}

; FaultingStore, at an offset.
define void @fm_store(i32* %p, i32 %v) {
entry:
  %c = icmp eq i32* %p, null
  br i1 %c, label %isnull, label %notnull, !make.implicit !0
notnull:
  %q = getelementptr i32, i32* %p, i64 6
  store i32 %v, i32* %q
  ret void
isnull:
  call void @throw_npe()
  ret void
}

; FaultingLoadStore (addl %esi, (%rdi)).
define void @fm_load_store(i32* %p, i32 %v) {
entry:
  %c = icmp eq i32* %p, null
  br i1 %c, label %isnull, label %notnull, !make.implicit !0
notnull:
  %o = load i32, i32* %p
  %n = add i32 %o, %v
  store i32 %n, i32* %p
  ret void
isnull:
  call void @throw_npe()
  ret void
}

; Constant, ConstantIndex (a repeated large value), Register, Direct and
; Indirect (a value spilled across the call) locations.
define i64 @sm_kinds(i64 %a, double %f) {
entry:
  %slot = alloca i64
  store i64 %a, i64* %slot
  call void @callee()
  call void (i64, i32, ...) @llvm.experimental.stackmap(i64 7, i32 4,
      i64 -1, i64 4294967296, i64 4294967296, i64 %a, double %f, i64* %slot)
  %r = load i64, i64* %slot
  ret i64 %r
}

; A patch point after a call: callee-saved registers are live-outs.
define i64 @pp_live_outs(i64 %a, i64 %b) {
entry:
  call void @callee()
  call void (i64, i32, i8*, i32, ...) @llvm.experimental.patchpoint.void(i64 9, i32 16, i8* null, i32 0, i64 %a)
  %s = add i64 %a, %b
  ret i64 %s
}

; A deoptimization record (ID 0xABCDEF0F, three leading constants).
define i64 @dp_exit(i64 %a, i64 %b) {
entry:
  %c = icmp ult i64 %a, %b
  br i1 %c, label %deopt, label %ok
ok:
  ret i64 %a
deopt:
  %r = call i64 (...) @llvm.experimental.deoptimize.i64(i64 %a) [ "deopt"(i64 %b, i32 3) ]
  ret i64 %r
}

; A dynamic alloca: StackSize is UINT64_MAX.
define void @sm_dynamic(i64 %n) {
entry:
  %buf = alloca i8, i64 %n
  call void @use(i8* %buf)
  call void (i64, i32, ...) @llvm.experimental.stackmap(i64 11, i32 0, i8* %buf, i64 %n)
  ret void
}

!0 = !{}
