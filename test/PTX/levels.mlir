// RUN: rm -rf %t && mkdir -p %t
// RUN: fa-t-opt %fat_src_root/examples/attention.mlir --fat-to-ptx="output-dir=%t" --mlir-print-ir-after-all -o /dev/null 2> %t/levels.txt
// RUN: FileCheck %s < %t/levels.txt
// RUN: FileCheck %s --check-prefix=TENSORIZED < %t/levels.txt
// RUN: FileCheck %s --check-prefix=PIPELINED < %t/levels.txt

// --fat-to-ptx on the README's example prints every level, in order: the
// tiled form, the tensorized form (no tile op with a tensor-core form
// left), the pipelined form (the host's fat.launch, the kernel's producer
// and consumer regions, TMA and mbarrier ops), then NVVM and the tail.

// CHECK:       IR Dump After FatTile (fat-tile)
// CHECK:         scf.forall
// CHECK:           fat.qk
// CHECK:           fat.row_max
// CHECK:           fat.exp2
// CHECK:           fat.row_sum
// CHECK:           fat.pv
// CHECK:         } {fat.tile = {block_m = 128 : i64, block_n = 160 : i64, seq_len = 4096 : i64, stages = 2 : i64}}
// CHECK:       IR Dump After FatTensorize (fat-tensorize)
// CHECK-NOT:     {{fat\.(qk|pv|row_sum|row_max|exp2) }}
// CHECK:       IR Dump After FatPipeline (fat-pipeline)
// CHECK-NOT:     scf.forall
// CHECK:       IR Dump After ConvertFatToNVVM (convert-fat-to-nvvm)
// CHECK-NOT:     {{fat\.(warp_specialize|tile_loop|wgmma_async|wgmma_wait|operand_fence|schedule_fence|softmax_max|softmax_exp|mask|rescale|finalize|store_output|stage_output) |#fat.wgmma_fragment}}
// CHECK:       IR Dump After SCFToControlFlowPass (convert-scf-to-cf)
// CHECK:       IR Dump After GpuModuleToBinaryPass (gpu-module-to-binary)
// CHECK:       IR Dump After FatEmitKernels (fat-emit-kernels)

// TENSORIZED:  IR Dump After FatTensorize (fat-tensorize)
// TENSORIZED:    fat.wgmma {{.*}} transpose_b a_from smem shape [64, 160, 16]
// TENSORIZED:    fat.softmax_max {{.*}} lazy threshold
// TENSORIZED:    fat.softmax_exp
// TENSORIZED:    arith.truncf
// TENSORIZED:    fat.wgmma {{.*}} a_from registers shape [64, 128, 16]
// TENSORIZED:  IR Dump After FatPipeline (fat-pipeline)

// PIPELINED:   IR Dump After FatPipeline (fat-pipeline)
// PIPELINED:     fat.launch @[[K:fat_attention_fwd_bf16_d128_h16_4_bhsd_causal_lse_m128n160s2q2_opl8t132]]::@[[K]] ins(
// PIPELINED:     gpu.module @[[K]]
// Shared memory is three rings of buffers with their mbarriers: Q (two
// buffers), K and V (two stages each):
// PIPELINED:       %[[QR:[0-9]+]] = fat.ring %{{[0-9]+}} : !ring
// PIPELINED-NEXT:  %[[KR:[0-9]+]] = fat.ring %{{[0-9]+}} : !ring1
// PIPELINED-NEXT:  %[[VR:[0-9]+]] = fat.ring %{{[0-9]+}} : !ring2
// PIPELINED:       fat.warp_specialize %{{[a-z0-9_]+}} registers(24, 240) producer {
// Both roles run the persistent CTA's tiles (balanced causal pairs):
// PIPELINED:         fat.tile_loop pairs query_blocks(%{{[0-9]+}}) heads 16 batch(%{{[a-z0-9]+}}) ctas 132 {
// PIPELINED-NEXT:    ^bb0(%m_block: i32, %head: i32, %batch: i32, %ring_base: i32, %tile_index: i32):
// The producer copies whole tiles into the buffers it acquires, in the
// boxes the consumer's wgmma reads (K's box stride 160 rows · 128 bytes):
// PIPELINED:         %[[QB:[a-z0-9_]+]], %[[QF:[a-z0-9_]+]] = fat.ring_acquire %[[QR]]
// PIPELINED-NEXT:    fat.tma_load %{{.+}} to(%[[QB]] box_stride 16384) columns 128 barrier(%[[QF]])
// PIPELINED:         %[[KB:[a-z0-9_]+]], %[[KF:[a-z0-9_]+]] = fat.ring_acquire %[[KR]]
// PIPELINED-NEXT:    fat.tma_load %{{.+}} to(%[[KB]] box_stride 20480) columns 128 barrier(%[[KF]])
// PIPELINED:       } consumer {
// PIPELINED:         fat.tile_loop pairs query_blocks(
// PIPELINED:         fat.ring_wait %[[QR]]
// Each tensorized fat.wgmma is one fat.wgmma_async of the same instruction
// shape, its operands now the shared-memory boxes TMA filled:
// PIPELINED:         %[[S:[0-9]+]] = fat.wgmma_async a_smem(%{{[0-9]+}} box_stride 16384) b(%{{[0-9]+}} box_stride 20480) transpose_b k 128 shape [64, 160, 16] bf16
// PIPELINED:         fat.wgmma_wait pending(0) (%[[S]])
// The consumer's softmax keeps the tensorized level's ops, on one
// warpgroup's tile in the wgmma fragment layout (the causal edge blocks
// first through fat.mask):
// PIPELINED:         fat.mask %{{.+}} causal row_limits : tensor<64x160xf32, #fat.wgmma_fragment>
// PIPELINED:         fat.softmax_max %{{.+}} lazy threshold 8.000000e+00 : tensor<64x160xf32, #fat.wgmma_fragment>, tensor<64xf32, #fat.wgmma_fragment>
// PIPELINED:         fat.softmax_exp
// PIPELINED:         arith.truncf %{{.+}} : tensor<64x160xf32, #fat.wgmma_fragment> to tensor<64x160xbf16, #fat.wgmma_fragment>
// PIPELINED:         fat.rescale %{{.+}} warp_vote : tensor<64x128xf32, #fat.wgmma_fragment>, tensor<64xf32, #fat.wgmma_fragment>
// PIPELINED:         %[[OUT:[a-z0-9_]+]], %[[LSE:[a-z0-9_]+]] = fat.finalize
// PIPELINED:         fat.stage_output %[[OUT]] : tensor<64x128xbf16, #fat.wgmma_fragment> to
// PIPELINED:         fat.store_output lse %[[LSE]] : tensor<64xf32, #fat.wgmma_fragment> to
// PIPELINED:         fat.tile_yield blocks(
// PIPELINED:   IR Dump After ConvertFatToNVVM (convert-fat-to-nvvm)
