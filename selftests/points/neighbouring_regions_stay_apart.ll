; SPDX-License-Identifier: MIT
;
; Two patch points back to back, nops only (llc-14 emits them so, as in
; selftests/progs/patchpoints.ll's pp_null_targets): ID 60's 8 bytes end
; where ID 61's 8 bytes start, then the epilogue.  A write of one must not
; reach into the other.

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

declare void @llvm.experimental.patchpoint.void(i64, i32, i8*, i32, ...)

define void @pp_pair() {
  call void (i64, i32, i8*, i32, ...) @llvm.experimental.patchpoint.void(i64 60, i32 8, i8* null, i32 0)
  call void (i64, i32, i8*, i32, ...) @llvm.experimental.patchpoint.void(i64 61, i32 8, i8* null, i32 0)
  ret void
}
