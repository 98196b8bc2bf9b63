// RUN: fa-t-opt %s --fat-tile="block-m=64 block-n=32" | FileCheck %s
// RUN: fa-t-opt %s --fat-tile="block-m=64 block-n=64" --fat-tensorize="rowsum=mma" | FileCheck %s --check-prefix=TENSORIZED
// RUN: fa-t-opt %s --fat-tile="block-m=64 block-n=64" --fat-tensorize | FileCheck %s --check-prefix=AUTO
// RUN: fa-t-opt %s --fat-to-cpu | FileCheck %s --check-prefix=CPU

// fat-tile inlines the score and mask regions into the tiled form, between
// S = Q·Kᵀ and the row max: fat.score_mod computes s' = score(scale·s, b,
// h, i, j) (so the softmax after it uses c = log2 e and the LSE m + ln l),
// fat.mask_mod hides the keys the mask region refuses, each at the tile's
// global (b, h, first row) and key block.

// CHECK-LABEL: func.func @softcap_alibi_documents
// CHECK-SAME:    (%{{.+}}: tensor<2x4x128x64xbf16>, %{{.+}}: tensor<2x4x128x64xbf16>, %{{.+}}: tensor<2x4x128x64xbf16>, %{{.+}}: tensor<2x4x128x64xbf16>, %[[SL:.+]]: tensor<4xf32>, %[[DOC:.+]]: tensor<128xi32>)
// CHECK:         scf.forall (%[[B:.+]], %[[H:.+]], %[[I0:.+]]) = (0, 0, 0) to (2, 4, 128) step (1, 1, 64)
// CHECK:           scf.for %[[JB:.+]] = {{.+}} iter_args
// CHECK:             %[[J0:.+]] = arith.muli %[[JB]], %{{.+}} : index
// CHECK:             %[[S:.+]] = fat.qk
// CHECK:             %[[S1:.+]] = fat.score_mod %[[S]] at(%[[B]], %[[H]], %[[I0]], %[[J0]]) len(%{{.+}}, %{{.+}}) scale 1.250000e-01 captures(%[[SL]], %[[DOC]] : tensor<4xf32>, tensor<128xi32>) {
// CHECK:               math.tanh
// CHECK:               tensor.extract %{{.+}}[%{{.+}}] : tensor<4xf32>
// CHECK:               fat.yield %{{.+}} : f32
// CHECK:             } : tensor<64x32xf32>
// CHECK:             %[[S2:.+]] = fat.mask_mod %[[S1]] at(%[[B]], %[[H]], %[[I0]], %[[J0]]) len(%{{.+}}, %{{.+}}) captures(%[[SL]], %[[DOC]] : tensor<4xf32>, tensor<128xi32>) {
// CHECK:               arith.cmpi eq
// CHECK:               fat.yield %{{.+}} : i1
// CHECK:             } : tensor<64x32xf32>
// CHECK:             %[[M:.+]] = fat.mask %[[S2]]
// c = log2 e: the scores are already scaled.
// CHECK:             fat.row_max %[[M]]
// CHECK:             fat.exp2 %[[M]], %{{.+}} scale 1.44269502
// CHECK:           fat.finalize {{.+}} scale 1.000000e+00
// The regions ride into the tensorized level between the Q·Kᵀ wgmma and
// fat.softmax_max.
// TENSORIZED-LABEL: func.func @softcap_alibi_documents
// TENSORIZED:         %[[S:.+]] = fat.wgmma {{.+}} transpose_b a_from smem
// TENSORIZED:         %[[S1:.+]] = fat.score_mod %[[S]]
// TENSORIZED:         %[[S2:.+]] = fat.mask_mod %[[S1]]
// TENSORIZED:         %[[M:.+]] = fat.mask %[[S2]]
// TENSORIZED:         fat.softmax_max %[[M]]
// fat-tensorize's cost model takes a mask region for a window (any block
// may be partial): D = 64 without an LSE keeps the vector row sums.
// AUTO-LABEL: func.func @softcap_alibi_documents
// AUTO:         fat.softmax_exp {{.+}} rowsum(
// AUTO-NOT:     shape [64, 72, 16]
// CPU: llvm.func @softcap_alibi_documents
func.func @softcap_alibi_documents(%q: tensor<2x4x128x64xbf16>, %k: tensor<2x4x128x64xbf16>,
                                   %v: tensor<2x4x128x64xbf16>, %o: tensor<2x4x128x64xbf16>,
                                   %slopes: tensor<4xf32>, %doc: tensor<128xi32>)
    -> tensor<2x4x128x64xbf16> {
  %r = fat.attention ins(%q, %k, %v : tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>,
                                      tensor<2x4x128x64xbf16>)
                     outs(%o : tensor<2x4x128x64xbf16>)
                     captures(%slopes, %doc : tensor<4xf32>, tensor<128xi32>) causal
                     score {
                     ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index,
                          %sl: tensor<4xf32>, %d: tensor<128xi32>):
                       %c = arith.constant 30.0 : f32
                       %x = arith.divf %s, %c : f32
                       %t = math.tanh %x : f32
                       %cap = arith.mulf %t, %c : f32
                       %slope = tensor.extract %sl[%h] : tensor<4xf32>
                       %dist = arith.subi %i, %j : index
                       %di = arith.index_cast %dist : index to i64
                       %df = arith.sitofp %di : i64 to f32
                       %bias = arith.mulf %slope, %df : f32
                       %r = arith.subf %cap, %bias : f32
                       fat.yield %r : f32
                     }
                     mask {
                     ^bb0(%b: index, %h: index, %i: index, %j: index,
                          %sl: tensor<4xf32>, %d: tensor<128xi32>):
                       %di = tensor.extract %d[%i] : tensor<128xi32>
                       %dj = tensor.extract %d[%j] : tensor<128xi32>
                       %same = arith.cmpi eq, %di, %dj : i32
                       fat.yield %same : i1
                     } -> tensor<2x4x128x64xbf16>
  return %r : tensor<2x4x128x64xbf16>
}
