// RUN: fa-t-opt %s --fat-raise-attention -split-input-file | FileCheck %s
// RUN: fa-t-opt %s --fat-raise-attention --fat-to-cpu -split-input-file | FileCheck %s --check-prefix=CPU

// Scores that are more than a constant multiple of Q·Kᵀ under a band mask
// become fat.attention's score region (RaiseAttentionRegion.cpp): Q·Kᵀ's
// element is the region's %s (the op's scale is then the factors on Q and
// K alone), the root loops its indices, and every tensor or scalar the
// scores read a capture. fat-raise-attention-regions-cpu.mlir runs such a
// raise against its source on the CPU.
// CPU-COUNT-3: llvm.func @{{runtime_mask|scale_per_head|runtime_scale}}
// An attention mask or bias passed at run time (a padding mask, an ALiBi
// bias): s' = s + M[β, i, j], M a capture read at the batch index
// flat(β) = b·Hq + h (here Hq = 1) and the row and key.
// CHECK-LABEL: func.func @runtime_mask
// CHECK-SAME:    %[[M:[a-z0-9]+]]: tensor<2x8x8xf32>)
// CHECK:         fat.attention {{.+}} captures(%[[M]] : tensor<2x8x8xf32>) scale 1.000000e+00 score {
// CHECK-NEXT:    ^bb0(%[[S:[a-z0-9]+]]: f32, %{{.+}}: index, %{{.+}}: index, %[[I:[a-z0-9]+]]: index, %[[J:[a-z0-9]+]]: index, %[[MA:[a-z0-9]+]]: tensor<2x8x8xf32>):
// CHECK:           %[[E:.+]] = tensor.extract %[[MA]][%{{.+}}, %[[I]], %[[J]]] : tensor<2x8x8xf32>
// CHECK:           %[[R:.+]] = arith.addf %[[S]], %[[E]] : f32
// CHECK:           fat.yield %[[R]] : f32
// CHECK-NOT:     linalg.batch_matmul
func.func @runtime_mask(%q: tensor<2x8x16xf32>, %kt: tensor<2x16x8xf32>,
                        %v: tensor<2x8x16xf32>, %mask: tensor<2x8x8xf32>) -> tensor<2x8x16xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %s0 = tensor.empty() : tensor<2x8x8xf32>
  %s1 = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<2x8x16xf32>, tensor<2x16x8xf32>) outs(%s1 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %sm = linalg.add ins(%s, %mask : tensor<2x8x8xf32>, tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %p = linalg.softmax dimension(2) ins(%sm : tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %o0 = tensor.empty() : tensor<2x8x16xf32>
  %o1 = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x8x8xf32>, tensor<2x8x16xf32>) outs(%o1 : tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  return %o : tensor<2x8x16xf32>
}

// -----

// A scale per batch·head (a non-splat constant): s' = s · c[β].
// CHECK-LABEL: func.func @scale_per_head
// CHECK:         %[[C:.+]] = arith.constant dense<[2.500000e-01, 1.250000e-01]> : tensor<2xf32>
// CHECK:         fat.attention {{.+}} captures(%[[C]] : tensor<2xf32>) scale 1.000000e+00 score {
// CHECK:           %[[E:.+]] = tensor.extract %{{.+}}[%{{.+}}] : tensor<2xf32>
// CHECK:           arith.mulf %{{.+}}, %[[E]] : f32
func.func @scale_per_head(%q: tensor<2x8x16xf32>, %kt: tensor<2x16x8xf32>,
                          %v: tensor<2x8x16xf32>) -> tensor<2x8x16xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %heads = arith.constant dense<[0.25, 0.125]> : tensor<2xf32>
  %s0 = tensor.empty() : tensor<2x8x8xf32>
  %s1 = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<2x8x16xf32>, tensor<2x16x8xf32>) outs(%s1 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %c = linalg.broadcast ins(%heads : tensor<2xf32>) outs(%s0 : tensor<2x8x8xf32>) dimensions = [1, 2]
  %sc = linalg.mul ins(%s, %c : tensor<2x8x8xf32>, tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %p = linalg.softmax dimension(2) ins(%sc : tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %o0 = tensor.empty() : tensor<2x8x16xf32>
  %o1 = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x8x8xf32>, tensor<2x8x16xf32>) outs(%o1 : tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  return %o : tensor<2x8x16xf32>
}

// -----

// A scale known only at run time (a function argument in the body): a
// scalar capture.
// CHECK-LABEL: func.func @runtime_scale
// CHECK-SAME:    %[[D:[a-z0-9]+]]: f32)
// CHECK:         fat.attention {{.+}} captures(%[[D]] : f32) scale 1.000000e+00 score {
// CHECK-NEXT:    ^bb0(%[[S:[a-z0-9]+]]: f32, %{{.+}}: index, %{{.+}}: index, %{{.+}}: index, %{{.+}}: index, %[[DA:[a-z0-9]+]]: f32):
// CHECK-NEXT:      %[[R:.+]] = arith.divf %[[S]], %[[DA]] : f32
// CHECK-NEXT:      fat.yield %[[R]] : f32
func.func @runtime_scale(%q: tensor<2x8x16xf32>, %kt: tensor<2x16x8xf32>,
                         %v: tensor<2x8x16xf32>, %d: f32) -> tensor<2x8x16xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %s0 = tensor.empty() : tensor<2x8x8xf32>
  %s1 = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<2x8x16xf32>, tensor<2x16x8xf32>) outs(%s1 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %sc = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>],
                        iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.divf %in, %d : f32
    linalg.yield %r : f32
  } -> tensor<2x8x8xf32>
  %p = linalg.softmax dimension(2) ins(%sc : tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %o0 = tensor.empty() : tensor<2x8x16xf32>
  %o1 = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x8x8xf32>, tensor<2x8x16xf32>) outs(%o1 : tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  return %o : tensor<2x8x16xf32>
}

