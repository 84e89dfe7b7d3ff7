; A small sample for the CLI tests: two implicit null checks and a stack map.
define i32 @load_field(i32* %p) {
entry:
  %c = icmp eq i32* %p, null
  br i1 %c, label %is_null, label %not_null, !make.implicit !0
not_null:
  %f = getelementptr i32, i32* %p, i64 4
  %t = load i32, i32* %f
  ret i32 %t
is_null:
  ret i32 -1
}

define void @store_field(i64* %p, i64 %v) {
entry:
  %c = icmp eq i64* %p, null
  br i1 %c, label %is_null, label %not_null, !make.implicit !0
not_null:
  store i64 %v, i64* %p
  ret void
is_null:
  call void @on_null()
  ret void
}

declare void @on_null()
declare void @llvm.experimental.stackmap(i64, i32, ...)

define i64 @with_stackmap(i64 %a) {
  %x = alloca i64
  call void (i64, i32, ...) @llvm.experimental.stackmap(i64 7, i32 0, i64 %a, i64 -3, i64 8589934592, i64* %x)
  ret i64 %a
}

!0 = !{}
