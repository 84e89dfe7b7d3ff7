; Deoptimizations that return each type, for returns_every_type.c (and the
; threads and signal tests).  Each function deoptimizes when %go is true,
; its deopt state the value it was given; the handler returns a value
; computed from it (deopt_common.h: ret_expected), as the function's type
; returns it: rax for i32, i64 and a pointer, xmm0 for float and double,
; nothing for void (the handler writes through the pointer instead).  The
; intrinsic's own argument names the type.
target triple = "x86_64-unknown-linux-gnu"

declare i32 @llvm.experimental.deoptimize.i32(...)
declare i64 @llvm.experimental.deoptimize.i64(...)
declare i8* @llvm.experimental.deoptimize.p0i8(...)
declare float @llvm.experimental.deoptimize.f32(...)
declare double @llvm.experimental.deoptimize.f64(...)
declare void @llvm.experimental.deoptimize.isVoid(...)

define i32 @ret_i32(i32 %x, i1 %go) {
entry:
  br i1 %go, label %deopt, label %fast
deopt:
  %r = call i32 (...) @llvm.experimental.deoptimize.i32(i32 1) [ "deopt"(i32 %x) ]
  ret i32 %r
fast:
  ret i32 %x
}

define i64 @ret_i64(i64 %x, i1 %go) {
entry:
  br i1 %go, label %deopt, label %fast
deopt:
  %r = call i64 (...) @llvm.experimental.deoptimize.i64(i32 2) [ "deopt"(i64 %x) ]
  ret i64 %r
fast:
  ret i64 %x
}

define i8* @ret_ptr(i8* %x, i1 %go) {
entry:
  br i1 %go, label %deopt, label %fast
deopt:
  %r = call i8* (...) @llvm.experimental.deoptimize.p0i8(i32 3) [ "deopt"(i8* %x) ]
  ret i8* %r
fast:
  ret i8* %x
}

define float @ret_f32(float %x, i1 %go) {
entry:
  br i1 %go, label %deopt, label %fast
deopt:
  %r = call float (...) @llvm.experimental.deoptimize.f32(i32 4, float %x) [ "deopt"(float %x) ]
  ret float %r
fast:
  ret float %x
}

define double @ret_f64(double %x, i1 %go) {
entry:
  br i1 %go, label %deopt, label %fast
deopt:
  %r = call double (...) @llvm.experimental.deoptimize.f64(i32 5, double %x) [ "deopt"(double %x) ]
  ret double %r
fast:
  ret double %x
}

define void @ret_void(i64* %out, i64 %x, i1 %go) {
entry:
  br i1 %go, label %deopt, label %fast
deopt:
  call void (...) @llvm.experimental.deoptimize.isVoid(i32 6) [ "deopt"(i64* %out, i64 %x) ]
  ret void
fast:
  store i64 %x, i64* %out
  ret void
}
