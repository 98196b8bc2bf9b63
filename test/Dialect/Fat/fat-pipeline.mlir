// RUN: fa-t-opt %s --fat-tile --fat-tensorize --fat-pipeline -split-input-file | FileCheck %s
// RUN: fa-t-opt %s --fat-tile --fat-tensorize --fat-pipeline="overlap=off" -split-input-file | FileCheck %s --check-prefix=ALONE
// RUN: fa-t-opt %s --fat-tile --fat-tensorize="rowsum=vector rescale=lazy rescale-threshold=6" --fat-pipeline="overlap=off" -split-input-file | FileCheck %s --check-prefix=FORCED
// RUN: fa-t-opt %s --fat-tile --fat-tensorize --fat-pipeline --convert-fat-to-nvvm -split-input-file | FileCheck %s --check-prefix=KERNEL
// RUN: fa-t-opt %s --fat-tile --fat-tensorize --fat-pipeline="persistent=on pingpong=off tile-overlap=off" --convert-fat-to-nvvm -split-input-file | FileCheck %s --check-prefix=PERSIST
// RUN: fa-t-opt %s --fat-tile --fat-tensorize --fat-pipeline="persistent=on pingpong=on" --convert-fat-to-nvvm -split-input-file | FileCheck %s --check-prefix=PERSIST-PP
// RUN: fa-t-opt %s --fat-tile --fat-tensorize --fat-pipeline="persistent=on pingpong=on" -split-input-file | FileCheck %s --check-prefix=PP-PIPE
// RUN: fa-t-opt %s --fat-tile --fat-tensorize --fat-pipeline -split-input-file | FileCheck %s --check-prefix=GEOM
// RUN: fa-t-opt %s --fat-tile="block-m=64" --fat-tensorize --fat-pipeline -split-input-file | FileCheck %s --check-prefix=M64
// RUN: not fa-t-opt %s --fat-tile --fat-tensorize --fat-pipeline="pingpong=sometimes" -split-input-file 2>&1 | FileCheck %s --check-prefix=BADPP

// fat-pipeline records the asynchronous schedule in the fat.schedule of the
// fat.launch that replaces the tensorized loop, beside
// fat-tensorize's keys, and builds the kernel (Pipeline.cpp); the
// dictionary then holds what the kernel runs. Cost model (docs/perf-log.md): every
// op gets the intra-warpgroup overlap; ops without a window persistent CTAs;
// ping-pong turns with two consumer warpgroups (block-m = 128) under a
// causal mask or at D = 128; tile overlap where persistent CTAs have no
// turns. A forced choice marks the schedule forced, whichever pass forced it.

// D = 64 without a mask: three consumer warpgroups (192 rows) and no turns,
// so tile overlap (the c suffix of the kernel name).
// CHECK-LABEL: func.func @d64
// CHECK:         fat.launch
// CHECK-SAME:      fat.schedule = {block_m = 192 : i64, block_n = 128 : i64, exp2_poly = 0.000000e+00 : f64, forced = false, mask_form = "keys", o_store = "direct", overlap = true, persistent = true, pingpong = false, pv_wait = "early", q_buffers = 2 : i64, rescale = "always", rescale_threshold = 8.000000e+00 : f64, row_max = "online", rowsum = "mma", stages = 2 : i64, tail_split = false, tile_overlap = true, tile_scheduler = "static"}
// ALONE-LABEL: func.func @d64
// ALONE:         fat.schedule = {block_m = 192 : i64, block_n = 128 : i64, exp2_poly = 0.000000e+00 : f64, forced = true, mask_form = "keys", o_store = "direct", overlap = false, persistent = true, pingpong = false, pv_wait = "early", q_buffers = 2 : i64, rescale = "always", rescale_threshold = 8.000000e+00 : f64, row_max = "online", rowsum = "mma", stages = 2 : i64, tail_split = false, tile_overlap = false, tile_scheduler = "static"}
// FORCED-LABEL: func.func @d64
// FORCED:         fat.schedule = {block_m = 192 : i64, block_n = 128 : i64, exp2_poly = 0.000000e+00 : f64, forced = true, mask_form = "keys", o_store = "direct", overlap = false, persistent = true, pingpong = false, pv_wait = "early", q_buffers = 2 : i64, rescale = "lazy", rescale_threshold = 6.000000e+00 : f64, row_max = "online", rowsum = "vector", stages = 2 : i64, tail_split = false, tile_overlap = false, tile_scheduler = "static"}
// KERNEL:       gpu.module @fat_attention_fwd_bf16_d64_h8_8_bhsd_m192n128s2q2_ort132c {
func.func @d64(%q: memref<?x8x?x64xbf16>, %o: memref<?x8x?x64xbf16>) {
  fat.attention ins(%q, %q, %q : memref<?x8x?x64xbf16>, memref<?x8x?x64xbf16>, memref<?x8x?x64xbf16>)
      outs(%o : memref<?x8x?x64xbf16>)
  return
}

// -----

// The causal mask gets persistent CTAs too (pairs of query blocks as work
// units) and ping-pong with them.
// CHECK-LABEL: func.func @d64_causal
// With one consumer warpgroup (block-m = 64) there is no one to take turns
// with: no automatic ping-pong.
// M64-LABEL:   func.func @d64_causal
// M64:           persistent = true, pingpong = false
// CHECK:         fat.schedule = {block_m = 128 : i64, block_n = 128 : i64, exp2_poly = 0.000000e+00 : f64, forced = false, mask_form = "rows", o_store = "direct", overlap = true, persistent = true, pingpong = true, pv_wait = "early", q_buffers = 2 : i64, rescale = "always", rescale_threshold = 8.000000e+00 : f64, row_max = "online", rowsum = "mma", stages = 2 : i64, tail_split = true, tile_overlap = false, tile_scheduler = "static"}
// ALONE-LABEL: func.func @d64_causal
// ALONE:         fat.schedule = {block_m = 128 : i64, block_n = 128 : i64, exp2_poly = 0.000000e+00 : f64, forced = true, mask_form = "rows", o_store = "direct", overlap = false, persistent = true, pingpong = false, pv_wait = "early", q_buffers = 2 : i64, rescale = "always", rescale_threshold = 8.000000e+00 : f64, row_max = "online", rowsum = "mma", stages = 2 : i64, tail_split = false, tile_overlap = false, tile_scheduler = "static"}
// KERNEL:       gpu.module @fat_attention_fwd_bf16_d64_h8_8_bhsd_causal_m128n128s2q2_oprt132 {
// persistent=on: B is the last parameter; the producer (and then the
// consumers) loop over work units u = blockIdx.x, + 132, … < P·8·B (the
// launch has min(P·8·B, 132) CTAs), carrying the ring position and the tile
// index. Causal units are pairs of query blocks of one head, P = ⌈nM/2⌉:
// one while loop over positions w = 2u + k from 2·blockIdx.x, block p for
// k = 0 and nM − 1 − p for k = 1; next w + 1 (or w + 264 when the pair is
// one block), then w + 263. Q has two buffers (q2), a ring of two
// stages: tile i uses buffer i mod 2 — full barrier i mod 2, empty barrier
// 2 + i mod 2 of the ring's barriers at 131072 — and the producer waits on
// the empty one with the parity of the buffer's use count ⌊i/2⌋ flipped
// before loading Q into buffer (i mod 2)·16 KB; the K/V rings' stage is
// (ring + j − kvLo) mod 2. (fat-tensorize chose the
// tensor-core row sums, predicting the automatic ping-pong that this
// fat-pipeline run then forces off: _ort132.)
// PERSIST:      llvm.func @fat_attention_fwd_bf16_d64_h8_8_bhsd_causal_m128n128s2q2_ort132(
// PERSIST-SAME:   %[[SEQQ:[a-z0-9]+]]: i32, %{{[a-z0-9]+}}: i32, %{{[a-z0-9]+}}: i32, %{{[a-z0-9]+}}: f32, %[[B:[a-z0-9]+]]: i32)
// PERSIST:        %[[SQ:[0-9]+]] = arith.addi %[[SEQQ]], %c127_i32
// PERSIST:        %[[NM:[0-9]+]] = arith.divui %[[SQ]], %c128_i32
// PERSIST:        %[[NM1:[0-9]+]] = arith.addi %[[NM]], %c1_i32
// PERSIST:        %[[P:[0-9]+]] = arith.divui %[[NM1]], %c2_i32
// PERSIST:        %[[HB:[a-z0-9_]+]] = arith.muli %c8_i32, %[[B]] : i32
// PERSIST:        %[[U:[a-z0-9_]+]] = arith.muli %[[P]], %[[HB]] : i32
// PERSIST:        %[[FIRST:[a-z0-9_]+]] = nvvm.read.ptx.sreg.ctaid.x : i32
// PERSIST:        %[[END:[a-z0-9_]+]] = arith.muli %[[U]], %c2_i32
// PERSIST:        %[[W0:[a-z0-9_]+]] = arith.muli %[[FIRST]], %c2_i32
// PERSIST:        scf.while (%[[WB:[a-z0-9_]+]] = %[[W0]], %{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}) : (i32, i32, i32) -> (i32, i32, i32) {
// PERSIST:          arith.cmpi ult, %[[WB]], %[[END]]
// PERSIST:        } do {
// PERSIST:        ^bb0(%[[W:[a-z0-9_]+]]: i32, %[[RING:[a-z0-9_]+]]: i32, %[[IDX:[a-z0-9_]+]]: i32):
// PERSIST:          %[[UNIT:[a-z0-9_]+]] = arith.shrui %[[W]], %c1_i32
// PERSIST:          %[[K:[a-z0-9_]+]] = arith.andi %[[W]], %c1_i32
// PERSIST:          %[[SECOND:[a-z0-9_]+]] = arith.cmpi ne, %[[K]], %c0_i32
// PERSIST:          %[[PP:[a-z0-9_]+]] = arith.remui %[[UNIT]], %[[P]]
// PERSIST:          %[[LAST:[a-z0-9_]+]] = arith.subi %[[NM]], %c1_i32
// PERSIST:          %[[LONG:[a-z0-9_]+]] = arith.subi %[[LAST]], %[[PP]]
// PERSIST:          %[[TWO:[a-z0-9_]+]] = arith.cmpi ugt, %[[LONG]], %[[PP]]
// PERSIST:          %[[W1:[a-z0-9_]+]] = arith.addi %[[W]], %c1_i32
// PERSIST:          %[[WG:[a-z0-9_]+]] = arith.addi %[[W]], %c264_i32
// PERSIST:          %[[AFTER0:[a-z0-9_]+]] = arith.select %[[TWO]], %[[W1]], %[[WG]]
// PERSIST:          %[[WG1:[a-z0-9_]+]] = arith.addi %[[W]], %c263_i32
// PERSIST:          %[[NEXT:[a-z0-9_]+]] = arith.select %[[SECOND]], %[[WG1]], %[[AFTER0]]
// PERSIST:          %[[M:[a-z0-9_]+]] = arith.select %[[SECOND]], %[[LONG]], %[[PP]]
// PERSIST:          arith.muli %[[M]], %c128_i32
// PERSIST:          %[[SLOT:[a-z0-9_]+]] = arith.remui %[[IDX]], %c2_i32
// PERSIST:          %[[USES:[a-z0-9_]+]] = arith.divui %[[IDX]], %c2_i32
// PERSIST:          %[[PAR:[a-z0-9_]+]] = arith.andi %[[USES]], %c1_i32
// PERSIST:          %[[FULLB:[a-z0-9_]+]] = arith.muli %[[SLOT]], %c8_i32
// PERSIST:          %[[FULLO:[a-z0-9_]+]] = arith.addi %c131072_i32, %[[FULLB]]
// PERSIST:          %[[QFULL:[a-z0-9_]+]] = llvm.getelementptr %{{.+}}[%[[FULLO]]]
// PERSIST:          %[[EMPTYI:[a-z0-9_]+]] = arith.addi %[[SLOT]], %c2_i32
// PERSIST:          %[[EMPTYB:[a-z0-9_]+]] = arith.muli %[[EMPTYI]], %c8_i32
// PERSIST:          %[[EMPTYO:[a-z0-9_]+]] = arith.addi %c131072_i32{{[_0-9]*}}, %[[EMPTYB]]
// PERSIST:          %[[QEMPTY:[a-z0-9_]+]] = llvm.getelementptr %{{.+}}[%[[EMPTYO]]]
// PERSIST:          %[[FLIP:[a-z0-9_]+]] = arith.xori %[[PAR]], %c1_i32
// PERSIST:          nvvm.mbarrier.try_wait.parity %[[QEMPTY]], %[[FLIP]]
// PERSIST:          nvvm.mbarrier.arrive.expect_tx %[[QFULL]], %c16384_i32
// PERSIST:          %[[QOFF:[a-z0-9_]+]] = arith.muli %[[SLOT]], %c16384_i32
// PERSIST:          %[[QOFF0:[a-z0-9_]+]] = arith.addi %c0_i32{{[_0-9]*}}, %[[QOFF]]
// PERSIST:          %[[QBUF:[a-z0-9_]+]] = llvm.getelementptr %{{.+}}[%[[QOFF0]]]
// PERSIST:          %[[QDST:[a-z0-9_]+]] = llvm.addrspacecast %[[QBUF]]
// PERSIST:          nvvm.cp.async.bulk.tensor.shared.cluster.global %[[QDST]], %{{.+}}, %[[QFULL]]
// PERSIST:          scf.for %[[J:[a-z0-9_]+]] = %[[LO:[a-z0-9_]+]] to
// PERSIST:            %[[OFF:[a-z0-9_]+]] = arith.subi %[[J]], %[[LO]]
// PERSIST:            %[[ITER:[a-z0-9_]+]] = arith.addi %[[RING]], %[[OFF]]
// PERSIST:            arith.remui %[[ITER]], %c2_i32
// With ping-pong the consumers play one game over all tiles: consumer 1
// opens it before the tile loop, every turn (the drain's too) hands over,
// and consumer 0 takes the last hand-over after the loop.
// PERSIST-PP:      llvm.func @fat_attention_fwd_bf16_d64_h8_8_bhsd_causal_m128n128s2q2_oprt132(
// PERSIST-PP:        setmaxregister  increase 240
// PERSIST-PP:        %[[C:[0-9]+]] = arith.subi %{{[0-9]+}}, %c1_i32 : i32
// PERSIST-PP:        %[[SECOND:[0-9]+]] = arith.cmpi eq, %[[C]], %c1_i32
// PERSIST-PP-NEXT:   scf.if %[[SECOND]] {
// PERSIST-PP:          nvvm.barrier.arrive id = %c1_i32{{.*}} number_of_threads = %c256_i32
// PERSIST-PP:        scf.for
// PERSIST-PP-NOT:    llvm.return
// PERSIST-PP:          scf.yield %{{.+}}, %{{.+}} : i32, i32
// PERSIST-PP-NEXT:   }
// PERSIST-PP:        %[[FIRST:[0-9]+]] = arith.cmpi eq, %[[C]], %c0_i32
// PERSIST-PP-NEXT:   scf.if %[[FIRST]] {
// PERSIST-PP:          nvvm.barrier id = %c1_i32{{.*}} number_of_threads = %c256_i32
// PERSIST-PP:        llvm.return
// The mask's geometry as ops (FatKernelOps.td): both roles take the tile's
// visible key blocks; the consumer tests the prologue's block, splits its
// steady loop at the first masked block and tests only the blocks after it.
// GEOM-LABEL: llvm.func @fat_attention_fwd_bf16_d64_h8_8_bhsd_causal_m128n128s2q2_oprt132(
// rowsum=mma: the V ring's ones chunks (after V's 16384 bytes in each
// stage; bf16 1.0 pairs) filled by all 384 threads before the role split.
// GEOM:         %[[V:[0-9]+]] = fat.ring %{{[0-9]+}} : !ring2
// GEOM:         fat.ring_fill %[[V]] thread(%{{[0-9]+}}) {bytes = 16384 : i64, offset = 16384 : i64, threads = 384 : i64, value = 1065369472 : i32} : !ring2
// GEOM-NEXT:    nvvm.barrier
// GEOM:         %[[PLO:[a-z0-9_]+]], %{{[a-z0-9_]+}} = fat.visible_key_blocks rows(%{{[0-9]+}}, %{{[0-9]+}}) kv_len(%arg8) edge(%arg9) {block_n = 128 : i64, right = 0 : i64}
// GEOM:         scf.for %{{.+}} = %[[PLO]] to
// GEOM:       } consumer {
// GEOM:         %[[LO:[a-z0-9_]+]], %{{[a-z0-9_]+}} = fat.visible_key_blocks rows(%[[F:[0-9]+]], %[[L:[0-9]+]]) kv_len(%arg8) edge(%arg9) {block_n = 128 : i64, right = 0 : i64}
// GEOM:           %[[EDGE:[0-9]+]] = fat.key_block_needs_mask %[[LO]] rows(%[[F]], %[[L]]) kv_len(%arg8) edge(%arg9) {block_n = 128 : i64, right = 0 : i64}
// GEOM-NEXT:      scf.if %[[EDGE]]
// GEOM:             fat.mask
// GEOM:           } {fat.stage = "mask"}
// GEOM:           fat.first_masked_key_block row(%[[F]]) kv_len(%arg8) edge(%arg9) {block_n = 128 : i64, right = 0 : i64}
// GEOM:           scf.for %{{.+}} = %{{[0-9]+}} to %[[SPLIT:[0-9]+]] step
// GEOM-NOT:         fat.key_block_needs_mask
// GEOM:           scf.for %[[J:[a-z0-9_]+]] = %[[SPLIT]] to
// GEOM:             fat.key_block_needs_mask %[[J]] rows(%[[F]], %[[L]]) kv_len(%arg8) edge(%arg9)

// In the pipelined form the game is the turn ops (FatKernelOps.td): open
// before the tile loop, each GEMM issue phase (the prologue's S, the steady
// loop's S and P·V) between fat.turn_begin and fat.turn_end, closed after
// the loop (every turn of a persistent CTA hands
// over: no `last`).
// PP-PIPE-LABEL: llvm.func @fat_attention_fwd_bf16_d64_h8_8_bhsd_causal_m128n128s2q2_oprt132(
// PP-PIPE:       } consumer {
// PP-PIPE:         %[[C:[0-9]+]] = arith.subi %{{[0-9]+}}, %c1_i32{{[_0-9]*}} : i32
// PP-PIPE-NEXT:    fat.turns_open %[[C]] of 2
// PP-PIPE:         fat.tile_loop pairs query_blocks(%{{[0-9]+}}) heads 8 batch(%{{[a-z0-9]+}}) ctas 132 {
// PP-PIPE:           fat.turn_begin %[[CT:[0-9]+]] of 2
// PP-PIPE:           fat.wgmma_async a_smem
// PP-PIPE-NEXT:      fat.turn_end %[[CT]] of 2{{$}}
// PP-PIPE:           fat.turn_begin %[[CT]] of 2
// PP-PIPE:           fat.wgmma_async a_smem
// PP-PIPE:           fat.wgmma_async a_regs
// PP-PIPE-NEXT:      fat.turn_end %[[CT]] of 2{{$}}
// PP-PIPE-NEXT:      fat.wgmma_wait pending(1)
// PP-PIPE:           fat.tile_yield blocks(
// PP-PIPE-NEXT:    }
// PP-PIPE-NEXT:    fat.turns_close %[[C]] of 2
// PP-PIPE-NOT:     fat.turn
// PP-PIPE:         llvm.return
func.func @d64_causal(%q: memref<?x8x?x64xbf16>, %o: memref<?x8x?x64xbf16>) {
  fat.attention ins(%q, %q, %q : memref<?x8x?x64xbf16>, memref<?x8x?x64xbf16>, memref<?x8x?x64xbf16>)
      outs(%o : memref<?x8x?x64xbf16>) causal
  return
}

// -----

// D = 256: persistent CTAs without a mask, no ping-pong, and tile overlap
// asked for — which the kernel goes without: only one Q buffer fits beside
// D = 256's K/V ring (no c suffix, no q2). fat.schedule says what the
// kernel runs: tile_overlap = false.
// CHECK-LABEL: func.func @d256
// CHECK:         fat.schedule = {block_m = 128 : i64, block_n = 80 : i64, exp2_poly = 0.000000e+00 : f64, forced = false, mask_form = "rows", o_store = "staged", overlap = true, persistent = true, pingpong = false, pv_wait = "late", q_buffers = 1 : i64, rescale = "lazy", rescale_threshold = 8.000000e+00 : f64, row_max = "online", rowsum = "vector", stages = 2 : i64, tail_split = false, tile_overlap = false, tile_scheduler = "static"}
// KERNEL:       gpu.module @fat_attention_fwd_f16_d256_h8_8_bhsd_m128n80s2_ol8t132 {
func.func @d256(%q: tensor<?x8x?x256xf16>, %o: tensor<?x8x?x256xf16>) -> tensor<?x8x?x256xf16> {
  %r = fat.attention ins(%q, %q, %q : tensor<?x8x?x256xf16>, tensor<?x8x?x256xf16>, tensor<?x8x?x256xf16>)
      outs(%o : tensor<?x8x?x256xf16>) -> tensor<?x8x?x256xf16>
  return %r : tensor<?x8x?x256xf16>
}

// BADPP: fat-pipeline: overlap, pingpong, persistent and tile-overlap must be auto, on or off, got overlap='auto' pingpong='sometimes' persistent='auto' tile-overlap='auto'
