// REQUIRES: mlir-runner
// RUN: fa-t-opt %s --fat-raise-attention | FileCheck %s --check-prefix=RAISED
// RUN: fa-t-opt %s --fat-to-cpu="block-m=4 block-n=2" \
// RUN:   | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs \
// RUN:   | FileCheck %s
// RUN: fa-t-opt %s --fat-raise-attention --fat-to-cpu="block-m=4 block-n=2" \
// RUN:   | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs \
// RUN:   | FileCheck %s

// Scores beyond c·Q·Kᵀ under a band mask are raised into fat.attention's
// score region: here tanh soft-capping at 3 and a bias tensor under the
// causal mask. The linalg source and the raised op (the region inlined as
// fat.score_mod in the tiled online softmax) run on the CPU and print the
// same O, which is float64 numpy's
// softmax(causal(3·tanh(q·kᵀ / 2 / 3) + bias))·v to the digits shown.

// RAISED-LABEL: func.func @attention
// RAISED-SAME:   %[[BIAS:[a-z0-9]+]]: tensor<1x2x4x4xf32>)
// RAISED:      fat.attention {{.+}} captures(%[[BIAS]] : tensor<1x2x4x4xf32>) scale 1.000000e+00 causal score {
// RAISED-NEXT: ^bb0(%[[S:.+]]: f32, %{{.+}}: index, %{{.+}}: index, %{{.+}}: index, %{{.+}}: index, %[[B:.+]]: tensor<1x2x4x4xf32>):
// RAISED:        arith.divf %[[S]]
// RAISED:        math.tanh
// RAISED:        tensor.extract %[[B]]
// RAISED:        fat.yield %{{.+}} : f32
// RAISED-NOT: linalg.batch_matmul

// CHECK:      [-0.12, {{ *}}-0.52, {{ *}}-0.2, {{ *}}-0.81],
// CHECK-NEXT: [0.79226{{[0-9]*}}, {{ *}}-0.56303{{[0-9]*}}, {{ *}}0.2647{{[0-9]*}}, {{ *}}-0.45714{{[0-9]*}}],
// CHECK-NEXT: [0.35766{{[0-9]*}}, {{ *}}-0.2399{{[0-9]*}}, {{ *}}-0.29436{{[0-9]*}}, {{ *}}-0.22561{{[0-9]*}}],
// CHECK-NEXT: [0.65277{{[0-9]*}}, {{ *}}0.07913{{[0-9]*}}, {{ *}}0.05808{{[0-9]*}}, {{ *}}-0.55993{{[0-9]*}}]],
// CHECK-NEXT: [-0.62, {{ *}}0.86, {{ *}}0.1, {{ *}}-0.64],
// CHECK-NEXT: [-0.0031{{[0-9]*}}, {{ *}}0.60258{{[0-9]*}}, {{ *}}0.11775{{[0-9]*}}, {{ *}}-0.46691{{[0-9]*}}],
// CHECK-NEXT: [0.17737{{[0-9]*}}, {{ *}}-0.02125{{[0-9]*}}, {{ *}}-0.35051{{[0-9]*}}, {{ *}}0.16441{{[0-9]*}}],
// CHECK-NEXT: [-0.16241{{[0-9]*}}, {{ *}}-0.13612{{[0-9]*}}, {{ *}}-0.58547{{[0-9]*}}, {{ *}}0.41213{{[0-9]*}}]]]]

func.func private @printMemrefF32(memref<*xf32>)

#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#rows = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#keep = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>
// softmax(causal(3·tanh(q @ kᵀ / 2 / 3) + bias)) @ v on [1, 2, 4, 4], torch-mlir style.
func.func @attention(%q: tensor<1x2x4x4xf32>, %k: tensor<1x2x4x4xf32>,
                     %v: tensor<1x2x4x4xf32>, %bias: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %two = arith.constant 2.000000e+00 : f32
  %three = arith.constant 3.000000e+00 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %kt0 = tensor.empty() : tensor<1x2x4x4xf32>
  %kt = linalg.transpose ins(%k : tensor<1x2x4x4xf32>) outs(%kt0 : tensor<1x2x4x4xf32>) permutation = [0, 1, 3, 2]
  %qc = tensor.collapse_shape %q [[0, 1], [2], [3]] : tensor<1x2x4x4xf32> into tensor<2x4x4xf32>
  %ktc = tensor.collapse_shape %kt [[0, 1], [2], [3]] : tensor<1x2x4x4xf32> into tensor<2x4x4xf32>
  %vc = tensor.collapse_shape %v [[0, 1], [2], [3]] : tensor<1x2x4x4xf32> into tensor<2x4x4xf32>
  %e3 = tensor.empty() : tensor<2x4x4xf32>
  %z3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %s3 = linalg.batch_matmul ins(%qc, %ktc : tensor<2x4x4xf32>, tensor<2x4x4xf32>) outs(%z3 : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %s = tensor.expand_shape %s3 [[0, 1], [2], [3]] output_shape [1, 2, 4, 4] : tensor<2x4x4xf32> into tensor<1x2x4x4xf32>
  %e4 = tensor.empty() : tensor<1x2x4x4xf32>
  %sm = linalg.generic {indexing_maps = [#id4, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%s, %bias : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) outs(%e4 : tensor<1x2x4x4xf32>) {
  ^bb0(%in: f32, %b: f32, %out: f32):
    %x = arith.divf %in, %two : f32
    %y = arith.divf %x, %three : f32
    %t = math.tanh %y : f32
    %c = arith.mulf %t, %three : f32
    %z = arith.addf %c, %b : f32
    %i = linalg.index 2 : index
    %j = linalg.index 3 : index
    %hide = arith.cmpi sgt, %j, %i : index
    %r = arith.select %hide, %ninf, %z : f32
    linalg.yield %r : f32
  } -> tensor<1x2x4x4xf32>
  %er = tensor.empty() : tensor<1x2x4xf32>
  %m0 = linalg.fill ins(%ninf : f32) outs(%er : tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  %max = linalg.generic {indexing_maps = [#id4, #rows], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%sm : tensor<1x2x4x4xf32>) outs(%m0 : tensor<1x2x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %out : f32
    linalg.yield %r : f32
  } -> tensor<1x2x4xf32>
  %maxk = tensor.expand_shape %max [[0], [1], [2, 3]] output_shape [1, 2, 4, 1] : tensor<1x2x4xf32> into tensor<1x2x4x1xf32>
  %ex = linalg.generic {indexing_maps = [#id4, #keep, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%sm, %maxk : tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) outs(%e4 : tensor<1x2x4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %d = arith.subf %a, %b : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<1x2x4x4xf32>
  %z0 = linalg.fill ins(%zero : f32) outs(%er : tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  %sum = linalg.generic {indexing_maps = [#id4, #rows], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%ex : tensor<1x2x4x4xf32>) outs(%z0 : tensor<1x2x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %in, %out : f32
    linalg.yield %r : f32
  } -> tensor<1x2x4xf32>
  %sumk = tensor.expand_shape %sum [[0], [1], [2, 3]] output_shape [1, 2, 4, 1] : tensor<1x2x4xf32> into tensor<1x2x4x1xf32>
  %p = linalg.generic {indexing_maps = [#id4, #keep, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%ex, %sumk : tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) outs(%e4 : tensor<1x2x4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %r = arith.divf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<1x2x4x4xf32>
  %pc = tensor.collapse_shape %p [[0, 1], [2], [3]] : tensor<1x2x4x4xf32> into tensor<2x4x4xf32>
  %o3 = linalg.batch_matmul ins(%pc, %vc : tensor<2x4x4xf32>, tensor<2x4x4xf32>) outs(%z3 : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %o = tensor.expand_shape %o3 [[0, 1], [2], [3]] output_shape [1, 2, 4, 4] : tensor<2x4x4xf32> into tensor<1x2x4x4xf32>
  return %o : tensor<1x2x4x4xf32>
}

func.func @main() {
  %q = arith.constant dense<[[[[0.25, 0.79, 0.55, -0.55],   [-0.40, 0.75, -0.99, 0.64],   [0.59, -0.06, -0.39, -0.44],   [-0.49, -0.11, 0.01, 0.11]],  [[0.99, 0.59, 0.24, 0.98],   [-0.57, -0.68, 0.23, -0.91],   [-0.93, 0.03, -0.07, 0.83],   [0.26, 0.03, -0.01, -0.50]]]]> : tensor<1x2x4x4xf32>
  %k = arith.constant dense<[[[[-0.98, -0.62, 0.38, -0.60],   [-0.26, -0.99, 0.66, -0.69],   [-0.46, 0.76, 0.02, 0.69],   [0.28, 0.48, -0.82, 0.08]],  [[0.02, 0.74, -0.28, 0.20],   [-0.88, -0.22, -0.35, -0.70],   [0.63, -0.24, 0.96, 0.18],   [0.21, 0.28, 0.35, -0.70]]]]> : tensor<1x2x4x4xf32>
  %v = arith.constant dense<[[[[-0.12, -0.52, -0.20, -0.81],   [0.94, -0.57, 0.34, -0.40],   [0.75, 0.32, -0.74, 0.69],   [0.89, 0.81, 0.14, -0.71]],  [[-0.62, 0.86, 0.10, -0.64],   [0.77, 0.28, 0.14, -0.25],   [-0.18, -0.52, -0.92, 0.75],   [-0.06, 0.10, -0.36, 0.50]]]]> : tensor<1x2x4x4xf32>
  %bias = arith.constant dense<[[[[0.5, -1.0, 0.25, 2.0],   [-0.75, 1.5, 0.0, -0.5],   [1.0, -0.25, 0.75, -1.25],   [0.3, 0.6, -0.9, 1.2]],  [[-0.4, 0.8, -1.2, 0.1],   [0.9, -0.3, 0.45, -0.6],   [-1.1, 0.2, 0.65, 0.35],   [0.05, -0.85, 1.3, -0.15]]]]> : tensor<1x2x4x4xf32>
  %o = call @attention(%q, %k, %v, %bias) : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %om = bufferization.to_buffer %o : tensor<1x2x4x4xf32> to memref<1x2x4x4xf32>
  %ou = memref.cast %om : memref<1x2x4x4xf32> to memref<*xf32>
  call @printMemrefF32(%ou) : (memref<*xf32>) -> ()
  return
}
