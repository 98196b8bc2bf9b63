// RUN: fa-t-opt %s --fat-tile --fat-tensorize --fat-pipeline --convert-fat-to-nvvm | FileCheck %s
// RUN: fa-t-opt %s --fat-tile --fat-tensorize --fat-pipeline="tile-overlap=off" --convert-fat-to-nvvm | FileCheck %s --check-prefix=OFF
// RUN: not fa-t-opt %s --fat-tile --fat-tensorize --fat-pipeline="persistent=off tile-overlap=on" --convert-fat-to-nvvm 2>&1 | FileCheck %s --check-prefix=NOPERSIST
// RUN: not fa-t-opt %s --fat-tile --fat-tensorize --fat-pipeline="tile-overlap=often" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: fa-t-opt %s --fat-tile="block-m=128" --fat-tensorize="rowsum=vector" --fat-pipeline="persistent=on pingpong=off tile-overlap=on q-buffers=1" --convert-fat-to-nvvm | FileCheck %s --check-prefix=Q1
// RUN: fa-t-opt %s --fat-tile="block-m=128" --fat-tensorize="rowsum=vector" --fat-pipeline="persistent=on pingpong=off tile-overlap=on q-buffers=1" -o /dev/null 2>&1 | FileCheck %s --check-prefix=Q1WARN
// RUN: fa-t-opt %s --fat-tile="block-m=192 block-n=192" --fat-tensorize --fat-pipeline="persistent=on pingpong=off tile-overlap=on" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REGWARN
// RUN: fa-t-opt %s --fat-tile="block-m=192 block-n=192" --fat-tensorize --fat-pipeline="persistent=on pingpong=off" -o /dev/null 2>&1 | FileCheck %s --allow-empty --check-prefix=NOWARN

// Tile overlap (fat-pipeline's tile_overlap, chosen for persistent kernels
// without ping-pong turns and without a mask: here D = 64, 192 query rows,
// tensor-core row sums). The consumers' tile loop carries, beside the ring
// position and the tile index, the tile whose last P·V is still to be
// issued: its accumulator (O and the ones columns' l, 36 registers), m and
// l (4), its packed P (32) and one i32 naming it (75 values). There is one
// exactly when the ring position is > 0, and its V block is the ring's
// last: iteration ring − 1.
// CHECK-LABEL: gpu.module @fat_attention_fwd_bf16_d64_h8_8_bhsd_m192n128s2q2_ort132c
// CHECK:         %[[TILES:[0-9]+]]:75 = scf.for %{{.+}} iter_args(%[[RING:[a-z0-9_]+]] = %{{.+}}, %[[IDX:[a-z0-9_]+]] = %{{.+}}, %{{.+}} = %cst,
// CHECK:           %[[WORK:[0-9]+]]:73 = scf.if %{{.+}} -> (f32,
// CHECK:             %[[PENDING:[0-9]+]] = arith.cmpi ugt, %[[RING]], %{{.+}} : i32
// CHECK:             %[[LASTIT:[0-9]+]] = arith.subi %[[RING]], %{{.+}} : i32
// CHECK:             %[[ITER:[0-9]+]] = arith.select %[[PENDING]], %[[LASTIT]], %{{.+}} : i32
// Only a pending tile has a V block to wait for; without one the wait is
// on K_0's full barrier, just waited for (no branch: the barrier and the
// parity are selected).
// CHECK:             %[[LASTST:[0-9]+]] = arith.remui %[[ITER]], %c2_i32
// CHECK:             %[[PAR:[0-9]+]] = arith.select %[[PENDING]], %{{[0-9]+}}, %{{[0-9]+}} : i32
// CHECK:             %[[BAR:[0-9]+]] = llvm.select %[[PENDING]], %{{[0-9]+}}, %{{[0-9]+}} : i1, !llvm.ptr<3>
// CHECK:             nvvm.mbarrier.try_wait.parity %[[BAR]], %[[PAR]]
// One turn issues this tile's first S = Q·Kᵀ and then the pending tile's
// P·V, whose first k-step adds to O only if the pending tile had more than
// one block (bit 31 of its id: wgmma scale-d).
// CHECK:             wgmma.mma_async.sync.aligned.m64n128k16
// CHECK:             nvvm.wgmma.commit.group.sync.aligned
// CHECK:             %[[ADD:[0-9]+]] = arith.shrui %{{.+}}, %c31_i32{{.*}} : i32
// CHECK:             llvm.inline_asm has_side_effects {{.*}}setp.ne.b32 p, $41, 0;{{.*}}m64n72k16{{.*}} %[[ADD]],
// CHECK:             nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT:        nvvm.wgmma.wait.group.sync.aligned 1
// Softmax of block 0 while the P·V runs; then its O is complete: release
// its V stage and store it.
// CHECK:             ex2.approx.ftz.f32
// CHECK:             nvvm.wgmma.wait.group.sync.aligned 0
// CHECK:             scf.if %[[PENDING]] {
// CHECK:               nvvm.mbarrier.arrive
// CHECK:               llvm.store
// CHECK:             } {fat.stage = "epilogue"}
// The steady state of the tile: its first P·V overwrites the stored O.
// CHECK:             %[[STEADY:[0-9]+]]:72 = scf.for
// CHECK:               %[[FIRSTPV:[0-9]+]] = arith.cmpi ne, %{{.+}}, %{{.+}} : i32
// CHECK:               %[[SCALED:[0-9]+]] = arith.extui %[[FIRSTPV]] : i1 to i32
// CHECK:               llvm.inline_asm has_side_effects {{.*}}m64n72k16{{.*}} %[[SCALED]],
// CHECK:             } {fat.order = {{.+}}, fat.stage = "mainloop"}
// The tile becomes the pending one: id = tile | (blocks > 1) << 31.
// CHECK:             %[[SEVERAL:[0-9]+]] = arith.extui %{{.+}} : i1 to i32
// CHECK:             %[[SHIFTED:[0-9]+]] = arith.shli %[[SEVERAL]], %c31_i32{{.*}} : i32
// CHECK:             %[[ID:[0-9]+]] = arith.ori %{{.+}}, %[[SHIFTED]] : i32
// CHECK:             scf.yield %[[STEADY]]#0, {{.+}}, %[[ID]] : f32,
// A tile without keys stores O = 0 and passes the pending tile on.
// CHECK:           } else {
// CHECK:             llvm.store
// CHECK:             scf.yield %{{.+}} : f32,
// CHECK:           } {fat.order = ["wait K(0), V'", "S(0) = Q*K(0)^T", "O' += P'*V'", "wait S (1 pending)", "softmax(0)", "wait O'", "store O'", "mainloop"], fat.stage = "prologue"}
// CHECK:         } {fat.tiles = "head-major"}
// After the last tile: its P·V and its store.
// CHECK:         %[[LAST:[0-9]+]] = arith.cmpi ugt, %[[TILES]]#0, %{{.+}} : i32
// CHECK:         %[[LASTADD:[0-9]+]] = arith.shrui %[[TILES]]#74, %c31_i32{{.*}} : i32
// CHECK:         llvm.inline_asm has_side_effects {{.*}}m64n72k16{{.*}} %[[LASTADD]],
// CHECK:         nvvm.wgmma.wait.group.sync.aligned 0
// CHECK:         scf.if %[[LAST]] {
// CHECK:           llvm.store
// CHECK:         } {fat.stage = "epilogue"}

// Forced off: the tile loop carries only the ring position and the tile
// index, and every tile ends with its own P·V.
// OFF-LABEL: gpu.module @fat_attention_fwd_bf16_d64_h8_8_bhsd_m192n128s2q2_ort132 {
// OFF:         scf.for %{{.+}} iter_args(%{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}) -> (i32, i32)
// OFF:         } {fat.tiles = "head-major"}

// NOPERSIST: error: 'fat.attention' op tile-overlap needs persistent CTAs with overlap: it chains the overlapped loops of a CTA's tiles
// BAD: fat-pipeline: overlap, pingpong, persistent and tile-overlap must be auto, on or off, got overlap='auto' pingpong='auto' persistent='auto' tile-overlap='often'

// One Q buffer: the next tile's Q would load only after this tile's last
// S, so the kernel is built without tile overlap (no c suffix).
// A tile overlap asked for that the kernel cannot run is a warning naming
// why, not a silent drop (the cost model's own choice drops silently: its
// fat.schedule records what is built).
// Q1WARN: warning: 'fat.attention' op tile-overlap=on is not built: it needs a second Q buffer (the next tile's Q loaded while this tile runs), and this kernel has one; fat.schedule records tile_overlap = false
// REGWARN: warning: 'fat.attention' op tile-overlap=on is not built: the pending tile's O and P beside the next tile's scores need more than the 160 registers of a consumer thread (ptxas would spill)
// NOWARN-NOT: warning
// Q1: gpu.module @fat_attention_fwd_bf16_d64_h8_8_bhsd_m128n128s2_ot132 {
func.func @d64(%q: memref<?x8x?x64xbf16>, %o: memref<?x8x?x64xbf16>) {
  fat.attention ins(%q, %q, %q : memref<?x8x?x64xbf16>, memref<?x8x?x64xbf16>, memref<?x8x?x64xbf16>)
      outs(%o : memref<?x8x?x64xbf16>)
  return
}
