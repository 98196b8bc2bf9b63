// RUN: rm -rf %t && mkdir -p %t/one %t/step %t/again
// RUN: fa-t-opt %s --fat-to-ptx="output-dir=%t/one" -o /dev/null
// RUN: fa-t-opt %s --fat-tile -o %t/tiled.mlir
// RUN: fa-t-opt %t/tiled.mlir --fat-tensorize -o %t/tensorized.mlir
// RUN: fa-t-opt %t/tensorized.mlir --fat-pipeline -o %t/pipelined.mlir
// RUN: fa-t-opt %t/pipelined.mlir --convert-fat-to-nvvm -o %t/nvvm.mlir
// RUN: fa-t-opt %t/nvvm.mlir --pass-pipeline="builtin.module(gpu.module(convert-scf-to-cf,convert-nvvm-to-llvm,convert-gpu-to-nvvm,reconcile-unrealized-casts,canonicalize,cse),nvvm-attach-target{chip=sm_90a features=+ptx80 O=3},gpu-module-to-binary{format=isa},fat-emit-kernels{output-dir=%t/step})" -o /dev/null
// RUN: diff -r %t/one %t/step
// RUN: fa-t-opt %t/pipelined.mlir --fat-to-ptx="output-dir=%t/again" -o /dev/null
// RUN: diff -r %t/one %t/again
// RUN: ls %t/one | FileCheck %s

// The soft-cap with its reference at the bound (row-max=auto at D = 128),
// with the ones columns and, writing the LSE, with vector sums: each pass
// alone on its predecessor's printed output gives the one-shot PTX, and so
// does --fat-to-ptx on the pipelined IR (fat-tile, fat-tensorize and
// fat-pipeline leave a built kernel as it is; fat-tile used to fold it,
// which reordered ptxas's input for the second kernel).

// CHECK-DAG: fat_attention_fwd_bf16_d128_h8_8_bhsd_lse_mod38673ce7_m128n176s2_opbt132.ptx
// CHECK-DAG: fat_attention_fwd_bf16_d128_h8_8_bhsd_mod38673ce7_m128n128s2q2_oprbt132.ptx
func.func @softcap(%q: memref<?x8x?x128xbf16>, %o: memref<?x8x?x128xbf16>) {
  fat.attention ins(%q, %q, %q : memref<?x8x?x128xbf16>, memref<?x8x?x128xbf16>, memref<?x8x?x128xbf16>)
      outs(%o : memref<?x8x?x128xbf16>)
      score {
      ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
        %c = arith.constant 30.0 : f32
        %y = arith.divf %x, %c : f32
        %t = math.tanh %y : f32
        %z = arith.mulf %t, %c : f32
        fat.yield %z : f32
      }
  return
}
func.func @softcap_lse(%q: memref<?x8x?x128xbf16>, %o: memref<?x8x?x128xbf16>, %l: memref<?x8x?xf32>) {
  fat.attention ins(%q, %q, %q : memref<?x8x?x128xbf16>, memref<?x8x?x128xbf16>, memref<?x8x?x128xbf16>)
      outs(%o : memref<?x8x?x128xbf16>) lse(%l : memref<?x8x?xf32>)
      score {
      ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
        %c = arith.constant 30.0 : f32
        %y = arith.divf %x, %c : f32
        %t = math.tanh %y : f32
        %z = arith.mulf %t, %c : f32
        fat.yield %z : f32
      }
  return
}
