// RUN: fa-t-opt %s --fat-tile="block-m=192" --fat-tensorize --fat-pipeline="pingpong=on" --convert-fat-to-nvvm | FileCheck %s
// RUN: not fa-t-opt %s --fat-tile="block-m=64" --fat-tensorize --fat-pipeline="pingpong=on" --convert-fat-to-nvvm 2>&1 | FileCheck %s --check-prefix=ONE

// Ping-pong turns round three consumer warpgroups (block-m = 192):
// consumer c waits on named barrier 1 + c before issuing its GEMMs and
// hands over on 1 + (c + 1) mod 3 after; consumer 2 opens the game on
// consumer 0's barrier, consumer 0 takes the last hand-over after the tile
// loop. Every phase is 256 threads: the waiter's 128 and the previous
// turn's 128.
// CHECK:       llvm.func @fat_attention_fwd_bf16_d64_h8_8_bhsd_m192n128s2q2_oprt132(
// CHECK:         %[[OPENER:[0-9]+]] = arith.cmpi eq, %[[C:[0-9]+]], %c2_i32{{.*}} : i32
// CHECK-NEXT:    scf.if %[[OPENER]] {
// CHECK:           nvvm.barrier.arrive id = %c1_i32{{.*}} number_of_threads = %c256_i32
// CHECK:         }
// CHECK:         nvvm.barrier id = %{{[0-9]+}} number_of_threads = %c256_i32
// CHECK:         wgmma.mma_async.sync.aligned.m64n128k16
// CHECK:         %[[SUCC:[0-9]+]] = arith.addi %{{[0-9]+}}, %c1_i32{{.*}} : i32
// CHECK-NEXT:    %c3_i32{{.*}} = arith.constant 3 : i32
// CHECK-NEXT:    %[[MOD:[0-9]+]] = arith.remui %[[SUCC]], %c3_i32{{.*}} : i32
// CHECK-NEXT:    %c1_i32{{.*}} = arith.constant 1 : i32
// CHECK-NEXT:    %[[NEXT:[0-9]+]] = arith.addi %[[MOD]], %c1_i32{{.*}} : i32
// CHECK-NEXT:    %c256_i32{{.*}} = arith.constant 256 : i32
// CHECK-NEXT:    nvvm.barrier.arrive id = %[[NEXT]] number_of_threads = %c256_i32
// CHECK:         } {fat.tiles = "head-major"}
// CHECK:         %[[CLOSER:[0-9]+]] = arith.cmpi eq, %[[C]], %c0_i32{{.*}} : i32
// CHECK-NEXT:    scf.if %[[CLOSER]] {
// CHECK:           nvvm.barrier id = %c1_i32{{.*}} number_of_threads = %c256_i32

// One consumer warpgroup has nobody to take turns with.
// ONE: pingpong needs two or three consumer warpgroups to take turns, i.e. block-m = 128 or 192 (got block-m = 64)

func.func @d64(%q: memref<?x8x?x64xbf16>, %o: memref<?x8x?x64xbf16>) {
  fat.attention ins(%q, %q, %q : memref<?x8x?x64xbf16>, memref<?x8x?x64xbf16>, memref<?x8x?x64xbf16>)
      outs(%o : memref<?x8x?x64xbf16>)
  return
}
