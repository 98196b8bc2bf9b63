// RUN: fa-t-opt %s --fat-tile --fat-tensorize --fat-pipeline="persistent=off pingpong=off" -split-input-file | FileCheck %s
// RUN: fa-t-opt %s --fat-tile --fat-tensorize --fat-pipeline -split-input-file | FileCheck %s --check-prefix=TILES

// The overlapped consumer loop is the step's loop expanded by its ops'
// stages (scheduleOverlap, LoopPipeline: SoftwarePipeline.h): the P·V with
// V's ring wait and release in stage 1. Prologue: stage 0 of the first
// block (S_0 → P_0, no P·V, O not rescaled). Steady loop: stage 0 of j
// beside stage 1 of j − 1 — V's ring iteration is K's minus one, S waited
// for with the P·V in flight (pending(1)), the late wait behind its fence
// returning the carried P as well, P_j packed after it, then V released and
// O rescaled; it carries (α·O, m, l, P). Drain: stage 1 of the last block,
// its wait returning the accumulator alone.
// CHECK-LABEL: gpu.module @fat_attention_fwd_bf16_d128_h8_8_bhsd_causal_m128n128s2_ol8 {
// CHECK:         } consumer {
// CHECK:           scf.if
// CHECK:             fat.ring_wait %[[K:[0-9]+]][%[[I0:[0-9]+]]] : !ring1
// CHECK-NOT:         a_regs
// CHECK:             fat.wgmma_async a_smem
// CHECK-NEXT:        fat.wgmma_wait pending(0)
// CHECK-NEXT:        fat.ring_release %[[K]][%[[I0]]]
// CHECK-NOT:         fat.rescale
// CHECK:             %[[P0:[0-9]+]] = arith.truncf
// CHECK:             %[[LOOP:[0-9]+]]:4 = scf.for %{{.+}} iter_args(%[[O:[a-z0-9_]+]] = %cst, %{{[a-z0-9_]+}} = %new_max, %{{[a-z0-9_]+}} = %new_sum, %[[P:[a-z0-9_]+]] = %[[P0]])
// CHECK:               %[[I:[0-9]+]] = arith.addi
// CHECK-NEXT:          %[[IP:[0-9]+]] = arith.subi %[[I]], %c1_i32{{[_0-9]*}} : i32
// CHECK-NEXT:          fat.ring_wait %[[K]][%[[I]]] : !ring1
// CHECK-NEXT:          fat.ring_wait %[[V:[0-9]+]][%[[IP]]] : !ring2
// CHECK:               %[[S:[0-9]+]] = fat.wgmma_async a_smem
// CHECK:               %[[PV:[0-9]+]] = fat.wgmma_async a_regs(%[[P]] : {{.+}}) acc(%[[O]] : {{.+}})
// CHECK-NEXT:          fat.wgmma_wait pending(1) (%[[S]])
// CHECK-NEXT:          fat.ring_release %[[K]][%[[I]]]
// CHECK:               fat.schedule_fence
// CHECK-NEXT:          %[[W:[0-9]+]]:2 = fat.wgmma_wait pending(0) (%[[PV]], %[[P]])
// CHECK-NEXT:          %[[PJ:[0-9]+]] = arith.truncf
// CHECK-NEXT:          fat.ring_release %[[V]][%[[IP]]]
// CHECK-NEXT:          %[[OJ:[0-9]+]] = fat.rescale %[[W]]#0
// CHECK-NEXT:          scf.yield %[[OJ]], %{{.+}}, %{{.+}}, %[[PJ]]
// CHECK-NEXT:        } {{.+}}fat.stage = "mainloop"}
// CHECK:             fat.ring_wait %[[V]][%[[IL:[0-9]+]]] : !ring2
// CHECK:             %[[PVL:[0-9]+]] = fat.wgmma_async a_regs(%[[LOOP]]#3 : {{.+}}) acc(%[[LOOP]]#0 : {{.+}})
// CHECK-NEXT:        %[[OL:[0-9]+]] = fat.wgmma_wait pending(0) (%[[PVL]]) :
// CHECK-NEXT:        fat.ring_release %[[V]][%[[IL]]]
// CHECK-NEXT:        scf.yield %[[OL]], %[[LOOP]]#1, %[[LOOP]]#2
// CHECK-NOT:     fat.pipeline_stage
func.func @overlap(%q: memref<?x8x?x128xbf16>, %o: memref<?x8x?x128xbf16>) {
  fat.attention ins(%q, %q, %q : memref<?x8x?x128xbf16>, memref<?x8x?x128xbf16>, memref<?x8x?x128xbf16>)
      outs(%o : memref<?x8x?x128xbf16>) causal
  return
}

// -----

// Tile overlap: a tile's first step is one steady step whose stage 1 is the
// pending tile's last P·V (the tile loop's carried O', P', id): V waited for
// only where a tile is pending (else K_0's buffer stands in), the P·V
// accumulating by the id's bit 31, P_0 packed after the wait behind an
// operand fence, the pending tile stored when it retires, and this tile's O
// not rescaled (its first steady P·V overwrites it). After the tile loop the
// last pending P·V is the drain with the same adjustments.
// TILES-LABEL: gpu.module @fat_attention_fwd_bf16_d64_h8_8_bhsd_lse_m192n128s2q2_ot132c
// TILES:         %{{.+}}, %{{.+}}, %[[C:[a-z0-9_]+]]:5 = fat.tile_loop {{.+}} iter_args(
// TILES:           scf.if
// TILES:             fat.ring_wait %[[K:[0-9]+]][%[[I0:[0-9]+]]] : !ring1
// TILES-NEXT:        fat.ring_wait %[[V:[0-9]+]][%[[IP:[0-9]+]]] if(%[[PENDING:[0-9]+]]) else %[[K]][%[[I0]]] : !ring2, !ring1
// TILES:             fat.wgmma_async a_smem
// TILES:             %[[ACC:[0-9]+]] = arith.shrui %{{[a-z0-9_]+}}, %c31_i32
// TILES-NEXT:        fat.ring_buffer %[[V]][%[[IP]]]
// TILES:             %[[PV:[0-9]+]] = fat.wgmma_async a_regs(%[[PP:[a-z0-9_]+]] : {{.+}}) acc(%{{[a-z0-9_]+}} : {{.+}}) scale_d(%[[ACC]])
// TILES-NEXT:        fat.wgmma_wait pending(1)
// TILES:             %[[W:[0-9]+]]:2 = fat.wgmma_wait pending(0) (%[[PV]], %[[PP]])
// TILES-NEXT:        %[[F:[0-9]+]] = fat.operand_fence %probs
// TILES-NEXT:        %[[P0:[0-9]+]] = arith.truncf %[[F]]
// TILES-NEXT:        scf.if %[[PENDING]] {
// TILES-NEXT:          fat.ring_release %[[V]][%[[IP]]]
// TILES:             } {fat.stage = "epilogue"}
// TILES-NOT:         fat.rescale
// TILES:             scf.for {{.+}} iter_args(%{{[a-z0-9_]+}} = %[[W]]#0, %{{[a-z0-9_]+}} = %new_max, %{{[a-z0-9_]+}} = %new_sum, %{{[a-z0-9_]+}} = %[[P0]])
// TILES:           fat.tile_yield
// TILES:         scf.if %[[LAST:[0-9]+]] {
// TILES-NEXT:      fat.ring_wait %[[V]][%[[IL:[0-9]+]]] : !ring2
// TILES-NEXT:    }
// TILES:         %[[ACCL:[0-9]+]] = arith.shrui %[[C]]#4, %c31_i32
// TILES-NEXT:    fat.ring_buffer %[[V]][%[[IL]]]
// TILES:         %[[PVL:[0-9]+]] = fat.wgmma_async a_regs(%[[C]]#3 : {{.+}}) acc(%[[C]]#0 : {{.+}}) scale_d(%[[ACCL]])
// TILES-NEXT:    fat.wgmma_wait pending(0) (%[[PVL]]) :
// TILES-NEXT:    scf.if %[[LAST]] {
// TILES-NEXT:      fat.ring_release %[[V]][%[[IL]]]
func.func @tiles(%q: memref<?x8x?x64xbf16>, %o: memref<?x8x?x64xbf16>, %lse: memref<?x8x?xf32>) {
  fat.attention ins(%q, %q, %q : memref<?x8x?x64xbf16>, memref<?x8x?x64xbf16>, memref<?x8x?x64xbf16>)
      outs(%o : memref<?x8x?x64xbf16>) lse(%lse : memref<?x8x?xf32>)
  return
}
