// RUN: fa-t-opt %s --fat-tile="seq-len=2048" --fat-tensorize="relative-bias=accumulator" | FileCheck %s --check-prefix=TENS
// RUN: fa-t-opt %s --fat-tile="seq-len=2048" --fat-tensorize="relative-bias=accumulator" --fat-pipeline | FileCheck %s --check-prefix=PIPE
// RUN: not fa-t-opt %s --fat-tile="seq-len=2048" --fat-tensorize="relative-bias=accumulator" --fat-pipeline="tile-scheduler=dynamic" 2>&1 | FileCheck %s --check-prefix=DYNAMIC
// The band's writer warp walks the tiles in the static order: no dynamic one.
// DYNAMIC: error: 'scf.forall' op fat-pipeline: tile-scheduler=dynamic does not serve relative-bias=accumulator (its term writer walks the tiles of a static order); take tile-scheduler=static or relative-bias=vector
// RUN: rm -rf %t && mkdir -p %t/one %t/step %t/vec
// RUN: fa-t-opt %s --fat-to-ptx="seq-len=2048 relative-bias=accumulator output-dir=%t/one" -o /dev/null
// RUN: cat %t/one/*.ptx | FileCheck %s --check-prefix=ST
// RUN: cat %t/one/*.ptx | FileCheck %s --check-prefix=LD
// RUN: cat %t/one/*.json | FileCheck %s --check-prefix=MANIFEST
// RUN: fa-t-opt %s --fat-to-ptx="seq-len=2048 relative-bias=vector output-dir=%t/vec" -o /dev/null
// RUN: cat %t/vec/*.json | FileCheck %s --check-prefix=VECMANIFEST
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t/one/*.ptx -o %t/a.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS %}
// Stepwise, each pass on the printed IR of the one before: the same PTX.
// RUN: fa-t-opt %s --fat-tile="seq-len=2048" -o %t/tiled.mlir
// RUN: fa-t-opt %t/tiled.mlir --fat-tensorize="relative-bias=accumulator" -o %t/tensorized.mlir
// RUN: fa-t-opt %t/tensorized.mlir --fat-pipeline -o %t/pipelined.mlir
// RUN: fa-t-opt %t/pipelined.mlir --convert-fat-to-nvvm -o %t/nvvm.mlir
// RUN: fa-t-opt %t/nvvm.mlir --pass-pipeline="builtin.module(gpu.module(convert-scf-to-cf,convert-nvvm-to-llvm,convert-gpu-to-nvvm{index-bitwidth=32},reconcile-unrealized-casts,canonicalize,cse),nvvm-attach-target{chip=sm_90a features=+ptx80 O=3},gpu-module-to-binary{format=isa},fat-emit-kernels{output-dir=%t/step})" -o /dev/null
// RUN: diff -r %t/one %t/step
// RUN: not fa-t-opt %s --fat-tile --fat-tensorize="relative-bias=sometimes" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: fa-t-opt %s --fat-tile="seq-len=2048 block-m=192" --fat-tensorize="relative-bias=accumulator" --fat-pipeline | FileCheck %s --check-prefix=M192

// relative-bias=accumulator: a learned relative-position table's term
// T = table[h, j − i + 2047] leaves the vector units. fat-tensorize gives
// Q·Kᵀ the tile of T / scale as its accumulator (fat.score_band, whose
// region is the score region without the score) and the region goes; the
// softmax constant becomes scale·log2 e = 0.125·1.4427 and the LSE's
// factor on m the scale.

// TENS:        %[[C:.+]] = arith.constant 0.180336878 : f32
// TENS:        %[[S:.+]] = arith.constant 1.250000e-01 : f32
// TENS:        %[[T:.+]] = fat.score_band at(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}) len(%{{.+}}, %{{.+}}) scale %[[S]] captures(%{{.+}} : tensor<4x4095xf32>) {
// TENS-NEXT:   ^bb0(%{{.+}}: index, %[[H:.+]]: index, %[[I:.+]]: index, %[[J:.+]]: index, %[[TAB:.+]]: tensor<4x4095xf32>):
// TENS:          %[[D:.+]] = arith.subi %[[J]], %[[I]] : index
// TENS:          %[[X:.+]] = arith.addi %[[D]], %{{.+}} : index
// TENS:          %[[E:.+]] = tensor.extract %[[TAB]][%[[H]], %[[X]]] : tensor<4x4095xf32>
// TENS-NEXT:     fat.yield %[[E]] : f32
// TENS:        } : tensor<128x128xf32>
// TENS-NEXT:   %[[SC:.+]] = fat.wgmma %{{.+}}, %{{.+}}, %[[T]] transpose_b a_from smem
// TENS-NOT:    fat.score_mod
// TENS-NEXT:   %[[MS:.+]] = fat.mask %[[SC]]
// TENS-NEXT:   fat.softmax_max %[[MS]], %{{.+}} scale %[[C]]
// TENS:        fat.finalize {{.+}} scale 1.250000e-01
// TENS:        relative_bias = "accumulator"

// In the kernel warp 1 of the producer warpgroup walks the same tiles and
// key blocks as the TMA thread: it claims the block's band stage, writes
// the M + N − 1 terms of the whole tile (the region with the captured
// table at its address) and commits the stage. Each consumer waits for the stage beside K's, reads its
// fragment (its warpgroup's first row 64·consumer), issues Q·Kᵀ onto it
// and gives the stage back with the softmax's releases.
// setmaxnreg.inc takes only what the CTA launched with (168 registers per
// thread here, 128 with three consumer warpgroups): the producer keeps 24
// beside two 240-register consumer warpgroups (more and they wait forever,
// perf log run 136), 32 beside three of 160.
// M192:        fat.warp_specialize %{{.+}} registers(32, 160) producer {
// PIPE:        fat.warp_specialize %{{.+}} registers(24, 240) producer {
// PIPE:          fat.tma_load
// PIPE:          %[[WARP:.+]] = arith.divui %{{.+}}, %c32_i32{{.*}} : i32
// PIPE:          arith.cmpi eq, %[[WARP]], %c1_i32
// PIPE:          fat.tile_loop
// PIPE:            %[[BUF:.+]] = fat.ring_claim %[[BAND:.+]][%[[IT:.+]]] : ![[RING:.+]]
// PIPE:            fat.band_stage %[[BUF]] lane(%{{.+}}) at(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}) scale %{{.+}} captures(%{{.+}} : !llvm.ptr<1>) {
// PIPE:              tensor.extract
// PIPE:            } {keys = 128 : i64, rows = 128 : i64}
// PIPE-NEXT:       fat.ring_commit %[[BAND]][%[[IT]]] : ![[RING]]
// PIPE-NEXT:     } {fat.stage = "terms"}
// PIPE:        } consumer {
// PIPE:          fat.ring_wait %[[BAND]][%[[CIT:.+]]] : ![[RING]]
// PIPE:          %[[SB:.+]] = fat.ring_buffer %[[BAND]][%[[CIT]]] : ![[RING]]
// PIPE:          %[[F:.+]] = fat.band_fragment %[[SB]] row(%{{.+}}) {keys = 128 : i64, rows = 128 : i64} : tensor<64x128xf32, #fat.wgmma_fragment>
// PIPE:          fat.wgmma_async a_smem(%{{.+}}) b(%{{.+}}) acc(%[[F]] : tensor<64x128xf32, #fat.wgmma_fragment>) transpose_b
// PIPE:          fat.ring_release %[[BAND]][%[[CIT]]] : ![[RING]]
// PIPE-NOT:      fat.score_mod

// The writer: 255 terms, 8 per lane, each stored four times (A and B of
// two copies); a fragment: one 8-byte shared load per register pair, 32 at
// 128 keys (rows r' = 0 and 1 read copies of their own, so no load merges
// and no register copy follows), in the prologue's block and the loop's.
// ST-COUNT-32:  st.shared.b32
// ST-NOT:       st.shared.b32
// LD-COUNT-64:  ld.shared.v2.b32
// LD-NOT:       ld.shared.v2.b32
// PTXAS:        0 bytes spill stores, 0 bytes spill loads

// MANIFEST:      "schedule": {
// MANIFEST:        "relative_bias": "accumulator",
// VECMANIFEST:   "schedule": {
// VECMANIFEST-NOT: relative_bias
// VECMANIFEST:   },

// BAD: fat-tensorize: relative-bias must be auto, vector or accumulator, got 'sometimes'

func.func @relative_bias(%q: tensor<2x4x?x64xbf16>, %k: tensor<2x4x?x64xbf16>, %v: tensor<2x4x?x64xbf16>,
                         %o: tensor<2x4x?x64xbf16>, %table: tensor<4x4095xf32>) -> tensor<2x4x?x64xbf16> {
  %r = fat.attention ins(%q, %k, %v : tensor<2x4x?x64xbf16>, tensor<2x4x?x64xbf16>, tensor<2x4x?x64xbf16>)
      outs(%o : tensor<2x4x?x64xbf16>) captures(%table : tensor<4x4095xf32>)
  score {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %t: tensor<4x4095xf32>):
    %d = arith.subi %j, %i : index
    %c = arith.constant 2047 : index
    %x = arith.addi %d, %c : index
    %e = tensor.extract %t[%h, %x] : tensor<4x4095xf32>
    %y = arith.addf %s, %e : f32
    fat.yield %y : f32
  } -> tensor<2x4x?x64xbf16>
  return %r : tensor<2x4x?x64xbf16>
}
