; The first frame of a walk from a signal context (signal_frame_is_the_context.c):
; a stack map record at the load that faults.  llvm.experimental.stackmap
; records the address of the instruction after the ones before it, which
; here is the load itself: when it faults, the interrupted instruction is
; the record's address, and the values it names (the pointer, k) are in
; caller-saved registers that only the signal's context holds.
target triple = "x86_64-unknown-linux-gnu"

declare void @llvm.experimental.stackmap(i64, i32, ...)

define i64 @load_after_stackmap(i64* %p, i64 %k) {
  call void (i64, i32, ...) @llvm.experimental.stackmap(i64 77, i32 0, i64* %p, i64 %k)
  %v = load volatile i64, i64* %p
  %r = add i64 %v, %k
  ret i64 %r
}
