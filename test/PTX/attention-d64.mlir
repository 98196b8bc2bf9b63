// RUN: rm -rf %t && mkdir -p %t && fa-t-opt %s --fat-to-ptx="sm=sm_90a block-m=128 output-dir=%t" -o %t/out.mlir
// RUN: FileCheck %s --check-prefixes=PTX,LSE64 < %t/fat_attention_fwd_bf16_d64_h16_16_bhsd_lse_m128n128s2q2_ot132c.ptx
// RUN: FileCheck %s --check-prefixes=PTX,AUTO64 < %t/fat_attention_fwd_bf16_d64_h16_16_bhsd_m128n128s2q2_ort132c.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t/fat_attention_fwd_bf16_d64_h16_16_bhsd_m128n128s2q2_ort132c.ptx -o %t/b.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS %}
// RUN: FileCheck %s --check-prefixes=PTX,CAUSAL64 < %t/fat_attention_fwd_bf16_d64_h16_16_bhsd_causal_lse_m128n128s2q2_opt132.ptx
// RUN: FileCheck %s --check-prefix=JSON < %t/fat_attention_fwd_bf16_d64_h16_16_bhsd_causal_lse_m128n128s2q2_opt132.json
// RUN: FileCheck %s --check-prefix=IR < %t/out.mlir
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t/fat_attention_fwd_bf16_d64_h16_16_bhsd_lse_m128n128s2q2_ot132c.ptx -o %t/a.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS %}
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t/fat_attention_fwd_bf16_d64_h16_16_bhsd_causal_lse_m128n128s2q2_opt132.ptx -o %t/c.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS %}
// RUN: rm -rf %t/auto && mkdir -p %t/auto && fa-t-opt %s --fat-to-ptx="output-dir=%t/auto" -o /dev/null
// RUN: FileCheck %s --check-prefix=M192 < %t/auto/fat_attention_fwd_bf16_d64_h16_16_bhsd_m192n128s2q2_ort132c.ptx
// RUN: FileCheck %s --check-prefix=M192JSON < %t/auto/fat_attention_fwd_bf16_d64_h16_16_bhsd_m192n128s2q2_ort132c.json
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t/auto/fat_attention_fwd_bf16_d64_h16_16_bhsd_m192n128s2q2_ort132c.ptx -o %t/e.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS %}
// RUN: rm -rf %t/poly && mkdir -p %t/poly && fa-t-opt %s --fat-to-ptx="exp2-poly=0.5 output-dir=%t/poly" -o /dev/null
// RUN: FileCheck %s --check-prefix=POLY < %t/poly/fat_attention_fwd_bf16_d64_h16_16_bhsd_causal_lse_m128n128s2q2_ope50t132.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t/poly/fat_attention_fwd_bf16_d64_h16_16_bhsd_causal_lse_m128n128s2q2_ope50t132.ptx -o %t/d.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS %}

// D = 64, bf16, with and without the causal mask, through the whole
// fat-to-ptx pipeline: the PTX holds the Hopper instructions the kernel is
// built from, ptxas accepts it for sm_90a without spilling, and the manifest
// describes the launch (docs/kernel-abi.md).

// PTX:       .version 8.0
// PTX:       .target sm_90a
// PTX:       .entry fat_attention_fwd_bf16_d64_
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
// PTX-DAG:   mbarrier.arrive
// The automatic schedule (fat-tensorize, fat-pipeline) of D = 64 without a
// mask and without LSE: row sums on the tensor cores — P·V is m64n72k16, 8
// ones columns beside Dv = 64, filled once and fenced for the async proxy.
// With the LSE (whose accuracy the rounded P would cost) or the causal mask:
// the vector row sums, P·V m64n64k16. No ping-pong in any.
// AUTO64-DAG:   wgmma.mma_async.sync.aligned.m64n72k16.f32.bf16.bf16
// AUTO64-DAG:   fence.proxy.async.shared::cta
// AUTO64-NOT:   bar.arrive
// LSE64-DAG:    wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16
// LSE64-NOT:    m64n72k16
// CAUSAL64-DAG: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16
// CAUSAL64-NOT: bar.arrive

// block-m = 0 (defaultBlockM) without a mask: 192 query rows, three
// consumer warpgroups of 64 rows (512 threads). The producer gives up its
// registers (24) so that each consumer thread may use 160 (128·24 +
// 384·160 ≤ 65536); the empty barriers count all 384 consumer threads; Q is
// one TMA box of 192 rows; the persistent grid counts 192-row blocks.
// M192:      .maxntid 512, 1, 1
// M192:      mov.b32 [[CONSUMERS:%r[0-9]+]], 384;
// M192:      mbarrier.init.shared.b64 {{.+}}, [[CONSUMERS]];
// M192-DAG:  setmaxnreg.dec.sync.aligned.u32 24
// M192-DAG:  setmaxnreg.inc.sync.aligned.u32 160
// M192-DAG:  wgmma.mma_async.sync.aligned.m64n72k16.f32.bf16.bf16
// M192JSON:  "block": [
// M192JSON-NEXT: 512,
// M192JSON:  "ceildiv": 192,
// M192JSON:  "tensor_maps": [
// M192JSON:    "box": [
// M192JSON-NEXT: 64,
// M192JSON-NEXT: 192,

// exp2-poly=0.5: half of each row's exponentials are the FMA-pipe
// polynomial, whose floor is an add in round-down mode; the kernel still
// fits its registers (PTXAS below).
// POLY:      .entry fat_attention_fwd_bf16_d64_{{.+}}_ope50t132(
// POLY:      add.rm.ftz.f32
// POLY:      ex2.approx.ftz.f32
// PTXAS:     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// PTXAS-NOT: C75{{[0-9][0-9]}}

// JSON:      "block": [
// JSON-NEXT:   384,
// JSON:      "causal": true,
// JSON:      "head_dim": 64,
// JSON:      "entry": "fat_attention_fwd_bf16_d64_h16_16_bhsd_causal_lse_m128n128s2q2_opt132",
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
// JSON:      "ptx": "fat_attention_fwd_bf16_d64_h16_16_bhsd_causal_lse_m128n128s2q2_opt132.ptx",
// JSON:      "box": [
// JSON-NEXT:   64,
// JSON-NEXT:   128,

// After gpu-module-to-binary the kernels are gpu.binary objects.
// IR: gpu.binary @fat_attention_fwd_bf16_d64_
// IR: gpu.binary @fat_attention_fwd_bf16_d64_
// IR: gpu.binary @fat_attention_fwd_bf16_d64_

func.func @plain(%q: memref<?x16x?x64xbf16>, %o: memref<?x16x?x64xbf16>, %l: memref<?x16x?xf32>) {
  fat.attention ins(%q, %q, %q : memref<?x16x?x64xbf16>, memref<?x16x?x64xbf16>, memref<?x16x?x64xbf16>)
      outs(%o : memref<?x16x?x64xbf16>) lse(%l : memref<?x16x?xf32>)
  return
}

func.func @causal(%q: memref<?x16x?x64xbf16>, %o: memref<?x16x?x64xbf16>, %l: memref<?x16x?xf32>) {
  fat.attention ins(%q, %q, %q : memref<?x16x?x64xbf16>, memref<?x16x?x64xbf16>, memref<?x16x?x64xbf16>)
      outs(%o : memref<?x16x?x64xbf16>) lse(%l : memref<?x16x?xf32>) causal
  return
}

func.func @no_lse(%q: memref<?x16x?x64xbf16>, %o: memref<?x16x?x64xbf16>) {
  fat.attention ins(%q, %q, %q : memref<?x16x?x64xbf16>, memref<?x16x?x64xbf16>, memref<?x16x?x64xbf16>)
      outs(%o : memref<?x16x?x64xbf16>)
  return
}
