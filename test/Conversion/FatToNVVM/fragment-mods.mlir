// RUN: fa-t-opt %s --convert-fat-to-nvvm | FileCheck %s
// RUN: fa-t-opt %s --convert-fat-to-nvvm="tanh=approx" | FileCheck %s --check-prefix=APPROX
// RUN: fa-t-opt %s --convert-fat-to-nvvm="capture-prefetch=0" | FileCheck %s --check-prefix=NOPF
// RUN: not fa-t-opt %s --convert-fat-to-nvvm="tanh=fast" 2>&1 | FileCheck %s --check-prefix=BADTANH
// RUN: not fa-t-opt %s --convert-fat-to-nvvm="capture-prefetch=-1" 2>&1 | FileCheck %s --check-prefix=BADPF
// RUN: not fa-t-opt %s --convert-fat-to-nvvm="capture-prefetch=9" 2>&1 | FileCheck %s --check-prefix=BADPF9

// fat.score_mod / fat.mask_mod on a warpgroup's fragment tile: the region's
// body once per register. Register 4i + 2r + e holds row q0 + 16·warp +
// lane/4 + 8r and key k0 + 2·(lane % 4) + 8i + e; the body reads both
// clamped to the last row / key, and a score scaled by the op's scale.
// The body's math.tanh takes the kernel's form (tanh.approx.f32 with the
// afn flag or tanh=approx, else MUFU ex2 and rcp), a division by a constant
// a reciprocal.

// APPROX-LABEL: func.func @softcap
// APPROX-COUNT-4: llvm.inline_asm asm_dialect = att "tanh.approx.f32 $0, $1;", "=f,f"
// APPROX-NOT:     ex2.approx
// BADTANH: convert-fat-to-nvvm: tanh must be auto, approx or precise, got 'fast'
// BADPF: convert-fat-to-nvvm: capture-prefetch is a number of key blocks ahead, 0 (none) to 8, got -1
// BADPF9: convert-fat-to-nvvm: capture-prefetch is a number of key blocks ahead, 0 (none) to 8, got 9

// With capture-prefetch=0 the reads are the same and nothing is prefetched.
// NOPF-LABEL: func.func @document
// NOPF:         scf.if
// NOPF-NOT:     nvvm.prefetch
// NOPF:         llvm.load %{{[0-9]+}} invariant
// NOPF-LABEL: func.func @relative_bias
// NOPF-NOT:     nvvm.prefetch
// NOPF:         return

// softcap 30·tanh(s/30), scale 1/8, on a 64 x 8 tile (4 registers: rows r,
// keys e): register (r, e) = body(scale · s, b, h, row_r, key_e).
// CHECK-LABEL: func.func @softcap
// CHECK-SAME:    (%[[S0:[a-z0-9]+]]: f32, %[[S1:[a-z0-9]+]]: f32, %[[S2:[a-z0-9]+]]: f32, %[[S3:[a-z0-9]+]]: f32, %{{.+}}: index, %{{.+}}: index, %[[Q0:[a-z0-9]+]]: index, %[[K0:[a-z0-9]+]]: index, %[[SQ:[a-z0-9]+]]: index, %[[SKV:[a-z0-9]+]]: index)
// CHECK:         %[[TID:[0-9]+]] = nvvm.read.ptx.sreg.tid.x : i32
// CHECK:         %[[Q0I:[0-9]+]] = arith.index_cast %[[Q0]] : index to i32
// CHECK:         %[[ROW:[0-9]+]] = arith.addi %[[Q0I]], %{{[0-9]+}} : i32
// CHECK:         %[[K0I:[0-9]+]] = arith.index_cast %[[K0]] : index to i32
// CHECK:         %[[COL:[0-9]+]] = arith.addi %[[K0I]], %{{[0-9]+}} : i32
// CHECK:         %[[SQI:[0-9]+]] = arith.index_cast %[[SQ]] : index to i32
// CHECK-NEXT:    %{{.+}} = arith.constant 1 : i32
// CHECK-NEXT:    %[[LASTROW:[0-9]+]] = arith.subi %[[SQI]], %{{.+}} : i32
// CHECK:         %[[R1:[0-9]+]] = arith.addi %[[ROW]], %{{.+}} : i32
// CHECK-NEXT:    %{{[0-9]+}} = arith.minsi %[[R1]], %[[LASTROW]] : i32
// CHECK:         %[[SCALE:.+]] = arith.constant 1.250000e-01 : f32
// CHECK:         %[[X0:[0-9]+]] = arith.mulf %[[S0]], %[[SCALE]] : f32
// CHECK-NEXT:    %[[C30:.+]] = arith.constant 3.000000e+01 : f32
// CHECK-NEXT:    %[[Y0:[0-9]+]] = arith.divf %[[X0]], %[[C30]] fastmath<arcp> : f32
// CHECK-NEXT:    %[[YB:[0-9]+]] = arith.bitcast %[[Y0]] : f32 to i32
// CHECK-NEXT:    %[[MASK:.+]] = arith.constant 2147483647 : i32
// CHECK-NEXT:    %[[AB:[0-9]+]] = arith.andi %[[YB]], %[[MASK]] : i32
// CHECK-NEXT:    %[[A0:[0-9]+]] = arith.bitcast %[[AB]] : i32 to f32
// CHECK-NEXT:    %[[K:.+]] = arith.constant -2.885390e+00 : f32
// CHECK-NEXT:    %[[E0:[0-9]+]] = arith.mulf %[[A0]], %[[K]] : f32
// CHECK-NEXT:    %[[T0:[0-9]+]] = llvm.inline_asm asm_dialect = att "ex2.approx.ftz.f32 $0, $1;", "=f,f" %[[E0]] : (f32) -> f32
// CHECK-NEXT:    %[[ONE:.+]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:    %[[D0:[0-9]+]] = arith.addf %[[ONE]], %[[T0]] : f32
// CHECK-NEXT:    %[[R0:[0-9]+]] = nvvm.rcp.approx.ftz.f %[[D0]] : f32
// CHECK-NEXT:    %[[N0:[0-9]+]] = arith.subf %[[ONE]], %[[T0]] : f32
// CHECK-NEXT:    %[[H0:[0-9]+]] = arith.mulf %[[N0]], %[[R0]] : f32
// CHECK:         %[[TANH0:[0-9]+]] = arith.bitcast %{{[0-9]+}} : i32 to f32
// CHECK-NEXT:    %[[Z0:[0-9]+]] = arith.mulf %[[TANH0]], %[[C30]] : f32
// CHECK-NEXT:    %[[X2:[0-9]+]] = arith.mulf %[[S2]], %[[SCALE]] : f32
// CHECK-COUNT-3: nvvm.rcp.approx.ftz.f
// CHECK:         return %[[Z0]], %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}} : f32, f32, f32, f32

// math.exp and math.absf in a body take the kernel's forms too (MUFU ex2 of
// x·log2 e, the sign bit cleared), never a libdevice call.
// APPROX-LABEL: func.func @exp_abs
// APPROX:         %[[L2E:.+]] = arith.constant 1.44269502 : f32
// APPROX:         %[[XL:[0-9]+]] = arith.mulf %{{[0-9]+}}, %[[L2E]] : f32
// APPROX-NEXT:    %[[E:[0-9]+]] = llvm.inline_asm asm_dialect = att "ex2.approx.ftz.f32 $0, $1;", "=f,f" %[[XL]] : (f32) -> f32
// APPROX-NEXT:    %[[EB:[0-9]+]] = arith.bitcast %[[E]] : f32 to i32
// APPROX-NEXT:    %[[M:.+]] = arith.constant 2147483647 : i32
// APPROX-NEXT:    arith.andi %[[EB]], %[[M]] : i32
// APPROX-NOT:     math.
// APPROX-NOT:     __nv_

// A prefix-LM mask (keys below 4, or at or before the row): each register
// kept where the body holds for its (row, key), −inf elsewhere — one select
// on the body's predicate, which passes an identity mov.pred (NVPTX would
// otherwise select once per operand of the or).
// CHECK-LABEL: func.func @prefix
// CHECK-SAME:    (%[[P0:[a-z0-9]+]]: f32, %{{.+}}: f32, %[[P2:[a-z0-9]+]]: f32, %{{.+}}: f32,
// CHECK:         %[[ROW0:[0-9]+]] = arith.index_cast %{{[0-9]+}} : i32 to index
// CHECK:         %[[ROW1:[0-9]+]] = arith.index_cast %{{[0-9]+}} : i32 to index
// CHECK:         %[[NEGINF:.+]] = arith.constant 0xFF800000 : f32
// CHECK:         %[[KEY0:[0-9]+]] = arith.index_cast %{{[0-9]+}} : i32 to index
// CHECK:         %[[PRE:[0-9]+]] = arith.cmpi slt, %[[KEY0]], %{{.+}} : index
// CHECK-NEXT:    %[[CAUSAL:[0-9]+]] = arith.cmpi sle, %[[KEY0]], %[[ROW0]] : index
// CHECK-NEXT:    %[[KEEP:[0-9]+]] = arith.ori %[[PRE]], %[[CAUSAL]] : i1
// CHECK-NEXT:    %[[PRED:[0-9]+]] = llvm.inline_asm asm_dialect = att "mov.pred $0, $1;", "=b,b" %[[KEEP]] : (i1) -> i1
// CHECK-NEXT:    %{{[0-9]+}} = arith.select %[[PRED]], %[[P0]], %[[NEGINF]] : f32
// CHECK:         arith.cmpi sle, %[[KEY0]], %[[ROW1]] : index
// CHECK:         arith.select %{{[0-9]+}}, %[[P2]], %[[NEGINF]] : f32

// With the afn flag (fat-pipeline sets it in bf16 kernels) the default
// takes tanh.approx too.
// CHECK-LABEL: func.func @softcap_afn
// CHECK-COUNT-4: llvm.inline_asm asm_dialect = att "tanh.approx.f32 $0, $1;", "=f,f"
// CHECK-NOT:     nvvm.rcp.approx

// tanh_poly: the thread's largest |s| (abs.f32 into a maxnum per register),
// scaled and divided as the body's tanh argument is, its square against the
// bound's, a warp vote; the versions yield the four registers — with the
// polynomial x·(c0 + t·(c1 + t·(c2 + t·c3))), t = x², on every register,
// or with MUFU's tanh.
// CHECK-LABEL: func.func @softcap_poly
// CHECK-SAME:    (%[[P0:[a-z0-9]+]]: f32, %[[P1:[a-z0-9]+]]: f32, %[[P2:[a-z0-9]+]]: f32, %[[P3:[a-z0-9]+]]: f32
// CHECK:         %[[A0:[0-9]+]] = llvm.inline_asm asm_dialect = att "abs.f32 $0, $1;", "=f,f" %[[P0]]
// CHECK-NEXT:    %[[W0:[0-9]+]] = llvm.intr.maxnum(%{{.+}}, %[[A0]])
// CHECK-COUNT-3: llvm.inline_asm asm_dialect = att "abs.f32 $0, $1;"
// CHECK:         %[[W:[0-9]+]] = llvm.intr.maxnum
// CHECK:         %[[WS:[0-9]+]] = arith.mulf %[[W]], %{{.+}} : f32
// CHECK:         %[[WX:[0-9]+]] = arith.divf %[[WS]], %{{.+}} fastmath<arcp> : f32
// CHECK-NEXT:    %[[WX2:[0-9]+]] = arith.mulf %[[WX]], %[[WX]] : f32
// CHECK-NEXT:    %[[ONE:.+]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:    %[[FITS:[0-9]+]] = arith.cmpf ole, %[[WX2]], %[[ONE]] : f32
// CHECK:         %[[ALL:[0-9]+]] = nvvm.vote.sync  all %{{.+}}, %[[FITS]] -> i1
// CHECK-NEXT:    %[[V:[0-9]+]]:4 = scf.if %[[ALL]] -> (f32, f32, f32, f32) {
// CHECK:           %[[X:[0-9]+]] = arith.divf %{{.+}}, %{{.+}} fastmath<arcp> : f32
// CHECK-NEXT:      %[[T:[0-9]+]] = arith.mulf %[[X]], %[[X]] : f32
// CHECK-NEXT:      %[[C3:.+]] = arith.constant -0.0246544648 : f32
// CHECK-NEXT:      %[[C2:.+]] = arith.constant 0.115414366 : f32
// CHECK-NEXT:      %[[H2:[0-9]+]] = llvm.intr.fma(%[[C3]], %[[T]], %[[C2]])
// CHECK-NEXT:      %[[C1:.+]] = arith.constant -0.328892231 : f32
// CHECK-NEXT:      %[[H1:[0-9]+]] = llvm.intr.fma(%[[H2]], %[[T]], %[[C1]])
// CHECK-NEXT:      %[[C0:.+]] = arith.constant 0.99969381 : f32
// CHECK-NEXT:      %[[H0:[0-9]+]] = llvm.intr.fma(%[[H1]], %[[T]], %[[C0]])
// CHECK-NEXT:      %{{[0-9]+}} = arith.mulf %[[X]], %[[H0]] : f32
// CHECK-NOT:       tanh.approx
// CHECK:           scf.yield
// CHECK-NEXT:    } else {
// CHECK-COUNT-4:   tanh.approx.f32
// CHECK:           scf.yield
// CHECK:         return %[[V]]#0, %[[V]]#1, %[[V]]#2, %[[V]]#3

// A document mask reading a captured tensor: in the kernel the capture is
// the tensor's address, and each tensor.extract an invariant load of the
// row-major element. The read d[b, j] moves with the key, so the tile is
// versioned on a uniform test: where every read's indices lie in the
// static shape 2x100 over the whole tile (b ∈ [0, 1]; the tile's rows
// q0 .. q0 + 63 and keys k0 .. k0 + 7 in [0, 99]), a thread's reads are
// one address each, computed once at its first row and key, and an
// element's read a constant offset from it (the second row: d[b, i] 8 ids
// further; a key further: d[b, j] one further), no index clamped; rows and
// keys are not clamped there either (a padding key is −inf after fat.mask,
// a padding row never written). An empty asm with effects ends
// that version (LLVM would otherwise merge the versions' loads behind a φ
// of addresses per register). The other version clamps every index.
// CHECK-LABEL: func.func @document
// CHECK-SAME:    (%[[D0:[a-z0-9]+]]: f32, %{{[a-z0-9]+}}: f32, %{{[a-z0-9]+}}: f32, %{{[a-z0-9]+}}: f32, %[[B:[a-z0-9]+]]: index,
// CHECK-SAME:    %{{[a-z0-9]+}}: index, %[[Q0:[a-z0-9]+]]: index, %[[K0:[a-z0-9]+]]: index, %{{[a-z0-9]+}}: index, %{{[a-z0-9]+}}: index,
// CHECK-SAME:    %[[DOC:[a-z0-9]+]]: !llvm.ptr<1>)
// CHECK:         %[[ROW0:[0-9]+]] = arith.index_cast %{{[0-9]+}} : i32 to index
// CHECK:         arith.index_cast %{{[0-9]+}} : i32 to index
// CHECK:         %[[FIRST:[0-9]+]] = arith.index_cast %{{[0-9]+}} : i32 to index
// CHECK-NEXT:    %[[LAST:[0-9]+]] = arith.index_cast %{{[0-9]+}} : i32 to index
// CHECK:         %[[KLAST:[0-9]+]] = arith.addi %[[K0]], %c7 : index
// CHECK:         arith.cmpi sge, %[[B]], %{{.+}} : index
// CHECK:         arith.cmpi sle, %[[B]], %c1 : index
// CHECK:         arith.cmpi sge, %[[FIRST]], %{{.+}} : index
// CHECK:         arith.cmpi sle, %[[LAST]], %c99 : index
// CHECK:         arith.cmpi sge, %[[K0]], %{{.+}} : index
// CHECK:         arith.cmpi sle, %[[KLAST]], %{{.+}} : index
// CHECK:         %{{[0-9]+}}:4 = scf.if %{{[0-9]+}} -> (f32, f32, f32, f32) {
// CHECK-NEXT:      %[[ROW:[0-9]+]] = arith.index_cast %{{[0-9]+}} : i32 to index
// CHECK-NEXT:      %[[KEY:[0-9]+]] = arith.index_cast %{{[0-9]+}} : i32 to index
// CHECK:           %[[OFFI:[0-9]+]] = arith.addi %[[ROW]], %{{[0-9]+}} overflow<nsw> : index
// CHECK-NEXT:      %[[LINI:[0-9]+]] = arith.index_cast %[[OFFI]] : index to i64
// CHECK-NEXT:      %[[ADDRI:[0-9]+]] = llvm.getelementptr %[[DOC]][%[[LINI]]] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i32
// CHECK:           %[[OFFJ:[0-9]+]] = arith.addi %[[KEY]], %{{[0-9]+}} overflow<nsw> : index
// CHECK-NEXT:      %[[LINJ:[0-9]+]] = arith.index_cast %[[OFFJ]] : index to i64
// CHECK-NEXT:      %[[ADDRJ:[0-9]+]] = llvm.getelementptr %[[DOC]][%[[LINJ]]] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i32
// doc[b, j] moves with the key: the next block's line (8 keys on), lane λ
// taking line λ mod 2 of its 32-byte span, clamped into the 200 elements.
// CHECK:           %[[LINE:[0-9]+]] = arith.muli %{{[0-9]+}}, %c32_i32{{[_0-9]*}} : i32
// CHECK-NEXT:      %[[AT:[0-9]+]] = arith.trunci %[[LINJ]] : i64 to i32
// CHECK-NEXT:      %[[C8:.+]] = arith.constant 8 : i32
// CHECK-NEXT:      %[[NEXT:[0-9]+]] = arith.addi %[[AT]], %[[C8]] : i32
// CHECK-NEXT:      %[[SPREAD:[0-9]+]] = arith.addi %[[NEXT]], %[[LINE]] : i32
// CHECK:           %[[LOW:[0-9]+]] = arith.maxsi %[[SPREAD]], %{{.+}} : i32
// CHECK:           %[[CLAMPED:[0-9]+]] = arith.minsi %[[LOW]], %c199_i32 : i32
// CHECK-NEXT:      %[[PF:[0-9]+]] = llvm.getelementptr %[[DOC]][%[[CLAMPED]]] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
// CHECK-NEXT:      nvvm.prefetch level = L1, %[[PF]] : !llvm.ptr<1>
// CHECK-NOT:       nvvm.prefetch
// CHECK-NOT:       arith.maxsi
// CHECK-NOT:       arith.minsi
// CHECK:           %[[AI:[0-9]+]] = llvm.getelementptr %[[ADDRI]][%c0_i64{{[_0-9]*}}]
// CHECK-NEXT:      %[[DI:[0-9]+]] = llvm.load %[[AI]] invariant : !llvm.ptr<1> -> i32
// CHECK:           %[[AJ:[0-9]+]] = llvm.getelementptr %[[ADDRJ]][%c0_i64{{[_0-9]*}}]
// CHECK-NEXT:      %[[DJ:[0-9]+]] = llvm.load %[[AJ]] invariant : !llvm.ptr<1> -> i32
// CHECK-NEXT:      %[[SAME:[0-9]+]] = arith.cmpi eq, %[[DI]], %[[DJ]] : i32
// CHECK-NEXT:      arith.select %[[SAME]], %[[D0]], %{{.+}} : f32
// CHECK:           llvm.getelementptr %[[ADDRI]][%c8_i64{{[_0-9]*}}]
// CHECK:           llvm.getelementptr %[[ADDRJ]][%c1_i64{{[_0-9]*}}]
// CHECK:           llvm.inline_asm has_side_effects asm_dialect = att "", ""  : () -> ()
// CHECK-NEXT:      scf.yield
// CHECK-NEXT:    } else {
// CHECK:           %[[RLO:[0-9]+]] = arith.maxsi %[[ROW0]], %{{.+}} : index
// CHECK-NEXT:      %[[C99:.+]] = arith.constant 99 : index
// CHECK-NEXT:      %[[R:[0-9]+]] = arith.minsi %[[RLO]], %[[C99]] : index
// CHECK:           %[[BLO:[0-9]+]] = arith.maxsi %[[B]], %{{.+}} : index
// CHECK-NEXT:      %[[C1:.+]] = arith.constant 1 : index
// CHECK-NEXT:      %[[BB:[0-9]+]] = arith.minsi %[[BLO]], %[[C1]] : index
// CHECK-NEXT:      %[[C100:.+]] = arith.constant 100 : index
// CHECK-NEXT:      %[[OFF:[0-9]+]] = arith.muli %[[BB]], %[[C100]] : index
// CHECK-NEXT:      %[[LIN:[0-9]+]] = arith.addi %[[R]], %[[OFF]] : index
// CHECK-NEXT:      %[[LIN32:[0-9]+]] = arith.index_cast %[[LIN]] : index to i32
// CHECK-NEXT:      %[[ADDR:[0-9]+]] = llvm.getelementptr %[[DOC]][%[[LIN32]]] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
// CHECK-NEXT:      %[[CDI:[0-9]+]] = llvm.load %[[ADDR]] invariant : !llvm.ptr<1> -> i32
// CHECK:           arith.maxsi %{{[0-9]+}}, %{{.+}} : index
// CHECK:           %[[CDJ:[0-9]+]] = llvm.load %{{[0-9]+}} invariant : !llvm.ptr<1> -> i32
// CHECK-NEXT:      %[[CSAME:[0-9]+]] = arith.cmpi eq, %[[CDI]], %[[CDJ]] : i32
// CHECK-NEXT:      arith.select %[[CSAME]], %[[D0]], %{{.+}} : f32

// A relative bias table read at [h, j − i + 127] moves −1 per row and +1
// per key, so an element's read is the thread's address plus 8i + e − 8r
// elements (row 1 at key k reads row 0's key k − 8: LLVM loads it once);
// the range test bounds j − i + 127 by (k0 − (q0 + 63) + 127,
// k0 + 7 − q0 + 127).
// CHECK-LABEL: func.func @relative_bias
// CHECK-SAME:    (%{{[a-z0-9]+}}: f32, %{{[a-z0-9]+}}: f32, %{{[a-z0-9]+}}: f32, %{{[a-z0-9]+}}: f32, %{{[a-z0-9]+}}: index, %[[H:[a-z0-9]+]]: index,
// CHECK-SAME:    %{{[a-z0-9]+}}: index, %[[K0:[a-z0-9]+]]: index, %{{[a-z0-9]+}}: index, %{{[a-z0-9]+}}: index,
// CHECK-SAME:    %[[TABLE:[a-z0-9]+]]: !llvm.ptr<1>)
// CHECK:         arith.index_cast %{{[0-9]+}} : i32 to index
// CHECK:         arith.index_cast %{{[0-9]+}} : i32 to index
// CHECK:         %[[FIRST:[0-9]+]] = arith.index_cast %{{[0-9]+}} : i32 to index
// CHECK-NEXT:    %[[LAST:[0-9]+]] = arith.index_cast %{{[0-9]+}} : i32 to index
// CHECK:         %[[KLAST:[0-9]+]] = arith.addi %[[K0]], %c7 : index
// CHECK:         arith.cmpi sle, %[[H]], %c3 : index
// CHECK:         %[[LO:[0-9]+]] = arith.subi %[[K0]], %[[LAST]] overflow<nsw> : index
// CHECK-NEXT:    %[[HI:[0-9]+]] = arith.subi %[[KLAST]], %[[FIRST]] overflow<nsw> : index
// CHECK-NEXT:    %[[C:.+]] = arith.constant 127 : index
// CHECK-NEXT:    %[[LOC:[0-9]+]] = arith.addi %[[LO]], %[[C]] overflow<nsw> : index
// CHECK-NEXT:    %[[HIC:[0-9]+]] = arith.addi %[[HI]], %[[C]] overflow<nsw> : index
// CHECK:         arith.cmpi sge, %[[LOC]], %{{.+}} : index
// CHECK:         arith.cmpi sle, %[[HIC]], %c254 : index
// CHECK:         scf.if
// CHECK:           %[[ADDR:[0-9]+]] = llvm.getelementptr %[[TABLE]][%{{[0-9]+}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
// The next block's lines: the thread's offsets span −8 … 7 elements, so
// the prefetch starts 8 − 8 = 0 elements past its first read.
// CHECK:           %[[RB:.+]] = arith.constant 0 : i32
// CHECK-NEXT:      %[[RBN:[0-9]+]] = arith.addi %{{[0-9]+}}, %[[RB]] : i32
// CHECK:           arith.minsi %{{[0-9]+}}, %c1019_i32 : i32
// CHECK:           nvvm.prefetch level = L1
// CHECK:           llvm.getelementptr %[[ADDR]][%c0_i64{{[_0-9]*}}]
// CHECK:           llvm.getelementptr %[[ADDR]][%c-8_i64{{[_0-9]*}}]
// CHECK:           llvm.getelementptr %[[ADDR]][%c1_i64{{[_0-9]*}}]
// CHECK:           llvm.getelementptr %[[ADDR]][%c-7_i64{{[_0-9]*}}]
// CHECK:         } else {
// CHECK:           arith.minsi %{{[0-9]+}}, %c254{{[_0-9]*}} : index

// An index with a constant of 2^31 or more in magnitude has no range the
// test may compute without wrapping: only the clamped form.
// CHECK-LABEL: func.func @huge_offset
// CHECK-NOT:     scf.if
// CHECK:         arith.maxsi
// CHECK:         return

// ALiBi, s − slope·float(i − j): the difference of positions converted as
// float(i) − float(j) (exact below 2^24): a row's float once per row, a
// key's as the tile's float base plus a constant (not clamped: a padding
// key is −inf after fat.mask), so an element costs one FSUB, not an
// integer subtract, a clamp and an I2F. The subtraction of the product
// becomes s + slope·(float(j) − float(i)), exact, which LLVM contracts into
// one FFMA without an FNEG.
// CHECK-LABEL: func.func @alibi
// CHECK:         %[[ROW0:[0-9]+]] = arith.index_cast %{{[0-9]+}} : i32 to index
// CHECK:         %[[ROW1:[0-9]+]] = arith.index_cast %{{[0-9]+}} : i32 to index
// CHECK:         %[[R0:[0-9]+]] = arith.index_cast %[[ROW0]] : index to i32
// CHECK-NEXT:    %[[FI0:[0-9]+]] = arith.sitofp %[[R0]] : i32 to f32
// CHECK-NEXT:    %[[R1:[0-9]+]] = arith.index_cast %[[ROW1]] : index to i32
// CHECK-NEXT:    %[[FI1:[0-9]+]] = arith.sitofp %[[R1]] : i32 to f32
// CHECK-NEXT:    %[[FK:[0-9]+]] = arith.sitofp %{{[0-9]+}} : i32 to f32
// CHECK:         %[[K0:.+]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    %[[FJ0:[0-9]+]] = arith.addf %[[FK]], %[[K0]] : f32
// CHECK-NEXT:    %[[X0:[0-9]+]] = arith.mulf %arg0, %{{.+}} : f32
// CHECK:         %[[D0:[0-9]+]] = arith.subf %[[FJ0]], %[[FI0]] : f32
// CHECK-NEXT:    %[[B0:[0-9]+]] = arith.mulf %{{.+}}, %[[D0]] : f32
// CHECK-NEXT:    arith.addf %[[X0]], %[[B0]] : f32
// CHECK:         %[[D1:[0-9]+]] = arith.subf %[[FJ0]], %[[FI1]] : f32
// CHECK:         %[[K1:.+]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:    %[[FJ1:[0-9]+]] = arith.addf %[[FK]], %[[K1]] : f32
// CHECK:         arith.subf %[[FJ1]], %[[FI0]] : f32

// rows_at_origin: both rows are the tile's first, clamped (min(q0, Sq − 1)),
// and a key's float is relative to it, float(j − i'): the element's
// difference is that per-key value (the row's float is 0), no FSUB per
// element; the same FFMA follows.
// CHECK-LABEL: func.func @alibi_at_origin
// CHECK:         %[[ORIGIN:[0-9]+]] = arith.minsi %{{[0-9]+}}, %{{[0-9]+}} : i32
// CHECK:         %[[ROW:[0-9]+]] = arith.index_cast %[[ORIGIN]] : i32 to index
// CHECK-NEXT:    %[[ROWB:[0-9]+]] = arith.index_cast %[[ORIGIN]] : i32 to index
// CHECK:         %[[REL:[0-9]+]] = arith.subi %{{[0-9]+}}, %[[ORIGIN]] : i32
// CHECK-NEXT:    %[[FK:[0-9]+]] = arith.sitofp %[[REL]] : i32 to f32
// CHECK:         %[[FJ0:[0-9]+]] = arith.addf %[[FK]], %{{.+}} : f32
// CHECK-NEXT:    %[[X0:[0-9]+]] = arith.mulf %arg0, %{{.+}} : f32
// CHECK:         %[[D0:[0-9]+]] = arith.subf %[[FJ0]], %[[ZERO:.+]] : f32
// CHECK-NEXT:    %[[B0:[0-9]+]] = arith.mulf %{{.+}}, %[[D0]] : f32
// CHECK-NEXT:    arith.addf %[[X0]], %[[B0]] : f32
// CHECK-NOT:     arith.sitofp
// CHECK:         return
// The pattern fat-pipeline runs on a kernel without LSE marks ALiBi's form
// (fa-t-opt has no flag for it alone: test/PTX/modifications.mlir).

// Only positions split: another difference (here batch − head, which could
// wrap in 32 bits) is converted as it is.
// CHECK-LABEL: func.func @other_difference
// CHECK:         %[[D:[0-9]+]] = arith.subi %{{.+}}, %{{.+}} : index
// CHECK-NEXT:    %[[D64:[0-9]+]] = arith.index_cast %[[D]] : index to i64
// CHECK-NEXT:    arith.sitofp %[[D64]] : i64 to f32

// A mask whose conjuncts bound the key by values free of it (a document's
// run, first[i] ≤ j < end[i]) compares the element's constant key offset k
// with two limits per row, max(bound, c0) − c0 (c0 the thread's first key):
// the bounds are read once per row, and an element costs two compares.
// CHECK-LABEL: func.func @runs
// CHECK-SAME:    (%[[R0:[a-z0-9]+]]: f32, %{{[a-z0-9]+}}: f32, %[[R2:[a-z0-9]+]]: f32,
// CHECK:         %[[T2:[0-9]+]] = arith.muli %{{[0-9]+}}, %c2_i32 : i32
// CHECK-NEXT:    %[[C0:[0-9]+]] = arith.addi %{{[0-9]+}}, %[[T2]] : i32
// CHECK:         %[[F0:[0-9]+]] = llvm.load %{{[0-9]+}} invariant : !llvm.ptr<1> -> i32
// CHECK:         %[[E0:[0-9]+]] = llvm.load %{{[0-9]+}} invariant : !llvm.ptr<1> -> i32
// CHECK:         %[[LOM0:[0-9]+]] = arith.maxsi %[[F0]], %[[C0]] : i32
// CHECK-NEXT:    %[[LO0:[0-9]+]] = arith.subi %[[LOM0]], %[[C0]] : i32
// CHECK-NEXT:    %[[HIM0:[0-9]+]] = arith.maxsi %[[E0]], %[[C0]] : i32
// CHECK-NEXT:    %[[HI0:[0-9]+]] = arith.subi %[[HIM0]], %[[C0]] : i32
// CHECK:         %[[F1:[0-9]+]] = llvm.load %{{[0-9]+}} invariant : !llvm.ptr<1> -> i32
// CHECK:         %[[E1:[0-9]+]] = llvm.load %{{[0-9]+}} invariant : !llvm.ptr<1> -> i32
// CHECK:         %[[LOM1:[0-9]+]] = arith.maxsi %[[F1]], %[[C0]] : i32
// CHECK-NEXT:    %[[LO1:[0-9]+]] = arith.subi %[[LOM1]], %[[C0]] : i32
// CHECK-NEXT:    %[[HIM1:[0-9]+]] = arith.maxsi %[[E1]], %[[C0]] : i32
// CHECK-NEXT:    %[[HI1:[0-9]+]] = arith.subi %[[HIM1]], %[[C0]] : i32
// CHECK-NOT:     llvm.load
// CHECK:         %[[IN0:[0-9]+]] = arith.cmpi sge, %[[K:c0_i32[_0-9]*]], %[[LO0]] : i32
// CHECK-NEXT:    %[[UP0:[0-9]+]] = arith.cmpi slt, %[[K]], %[[HI0]] : i32
// CHECK-NEXT:    %[[BOTH0:[0-9]+]] = arith.andi %[[IN0]], %[[UP0]] : i1
// CHECK-NEXT:    %[[KEEP0:[0-9]+]] = llvm.inline_asm asm_dialect = att "mov.pred $0, $1;", "=b,b" %[[BOTH0]] : (i1) -> i1
// CHECK-NEXT:    arith.select %[[KEEP0]], %[[R0]], %{{.+}} : f32
// CHECK-NOT:     llvm.load
// CHECK:         %[[IN1:[0-9]+]] = arith.cmpi sge, %[[K1:c0_i32[_0-9]*]], %[[LO1]] : i32
// CHECK-NEXT:    %[[UP1:[0-9]+]] = arith.cmpi slt, %[[K1]], %[[HI1]] : i32
// CHECK-NEXT:    %[[BOTH1:[0-9]+]] = arith.andi %[[IN1]], %[[UP1]] : i1
// CHECK-NEXT:    %[[KEEP1:[0-9]+]] = llvm.inline_asm asm_dialect = att "mov.pred $0, $1;", "=b,b" %[[BOTH1]] : (i1) -> i1
// CHECK-NEXT:    arith.select %[[KEEP1]], %[[R2]], %{{.+}} : f32
// CHECK-NOT:     llvm.load
// CHECK:         return

// Bounds on either side of the comparison, strict or not (i ≥ j: j < i + 1,
// i + 1 taken below 2^31; j > 2: j ≥ 3), beside a conjunct that is no bound
// (j ≠ 5, on the clamped key as before): the conjunct, then the limits.
// CHECK-LABEL: func.func @bounds_and_rest
// CHECK-SAME:    (%[[B0:[a-z0-9]+]]: f32,
// CHECK:         %[[T2:[0-9]+]] = arith.muli %{{[0-9]+}}, %c2_i32 : i32
// CHECK-NEXT:    %[[C0:[0-9]+]] = arith.addi %{{[0-9]+}}, %[[T2]] : i32
// CHECK:         %[[ROW0:[0-9]+]] = arith.minsi %{{[0-9]+}}, %{{[0-9]+}} : i32
// CHECK:         %[[ROWC:[0-9]+]] = arith.minsi %[[ROW0]], %c2147483646_i32{{.*}} : i32
// CHECK:         %[[ROWP1:[0-9]+]] = arith.addi %[[ROWC]], %c1_i32{{.*}} : i32
// CHECK:         %[[TWOC:[0-9]+]] = arith.minsi %{{[0-9]+}}, %c2147483646_i32{{.*}} : i32
// CHECK:         %[[THREE:[0-9]+]] = arith.addi %[[TWOC]], %c1_i32{{.*}} : i32
// CHECK-NEXT:    %[[LOM:[0-9]+]] = arith.maxsi %[[THREE]], %[[C0]] : i32
// CHECK-NEXT:    %[[LO:[0-9]+]] = arith.subi %[[LOM]], %[[C0]] : i32
// CHECK-NEXT:    %[[HIM:[0-9]+]] = arith.maxsi %[[ROWP1]], %[[C0]] : i32
// CHECK-NEXT:    %[[HI:[0-9]+]] = arith.subi %[[HIM]], %[[C0]] : i32
// CHECK:         %[[KEY:[0-9]+]] = arith.minsi %{{[0-9]+}}, %{{[0-9]+}} : i32
// CHECK-NEXT:    %[[KEYX:[0-9]+]] = arith.index_cast %[[KEY]] : i32 to index
// CHECK:         %[[NOT5:[0-9]+]] = arith.cmpi ne, %[[KEYX]], %c5 : index
// CHECK:         %[[IN:[0-9]+]] = arith.cmpi sge, %c0_i32{{.*}}, %[[LO]] : i32
// CHECK-NEXT:    %[[A:[0-9]+]] = arith.andi %[[NOT5]], %[[IN]] : i1
// CHECK-NEXT:    %[[UP:[0-9]+]] = arith.cmpi slt, %c0_i32{{.*}}, %[[HI]] : i32
// CHECK-NEXT:    %[[ALL:[0-9]+]] = arith.andi %[[A]], %[[UP]] : i1
// CHECK-NEXT:    %[[KEEP:[0-9]+]] = llvm.inline_asm asm_dialect = att "mov.pred $0, $1;", "=b,b" %[[ALL]] : (i1) -> i1
// CHECK-NEXT:    arith.select %[[KEEP]], %[[B0]], %{{.+}} : f32

#frag = #fat.wgmma_fragment
gpu.module @k {
  func.func @softcap(%s0: f32, %s1: f32, %s2: f32, %s3: f32, %b: index, %h: index,
                     %q0: index, %k0: index, %sq: index, %skv: index) -> (f32, f32, f32, f32) {
    %s = builtin.unrealized_conversion_cast %s0, %s1, %s2, %s3
        : f32, f32, f32, f32 to tensor<64x8xf32, #frag>
    %m = fat.score_mod %s at(%b, %h, %q0, %k0) len(%sq, %skv) scale 0.125 {
    ^bb0(%x: f32, %bb: index, %hh: index, %i: index, %j: index):
      %c = arith.constant 30.0 : f32
      %y = arith.divf %x, %c : f32
      %t = math.tanh %y : f32
      %z = arith.mulf %t, %c : f32
      fat.yield %z : f32
    } : tensor<64x8xf32, #frag>
    %r:4 = builtin.unrealized_conversion_cast %m : tensor<64x8xf32, #frag> to f32, f32, f32, f32
    return %r#0, %r#1, %r#2, %r#3 : f32, f32, f32, f32
  }
  func.func @prefix(%s0: f32, %s1: f32, %s2: f32, %s3: f32, %b: index, %h: index,
                    %q0: index, %k0: index, %sq: index, %skv: index) -> (f32, f32, f32, f32) {
    %s = builtin.unrealized_conversion_cast %s0, %s1, %s2, %s3
        : f32, f32, f32, f32 to tensor<64x8xf32, #frag>
    %m = fat.mask_mod %s at(%b, %h, %q0, %k0) len(%sq, %skv) {
    ^bb0(%bb: index, %hh: index, %i: index, %j: index):
      %c4 = arith.constant 4 : index
      %p = arith.cmpi slt, %j, %c4 : index
      %d = arith.cmpi sle, %j, %i : index
      %v = arith.ori %p, %d : i1
      fat.yield %v : i1
    } : tensor<64x8xf32, #frag>
    %r:4 = builtin.unrealized_conversion_cast %m : tensor<64x8xf32, #frag> to f32, f32, f32, f32
    return %r#0, %r#1, %r#2, %r#3 : f32, f32, f32, f32
  }
  func.func @exp_abs(%s0: f32, %s1: f32, %s2: f32, %s3: f32, %i: index)
      -> (f32, f32, f32, f32) {
    %s = builtin.unrealized_conversion_cast %s0, %s1, %s2, %s3
        : f32, f32, f32, f32 to tensor<64x8xf32, #frag>
    %m = fat.score_mod %s at(%i, %i, %i, %i) len(%i, %i) scale 1.0 {
    ^bb0(%x: f32, %bb: index, %hh: index, %qi: index, %kj: index):
      %e = math.exp %x : f32
      %a = math.absf %e : f32
      fat.yield %a : f32
    } : tensor<64x8xf32, #frag>
    %r:4 = builtin.unrealized_conversion_cast %m : tensor<64x8xf32, #frag> to f32, f32, f32, f32
    return %r#0, %r#1, %r#2, %r#3 : f32, f32, f32, f32
  }
  func.func @softcap_afn(%s0: f32, %s1: f32, %s2: f32, %s3: f32, %i: index)
      -> (f32, f32, f32, f32) {
    %s = builtin.unrealized_conversion_cast %s0, %s1, %s2, %s3
        : f32, f32, f32, f32 to tensor<64x8xf32, #frag>
    %m = fat.score_mod %s at(%i, %i, %i, %i) len(%i, %i) scale 1.0 {
    ^bb0(%x: f32, %bb: index, %hh: index, %qi: index, %kj: index):
      %t = math.tanh %x fastmath<afn> : f32
      fat.yield %t : f32
    } : tensor<64x8xf32, #frag>
    %r:4 = builtin.unrealized_conversion_cast %m : tensor<64x8xf32, #frag> to f32, f32, f32, f32
    return %r#0, %r#1, %r#2, %r#3 : f32, f32, f32, f32
  }
  func.func @softcap_poly(%s0: f32, %s1: f32, %s2: f32, %s3: f32, %i: index)
      -> (f32, f32, f32, f32) {
    %s = builtin.unrealized_conversion_cast %s0, %s1, %s2, %s3
        : f32, f32, f32, f32 to tensor<64x8xf32, #frag>
    %m = fat.score_mod %s at(%i, %i, %i, %i) len(%i, %i) scale 2.0 tanh_poly {
    ^bb0(%x: f32, %bb: index, %hh: index, %qi: index, %kj: index):
      %c = arith.constant 30.0 : f32
      %y = arith.divf %x, %c : f32
      %t = math.tanh %y fastmath<afn> : f32
      fat.yield %t : f32
    } : tensor<64x8xf32, #frag>
    %r:4 = builtin.unrealized_conversion_cast %m : tensor<64x8xf32, #frag> to f32, f32, f32, f32
    return %r#0, %r#1, %r#2, %r#3 : f32, f32, f32, f32
  }
  func.func @document(%s0: f32, %s1: f32, %s2: f32, %s3: f32, %b: index, %h: index,
                      %q0: index, %k0: index, %sq: index, %skv: index,
                      %doc: !llvm.ptr<1>) -> (f32, f32, f32, f32) {
    %s = builtin.unrealized_conversion_cast %s0, %s1, %s2, %s3
        : f32, f32, f32, f32 to tensor<64x8xf32, #frag>
    %m = fat.mask_mod %s at(%b, %h, %q0, %k0) len(%sq, %skv)
        captures(%doc : !llvm.ptr<1>) {
    ^bb0(%bb: index, %hh: index, %i: index, %j: index, %d: tensor<2x100xi32>):
      %di = tensor.extract %d[%bb, %i] : tensor<2x100xi32>
      %dj = tensor.extract %d[%bb, %j] : tensor<2x100xi32>
      %v = arith.cmpi eq, %di, %dj : i32
      fat.yield %v : i1
    } : tensor<64x8xf32, #frag>
    %r:4 = builtin.unrealized_conversion_cast %m : tensor<64x8xf32, #frag> to f32, f32, f32, f32
    return %r#0, %r#1, %r#2, %r#3 : f32, f32, f32, f32
  }
  func.func @relative_bias(%s0: f32, %s1: f32, %s2: f32, %s3: f32, %b: index, %h: index,
                           %q0: index, %k0: index, %sq: index, %skv: index,
                           %table: !llvm.ptr<1>) -> (f32, f32, f32, f32) {
    %s = builtin.unrealized_conversion_cast %s0, %s1, %s2, %s3
        : f32, f32, f32, f32 to tensor<64x8xf32, #frag>
    %m = fat.score_mod %s at(%b, %h, %q0, %k0) len(%sq, %skv) scale 1.0
        captures(%table : !llvm.ptr<1>) {
    ^bb0(%x: f32, %bb: index, %hh: index, %i: index, %j: index, %t: tensor<4x255xf32>):
      %d = arith.subi %j, %i : index
      %c = arith.constant 127 : index
      %at = arith.addi %d, %c : index
      %bias = tensor.extract %t[%hh, %at] : tensor<4x255xf32>
      %y = arith.addf %x, %bias : f32
      fat.yield %y : f32
    } : tensor<64x8xf32, #frag>
    %r:4 = builtin.unrealized_conversion_cast %m : tensor<64x8xf32, #frag> to f32, f32, f32, f32
    return %r#0, %r#1, %r#2, %r#3 : f32, f32, f32, f32
  }
  func.func @huge_offset(%s0: f32, %s1: f32, %s2: f32, %s3: f32, %b: index, %h: index,
                         %q0: index, %k0: index, %sq: index, %skv: index,
                         %table: !llvm.ptr<1>) -> (f32, f32, f32, f32) {
    %s = builtin.unrealized_conversion_cast %s0, %s1, %s2, %s3
        : f32, f32, f32, f32 to tensor<64x8xf32, #frag>
    %m = fat.score_mod %s at(%b, %h, %q0, %k0) len(%sq, %skv) scale 1.0
        captures(%table : !llvm.ptr<1>) {
    ^bb0(%x: f32, %bb: index, %hh: index, %i: index, %j: index, %t: tensor<4x255xf32>):
      %c = arith.constant 9223372036854775000 : index
      %at = arith.addi %j, %c : index
      %bias = tensor.extract %t[%hh, %at] : tensor<4x255xf32>
      %y = arith.addf %x, %bias : f32
      fat.yield %y : f32
    } : tensor<64x8xf32, #frag>
    %r:4 = builtin.unrealized_conversion_cast %m : tensor<64x8xf32, #frag> to f32, f32, f32, f32
    return %r#0, %r#1, %r#2, %r#3 : f32, f32, f32, f32
  }
  func.func @alibi(%s0: f32, %s1: f32, %s2: f32, %s3: f32, %b: index, %h: index,
                   %q0: index, %k0: index, %sq: index, %skv: index) -> (f32, f32, f32, f32) {
    %s = builtin.unrealized_conversion_cast %s0, %s1, %s2, %s3
        : f32, f32, f32, f32 to tensor<64x8xf32, #frag>
    %m = fat.score_mod %s at(%b, %h, %q0, %k0) len(%sq, %skv) scale 0.125 {
    ^bb0(%x: f32, %bb: index, %hh: index, %i: index, %j: index):
      %slope = arith.constant 0.25 : f32
      %d = arith.subi %i, %j : index
      %d64 = arith.index_cast %d : index to i64
      %df = arith.sitofp %d64 : i64 to f32
      %bias = arith.mulf %slope, %df : f32
      %y = arith.subf %x, %bias : f32
      fat.yield %y : f32
    } : tensor<64x8xf32, #frag>
    %r:4 = builtin.unrealized_conversion_cast %m : tensor<64x8xf32, #frag> to f32, f32, f32, f32
    return %r#0, %r#1, %r#2, %r#3 : f32, f32, f32, f32
  }
  func.func @alibi_at_origin(%s0: f32, %s1: f32, %s2: f32, %s3: f32, %b: index, %h: index,
                             %q0: index, %k0: index, %sq: index, %skv: index)
      -> (f32, f32, f32, f32) {
    %s = builtin.unrealized_conversion_cast %s0, %s1, %s2, %s3
        : f32, f32, f32, f32 to tensor<64x8xf32, #frag>
    %m = fat.score_mod %s at(%b, %h, %q0, %k0) len(%sq, %skv) scale 0.125 rows_at_origin {
    ^bb0(%x: f32, %bb: index, %hh: index, %i: index, %j: index):
      %slope = arith.constant 0.25 : f32
      %d = arith.subi %i, %j : index
      %d64 = arith.index_cast %d : index to i64
      %df = arith.sitofp %d64 : i64 to f32
      %bias = arith.mulf %slope, %df : f32
      %y = arith.subf %x, %bias : f32
      fat.yield %y : f32
    } : tensor<64x8xf32, #frag>
    %r:4 = builtin.unrealized_conversion_cast %m : tensor<64x8xf32, #frag> to f32, f32, f32, f32
    return %r#0, %r#1, %r#2, %r#3 : f32, f32, f32, f32
  }
  func.func @other_difference(%s0: f32, %s1: f32, %s2: f32, %s3: f32, %b: index,
                              %h: index, %q0: index, %k0: index, %sq: index,
                              %skv: index) -> (f32, f32, f32, f32) {
    %s = builtin.unrealized_conversion_cast %s0, %s1, %s2, %s3
        : f32, f32, f32, f32 to tensor<64x8xf32, #frag>
    %m = fat.score_mod %s at(%b, %h, %q0, %k0) len(%sq, %skv) scale 0.125 {
    ^bb0(%x: f32, %bb: index, %hh: index, %i: index, %j: index):
      %d = arith.subi %bb, %hh : index
      %d64 = arith.index_cast %d : index to i64
      %df = arith.sitofp %d64 : i64 to f32
      %y = arith.addf %x, %df : f32
      fat.yield %y : f32
    } : tensor<64x8xf32, #frag>
    %r:4 = builtin.unrealized_conversion_cast %m : tensor<64x8xf32, #frag> to f32, f32, f32, f32
    return %r#0, %r#1, %r#2, %r#3 : f32, f32, f32, f32
  }
  func.func @runs(%s0: f32, %s1: f32, %s2: f32, %s3: f32, %b: index, %h: index,
                  %q0: index, %k0: index, %sq: index, %skv: index,
                  %first: !llvm.ptr<1>, %end: !llvm.ptr<1>) -> (f32, f32, f32, f32) {
    %s = builtin.unrealized_conversion_cast %s0, %s1, %s2, %s3
        : f32, f32, f32, f32 to tensor<64x8xf32, #frag>
    %m = fat.mask_mod %s at(%b, %h, %q0, %k0) len(%sq, %skv)
        captures(%first, %end : !llvm.ptr<1>, !llvm.ptr<1>) {
    ^bb0(%bb: index, %hh: index, %i: index, %j: index, %f: tensor<100xi32>, %e: tensor<100xi32>):
      %fi = tensor.extract %f[%i] : tensor<100xi32>
      %fx = arith.index_cast %fi : i32 to index
      %ei = tensor.extract %e[%i] : tensor<100xi32>
      %ex = arith.index_cast %ei : i32 to index
      %lo = arith.cmpi sge, %j, %fx : index
      %hi = arith.cmpi slt, %j, %ex : index
      %v = arith.andi %lo, %hi : i1
      fat.yield %v : i1
    } : tensor<64x8xf32, #frag>
    %r:4 = builtin.unrealized_conversion_cast %m : tensor<64x8xf32, #frag> to f32, f32, f32, f32
    return %r#0, %r#1, %r#2, %r#3 : f32, f32, f32, f32
  }
  func.func @bounds_and_rest(%s0: f32, %s1: f32, %s2: f32, %s3: f32, %b: index, %h: index,
                             %q0: index, %k0: index, %sq: index, %skv: index)
      -> (f32, f32, f32, f32) {
    %s = builtin.unrealized_conversion_cast %s0, %s1, %s2, %s3
        : f32, f32, f32, f32 to tensor<64x8xf32, #frag>
    %m = fat.mask_mod %s at(%b, %h, %q0, %k0) len(%sq, %skv) {
    ^bb0(%bb: index, %hh: index, %i: index, %j: index):
      %c2 = arith.constant 2 : index
      %c5 = arith.constant 5 : index
      %below = arith.cmpi sge, %i, %j : index
      %after = arith.cmpi sgt, %j, %c2 : index
      %not5 = arith.cmpi ne, %j, %c5 : index
      %a = arith.andi %below, %after : i1
      %v = arith.andi %a, %not5 : i1
      fat.yield %v : i1
    } : tensor<64x8xf32, #frag>
    %r:4 = builtin.unrealized_conversion_cast %m : tensor<64x8xf32, #frag> to f32, f32, f32, f32
    return %r#0, %r#1, %r#2, %r#3 : f32, f32, f32, f32
  }
}
