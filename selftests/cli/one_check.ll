; A program of one implicit null check and no stack map, so that what is
; said of it counts one and none: "1 implicit check, 0 stack map records".
; Without arguments main passes null: the check fails, resumes at its
; handler, and the program exits 7.
define i32 @load_field(i32* %p) noinline {
entry:
  %c = icmp eq i32* %p, null
  br i1 %c, label %is_null, label %not_null, !make.implicit !0
not_null:
  %f = getelementptr i32, i32* %p, i64 4
  %t = load i32, i32* %f
  ret i32 %t
is_null:
  ret i32 7
}

define i32 @main(i32 %argc, i8** %argv) {
entry:
  %one = icmp eq i32 %argc, 1
  %arg = bitcast i8** %argv to i32*
  %p = select i1 %one, i32* null, i32* %arg
  %r = call i32 @load_field(i32* %p)
  ret i32 %r
}

!0 = !{}
