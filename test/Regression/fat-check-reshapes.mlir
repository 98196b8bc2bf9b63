// RUN: fa-t-opt %s --split-input-file --fat-check-reshapes -verify-diagnostics
// RUN: not fa-t-opt %s --split-input-file --fat-to-cpu 2>&1 | FileCheck %s

// MLIR 22's tensor.expand_shape verifier accepts a static output_shape that
// contradicts the result type; one-shot-bufferize (inside --fat-to-cpu) then
// built a memref.expand_shape that does not verify (fa-t-fuzz-mlir, a
// mutated torch-mlir softmax chain). fat-check-reshapes, first in the
// pipeline, names the dimension instead.

// CHECK: error: 'tensor.expand_shape' op output_shape[0] = 3 contradicts the result type 'tensor<2x8x1xf32>' (dimension 0 is 2)
func.func @contradicts(%x: tensor<2x8xf32>) -> tensor<2x8x1xf32> {
  // expected-error @+1 {{output_shape[0] = 3 contradicts the result type 'tensor<2x8x1xf32>' (dimension 0 is 2)}}
  %e = tensor.expand_shape %x [[0], [1, 2]] output_shape [3, 8, 1]
      : tensor<2x8xf32> into tensor<2x8x1xf32>
  return %e : tensor<2x8x1xf32>
}

// -----

// Agreeing and dynamic sizes pass (the dynamic one is the op's run-time
// shape), and the pipeline lowers them.
// CHECK: llvm.func @agrees
func.func @agrees(%x: tensor<2x8xf32>, %y: tensor<?x8xf32>, %n: index)
    -> (tensor<2x8x1xf32>, tensor<?x8x1xf32>) {
  %e = tensor.expand_shape %x [[0], [1, 2]] output_shape [2, 8, 1]
      : tensor<2x8xf32> into tensor<2x8x1xf32>
  %f = tensor.expand_shape %y [[0], [1, 2]] output_shape [%n, 8, 1]
      : tensor<?x8xf32> into tensor<?x8x1xf32>
  return %e, %f : tensor<2x8x1xf32>, tensor<?x8x1xf32>
}
