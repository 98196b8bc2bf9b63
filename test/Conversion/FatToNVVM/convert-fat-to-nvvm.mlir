// RUN: fa-t-opt %s --fat-tile="block-m=128 block-n=128 stages=2" --fat-tensorize --fat-pipeline="persistent=off pingpong=off tile-overlap=off" --convert-fat-to-nvvm -split-input-file | FileCheck %s
// RUN: fa-t-opt %s --fat-tile="block-m=64 block-n=64 stages=3" --fat-tensorize --fat-pipeline="persistent=off pingpong=off tile-overlap=off" --convert-fat-to-nvvm -split-input-file | FileCheck %s --check-prefix=M64
// RUN: fa-t-opt %s --fat-tile="block-n=128" --fat-tensorize --fat-pipeline="persistent=off pingpong=off tile-overlap=off overlap=off" --convert-fat-to-nvvm -split-input-file | FileCheck %s --check-prefix=PLAIN
// RUN: fa-t-opt %s --fat-tile="block-n=128" --fat-tensorize --fat-pipeline="persistent=off pingpong=on tile-overlap=off" --convert-fat-to-nvvm -split-input-file | FileCheck %s --check-prefix=PP
// RUN: not fa-t-opt %s --fat-tile="block-n=128" --fat-tensorize --fat-pipeline="persistent=off pingpong=on tile-overlap=off overlap=off" --convert-fat-to-nvvm -split-input-file 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: fa-t-opt %s --fat-tile="block-n=128" --fat-tensorize="rowsum=mma rescale=lazy" --fat-pipeline="persistent=off pingpong=off tile-overlap=off" --convert-fat-to-nvvm -split-input-file | FileCheck %s --check-prefix=FAT
// RUN: fa-t-opt %s --fat-tile="block-m=128 block-n=128 stages=2" --fat-tensorize --fat-pipeline="persistent=off pingpong=off tile-overlap=off" -split-input-file | FileCheck %s --check-prefix=PIPE
// RUN: fa-t-opt %s --fat-tile="block-m=128 block-n=128 stages=2" --fat-tensorize --fat-pipeline="persistent=off pingpong=off tile-overlap=off" --convert-fat-to-nvvm -split-input-file | FileCheck %s --check-prefix=LOWERED

// fat-pipeline alone writes the pipelined form. Shared memory holds three
// rings (!fat.ring): Q (one buffer, filled once: no empty barriers), K and
// V (two stages of [128][64]-box pairs, 32 KiB, given back by the 256
// consumer threads), their barriers one ring after the other behind the
// buffers. The role split is a fat.warp_specialize on the warp-uniform
// warpgroup index; the producer acquires a ring's buffer for each TMA tile
// copy (K and V of one key block at the same iteration); the consumer
// region works on the warpgroup's #fat.wgmma_fragment tiles: each GEMM is
// one fat.wgmma_async (one commit group: K = D = 128 for S = Q·Kᵀ from Q's
// and the stage's [128][64] boxes, 16 KB apart; K = block-n = 128 for
// O += P·V with P in registers) whose tile is read through the
// fat.wgmma_wait that retires the group, and the loop carries O, m and l
// as tiles.
// PIPE:        ![[QR:ring]] = !fat.ring<stages = 1, buffer_offset = 0, buffer_bytes = 32768, barrier_offset = 163840, releases = 0>
// PIPE-NEXT:   ![[KR:ring1]] = !fat.ring<stages = 2, buffer_offset = 32768, buffer_bytes = 32768, barrier_offset = 163848, releases = 256>
// PIPE-NEXT:   ![[VR:ring2]] = !fat.ring<stages = 2, buffer_offset = 98304, buffer_bytes = 32768, barrier_offset = 163880, releases = 256>
// PIPE-LABEL:  gpu.module @fat_attention_fwd_bf16_d128_h16_4_bhsd_m128n128s2
// PIPE:          %[[WG:[0-9]+]] = nvvm.shfl.sync  idx %{{.+}}, %{{.+}}, %c0_i32, %c31_i32
// PIPE:          %[[Q:[0-9]+]] = fat.ring %[[SMEM:[0-9]+]] : ![[QR]]
// PIPE-NEXT:     %[[K:[0-9]+]] = fat.ring %[[SMEM]] : ![[KR]]
// PIPE-NEXT:     %[[V:[0-9]+]] = fat.ring %[[SMEM]] : ![[VR]]
// PIPE:            fat.ring_init %[[Q]] : ![[QR]]
// PIPE-NEXT:       fat.ring_init %[[K]] : ![[KR]]
// PIPE-NEXT:       fat.ring_init %[[V]] : ![[VR]]
// PIPE-NEXT:       nvvm.fence.mbarrier.init
// PIPE:          fat.warp_specialize %[[WG]] registers(24, 240) producer {
// PIPE:            %[[QB:[a-z0-9_]+]], %[[QF:[a-z0-9_]+]] = fat.ring_acquire %[[Q]][%c0_i32{{[_0-9]*}}] expect_tx 32768 : ![[QR]]
// PIPE-NEXT:       fat.tma_load %arg0[%{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}] to(%[[QB]] box_stride 16384) columns 128 barrier(%[[QF]]) : !llvm.ptr, !llvm.ptr<3>, !llvm.ptr<3>
// PIPE:            scf.for
// PIPE:              %[[KB:[a-z0-9_]+]], %[[KF:[a-z0-9_]+]] = fat.ring_acquire %[[K]][%[[IT:[0-9]+]]] expect_tx 32768 : ![[KR]]
// PIPE-NEXT:         fat.tma_load %arg1{{.+}} to(%[[KB]] box_stride 16384) columns 128 barrier(%[[KF]])
// PIPE-NEXT:         %[[VB:[a-z0-9_]+]], %[[VF:[a-z0-9_]+]] = fat.ring_acquire %[[V]][%[[IT]]] expect_tx 32768 : ![[VR]]
// PIPE-NEXT:         fat.tma_load %arg2{{.+}} to(%[[VB]] box_stride 16384) columns 128 barrier(%[[VF]])
// PIPE:          } consumer {
// The consumer waits for the tile's Q, then for K_0; S_0 reads both
// buffers; K_0 is released as soon as S_0 is complete.
// PIPE:            fat.ring_wait %[[Q]][%c0_i32{{[_0-9]*}}] : ![[QR]]
// PIPE-NEXT:       %[[O0:[a-z0-9_]+]] = arith.constant dense<0.000000e+00> : tensor<64x128xf32, #fat.wgmma_fragment>
// PIPE:            fat.ring_wait %[[K]][%[[I0:[0-9]+]]] : ![[KR]]
// PIPE:            %[[QBUF:[0-9]+]] = fat.ring_buffer %[[Q]][%c0_i32{{[_0-9]*}}] : ![[QR]]
// PIPE:            %[[KBUF:[0-9]+]] = fat.ring_buffer %[[K]][%[[I0]]] : ![[KR]]
// PIPE:            %[[S0:[0-9]+]] = fat.wgmma_async a_smem(%{{[0-9]+}} box_stride 16384) b(%{{[0-9]+}} box_stride 16384) transpose_b k 128 shape [64, 128, 16] bf16 -> tensor<64x128xf32, #fat.wgmma_fragment>
// PIPE-NEXT:       %{{[0-9]+}} = fat.wgmma_wait pending(0) (%[[S0]]) : tensor<64x128xf32, #fat.wgmma_fragment>
// PIPE-NEXT:       fat.ring_release %[[K]][%[[I0]]] : ![[KR]]
// PIPE:            %[[P:[0-9]+]] = arith.truncf %{{[a-z0-9_]+}} : tensor<64x128xf32, #fat.wgmma_fragment> to tensor<64x128xbf16, #fat.wgmma_fragment>
// PIPE:            scf.for %{{.+}} iter_args(%[[O:[a-z0-9_]+]] = %[[O0]], %{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}, %[[PREV:[a-z0-9_]+]] = %[[P]]) -> (tensor<64x128xf32, #fat.wgmma_fragment>, tensor<64xf32, #fat.wgmma_fragment>, tensor<64xf32, #fat.wgmma_fragment<partial>>, tensor<64x128xbf16, #fat.wgmma_fragment>)
// Iteration j waits for K_j and V_{j−1}.
// PIPE:              fat.ring_wait %[[K]][%[[IJ:[0-9]+]]] : ![[KR]]
// PIPE-NEXT:         fat.ring_wait %[[V]][%[[IJ1:[0-9]+]]] : ![[VR]]
// PIPE:              %[[SJ:[0-9]+]] = fat.wgmma_async a_smem
// PIPE:              %[[PV:[0-9]+]] = fat.wgmma_async a_regs(%[[PREV]] : tensor<64x128xbf16, #fat.wgmma_fragment>) b(%{{[0-9]+}} box_stride 16384) acc(%[[O]] : tensor<64x128xf32, #fat.wgmma_fragment>) k 128 shape [64, 128, 16] bf16
// PIPE-NEXT:         fat.wgmma_wait pending(1) (%[[SJ]])
// PIPE:              fat.wgmma_wait pending(0) (%{{[0-9]+}}, %[[PREV]]) : tensor<64x128xf32, #fat.wgmma_fragment>, tensor<64x128xbf16, #fat.wgmma_fragment>
// The epilogue is tile ops too: fat.finalize of O, l (the quad's shares
// of the vector row sum) and m with the kernel's run-time c, then O
// staged through the tile's Q buffer (iteration 0: one tile) to O's rows
// from the warpgroup's first row; no cast to registers is left.
// PIPE-NOT:        unrealized_conversion_cast
// PIPE:            %[[OUT:[a-z0-9_]+]], %{{[a-z0-9_]+}} = fat.finalize %{{[0-9]+}}#0, %{{[0-9]+}}#2, %{{[0-9]+}}#1 exp2_scale %{{.+}} : tensor<64x128xf32, #fat.wgmma_fragment>, tensor<64xf32, #fat.wgmma_fragment<partial>>, tensor<64xf32, #fat.wgmma_fragment> -> tensor<64x128xbf16, #fat.wgmma_fragment>, tensor<64xf32, #fat.wgmma_fragment>
// PIPE:            fat.stage_output %[[OUT]] : tensor<64x128xbf16, #fat.wgmma_fragment> to %[[OPTR:arg3]] : !llvm.ptr<1> strides(%arg4, %arg5, %arg6) through %[[Q]][%c0_i32{{[_0-9]*}}] : ![[QR]] rows(%{{[0-9]+}}, %arg7) batch(%{{[0-9]+}}) head(%{{[0-9]+}}) {columns = 128 : i64, q_box_stride = 16384 : i64}
// PIPE:          llvm.return
// convert-fat-to-nvvm lowers each of those ops, one pattern each: the
// split becomes a branch on warpgroup 0 with setmaxnreg on each side, the
// wait the wait_group and an empty asm per register.
// LOWERED-NOT:   fat.{{warp_specialize|wgmma_async|operand_fence|wgmma_wait|schedule_fence}}
// LOWERED:       %[[WG:[0-9]+]] = nvvm.shfl.sync  idx
// LOWERED:       %[[P:[0-9]+]] = arith.cmpi eq, %[[WG]], %c0_i32{{.*}} : i32
// LOWERED-NEXT:  scf.if %[[P]] {
// LOWERED-NEXT:    nvvm.setmaxregister decrease 24
// LOWERED:       } else {
// LOWERED-NEXT:    nvvm.setmaxregister increase 240
// LOWERED:         nvvm.wgmma.wait.group.sync.aligned 0
// LOWERED-NEXT:    llvm.inline_asm has_side_effects asm_dialect = att "", "=f,0"
// LOWERED:       } {fat.role = ["producer", "consumer"]}
// LOWERED-NOT:   fat.{{warp_specialize|wgmma_async|operand_fence|wgmma_wait|schedule_fence}}

// The op stays on the host, tagged with its kernel; the kernel is an
// llvm.func in a gpu.module named after the configuration, and the manifest
// is recorded on the module.

// CHECK:       module attributes {fat.kernels = {[[NAME:fat_attention_fwd_bf16_d128_h16_4_bhsd_m128n128s2]] = "{
// CHECK-SAME:    gpu.container_module
// CHECK-LABEL: func.func @gqa
// CHECK:         fat.launch @[[NAME]]::@[[NAME]] ins({{.*}} {fat.schedule = {
// CHECK:       gpu.module @[[NAME]]
// CHECK:         llvm.mlir.global external @__fat_dynamic_smem() {addr_space = 3 : i32, alignment = 1024 : i64} : !llvm.array<0 x i8>

// Parameters of docs/kernel-abi.md: three tensor maps by value as grid
// constants, O and its (b, h, s) strides, Sq, Skv, diag, scale·log2 e.
// CHECK:         llvm.func @[[NAME]](
// CHECK-SAME:      %{{.+}}: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<16 x i64>, nvvm.grid_constant},
// CHECK-SAME:      %[[O:.+]]: !llvm.ptr<1>, %{{.+}}: i64, %{{.+}}: i64, %{{.+}}: i64, %[[SQ:.+]]: i32, %[[SKV:.+]]: i32, %[[DIAG:.+]]: i32, %[[C:.+]]: f32)
// CHECK-SAME:      attributes {nvvm.kernel, nvvm.maxntid = array<i32: 384, 1, 1>, nvvm.minctasm = 1 : i32}

// Barriers ring by ring, stage by stage: Q's full one, then K's and V's
// full and empty ones; full ones wait for one arrival + TMA bytes, empty
// ones for the 256 consumer threads.
// CHECK:         nvvm.mbarrier.init %{{.+}}, %c1_i32
// CHECK-COUNT-4: nvvm.mbarrier.init %{{.+}}, %c{{1|256}}_i32
// CHECK-COUNT-4: nvvm.mbarrier.init %{{.+}}, %c{{1|256}}_i32
// CHECK-NEXT:    nvvm.fence.mbarrier.init
// CHECK:         nvvm.barrier

// GQA: KV head = h / (16 / 4).
// CHECK:         %[[H:.+]] = nvvm.read.ptx.sreg.ctaid.y
// CHECK:         arith.divui %[[H]], %c4_i32

// Producer: 24 registers; Q is D/64 = 2 boxes; per KV block K then V, 2
// boxes (32 KiB) each, each on its own full barrier after its empty one.
// CHECK:         nvvm.setmaxregister decrease 24
// CHECK-COUNT-2: nvvm.cp.async.bulk.tensor.shared.cluster.global
// CHECK:         scf.for
// CHECK:           nvvm.mbarrier.try_wait.parity
// CHECK:           nvvm.mbarrier.arrive.expect_tx %{{.+}}, %c32768_i32
// CHECK-COUNT-2:   nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.+}}, %arg1
// CHECK:           nvvm.mbarrier.try_wait.parity
// CHECK:           nvvm.mbarrier.arrive.expect_tx %{{.+}}, %c32768_i32
// CHECK-COUNT-2:   nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.+}}, %arg2

// Consumers: 240 registers, then the overlapped schedule. A CTA with KV
// blocks runs the prologue — S_0 = Q·K_0ᵀ, D/16 = 8 k-steps of m64n128k16
// with both operands in shared memory (trans-b 0) — and its softmax.
// CHECK:         nvvm.setmaxregister increase 240
// CHECK:         scf.if
// CHECK:           nvvm.wgmma.fence.aligned
// CHECK-COUNT-8:   wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.+}}p, 1, 1, 0, 0;
// CHECK:           nvvm.wgmma.commit.group.sync.aligned
// CHECK:           nvvm.wgmma.wait.group.sync.aligned 0
// Edge blocks only: keys ≥ Skv are masked. Key c0 + k (c0 = j·N + 2t,
// k = 8i + e) is visible when k ≤ Skv − 1 − c0: one compare of a constant
// with a per-row limit for each element.
// CHECK:           scf.if
// CHECK:             %[[SKV1:[0-9]+]] = arith.subi %[[SKV]], %c1_i32{{.*}} : i32
// CHECK:             %[[TAIL:[0-9]+]] = arith.subi %[[SKV1]], %{{.+}} : i32
// CHECK:             arith.cmpi sle, %c0_i32{{.*}}, %[[TAIL]] : i32
// CHECK:             arith.cmpi sle, %c1_i32{{.*}}, %[[TAIL]] : i32
// Row max over the quad: shuffles xor 1 and xor 2; P packed to bf16 pairs.
// CHECK:           nvvm.shfl.sync bfly %{{.+}}, %{{.+}}, %c1_i32
// CHECK:           nvvm.shfl.sync bfly %{{.+}}, %{{.+}}, %c2_i32
// CHECK:           ex2.approx.ftz.f32
// CHECK:           cvt.rn.bf16x2.f32
// Steady state: S_j and O += P_{j−1}·V_{j−1} (N/16 = 8 register-A k-steps,
// MN-major V, trans-b 1) issued back to back as two commit groups; the
// softmax of S_j runs after wait_group 1, with the P·V still in flight.
// CHECK:           scf.for
// CHECK-COUNT-8:     wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.+}}p, 1, 1, 0, 0;
// CHECK:             nvvm.wgmma.commit.group.sync.aligned
// CHECK-COUNT-8:     wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.+}}p, 1, 1, 1;
// CHECK:             nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT:        nvvm.wgmma.wait.group.sync.aligned 1
// CHECK:             ex2.approx.ftz.f32
// CHECK:             cvt.rn.bf16x2.f32
// CHECK:             nvvm.wgmma.wait.group.sync.aligned 0
// CHECK:             nvvm.mbarrier.arrive
// Drain: the last block's P·V.
// CHECK:           nvvm.wgmma.fence.aligned
// CHECK-COUNT-8:   wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.+}}p, 1, 1, 1;
// CHECK:           nvvm.wgmma.wait.group.sync.aligned 0
// Epilogue: O/l staged through the warpgroup's Q rows (stmatrix, then
// 16-byte row segments back); rows < Sq stored 16 bytes per lane
// (test/Conversion/FatToNVVM/o-store.mlir has the addresses).
// CHECK:         nvvm.stmatrix
// CHECK:         nvvm.bar.warp.sync
// CHECK:         llvm.load %{{.+}} {alignment = 16 : i64} : !llvm.ptr<3> -> vector<4xi32>
// CHECK:         arith.cmpi slt, %{{.+}}, %[[SQ]]
// CHECK:         llvm.store %{{.+}}, %{{.+}} {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr<1>

// overlap=false: one loop, each GEMM waited for before the next step.
// PLAIN-LABEL: llvm.func @fat_attention_fwd_bf16_d128_h16_4_bhsd_m128n128s2_n(
// PLAIN:         nvvm.setmaxregister increase 240
// PLAIN:         scf.for
// PLAIN-COUNT-8:   p, 1, 1, 0, 0;
// PLAIN:           nvvm.wgmma.wait.group.sync.aligned 0
// PLAIN:           ex2.approx.ftz.f32
// PLAIN-COUNT-8:   p, 1, 1, 1;
// PLAIN:           nvvm.wgmma.wait.group.sync.aligned 0
// PLAIN-NOT:     nvvm.wgmma.wait.group.sync.aligned 1

// pingpong: consumer 1 opens with an arrive on barrier 1; every GEMM issue
// phase is bracketed by bar.sync on the own barrier (1 + c) and bar.arrive
// on the other's (2 − c), 256 threads each.
// PP-LABEL: llvm.func @fat_attention_fwd_bf16_d128_h16_4_bhsd_m128n128s2_op(
// PP:         nvvm.barrier.arrive id = %c1_i32{{.*}} number_of_threads = %c256_i32
// PP:         nvvm.barrier id = %{{.+}} number_of_threads = %c256_i32
// PP-COUNT-8: p, 1, 1, 0, 0;
// PP:         nvvm.barrier.arrive id = %{{.+}} number_of_threads = %c256_i32
// PP:         scf.for
// PP:           nvvm.barrier id = %{{.+}} number_of_threads = %c256_i32
// PP-COUNT-8:   p, 1, 1, 0, 0;
// PP-COUNT-8:   p, 1, 1, 1;
// PP:           nvvm.barrier.arrive id = %{{.+}} number_of_threads = %c256_i32
// PP:           nvvm.wgmma.wait.group.sync.aligned 1

// BAD: error: 'fat.attention' op pingpong needs overlap

// FlashAttention-T primitives. rowsum=mma: every thread fills its share of
// the ones chunk after each V stage (16-byte stores of 1.0 pairs, bf16
// 0x3F80), fences them for the async proxy, and P·V becomes m64n136k16: 8
// extra accumulator columns hold l = P·1. rescale=lazy: the warp votes
// whether any row moved its max before rescaling O.
// FAT-LABEL: llvm.func @fat_attention_fwd_bf16_d128_h16_4_bhsd_m128n128s2_orl8(
// FAT:         %[[PAIR:.+]] = arith.constant 1065369472 : i32
// FAT:         llvm.store %{{.+}}, %{{.+}} {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr<3>
// FAT:         nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// FAT:         nvvm.barrier
// FAT:         scf.for
// FAT:           nvvm.vote.sync any %{{.+}}, %{{.+}} -> i1
// FAT-COUNT-8:   wgmma.mma_async.sync.aligned.m64n136k16.f32.bf16.bf16
// FAT:           nvvm.wgmma.wait.group.sync.aligned 0
// FAT:           scf.if
// FAT:             arith.mulf


// With block-m = 64 there is one consumer warpgroup and no register split.
// M64-LABEL: llvm.func @fat_attention_fwd_bf16_d128_h16_4_bhsd_m64n64s3
// M64-SAME:    nvvm.maxntid = array<i32: 256, 1, 1>
// M64-NOT:     nvvm.setmaxregister
// M64-COUNT-8: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.+}}p, 1, 1, 0, 0;
// M64-COUNT-4: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.+}}p, 1, 1, 1;
func.func @gqa(%q: memref<?x16x?x128xbf16>, %k: memref<?x4x?x128xbf16>,
               %v: memref<?x4x?x128xbf16>, %o: memref<?x16x?x128xbf16>) {
  fat.attention ins(%q, %k, %v : memref<?x16x?x128xbf16>, memref<?x4x?x128xbf16>,
                                 memref<?x4x?x128xbf16>)
      outs(%o : memref<?x16x?x128xbf16>)
  return
}

// -----

// Causal with LSE (tensor form): the LSE pointer and its (b, h) strides join
// the parameters; the masked branch tests j ≤ i + diag as k ≤ limit with the
// row's limit min(Skv − 1 − c0, i + diag − c0) for key c0 + k.
// CHECK-LABEL: func.func @causal_lse
// CHECK:         fat.launch @[[NAME:fat_attention_fwd_f16_d64_h8_8_bhsd_causal_lse_m128n128s2]]::@[[NAME]] ins({{.*}} {fat.schedule = {
// CHECK:       gpu.module @[[NAME]]
// CHECK:         llvm.func @[[NAME]](
// CHECK-SAME:      %{{.+}}: !llvm.ptr<1>, %{{.+}}: i64, %{{.+}}: i64, %{{.+}}: i64, %[[LSE:.+]]: !llvm.ptr<1>, %{{.+}}: i64, %{{.+}}: i64, %{{.+}}: i32, %[[CSKV:[a-z0-9]+]]: i32, %[[CDIAG:[a-z0-9]+]]: i32, %{{.+}}: f32)
// CHECK:           wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16
// CHECK:           %[[CSKV1:[0-9]+]] = arith.subi %[[CSKV]], %c1_i32{{.*}} : i32
// CHECK-NEXT:      %[[CTAIL:[0-9]+]] = arith.subi %[[CSKV1]], %[[C0:[0-9]+]] : i32
// CHECK:           %[[ROW:[0-9]+]] = arith.addi %{{.+}}, %[[CDIAG]] : i32
// CHECK:           %[[ROWK:[0-9]+]] = arith.addi %[[ROW]], %c0_i32{{.*}} : i32
// CHECK-NEXT:      %[[ROWLIM:[0-9]+]] = arith.subi %[[ROWK]], %[[C0]] : i32
// CHECK:           %[[LIM:[0-9]+]] = arith.minsi %[[CTAIL]], %[[ROWLIM]] : i32
// CHECK:           arith.cmpi sle, %c0_i32{{.*}}, %[[LIM]] : i32
// CHECK:           cvt.rn.f16x2.f32
// CHECK:         lg2.approx.ftz.f32
// CHECK:         llvm.store %{{.+}}, %{{.+}} {alignment = 4 : i64} : f32, !llvm.ptr<1>
func.func @causal_lse(%q: tensor<2x8x256x64xf16>, %k: tensor<2x8x256x64xf16>,
                      %v: tensor<2x8x256x64xf16>, %o: tensor<2x8x256x64xf16>,
                      %l: tensor<2x8x256xf32>) -> (tensor<2x8x256x64xf16>, tensor<2x8x256xf32>) {
  %r:2 = fat.attention ins(%q, %k, %v : tensor<2x8x256x64xf16>, tensor<2x8x256x64xf16>,
                                        tensor<2x8x256x64xf16>)
      outs(%o : tensor<2x8x256x64xf16>) lse(%l : tensor<2x8x256xf32>) causal
      -> tensor<2x8x256x64xf16>, tensor<2x8x256xf32>
  return %r#0, %r#1 : tensor<2x8x256x64xf16>, tensor<2x8x256xf32>
}

// -----

// Two ops of one configuration share one kernel.
// CHECK-LABEL: func.func @shared
// CHECK:         fat.launch @[[NAME:[a-z0-9_]+]]::@[[NAME]] ins({{.+}} {fat.schedule = {
// CHECK:         fat.launch @[[NAME]]::@[[NAME]] ins({{.+}} {fat.schedule = {
// CHECK:       gpu.module @[[NAME]]
// CHECK-NOT:   gpu.module
func.func @shared(%q: memref<1x2x64x64xbf16>, %o1: memref<1x2x64x64xbf16>,
                  %o2: memref<1x2x64x64xbf16>) {
  fat.attention ins(%q, %q, %q : memref<1x2x64x64xbf16>, memref<1x2x64x64xbf16>,
                                 memref<1x2x64x64xbf16>) outs(%o1 : memref<1x2x64x64xbf16>)
  fat.attention ins(%q, %q, %q : memref<1x2x64x64xbf16>, memref<1x2x64x64xbf16>,
                                 memref<1x2x64x64xbf16>) outs(%o2 : memref<1x2x64x64xbf16>)
  return
}
