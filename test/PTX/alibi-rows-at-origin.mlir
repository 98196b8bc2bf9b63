// RUN: fa-t-opt %s --fat-tile --fat-tensorize=linear-bias=vector --fat-pipeline="persistent=off pingpong=off tile-overlap=off" | FileCheck %s

// ALiBi, s − slope·(i − j): the row enters only as an added term, so each
// row's scores may all shift by one constant, which O does not see.
// fat-pipeline then evaluates the region with every row of the tile at its
// first (rows_at_origin; the kernel computes float(j − i') once per key) —
// in a kernel that writes no LSE only, since the LSE would see the shift.
// A factor that reads the key (slope·j·(i − j)) is not separable: not
// marked. (The vector form, linear-bias=vector: linear-bias=auto takes
// this bias onto the tensor cores where no LSE is written,
// linear-bias-mma.mlir.)

// CHECK-LABEL: gpu.module @fat_attention_fwd_bf16_d64_h4_4_bhsd_causal_lse_mod
// CHECK:         fat.score_mod %{{.+}} scale 1.000000e+00 {
// CHECK-LABEL: gpu.module @fat_attention_fwd_bf16_d64_h4_4_bhsd_causal_mod188725ea_
// CHECK:         fat.score_mod %{{.+}} scale 1.000000e+00 rows_at_origin {
// CHECK-LABEL: gpu.module @fat_attention_fwd_bf16_d64_h4_4_bhsd_causal_mod
// CHECK-NOT:     rows_at_origin
// CHECK:         fat.score_mod %{{.+}} scale 1.000000e+00 {

func.func @alibi(%q: tensor<1x4x256x64xbf16>, %k: tensor<1x4x256x64xbf16>,
                 %v: tensor<1x4x256x64xbf16>, %o: tensor<1x4x256x64xbf16>,
                 %lse: tensor<1x4x256xf32>)
    -> (tensor<1x4x256x64xbf16>, tensor<1x4x256x64xbf16>, tensor<1x4x256xf32>,
        tensor<1x4x256x64xbf16>) {
  %r:2 = fat.attention ins(%q, %k, %v : tensor<1x4x256x64xbf16>, tensor<1x4x256x64xbf16>, tensor<1x4x256x64xbf16>)
      outs(%o : tensor<1x4x256x64xbf16>) lse(%lse : tensor<1x4x256xf32>) causal
      score {
      ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
        %slope = arith.constant 0.25 : f32
        %d = arith.subi %i, %j : index
        %d64 = arith.index_cast %d : index to i64
        %df = arith.sitofp %d64 : i64 to f32
        %bias = arith.mulf %slope, %df : f32
        %y = arith.subf %x, %bias : f32
        fat.yield %y : f32
      } -> tensor<1x4x256x64xbf16>, tensor<1x4x256xf32>
  %n = fat.attention ins(%q, %k, %v : tensor<1x4x256x64xbf16>, tensor<1x4x256x64xbf16>, tensor<1x4x256x64xbf16>)
      outs(%o : tensor<1x4x256x64xbf16>) causal
      score {
      ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
        %slope = arith.constant 0.25 : f32
        %d = arith.subi %i, %j : index
        %d64 = arith.index_cast %d : index to i64
        %df = arith.sitofp %d64 : i64 to f32
        %bias = arith.mulf %slope, %df : f32
        %y = arith.subf %x, %bias : f32
        fat.yield %y : f32
      } -> tensor<1x4x256x64xbf16>
  %w = fat.attention ins(%q, %k, %v : tensor<1x4x256x64xbf16>, tensor<1x4x256x64xbf16>, tensor<1x4x256x64xbf16>)
      outs(%o : tensor<1x4x256x64xbf16>) causal
      score {
      ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
        %j64 = arith.index_cast %j : index to i64
        %slope = arith.sitofp %j64 : i64 to f32
        %d = arith.subi %i, %j : index
        %d64 = arith.index_cast %d : index to i64
        %df = arith.sitofp %d64 : i64 to f32
        %bias = arith.mulf %slope, %df : f32
        %y = arith.subf %x, %bias : f32
        fat.yield %y : f32
      } -> tensor<1x4x256x64xbf16>
  return %r#0, %n, %r#1, %w : tensor<1x4x256x64xbf16>, tensor<1x4x256x64xbf16>, tensor<1x4x256xf32>, tensor<1x4x256x64xbf16>
}
