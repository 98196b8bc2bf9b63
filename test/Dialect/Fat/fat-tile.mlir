// RUN: fa-t-opt %s --fat-tile="block-m=64 block-n=32" --split-input-file | FileCheck %s
// RUN: not fa-t-opt %s --fat-tile="block-m=-1" 2>&1 | FileCheck %s --check-prefix=BADM
// RUN: not fa-t-opt %s --fat-tile="block-n=-4" 2>&1 | FileCheck %s --check-prefix=BADN

// BADM: fat-tile: option block-m must be in [1, 1024], or 0 for the Hopper kernel's, got -1
// BADN: fat-tile: option block-n must be in [1, 1024], or 0 for the Hopper kernel's, got -4

// GQA (4 query heads per KV head), causal, with LSE. Sq = 100 is not a
// multiple of block-m = 64, Skv = 77 not of block-n = 32.
//
// Grid: one iteration per (b, h, q-block); KV head = h floordiv 4.
// CHECK-DAG:   #[[ROWS:.+]] = affine_map<(d0) -> (-d0 + 100, 64)>
// CHECK-DAG:   #[[KVH:.+]] = affine_map<(d0) -> (d0 floordiv 4)>
// CHECK-LABEL: func.func @gqa_causal
// CHECK-SAME:    (%[[Q:.+]]: tensor<2x8x100x64xf32>, %[[K:.+]]: tensor<2x2x77x64xf32>, %[[V:.+]]: tensor<2x2x77x32xf32>, %[[O:.+]]: tensor<2x8x100x32xf32>, %[[L:.+]]: tensor<2x8x100xf32>)
// CHECK:         %[[G:.+]]:2 = scf.forall (%[[B:.+]], %[[H:.+]], %[[S0:.+]]) = (0, 0, 0) to (2, 8, 100) step (1, 1, 64) shared_outs(%[[OO:.+]] = %[[O]], %[[LL:.+]] = %[[L]])
// CHECK:           %[[NROWS:.+]] = affine.min #[[ROWS]](%[[S0]])
// CHECK:           %[[HK:.+]] = affine.apply #[[KVH]](%[[H]])
// CHECK:           %[[QS:.+]] = tensor.extract_slice %[[Q]][%[[B]], %[[H]], %[[S0]], 0] [1, 1, %[[NROWS]], 64]
// CHECK:           %[[KS:.+]] = tensor.extract_slice %[[K]][%[[B]], %[[HK]], 0, 0] [1, 1, 77, 64]
// CHECK:           %[[VS:.+]] = tensor.extract_slice %[[V]][%[[B]], %[[HK]], 0, 0] [1, 1, 77, 32]
// The query tile is zero-padded to block-m rows.
// CHECK:           %[[QT:.+]] = tensor.pad %{{.+}} low[0, 0] high[%{{.+}}, 0]
// CHECK:           } : tensor<?x64xf32> to tensor<64x64xf32>
// The key blocks, by the mask's geometry (FatKernelOps.td: the kernel's
// ops, here on index) for rows 0 .. rows − 1: visible [F, max(E, F)); the
// diagonal and the ragged tail from J0 on, so the unmasked blocks are
// [uLo, clamp(J0, uLo, nHi)) (uLo: the left edge's end, here F).
// CHECK:           %[[LAST:.+]] = arith.subi %[[NROWS]], %c1 : index
// CHECK-NEXT:      %[[F:.+]], %[[E:.+]] = fat.visible_key_blocks rows(%c0, %[[LAST]]) kv_len(%c77) edge(%[[DIAG:.+]]) {block_n = 32 : i64, right = 0 : i64} : index
// CHECK-NEXT:      %[[NHI:.+]] = arith.maxsi %[[E]], %[[F]] : index
// CHECK-NEXT:      %[[ULO0:.+]] = arith.maxsi %[[F]], %c0 : index
// CHECK-NEXT:      %[[ULO:.+]] = arith.minsi %[[ULO0]], %[[NHI]] : index
// CHECK-NEXT:      %[[J0:.+]] = fat.first_masked_key_block row(%c0) kv_len(%c77) edge(%[[DIAG]]) {block_n = 32 : i64, right = 0 : i64} : index
// CHECK-NEXT:      %[[UHI0:.+]] = arith.maxsi %[[J0]], %[[ULO]] : index
// CHECK-NEXT:      %[[UHI:.+]] = arith.minsi %[[UHI0]], %[[NHI]] : index
// Running state: O = 0, m = -inf, l = 0.
// CHECK:           %[[O0:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<64x32xf32>)
// CHECK:           %[[M0:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<64xf32>)
// CHECK:           %[[L0:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<64xf32>)
//
// Three KV loops: masked (left edge), unmasked (interior), masked (diagonal
// and the ragged tail). A masked step:
//   S  = Q·Kᵀ, masked;  m' = max(m, rowmax S);  P = exp2(c(S − m'))
//   α  = exp2(c(m − m'));  l' = α·l + rowsum P;  O' = α·O + P·V
// with c = scale · log2(e) = 0.125 · 1.4427 = 0.18034.
// CHECK:           %[[R1:.+]]:3 = scf.for %{{.+}} = %[[F]] to %[[ULO]] step %{{.+}} iter_args(%[[AO:.+]] = %[[O0]], %[[AM:.+]] = %[[M0]], %[[AL:.+]] = %[[L0]])
// CHECK:             %[[KT:.+]] = tensor.pad
// CHECK:             %[[VT:.+]] = tensor.pad
// CHECK:             %[[S:.+]] = fat.qk %[[QT]], %[[KT]] : tensor<64x64xf32>, tensor<32x64xf32> -> tensor<64x32xf32>
// CHECK:             %[[SM:.+]] = fat.mask %[[S]] at(%{{.+}}, %{{.+}}) kv_len(%{{.+}}) diagonal(%{{.+}}) causal : tensor<64x32xf32>
// CHECK:             %[[MN:.+]] = fat.row_max %[[SM]], %[[AM]]
// CHECK:             %[[P:.+]] = fat.exp2 %[[SM]], %[[MN]] scale 0.180336878
// CHECK:             %[[A:.+]] = fat.exp2 %[[AM]], %[[MN]] scale 0.180336878
// CHECK:             %[[LR:.+]] = fat.rescale %[[AL]], %[[A]]
// CHECK:             %[[LN:.+]] = fat.row_sum %[[P]], %[[LR]]
// CHECK:             %[[OR:.+]] = fat.rescale %[[AO]], %[[A]]
// CHECK:             %[[ON:.+]] = fat.pv %[[P]], %[[VT]], %[[OR]]
// CHECK:             scf.yield %[[ON]], %[[MN]], %[[LN]]
// CHECK:           } {fat.kv_loop = "masked"}
// Interior blocks are full: no pad, no mask.
// CHECK:           %[[R2:.+]]:3 = scf.for %{{.+}} = %[[ULO]] to %[[UHI]] step %{{.+}} iter_args(%{{.+}} = %[[R1]]#0, %{{.+}} = %[[R1]]#1, %{{.+}} = %[[R1]]#2)
// CHECK-NOT:         fat.mask
// CHECK:             tensor.extract_slice %[[KS]][0, 0, %{{.+}}, 0] [1, 1, 32, 64]
// CHECK-NOT:         fat.mask
// CHECK:           } {fat.kv_loop = "unmasked"}
// CHECK:           %[[R3:.+]]:3 = scf.for %{{.+}} = %[[UHI]] to %[[NHI]] step %{{.+}} iter_args(%{{.+}} = %[[R2]]#0, %{{.+}} = %[[R2]]#1, %{{.+}} = %[[R2]]#2)
// CHECK:             fat.mask
// CHECK:           } {fat.kv_loop = "masked"}
// O = O / l, LSE = scale·m + ln l; only the real rows are written back.
// CHECK:           %[[FO:.+]], %[[FL:.+]] = fat.finalize %[[R3]]#0, %[[R3]]#2, %[[R3]]#1 scale 1.250000e-01
// CHECK:           %[[RO:.+]] = tensor.extract_slice %[[FO]][0, 0] [%[[NROWS]], 32]
// CHECK:           scf.forall.in_parallel
// CHECK:             tensor.parallel_insert_slice %{{.+}} into %[[OO]][%[[B]], %[[H]], %[[S0]], 0] [1, 1, %[[NROWS]], 32]
// CHECK:             tensor.parallel_insert_slice %{{.+}} into %[[LL]][%[[B]], %[[H]], %[[S0]]] [1, 1, %[[NROWS]]]
// CHECK:         return %[[G]]#0, %[[G]]#1
func.func @gqa_causal(%q: tensor<2x8x100x64xf32>, %k: tensor<2x2x77x64xf32>, %v: tensor<2x2x77x32xf32>,
                      %o: tensor<2x8x100x32xf32>, %l: tensor<2x8x100xf32>)
    -> (tensor<2x8x100x32xf32>, tensor<2x8x100xf32>) {
  %r:2 = fat.attention ins(%q, %k, %v : tensor<2x8x100x64xf32>, tensor<2x2x77x64xf32>, tensor<2x2x77x32xf32>)
                       outs(%o : tensor<2x8x100x32xf32>) lse(%l : tensor<2x8x100xf32>) causal
                       -> tensor<2x8x100x32xf32>, tensor<2x8x100xf32>
  return %r#0, %r#1 : tensor<2x8x100x32xf32>, tensor<2x8x100xf32>
}

// -----

// Without a mask every block but the ragged tail is unmasked, and the mask
// of the tail carries no causal/window attribute (only kv_len).
// CHECK-LABEL: func.func @no_mask
// CHECK:         scf.for {{.+}} {
// CHECK:         } {fat.kv_loop = "masked"}
// CHECK:         scf.for {{.+}} {
// CHECK-NOT:       fat.mask
// CHECK:         } {fat.kv_loop = "unmasked"}
// CHECK:         scf.for {{.+}} {
// CHECK:           fat.mask %{{.+}} at(%{{.+}}, %{{.+}}) kv_len(%{{.+}}) diagonal(%{{.+}}) : tensor<64x32xf32>
// CHECK:         } {fat.kv_loop = "masked"}
func.func @no_mask(%q: tensor<1x1x64x64xbf16>, %k: tensor<1x1x100x64xbf16>, %v: tensor<1x1x100x64xbf16>,
                   %o: tensor<1x1x64x64xbf16>) -> tensor<1x1x64x64xbf16> {
  %r = fat.attention ins(%q, %k, %v : tensor<1x1x64x64xbf16>, tensor<1x1x100x64xbf16>, tensor<1x1x100x64xbf16>)
                     outs(%o : tensor<1x1x64x64xbf16>) -> tensor<1x1x64x64xbf16>
  return %r : tensor<1x1x64x64xbf16>
}

// -----

// The memref form is tiled through its tensor form: restrict to_tensor
// views in, materialize_in_destination out.
// CHECK-LABEL: func.func @memref_form
// CHECK-SAME:    (%[[Q:.+]]: memref<1x2x48x64xf32>, %{{.+}}: memref<1x2x48x64xf32>, %{{.+}}: memref<1x2x48x64xf32>, %[[O:.+]]: memref<1x2x48x64xf32>)
// CHECK-DAG:     %{{.+}} = bufferization.to_tensor %[[Q]] restrict :
// CHECK-DAG:     %{{.+}} = bufferization.to_tensor %[[O]] restrict writable
// CHECK:         %[[R:.+]] = scf.forall
// CHECK:         bufferization.materialize_in_destination %[[R]] in restrict writable %[[O]]
func.func @memref_form(%q: memref<1x2x48x64xf32>, %k: memref<1x2x48x64xf32>, %v: memref<1x2x48x64xf32>,
                       %o: memref<1x2x48x64xf32>) {
  fat.attention ins(%q, %k, %v : memref<1x2x48x64xf32>, memref<1x2x48x64xf32>, memref<1x2x48x64xf32>)
                outs(%o : memref<1x2x48x64xf32>) window [16, 16]
  return
}
