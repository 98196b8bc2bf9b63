// RUN: rm -rf %t && mkdir -p %t/one %t/step
// RUN: fa-t-opt %s --fat-to-ptx="seq-len=4096 output-dir=%t/one" -o /dev/null
// RUN: fa-t-opt %s --fat-tile="seq-len=4096" -o %t/tiled.mlir
// RUN: fa-t-opt %t/tiled.mlir --fat-tensorize -o %t/tensorized.mlir
// RUN: fa-t-opt %t/tensorized.mlir --fat-pipeline -o %t/pipelined.mlir
// RUN: fa-t-opt %t/pipelined.mlir --convert-fat-to-nvvm -o %t/nvvm.mlir
// RUN: fa-t-opt %t/nvvm.mlir --pass-pipeline="builtin.module(gpu.module(convert-scf-to-cf,convert-nvvm-to-llvm,convert-gpu-to-nvvm,reconcile-unrealized-casts,canonicalize,cse),nvvm-attach-target{chip=sm_90a features=+ptx80 O=3},gpu-module-to-binary{format=isa},fat-emit-kernels{output-dir=%t/step})" -o /dev/null
// RUN: diff -r %t/one %t/step
// RUN: ls %t/step | FileCheck %s --check-prefix=FILES
// The other schedules, the same way: the plain loop without persistent CTAs
// and forced FlashAttention-T choices (row sums on the tensor cores, a
// quarter of the exponentials as the polynomial, O stored from registers).
// RUN: mkdir -p %t/one2 %t/step2
// RUN: fa-t-opt %s --fat-to-ptx="overlap=off persistent=off rowsum=mma exp2-poly=0.25 o-store=direct output-dir=%t/one2" -o /dev/null
// RUN: fa-t-opt %s --fat-tile -o %t/tiled2.mlir
// RUN: fa-t-opt %t/tiled2.mlir --fat-tensorize="rowsum=mma exp2-poly=0.25" -o %t/tensorized2.mlir
// RUN: fa-t-opt %t/tensorized2.mlir --fat-pipeline="overlap=off persistent=off o-store=direct" -o %t/pipelined2.mlir
// RUN: fa-t-opt %t/pipelined2.mlir --convert-fat-to-nvvm -o %t/nvvm2.mlir
// RUN: fa-t-opt %t/nvvm2.mlir --pass-pipeline="builtin.module(gpu.module(convert-scf-to-cf,convert-nvvm-to-llvm,convert-gpu-to-nvvm,reconcile-unrealized-casts,canonicalize,cse),nvvm-attach-target{chip=sm_90a features=+ptx80 O=3},gpu-module-to-binary{format=isa},fat-emit-kernels{output-dir=%t/step2})" -o /dev/null
// RUN: diff -r %t/one2 %t/step2
// RUN: ls %t/step2 | FileCheck %s --check-prefix=FILES2
// RUN: FileCheck %s --check-prefix=TILED < %t/tiled.mlir
// RUN: FileCheck %s --check-prefix=TENSORIZED < %t/tensorized.mlir
// RUN: FileCheck %s --check-prefix=PIPELINED < %t/pipelined.mlir
// RUN: FileCheck %s --check-prefix=NVVM < %t/nvvm.mlir

// Each pass of --fat-to-ptx alone, on the printed output of the one
// before, gives the same PTX and manifests as the one-shot pipeline (the
// pass list after convert-fat-to-nvvm is the one FatToPTX.cpp appends).

// FILES-DAG: fat_attention_fwd_bf16_d128_h16_16_bhsd_causal_m128n160s2q2_opl8t132.json
// FILES-DAG: fat_attention_fwd_bf16_d128_h16_16_bhsd_causal_m128n160s2q2_opl8t132.ptx
// FILES-DAG: fat_attention_fwd_bf16_d64_h16_16_bhsd_lse_m192n128s2q2_ot132c.json
// FILES-DAG: fat_attention_fwd_bf16_d64_h16_16_bhsd_lse_m192n128s2q2_ot132c.ptx

// FILES2:    fat_attention_fwd_bf16_d128_h16_16_bhsd_causal_m128n128s2g_nrl8e25.json
// FILES2:    fat_attention_fwd_bf16_d128_h16_16_bhsd_causal_m128n128s2g_nrl8e25.ptx
// FILES2:    fat_attention_fwd_bf16_d64_h16_16_bhsd_lse_m192n128s2_nre25.json
// FILES2:    fat_attention_fwd_bf16_d64_h16_16_bhsd_lse_m192n128s2_nre25.ptx

// The levels: the tiles (the kernel's blocks, 128 × 160 tuned for 4k
// keys), their tensor-core form, then the host's launch of the kernel built
// from it.
// TILED-LABEL:   func.func @causal_d128
// TILED:           scf.forall
// TILED:             fat.qk {{.*}} -> tensor<128x160xf32>
// TILED:             fat.mask {{.*}} causal
// TILED:             fat.row_sum
// TILED:             fat.pv
// TILED:           } {fat.tile = {block_m = 128 : i64, block_n = 160 : i64, seq_len = 4096 : i64, stages = 2 : i64}}
// TENSORIZED-LABEL: func.func @causal_d128
// TENSORIZED-NOT:  fat.qk
// TENSORIZED:      fat.wgmma {{.*}} transpose_b a_from smem shape [64, 160, 16]
// TENSORIZED:      fat.softmax_max {{.*}} lazy threshold 8.0
// TENSORIZED:      fat.wgmma {{.*}} a_from registers shape [64, 128, 16]
// TENSORIZED-NOT:  fat.pv
// TENSORIZED-NOT:  fat.row_sum
// TENSORIZED:      } {fat.schedule = {{{.*}}rescale = "lazy"{{.*}}}, fat.tile =
// PIPELINED-LABEL: func.func @causal_d128
// PIPELINED-NOT:   scf.forall
// PIPELINED:       fat.launch @[[KERNEL:fat_attention_fwd_bf16_d128_h16_16_bhsd_causal_m128n160s2q2_opl8t132]]::@[[KERNEL]] ins(
// PIPELINED-SAME:    diagonal(%{{[a-z0-9_]+}}) scale 0.0883883461 {fat.schedule = {block_m = 128 : i64, block_n = 160 : i64
// PIPELINED:     gpu.module @fat_attention_fwd_bf16_d128
// PIPELINED:       fat.warp_specialize %{{[0-9]+}} registers(24, 240) producer {
// PIPELINED:         fat.tile_loop pairs query_blocks(
// PIPELINED:         fat.tma_load
// PIPELINED:       } consumer {
// PIPELINED:         fat.tile_loop pairs query_blocks(
// PIPELINED:         fat.wgmma_wait pending(1)
// PIPELINED:         fat.schedule_fence
// PIPELINED-NEXT:    fat.wgmma_wait pending(0)
// PIPELINED:     gpu.module @fat_attention_fwd_bf16_d64
// PIPELINED:       fat.warp_specialize %{{[0-9]+}} registers(24, 160) producer {
// PIPELINED:       } consumer {
// The tile overlap's pending tile ({O, m, l, P, id}) carried across tiles.
// PIPELINED:         fat.tile_loop query_blocks(%{{[0-9]+}}) heads 16 batch(%{{[a-z0-9]+}}) ctas 132 iter_args(%{{.+}} : tensor<64x64xf32, #fat.wgmma_fragment>, tensor<64xf32, #fat.wgmma_fragment>, tensor<64xf32, #fat.wgmma_fragment>, tensor<64x128xbf16, #fat.wgmma_fragment>, i32)
// NVVM-NOT:      fat.tile_loop
// NVVM-NOT:      fat.warp_specialize
// NVVM-NOT:      fat.operand_fence
// NVVM-NOT:      fat.wgmma_wait
// NVVM-NOT:      fat.schedule_fence

func.func @causal_d128(%q: memref<?x16x?x128xbf16>, %o: memref<?x16x?x128xbf16>) {
  fat.attention ins(%q, %q, %q : memref<?x16x?x128xbf16>, memref<?x16x?x128xbf16>,
                                 memref<?x16x?x128xbf16>) outs(%o : memref<?x16x?x128xbf16>) causal
  return
}

func.func @d64_lse(%q: tensor<?x16x?x64xbf16>, %o: tensor<?x16x?x64xbf16>,
                   %l: tensor<?x16x?xf32>) -> (tensor<?x16x?x64xbf16>, tensor<?x16x?xf32>) {
  %r:2 = fat.attention ins(%q, %q, %q : tensor<?x16x?x64xbf16>, tensor<?x16x?x64xbf16>,
                                        tensor<?x16x?x64xbf16>)
      outs(%o : tensor<?x16x?x64xbf16>) lse(%l : tensor<?x16x?xf32>)
      -> tensor<?x16x?x64xbf16>, tensor<?x16x?xf32>
  return %r#0, %r#1 : tensor<?x16x?x64xbf16>, tensor<?x16x?xf32>
}
