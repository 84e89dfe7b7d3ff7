; SPDX-License-Identifier: MIT
;
; The patch points rewrites_while_threads_call rewrites: four with a call
; target (movabsq $pt_one, %r11; callq *%r11, then nops) and four with none
; (nops only), each of 13, 16, 32 and 64 bytes.  Each function returns what
; its patch point leaves in %rax.

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

declare i64 @llvm.experimental.patchpoint.i64(i64, i32, i8*, i32, ...)
declare i64 @pt_one()

define i64 @pp_call13() {
  %r = call i64 (i64, i32, i8*, i32, ...) @llvm.experimental.patchpoint.i64(i64 1, i32 13, i8* bitcast (i64 ()* @pt_one to i8*), i32 0)
  ret i64 %r
}

define i64 @pp_call16() {
  %r = call i64 (i64, i32, i8*, i32, ...) @llvm.experimental.patchpoint.i64(i64 2, i32 16, i8* bitcast (i64 ()* @pt_one to i8*), i32 0)
  ret i64 %r
}

define i64 @pp_call32() {
  %r = call i64 (i64, i32, i8*, i32, ...) @llvm.experimental.patchpoint.i64(i64 3, i32 32, i8* bitcast (i64 ()* @pt_one to i8*), i32 0)
  ret i64 %r
}

define i64 @pp_call64() {
  %r = call i64 (i64, i32, i8*, i32, ...) @llvm.experimental.patchpoint.i64(i64 4, i32 64, i8* bitcast (i64 ()* @pt_one to i8*), i32 0)
  ret i64 %r
}

define i64 @pp_nops13() {
  %r = call i64 (i64, i32, i8*, i32, ...) @llvm.experimental.patchpoint.i64(i64 5, i32 13, i8* null, i32 0)
  ret i64 %r
}

define i64 @pp_nops16() {
  %r = call i64 (i64, i32, i8*, i32, ...) @llvm.experimental.patchpoint.i64(i64 6, i32 16, i8* null, i32 0)
  ret i64 %r
}

define i64 @pp_nops32() {
  %r = call i64 (i64, i32, i8*, i32, ...) @llvm.experimental.patchpoint.i64(i64 7, i32 32, i8* null, i32 0)
  ret i64 %r
}

define i64 @pp_nops64() {
  %r = call i64 (i64, i32, i8*, i32, ...) @llvm.experimental.patchpoint.i64(i64 8, i32 64, i8* null, i32 0)
  ret i64 %r
}
