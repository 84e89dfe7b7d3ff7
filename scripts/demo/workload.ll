; The demo's "managed" workload: what a JIT or AOT compiler for a language
; with null checks emits.  Each !make.implicit branch becomes a memory
; access that faults on null (llc-14 -O2 -enable-implicit-null-checks); the
; fault map records where, and where the explicit check would have gone.
; The null paths call into the runtime (scripts/demo/main.c), which counts
; them the way a language runtime would throw NullPointerException.

target triple = "x86_64-unknown-linux-gnu"

%Order = type { i64, i64, %Customer* }
%Customer = type { i64, i32, i32 }
%Entry = type { i64, i64 }

declare void @npe(i32)
declare void @llvm.experimental.stackmap(i64, i32, ...)

; FaultingLoad: an order's total.  Orders are rarely null.
define i64 @order_total(%Order* %o) {
entry:
  %isnull = icmp eq %Order* %o, null
  br i1 %isnull, label %throw, label %ok, !make.implicit !0
ok:
  %f = getelementptr %Order, %Order* %o, i64 0, i32 1
  %v = load i64, i64* %f
  ret i64 %v
throw:
  call void @npe(i32 1)
  ret i64 0
}

; FaultingLoad: a customer's loyalty level.  Guests have no customer record:
; this check fails often.
define i32 @customer_level(%Customer* %c) {
entry:
  %isnull = icmp eq %Customer* %c, null
  br i1 %isnull, label %throw, label %ok, !make.implicit !0
ok:
  %f = getelementptr %Customer, %Customer* %c, i64 0, i32 1
  %v = load i32, i32* %f
  ret i32 %v
throw:
  call void @npe(i32 2)
  ret i32 0
}

; FaultingStore: record a cache hit.  Cache misses hand in null entries:
; this one fails most of the time.
define void @cache_touch(%Entry* %e, i64 %now) {
entry:
  %isnull = icmp eq %Entry* %e, null
  br i1 %isnull, label %throw, label %ok, !make.implicit !0
ok:
  %f = getelementptr %Entry, %Entry* %e, i64 0, i32 1
  store i64 %now, i64* %f
  ret void
throw:
  call void @npe(i32 3)
  ret void
}

; FaultingLoadStore (a read-modify-write): bump a counter.  Never null.
define void @counter_bump(i64* %c) {
entry:
  %isnull = icmp eq i64* %c, null
  br i1 %isnull, label %throw, label %ok, !make.implicit !0
ok:
  %v = load i64, i64* %c
  %n = add i64 %v, 1
  store i64 %n, i64* %c
  ret void
throw:
  call void @npe(i32 4)
  ret void
}

; A safepoint with a stack map: where a runtime finds live values.
define i64 @checkout(%Order* %o, i64 %n) {
entry:
  %t = call i64 @order_total(%Order* %o)
  %s = add i64 %t, %n
  call void (i64, i32, ...) @llvm.experimental.stackmap(i64 100, i32 0, i64 %s, i64 %n, %Order* %o)
  ret i64 %s
}

!0 = !{}
