; Two stack map records at one address, for faultline stackmaps --pc
; (selftests/daemon/cli/run.sh): back to back with no shadow bytes, records
; 8 and 9 are both at the instruction after the first.  The process's own
; lookup (fl_stackmap_record_at) finds the first in section order, record
; 8, and so must the daemon's.
declare void @llvm.experimental.stackmap(i64, i32, ...)

define i64 @two_records(i64 %a) {
  call void (i64, i32, ...) @llvm.experimental.stackmap(i64 8, i32 0, i64 %a)
  call void (i64, i32, ...) @llvm.experimental.stackmap(i64 9, i32 0, i64 1)
  %r = add i64 %a, 1
  ret i64 %r
}
