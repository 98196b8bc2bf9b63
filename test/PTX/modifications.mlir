// RUN: fa-t-opt %s --fat-tile --fat-tensorize="row-max=online" --fat-pipeline="persistent=off pingpong=off tile-overlap=off" | FileCheck %s --check-prefix=PIPE
// RUN: rm -rf %t && mkdir -p %t && fa-t-opt %s --fat-to-ptx="row-max=online persistent=off pingpong=off tile-overlap=off output-dir=%t" -o %t/out.mlir
// RUN: cat %t/*.json | FileCheck %s --check-prefix=JSON
// RUN: ls %t | FileCheck %s --check-prefix=NAMES
// RUN: FileCheck %s --check-prefix=PTX --input-file=%t/out.mlir
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t/fat_attention_fwd_bf16_d128_h16_16_bhsd_causal_mod38673ce7_m128n128s2_ol8.ptx -o %t/a.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS %}
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t/fat_attention_fwd_bf16_d128_h16_16_bhsd_causal_mod1284cc75_m128n128s2_ol8.ptx -o %t/b.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS %}

// Score and mask modifications in the Hopper kernel: fat-pipeline moves the
// tensorized loop's fat.score_mod / fat.mask_mod onto each block's scores,
// the warpgroup's fragment tile. The kernel's scale is a run-time
// parameter, so the tile is scaled first (tensor.splat, arith.mulf) and
// the modification's own scale is 1. The soft-cap's constants leave its
// region (ScoreScales.cpp): fat-tensorize moved the output factor 30 into
// the softmax constant (c = 30·log2 e) and fat-pipeline the input's 1/30
// into the kernel's scale, so the body is tanh alone.
// The kernel is named by the regions' bodies: equal bodies share a kernel,
// another body gets another.

// The launch takes the attention's scale, the one the region's input is
// multiplied by.
// PIPE-LABEL:  func.func @softcap
// PIPE:          fat.launch @fat_attention_fwd_bf16_d128_h16_16_bhsd_causal_mod{{.*}} scale 0.0883883461

// PIPE-LABEL:  gpu.module @fat_attention_fwd_bf16_d128_h16_16_bhsd_causal_mod
// PIPE:          %[[C:[a-z0-9_]+]] = arith.constant 43.2808495 : f32
// PIPE:          %[[SCALE:[0-9]+]] = arith.mulf %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} : f32
// PIPE-NEXT:     %[[INV:[a-z0-9_]+]] = arith.constant 0.0333333351 : f32
// PIPE-NEXT:     %[[K:[0-9]+]] = arith.mulf %[[SCALE]], %[[INV]] : f32
// PIPE:          %[[S:[0-9]+]] = fat.wgmma_wait pending(0) (%{{[0-9]+}}) : tensor<64x128xf32, #fat.wgmma_fragment>
// PIPE:          %[[SPLAT:[a-z0-9_]+]] = tensor.splat %[[K]] : tensor<64x128xf32, #fat.wgmma_fragment>
// PIPE-NEXT:     %[[SCALED:[0-9]+]] = arith.mulf %[[S]], %[[SPLAT]] fastmath<contract> : tensor<64x128xf32, #fat.wgmma_fragment>
// PIPE-NEXT:     %[[MOD:[0-9]+]] = fat.score_mod %[[SCALED]] at(%{{.+}}) len(%{{.+}}) scale 1.000000e+00 {
// PIPE-NEXT:     ^bb0(%[[X:[a-z0-9_]+]]: f32,
// PIPE-NEXT:       %[[T:[0-9]+]] = math.tanh %[[X]] fastmath<contract,afn> : f32
// PIPE-NEXT:       fat.yield %[[T]] : f32
// PIPE-NEXT:     } : tensor<64x128xf32, #fat.wgmma_fragment>
// PIPE:          fat.softmax_max %{{[0-9]+}}, %{{.+}} scale %[[C]]

// Two attentions with the soft-cap share one kernel (key 38673ce7, the
// hash of the region's structure); the prefix-LM mask is a second one.
// NAMES:       fat_attention_fwd_bf16_d128_h16_16_bhsd_causal_mod1284cc75_m128n128s2_ol8.json
// NAMES-NEXT:  fat_attention_fwd_bf16_d128_h16_16_bhsd_causal_mod1284cc75_m128n128s2_ol8.ptx
// NAMES-NEXT:  fat_attention_fwd_bf16_d128_h16_16_bhsd_causal_mod38673ce7_m128n128s2_ol8.json
// NAMES-NEXT:  fat_attention_fwd_bf16_d128_h16_16_bhsd_causal_mod38673ce7_m128n128s2_ol8.ptx
// NAMES-NEXT:  out.mlir
// PTX-COUNT-3: fat.launch @fat_attention_fwd_bf16_d128_h16_16_bhsd_causal_mod
// PTX-NOT:     fat.launch
// PTXAS: 0 bytes spill stores, 0 bytes spill loads

// The manifest names the modifications' key.
// JSON-COUNT-2: "modifications": "{{[0-9a-f]+}}"

func.func @softcap(%q: tensor<2x16x1000x128xbf16>, %k: tensor<2x16x1000x128xbf16>,
                   %v: tensor<2x16x1000x128xbf16>, %o: tensor<2x16x1000x128xbf16>)
    -> (tensor<2x16x1000x128xbf16>, tensor<2x16x1000x128xbf16>, tensor<2x16x1000x128xbf16>) {
  %r = fat.attention ins(%q, %k, %v : tensor<2x16x1000x128xbf16>, tensor<2x16x1000x128xbf16>, tensor<2x16x1000x128xbf16>)
      outs(%o : tensor<2x16x1000x128xbf16>) causal
      score {
      ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
        %c = arith.constant 30.0 : f32
        %y = arith.divf %x, %c : f32
        %t = math.tanh %y : f32
        %z = arith.mulf %t, %c : f32
        fat.yield %z : f32
      } -> tensor<2x16x1000x128xbf16>
  %r2 = fat.attention ins(%k, %q, %v : tensor<2x16x1000x128xbf16>, tensor<2x16x1000x128xbf16>, tensor<2x16x1000x128xbf16>)
      outs(%o : tensor<2x16x1000x128xbf16>) causal
      score {
      ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
        %c = arith.constant 30.0 : f32
        %y = arith.divf %x, %c : f32
        %t = math.tanh %y : f32
        %z = arith.mulf %t, %c : f32
        fat.yield %z : f32
      } -> tensor<2x16x1000x128xbf16>
  %r3 = fat.attention ins(%q, %k, %v : tensor<2x16x1000x128xbf16>, tensor<2x16x1000x128xbf16>, tensor<2x16x1000x128xbf16>)
      outs(%o : tensor<2x16x1000x128xbf16>) causal
      mask {
      ^bb0(%b: index, %h: index, %i: index, %j: index):
        %n = arith.constant 100 : index
        %p = arith.cmpi slt, %j, %n : index
        %d = arith.cmpi sle, %j, %i : index
        %keep = arith.ori %p, %d : i1
        fat.yield %keep : i1
      } -> tensor<2x16x1000x128xbf16>
  return %r, %r2, %r3 : tensor<2x16x1000x128xbf16>, tensor<2x16x1000x128xbf16>, tensor<2x16x1000x128xbf16>
}
