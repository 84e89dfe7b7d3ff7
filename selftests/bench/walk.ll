; bench_deopt's stack walk (part 3): n + 1 frames of @bw_frames, each at a
; gc.statepoint (gc "statepoint-example", opt-14
; -passes=rewrite-statepoints-for-gc), each holding a reference across its
; call; the innermost calls @bench_walk_bottom (C), which times the walks.
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

declare void @bench_walk_bottom()

define i64 @bw_frames(i64 addrspace(1)* %ref, i64 %n) gc "statepoint-example" {
entry:
  %innermost = icmp eq i64 %n, 0
  br i1 %innermost, label %bottom, label %deeper

bottom:
  call void @bench_walk_bottom()
  br label %out

deeper:
  %m = sub i64 %n, 1
  %below = call i64 @bw_frames(i64 addrspace(1)* %ref, i64 %m)
  br label %out

out:
  %r = phi i64 [ 0, %bottom ], [ %below, %deeper ]
  %v = ptrtoint i64 addrspace(1)* %ref to i64
  %s = add i64 %r, %v
  ret i64 %s
}
