; SPDX-License-Identifier: MIT
;
; The implicit null checks that selftests/daemon/heal heals (LLVM 14 IR,
; typed pointers).  Built twice by llc-14 -O2: with
; -enable-implicit-null-checks (each check becomes a faulting memory
; operation listed in .llvm_faultmaps) and without (an explicit test/je
; stays).  Either way a NULL argument ends in the null block, which calls
; null_hit(id) (prog.c counts them) and returns a sentinel, so that both
; builds print the same when faultline handles the implicit one's faults.
;
; What llc-14 makes of each (x86-64, the faulting instruction):
;   h_load_i32      id 1  movl (%rdi),%eax           2 bytes, returns -1
;   h_load_i8       id 2  movzbl (%rdi),%eax         3 bytes, returns -2
;   h_load_i64_off  id 3  movq 4000(%rdi),%rax       7 bytes, returns -3
;   h_store_i32     id 4  movl %esi,(%rdi)           2 bytes
;   h_rmw_add_i32   id 5  addl %esi,(%rdi)           2 bytes (FaultingLoadStore)
; Every function is global with default visibility.

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

declare void @null_hit(i32)

define i32 @h_load_i32(i32* %p) {
entry:
  %c = icmp eq i32* %p, null
  br i1 %c, label %isnull, label %notnull, !make.implicit !0
notnull:
  %v = load i32, i32* %p
  ret i32 %v
isnull:
  call void @null_hit(i32 1)
  ret i32 -1
}

define i32 @h_load_i8(i8* %p) {
entry:
  %c = icmp eq i8* %p, null
  br i1 %c, label %isnull, label %notnull, !make.implicit !0
notnull:
  %v = load i8, i8* %p
  %z = zext i8 %v to i32
  ret i32 %z
isnull:
  call void @null_hit(i32 2)
  ret i32 -2
}

define i64 @h_load_i64_off(i64* %p) {
entry:
  %c = icmp eq i64* %p, null
  br i1 %c, label %isnull, label %notnull, !make.implicit !0
notnull:
  %f = getelementptr i64, i64* %p, i64 500
  %v = load i64, i64* %f
  ret i64 %v
isnull:
  call void @null_hit(i32 3)
  ret i64 -3
}

define void @h_store_i32(i32* %p, i32 %x) {
entry:
  %c = icmp eq i32* %p, null
  br i1 %c, label %isnull, label %notnull, !make.implicit !0
notnull:
  store i32 %x, i32* %p
  ret void
isnull:
  call void @null_hit(i32 4)
  ret void
}

define void @h_rmw_add_i32(i32* %p, i32 %x) {
entry:
  %c = icmp eq i32* %p, null
  br i1 %c, label %isnull, label %notnull, !make.implicit !0
notnull:
  %v = load i32, i32* %p
  %a = add i32 %v, %x
  store i32 %a, i32* %p
  ret void
isnull:
  call void @null_hit(i32 5)
  ret void
}

!0 = !{}
