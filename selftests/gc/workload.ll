; The statepoint example: functions of a collected language, compiled with
; gc "statepoint-example", that hold references to objects of the heap in
; selftests/gc/heap.c across calls that may move every object.
; opt-14 -passes=rewrite-statepoints-for-gc turns each call into a
; gc.statepoint and each reference live across it into a gc.relocate
; (-spp-rematerialization-threshold=0: interior pointers are relocated,
; not recomputed); llc-14 records where each one is at the call.
;
; References are i64 addrspace(1)*: the address of an object's first
; word.  An object's first words are references (heap.h).  Every safepoint
; goes through @poll, which calls what @safepoint_fn points at: a C
; collector, @safepoint_direct below, or a C function that raises a signal
; whose handler collects (collector.c).
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

@safepoint_fn = external global void ()*

; heap.c: a new object of nptrs references then nwords - nptrs words,
; zeroed (may collect first); and the words of one set to 100 + i.
declare i64 addrspace(1)* @gc_alloc(i64, i64)
declare void @gc_fill(i64 addrspace(1)*)
; collector.c: a collection's steps, for @safepoint_direct.
declare void @gc_begin()
declare i32 @gc_relocate_frame(i8*, i8*)
declare void @gc_end(i32)
declare i32 @fl_stack_walk(i8*, i32 (i8*, i8*)*, i8*)

define void @poll() gc "statepoint-example" {
  %f = load void ()*, void ()** @safepoint_fn
  call void %f()
  ret void
}

; A collection with no C frame between the frames that hold references
; and fl_stack_walk: what they keep in callee-saved registers is still
; in the registers when it is called.
define void @safepoint_direct() gc "statepoint-example" {
  call void @gc_begin()
  %r = call i32 @fl_stack_walk(i8* null, i32 (i8*, i8*)* @gc_relocate_frame, i8* null)
  call void @gc_end(i32 %r)
  ret void
}

; A list of n nodes {next, value} built with an allocation (a safepoint)
; per node, the head live across each; then summed with a safepoint per
; node, the node and an interior pointer to its value live across it.
; Returns the sum of the values, 0 + 1 + ... + n - 1 (n >= 1).
define i64 @list_run(i64 %n) gc "statepoint-example" {
entry:
  br label %build

build:
  %i = phi i64 [ 0, %entry ], [ %i.next, %build ]
  %head = phi i64 addrspace(1)* [ null, %entry ], [ %node, %build ]
  %node = call i64 addrspace(1)* @gc_alloc(i64 1, i64 2)
  %next.slot = bitcast i64 addrspace(1)* %node to i64 addrspace(1)* addrspace(1)*
  store i64 addrspace(1)* %head, i64 addrspace(1)* addrspace(1)* %next.slot
  %val.slot = getelementptr i64, i64 addrspace(1)* %node, i64 1
  store i64 %i, i64 addrspace(1)* %val.slot
  %i.next = add i64 %i, 1
  %more = icmp ult i64 %i.next, %n
  br i1 %more, label %build, label %sum

sum:
  %cur = phi i64 addrspace(1)* [ %node, %build ], [ %next, %sum.node ]
  %s = phi i64 [ 0, %build ], [ %s.next, %sum.node ]
  %end = icmp eq i64 addrspace(1)* %cur, null
  br i1 %end, label %out, label %sum.node

sum.node:
  %vp = getelementptr i64, i64 addrspace(1)* %cur, i64 1
  call void @poll()
  %v = load i64, i64 addrspace(1)* %vp
  %np = bitcast i64 addrspace(1)* %cur to i64 addrspace(1)* addrspace(1)*
  %next = load i64 addrspace(1)*, i64 addrspace(1)* addrspace(1)* %np
  %s.next = add i64 %s, %v
  br label %sum

out:
  ret i64 %s
}

; Sums a[0..n) through a pointer that walks the array, with a safepoint
; per element: the walking pointer is derived from a, and must move with
; it.  n >= 1.
define i64 @walk_sum(i64 addrspace(1)* %a, i64 %n) gc "statepoint-example" {
entry:
  br label %loop

loop:
  %p = phi i64 addrspace(1)* [ %a, %entry ], [ %p.next, %loop ]
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %s = phi i64 [ 0, %entry ], [ %s.next, %loop ]
  call void @poll()
  %v = load i64, i64 addrspace(1)* %p
  %s.next = add i64 %s, %v
  %p.next = getelementptr i64, i64 addrspace(1)* %p, i64 1
  %i.next = add i64 %i, 1
  %c = icmp ult i64 %i.next, %n
  br i1 %c, label %loop, label %done

done:
  ret i64 %s.next
}

define i64 @walk_run(i64 %n) gc "statepoint-example" {
  %a = call i64 addrspace(1)* @gc_alloc(i64 0, i64 %n)
  call void @gc_fill(i64 addrspace(1)* %a)
  %s = call i64 @walk_sum(i64 addrspace(1)* %a, i64 %n)
  ret i64 %s
}

; depth + 1 frames, each holding arr, an interior pointer to
; arr[depth % 8] and a null reference across its call (the recursive one
; with deopt values, which the statepoint's record lists before its
; references); the innermost polls.  Each frame adds arr[depth % 8],
; arr[0], and 1 if the null reference is still null.
define i64 @deep(i64 addrspace(1)* %arr, i64 addrspace(1)* %none, i64 %depth) gc "statepoint-example" {
entry:
  %k = urem i64 %depth, 8
  %d = getelementptr i64, i64 addrspace(1)* %arr, i64 %k
  %bottom = icmp eq i64 %depth, 0
  br i1 %bottom, label %innermost, label %recurse

innermost:
  call void @poll()
  br label %join

recurse:
  %sub = sub i64 %depth, 1
  %r = call i64 @deep(i64 addrspace(1)* %arr, i64 addrspace(1)* %none, i64 %sub) [ "deopt"(i64 %depth, i32 42) ]
  br label %join

join:
  %below = phi i64 [ 0, %innermost ], [ %r, %recurse ]
  %x = load i64, i64 addrspace(1)* %d
  %y = load i64, i64 addrspace(1)* %arr
  %isnull = icmp eq i64 addrspace(1)* %none, null
  %z = zext i1 %isnull to i64
  %s1 = add i64 %below, %x
  %s2 = add i64 %s1, %y
  %s3 = add i64 %s2, %z
  ret i64 %s3
}

define i64 @deep_run(i64 %depth) gc "statepoint-example" {
  %arr = call i64 addrspace(1)* @gc_alloc(i64 0, i64 8)
  call void @gc_fill(i64 addrspace(1)* %arr)
  %r = call i64 @deep(i64 addrspace(1)* %arr, i64 addrspace(1)* null, i64 %depth)
  ret i64 %r
}
