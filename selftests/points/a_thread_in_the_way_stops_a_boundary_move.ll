; SPDX-License-Identifier: MIT
;
; The patch points a_thread_in_the_way_stops_a_boundary_move rewrites:
;  - ID 20, 16 bytes, calling pt_park: a thread parked in pt_park has its
;    return address at +13, inside the region;
;  - ID 21, 48 bytes of nops, where the test writes a loop that a thread
;    spins in, inside the region.

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

declare i64 @llvm.experimental.patchpoint.i64(i64, i32, i8*, i32, ...)
declare i64 @pt_park()

define i64 @pp_park() {
  %r = call i64 (i64, i32, i8*, i32, ...) @llvm.experimental.patchpoint.i64(i64 20, i32 16, i8* bitcast (i64 ()* @pt_park to i8*), i32 0)
  ret i64 %r
}

define i64 @pp_spin() {
  %r = call i64 (i64, i32, i8*, i32, ...) @llvm.experimental.patchpoint.i64(i64 21, i32 48, i8* null, i32 0)
  ret i64 %r
}
