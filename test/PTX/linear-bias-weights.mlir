// RUN: fa-t-opt %s --fat-tile --fat-tensorize="linear-bias=weights" --fat-pipeline | FileCheck %s --check-prefix=PIPE
// RUN: rm -rf %t && mkdir -p %t
// RUN: fa-t-opt %s --fat-to-ptx="linear-bias=weights output-dir=%t" -o /dev/null
// RUN: cat %t/*.ptx | FileCheck %s --check-prefix=PTX
// RUN: cat %t/*.json | FileCheck %s --check-prefix=MANIFEST
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t/*.ptx -o %t/a.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS %}

// linear-bias=weights in the Hopper kernel: ALiBi's G·j as the key block's
// offset in the softmax and weights ŵ_k on P. Each consumer tile computes
// the thread's weights once (fat.key_weights at key 0); each block's
// fat.key_weights gives only its offset (its weights unused), which both
// softmax ops read; P's rounding is followed by the multiply by the tile's
// weights, which P·V reads (with the ones columns: rowsum=mma). Two runs of
// 64 keys per block, an offset each (their weights equal). The kernel
// is named by the region under its own tag, apart from linear-bias=mma's.

// PIPE:        fat.launch @[[NAME:fat_attention_fwd_bf16_d64_h16_16_bhsd_causal_mod[0-9a-f]+_m[0-9]+n128]]
// PIPE-SAME:     linear_bias = "weights"
// PIPE-SAME:     rowsum = "mma"
// PIPE:        %[[W:[a-z0-9_]+]], %{{.+}}:2 = fat.key_weights at(%{{.+}}, %{{.+}}, %{{.+}}) scale %[[SC:[a-z0-9_]+]] captures(%{{.+}} : !llvm.ptr<1>)
// PIPE:        } : tensor<64x128xbf16, #fat.wgmma_fragment>, f32, f32
// PIPE:        %{{.+}}, %[[O:[a-z0-9_]+]]:2 = fat.key_weights at(%{{.+}}, %{{.+}}, %{{.+}}) scale %[[SC]]
// PIPE:        fat.softmax_max %{{.+}}, %{{.+}} scale %{{.+}} offset(%[[O]]#0, %[[O]]#1)
// PIPE-NEXT:   fat.softmax_exp %{{.+}}, %{{.+}} scale %{{.+}} offset(%[[O]]#0, %[[O]]#1)
// PIPE:        %[[P:[0-9]+]] = arith.truncf %{{.+}} : tensor<64x128xf32, #fat.wgmma_fragment> to tensor<64x128xbf16, #fat.wgmma_fragment>
// PIPE:        %[[PW:[0-9]+]] = arith.mulf %[[P]], %[[W]] : tensor<64x128xbf16, #fat.wgmma_fragment>
// PIPE-NOT:    fat.score_mod

// 16 exponentials for the tile's weights (8 pairs, one run) beside the
// softmax's, and one packed multiply per register of P (32 per P tile).
// PTX-COUNT-32: mul.rn.bf16x2
// MANIFEST:    "linear_bias": "weights"
// PTXAS-NOT:   error

func.func @alibi(%q: tensor<2x16x4096x64xbf16>, %k: tensor<2x16x4096x64xbf16>,
                 %v: tensor<2x16x4096x64xbf16>, %o: tensor<2x16x4096x64xbf16>,
                 %slopes: tensor<16xf32>) -> tensor<2x16x4096x64xbf16> {
  %r = fat.attention ins(%q, %k, %v : tensor<2x16x4096x64xbf16>, tensor<2x16x4096x64xbf16>, tensor<2x16x4096x64xbf16>)
      outs(%o : tensor<2x16x4096x64xbf16>) captures(%slopes : tensor<16xf32>) causal
      score {
      ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index, %s: tensor<16xf32>):
        %slope = tensor.extract %s[%h] : tensor<16xf32>
        %d = arith.subi %i, %j : index
        %d64 = arith.index_cast %d : index to i64
        %df = arith.sitofp %d64 : i64 to f32
        %bias = arith.mulf %slope, %df : f32
        %y = arith.subf %x, %bias : f32
        fat.yield %y : f32
      } -> tensor<2x16x4096x64xbf16>
  return %r : tensor<2x16x4096x64xbf16>
}
