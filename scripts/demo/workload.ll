; The demo's "managed" workload: what a JIT or AOT compiler for a language
; with null checks emits.  Each !make.implicit branch becomes a memory access
; that faults on null; the fault map records where, and where to go instead.

%Point = type { i64, i64 }

define i64 @point_x(%Point* %p) {
entry:
  %isnull = icmp eq %Point* %p, null
  br i1 %isnull, label %throw, label %ok, !make.implicit !0
ok:
  %f = getelementptr %Point, %Point* %p, i64 0, i32 0
  %x = load i64, i64* %f
  ret i64 %x
throw:
  ret i64 -1
}

define void @point_set_y(%Point* %p, i64 %y) {
entry:
  %isnull = icmp eq %Point* %p, null
  br i1 %isnull, label %throw, label %ok, !make.implicit !0
ok:
  %f = getelementptr %Point, %Point* %p, i64 0, i32 1
  store i64 %y, i64* %f
  ret void
throw:
  call void @throw_npe()
  ret void
}

declare void @throw_npe()
declare void @llvm.experimental.stackmap(i64, i32, ...)
declare void @llvm.experimental.deoptimize.isVoid(...)

; A safepoint with a stack map: where a runtime finds live values.
define i64 @sum(%Point* %p, i64 %n) {
entry:
  %x = call i64 @point_x(%Point* %p)
  %s = add i64 %x, %n
  call void (i64, i32, ...) @llvm.experimental.stackmap(i64 100, i32 8, i64 %s, i64 %n, %Point* %p)
  ret i64 %s
}

!0 = !{}
