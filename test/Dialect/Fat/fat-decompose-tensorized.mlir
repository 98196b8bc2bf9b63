// RUN: fa-t-opt %s --fat-decompose | FileCheck %s

// The tensorized level decomposes with the GPU kernel's arithmetic
// (Decompose.cpp): the fma forms of the exponent arguments, α = 1 where a
// lazy row keeps its reference, the FMA-pipe polynomial bit for bit on the
// columns the m64nNk16 fragment gives it.

// CHECK-DAG: #[[A:.+]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[BT:.+]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[B:.+]] = affine_map<(d0, d1, d2) -> (d2, d1)>
// CHECK-DAG: #[[D:.+]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[TILE:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ROW:.+]] = affine_map<(d0, d1) -> (d0)>
// CHECK-DAG: #[[COL:.+]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @step
// CHECK-SAME:    (%[[Q:.+]]: tensor<64x32xbf16>, %[[K:.+]]: tensor<16x32xbf16>, %[[V:.+]]: tensor<16x32xbf16>, %[[O:.+]]: tensor<64x32xf32>, %[[M:.+]]: tensor<64xf32>, %[[L:.+]]: tensor<64xf32>, %[[C:.+]]: f32)
// CHECK:     %[[POLY:.+]] = arith.constant dense<[false, true, false, true, false, true, false, true, false, true, false, true, false, true, false, true]> : tensor<16xi1>
func.func @step(%q: tensor<64x32xbf16>, %k: tensor<16x32xbf16>, %v: tensor<16x32xbf16>,
                %o: tensor<64x32xf32>, %m: tensor<64xf32>, %l: tensor<64xf32>, %c: f32)
    -> (tensor<64x32xf32>, tensor<64xf32>, tensor<64xf32>) {
  // s_ij = Σ_d q_id · k_jd, from 0 (no accumulator: scale-d = 0)
  // CHECK:     %[[Z:.+]] = linalg.fill
  // CHECK:     %[[S:.+]] = linalg.generic {indexing_maps = [#[[A]], #[[BT]], #[[D]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[Q]], %[[K]] : {{.+}}) outs(%[[Z]] : tensor<64x16xf32>)
  %s = fat.wgmma %q, %k transpose_b a_from smem shape [64, 16, 16]
      : tensor<64x32xbf16>, tensor<16x32xbf16> -> tensor<64x16xf32>
  // m̂ = max(m, rowmax S); moved = c·(m̂ − m) > 8 ∨ m = −inf;
  // m' = moved ? m̂ : m; α = moved ? exp2(fma(m, c, −ĉm')) : 1
  // CHECK:     %[[MH:.+]] = linalg.generic {{.+}} ins(%[[S]] : tensor<64x16xf32>) outs(%[[M]] : tensor<64xf32>)
  // CHECK:       arith.maxnumf
  // CHECK:     %[[MA:.+]]:2 = linalg.generic {{.+}} ins(%[[MH]], %[[M]] : tensor<64xf32>, tensor<64xf32>)
  // CHECK:       %[[G:.+]] = arith.mulf %{{.+}}, %[[C]] : f32
  // CHECK:       %[[GT:.+]] = arith.cmpf ogt, %[[G]], %{{.+}} : f32
  // CHECK:       %[[NI:.+]] = arith.cmpf oeq, %{{.+}}, %{{.+}} : f32
  // CHECK:       %[[MOVED:.+]] = arith.ori %[[GT]], %[[NI]]
  // CHECK:       %[[MN:.+]] = arith.select %[[MOVED]]
  // CHECK:       %[[X:.+]] = math.fma
  // CHECK:       %[[E:.+]] = math.exp2 %[[X]]
  // CHECK:       %[[AL:.+]] = arith.select %[[MOVED]], %[[E]], %{{.+}} : f32
  // CHECK:       linalg.yield %[[MN]], %[[AL]]
  %m1, %a = fat.softmax_max %s, %m scale %c lazy threshold 8.0 : tensor<64x16xf32>, tensor<64xf32>
  // φ = 1/2 of the 4 fragment elements per row: columns j with element
  // k = 2⌊j/8⌋ + j mod 2 odd (k = 1, 3) take the polynomial (the constant
  // mask POLY, hoisted to the top of the function).
  // CHECK:     %[[P:.+]] = linalg.generic {indexing_maps = [#[[TILE]], #[[ROW]], #[[COL]], #[[TILE]]], iterator_types = ["parallel", "parallel"]} ins(%[[S]], %[[MA]]#0, %[[POLY]] : {{.+}})
  // CHECK:       %[[XP:.+]] = math.fma %{{.+}}, %[[C]], %{{.+}} : f32
  // CHECK:       %[[EP:.+]] = math.exp2 %[[XP]]
  // CHECK:       %[[CL:.+]] = arith.maxnumf %[[XP]], %{{.+}} : f32
  // CHECK:       %[[FL:.+]] = math.floor %[[CL]]
  // CHECK:       arith.fptosi %[[FL]] : f32 to i32
  // CHECK:       %[[PB:.+]] = arith.bitcast %{{.+}} : i32 to f32
  // CHECK:       arith.select %{{.+}}, %[[PB]], %[[EP]] : f32
  // l' = fma(l, α, Σ_j p_ij)
  // CHECK:     %[[BS:.+]] = linalg.generic {{.+}} ins(%[[P]] : tensor<64x16xf32>)
  // CHECK:     %[[LN:.+]] = linalg.generic {{.+}} ins(%[[L]], %[[MA]]#1, %[[BS]] : {{.+}})
  // CHECK:       math.fma
  %p, %l1 = fat.softmax_exp %s, %m1 scale %c exp2_poly 0.5 rowsum(%l, %a)
      : (tensor<64x16xf32>, tensor<64xf32>, f32, tensor<64xf32>, tensor<64xf32>)
      -> (tensor<64x16xf32>, tensor<64xf32>)
  %p16 = arith.truncf %p : tensor<64x16xf32> to tensor<64x16xbf16>
  // o'_id = o_id + Σ_j p_ij · v_jd, the accumulator given
  // CHECK:     %[[ON:.+]] = linalg.generic {indexing_maps = [#[[A]], #[[B]], #[[D]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%{{.+}}, %[[V]] : {{.+}}) outs(%[[O]] : tensor<64x32xf32>)
  // CHECK:     return %[[ON]], %[[MA]]#0, %[[LN]]
  %o1 = fat.wgmma %p16, %v, %o a_from registers shape [64, 32, 16]
      : tensor<64x16xbf16>, tensor<16x32xbf16>, tensor<64x32xf32> -> tensor<64x32xf32>
  return %o1, %m1, %l1 : tensor<64x32xf32>, tensor<64xf32>, tensor<64xf32>
}
