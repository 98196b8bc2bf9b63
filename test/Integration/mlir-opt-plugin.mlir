// REQUIRES: fat-plugin
// RUN: mlir-opt %s --load-dialect-plugin=%fat_plugin | FileCheck %s --check-prefix=PARSE
// RUN: mlir-opt %s --load-dialect-plugin=%fat_plugin --load-pass-plugin=%fat_plugin \
// RUN:   --pass-pipeline="builtin.module(fat-tile{block-m=64 block-n=64})" | FileCheck %s --check-prefix=TILE
// RUN: mlir-opt %s --load-dialect-plugin=%fat_plugin --load-pass-plugin=%fat_plugin \
// RUN:   --pass-pipeline="builtin.module(fat-to-ptx{sm=sm_90a block-m=128})" | FileCheck %s --check-prefix=PTX
// RUN: not mlir-opt %s 2>&1 | FileCheck %s --check-prefix=NOPLUGIN

// Stock mlir-opt (Debian's, on libMLIR.so) with fa-t as a plugin: the
// dialect plugin makes fat.attention parse, the pass plugin adds fa-t's
// passes and pipelines to its --pass-pipeline.

// NOPLUGIN: Dialect `fat' not found for custom op 'fat.attention'

// PARSE-LABEL: func.func @attention
// PARSE:         fat.attention ins(%{{.+}}, %{{.+}}, %{{.+}} : memref<2x4x100x64xf16>, memref<2x2x77x64xf16>, memref<2x2x77x64xf16>)
// PARSE-SAME:      causal

// The online softmax over 64-key blocks in a grid of 64-row query blocks:
//   m' = max(m, rowmax S), P = exp2(c(S - m')), O' = a*O + P*V.
// TILE-LABEL: func.func @attention
// TILE:         scf.forall ({{.+}}) = (0, 0, 0) to (2, 4, 100) step (1, 1, 64)
// TILE:           fat.qk
// TILE:           fat.row_max
// TILE:           fat.exp2
// TILE:           fat.pv
// TILE:           fat.finalize
// TILE-NOT:     fat.attention

// The whole fat-to-ptx pipeline: a gpu.binary whose object is the PTX.
// PTX: gpu.binary @[[NAME:fat_attention_fwd_f16_d64_h4_2_bhsd_causal_m128n128s2q2_oprt132]]
// PTX-SAME: .target sm_90a
// PTX-SAME: .entry [[NAME]](
// PTX-SAME: wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16
func.func @attention(%q: memref<2x4x100x64xf16>, %k: memref<2x2x77x64xf16>,
                     %v: memref<2x2x77x64xf16>, %o: memref<2x4x100x64xf16>) {
  fat.attention ins(%q, %k, %v : memref<2x4x100x64xf16>, memref<2x2x77x64xf16>,
                                 memref<2x2x77x64xf16>)
                outs(%o : memref<2x4x100x64xf16>) causal
  return
}
