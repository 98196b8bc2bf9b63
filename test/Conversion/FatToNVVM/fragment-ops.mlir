// RUN: fa-t-opt %s --convert-fat-to-nvvm | FileCheck %s
// RUN: fa-t-opt %s --convert-fat-to-nvvm --cse | FileCheck %s --check-prefix=CSE

// The tile ops of a kernel's consumer on `#fat.wgmma_fragment` tiles, and
// their one pattern each in convert-fat-to-nvvm: a tile becomes one
// thread's registers (FatAttrs.td). For a 64x16 f32 tile a thread holds 8
// registers, 4i + 2r + e for row r (i < 2, e < 2): row 0 is registers 0, 1,
// 4, 5 and row 1 is 2, 3, 6, 7; a row vector is 2 registers, a 16-bit tile
// 4 packed pairs. The casts at the boundary fold away.

#frag = #fat.wgmma_fragment

gpu.module @k {

// fat.softmax_max: per row the thread's max (starting from m), the quad's
// (shuffles xor 1 and 2), the lazy test c·(m̂ − m) > 8 ∨ m = −inf, and
// α = exp2(fma(m, c, −ĉm')), 1 where the reference stays.
// CHECK-LABEL: func.func @softmax
// CHECK-SAME:    (%[[S0:[a-z0-9]+]]: f32, %[[S1:[a-z0-9]+]]: f32, %[[S2:[a-z0-9]+]]: f32, %[[S3:[a-z0-9]+]]: f32, %[[S4:[a-z0-9]+]]: f32, %[[S5:[a-z0-9]+]]: f32, %[[S6:[a-z0-9]+]]: f32, %[[S7:[a-z0-9]+]]: f32, %[[M0:[a-z0-9]+]]: f32, %[[M1:[a-z0-9]+]]: f32, %[[L0:[a-z0-9]+]]: f32, %[[L1:[a-z0-9]+]]: f32, %[[C:[a-z0-9]+]]: f32)
// CHECK-NOT:     unrealized_conversion_cast
// CHECK:         %[[X0:[0-9]+]] = llvm.intr.maxnum(%[[M0]], %[[S0]])
// CHECK-NEXT:    %[[X1:[0-9]+]] = llvm.intr.maxnum(%[[X0]], %[[S1]])
// CHECK-NEXT:    %[[X2:[0-9]+]] = llvm.intr.maxnum(%[[X1]], %[[S4]])
// CHECK-NEXT:    %[[X3:[0-9]+]] = llvm.intr.maxnum(%[[X2]], %[[S5]])
// CHECK:         %[[SH1:[0-9]+]] = nvvm.shfl.sync bfly %{{.+}}, %[[X3]], %c1_i32
// CHECK-NEXT:    %[[Q1:[0-9]+]] = llvm.intr.maxnum(%[[X3]], %[[SH1]])
// CHECK:         %[[SH2:[0-9]+]] = nvvm.shfl.sync bfly %{{.+}}, %[[Q1]], %c2_i32
// CHECK-NEXT:    %[[MH0:[0-9]+]] = llvm.intr.maxnum(%[[Q1]], %[[SH2]])
// CHECK-NEXT:    %[[D0:[0-9]+]] = arith.subf %[[MH0]], %[[M0]] : f32
// CHECK-NEXT:    %[[G0:[0-9]+]] = arith.mulf %[[D0]], %[[C]] : f32
// CHECK:         %[[GT0:[0-9]+]] = arith.cmpf ogt, %[[G0]], %{{.+}} : f32
// CHECK-NEXT:    %[[NI0:[0-9]+]] = arith.cmpf oeq, %[[M0]], %{{.+}} : f32
// CHECK-NEXT:    %[[MV0:[0-9]+]] = arith.ori %[[GT0]], %[[NI0]] : i1
// CHECK-NEXT:    %[[MN0:[0-9]+]] = arith.select %[[MV0]], %[[MH0]], %[[M0]] : f32
// CHECK:         %[[NCM0:[0-9]+]] = arith.negf
// CHECK-NEXT:    %[[AX0:[0-9]+]] = llvm.intr.fma(%[[M0]], %[[C]], %[[NCM0]])
// CHECK-NEXT:    %[[E0:[0-9]+]] = llvm.inline_asm asm_dialect = att "ex2.approx.ftz.f32 $0, $1;", "=f,f" %[[AX0]]
// CHECK-NEXT:    %[[A0:[0-9]+]] = arith.select %[[MV0]], %[[E0]], %{{.+}} : f32
// fat.softmax_exp, row 0, issued as soon as row 0's m' and α are known
// (before row 1's max, so its exponentials hide the shuffles' latency):
// fma(s, c, −ĉm') per element, exp2_poly = 1/2 of the row's 4 fragment
// elements k = 2i + e on the FMA pipe (k = 1, 3: the registers 1 and 5),
// the vector row sum, then l' = fma(l, α, Σ).
// CHECK:         %[[P0X:[0-9]+]] = llvm.intr.fma(%[[S0]], %[[C]], %[[NCE0:[0-9]+]])
// CHECK-NEXT:    %[[P0:[0-9]+]] = llvm.inline_asm asm_dialect = att "ex2.approx.ftz.f32 $0, $1;", "=f,f" %[[P0X]]
// CHECK:         %[[P1X:[0-9]+]] = llvm.intr.fma(%[[S1]], %[[C]], %[[NCE0]])
// CHECK:         llvm.intr.maxnum(%[[P1X]], %{{.+}})
// CHECK:         llvm.inline_asm asm_dialect = att "add.rm.ftz.f32 $0, $1, $2;"
// CHECK:         %[[P4X:[0-9]+]] = llvm.intr.fma(%[[S4]], %[[C]], %[[NCE0]])
// CHECK-NEXT:    llvm.inline_asm asm_dialect = att "ex2.approx.ftz.f32 $0, $1;", "=f,f" %[[P4X]]
// CHECK:         %[[P5X:[0-9]+]] = llvm.intr.fma(%[[S5]], %[[C]], %[[NCE0]])
// CHECK:         llvm.intr.maxnum(%[[P5X]], %{{.+}})
// CHECK:         %[[SUM0:[0-9]+]] = arith.addf
// CHECK-NEXT:    %[[LN0:[0-9]+]] = llvm.intr.fma(%[[L0]], %[[A0]], %[[SUM0]])
// CHECK-NEXT:    llvm.intr.maxnum(%[[M1]], %[[S2]])
// arith.truncf: pairs of one row and column group into one register, the
// lower column in the low half (cvt's second source).
// CHECK:         %[[PK0:[0-9]+]] = llvm.inline_asm asm_dialect = att "cvt.rn.bf16x2.f32 $0, $1, $2;", "=r,f,f" %{{.+}}, %[[P0]]
// CHECK-COUNT-3: cvt.rn.bf16x2.f32
// CHECK:         return %[[MN0]], %{{.+}}, %[[LN0]], %{{.+}}, %[[PK0]], %{{.+}}, %{{.+}}, %{{.+}} : f32, f32, f32, f32, i32, i32, i32, i32
// softmax_exp recomputes ĉm' from m' as softmax_max did: CSE leaves one.
// CSE-LABEL: func.func @softmax
// CSE-COUNT-2: arith.negf
// CSE-NOT:     arith.negf
// CSE:         return
func.func @softmax(%s0: f32, %s1: f32, %s2: f32, %s3: f32, %s4: f32, %s5: f32, %s6: f32, %s7: f32,
                   %m0: f32, %m1: f32, %l0: f32, %l1: f32, %c: f32)
    -> (f32, f32, f32, f32, i32, i32, i32, i32) {
  %s = builtin.unrealized_conversion_cast %s0, %s1, %s2, %s3, %s4, %s5, %s6, %s7
      : f32, f32, f32, f32, f32, f32, f32, f32 to tensor<64x16xf32, #frag>
  %m = builtin.unrealized_conversion_cast %m0, %m1 : f32, f32 to tensor<64xf32, #frag>
  %l = builtin.unrealized_conversion_cast %l0, %l1 : f32, f32 to tensor<64xf32, #frag>
  %mn, %a = fat.softmax_max %s, %m scale %c lazy threshold 8.0
      : tensor<64x16xf32, #frag>, tensor<64xf32, #frag>
  %p, %ln = fat.softmax_exp %s, %mn scale %c exp2_poly 0.5 rowsum(%l, %a)
      : (tensor<64x16xf32, #frag>, tensor<64xf32, #frag>, f32, tensor<64xf32, #frag>,
         tensor<64xf32, #frag>) -> (tensor<64x16xf32, #frag>, tensor<64xf32, #frag>)
  %p16 = arith.truncf %p : tensor<64x16xf32, #frag> to tensor<64x16xbf16, #frag>
  %mr:2 = builtin.unrealized_conversion_cast %mn : tensor<64xf32, #frag> to f32, f32
  %lr:2 = builtin.unrealized_conversion_cast %ln : tensor<64xf32, #frag> to f32, f32
  %pr:4 = builtin.unrealized_conversion_cast %p16 : tensor<64x16xbf16, #frag> to i32, i32, i32, i32
  return %mr#0, %mr#1, %lr#0, %lr#1, %pr#0, %pr#1, %pr#2, %pr#3
      : f32, f32, f32, f32, i32, i32, i32, i32
}

// fat.rescale warp_vote: the warp votes on α ≠ 1 over its rows and skips
// the multiplies when no row moved; register 4i + 2r + e times α_r.
// CHECK-LABEL: func.func @rescale(
// CHECK-SAME:    %[[O0:[a-z0-9]+]]: f32, %[[O1:[a-z0-9]+]]: f32, %[[O2:[a-z0-9]+]]: f32, %[[O3:[a-z0-9]+]]: f32, %[[AL0:[a-z0-9]+]]: f32, %[[AL1:[a-z0-9]+]]: f32)
// CHECK:         %[[NE0:[0-9]+]] = arith.cmpf une, %[[AL0]], %{{.+}} : f32
// CHECK:         %[[NE1:[0-9]+]] = arith.cmpf une, %[[AL1]], %{{.+}} : f32
// CHECK-NEXT:    %[[EITHER:[0-9]+]] = arith.ori %[[NE0]], %[[NE1]] : i1
// CHECK:         %[[ANY:[0-9]+]] = nvvm.vote.sync any %{{.+}}, %[[EITHER]] -> i1
// CHECK-NEXT:    %[[R:[0-9]+]]:4 = scf.if %[[ANY]] -> (f32, f32, f32, f32) {
// CHECK-NEXT:      %[[R0:[0-9]+]] = arith.mulf %[[O0]], %[[AL0]] : f32
// CHECK-NEXT:      %[[R1:[0-9]+]] = arith.mulf %[[O1]], %[[AL0]] : f32
// CHECK-NEXT:      %[[R2:[0-9]+]] = arith.mulf %[[O2]], %[[AL1]] : f32
// CHECK-NEXT:      %[[R3:[0-9]+]] = arith.mulf %[[O3]], %[[AL1]] : f32
// CHECK-NEXT:      scf.yield %[[R0]], %[[R1]], %[[R2]], %[[R3]]
// CHECK-NEXT:    } else {
// CHECK-NEXT:      scf.yield %[[O0]], %[[O1]], %[[O2]], %[[O3]]
// CHECK-NEXT:    } {fat.stage = "rescale"}
// CHECK-NEXT:    return %[[R]]#0, %[[R]]#1, %[[R]]#2, %[[R]]#3
func.func @rescale(%o0: f32, %o1: f32, %o2: f32, %o3: f32, %a0: f32, %a1: f32)
    -> (f32, f32, f32, f32) {
  %o = builtin.unrealized_conversion_cast %o0, %o1, %o2, %o3
      : f32, f32, f32, f32 to tensor<64x8xf32, #frag>
  %a = builtin.unrealized_conversion_cast %a0, %a1 : f32, f32 to tensor<64xf32, #frag>
  %r = fat.rescale %o, %a warp_vote : tensor<64x8xf32, #frag>, tensor<64xf32, #frag>
  %rr:4 = builtin.unrealized_conversion_cast %r : tensor<64x8xf32, #frag> to f32, f32, f32, f32
  return %rr#0, %rr#1, %rr#2, %rr#3 : f32, f32, f32, f32
}

// A row vector (l beside O): register r times α_r.
// CHECK-LABEL: func.func @rescale_rows
// CHECK-SAME:    (%[[L0:[a-z0-9]+]]: f32, %[[L1:[a-z0-9]+]]: f32, %[[B0:[a-z0-9]+]]: f32, %[[B1:[a-z0-9]+]]: f32)
// CHECK-NEXT:    %[[LR0:[0-9]+]] = arith.mulf %[[L0]], %[[B0]] : f32
// CHECK-NEXT:    %[[LR1:[0-9]+]] = arith.mulf %[[L1]], %[[B1]] : f32
// CHECK-NEXT:    return %[[LR0]], %[[LR1]]
func.func @rescale_rows(%l0: f32, %l1: f32, %a0: f32, %a1: f32) -> (f32, f32) {
  %l = builtin.unrealized_conversion_cast %l0, %l1 : f32, f32 to tensor<64xf32, #frag>
  %a = builtin.unrealized_conversion_cast %a0, %a1 : f32, f32 to tensor<64xf32, #frag>
  %r = fat.rescale %l, %a : tensor<64xf32, #frag>, tensor<64xf32, #frag>
  %rr:2 = builtin.unrealized_conversion_cast %r : tensor<64xf32, #frag> to f32, f32
  return %rr#0, %rr#1 : f32, f32
}

// The lazy rescale's α = select(moved, x, 1) (fat.softmax_max's lazy
// form): the vote reads `moved`, with no compare of α against 1.
// CHECK-LABEL: func.func @rescale_lazy
// CHECK:         %[[ONE:[a-z0-9_]+]] = arith.constant 1.000000e+00 : f32
// CHECK-NOT:     arith.cmpf une
// CHECK:         %[[A0:[0-9]+]] = arith.select %[[MV0:[0-9]+]], %{{[0-9]+}}, %[[ONE]] : f32
// CHECK-NOT:     arith.cmpf une
// CHECK:         %[[A1:[0-9]+]] = arith.select %[[MV1:[0-9]+]], %{{[0-9]+}}, %[[ONE]] : f32
// CHECK-NOT:     arith.cmpf une
// CHECK:         %[[EITHER2:[0-9]+]] = arith.ori %[[MV0]], %[[MV1]] : i1
// CHECK:         nvvm.vote.sync any %{{.+}}, %[[EITHER2]] -> i1
// CHECK:         arith.mulf %{{.+}}, %[[A0]] : f32
func.func @rescale_lazy(%o0: f32, %o1: f32, %o2: f32, %o3: f32, %m0: f32,
                        %m1: f32, %c: f32) -> (f32, f32, f32, f32) {
  %s = builtin.unrealized_conversion_cast %o0, %o1, %o2, %o3
      : f32, f32, f32, f32 to tensor<64x8xf32, #frag>
  %m = builtin.unrealized_conversion_cast %m0, %m1 : f32, f32 to tensor<64xf32, #frag>
  %mn, %a = fat.softmax_max %s, %m scale %c lazy threshold 8.0
      : tensor<64x8xf32, #frag>, tensor<64xf32, #frag>
  %r = fat.rescale %s, %a warp_vote : tensor<64x8xf32, #frag>, tensor<64xf32, #frag>
  %rr:4 = builtin.unrealized_conversion_cast %r : tensor<64x8xf32, #frag> to f32, f32, f32, f32
  return %rr#0, %rr#1, %rr#2, %rr#3 : f32, f32, f32, f32
}

// fat.mask, causal, as per-row limits: the thread's first row is
// q0 + 16·warp + lane/4 and its first key c0 = k0 + 2·(lane % 4); row r's
// limit is min(Skv − 1 − c0, row_r + δ − c0), and register 4i + 2r + e
// stays where the constant 8i + e is within it. The kernel's i32 values
// are used, not the index casts.
// CHECK-LABEL: func.func @mask_limits
// CHECK-SAME:    (%[[T0:[a-z0-9]+]]: f32, %[[T1:[a-z0-9]+]]: f32, %[[T2:[a-z0-9]+]]: f32, %[[T3:[a-z0-9]+]]: f32, %[[Q0:[a-z0-9]+]]: i32, %[[K0:[a-z0-9]+]]: i32, %[[SKV:[a-z0-9]+]]: i32, %[[DG:[a-z0-9]+]]: i32)
// CHECK:         %[[TID:[0-9]+]] = nvvm.read.ptx.sreg.tid.x : i32
// CHECK:         %[[ROWOFF:[0-9]+]] = arith.addi %{{.+}}, %{{.+}} : i32
// CHECK-NEXT:    %[[ROW:[0-9]+]] = arith.addi %[[Q0]], %[[ROWOFF]] : i32
// CHECK:         %[[C0:[0-9]+]] = arith.addi %[[K0]], %{{.+}} : i32
// CHECK:         %[[SKV1:[0-9]+]] = arith.subi %[[SKV]], %{{.+}} : i32
// CHECK-NEXT:    %[[TAIL:[0-9]+]] = arith.subi %[[SKV1]], %[[C0]] : i32
// CHECK:         %[[RD0:[0-9]+]] = arith.addi %{{[0-9]+}}, %[[DG]] : i32
// CHECK:         %[[LIM0:[0-9]+]] = arith.minsi %[[TAIL]], %{{.+}} : i32
// CHECK:         %[[LIM1:[0-9]+]] = arith.minsi %[[TAIL]], %{{.+}} : i32
// CHECK:         %[[V00:[0-9]+]] = arith.cmpi sle, %[[KC0:[a-z0-9_]+]], %[[LIM0]] : i32
// CHECK-NEXT:    %[[M00:[0-9]+]] = arith.select %[[V00]], %[[T0]], %[[NINF:[a-z0-9_]+]] : f32
// CHECK-NEXT:    %[[V01:[0-9]+]] = arith.cmpi sle, %[[KC0]], %[[LIM1]] : i32
// CHECK-NEXT:    %[[M01:[0-9]+]] = arith.select %[[V01]], %[[T2]], %[[NINF]] : f32
// CHECK:         return %[[M00]], %{{.+}}, %[[M01]], %{{.+}}
// Without row_limits, with a window [2, 1]: each key's index against Skv
// and the row's two window edges, joined as one predicate (behind an
// identity mov.pred, so that NVPTX selects once instead of once per
// condition).
// CHECK-LABEL: func.func @mask_by_key
// CHECK-SAME:    (%[[U0:[a-z0-9]+]]: f32, %{{.+}}: f32, %{{.+}}: f32, %{{.+}}: f32, %{{.+}}: i32, %{{.+}}: i32, %[[SKVB:[a-z0-9]+]]: i32, %{{.+}}: i32)
// CHECK-NOT:     arith.minsi
// CHECK:         %[[IN:[0-9]+]] = arith.cmpi slt, %[[COL:[0-9]+]], %[[SKVB]] : i32
// CHECK:         %[[LEFT:[0-9]+]] = arith.subi %[[RDB:[0-9]+]], %{{.+}} : i32
// CHECK-NEXT:    %[[GE:[0-9]+]] = arith.cmpi sge, %[[COL]], %[[LEFT]] : i32
// CHECK-NEXT:    %[[IN2:[0-9]+]] = arith.andi %[[IN]], %[[GE]] : i1
// CHECK:         %[[RIGHT:[0-9]+]] = arith.addi %[[RDB]], %{{.+}} : i32
// CHECK-NEXT:    %[[LE:[0-9]+]] = arith.cmpi sle, %[[COL]], %[[RIGHT]] : i32
// CHECK-NEXT:    %[[VIS:[0-9]+]] = arith.andi %[[IN2]], %[[LE]] : i1
// CHECK-NEXT:    %[[KEEP:[0-9]+]] = llvm.inline_asm asm_dialect = att "mov.pred $0, $1;", "=b,b" %[[VIS]] : (i1) -> i1
// CHECK-NEXT:    arith.select %[[KEEP]], %[[U0]], %{{.+}} : f32
// CHECK-NOT:     arith.select %[[VIS]]
func.func @mask_limits(%s0: f32, %s1: f32, %s2: f32, %s3: f32, %q0: i32, %k0: i32,
                       %skv: i32, %d: i32) -> (f32, f32, f32, f32) {
  %s = builtin.unrealized_conversion_cast %s0, %s1, %s2, %s3
      : f32, f32, f32, f32 to tensor<64x8xf32, #frag>
  %qi = arith.index_cast %q0 : i32 to index
  %ki = arith.index_cast %k0 : i32 to index
  %si = arith.index_cast %skv : i32 to index
  %di = arith.index_cast %d : i32 to index
  %m = fat.mask %s at(%qi, %ki) kv_len(%si) diagonal(%di) causal row_limits
      : tensor<64x8xf32, #frag>
  %mr:4 = builtin.unrealized_conversion_cast %m : tensor<64x8xf32, #frag> to f32, f32, f32, f32
  return %mr#0, %mr#1, %mr#2, %mr#3 : f32, f32, f32, f32
}
func.func @mask_by_key(%s0: f32, %s1: f32, %s2: f32, %s3: f32, %q0: i32, %k0: i32,
                       %skv: i32, %d: i32) -> (f32, f32, f32, f32) {
  %s = builtin.unrealized_conversion_cast %s0, %s1, %s2, %s3
      : f32, f32, f32, f32 to tensor<64x8xf32, #frag>
  %qi = arith.index_cast %q0 : i32 to index
  %ki = arith.index_cast %k0 : i32 to index
  %si = arith.index_cast %skv : i32 to index
  %di = arith.index_cast %d : i32 to index
  %m = fat.mask %s at(%qi, %ki) kv_len(%si) diagonal(%di) window [2, 1]
      : tensor<64x8xf32, #frag>
  %mr:4 = builtin.unrealized_conversion_cast %m : tensor<64x8xf32, #frag> to f32, f32, f32, f32
  return %mr#0, %mr#1, %mr#2, %mr#3 : f32, f32, f32, f32
}

// The epilogue's tile ops. fat.convert_layout sums a row's quad shares
// (butterfly shuffles xor 1, 2). fat.finalize on a partial l does the same,
// then per row l ≠ 0 (NaN passes), 1 / l (0 when empty); each output register (the
// 16-bit pair o·(1/l) of acc registers 4i + 2r + e) and each LSE register
// ln 2·(c·m + log2 l) is a chain of its own at the op (fat.store_output
// moves them next to their stores: epilogue-ops.mlir), and an unread
// result is not formed at all.
// CHECK-LABEL: func.func @finalize_partial
// CHECK-SAME:    (%[[O0:[a-z0-9]+]]: f32, %[[O1:[a-z0-9]+]]: f32, %[[O2:[a-z0-9]+]]: f32, %[[O3:[a-z0-9]+]]: f32, %{{[a-z0-9]+}}: f32, %{{[a-z0-9]+}}: f32, %{{[a-z0-9]+}}: f32, %{{[a-z0-9]+}}: f32, %[[L0:[a-z0-9]+]]: f32, %[[L1:[a-z0-9]+]]: f32, %[[M0:[a-z0-9]+]]: f32, %[[M1:[a-z0-9]+]]: f32, %[[C:[a-z0-9]+]]: f32, %[[P:[a-z0-9]+]]: !llvm.ptr, %[[B:[a-z0-9]+]]: i1)
// CHECK-NOT:     unrealized_conversion_cast
// CHECK:         %[[SH0:[0-9]+]] = nvvm.shfl.sync bfly %{{.+}}, %[[L0]], %c1_i32
// CHECK-NEXT:    %[[H0:[0-9]+]] = arith.addf %[[L0]], %[[SH0]] : f32
// CHECK:         %[[SH1:[0-9]+]] = nvvm.shfl.sync bfly %{{.+}}, %[[H0]], %c2_i32
// CHECK-NEXT:    %[[SUM0:[0-9]+]] = arith.addf %[[H0]], %[[SH1]] : f32
// CHECK-NEXT:    %[[NE0:[0-9]+]] = arith.cmpf une, %[[SUM0]], %{{.+}} : f32
// CHECK-NEXT:    %[[RCP0:[0-9]+]] = arith.divf %{{.+}}, %[[SUM0]] : f32
// CHECK-NEXT:    %[[INV0:[0-9]+]] = arith.select %[[NE0]], %[[RCP0]], %{{.+}} : f32
// CHECK:         nvvm.shfl.sync bfly %{{.+}}, %[[L1]], %c1_i32
// CHECK:         %[[INV1:[0-9]+]] = arith.select
// CHECK-NEXT:    %[[A:[0-9]+]] = arith.mulf %[[O0]], %[[INV0]] : f32
// CHECK-NEXT:    %[[Bv:[0-9]+]] = arith.mulf %[[O1]], %[[INV0]] : f32
// CHECK-NEXT:    %[[PK:[0-9]+]] = llvm.inline_asm asm_dialect = att "cvt.rn.bf16x2.f32 $0, $1, $2;", "=r,f,f" %[[Bv]], %[[A]]
// CHECK-NEXT:    arith.mulf %[[O2]], %[[INV1]] : f32
// CHECK-NEXT:    arith.mulf %[[O3]], %[[INV1]] : f32
// CHECK-COUNT-3: cvt.rn.bf16x2.f32
// CHECK-NEXT:    %[[CM:[0-9]+]] = arith.mulf %[[M0]], %[[C]] : f32
// CHECK-NEXT:    %[[LG:[0-9]+]] = llvm.inline_asm asm_dialect = att "lg2.approx.ftz.f32 $0, $1;", "=f,f" %[[SUM0]]
// CHECK-NEXT:    %[[ADD:[0-9]+]] = arith.addf %[[CM]], %[[LG]] : f32
// CHECK:         %[[LN:[0-9]+]] = arith.mulf %[[ADD]], %{{.+}} : f32
// CHECK:         %[[LSE:[0-9]+]] = arith.select %[[NE0]], %[[LN]], %{{.+}} : f32
// CHECK:         llvm.store %[[C]], %[[P]]
// CHECK-NEXT:    llvm.store %[[PK]], %[[P]]
// CHECK:         scf.if %[[B]] {
// CHECK-NEXT:      scf.if %[[B]] {
// CHECK-NEXT:        llvm.store %[[LSE]], %[[P]]
func.func @finalize_partial(%o0: f32, %o1: f32, %o2: f32, %o3: f32, %o4: f32, %o5: f32,
                            %o6: f32, %o7: f32, %l0: f32, %l1: f32, %m0: f32, %m1: f32,
                            %c: f32, %p: !llvm.ptr, %b: i1) {
  %o = builtin.unrealized_conversion_cast %o0, %o1, %o2, %o3, %o4, %o5, %o6, %o7
      : f32, f32, f32, f32, f32, f32, f32, f32 to tensor<64x16xf32, #frag>
  %l = builtin.unrealized_conversion_cast %l0, %l1
      : f32, f32 to tensor<64xf32, #fat.wgmma_fragment<partial>>
  %m = builtin.unrealized_conversion_cast %m0, %m1 : f32, f32 to tensor<64xf32, #frag>
  %out, %lse = fat.finalize %o, %l, %m exp2_scale %c
      : tensor<64x16xf32, #frag>, tensor<64xf32, #fat.wgmma_fragment<partial>>,
        tensor<64xf32, #frag> -> tensor<64x16xbf16, #frag>, tensor<64xf32, #frag>
  %r:4 = builtin.unrealized_conversion_cast %out : tensor<64x16xbf16, #frag> to i32, i32, i32, i32
  %x:2 = builtin.unrealized_conversion_cast %lse : tensor<64xf32, #frag> to f32, f32
  llvm.store %c, %p : f32, !llvm.ptr
  llvm.store %r#0, %p : i32, !llvm.ptr
  llvm.store %r#1, %p : i32, !llvm.ptr
  scf.if %b {
    scf.if %b {
      llvm.store %x#0, %p : f32, !llvm.ptr
    }
  }
  return
}

// Without a sum operand (rowsum=mma) l is this thread's register of acc's
// first ones column (4·Dv/8 + 2r); an unread LSE is not formed. A full
// row vector converts by the quad's sum.
// CHECK-LABEL: func.func @finalize_ones
// CHECK-SAME:    (%[[Q0:[a-z0-9]+]]: f32, %{{[a-z0-9]+}}: f32, %{{[a-z0-9]+}}: f32, %{{[a-z0-9]+}}: f32, %{{[a-z0-9]+}}: f32, %{{[a-z0-9]+}}: f32, %{{[a-z0-9]+}}: f32, %{{[a-z0-9]+}}: f32, %[[ONES:[a-z0-9]+]]: f32,
// CHECK:         %[[NE:[0-9]+]] = arith.cmpf une, %[[ONES]], %{{.+}} : f32
// CHECK-NEXT:    %[[RCP:[0-9]+]] = arith.divf %{{.+}}, %[[ONES]] : f32
// CHECK-NEXT:    %[[INV:[0-9]+]] = arith.select %[[NE]], %[[RCP]], %{{.+}} : f32
// CHECK:         arith.mulf %[[Q0]], %[[INV]] : f32
// CHECK-NOT:     lg2.approx
// CHECK:         return
// CHECK-LABEL: func.func @convert_layout
// CHECK:         nvvm.shfl.sync bfly %{{.+}}, %{{.+}}, %c1_i32
// CHECK:         nvvm.shfl.sync bfly %{{.+}}, %{{.+}}, %c2_i32
// CHECK:         nvvm.shfl.sync bfly %{{.+}}, %{{.+}}, %c1_i32
// CHECK:         nvvm.shfl.sync bfly %{{.+}}, %{{.+}}, %c2_i32
// CHECK-NEXT:    %[[R1:[0-9]+]] = arith.addf
// CHECK-NEXT:    return %{{[0-9]+}}, %[[R1]] : f32, f32
func.func @finalize_ones(%o0: f32, %o1: f32, %o2: f32, %o3: f32, %o4: f32, %o5: f32,
                         %o6: f32, %o7: f32, %o8: f32, %o9: f32, %o10: f32, %o11: f32,
                         %m0: f32, %m1: f32, %c: f32) -> (i32, i32) {
  %o = builtin.unrealized_conversion_cast %o0, %o1, %o2, %o3, %o4, %o5, %o6, %o7,
      %o8, %o9, %o10, %o11
      : f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32
        to tensor<64x24xf32, #frag>
  %m = builtin.unrealized_conversion_cast %m0, %m1 : f32, f32 to tensor<64xf32, #frag>
  %out, %lse = fat.finalize %o, ones_columns, %m exp2_scale %c
      : tensor<64x24xf32, #frag>, tensor<64xf32, #frag>
        -> tensor<64x16xbf16, #frag>, tensor<64xf32, #frag>
  %r:4 = builtin.unrealized_conversion_cast %out : tensor<64x16xbf16, #frag> to i32, i32, i32, i32
  return %r#0, %r#1 : i32, i32
}
func.func @convert_layout(%l0: f32, %l1: f32) -> (f32, f32) {
  %l = builtin.unrealized_conversion_cast %l0, %l1
      : f32, f32 to tensor<64xf32, #fat.wgmma_fragment<partial>>
  %f = fat.convert_layout %l : tensor<64xf32, #fat.wgmma_fragment<partial>>
      -> tensor<64xf32, #frag>
  %r:2 = builtin.unrealized_conversion_cast %f : tensor<64xf32, #frag> to f32, f32
  return %r#0, %r#1 : f32, f32
}
}
