// RUN: rm -rf %t && mkdir -p %t && fa-t-opt %s --fat-to-ptx="sm=sm_90a block-m=128 output-dir=%t" -o %t/out.mlir
// RUN: FileCheck %s --check-prefix=PTX < %t/fat_attention_fwd_bf16_d256_h8_8_bhsd_lse_m128n80s2_ol8t132.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t/fat_attention_fwd_bf16_d256_h8_8_bhsd_causal_lse_m128n80s2_ol8t132.ptx
// RUN: FileCheck %s --check-prefix=JSON < %t/fat_attention_fwd_bf16_d256_h8_8_bhsd_causal_lse_m128n80s2_ol8t132.json
// RUN: FileCheck %s --check-prefix=IR < %t/out.mlir
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t/fat_attention_fwd_bf16_d256_h8_8_bhsd_lse_m128n80s2_ol8t132.ptx -o %t/a.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS %}
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t/fat_attention_fwd_bf16_d256_h8_8_bhsd_causal_lse_m128n80s2_ol8t132.ptx -o %t/c.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS %}

// D = 256, bf16, with and without the causal mask, through the whole
// fat-to-ptx pipeline: the PTX holds the Hopper instructions the kernel is
// built from, ptxas accepts it for sm_90a without spilling, and the manifest
// describes the launch (docs/kernel-abi.md).

// PTX:       .version 8.0
// PTX:       .target sm_90a
// PTX:       .entry fat_attention_fwd_bf16_d256_
// PTX:       .param .align 64 .b8 {{.+}}_param_0[128]
// PTX:       .maxntid 384, 1, 1
// The code of the two roles may come in either order: CHECK-DAG.
// PTX-DAG:   mbarrier.init
// PTX-DAG:   setmaxnreg.dec.sync.aligned.u32 24
// PTX-DAG:   mbarrier.arrive.expect_tx
// PTX-DAG:   cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// PTX-DAG:   setmaxnreg.inc.sync.aligned.u32 240
// PTX-DAG:   mbarrier.try_wait.parity
// PTX-DAG:   wgmma.fence.sync.aligned
// PTX-DAG:   wgmma.mma_async.sync.aligned.m64n80k16.f32.bf16.bf16
// PTX-DAG:   wgmma.commit_group.sync.aligned
// PTX-DAG:   wgmma.wait_group.sync.aligned 0
// PTX-DAG:   ex2.approx.ftz.f32
// PTX-DAG:   cvt.rn.bf16x2.f32
// PTX-DAG:   wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16
// PTX-DAG:   mbarrier.arrive

// PTXAS:     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// PTXAS-NOT: C75{{[0-9][0-9]}}

// JSON:      "block": [
// JSON-NEXT:   384,
// JSON:      "causal": true,
// JSON:      "head_dim": 256,
// JSON:      "entry": "fat_attention_fwd_bf16_d256_h8_8_bhsd_causal_lse_m128n80s2_ol8t132",
// Causal, persistent (the default): at most 132 CTAs over the pairs of
// 128-row query blocks, ⌈Sq/256⌉·Hq·B units.
// JSON:      "grid": [
// JSON-NEXT:   {
// JSON-NEXT:     "ceildiv": 256,
// JSON-NEXT:     "max": 132,
// JSON-NEXT:     "symbol": "Sq",
// JSON-NEXT:     "times": [
// JSON-NEXT:       "Hq",
// JSON-NEXT:       "B"
// JSON:      "params": [
// JSON:          "kind": "tensor_map",
// JSON-NEXT:     "tensor": "q"
// JSON:          "kind": "f32",
// JSON-NEXT:     "symbol": "scale_log2e"
// JSON:      "ptx": "fat_attention_fwd_bf16_d256_h8_8_bhsd_causal_lse_m128n80s2_ol8t132.ptx",
// JSON:      "box": [
// JSON-NEXT:   64,
// JSON-NEXT:   128,

// After gpu-module-to-binary the kernels are gpu.binary objects.
// IR: gpu.binary @fat_attention_fwd_bf16_d256_
// IR: gpu.binary @fat_attention_fwd_bf16_d256_

func.func @plain(%q: memref<?x8x?x256xbf16>, %o: memref<?x8x?x256xbf16>, %l: memref<?x8x?xf32>) {
  fat.attention ins(%q, %q, %q : memref<?x8x?x256xbf16>, memref<?x8x?x256xbf16>, memref<?x8x?x256xbf16>)
      outs(%o : memref<?x8x?x256xbf16>) lse(%l : memref<?x8x?xf32>)
  return
}

func.func @causal(%q: memref<?x8x?x256xbf16>, %o: memref<?x8x?x256xbf16>, %l: memref<?x8x?xf32>) {
  fat.attention ins(%q, %q, %q : memref<?x8x?x256xbf16>, memref<?x8x?x256xbf16>, memref<?x8x?x256xbf16>)
      outs(%o : memref<?x8x?x256xbf16>) lse(%l : memref<?x8x?xf32>) causal
  return
}
