// REQUIRES: mlir-runner
// RUN: fa-t-opt %s --fat-to-cpu \
// RUN:   | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs \
// RUN:   | FileCheck %s

// fat.finalize's two forms executed on the CPU, on values checked by hand.
// The kernel's form: l is acc's first column past the output (the ones
// columns), the LSE from the run-time c = scale·log2 e as ln 2·(c·m +
// log2 l). Row 0: acc = (2, 4 | 2), m = 1, c = 2: O = (1, 2), LSE = ln 2 ·
// (2 + 1) = 2.07944; row 1 has l = 0: O = 0, LSE = −inf.
// CHECK:      [1,   2]
// CHECK-NEXT: [0,   0]
// CHECK:      [2.07944,  -inf]
// The CPU's form with its constant scale: acc = (3, 6), l = 3, m = 0.5,
// scale 2: O = (1, 2), LSE = 2·0.5 + ln 3 = 2.09861.
// CHECK:      [1,   2]
// CHECK:      [2.09861]

func.func private @printMemrefF32(memref<*xf32>)

func.func @print2(%o: tensor<?x2xf32>, %l: tensor<?xf32>) {
  %om = bufferization.to_buffer %o : tensor<?x2xf32> to memref<?x2xf32>
  %lm = bufferization.to_buffer %l : tensor<?xf32> to memref<?xf32>
  %ou = memref.cast %om : memref<?x2xf32> to memref<*xf32>
  %lu = memref.cast %lm : memref<?xf32> to memref<*xf32>
  call @printMemrefF32(%ou) : (memref<*xf32>) -> ()
  call @printMemrefF32(%lu) : (memref<*xf32>) -> ()
  return
}

func.func @main() {
  %acc = arith.constant dense<[[2.0, 4.0, 2.0], [0.0, 0.0, 0.0]]> : tensor<2x3xf32>
  %m = arith.constant dense<[1.0, 5.0]> : tensor<2xf32>
  %c = arith.constant 2.0 : f32
  %o, %lse = fat.finalize %acc, ones_columns, %m exp2_scale %c
      : tensor<2x3xf32>, tensor<2xf32> -> tensor<2x2xf32>, tensor<2xf32>
  %od = tensor.cast %o : tensor<2x2xf32> to tensor<?x2xf32>
  %ld = tensor.cast %lse : tensor<2xf32> to tensor<?xf32>
  call @print2(%od, %ld) : (tensor<?x2xf32>, tensor<?xf32>) -> ()

  %acc2 = arith.constant dense<[[3.0, 6.0]]> : tensor<1x2xf32>
  %l2 = arith.constant dense<[3.0]> : tensor<1xf32>
  %m2 = arith.constant dense<[0.5]> : tensor<1xf32>
  %o2, %lse2 = fat.finalize %acc2, %l2, %m2 scale 2.0
      : tensor<1x2xf32>, tensor<1xf32>, tensor<1xf32> -> tensor<1x2xf32>, tensor<1xf32>
  %o2d = tensor.cast %o2 : tensor<1x2xf32> to tensor<?x2xf32>
  %l2d = tensor.cast %lse2 : tensor<1xf32> to tensor<?xf32>
  call @print2(%o2d, %l2d) : (tensor<?x2xf32>, tensor<?xf32>) -> ()
  return
}
