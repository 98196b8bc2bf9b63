// RUN: fa-t-opt %s --fat-tile --fat-tensorize --fat-pipeline --convert-fat-to-nvvm | FileCheck %s
// RUN: fa-t-opt %s --fat-tile="seq-len=8192" --fat-tensorize --fat-pipeline --convert-fat-to-nvvm | FileCheck %s --check-prefix=LONG
// RUN: fa-t-opt %s --fat-tile="seq-len=1024" --fat-tensorize --fat-pipeline --convert-fat-to-nvvm | FileCheck %s --check-prefix=S1K
// RUN: fa-t-opt %s --fat-tile="seq-len=512" --fat-tensorize --fat-pipeline --convert-fat-to-nvvm | FileCheck %s --check-prefix=S512

// D = 256 has one Q buffer (64 KB of Q beside two 80-key K/V stages): the
// epilogue stages O in the last key block's V stage (stageOInV) instead of
// holding Q, in two rounds of 128 columns (8 warps × 16 rows × 256 bytes =
// 32 KB of the 40 KB stage).
// CHECK-LABEL: llvm.func @fat_attention_fwd_bf16_d256_h8_8_bhsd_m128n80s2_ol8t132(
// The work path releases Q after the tile's last S, before the drain's P·V
// (the Q ring's empty barrier: index 1 of its barriers at 229376), and the
// drain keeps its V stage.
// CHECK:         } {fat.order =
// CHECK:         %[[QE:[0-9]+]] = arith.addi %{{[0-9]+}}, %c1_i32{{[_0-9]*}} : i32
// CHECK:         %[[QEB:[0-9]+]] = arith.muli %[[QE]], %c8_i32{{[_0-9]*}} : i32
// CHECK-NEXT:    arith.addi %c229376_i32{{[_0-9]*}}, %[[QEB]] : i32
// CHECK:         nvvm.mbarrier.arrive
// CHECK:         wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16
// CHECK:         nvvm.wgmma.wait.group.sync.aligned 0
// CHECK-NOT:     nvvm.mbarrier.arrive
// CHECK:         } {fat.stage = "prologue"}
// The staging offset: the last block's stage s = (ring + kvHi − 1 − kvLo)
// mod 2, V stages at 147456 + 40960·s, warp region (4c + w)·4096; a tile
// without key blocks stages in Q instead. Then all 256 consumer threads
// meet at named barrier 4: every warpgroup's last P·V has read the stage.
// CHECK:         %[[S:[0-9]+]] = arith.remui %{{[0-9]+}}, %c2_i32{{.*}} : i32
// CHECK-NEXT:    %[[WORK:[0-9]+]] = arith.cmpi slt, %{{.+}}, %{{.+}} : i32
// CHECK:         %[[VS:[0-9]+]] = arith.muli %[[S]], %c40960_i32 : i32
// CHECK:         %[[VBUF:[0-9]+]] = arith.addi %c147456_i32{{.*}}, %[[VS]] : i32
// CHECK:         %[[K4:[0-9]+]] = arith.muli %{{[0-9]+}}, %c4_i32{{.*}} : i32
// CHECK-NEXT:    %[[KW:[0-9]+]] = arith.addi %[[K4]], %{{[0-9]+}} : i32
// CHECK:         %[[REGION:[0-9]+]] = arith.muli %[[KW]], %c4096_i32{{.*}} : i32
// CHECK-NEXT:    %[[INV:[0-9]+]] = arith.addi %[[VBUF]], %[[REGION]] : i32
// CHECK-NEXT:    %[[OFF:[0-9]+]] = arith.select %[[WORK]], %[[INV]], %{{[0-9]+}} : i32
// CHECK:         nvvm.barrier id = %c4_i32{{.*}} number_of_threads = %c256_i32
// Round 1: columns 0..127 (8 stmatrix.x4), read back and stored; round 2
// after the warp's barrier: columns 128..255 (column offset 128).
// CHECK-COUNT-8: nvvm.stmatrix
// CHECK:         nvvm.bar.warp.sync
// CHECK:         scf.for
// CHECK:           llvm.load %{{.+}} {alignment = 16 : i64} : !llvm.ptr<3> -> vector<4xi32>
// CHECK:           llvm.store %{{.+}}, %{{.+}} {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr<1>
// CHECK:         } {fat.stage = "epilogue"}
// CHECK:         nvvm.bar.warp.sync
// CHECK-COUNT-8: nvvm.stmatrix
// CHECK:         nvvm.bar.warp.sync
// CHECK:         scf.for
// CHECK:           arith.addi %{{.+}}, %c128_i64 : i64
// CHECK:           llvm.store %{{.+}}, %{{.+}} {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr<1>
// CHECK:         } {fat.stage = "epilogue"}
// Then the stage goes back to the producer without a branch: the arrive
// on the V ring's empty barrier of stage s (index 2 + s of its barriers at
// 229424) or, for a tile without key blocks, on Q's (index 1 at 229376;
// the tile index fenced so that this address is computed here).
// CHECK:         nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT:    %[[T:[0-9]+]] = llvm.inline_asm has_side_effects asm_dialect = att "", "=r,0" %arg{{[0-9]+}} : (i32) -> i32
// CHECK:         %[[QS1:[0-9]+]] = arith.remui %[[T]], %c1_i32{{[_0-9]*}} : i32
// CHECK:         %[[VS2:[0-9]+]] = arith.remui %{{[0-9]+}}, %c2_i32{{[_0-9]*}} : i32
// CHECK-NEXT:    %[[HAS:[0-9]+]] = arith.cmpi slt, %{{.+}}, %{{.+}} : i32
// CHECK:         %[[VE:[0-9]+]] = arith.addi %[[VS2]], %c2_i32{{[_0-9]*}} : i32
// CHECK:         %[[VEB:[0-9]+]] = arith.muli %[[VE]], %c8_i32{{[_0-9]*}} : i32
// CHECK-NEXT:    %[[VEO:[0-9]+]] = arith.addi %c229424_i32, %[[VEB]] : i32
// CHECK-NEXT:    %[[VBAR:[0-9]+]] = llvm.getelementptr %{{[0-9]+}}[%[[VEO]]]
// CHECK:         %[[QE:[0-9]+]] = arith.addi %[[QS1]], %c1_i32{{[_0-9]*}} : i32
// CHECK:         %[[QEB:[0-9]+]] = arith.muli %[[QE]], %c8_i32{{[_0-9]*}} : i32
// CHECK-NEXT:    %[[QEO:[0-9]+]] = arith.addi %c229376_i32{{[_0-9]*}}, %[[QEB]] : i32
// CHECK-NEXT:    %[[QBAR:[0-9]+]] = llvm.getelementptr %{{[0-9]+}}[%[[QEO]]]
// CHECK-NEXT:    %[[BAR:[0-9]+]] = llvm.select %[[HAS]], %[[VBAR]], %[[QBAR]] : i1, !llvm.ptr<3>
// CHECK-NEXT:    nvvm.mbarrier.arrive %[[BAR]] : !llvm.ptr<3>

// Tuned for 8k keys, a tile has ~100 key blocks and the barrier costs more
// than the stores save without a mask: O goes straight from the registers
// (stagingPays; the name says so: g); the causal kernel still stages.
// LONG-LABEL:  llvm.func @fat_attention_fwd_bf16_d256_h8_8_bhsd_m128n80s2g_ol8t132(
// LONG-NOT:      nvvm.stmatrix
// LONG:          llvm.store %{{.+}}, %{{.+}} {alignment = 4 : i64} : i32, !llvm.ptr<1>
// LONG-LABEL:  llvm.func @fat_attention_fwd_bf16_d256_h8_8_bhsd_causal_m128n80s2_ol8t132(
// LONG:          nvvm.stmatrix

// Tuned for 512 keys (1k causal) D = 256 takes 64-key blocks, which divide
// the keys where 80 leave a ragged seventh block (defaultBlockN); a 32 KB
// V stage still holds 128 columns of O per warp, in two rounds.
// S1K-LABEL:   llvm.func @fat_attention_fwd_bf16_d256_h8_8_bhsd_m128n80s2_ol8t132(
// S1K-LABEL:   llvm.func @fat_attention_fwd_bf16_d256_h8_8_bhsd_causal_m128n64s2_ol8t132(
// S1K:           nvvm.barrier id = %c4_i32{{.*}} number_of_threads = %c256_i32
// S1K-COUNT-8:   nvvm.stmatrix
// S512-LABEL:  llvm.func @fat_attention_fwd_bf16_d256_h8_8_bhsd_m128n64s2_ol8t132(
// S512-LABEL:  llvm.func @fat_attention_fwd_bf16_d256_h8_8_bhsd_causal_m128n64s2_ol8t132(

func.func @d256(%q: memref<?x8x?x256xbf16>, %k: memref<?x8x?x256xbf16>,
                %v: memref<?x8x?x256xbf16>, %o: memref<?x8x?x256xbf16>) {
  fat.attention ins(%q, %k, %v : memref<?x8x?x256xbf16>, memref<?x8x?x256xbf16>, memref<?x8x?x256xbf16>) outs(%o : memref<?x8x?x256xbf16>)
  return
}

func.func @d256_causal(%q: memref<?x8x?x256xbf16>, %k: memref<?x8x?x256xbf16>,
                       %v: memref<?x8x?x256xbf16>, %o: memref<?x8x?x256xbf16>) {
  fat.attention ins(%q, %k, %v : memref<?x8x?x256xbf16>, memref<?x8x?x256xbf16>, memref<?x8x?x256xbf16>) outs(%o : memref<?x8x?x256xbf16>) causal
  return
}
