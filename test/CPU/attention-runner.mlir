// REQUIRES: mlir-runner
// RUN: fa-t-opt %s --fat-to-cpu="block-m=16 block-n=2" \
// RUN:   | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs \
// RUN:   | FileCheck %s

// Execution of the CPU reference path on cases small enough to check by
// hand. scale = 1, D = 1: s_ij = q_i · k_j with q = (0, 1), k = (0, 1, 2),
// v = (1, 3, 5). block-n = 2 makes Skv = 3 a ragged tail.

func.func private @printMemrefF32(memref<*xf32>)

func.func @print(%o: tensor<1x1x2x1xf32>, %l: tensor<1x1x2xf32>) {
  %om = bufferization.to_buffer %o : tensor<1x1x2x1xf32> to memref<1x1x2x1xf32>
  %lm = bufferization.to_buffer %l : tensor<1x1x2xf32> to memref<1x1x2xf32>
  %ou = memref.cast %om : memref<1x1x2x1xf32> to memref<*xf32>
  %lu = memref.cast %lm : memref<1x1x2xf32> to memref<*xf32>
  call @printMemrefF32(%ou) : (memref<*xf32>) -> ()
  call @printMemrefF32(%lu) : (memref<*xf32>) -> ()
  return
}

func.func @main() {
  %q = arith.constant dense<[[[[0.0], [1.0]]]]> : tensor<1x1x2x1xf32>
  %k = arith.constant dense<[[[[0.0], [1.0], [2.0]]]]> : tensor<1x1x3x1xf32>
  %v = arith.constant dense<[[[[1.0], [3.0], [5.0]]]]> : tensor<1x1x3x1xf32>
  %o0 = tensor.empty() : tensor<1x1x2x1xf32>
  %l0 = tensor.empty() : tensor<1x1x2xf32>
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index

  // Bottom-right causal, δ = Skv − Sq = 1.
  // Row 0 sees keys 0, 1 with s = (0, 0): O = (1 + 3)/2 = 2, LSE = ln 2.
  // Row 1 sees keys 0..2 with s = (0, 1, 2):
  //   O = (1 + 3e + 5e²)/(1 + e + e²) = 4.15042, LSE = ln(1 + e + e²) = 2.40761.
  // CHECK: [2],
  // CHECK-NEXT: [4.1504{{[0-9]*}}]
  // CHECK: [0.69314{{[0-9]*}}, 2.4076{{[0-9]*}}]
  %o, %l = fat.attention ins(%q, %k, %v : tensor<1x1x2x1xf32>, tensor<1x1x3x1xf32>, tensor<1x1x3x1xf32>)
                         outs(%o0 : tensor<1x1x2x1xf32>) lse(%l0 : tensor<1x1x2xf32>) scale 1.0 causal
                         -> tensor<1x1x2x1xf32>, tensor<1x1x2xf32>
  call @print(%o, %l) : (tensor<1x1x2x1xf32>, tensor<1x1x2xf32>) -> ()

  // Top-left causal (PyTorch's is_causal), δ = 0.
  // Row 0 sees key 0: O = 1, LSE = 0.
  // Row 1 sees keys 0, 1 with s = (0, 1): O = (1 + 3e)/(1 + e) = 2.46212,
  //   LSE = ln(1 + e) = 1.31326.
  // CHECK: [1],
  // CHECK-NEXT: [2.4621{{[0-9]*}}]
  // CHECK: [0, 1.31326{{[0-9]*}}]
  %ot, %lt = fat.attention ins(%q, %k, %v : tensor<1x1x2x1xf32>, tensor<1x1x3x1xf32>, tensor<1x1x3x1xf32>)
                           outs(%o0 : tensor<1x1x2x1xf32>) lse(%l0 : tensor<1x1x2xf32>) diagonal(%c0) scale 1.0 causal
                           -> tensor<1x1x2x1xf32>, tensor<1x1x2xf32>
  call @print(%ot, %lt) : (tensor<1x1x2x1xf32>, tensor<1x1x2xf32>) -> ()

  // Window [0, 0] at δ = 2: row 0 sees key 2 only (O = 5, LSE = s = 0);
  // row 1 would see key 3, which does not exist: O = 0, LSE = -inf, no NaN.
  // CHECK: [5],
  // CHECK-NEXT: [0]
  // CHECK: [0, -inf]
  %ow, %lw = fat.attention ins(%q, %k, %v : tensor<1x1x2x1xf32>, tensor<1x1x3x1xf32>, tensor<1x1x3x1xf32>)
                           outs(%o0 : tensor<1x1x2x1xf32>) lse(%l0 : tensor<1x1x2xf32>) diagonal(%c2) scale 1.0 window [0, 0]
                           -> tensor<1x1x2x1xf32>, tensor<1x1x2xf32>
  call @print(%ow, %lw) : (tensor<1x1x2x1xf32>, tensor<1x1x2xf32>) -> ()
  return
}
