; SPDX-License-Identifier: MIT
;
; Implicit null checks (.llvm_faultmaps), LLVM 14 IR with typed pointers.
;
; Each check is an explicit `icmp eq/ne ptr, null` + `br ..., !make.implicit`
; that llc turns into a faulting memory operation when run with
; -enable-implicit-null-checks at -O1 or higher (-O0 emits no fault map).
; The comment before each function says what llc-14 makes of it; the
; expected kinds were checked with llvm-objdump-14 --fault-map-section.
;
; Facts worth knowing (llc-14, x86-64):
;  - the faulting PC is the memory instruction, the handler PC the start of
;    the null block; both are offsets from the function start;
;  - a load + op + store to the same address that folds into one x86
;    instruction (addl %esi,(%rdi), incq (%rdi), orb $1,(%rdi), ...) is
;    recorded as FaultingLoadStore;
;  - atomicrmw / cmpxchg (lock-prefixed) are never made implicit;
;  - an offset of 4096 or more (the default -imp-null-check-page-size) is
;    never made implicit: the explicit test/je stays;
;  - functions are listed in the table sorted by symbol name, not in
;    source order.

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

%obj = type { i64, i32, i16, i8, double, float, [100 x i32], i8* }

declare void @throw_npe()

; FaultingLoad, 1 byte.
define i8 @load_i8(i8* %p) {
entry:
  %c = icmp eq i8* %p, null
  br i1 %c, label %isnull, label %notnull, !make.implicit !0
notnull:
  %v = load i8, i8* %p
  ret i8 %v
isnull:
  call void @throw_npe()
  ret i8 0
}

; FaultingLoad, 2 bytes, zero-extended (movzwl).
define i64 @load_i16(i16* %p) {
entry:
  %c = icmp eq i16* %p, null
  br i1 %c, label %isnull, label %notnull, !make.implicit !0
notnull:
  %v = load i16, i16* %p
  %z = zext i16 %v to i64
  ret i64 %z
isnull:
  call void @throw_npe()
  ret i64 -1
}

; FaultingLoad, 4 bytes, sign-extended (movslq).
define i64 @load_i32(i32* %p) {
entry:
  %c = icmp eq i32* %p, null
  br i1 %c, label %isnull, label %notnull, !make.implicit !0
notnull:
  %v = load i32, i32* %p
  %s = sext i32 %v to i64
  ret i64 %s
isnull:
  call void @throw_npe()
  ret i64 -1
}

; FaultingLoad, 8 bytes.
define i64 @load_i64(i64* %p) {
entry:
  %c = icmp eq i64* %p, null
  br i1 %c, label %isnull, label %notnull, !make.implicit !0
notnull:
  %v = load i64, i64* %p
  ret i64 %v
isnull:
  call void @throw_npe()
  ret i64 -1
}

; FaultingLoad into an XMM register (movss / movsd).
define float @load_float(float* %p) {
entry:
  %c = icmp eq float* %p, null
  br i1 %c, label %isnull, label %notnull, !make.implicit !0
notnull:
  %v = load float, float* %p
  ret float %v
isnull:
  call void @throw_npe()
  ret float 0.0
}

define double @load_double(double* %p) {
entry:
  %c = icmp eq double* %p, null
  br i1 %c, label %isnull, label %notnull, !make.implicit !0
notnull:
  %v = load double, double* %p
  ret double %v
isnull:
  call void @throw_npe()
  ret double 0.0
}

; FaultingLoad at field offsets 12 and 4000 (still inside the first page).
define i32 @load_field(%obj* %o) {
entry:
  %c = icmp eq %obj* %o, null
  br i1 %c, label %isnull, label %notnull, !make.implicit !0
notnull:
  %f = getelementptr %obj, %obj* %o, i64 0, i32 2
  %v = load i16, i16* %f
  %s = sext i16 %v to i32
  ret i32 %s
isnull:
  call void @throw_npe()
  ret i32 -1
}

define i32 @load_far_field(i32* %p) {
entry:
  %c = icmp eq i32* %p, null
  br i1 %c, label %isnull, label %notnull, !make.implicit !0
notnull:
  %f = getelementptr i32, i32* %p, i64 1000
  %v = load i32, i32* %f
  ret i32 %v
isnull:
  call void @throw_npe()
  ret i32 -1
}

; NOT made implicit: offset 8192 is past the page (no fault map entry).
define i32 @load_beyond_page(i32* %p) {
entry:
  %c = icmp eq i32* %p, null
  br i1 %c, label %isnull, label %notnull, !make.implicit !0
notnull:
  %f = getelementptr i32, i32* %p, i64 2048
  %v = load i32, i32* %f
  ret i32 %v
isnull:
  call void @throw_npe()
  ret i32 -1
}

; The inverted form: icmp ne, not-null successor first.  FaultingLoad.
define i64 @load_ne(i64* %p) {
entry:
  %nn = icmp ne i64* %p, null
  br i1 %nn, label %notnull, label %isnull, !make.implicit !0
notnull:
  %v = load i64, i64* %p
  ret i64 %v
isnull:
  call void @throw_npe()
  ret i64 0
}

; FaultingStore, every width, register and immediate sources.
define void @store_i8(i8* %p, i8 %x) {
entry:
  %c = icmp eq i8* %p, null
  br i1 %c, label %isnull, label %notnull, !make.implicit !0
notnull:
  store i8 %x, i8* %p
  ret void
isnull:
  call void @throw_npe()
  ret void
}

define void @store_i16(i16* %p) {
entry:
  %c = icmp eq i16* %p, null
  br i1 %c, label %isnull, label %notnull, !make.implicit !0
notnull:
  store i16 -2, i16* %p
  ret void
isnull:
  call void @throw_npe()
  ret void
}

define void @store_i32(i32* %p, i32 %x) {
entry:
  %c = icmp eq i32* %p, null
  br i1 %c, label %isnull, label %notnull, !make.implicit !0
notnull:
  store i32 %x, i32* %p
  ret void
isnull:
  call void @throw_npe()
  ret void
}

define void @store_i64(i64* %p) {
entry:
  %c = icmp eq i64* %p, null
  br i1 %c, label %isnull, label %notnull, !make.implicit !0
notnull:
  store i64 81985529216486895, i64* %p
  ret void
isnull:
  call void @throw_npe()
  ret void
}

define void @store_double(%obj* %o, double %d) {
entry:
  %c = icmp eq %obj* %o, null
  br i1 %c, label %isnull, label %notnull, !make.implicit !0
notnull:
  %f = getelementptr %obj, %obj* %o, i64 0, i32 4
  store double %d, double* %f
  ret void
isnull:
  call void @throw_npe()
  ret void
}

define void @store_float(%obj* %o, float %x) {
entry:
  %c = icmp eq %obj* %o, null
  br i1 %c, label %isnull, label %notnull, !make.implicit !0
notnull:
  %f = getelementptr %obj, %obj* %o, i64 0, i32 5
  store float %x, float* %f
  ret void
isnull:
  call void @throw_npe()
  ret void
}

; FaultingLoadStore: read-modify-write folded into one instruction.
define void @rmw_add_i32(i32* %p, i32 %x) {
entry:
  %c = icmp eq i32* %p, null
  br i1 %c, label %isnull, label %notnull, !make.implicit !0
notnull:
  %v = load i32, i32* %p
  %a = add i32 %v, %x
  store i32 %a, i32* %p
  ret void
isnull:
  call void @throw_npe()
  ret void
}

define void @rmw_inc_i64(i64* %p) {
entry:
  %c = icmp eq i64* %p, null
  br i1 %c, label %isnull, label %notnull, !make.implicit !0
notnull:
  %v = load i64, i64* %p
  %a = add i64 %v, 1
  store i64 %a, i64* %p
  ret void
isnull:
  call void @throw_npe()
  ret void
}

define void @rmw_or_i8(%obj* %o) {
entry:
  %c = icmp eq %obj* %o, null
  br i1 %c, label %isnull, label %notnull, !make.implicit !0
notnull:
  %f = getelementptr %obj, %obj* %o, i64 0, i32 3
  %v = load i8, i8* %f
  %a = or i8 %v, 1
  store i8 %a, i8* %f
  ret void
isnull:
  call void @throw_npe()
  ret void
}

define void @rmw_xor_i16(%obj* %o, i16 %x) {
entry:
  %c = icmp eq %obj* %o, null
  br i1 %c, label %isnull, label %notnull, !make.implicit !0
notnull:
  %f = getelementptr %obj, %obj* %o, i64 0, i32 2
  %v = load i16, i16* %f
  %a = xor i16 %v, %x
  store i16 %a, i16* %f
  ret void
isnull:
  call void @throw_npe()
  ret void
}

define void @rmw_sub_field(%obj* %o, i32 %i) {
entry:
  %c = icmp eq %obj* %o, null
  br i1 %c, label %isnull, label %notnull, !make.implicit !0
notnull:
  %f = getelementptr %obj, %obj* %o, i64 0, i32 6, i64 50
  %v = load i32, i32* %f
  %a = sub i32 %v, 7
  store i32 %a, i32* %f
  ret void
isnull:
  call void @throw_npe()
  ret void
}

; NOT made implicit: lock-prefixed read-modify-write.
define i32 @atomic_add(i32* %p, i32 %x) {
entry:
  %c = icmp eq i32* %p, null
  br i1 %c, label %isnull, label %notnull, !make.implicit !0
notnull:
  %v = atomicrmw add i32* %p, i32 %x seq_cst
  ret i32 %v
isnull:
  call void @throw_npe()
  ret i32 0
}

; Several checks in one function: load, store, load-store, chained loads
; through a loaded pointer, each with its own handler block.
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

; A loop with a check per iteration (the check and its load stay in the
; loop body).
define i64 @walk_list(i64** %head, i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i1, %ok ]
  %p = phi i64** [ %head, %entry ], [ %np, %ok ]
  %sum = phi i64 [ 0, %entry ], [ %sum1, %ok ]
  %c = icmp eq i64** %p, null
  br i1 %c, label %isnull, label %ok, !make.implicit !0
ok:
  %nx = load i64*, i64** %p
  %v = ptrtoint i64* %nx to i64
  %sum1 = add i64 %sum, %v
  %np = bitcast i64* %nx to i64**
  %i1 = add i64 %i, 1
  %done = icmp eq i64 %i1, %n
  br i1 %done, label %exit, label %loop
exit:
  ret i64 %sum1
isnull:
  call void @throw_npe()
  ret i64 %sum
}

; Internal and hidden functions: the fault map relocation is against the
; section symbol (internal) or a non-preemptible symbol (hidden).
define internal i32 @internal_load(i32* %p) noinline {
entry:
  %c = icmp eq i32* %p, null
  br i1 %c, label %isnull, label %notnull, !make.implicit !0
notnull:
  %v = load i32, i32* %p
  ret i32 %v
isnull:
  call void @throw_npe()
  ret i32 0
}

define hidden void @hidden_store(i64* %p) {
entry:
  %c = icmp eq i64* %p, null
  br i1 %c, label %isnull, label %notnull, !make.implicit !0
notnull:
  store i64 0, i64* %p
  ret void
isnull:
  call void @throw_npe()
  ret void
}

define i32 @call_internal(i32* %p) {
  %v = call i32 @internal_load(i32* %p)
  ret i32 %v
}

!0 = !{}
