; SPDX-License-Identifier: MIT
;
; Both sections from one module, the way a managed-language compiler emits
; them: implicit null checks, a safepoint stackmap, a patchable call site, a
; deoptimization exit and a global counter.  This is the module that the
; Makefile's corpus section links, with main.c, in every link mode (alone,
; and together with the other modules for files with several tables).
;
; The global makes the relocation model matter: its address is a live value
; of the stackmap, which -relocation-model=static materializes as an absolute
; 32-bit immediate (movl $mixed_calls, R_X86_64_32).  GNU ld refuses that in
; a PIE or a shared object, lld in a shared object; lld 14 accepts it in a
; PIE and silently writes the link-time address (wrong once the PIE is
; loaded anywhere but 0).  With pic the address is RIP-relative.  (It has to
; be dso_local: since LLVM 13 llc does not assume that for the static model,
; and accesses a preemptible global through the GOT in every model.)

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

%node = type { i64, %node*, i32, i32 }

@mixed_calls = dso_local global i64 0

declare void @llvm.experimental.stackmap(i64, i32, ...)
declare void @llvm.experimental.patchpoint.void(i64, i32, i8*, i32, ...)
declare i64 @llvm.experimental.deoptimize.i64(...)
declare void @throw_npe()
declare void @callee()

; Sum a list: one implicit check per node, a stackmap (safepoint poll) per
; iteration.
define i64 @mixed_sum(%node* %head) {
entry:
  %c0 = load i64, i64* @mixed_calls
  %c1 = add i64 %c0, 1
  store i64 %c1, i64* @mixed_calls
  br label %loop
loop:
  %n = phi %node* [ %head, %entry ], [ %next, %ok ]
  %acc = phi i64 [ 0, %entry ], [ %acc1, %ok ]
  call void (i64, i32, ...) @llvm.experimental.stackmap(i64 3000, i32 5, %node* %n, i64 %acc, i64* @mixed_calls)
  %isnull = icmp eq %node* %n, null
  br i1 %isnull, label %npe, label %ok, !make.implicit !0
ok:
  %vp = getelementptr %node, %node* %n, i64 0, i32 0
  %v = load i64, i64* %vp
  %acc1 = add i64 %acc, %v
  %np = getelementptr %node, %node* %n, i64 0, i32 1
  %next = load %node*, %node** %np
  %end = icmp eq %node* %next, null
  br i1 %end, label %done, label %loop
done:
  ret i64 %acc1
npe:
  call void @throw_npe()
  ret i64 %acc
}

; A field store and a counter bump behind implicit checks, then a
; patchable call site.
define void @mixed_update(%node* %n, i32 %x) {
entry:
  %c = icmp eq %node* %n, null
  br i1 %c, label %npe, label %ok, !make.implicit !0
ok:
  %f = getelementptr %node, %node* %n, i64 0, i32 2
  store i32 %x, i32* %f
  %g = getelementptr %node, %node* %n, i64 0, i32 3
  %old = load i32, i32* %g
  %new = add i32 %old, 1
  store i32 %new, i32* %g
  call void (i64, i32, i8*, i32, ...) @llvm.experimental.patchpoint.void(i64 3001, i32 16, i8* null, i32 0, %node* %n, i32 %x)
  ret void
npe:
  call void @throw_npe()
  ret void
}

; Deoptimize when a node's tag is not the one the compiled code assumed.
define i64 @mixed_deopt(%node* %n, i32 %expected) {
entry:
  %c = icmp eq %node* %n, null
  br i1 %c, label %npe, label %ok, !make.implicit !0
ok:
  %tp = getelementptr %node, %node* %n, i64 0, i32 3
  %tag = load i32, i32* %tp
  %same = icmp eq i32 %tag, %expected
  br i1 %same, label %fast, label %deopt
fast:
  %vp = getelementptr %node, %node* %n, i64 0, i32 0
  %v = load i64, i64* %vp
  ret i64 %v
deopt:
  %r = call i64 (...) @llvm.experimental.deoptimize.i64(%node* %n) [ "deopt"(%node* %n, i32 %tag, i32 %expected, i64 -2147483649) ]
  ret i64 %r
npe:
  call void @throw_npe()
  ret i64 0
}

!0 = !{}
