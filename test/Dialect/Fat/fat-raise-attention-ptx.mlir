// RUN: rm -rf %t && mkdir -p %t
// RUN: fa-t-opt %s --fat-raise-attention --fat-to-ptx="sm=sm_90a output-dir=%t" -o %t/out.mlir
// RUN: ls %t | FileCheck %s --check-prefix=FILES
// RUN: cat %t/*.ptx | FileCheck %s --check-prefix=PTX
// RUN: FileCheck %s --check-prefix=IR < %t/out.mlir
// RUN: %if ptxas %{ %ptxas -arch=sm_90a %t/*.ptx -o %t/kernel.cubin %}

// The end-to-end path from a framework's linalg: torch-mlir's causal
// softmax(q @ kᵀ / 8) @ v on [2, 8, 256, 64] bf16 (batch_matmul on collapsed
// heads, f32 softmax, P rounded to bf16) is raised to fat.attention and
// compiled to a Hopper kernel by one fa-t-opt command.

// One kernel, causal, 8 query and 8 KV heads, D = 64, and its manifest.
// FILES:     fat_attention_fwd_bf16_d64_h8_8_bhsd_causal_{{.*}}.json
// FILES:     fat_attention_fwd_bf16_d64_h8_8_bhsd_causal_{{.*}}.ptx

// PTX:       .target sm_90a
// PTX:       .entry fat_attention_fwd_bf16_d64_h8_8_bhsd_causal_
// PTX-DAG:   cp.async.bulk.tensor.4d
// PTX-DAG:   wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// P·V is N = 72: the causal D = 64 kernel (ping-pong, 256 keys) sums the
// rows on the tensor cores.
// PTX-DAG:   wgmma.mma_async.sync.aligned.m64n72k16.f32.bf16.bf16

// The host side calls the kernel through fat.launch; no linalg is left.
// IR-NOT:    linalg.
// IR:        fat.launch @fat_attention_fwd_bf16_d64_h8_8_bhsd_causal_{{[a-z0-9_]+}}::@fat_attention_fwd_bf16_d64_h8_8_bhsd_causal_{{[a-z0-9_]+}} ins(%{{.+}}, %{{.+}}, %{{.+}} : tensor<2x8x256x64xbf16>, tensor<2x8x256x64xbf16>, tensor<2x8x256x64xbf16>)
// IR-SAME:     scale 1.250000e-01
// IR-NOT:    linalg.
// IR:        gpu.binary @fat_attention_fwd_bf16_d64_h8_8_bhsd_causal_

#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @causal_sdpa(%q: tensor<2x8x256x64xbf16>, %k: tensor<2x8x256x64xbf16>,
                       %v: tensor<2x8x256x64xbf16>) -> tensor<2x8x256x64xbf16> {
  %zero = arith.constant 0.000000e+00 : f32
  %zb = arith.constant 0.000000e+00 : bf16
  %ninf = arith.constant 0xFF800000 : f32
  %eight = arith.constant 8.000000e+00 : f64
  %qc = tensor.collapse_shape %q [[0, 1], [2], [3]] : tensor<2x8x256x64xbf16> into tensor<16x256x64xbf16>
  %kc = tensor.collapse_shape %k [[0, 1], [2], [3]] : tensor<2x8x256x64xbf16> into tensor<16x256x64xbf16>
  %vc = tensor.collapse_shape %v [[0, 1], [2], [3]] : tensor<2x8x256x64xbf16> into tensor<16x256x64xbf16>
  %kt0 = tensor.empty() : tensor<16x64x256xbf16>
  %kt = linalg.transpose ins(%kc : tensor<16x256x64xbf16>) outs(%kt0 : tensor<16x64x256xbf16>) permutation = [0, 2, 1]
  %s0 = tensor.empty() : tensor<16x256x256xf32>
  %s1 = linalg.fill ins(%zero : f32) outs(%s0 : tensor<16x256x256xf32>) -> tensor<16x256x256xf32>
  %s = linalg.batch_matmul ins(%qc, %kt : tensor<16x256x64xbf16>, tensor<16x64x256xbf16>) outs(%s1 : tensor<16x256x256xf32>) -> tensor<16x256x256xf32>
  // scores / 8, then -inf above the diagonal (torch.triu(full(-inf), 1) + s).
  %sm = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<16x256x256xf32>) outs(%s0 : tensor<16x256x256xf32>) {
  ^bb0(%in: f32, %out: f32):
    %d = arith.truncf %eight : f64 to f32
    %x = arith.divf %in, %d : f32
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %hide = arith.cmpi sgt, %j, %i : index
    %r = arith.select %hide, %ninf, %x : f32
    linalg.yield %r : f32
  } -> tensor<16x256x256xf32>
  %p32 = linalg.softmax dimension(2) ins(%sm : tensor<16x256x256xf32>) outs(%s0 : tensor<16x256x256xf32>) -> tensor<16x256x256xf32>
  %p0 = tensor.empty() : tensor<16x256x256xbf16>
  %p = linalg.copy ins(%p32 : tensor<16x256x256xf32>) outs(%p0 : tensor<16x256x256xbf16>) -> tensor<16x256x256xbf16>
  %o0 = tensor.empty() : tensor<16x256x64xbf16>
  %o1 = linalg.fill ins(%zb : bf16) outs(%o0 : tensor<16x256x64xbf16>) -> tensor<16x256x64xbf16>
  %o2 = linalg.batch_matmul ins(%p, %vc : tensor<16x256x256xbf16>, tensor<16x256x64xbf16>) outs(%o1 : tensor<16x256x64xbf16>) -> tensor<16x256x64xbf16>
  %o = tensor.expand_shape %o2 [[0, 1], [2], [3]] output_shape [2, 8, 256, 64] : tensor<16x256x64xbf16> into tensor<2x8x256x64xbf16>
  return %o : tensor<2x8x256x64xbf16>
}
