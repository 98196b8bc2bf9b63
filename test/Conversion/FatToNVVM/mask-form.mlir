// RUN: fa-t-opt %s --fat-tile="seq-len=4096" --fat-tensorize --fat-pipeline --convert-fat-to-nvvm | FileCheck %s --check-prefix=CHAINED
// RUN: fa-t-opt %s --fat-tile="seq-len=4096" --fat-tensorize --fat-pipeline="tile-overlap=off" --convert-fat-to-nvvm | FileCheck %s --check-prefix=BYKEY
// RUN: fa-t-opt %s --fat-tile --fat-tensorize --fat-pipeline --convert-fat-to-nvvm | FileCheck %s --check-prefix=TURNS

// The two forms of a masked block (AttentionKernelConfig::maskByRowLimits).
// Element d[4i + 2r + e] holds key c0 + k, k = 8i + e, c0 = j·N + 2t.
//
// Tuned for 4k keys, causal D = 64 takes 192 query rows (three 160-register
// warpgroups) with tile overlap, tensor-core row sums and the dynamic tile
// scheduler (B, then the tile counter, last); its mask compares
// the constant k with one limit per row, min(Skv − 1 − c0, row + diag − c0).
// CHAINED:      llvm.func @fat_attention_fwd_bf16_d64_h8_8_bhsd_causal_m192n128s2q2_ort132cd(
// CHAINED-SAME:   %{{[a-z0-9]+}}: i32, %[[SKV:[a-z0-9]+]]: i32, %[[DIAG:[a-z0-9]+]]: i32, %{{[a-z0-9]+}}: f32, %{{[a-z0-9]+}}: i32, %{{[a-z0-9]+}}: !llvm.ptr<1>)
// CHAINED:        %[[SKV1:[0-9]+]] = arith.subi %[[SKV]], %c1_i32{{.*}} : i32
// CHAINED-NEXT:   %[[TAIL:[0-9]+]] = arith.subi %[[SKV1]], %[[C0:[0-9]+]] : i32
// CHAINED:        %[[ROW:[0-9]+]] = arith.addi %{{.+}}, %[[DIAG]] : i32
// CHAINED:        %[[ROWK:[0-9]+]] = arith.addi %[[ROW]], %c0_i32{{.*}} : i32
// CHAINED-NEXT:   %[[ROWLIM:[0-9]+]] = arith.subi %[[ROWK]], %[[C0]] : i32
// CHAINED-NEXT:   %[[LIM:[0-9]+]] = arith.minsi %[[TAIL]], %[[ROWLIM]] : i32
// CHAINED:        %[[VIS:[0-9]+]] = arith.cmpi sle, %c0_i32{{.*}}, %[[LIM]] : i32
// CHAINED-NEXT:   arith.select %[[VIS]], %{{.+}}, %cst{{.*}} : f32
// CHAINED:        } {fat.stage = "mask"}

// The same kernel without tile overlap builds each key's index and compares
// it with Skv and the row's diagonal (the limits would spill there).
// BYKEY:        llvm.func @fat_attention_fwd_bf16_d64_h8_8_bhsd_causal_m192n128s2q2_ort132d(
// BYKEY-SAME:     %{{[a-z0-9]+}}: i32, %[[SKV:[a-z0-9]+]]: i32, %[[DIAG:[a-z0-9]+]]: i32, %{{[a-z0-9]+}}: f32, %{{[a-z0-9]+}}: i32, %{{[a-z0-9]+}}: !llvm.ptr<1>)
// BYKEY:          %{{[0-9]+}}:64 = scf.if %{{.+}} -> (f32,
// BYKEY:            %[[ROW:[0-9]+]] = arith.addi %{{.+}}, %[[DIAG]] : i32
// BYKEY:            %[[COL:[0-9]+]] = arith.addi %[[C0:[0-9]+]], %c0_i32{{.*}} : i32
// BYKEY-NEXT:       %[[IN:[0-9]+]] = arith.cmpi slt, %[[COL]], %[[SKV]] : i32
// BYKEY-NEXT:       %[[BELOW:[0-9]+]] = arith.cmpi sle, %[[COL]], %[[ROW]] : i32
// BYKEY-NEXT:       %[[VIS:[0-9]+]] = arith.andi %[[IN]], %[[BELOW]] : i1
// BYKEY-NEXT:       %[[KEEP:[0-9]+]] = llvm.inline_asm asm_dialect = att "mov.pred $0, $1;", "=b,b" %[[VIS]] : (i1) -> i1
// BYKEY-NEXT:       arith.select %[[KEEP]], %{{.+}}, %cst{{.*}} : f32
// BYKEY-NOT:        arith.minsi
// BYKEY:          } {fat.stage = "mask"}

// Below 4k keys: two 240-register warpgroups taking turns, per-row limits.
// TURNS:        llvm.func @fat_attention_fwd_bf16_d64_h8_8_bhsd_causal_m128n128s2q2_oprt132(
// TURNS:          arith.minsi
// TURNS:          } {fat.stage = "mask"}

func.func @causal(%q: memref<?x8x?x64xbf16>, %o: memref<?x8x?x64xbf16>) {
  fat.attention ins(%q, %q, %q : memref<?x8x?x64xbf16>, memref<?x8x?x64xbf16>, memref<?x8x?x64xbf16>)
      outs(%o : memref<?x8x?x64xbf16>) causal
  return
}
