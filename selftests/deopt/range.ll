; The seed's arr[i..i+3] example (seeds/check-widening.txt, bar): four
; stores arr[i + k] = 10 * (k + 1), each after a guard on i + k u< len, the
; deopt state of each guard (k, arr, i, len).  Guard widening combines the
; range checks into the seed's two, i + 3 u< len and i u< len; see widen.ll
; for the rest.
;
; The length is non-negative, as an array's length is: the `and` says so to
; LLVM, which combines range checks only against a length it knows is not
; negative (GuardWidening's parseRangeChecks).  The callers pass 0..10.
target triple = "x86_64-unknown-linux-gnu"

declare void @llvm.experimental.guard(i1, ...)

define void @bar(i32* %arr, i32 %i, i32 %len.arg) {
entry:
  %len = and i32 %len.arg, 2147483647
  %c0 = icmp ult i32 %i, %len
  call void (i1, ...) @llvm.experimental.guard(i1 %c0) [ "deopt"(i32 0, i32* %arr, i32 %i, i32 %len) ]
  %x0 = zext i32 %i to i64
  %p0 = getelementptr i32, i32* %arr, i64 %x0
  store i32 10, i32* %p0
  %i1 = add i32 %i, 1
  %c1 = icmp ult i32 %i1, %len
  call void (i1, ...) @llvm.experimental.guard(i1 %c1) [ "deopt"(i32 1, i32* %arr, i32 %i, i32 %len) ]
  %x1 = zext i32 %i1 to i64
  %p1 = getelementptr i32, i32* %arr, i64 %x1
  store i32 20, i32* %p1
  %i2 = add i32 %i, 2
  %c2 = icmp ult i32 %i2, %len
  call void (i1, ...) @llvm.experimental.guard(i1 %c2) [ "deopt"(i32 2, i32* %arr, i32 %i, i32 %len) ]
  %x2 = zext i32 %i2 to i64
  %p2 = getelementptr i32, i32* %arr, i64 %x2
  store i32 30, i32* %p2
  %i3 = add i32 %i, 3
  %c3 = icmp ult i32 %i3, %len
  call void (i1, ...) @llvm.experimental.guard(i1 %c3) [ "deopt"(i32 3, i32* %arr, i32 %i, i32 %len) ]
  %x3 = zext i32 %i3 to i64
  %p3 = getelementptr i32, i32* %arr, i64 %x3
  store i32 40, i32* %p3
  ret void
}
