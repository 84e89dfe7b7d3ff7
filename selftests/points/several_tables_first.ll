; SPDX-License-Identifier: MIT
;
; The first of two objects linked into records_of_every_table_are_placed:
; each object has its own .llvm_stackmaps table, and ld puts the second
; table after this one in the program's section.  Two functions here, so
; that the second table's function 0 is the section's function 2.
;  - ID 70, 16 bytes of nops in tbl_first_a, which returns what they
;    leave in %rax (the test writes mov $imm, %eax there first);
;  - ID 71, the same in tbl_first_b.

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

declare i64 @llvm.experimental.patchpoint.i64(i64, i32, i8*, i32, ...)

define i64 @tbl_first_a() {
  %r = call i64 (i64, i32, i8*, i32, ...) @llvm.experimental.patchpoint.i64(i64 70, i32 16, i8* null, i32 0)
  ret i64 %r
}

define i64 @tbl_first_b() {
  %r = call i64 (i64, i32, i8*, i32, ...) @llvm.experimental.patchpoint.i64(i64 71, i32 16, i8* null, i32 0)
  ret i64 %r
}
