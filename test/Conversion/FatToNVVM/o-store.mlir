// RUN: fa-t-opt %s --fat-tile="seq-len=1024" --fat-tensorize --fat-pipeline --convert-fat-to-nvvm | FileCheck %s --check-prefix=STAGED
// RUN: fa-t-opt %s --fat-tile="seq-len=1024" --fat-tensorize --fat-pipeline="o-store=direct" --convert-fat-to-nvvm | FileCheck %s --check-prefix=DIRECT
// RUN: fa-t-opt %s --fat-tile --fat-tensorize --fat-pipeline --convert-fat-to-nvvm | FileCheck %s --check-prefix=ONEQ
// RUN: not fa-t-opt %s --fat-tile="block-n=128" --fat-tensorize --fat-pipeline="persistent=on pingpong=off tile-overlap=on o-store=staged" --convert-fat-to-nvvm 2>&1 | FileCheck %s --check-prefix=BADTILE
// RUN: not fa-t-opt %s --fat-tile --fat-tensorize --fat-pipeline="persistent=off pingpong=off tile-overlap=off o-store=tma" --convert-fat-to-nvvm 2>&1 | FileCheck %s --check-prefix=BADWORD

// How the epilogue writes O (AttentionKernelConfig::stageO, the `o-store`
// option). D = 128 tuned for 1k keys: two Q buffers, 128-key blocks, O
// staged. Warp w of consumer c (from an opaque copy of the thread id, so
// LLVM cannot hoist the addresses into the main loop) stages its 16 rows
// at Q stage·32768 + box·16384 (box = w·4096 / 8192, two 8 KB boxes of the
// warpgroup's 64 rows) + c·8192 + w·4096 mod 8192.
// STAGED-LABEL:  llvm.func @fat_attention_fwd_bf16_d128_h8_8_bhsd_m128n128s2q2_opt132(
// STAGED-SAME:     %[[OPTR:arg3]]: !llvm.ptr<1>, %[[SB:arg4]]: i64, %[[SH:arg5]]: i64, %[[SS:arg6]]: i64, %[[SQ:arg7]]: i32
// STAGED:          %[[TID:[0-9]+]] = llvm.inline_asm has_side_effects asm_dialect = att "", "=r,0" %{{[0-9]+}} : (i32) -> i32
// STAGED:          %[[SLOT:[0-9]+]] = llvm.inline_asm has_side_effects asm_dialect = att "", "=r,0"
// STAGED:          %[[LANE:[0-9]+]] = arith.remui %[[TID]], %c32_i32{{.*}} : i32
// STAGED:          %[[LINEAR:[0-9]+]] = arith.muli %[[WARP:[0-9]+]], %c4096_i32 : i32
// STAGED:          %[[BOX:[0-9]+]] = arith.divui %[[LINEAR]], %c8192_i32 : i32
// STAGED:          %[[WITHIN:[0-9]+]] = arith.remui %[[LINEAR]], %c8192_i32{{.*}} : i32
// STAGED:          %[[SLOTMUL:[0-9]+]] = arith.muli %[[SLOT]], %c32768_i32 : i32
// STAGED:          %[[SLOTOFF:[0-9]+]] = arith.addi %c0_i32{{.*}}, %[[SLOTMUL]] : i32
// STAGED:          %[[BOXOFF:[0-9]+]] = arith.muli %[[BOX]], %c16384_i32 : i32
// STAGED:          %[[A:[0-9]+]] = arith.addi %[[SLOTOFF]], %[[BOXOFF]] : i32
// STAGED:          %[[CONS:[0-9]+]] = arith.muli %{{[0-9]+}}, %c8192_i32{{.*}} : i32
// STAGED:          %[[B:[0-9]+]] = arith.addi %[[CONS]], %[[WITHIN]] : i32
// STAGED:          %[[WARPOFF:[0-9]+]] = arith.addi %[[A]], %[[B]] : i32
// stmatrix .x4 rows: lane λ addresses row ρ = λ mod 8 + 8·(⌊λ/8⌋ mod 2) of
// chunk ⌊λ/16⌋ + 2j, at ρ·256 + 16·(chunk ⊕ (ρ mod 8)).
// STAGED:          %[[RHO:[0-9]+]] = arith.addi %{{[0-9]+}}, %{{[0-9]+}} : i32
// STAGED:          %[[CH:[0-9]+]] = arith.divui %{{[0-9]+}}, %c2_i32{{.*}} : i32
// STAGED:          %[[CH0:[0-9]+]] = arith.addi %[[CH]], %c0_i32{{.*}} : i32
// STAGED:          %[[R7:[0-9]+]] = arith.andi %[[RHO]], %c7_i32 : i32
// STAGED:          %[[SW:[0-9]+]] = arith.xori %[[CH0]], %[[R7]] : i32
// STAGED:          %[[ROWOFF:[0-9]+]] = arith.muli %[[RHO]], %c256_i32 : i32
// STAGED:          %[[T:[0-9]+]] = arith.addi %[[WARPOFF]], %[[ROWOFF]] : i32
// STAGED:          %[[SWOFF:[0-9]+]] = arith.muli %[[SW]], %c16_i32{{.*}} : i32
// STAGED:          %[[ADDR0:[0-9]+]] = arith.addi %[[T]], %[[SWOFF]] : i32
// The read-back's lane split: chunk λ mod 16 of row ⌊λ/16⌋ + k, k = 0, 2,
// .., 14, to be stored to O[b, h, row, 8·chunk].
// STAGED:          %[[LROW:[0-9]+]] = arith.divui %[[LANE]], %c16_i32{{.*}} : i32
// STAGED:          %[[LCH:[0-9]+]] = arith.remui %[[LANE]], %c16_i32{{.*}} : i32
// STAGED:          %[[ROW0:[0-9]+]] = arith.addi %{{[0-9]+}}, %[[LROW]] : i32
// STAGED:          %[[ROWIDX:[0-9]+]] = arith.muli %{{[0-9]+}}, %[[SS]] : i64
// STAGED:          %[[COL:[0-9]+]] = arith.muli %[[LCH]], %c8_i32{{.*}} : i32
// STAGED:          %[[P0:[0-9]+]] = llvm.getelementptr %{{[0-9]+}}[%[[ADDR0]]] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
// STAGED:          nvvm.stmatrix %[[P0]], %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<row>, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>}
// Dv/16 = 8 of them (16 chunks of 8 columns, two per stmatrix; all of Dv
// in one round in Q), then the warp's barrier before it reads back what
// its other lanes wrote; a store only if row < Sq, 16 bytes.
// STAGED-COUNT-7:  nvvm.stmatrix
// STAGED:          nvvm.bar.warp.sync %c-1_i32
// STAGED:          scf.for %[[K:arg[0-9]+]] = %c0_i32{{.*}} to %c16_i32{{.*}} step %c2_i32{{.*}} : i32 {
// STAGED:            %[[R:[0-9]+]] = arith.addi %[[LROW]], %[[K]] : i32
// STAGED:            %[[R7B:[0-9]+]] = arith.andi %[[R]], %c7_i32{{.*}} : i32
// STAGED:            %[[SWB:[0-9]+]] = arith.xori %[[LCH]], %[[R7B]] : i32
// STAGED:            %[[RB:[0-9]+]] = arith.muli %[[R]], %c256_i32{{.*}} : i32
// STAGED:            %[[TB:[0-9]+]] = arith.addi %[[WARPOFF]], %[[RB]] : i32
// STAGED:            %[[VEC:[0-9]+]] = llvm.load %{{[0-9]+}} {alignment = 16 : i64} : !llvm.ptr<3> -> vector<4xi32>
// STAGED:            %[[GROW:[0-9]+]] = arith.addi %[[ROW0]], %[[K]] : i32
// STAGED:            %[[IN:[0-9]+]] = arith.cmpi slt, %[[GROW]], %[[SQ]] : i32
// STAGED:            scf.if %[[IN]] {
// STAGED:              %[[GP:[0-9]+]] = llvm.getelementptr %[[OPTR]][%{{[0-9]+}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i16
// STAGED:              llvm.store %[[VEC]], %[[GP]] {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr<1>
// STAGED:            } {fat.stage = "epilogue"}
// Only then is the tile's Q released (the Q ring's empty barrier of the
// tile's buffer t mod 2, index 2 + t mod 2 of its barriers at 196608,
// after a proxy fence: the producer's TMA overwrites these bytes next);
// the tile index is fenced, so the address is computed here.
// STAGED:          nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// STAGED-NEXT:     %[[T:[0-9]+]] = llvm.inline_asm has_side_effects asm_dialect = att "", "=r,0" %arg{{[0-9]+}} : (i32) -> i32
// STAGED:          %[[QS:[0-9]+]] = arith.remui %[[T]], %c2_i32{{[_0-9]*}} : i32
// STAGED:          %[[QE:[0-9]+]] = arith.addi %[[QS]], %c2_i32{{[_0-9]*}} : i32
// STAGED:          %[[QEB:[0-9]+]] = arith.muli %[[QE]], %c8_i32{{[_0-9]*}} : i32
// STAGED:          arith.addi %c196608_i32{{[_0-9]*}}, %[[QEB]] : i32
// STAGED:          nvvm.mbarrier.arrive
// STAGED-NOT:      llvm.store %{{.+}} : i32, !llvm.ptr<1>

// o-store=direct: the same kernel named with g, each pair a 4-byte store
// per row from the registers, and Q released after the last S (before the
// drain's P·V), not after the epilogue.
// DIRECT-LABEL:  llvm.func @fat_attention_fwd_bf16_d128_h8_8_bhsd_m128n128s2q2g_opt132(
// DIRECT-NOT:      nvvm.stmatrix
// DIRECT:          nvvm.mbarrier.arrive
// DIRECT:          } {fat.order =
// DIRECT:          nvvm.mbarrier.arrive
// DIRECT:          wgmma.mma_async
// DIRECT:          } {fat.stage = "epilogue"}
// DIRECT:          llvm.store %{{.+}}, %{{.+}} {alignment = 4 : i64} : i32, !llvm.ptr<1>
// DIRECT-NOT:      nvvm.stmatrix
// DIRECT-NOT:      vector<4xi32>, !llvm.ptr<1>

// Untuned, D = 128 takes 176-key blocks and one Q buffer: holding it
// through the epilogue would delay the next tile's Q, which costs more
// than the direct stores do at Dv = 128 (stagingPays), so O stays direct
// there and the name carries no g.
// ONEQ-LABEL:    llvm.func @fat_attention_fwd_bf16_d128_h8_8_bhsd_m128n176s2_opt132(
// ONEQ-NOT:        nvvm.stmatrix
// ONEQ:            llvm.store %{{.+}}, %{{.+}} {alignment = 4 : i64} : i32, !llvm.ptr<1>

// BADTILE: error: 'fat.attention' op o-store=staged needs Dv <= D (each warpgroup stages its O in its own rows of the Q buffer; got D = 128, Dv = 128), no tile overlap (which stores a tile's O during the next tile), 240 consumer registers (block-m <= 128) and, with one Q buffer and persistent CTAs, overlap and 64 columns of O per warp in a V stage (O is staged there): use o-store=direct or auto
// BADWORD: fat-pipeline: o-store must be 'auto', 'staged' or 'direct', got 'tma'

func.func @attn(%q: memref<?x8x?x128xbf16>, %k: memref<?x8x?x128xbf16>,
                %v: memref<?x8x?x128xbf16>, %o: memref<?x8x?x128xbf16>) {
  fat.attention ins(%q, %k, %v : memref<?x8x?x128xbf16>, memref<?x8x?x128xbf16>, memref<?x8x?x128xbf16>) outs(%o : memref<?x8x?x128xbf16>)
  return
}
