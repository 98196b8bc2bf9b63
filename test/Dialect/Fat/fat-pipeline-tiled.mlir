// RUN: fa-t-opt %s --fat-tile --fat-tensorize --fat-pipeline -split-input-file | FileCheck %s
// RUN: not fa-t-opt %s --fat-pipeline -split-input-file 2>&1 | FileCheck %s --check-prefix=UNTILED
// RUN: not fa-t-opt %s --fat-tensorize -split-input-file 2>&1 | FileCheck %s --check-prefix=UNTILED-T
// RUN: not fa-t-opt %s --fat-tile --fat-pipeline -split-input-file 2>&1 | FileCheck %s --check-prefix=UNTENSORIZED
// RUN: not fa-t-opt %s --fat-tile --fat-tensorize --convert-fat-to-nvvm -split-input-file 2>&1 | FileCheck %s --check-prefix=UNBUILT

// fat-pipeline on the tensorized loop (the --fat-to-ptx path): it reads
// the attention off the tiles — Q, K, V and the destinations are the
// tensors the tiles slice, the layout where the query block indexes Q, the
// mask and LSE from fat.mask and the destinations, the primitives from the
// tensorized ops, the blocks from fat.tile — builds its kernel and
// replaces the loop by the kernel's fat.launch; an untiled op is refused
// by both (UNTILED). The
// diagonal δ is the tile's δ + s0 at s0 = 0, computed before the launch.

// CHECK-LABEL: func.func @bshd_gqa_window
// CHECK-SAME:    %[[Q:[a-z0-9_]+]]: tensor<2x?x8x64xbf16>, %[[K:[a-z0-9_]+]]: tensor<2x?x2x64xbf16>, %[[V:[a-z0-9_]+]]: tensor<2x?x2x64xbf16>, %[[O:[a-z0-9_]+]]: tensor<2x?x8x64xbf16>, %[[L:[a-z0-9_]+]]: tensor<2x8x?xf32>, %[[D:[a-z0-9_]+]]: index
// CHECK-NOT:     scf.forall
// CHECK:         %[[DELTA:[a-z0-9_]+]] = affine.apply #{{[a-z0-9_]+}}(%{{[a-z0-9_]+}})[%[[D]]]
// CHECK:         %[[R:[a-z0-9_]+]]:2 = fat.launch @[[KERNEL:fat_attention_fwd_bf16_d64_h8_2_bshd_w128_0_lse_m128n128s2]]::@[[KERNEL]] ins(%[[Q]], %[[K]], %[[V]] : tensor<2x?x8x64xbf16>, tensor<2x?x2x64xbf16>, tensor<2x?x2x64xbf16>) outs(%[[O]] : tensor<2x?x8x64xbf16>) lse(%[[L]] : tensor<2x8x?xf32>) diagonal(%[[DELTA]]) scale 1.250000e-01
// CHECK-SAME:    fat.schedule = {block_m = 128 : i64, block_n = 128 : i64
// CHECK:         return %[[R]]#0, %[[R]]#1
// CHECK:       gpu.module @[[KERNEL]]
// UNTILED:     error: 'fat.attention' op is not tiled: fat-pipeline builds the kernel from the tensorized loop, run --fat-tile and --fat-tensorize first (or --fat-to-ptx)
// UNTILED-T:   error: 'fat.attention' op is not tiled: run --fat-tile first (fat-tensorize rewrites the tiled form's KV steps)
// UNTENSORIZED: error: fat-pipeline: the tiled form is not tensorized yet: run --fat-tensorize first
// UNBUILT:     error: 'scf.forall' op is a tiled attention with no kernel to lower: run --fat-tensorize and --fat-pipeline first, or --fat-to-ptx for the whole pipeline
func.func @bshd_gqa_window(%q: tensor<2x?x8x64xbf16>, %k: tensor<2x?x2x64xbf16>, %v: tensor<2x?x2x64xbf16>,
                           %o: tensor<2x?x8x64xbf16>, %l: tensor<2x8x?xf32>, %d: index)
    -> (tensor<2x?x8x64xbf16>, tensor<2x8x?xf32>) {
  %r:2 = fat.attention ins(%q, %k, %v : tensor<2x?x8x64xbf16>, tensor<2x?x2x64xbf16>, tensor<2x?x2x64xbf16>)
           outs(%o : tensor<2x?x8x64xbf16>) lse(%l : tensor<2x8x?xf32>) diagonal(%d) window [128, 0]
           layout(bshd) -> tensor<2x?x8x64xbf16>, tensor<2x8x?xf32>
  return %r#0, %r#1 : tensor<2x?x8x64xbf16>, tensor<2x8x?xf32>
}

// -----

// The memref form: fat-tile's to_tensor / materialize_in_destination stay
// around the launch; the static causal mask has δ = Skv − Sq = 0.
// CHECK-LABEL: func.func @memref_causal
// CHECK:         %[[QT:[a-z0-9_]+]] = bufferization.to_tensor %arg0
// CHECK:         %[[Z:[a-z0-9_]+]] = arith.constant 0 : index
// CHECK:         %[[R:[a-z0-9_]+]] = fat.launch @fat_attention_fwd_bf16_d128_h4_4_bhsd_causal_m128n128s2q2_opl8t132::{{.*}} ins(%[[QT]], {{.*}} diagonal(%[[Z]]) scale 0.0883883461
// CHECK:         bufferization.materialize_in_destination %[[R]] in restrict writable %arg3
func.func @memref_causal(%q: memref<1x4x512x128xbf16>, %k: memref<1x4x512x128xbf16>,
                         %v: memref<1x4x512x128xbf16>, %o: memref<1x4x512x128xbf16>) {
  fat.attention ins(%q, %k, %v : memref<1x4x512x128xbf16>, memref<1x4x512x128xbf16>, memref<1x4x512x128xbf16>)
      outs(%o : memref<1x4x512x128xbf16>) causal
  return
}

// -----

// The launch's δ is the op's: top-left (an explicit diagonal(0)) stays 0;
// the default bottom-right one is Skv − Sq = 256 − 128 at s0 = 0, folded.
// CHECK-LABEL: func.func @top_left
// CHECK:         %[[Z:[a-z0-9_]+]] = arith.constant 0 : index
// CHECK:         fat.launch {{.*}} diagonal(%[[Z]])
// CHECK-LABEL: func.func @bottom_right
// CHECK:         %[[D:[a-z0-9_]+]] = arith.constant 128 : index
// CHECK-NEXT:    fat.launch {{.*}} diagonal(%[[D]])
func.func @top_left(%q: tensor<1x2x128x64xbf16>, %k: tensor<1x2x256x64xbf16>, %v: tensor<1x2x256x64xbf16>,
                    %o: tensor<1x2x128x64xbf16>) -> tensor<1x2x128x64xbf16> {
  %c0 = arith.constant 0 : index
  %r = fat.attention ins(%q, %k, %v : tensor<1x2x128x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>)
         outs(%o : tensor<1x2x128x64xbf16>) diagonal(%c0) causal -> tensor<1x2x128x64xbf16>
  return %r : tensor<1x2x128x64xbf16>
}
func.func @bottom_right(%q: tensor<1x2x128x64xbf16>, %k: tensor<1x2x256x64xbf16>, %v: tensor<1x2x256x64xbf16>,
                        %o: tensor<1x2x128x64xbf16>) -> tensor<1x2x128x64xbf16> {
  %r = fat.attention ins(%q, %k, %v : tensor<1x2x128x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>)
         outs(%o : tensor<1x2x128x64xbf16>) causal -> tensor<1x2x128x64xbf16>
  return %r : tensor<1x2x128x64xbf16>
}
