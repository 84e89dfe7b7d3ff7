; SPDX-License-Identifier: MIT
;
; Deoptimization records: llvm.experimental.deoptimize and gc.statepoint
; with a "deopt" operand bundle.
;
; What llc-14 makes of it (llvm-readelf-14 --stackmap):
;  - a call to llvm.experimental.deoptimize.<ty> becomes a call to
;    __llvm_deoptimize (the arguments follow the C convention) and a record
;    with ID 0xABCDEF0F (2882400015) whose first three locations are
;    Constants: calling convention, flags, number of deopt values; then the
;    deopt values (then, for a statepoint, the GC pointers: base and derived
;    for each);
;  - a statepoint's record has the statepoint's ID and sits at the return
;    address of the call; with numPatchBytes the call is replaced by that
;    many nop bytes;
;  - llc-14 does not lower llvm.experimental.guard (opt's
;    -lower-guard-intrinsic does, into a branch to a deoptimize call, which
;    is what @dp_guard_lowered spells out by hand).

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

declare i32 @llvm.experimental.deoptimize.i32(...)
declare i64 @llvm.experimental.deoptimize.i64(...)
declare void @llvm.experimental.deoptimize.isVoid(...)
declare double @llvm.experimental.deoptimize.f64(...)
declare token @llvm.experimental.gc.statepoint.p0f_isVoidf(i64, i32, void ()*, i32, i32, ...)
declare i8 addrspace(1)* @llvm.experimental.gc.relocate.p1i8(token, i32, i32)
declare void @callee()

; Deopt values in registers, spilled, small and large constants.
define i32 @dp_values(i32 %x, i64 %y) {
entry:
  %c = icmp sgt i32 %x, 10
  br i1 %c, label %deopt, label %ok, !prof !1
ok:
  ret i32 %x
deopt:
  %r = call i32 (...) @llvm.experimental.deoptimize.i32(i32 %x, i64 %y)
      [ "deopt"(i32 1, i64 %y, i32 %x, i64 -1, i64 4294967296, i64 -9223372036854775808) ]
  ret i32 %r
}

; No deopt values at all.
define void @dp_empty(i64* %p) {
entry:
  %v = load i64, i64* %p
  %c = icmp eq i64 %v, 0
  br i1 %c, label %deopt, label %ok
ok:
  ret void
deopt:
  call void (...) @llvm.experimental.deoptimize.isVoid() [ "deopt"() ]
  ret void
}

; Two deoptimization exits in one function, returning i64 and with a
; pointer and an alloca among the deopt state.
define i64 @dp_two_exits(i64* %p, i64 %a, i64 %b) {
entry:
  %slot = alloca i64
  store i64 %a, i64* %slot
  %c1 = icmp ult i64 %a, %b
  br i1 %c1, label %d1, label %next
next:
  %v = load i64, i64* %p
  %c2 = icmp eq i64 %v, %a
  br i1 %c2, label %d2, label %ok
ok:
  ret i64 %v
d1:
  %r1 = call i64 (...) @llvm.experimental.deoptimize.i64(i64 %a) [ "deopt"(i64* %p, i64* %slot, i64 %b) ]
  ret i64 %r1
d2:
  %r2 = call i64 (...) @llvm.experimental.deoptimize.i64(i64 %v, i64 %b) [ "deopt"(i64 %v, i64 %a, i64 %b, double 2.5) ]
  ret i64 %r2
}

; A guard, lowered by hand the way -lower-guard-intrinsic does.
define double @dp_guard_lowered(double %x, i1 %cond) {
entry:
  br i1 %cond, label %guarded, label %deopt, !prof !2
guarded:
  %y = fmul double %x, 2.0
  ret double %y
deopt:
  %r = call double (...) @llvm.experimental.deoptimize.f64(double %x) [ "deopt"(double %x, i32 42) ]
  ret double %r
}

; Statepoints: a deopt bundle and GC pointers.
define void @dp_statepoint(i64 %a) gc "statepoint-example" {
entry:
  %t = call token (i64, i32, void ()*, i32, i32, ...) @llvm.experimental.gc.statepoint.p0f_isVoidf(i64 2882400000, i32 0, void ()* elementtype(void ()) @callee, i32 0, i32 0, i32 0, i32 0)
      [ "deopt"(i64 %a, i32 5) ]
  ret void
}

define i8 addrspace(1)* @dp_statepoint_gc(i8 addrspace(1)* %obj, i64 %a) gc "statepoint-example" {
entry:
  %derived = getelementptr i8, i8 addrspace(1)* %obj, i64 16
  %t = call token (i64, i32, void ()*, i32, i32, ...) @llvm.experimental.gc.statepoint.p0f_isVoidf(i64 7, i32 0, void ()* elementtype(void ()) @callee, i32 0, i32 0, i32 0, i32 0)
      [ "deopt"(i64 %a, i64 4294967296), "gc-live"(i8 addrspace(1)* %obj, i8 addrspace(1)* %derived) ]
  %obj.r = call i8 addrspace(1)* @llvm.experimental.gc.relocate.p1i8(token %t, i32 0, i32 0)
  %der.r = call i8 addrspace(1)* @llvm.experimental.gc.relocate.p1i8(token %t, i32 0, i32 1)
  %o = getelementptr i8, i8 addrspace(1)* %der.r, i64 -16
  %eq = icmp eq i8 addrspace(1)* %o, %obj.r
  %res = select i1 %eq, i8 addrspace(1)* %obj.r, i8 addrspace(1)* %der.r
  ret i8 addrspace(1)* %res
}

; A patchable statepoint: 16 bytes of nops instead of the call.
define void @dp_statepoint_patchable(i64 %a) gc "statepoint-example" {
entry:
  %t = call token (i64, i32, void ()*, i32, i32, ...) @llvm.experimental.gc.statepoint.p0f_isVoidf(i64 8, i32 16, void ()* elementtype(void ()) @callee, i32 0, i32 0, i32 0, i32 0)
      [ "deopt"(i64 %a) ]
  ret void
}

!1 = !{!"branch_weights", i32 1, i32 1000}
!2 = !{!"branch_weights", i32 1000, i32 1}
