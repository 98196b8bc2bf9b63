// RUN: fa-t-opt %s --convert-fat-to-nvvm | FileCheck %s

// The epilogue's stores (FatKernelOps.td) on hand-written tiles: the
// fragment layout decides which thread stores what, and fat.finalize's
// per-register forms move next to the stores that read them.

#frag = #fat.wgmma_fragment
!qring = !fat.ring<stages = 2, buffer_offset = 0, buffer_bytes = 32768, barrier_offset = 180224, releases = 256>
!vring = !fat.ring<stages = 2, buffer_offset = 65536, buffer_bytes = 40960, barrier_offset = 180256, releases = 256>

gpu.module @k {

// fat.store_output: thread row R = row + 16w + λ/4 (+8 for r = 1), one
// branch per row on R < n. In it, O register 2i + r (acc registers
// 4i + 2r + e times 1/l, packed) goes to O[b, h, R, 8i + 2(λ%4)] as one
// 32-bit store; the LSE ln 2·(c·m + log2 l) is formed before the quad's
// first lane stores it at LSE[b, h, R].
// CHECK-LABEL: func.func @store
// CHECK-SAME:    (%[[O0:[a-z0-9]+]]: f32, %[[O1:[a-z0-9]+]]: f32, %{{[a-z0-9]+}}: f32, %{{[a-z0-9]+}}: f32, %[[O4:[a-z0-9]+]]: f32, %[[O5:[a-z0-9]+]]: f32, %{{[a-z0-9]+}}: f32, %{{[a-z0-9]+}}: f32, %[[L0:[a-z0-9]+]]: f32, %{{[a-z0-9]+}}: f32, %[[M0:[a-z0-9]+]]: f32, %{{[a-z0-9]+}}: f32, %[[C:[a-z0-9]+]]: f32, %[[OP:[a-z0-9]+]]: !llvm.ptr<1>, %[[LP:[a-z0-9]+]]: !llvm.ptr<1>, %[[SB:[a-z0-9]+]]: i64, %[[SH:[a-z0-9]+]]: i64, %[[SS:[a-z0-9]+]]: i64, %[[LB:[a-z0-9]+]]: i64, %[[LH:[a-z0-9]+]]: i64, %[[ROW:[a-z0-9]+]]: i32, %[[N:[a-z0-9]+]]: i32, %[[B:[a-z0-9]+]]: i32, %[[H:[a-z0-9]+]]: i32)
// The thread's row where `row` is defined (here the function's start).
// CHECK:         %[[TID:[0-9]+]] = nvvm.read.ptx.sreg.tid.x : i32
// CHECK:         %[[W:[0-9]+]] = arith.divui %[[TID]], %c32_i32{{[_0-9]*}} : i32
// CHECK:         %[[WARP:[0-9]+]] = arith.remui %[[W]], %c4_i32{{[_0-9]*}} : i32
// CHECK:         %[[LANE:[0-9]+]] = arith.remui %[[TID]], %c32_i32{{[_0-9]*}} : i32
// CHECK:         %[[G:[0-9]+]] = arith.divui %[[LANE]], %c4_i32{{[_0-9]*}} : i32
// CHECK:         %[[W16:[0-9]+]] = arith.muli %[[WARP]], %c16_i32 : i32
// CHECK-NEXT:    %[[WG:[0-9]+]] = arith.addi %[[W16]], %[[G]] : i32
// CHECK-NEXT:    %[[R:[0-9]+]] = arith.addi %[[ROW]], %[[WG]] : i32
// CHECK:         %[[NE0:[0-9]+]] = arith.cmpf une, %[[L0]], %{{.+}} : f32
// CHECK-NEXT:    %[[RCP0:[0-9]+]] = arith.divf %{{.+}}, %[[L0]] : f32
// CHECK-NEXT:    %[[INV0:[0-9]+]] = arith.select %[[NE0]], %[[RCP0]], %{{.+}} : f32
// CHECK-NOT:     arith.mulf
// CHECK:         %[[TID2:[0-9]+]] = nvvm.read.ptx.sreg.tid.x : i32
// CHECK:         %[[LANE2:[0-9]+]] = arith.remui %[[TID2]], %c32_i32{{[_0-9]*}} : i32
// CHECK:         %[[QUAD:[0-9]+]] = arith.remui %[[LANE2]], %c4_i32{{[_0-9]*}} : i32
// CHECK:         %[[R0:[0-9]+]] = arith.addi %[[R]], %c0_i32 : i32
// CHECK-NEXT:    %[[IN0:[0-9]+]] = arith.cmpi slt, %[[R0]], %[[N]] : i32
// CHECK-NEXT:    scf.if %[[IN0]] {
// CHECK:           %[[COL:[0-9]+]] = arith.muli %[[QUAD]], %c2_i32 : i32
// CHECK:           %[[XB:[0-9]+]] = arith.muli %{{[0-9]+}}, %[[SB]] : i64
// CHECK:           %[[XH:[0-9]+]] = arith.muli %{{[0-9]+}}, %[[SH]] : i64
// CHECK:           %[[XS:[0-9]+]] = arith.muli %{{[0-9]+}}, %[[SS]] : i64
// CHECK-NEXT:      %[[ROFF:[0-9]+]] = arith.addi %{{[0-9]+}}, %[[XS]] : i64
// CHECK:           %[[C0:[0-9]+]] = arith.addi %[[COL]], %c0_i32{{[_0-9]*}} : i32
// CHECK-NEXT:      %[[C0W:[0-9]+]] = arith.extsi %[[C0]] : i32 to i64
// CHECK-NEXT:      %[[I0:[0-9]+]] = arith.addi %[[ROFF]], %[[C0W]] : i64
// CHECK-NEXT:      %[[P0:[0-9]+]] = llvm.getelementptr %[[OP]][%[[I0]]] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i16
// CHECK-NEXT:      %[[A0:[0-9]+]] = arith.mulf %[[O0]], %[[INV0]] : f32
// CHECK-NEXT:      %[[A1:[0-9]+]] = arith.mulf %[[O1]], %[[INV0]] : f32
// CHECK-NEXT:      %[[PK0:[0-9]+]] = llvm.inline_asm asm_dialect = att "cvt.rn.bf16x2.f32 $0, $1, $2;", "=r,f,f" %[[A1]], %[[A0]]
// CHECK-NEXT:      llvm.store %[[PK0]], %[[P0]] {alignment = 4 : i64} : i32, !llvm.ptr<1>
// CHECK:           %[[C8:[0-9]+]] = arith.addi %[[COL]], %c8_i32{{[_0-9]*}} : i32
// CHECK:           %[[P8:[0-9]+]] = llvm.getelementptr %[[OP]]
// CHECK-NEXT:      %[[A4:[0-9]+]] = arith.mulf %[[O4]], %[[INV0]] : f32
// CHECK-NEXT:      %[[A5:[0-9]+]] = arith.mulf %[[O5]], %[[INV0]] : f32
// CHECK-NEXT:      %[[PK1:[0-9]+]] = llvm.inline_asm {{.+}} %[[A5]], %[[A4]]
// CHECK-NEXT:      llvm.store %[[PK1]], %[[P8]] {alignment = 4 : i64} : i32, !llvm.ptr<1>
// CHECK:           %[[FIRST:[0-9]+]] = arith.cmpi eq, %[[QUAD]], %c0_i32{{[_0-9]*}} : i32
// CHECK-NEXT:      %[[CM:[0-9]+]] = arith.mulf %[[M0]], %[[C]] : f32
// CHECK-NEXT:      %[[LG:[0-9]+]] = llvm.inline_asm asm_dialect = att "lg2.approx.ftz.f32 $0, $1;", "=f,f" %[[L0]]
// CHECK-NEXT:      %[[ADD:[0-9]+]] = arith.addf %[[CM]], %[[LG]] : f32
// CHECK:           %[[LN:[0-9]+]] = arith.mulf %[[ADD]], %{{.+}} : f32
// CHECK:           %[[LSE:[0-9]+]] = arith.select %[[NE0]], %[[LN]], %{{.+}} : f32
// CHECK-NEXT:      scf.if %[[FIRST]] {
// CHECK:             %[[LBX:[0-9]+]] = arith.muli %{{[0-9]+}}, %[[LB]] : i64
// CHECK:             %[[LHX:[0-9]+]] = arith.muli %{{[0-9]+}}, %[[LH]] : i64
// CHECK-NEXT:        %[[LBH:[0-9]+]] = arith.addi %[[LBX]], %[[LHX]] : i64
// CHECK-NEXT:        %[[RW:[0-9]+]] = arith.extsi %[[R0]] : i32 to i64
// CHECK-NEXT:        %[[LI:[0-9]+]] = arith.addi %[[LBH]], %[[RW]] : i64
// CHECK-NEXT:        %[[LPTR:[0-9]+]] = llvm.getelementptr %[[LP]][%[[LI]]] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
// CHECK-NEXT:        llvm.store %[[LSE]], %[[LPTR]] {alignment = 4 : i64} : f32, !llvm.ptr<1>
// CHECK:         %[[R1:[0-9]+]] = arith.addi %[[R]], %c8_i32{{[_0-9]*}} : i32
// CHECK-NEXT:    %[[IN1:[0-9]+]] = arith.cmpi slt, %[[R1]], %[[N]] : i32
// CHECK-NEXT:    scf.if %[[IN1]] {
// CHECK-NOT:     fat.store_output
// CHECK:         return
func.func @store(%o0: f32, %o1: f32, %o2: f32, %o3: f32, %o4: f32, %o5: f32,
                 %o6: f32, %o7: f32, %l0: f32, %l1: f32, %m0: f32, %m1: f32,
                 %c: f32, %optr: !llvm.ptr<1>, %lptr: !llvm.ptr<1>,
                 %sb: i64, %sh: i64, %ss: i64, %lb: i64, %lh: i64,
                 %row: i32, %n: i32, %b: i32, %h: i32) {
  %o = builtin.unrealized_conversion_cast %o0, %o1, %o2, %o3, %o4, %o5, %o6, %o7
      : f32, f32, f32, f32, f32, f32, f32, f32 to tensor<64x16xf32, #frag>
  %l = builtin.unrealized_conversion_cast %l0, %l1 : f32, f32 to tensor<64xf32, #frag>
  %m = builtin.unrealized_conversion_cast %m0, %m1 : f32, f32 to tensor<64xf32, #frag>
  %out, %lse = fat.finalize %o, %l, %m exp2_scale %c
      : tensor<64x16xf32, #frag>, tensor<64xf32, #frag>, tensor<64xf32, #frag>
        -> tensor<64x16xbf16, #frag>, tensor<64xf32, #frag>
  fat.store_output o %out : tensor<64x16xbf16, #frag>
      to %optr : !llvm.ptr<1> strides(%sb, %sh, %ss)
      lse %lse : tensor<64xf32, #frag> to %lptr : !llvm.ptr<1> strides(%lb, %lh)
      rows(%row, %n) batch(%b) head(%h)
  return
}

// The LSE alone (an overlapped tile writes it before its O): no O stores,
// and O / l is not formed at all.
// CHECK-LABEL: func.func @store_lse
// CHECK-NOT:     cvt.rn
// CHECK:         scf.if
// CHECK-NOT:     i16
// CHECK:         lg2.approx
// CHECK:         llvm.store %{{[0-9]+}}, %{{[0-9]+}} {alignment = 4 : i64} : f32, !llvm.ptr<1>
// CHECK-NOT:     cvt.rn
// CHECK:         return
func.func @store_lse(%o0: f32, %o1: f32, %o2: f32, %o3: f32, %o4: f32, %o5: f32,
                     %o6: f32, %o7: f32, %l0: f32, %l1: f32, %m0: f32, %m1: f32,
                     %c: f32, %lptr: !llvm.ptr<1>, %lb: i64, %lh: i64,
                     %row: i32, %n: i32, %b: i32, %h: i32) {
  %o = builtin.unrealized_conversion_cast %o0, %o1, %o2, %o3, %o4, %o5, %o6, %o7
      : f32, f32, f32, f32, f32, f32, f32, f32 to tensor<64x16xf32, #frag>
  %l = builtin.unrealized_conversion_cast %l0, %l1 : f32, f32 to tensor<64xf32, #frag>
  %m = builtin.unrealized_conversion_cast %m0, %m1 : f32, f32 to tensor<64xf32, #frag>
  %out, %lse = fat.finalize %o, %l, %m exp2_scale %c
      : tensor<64x16xf32, #frag>, tensor<64xf32, #frag>, tensor<64xf32, #frag>
        -> tensor<64x16xbf16, #frag>, tensor<64xf32, #frag>
  fat.store_output lse %lse : tensor<64xf32, #frag> to %lptr : !llvm.ptr<1>
      strides(%lb, %lh) rows(%row, %n) batch(%b) head(%h)
  return
}

// fat.stage_output, R = 64 columns of a 64-column tile (one round), in the
// Q buffer of iteration t (two stages of 32768 bytes): stage t mod 2 and
// the thread's indices through opaque copies; warp w's region at
// stage·32768 + ⌊w·2048 / 8192⌋·q_box_stride + 8192·k + (w·2048 mod 8192)
// with k = ⌊tid/128⌋ − 1; four stmatrix .x4 (pairs 2i..2i+3 each: chunk
// pairs of rows g and g + 8), a warp sync, then 16 rows read back four per
// load (8 lanes per 128-byte row), each stored if its row is < n; a proxy
// fence last.
// CHECK-LABEL: func.func @stage
// CHECK-SAME:    (%[[X0:[a-z0-9]+]]: i32, %[[X1:[a-z0-9]+]]: i32, %[[X2:[a-z0-9]+]]: i32, %[[X3:[a-z0-9]+]]: i32, %{{.+}}: i32, %[[OP:[a-z0-9]+]]: !llvm.ptr<1>, %{{[a-z0-9]+}}: i64, %{{[a-z0-9]+}}: i64, %[[SS:[a-z0-9]+]]: i64, %[[SMEM:[a-z0-9]+]]: !llvm.ptr<3>, %[[T:[a-z0-9]+]]: i32, %[[ROW:[a-z0-9]+]]: i32, %[[N:[a-z0-9]+]]: i32,
// CHECK:         %[[SLOT:[0-9]+]] = arith.remui %[[T]], %c2_i32 : i32
// CHECK:         %[[FT:[0-9]+]] = llvm.inline_asm has_side_effects asm_dialect = att "", "=r,0" %{{[0-9]+}} : (i32) -> i32
// CHECK-NEXT:    %[[FS:[0-9]+]] = llvm.inline_asm has_side_effects asm_dialect = att "", "=r,0" %[[SLOT]] : (i32) -> i32
// CHECK:         %[[LIN:[0-9]+]] = arith.muli %{{[0-9]+}}, %c2048_i32 : i32
// CHECK:         %[[BOX:[0-9]+]] = arith.divui %[[LIN]], %c8192_i32{{[_0-9]*}} : i32
// CHECK:         %[[IN:[0-9]+]] = arith.remui %[[LIN]], %c8192_i32{{[_0-9]*}} : i32
// CHECK:         arith.muli %[[FS]], %c32768_i32 : i32
// CHECK:         arith.muli %[[BOX]], %c16384_i32 : i32
// CHECK:         nvvm.stmatrix %{{[0-9]+}}, %[[X0]], %[[X1]], %[[X2]], %[[X3]] {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<row>, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>} : !llvm.ptr<3>, i32, i32, i32, i32
// CHECK-COUNT-3: nvvm.stmatrix
// CHECK:         nvvm.bar.warp.sync
// CHECK:         scf.for %[[K:[a-z0-9]+]] = %c0_i32{{[_0-9]*}} to %c16_i32{{[_0-9]*}} step %c4_i32{{[_0-9]*}} : i32 {
// CHECK:           %[[D:[0-9]+]] = llvm.load %{{[0-9]+}} {alignment = 16 : i64} : !llvm.ptr<3> -> vector<4xi32>
// CHECK-NEXT:      %[[RK:[0-9]+]] = arith.addi %{{[0-9]+}}, %[[K]] : i32
// CHECK-NEXT:      %[[INR:[0-9]+]] = arith.cmpi slt, %[[RK]], %[[N]] : i32
// CHECK-NEXT:      scf.if %[[INR]] {
// CHECK:             arith.muli %[[SS]], %{{[0-9]+}} : i64
// CHECK:             %[[G:[0-9]+]] = llvm.getelementptr %[[OP]][%{{[0-9]+}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i16
// CHECK-NEXT:        llvm.store %[[D]], %[[G]] {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr<1>
// CHECK:         nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT:    return
func.func @stage(%x0: i32, %x1: i32, %x2: i32, %x3: i32, %x4: i32, %x5: i32,
                 %x6: i32, %x7: i32, %x8: i32, %x9: i32, %x10: i32, %x11: i32,
                 %x12: i32, %x13: i32, %x14: i32, %x15: i32,
                 %optr: !llvm.ptr<1>, %sb: i64, %sh: i64, %ss: i64,
                 %smem: !llvm.ptr<3>, %t: i32, %row: i32, %n: i32,
                 %b: i32, %h: i32) {
  %o = builtin.unrealized_conversion_cast %x0, %x1, %x2, %x3, %x4, %x5, %x6,
      %x7, %x8, %x9, %x10, %x11, %x12, %x13, %x14, %x15
      : i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32,
        i32, i32 to tensor<64x64xbf16, #frag>
  %q = fat.ring %smem : !qring
  fat.stage_output %o : tensor<64x64xbf16, #frag> to %optr : !llvm.ptr<1>
      strides(%sb, %sh, %ss) through %q[%t] : !qring
      rows(%row, %n) batch(%b) head(%h)
      {columns = 64 : i64, q_box_stride = 16384 : i64}
  return
}

// In the last V buffer (iteration j: stage j mod 2 at 65536 + 40960·stage):
// region there + (4k + w)·2048 where the tile has key blocks, else in Q;
// after the named barrier of all consumers.
// CHECK-LABEL: func.func @stage_in_v
// CHECK-SAME:    %[[J:[a-z0-9]+]]: i32, %[[HAS:[a-z0-9]+]]: i1)
// CHECK:         %[[VS:[0-9]+]] = arith.remui %[[J]], %c2_i32{{[_0-9]*}} : i32
// CHECK:         %[[VB:[0-9]+]] = arith.muli %[[VS]], %c40960_i32 : i32
// CHECK-NEXT:    %[[V:[0-9]+]] = arith.addi %c65536_i32, %[[VB]] : i32
// CHECK:         %[[K4:[0-9]+]] = arith.muli %{{[0-9]+}}, %c4_i32{{[_0-9]*}} : i32
// CHECK-NEXT:    %[[KW:[0-9]+]] = arith.addi %[[K4]], %{{[0-9]+}} : i32
// CHECK:         %[[KB:[0-9]+]] = arith.muli %[[KW]], %c2048_i32{{[_0-9]*}} : i32
// CHECK-NEXT:    %[[INV:[0-9]+]] = arith.addi %[[V]], %[[KB]] : i32
// CHECK-NEXT:    arith.select %[[HAS]], %[[INV]], %{{[0-9]+}} : i32
// CHECK:         nvvm.barrier id = %c4_i32{{[_0-9]*}} number_of_threads = %c256_i32
// CHECK:         nvvm.stmatrix
func.func @stage_in_v(%x0: i32, %x1: i32, %x2: i32, %x3: i32, %x4: i32, %x5: i32,
                      %x6: i32, %x7: i32, %x8: i32, %x9: i32, %x10: i32, %x11: i32,
                      %x12: i32, %x13: i32, %x14: i32, %x15: i32,
                      %optr: !llvm.ptr<1>, %sb: i64, %sh: i64, %ss: i64,
                      %smem: !llvm.ptr<3>, %t: i32, %row: i32, %n: i32,
                      %b: i32, %h: i32, %j: i32, %has: i1) {
  %o = builtin.unrealized_conversion_cast %x0, %x1, %x2, %x3, %x4, %x5, %x6,
      %x7, %x8, %x9, %x10, %x11, %x12, %x13, %x14, %x15
      : i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32,
        i32, i32 to tensor<64x64xbf16, #frag>
  %q = fat.ring %smem : !qring
  %v = fat.ring %smem : !vring
  fat.stage_output %o : tensor<64x64xbf16, #frag> to %optr : !llvm.ptr<1>
      strides(%sb, %sh, %ss) through %q[%t] : !qring or %v[%j] : !vring
      if (%has) rows(%row, %n) batch(%b) head(%h)
      {barrier = array<i64: 4, 256>, columns = 64 : i64,
       q_box_stride = 16384 : i64}
  return
}

}
