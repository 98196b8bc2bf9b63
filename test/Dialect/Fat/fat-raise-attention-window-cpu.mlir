// REQUIRES: mlir-runner
// RUN: fa-t-opt %s --fat-raise-attention | FileCheck %s --check-prefix=RAISED
// RUN: fa-t-opt %s --fat-to-cpu="block-m=4 block-n=2" \
// RUN:   | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs \
// RUN:   | FileCheck %s
// RUN: fa-t-opt %s --fat-raise-attention --fat-to-cpu="block-m=4 block-n=2" \
// RUN:   | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs \
// RUN:   | FileCheck %s

// A sliding window, query i sees keys i − 2 ≤ j ≤ i, written as two index
// comparisons: raised to fat.attention's causal mask plus a window of 2
// keys to the left (diagonal 0 = Skv − Sq is the default and not stated).
// The linalg attention and the raised op (tiled online softmax, 2-key
// blocks, so the window crosses block edges) run on the CPU and print the
// same O: float64 numpy's softmax(window(q·kᵀ / 2))·v to the digits shown.

// RAISED:     fat.attention
// RAISED-SAME:  scale 5.000000e-01 causal window [2, -1]
// RAISED-NOT: linalg.matmul

// CHECK:      [0.02, {{ *}}0.74, {{ *}}-0.28, {{ *}}0.2],
// CHECK-NEXT: [-0.27996{{[0-9]*}}, {{ *}}0.42003{{[0-9]*}}, {{ *}}-0.30333{{[0-9]*}}, {{ *}}-0.09996{{[0-9]*}}],
// CHECK-NEXT: [-0.20312{{[0-9]*}}, {{ *}}0.00569{{[0-9]*}}, {{ *}}0.06560{{[0-9]*}}, {{ *}}-0.21487{{[0-9]*}}],
// CHECK-NEXT: [0.07017{{[0-9]*}}, {{ *}}-0.06175{{[0-9]*}}, {{ *}}0.39275{{[0-9]*}}, {{ *}}-0.35720{{[0-9]*}}],
// CHECK-NEXT: [0.08247{{[0-9]*}}, {{ *}}-0.29576{{[0-9]*}}, {{ *}}0.12185{{[0-9]*}}, {{ *}}-0.61424{{[0-9]*}}],
// CHECK-NEXT: [0.29136{{[0-9]*}}, {{ *}}-0.02922{{[0-9]*}}, {{ *}}0.24845{{[0-9]*}}, {{ *}}-0.66192{{[0-9]*}}]]

func.func private @printMemrefF32(memref<*xf32>)

#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
func.func @attention(%q: tensor<6x4xf32>, %k: tensor<6x4xf32>, %v: tensor<6x4xf32>) -> tensor<6x4xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %two = arith.constant 2.000000e+00 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %c2 = arith.constant 2 : index
  %kt0 = tensor.empty() : tensor<4x6xf32>
  %kt = linalg.transpose ins(%k : tensor<6x4xf32>) outs(%kt0 : tensor<4x6xf32>) permutation = [1, 0]
  %e = tensor.empty() : tensor<6x6xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<6x6xf32>) -> tensor<6x6xf32>
  %s = linalg.matmul ins(%q, %kt : tensor<6x4xf32>, tensor<4x6xf32>) outs(%z : tensor<6x6xf32>) -> tensor<6x6xf32>
  %sm = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%s : tensor<6x6xf32>) outs(%e : tensor<6x6xf32>) {
  ^bb0(%in: f32, %out: f32):
    %x = arith.divf %in, %two : f32
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %jd = arith.addi %j, %c2 : index
    %le = arith.cmpi sle, %j, %i : index
    %ge = arith.cmpi sge, %jd, %i : index
    %keep = arith.andi %le, %ge : i1
    %r = arith.select %keep, %x, %ninf : f32
    linalg.yield %r : f32
  } -> tensor<6x6xf32>
  %er = tensor.empty() : tensor<6xf32>
  %m0 = linalg.fill ins(%ninf : f32) outs(%er : tensor<6xf32>) -> tensor<6xf32>
  %max = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%sm : tensor<6x6xf32>) outs(%m0 : tensor<6xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %out : f32
    linalg.yield %r : f32
  } -> tensor<6xf32>
  %ex = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%sm, %max : tensor<6x6xf32>, tensor<6xf32>) outs(%e : tensor<6x6xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %d = arith.subf %a, %b : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<6x6xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%er : tensor<6xf32>) -> tensor<6xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%ex : tensor<6x6xf32>) outs(%s0 : tensor<6xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %in, %out : f32
    linalg.yield %r : f32
  } -> tensor<6xf32>
  %p = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%ex, %sum : tensor<6x6xf32>, tensor<6xf32>) outs(%e : tensor<6x6xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %r = arith.divf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<6x6xf32>
  %eo = tensor.empty() : tensor<6x4xf32>
  %zo = linalg.fill ins(%zero : f32) outs(%eo : tensor<6x4xf32>) -> tensor<6x4xf32>
  %o = linalg.matmul ins(%p, %v : tensor<6x6xf32>, tensor<6x4xf32>) outs(%zo : tensor<6x4xf32>) -> tensor<6x4xf32>
  return %o : tensor<6x4xf32>
}

func.func @main() {
  %q = arith.constant dense<[[0.25, 0.79, 0.55, -0.55], [-0.40, 0.75, -0.99, 0.64], [0.59, -0.06, -0.39, -0.44], [-0.49, -0.11, 0.01, 0.11], [0.99, 0.59, 0.24, 0.98], [-0.57, -0.68, 0.23, -0.91]]> : tensor<6x4xf32>
  %k = arith.constant dense<[[-0.93, 0.03, -0.07, 0.83], [0.26, 0.03, -0.01, -0.50], [-0.98, -0.62, 0.38, -0.60], [-0.26, -0.99, 0.66, -0.69], [-0.46, 0.76, 0.02, 0.69], [0.28, 0.48, -0.82, 0.08]]> : tensor<6x4xf32>
  %v = arith.constant dense<[[0.02, 0.74, -0.28, 0.20], [-0.88, -0.22, -0.35, -0.70], [0.63, -0.24, 0.96, 0.18], [0.21, 0.28, 0.35, -0.70], [-0.12, -0.52, -0.20, -0.81], [0.94, -0.57, 0.34, -0.40]]> : tensor<6x4xf32>
  %o = call @attention(%q, %k, %v) : (tensor<6x4xf32>, tensor<6x4xf32>, tensor<6x4xf32>) -> tensor<6x4xf32>
  %om = bufferization.to_buffer %o : tensor<6x4xf32> to memref<6x4xf32>
  %ou = memref.cast %om : memref<6x4xf32> to memref<*xf32>
  call @printMemrefF32(%ou) : (memref<*xf32>) -> ()
  return
}
