; SPDX-License-Identifier: MIT
;
; faultline healable's test input (selftests/cli/run.sh), compiled with
; -function-sections so that each function is a section of its own:
;  - load_i32's site (mov (%rdi),%eax, 2 bytes) heals by a punned jump (B2);
;  - several's first two sites (3 bytes each, back to back) cannot: the
;    bytes a punned jump would read are the next site's, and in a section
;    this small no neighbour can be evicted.

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

%obj = type { i64, i32, i16, i8, double, float, [100 x i32], i8* }

declare void @throw_npe()

define i32 @load_i32(i32* %p) {
entry:
  %c = icmp eq i32* %p, null
  br i1 %c, label %isnull, label %notnull, !make.implicit !0
notnull:
  %v = load i32, i32* %p
  ret i32 %v
isnull:
  call void @throw_npe()
  ret i32 -1
}

define i64 @several(%obj* %o, %obj* %q, i32* %r) {
entry:
  %c1 = icmp eq %obj* %o, null
  br i1 %c1, label %null1, label %ok1, !make.implicit !0
ok1:
  %f1 = getelementptr %obj, %obj* %o, i64 0, i32 0
  %v1 = load i64, i64* %f1
  %c2 = icmp eq %obj* %q, null
  br i1 %c2, label %null2, label %ok2, !make.implicit !0
ok2:
  %f2 = getelementptr %obj, %obj* %q, i64 0, i32 1
  %t2 = trunc i64 %v1 to i32
  store i32 %t2, i32* %f2
  %c3 = icmp eq i32* %r, null
  br i1 %c3, label %null3, label %ok3, !make.implicit !0
ok3:
  %v3 = load i32, i32* %r
  %a3 = add i32 %v3, 1
  store i32 %a3, i32* %r
  %f4 = getelementptr %obj, %obj* %o, i64 0, i32 7
  %next = load i8*, i8** %f4
  %c4 = icmp eq i8* %next, null
  br i1 %c4, label %null4, label %ok4, !make.implicit !0
ok4:
  %v4 = load i8, i8* %next
  %z4 = zext i8 %v4 to i64
  %s = add i64 %v1, %z4
  ret i64 %s
null1:
  call void @throw_npe()
  ret i64 1
null2:
  call void @throw_npe()
  ret i64 2
null3:
  call void @throw_npe()
  ret i64 3
null4:
  call void @throw_npe()
  ret i64 4
}

!0 = !{}
