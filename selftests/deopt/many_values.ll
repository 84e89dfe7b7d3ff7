; A deoptimization with 70 deopt values, more than fit on the stack
; (lib/deopt/deopt.c: 64), for the handlers that leave by longjmp or by a C++
; exception (deopt_left_by_longjmp_keeps_memory_flat.c,
; deopt_left_by_exception_keeps_memory_flat.cc).  many(x, go) deoptimizes when
; go is true, value i being x + 7 * i + 1; else it returns x.
target triple = "x86_64-unknown-linux-gnu"

declare i64 @llvm.experimental.deoptimize.i64(...)

define i64 @many(i64 %x, i1 %go) {
entry:
  br i1 %go, label %deopt, label %fast
deopt:
  %v0 = add i64 %x, 1
  %v1 = add i64 %x, 8
  %v2 = add i64 %x, 15
  %v3 = add i64 %x, 22
  %v4 = add i64 %x, 29
  %v5 = add i64 %x, 36
  %v6 = add i64 %x, 43
  %v7 = add i64 %x, 50
  %v8 = add i64 %x, 57
  %v9 = add i64 %x, 64
  %v10 = add i64 %x, 71
  %v11 = add i64 %x, 78
  %v12 = add i64 %x, 85
  %v13 = add i64 %x, 92
  %v14 = add i64 %x, 99
  %v15 = add i64 %x, 106
  %v16 = add i64 %x, 113
  %v17 = add i64 %x, 120
  %v18 = add i64 %x, 127
  %v19 = add i64 %x, 134
  %v20 = add i64 %x, 141
  %v21 = add i64 %x, 148
  %v22 = add i64 %x, 155
  %v23 = add i64 %x, 162
  %v24 = add i64 %x, 169
  %v25 = add i64 %x, 176
  %v26 = add i64 %x, 183
  %v27 = add i64 %x, 190
  %v28 = add i64 %x, 197
  %v29 = add i64 %x, 204
  %v30 = add i64 %x, 211
  %v31 = add i64 %x, 218
  %v32 = add i64 %x, 225
  %v33 = add i64 %x, 232
  %v34 = add i64 %x, 239
  %v35 = add i64 %x, 246
  %v36 = add i64 %x, 253
  %v37 = add i64 %x, 260
  %v38 = add i64 %x, 267
  %v39 = add i64 %x, 274
  %v40 = add i64 %x, 281
  %v41 = add i64 %x, 288
  %v42 = add i64 %x, 295
  %v43 = add i64 %x, 302
  %v44 = add i64 %x, 309
  %v45 = add i64 %x, 316
  %v46 = add i64 %x, 323
  %v47 = add i64 %x, 330
  %v48 = add i64 %x, 337
  %v49 = add i64 %x, 344
  %v50 = add i64 %x, 351
  %v51 = add i64 %x, 358
  %v52 = add i64 %x, 365
  %v53 = add i64 %x, 372
  %v54 = add i64 %x, 379
  %v55 = add i64 %x, 386
  %v56 = add i64 %x, 393
  %v57 = add i64 %x, 400
  %v58 = add i64 %x, 407
  %v59 = add i64 %x, 414
  %v60 = add i64 %x, 421
  %v61 = add i64 %x, 428
  %v62 = add i64 %x, 435
  %v63 = add i64 %x, 442
  %v64 = add i64 %x, 449
  %v65 = add i64 %x, 456
  %v66 = add i64 %x, 463
  %v67 = add i64 %x, 470
  %v68 = add i64 %x, 477
  %v69 = add i64 %x, 484
  %r = call i64 (...) @llvm.experimental.deoptimize.i64(i32 7) [ "deopt"(i64 %v0, i64 %v1, i64 %v2, i64 %v3, i64 %v4, i64 %v5, i64 %v6, i64 %v7, i64 %v8, i64 %v9, i64 %v10, i64 %v11, i64 %v12, i64 %v13, i64 %v14, i64 %v15, i64 %v16, i64 %v17, i64 %v18, i64 %v19, i64 %v20, i64 %v21, i64 %v22, i64 %v23, i64 %v24, i64 %v25, i64 %v26, i64 %v27, i64 %v28, i64 %v29, i64 %v30, i64 %v31, i64 %v32, i64 %v33, i64 %v34, i64 %v35, i64 %v36, i64 %v37, i64 %v38, i64 %v39, i64 %v40, i64 %v41, i64 %v42, i64 %v43, i64 %v44, i64 %v45, i64 %v46, i64 %v47, i64 %v48, i64 %v49, i64 %v50, i64 %v51, i64 %v52, i64 %v53, i64 %v54, i64 %v55, i64 %v56, i64 %v57, i64 %v58, i64 %v59, i64 %v60, i64 %v61, i64 %v62, i64 %v63, i64 %v64, i64 %v65, i64 %v66, i64 %v67, i64 %v68, i64 %v69) ]
  ret i64 %r
fast:
  ret i64 %x
}
