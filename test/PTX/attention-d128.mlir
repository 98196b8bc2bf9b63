// RUN: rm -rf %t && mkdir -p %t && fa-t-opt %s --fat-to-ptx="sm=sm_90a block-m=128 output-dir=%t" -o %t/out.mlir
// RUN: FileCheck %s --check-prefix=PTX < %t/fat_attention_fwd_bf16_d128_h16_16_bhsd_lse_m128n176s2_opt132.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t/fat_attention_fwd_bf16_d128_h16_16_bhsd_causal_lse_m128n128s2q2_opl8t132.ptx
// RUN: rm -rf %t/np && fa-t-opt %s --fat-to-ptx="persistent=off output-dir=%t/np" -o /dev/null
// RUN: FileCheck %s --check-prefix=JSON < %t/np/fat_attention_fwd_bf16_d128_h16_16_bhsd_causal_lse_m128n128s2_ol8.json
// RUN: FileCheck %s --check-prefix=IR < %t/out.mlir
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t/fat_attention_fwd_bf16_d128_h16_16_bhsd_lse_m128n176s2_opt132.ptx -o %t/a.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS %}
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t/fat_attention_fwd_bf16_d128_h16_16_bhsd_causal_lse_m128n128s2q2_opl8t132.ptx -o %t/c.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS %}
// RUN: rm -rf %t/p && fa-t-opt %s --fat-to-ptx="persistent=on pingpong=off num-sms=114 output-dir=%t/p" -o /dev/null
// RUN: FileCheck %s --check-prefix=PERSIST < %t/p/fat_attention_fwd_bf16_d128_h16_16_bhsd_causal_lse_m128n128s2q2_ol8t114c.json
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t/p/fat_attention_fwd_bf16_d128_h16_16_bhsd_causal_lse_m128n128s2q2_ol8t114c.ptx -o %t/p.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS %}

// D = 128, bf16, with and without the causal mask, through the whole
// fat-to-ptx pipeline: the PTX holds the Hopper instructions the kernel is
// built from, ptxas accepts it for sm_90a without spilling, and the manifest
// describes the launch (docs/kernel-abi.md).

// PTX:       .version 8.0
// PTX:       .target sm_90a
// PTX:       .entry fat_attention_fwd_bf16_d128_
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
// PTX-DAG:   wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// PTX-DAG:   wgmma.commit_group.sync.aligned
// PTX-DAG:   wgmma.wait_group.sync.aligned 0
// PTX-DAG:   ex2.approx.ftz.f32
// PTX-DAG:   cvt.rn.bf16x2.f32
// PTX-DAG:   wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// PTX-DAG:   mbarrier.arrive

// PTXAS:     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// PTXAS-NOT: C75{{[0-9][0-9]}}

// Persistent (num-sms = 114, an H100 PCIe): one grid dimension, the work
// units bounded by the SMs, and B passed as the last parameter. The units
// of a causal kernel are pairs of 128-row query blocks: ⌈Sq/256⌉ per head.
// PERSIST:      "grid": [
// PERSIST-NEXT:   {
// PERSIST-NEXT:     "ceildiv": 256,
// PERSIST-NEXT:     "max": 114,
// PERSIST-NEXT:     "symbol": "Sq",
// PERSIST-NEXT:     "times": [
// PERSIST-NEXT:       "Hq",
// PERSIST-NEXT:       "B"
// PERSIST-NEXT:     ]
// PERSIST-NEXT:   }
// PERSIST-NEXT: ],
// PERSIST:          "symbol": "scale_log2e"
// PERSIST-NEXT:   },
// PERSIST-NEXT:   {
// PERSIST-NEXT:     "kind": "i32",
// PERSIST-NEXT:     "symbol": "B"
// PERSIST-NEXT:   }
// PERSIST-NEXT: ],
// PERSIST:      "persistent": true,
// JSON:      "block": [
// JSON-NEXT:   384,
// JSON:      "causal": true,
// JSON:      "head_dim": 128,
// JSON:      "entry": "fat_attention_fwd_bf16_d128_h16_16_bhsd_causal_lse_m128n128s2_ol8",
// Causal with one CTA per tile (persistent=off): heads in x, query blocks
// (longest first) in y.
// JSON:      "grid": [
// JSON-NEXT:   {
// JSON-NEXT:     "symbol": "Hq"
// JSON-NEXT:   },
// JSON-NEXT:   {
// JSON-NEXT:     "ceildiv": 128,
// JSON-NEXT:     "symbol": "Sq"
// JSON:      "params": [
// JSON:          "kind": "tensor_map",
// JSON-NEXT:     "tensor": "q"
// JSON:          "kind": "f32",
// JSON-NEXT:     "symbol": "scale_log2e"
// JSON:      "ptx": "fat_attention_fwd_bf16_d128_h16_16_bhsd_causal_lse_m128n128s2_ol8.ptx",
// JSON:      "box": [
// JSON-NEXT:   64,
// JSON-NEXT:   128,

// After gpu-module-to-binary the kernels are gpu.binary objects.
// IR: gpu.binary @fat_attention_fwd_bf16_d128_
// IR: gpu.binary @fat_attention_fwd_bf16_d128_

func.func @plain(%q: memref<?x16x?x128xbf16>, %o: memref<?x16x?x128xbf16>, %l: memref<?x16x?xf32>) {
  fat.attention ins(%q, %q, %q : memref<?x16x?x128xbf16>, memref<?x16x?x128xbf16>, memref<?x16x?x128xbf16>)
      outs(%o : memref<?x16x?x128xbf16>) lse(%l : memref<?x16x?xf32>)
  return
}

func.func @causal(%q: memref<?x16x?x128xbf16>, %o: memref<?x16x?x128xbf16>, %l: memref<?x16x?xf32>) {
  fat.attention ins(%q, %q, %q : memref<?x16x?x128xbf16>, memref<?x16x?x128xbf16>, memref<?x16x?x128xbf16>)
      outs(%o : memref<?x16x?x128xbf16>) lse(%l : memref<?x16x?xf32>) causal
  return
}
