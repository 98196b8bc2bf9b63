// RUN: fa-t-opt %s --fat-decompose | FileCheck %s

// Found by fa-t-fuzz: a tile op's result type may be dynamic where its
// operands are static, or the other way round. fat.qk sized its init with
// tensor.dim of its own result, which the linalg.generic replacing it then
// used before its definition ("operand #0 does not dominate this use"), and
// fat.finalize typed the LSE init like l, not like its LSE result. Each init
// now has exactly the result's type, its dynamic sizes read off the operands.

// S = Q · Kᵀ is [rows of Q, rows of K] = [64, 32], typed [?, ?].
// CHECK-LABEL: func.func @qk_dynamic_scores
// CHECK-SAME:    (%[[Q:.+]]: tensor<64x128xbf16>, %[[K:.+]]: tensor<32x128xbf16>)
// CHECK-DAG:     %[[C64:.+]] = arith.constant 64 : index
// CHECK-DAG:     %[[C32:.+]] = arith.constant 32 : index
// CHECK:         %[[E:.+]] = tensor.empty(%[[C64]], %[[C32]]) : tensor<?x?xf32>
// CHECK:         %[[Z:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%[[E]] : tensor<?x?xf32>)
// CHECK:         linalg.generic {{.*}} ins(%[[Q]], %[[K]] : {{.*}}) outs(%[[Z]] : tensor<?x?xf32>)
func.func @qk_dynamic_scores(%q: tensor<64x128xbf16>, %k: tensor<32x128xbf16>) -> tensor<?x?xf32> {
  %s = fat.qk %q, %k : tensor<64x128xbf16>, tensor<32x128xbf16> -> tensor<?x?xf32>
  return %s : tensor<?x?xf32>
}

// Dynamic Q rows, scores typed static: the init is static too.
// CHECK-LABEL: func.func @qk_static_scores
// CHECK:         %[[E:.+]] = tensor.empty() : tensor<64x32xf32>
// CHECK:         linalg.fill {{.*}} outs(%[[E]] : tensor<64x32xf32>)
func.func @qk_static_scores(%q: tensor<?x128xf16>, %k: tensor<32x128xf16>) -> tensor<64x32xf32> {
  %s = fat.qk %q, %k : tensor<?x128xf16>, tensor<32x128xf16> -> tensor<64x32xf32>
  return %s : tensor<64x32xf32>
}

// O has acc's shape [?, 128]; the LSE init has the LSE's type, [64].
// CHECK-LABEL: func.func @finalize_static_lse
// CHECK-SAME:    (%[[ACC:.+]]: tensor<?x128xf32>,
// CHECK:         %[[C0:.+]] = arith.constant 0 : index
// CHECK:         %[[M:.+]] = tensor.dim %[[ACC]], %[[C0]] : tensor<?x128xf32>
// CHECK:         %[[OUT:.+]] = tensor.empty(%[[M]]) : tensor<?x128xbf16>
// CHECK:         %[[LSE:.+]] = tensor.empty() : tensor<64xf32>
// CHECK:         linalg.generic {{.*}} outs(%[[OUT]], %[[LSE]] : tensor<?x128xbf16>, tensor<64xf32>)
func.func @finalize_static_lse(%acc: tensor<?x128xf32>, %l: tensor<?xf32>, %m: tensor<?xf32>)
    -> (tensor<?x128xbf16>, tensor<64xf32>) {
  %o, %lse = fat.finalize %acc, %l, %m scale 0.125
      : tensor<?x128xf32>, tensor<?xf32>, tensor<?xf32> -> tensor<?x128xbf16>, tensor<64xf32>
  return %o, %lse : tensor<?x128xbf16>, tensor<64xf32>
}
