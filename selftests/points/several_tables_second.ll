; SPDX-License-Identifier: MIT
;
; The second object of records_of_every_table_are_placed, with its own
; .llvm_stackmaps table (its function 0 is the section's function 2).
;  - ID 72, 16 bytes of nops in tbl_second right after its second call of
;    tbl_opaque (the call's return address is the record's address), well
;    into the function: resolved by the wrong function (the first table's
;    function 0) its address lands elsewhere;
;  - ID 73, a stack map record with a 16-byte shadow in tbl_second_sm,
;    right after its call of tbl_opaque.

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

declare i64 @llvm.experimental.patchpoint.i64(i64, i32, i8*, i32, ...)
declare void @llvm.experimental.stackmap(i64, i32, ...)
declare void @tbl_opaque(i64*)

define i64 @tbl_second(i64 %a) {
  %slot = alloca i64
  store i64 %a, i64* %slot
  call void @tbl_opaque(i64* %slot)
  call void @tbl_opaque(i64* %slot)
  %r = call i64 (i64, i32, i8*, i32, ...) @llvm.experimental.patchpoint.i64(i64 72, i32 16, i8* null, i32 0)
  ret i64 %r
}

define i64 @tbl_second_sm(i64 %a) {
  %slot = alloca i64
  store i64 %a, i64* %slot
  call void @tbl_opaque(i64* %slot)
  call void (i64, i32, ...) @llvm.experimental.stackmap(i64 73, i32 16, i64* %slot)
  %v = load i64, i64* %slot
  ret i64 %v
}
