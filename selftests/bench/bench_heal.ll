; SPDX-License-Identifier: MIT
;
; The site bench_heal times: one implicit null check (movq 8(%rdi), %rax)
; in a function of its own.  selftests/bench/build.mk compiles it with
; -enable-implicit-null-checks, and again without (the explicit test/je)
; after renaming bh_ to bx_, so both forms link into one program.

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

define i64 @bh_load(i64* %p) {
entry:
  %c = icmp eq i64* %p, null
  br i1 %c, label %isnull, label %notnull, !make.implicit !0
notnull:
  %f = getelementptr i64, i64* %p, i64 1
  %v = load i64, i64* %f
  ret i64 %v
isnull:
  ret i64 -1
}

; The same load followed by a 7-byte RIP-relative store of its value: the
; successor that T2 evicts (bench_heal heals it with T2 alone).
@bh_last = global i64 0

define i64 @bh_load_store(i64* %p) {
entry:
  %c = icmp eq i64* %p, null
  br i1 %c, label %isnull, label %notnull, !make.implicit !0
notnull:
  %f = getelementptr i64, i64* %p, i64 1
  %v = load i64, i64* %f
  store i64 %v, i64* @bh_last
  ret i64 %v
isnull:
  ret i64 -1
}

!0 = !{}
