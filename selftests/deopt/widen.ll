; The seed's check-widening example (seeds/check-widening.txt): four
; stores, each after a guard on its index, the deopt state of each guard
; (the store to resume at, arr, len).  build.mk runs it through
; opt-14 -passes='guard-widening,lower-guard-intrinsic' and llc-14;
; widened_once.sh checks that one widened check is left, with the first
; guard's state, and widening.c that the result behaves as this does.
;
; Each check `K u< len` is written `len u> K`, the form LLVM keeps it in
; (instcombine puts the constant on the right, as any front end's IR has
; it by the time guard widening runs).  In that form guard widening folds
; the four into the one compare the seed shows, `3 u< len`; with the
; constant on the left it would only `and` them, four compares in the code.
target triple = "x86_64-unknown-linux-gnu"

declare void @llvm.experimental.guard(i1, ...)

define void @foo(i32* %arr, i32 %len) {
entry:
  %c0 = icmp ugt i32 %len, 0
  call void (i1, ...) @llvm.experimental.guard(i1 %c0) [ "deopt"(i32 0, i32* %arr, i32 %len) ]
  %p0 = getelementptr i32, i32* %arr, i64 0
  store i32 1, i32* %p0
  %c1 = icmp ugt i32 %len, 1
  call void (i1, ...) @llvm.experimental.guard(i1 %c1) [ "deopt"(i32 1, i32* %arr, i32 %len) ]
  %p1 = getelementptr i32, i32* %arr, i64 1
  store i32 0, i32* %p1
  %c2 = icmp ugt i32 %len, 2
  call void (i1, ...) @llvm.experimental.guard(i1 %c2) [ "deopt"(i32 2, i32* %arr, i32 %len) ]
  %p2 = getelementptr i32, i32* %arr, i64 2
  store i32 1, i32* %p2
  %c3 = icmp ugt i32 %len, 3
  call void (i1, ...) @llvm.experimental.guard(i1 %c3) [ "deopt"(i32 3, i32* %arr, i32 %len) ]
  %p3 = getelementptr i32, i32* %arr, i64 3
  store i32 0, i32* %p3
  ret void
}
