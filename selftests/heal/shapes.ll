; SPDX-License-Identifier: MIT
;
; Implicit null checks with state live across the site, for the healing
; tests (selftests/heal/): a healed site's stub must leave every register
; and the flags as the compiled instruction would.  What llc-14 -O2 makes
; of each (x86-64, -enable-implicit-null-checks) is in the comment above
; it; corpus.c calls each with null and valid pointers.

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

declare void @throw_npe()

; The base register is %rcx (the fourth argument), and the other
; arguments are live across the site in callee-saved registers:
; xorq (%rcx), %rbx.  (nullchecks.ll's several loads into %rcx from
; (%rcx): movzbl (%rcx), %ecx.)
define i64 @base_rcx(i64 %a, i64 %b, i64 %c, i64* %p, i64 %e, i64 %f) {
entry:
  %n = icmp eq i64* %p, null
  br i1 %n, label %isnull, label %notnull, !make.implicit !0
notnull:
  %v = load i64, i64* %p
  %x1 = xor i64 %v, %a
  %x2 = sub i64 %x1, %b
  %x3 = xor i64 %x2, %c
  %x4 = sub i64 %x3, %e
  %x5 = xor i64 %x4, %f
  ret i64 %x5
isnull:
  call void @throw_npe()
  %u1 = add i64 %a, %b
  %u2 = add i64 %u1, %c
  %u3 = add i64 %u2, %e
  %u4 = add i64 %u3, %f
  ret i64 %u4
}

; The base register is %r8, then %r9 (a REX prefix on the stub's xchg).
define i64 @base_r8(i64 %a, i64 %b, i64 %c, i64 %d, i32* %p) {
entry:
  %n = icmp eq i32* %p, null
  br i1 %n, label %isnull, label %notnull, !make.implicit !0
notnull:
  %v = load i32, i32* %p
  %z = zext i32 %v to i64
  %s1 = add i64 %a, %b
  %s2 = add i64 %s1, %c
  %s3 = add i64 %s2, %d
  %s4 = mul i64 %s3, %z
  ret i64 %s4
isnull:
  call void @throw_npe()
  %u = sub i64 %a, %d
  ret i64 %u
}

define i64 @base_r9(i64 %a, i64 %b, i64 %c, i64 %d, i64 %e, i16* %p) {
entry:
  %n = icmp eq i16* %p, null
  br i1 %n, label %isnull, label %notnull, !make.implicit !0
notnull:
  %v = load i16, i16* %p
  %z = sext i16 %v to i64
  %s1 = add i64 %a, %b
  %s2 = add i64 %s1, %c
  %s3 = add i64 %s2, %d
  %s4 = add i64 %s3, %e
  %s5 = xor i64 %s4, %z
  ret i64 %s5
isnull:
  call void @throw_npe()
  %u = sub i64 %e, %a
  ret i64 %u
}

; The base register is %rcx, with %rdi and %rsi live across the site:
; movq (%rcx), %rax.
define i64 @base_rcx_args_live(i64 %a, i64 %b, i64 %c, i64** %p) {
entry:
  %n = icmp eq i64** %p, null
  br i1 %n, label %isnull, label %notnull, !make.implicit !0
notnull:
  %v = load i64*, i64** %p
  %w = ptrtoint i64* %v to i64
  %s1 = add i64 %a, %b
  %s2 = add i64 %s1, %c
  %s3 = sub i64 %w, %s2
  ret i64 %s3
isnull:
  call void @throw_npe()
  ret i64 %c
}

; The site sets the flags that the branch after it reads: decl 8(%rdi); je.
; (At offset 0, decl (%rdi) is 2 bytes followed by the je: a punned jump's
; target would be below the -no-pie program, and no neighbour of 6 bytes
; is in reach: unhealable.)
define i32 @rmw_flags_read_after(i32* %p, i32 %x) {
entry:
  %n = icmp eq i32* %p, null
  br i1 %n, label %isnull, label %notnull, !make.implicit !0
notnull:
  %f = getelementptr i32, i32* %p, i64 2
  %v = load i32, i32* %f
  %d = sub i32 %v, 1
  store i32 %d, i32* %f
  %z = icmp eq i32 %d, 0
  br i1 %z, label %zero, label %nonzero
zero:
  ret i32 100
nonzero:
  %r = add i32 %x, 1
  ret i32 %r
isnull:
  call void @throw_npe()
  ret i32 -7
}

; A load-op: addl 4(%rdi), %esi, its result stored back after.
define i32 @load_op_store(i32* %p, i32 %x) {
entry:
  %n = icmp eq i32* %p, null
  br i1 %n, label %isnull, label %notnull, !make.implicit !0
notnull:
  %f = getelementptr i32, i32* %p, i64 1
  %v = load i32, i32* %f
  %d = add i32 %v, %x
  store i32 %d, i32* %f
  %neg = icmp slt i32 %d, 0
  %r = select i1 %neg, i32 -1, i32 1
  ret i32 %r
isnull:
  call void @throw_npe()
  ret i32 -9
}

; A 3-byte load followed by a 7-byte RIP-relative store of what it read
; (movslq (%rdi),%rax; mov %rax,last_load(%rip)): the successor a T2 heal
; evicts (FAULTLINE_HEAL_TACTICS=T2 in run.sh), its displacement moved.
@last_load = global i64 0

define i64 @load_then_store_global(i32* %p) {
entry:
  %n = icmp eq i32* %p, null
  br i1 %n, label %isnull, label %notnull, !make.implicit !0
notnull:
  %v = load i32, i32* %p
  %w = sext i32 %v to i64
  store i64 %w, i64* @last_load
  ret i64 %w
isnull:
  call void @throw_npe()
  ret i64 -11
}

; A comparison computed before the check and used after the load: llc-14
; leaves this check explicit (no site), the flags being live; kept as a
; shape whose outputs must agree all the same.
define i64 @compare_before_select_after(i64* %p, i64 %a, i64 %b) {
entry:
  %lt = icmp slt i64 %a, %b
  %n = icmp eq i64* %p, null
  br i1 %n, label %isnull, label %notnull, !make.implicit !0
notnull:
  %v = load i64, i64* %p
  %r = select i1 %lt, i64 %v, i64 %a
  ret i64 %r
isnull:
  call void @throw_npe()
  %r2 = select i1 %lt, i64 11, i64 22
  ret i64 %r2
}

; A loop: a check per iteration (addq (%rdi), %rax, twice: llc-14 peels
; the first), the next cell's address loaded into the base register
; (movq 8(%rdi), %rdi), the counts live in %rcx and %rdx across it.
%cell = type { i64, %cell* }

define i64 @list_len_sum(%cell* %head, i64 %limit) {
entry:
  br label %loop
loop:
  %c = phi %cell* [ %head, %entry ], [ %next, %more ]
  %i = phi i64 [ 0, %entry ], [ %i1, %more ]
  %sum = phi i64 [ 0, %entry ], [ %sum1, %more ]
  %n = icmp eq %cell* %c, null
  br i1 %n, label %isnull, label %notnull, !make.implicit !0
notnull:
  %vp = getelementptr %cell, %cell* %c, i64 0, i32 0
  %v = load i64, i64* %vp
  %sum1 = add i64 %sum, %v
  %np = getelementptr %cell, %cell* %c, i64 0, i32 1
  %next = load %cell*, %cell** %np
  %i1 = add i64 %i, 1
  %stop = icmp eq i64 %i1, %limit
  br i1 %stop, label %done, label %more
more:
  br label %loop
done:
  ret i64 %sum1
isnull:
  %r = mul i64 %sum, 1000
  %r1 = add i64 %r, %i
  ret i64 %r1
}

; Many values live in registers across the site, %rax and %rcx among
; them: imulq (%rdi), %rbx with eight loaded values in rbx, r15, r14, rbp,
; r13, r12, rcx and rax.  Its code begins 24 bytes before a page boundary
; (the prefix data fills the rest of an aligned page), so that the site is
; on the page after its function's first: a text listed as a mapping per
; page must not stop it healing (no_room_for_a_stub_is_unhealable).
define i64 @pressure(i64* %p, i64* %q) align 4096 prefix [4072 x i8] zeroinitializer {
entry:
  %q0 = load i64, i64* %q
  %g1 = getelementptr i64, i64* %q, i64 1
  %q1 = load i64, i64* %g1
  %g2 = getelementptr i64, i64* %q, i64 2
  %q2 = load i64, i64* %g2
  %g3 = getelementptr i64, i64* %q, i64 3
  %q3 = load i64, i64* %g3
  %g4 = getelementptr i64, i64* %q, i64 4
  %q4 = load i64, i64* %g4
  %g5 = getelementptr i64, i64* %q, i64 5
  %q5 = load i64, i64* %g5
  %g6 = getelementptr i64, i64* %q, i64 6
  %q6 = load i64, i64* %g6
  %g7 = getelementptr i64, i64* %q, i64 7
  %q7 = load i64, i64* %g7
  %n = icmp eq i64* %p, null
  br i1 %n, label %isnull, label %notnull, !make.implicit !0
notnull:
  %v = load i64, i64* %p
  %m0 = mul i64 %q0, %v
  %m1 = mul i64 %q1, %m0
  %m2 = xor i64 %q2, %m1
  %m3 = mul i64 %q3, %m2
  %m4 = sub i64 %q4, %m3
  %m5 = mul i64 %q5, %m4
  %m6 = add i64 %q6, %m5
  %m7 = mul i64 %q7, %m6
  ret i64 %m7
isnull:
  call void @throw_npe()
  %k1 = add i64 %q0, %q1
  %k2 = mul i64 %k1, %q2
  %k3 = add i64 %k2, %q3
  %k4 = mul i64 %k3, %q4
  %k5 = add i64 %k4, %q5
  %k6 = mul i64 %k5, %q6
  %k7 = add i64 %k6, %q7
  ret i64 %k7
}

!0 = !{}
