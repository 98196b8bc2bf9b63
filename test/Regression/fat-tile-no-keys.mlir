// RUN: fa-t-opt %s --fat-tile | FileCheck %s
// RUN: fa-t-opt %s --fat-to-cpu -o /dev/null

// Found by fa-t-fuzz-attention: with Skv statically 0, --fat-tile sliced K
// and V at offset 0 of an empty dim, which tensor.extract_slice rejects
// ("offset 2 is out-of-bounds: 0 >= 0"): a pass that succeeded and left
// invalid IR. With no key, every row yields O = 0 and LSE = −inf.

// CHECK-LABEL: func.func @no_keys
// CHECK-SAME:    (%{{.+}}: tensor<1x2x64x64xbf16>, %{{.+}}: tensor<1x2x0x64xbf16>, %[[O:.+]]: tensor<1x2x64x64xbf16>, %[[L:.+]]: tensor<1x2x64xf32>)
// CHECK-DAG:     %[[ZERO:.+]] = arith.constant 0.000000e+00 : bf16
// CHECK-DAG:     %[[NINF:.+]] = arith.constant 0xFF800000 : f32
// CHECK-DAG:     %[[RO:.+]] = linalg.fill ins(%[[ZERO]] : bf16) outs(%[[O]] : tensor<1x2x64x64xbf16>)
// CHECK-DAG:     %[[RL:.+]] = linalg.fill ins(%[[NINF]] : f32) outs(%[[L]] : tensor<1x2x64xf32>)
// CHECK:         return %[[RO]], %[[RL]]
// CHECK-NOT:     fat.attention
func.func @no_keys(%q: tensor<1x2x64x64xbf16>, %k: tensor<1x2x0x64xbf16>,
                   %o: tensor<1x2x64x64xbf16>, %l: tensor<1x2x64xf32>)
    -> (tensor<1x2x64x64xbf16>, tensor<1x2x64xf32>) {
  %r:2 = fat.attention ins(%q, %k, %k : tensor<1x2x64x64xbf16>, tensor<1x2x0x64xbf16>, tensor<1x2x0x64xbf16>)
                       outs(%o : tensor<1x2x64x64xbf16>) lse(%l : tensor<1x2x64xf32>) causal
                       -> tensor<1x2x64x64xbf16>, tensor<1x2x64xf32>
  return %r#0, %r#1 : tensor<1x2x64x64xbf16>, tensor<1x2x64xf32>
}

// The memref form (bshd) goes through the tensor form: O is filled in place.
// CHECK-LABEL: func.func @no_keys_memref
// CHECK:         linalg.fill
// CHECK-NOT:     fat.attention
func.func @no_keys_memref(%q: memref<2x7x4x64xf16>, %k: memref<2x0x4x64xf16>, %o: memref<2x7x4x64xf16>) {
  fat.attention ins(%q, %k, %k : memref<2x7x4x64xf16>, memref<2x0x4x64xf16>, memref<2x0x4x64xf16>)
                outs(%o : memref<2x7x4x64xf16>) layout(bshd)
  return
}
