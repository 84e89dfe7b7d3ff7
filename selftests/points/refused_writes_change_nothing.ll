; SPDX-License-Identifier: MIT
;
; The patch points refused_writes_change_nothing reads, declares and writes:
;  - IDs 30-33: nops only, 5, 16, 32 and 64 bytes (derived extents);
;  - IDs 34-36: movabsq $pt_one, %r11; callq *%r11 and nops, 13, 16 and 32
;    bytes (derived extents);
;  - ID 37 twice, 8 bytes of nops in two functions (not unique);
;  - ID 38, 24 bytes of nops, for the declarations.

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

declare i64 @llvm.experimental.patchpoint.i64(i64, i32, i8*, i32, ...)
declare i64 @pt_one()

define i64 @pp_nops5() {
  %r = call i64 (i64, i32, i8*, i32, ...) @llvm.experimental.patchpoint.i64(i64 30, i32 5, i8* null, i32 0)
  ret i64 %r
}

define i64 @pp_nops16() {
  %r = call i64 (i64, i32, i8*, i32, ...) @llvm.experimental.patchpoint.i64(i64 31, i32 16, i8* null, i32 0)
  ret i64 %r
}

define i64 @pp_nops32() {
  %r = call i64 (i64, i32, i8*, i32, ...) @llvm.experimental.patchpoint.i64(i64 32, i32 32, i8* null, i32 0)
  ret i64 %r
}

define i64 @pp_nops64() {
  %r = call i64 (i64, i32, i8*, i32, ...) @llvm.experimental.patchpoint.i64(i64 33, i32 64, i8* null, i32 0)
  ret i64 %r
}

define i64 @pp_call13() {
  %r = call i64 (i64, i32, i8*, i32, ...) @llvm.experimental.patchpoint.i64(i64 34, i32 13, i8* bitcast (i64 ()* @pt_one to i8*), i32 0)
  ret i64 %r
}

define i64 @pp_call16() {
  %r = call i64 (i64, i32, i8*, i32, ...) @llvm.experimental.patchpoint.i64(i64 35, i32 16, i8* bitcast (i64 ()* @pt_one to i8*), i32 0)
  ret i64 %r
}

define i64 @pp_call32() {
  %r = call i64 (i64, i32, i8*, i32, ...) @llvm.experimental.patchpoint.i64(i64 36, i32 32, i8* bitcast (i64 ()* @pt_one to i8*), i32 0)
  ret i64 %r
}

define i64 @pp_twin_a() {
  %r = call i64 (i64, i32, i8*, i32, ...) @llvm.experimental.patchpoint.i64(i64 37, i32 8, i8* null, i32 0)
  ret i64 %r
}

define i64 @pp_twin_b() {
  %r = call i64 (i64, i32, i8*, i32, ...) @llvm.experimental.patchpoint.i64(i64 37, i32 8, i8* null, i32 0)
  ret i64 %r
}

define i64 @pp_declared() {
  %r = call i64 (i64, i32, i8*, i32, ...) @llvm.experimental.patchpoint.i64(i64 38, i32 24, i8* null, i32 0)
  ret i64 %r
}
