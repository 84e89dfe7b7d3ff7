; SPDX-License-Identifier: MIT
;
; docs/codegen.md's reason for -relocation-model=pic: with the default
; static model, llc-14 writes the address of a dso_local global into the
; code as a 32-bit absolute value, which no PIE or shared library can hold.

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

@stock = dso_local global i32 5

define i32* @stock_addr() {
  ret i32* @stock
}
