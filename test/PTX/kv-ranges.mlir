// RUN: fa-t-opt %s --fat-tile | FileCheck %s --check-prefix=TILE
// RUN: fa-t-opt %s --fat-tile --fat-decompose | FileCheck %s --check-prefix=CPU
// RUN: fa-t-opt %s --fat-tile --fat-tensorize --fat-pipeline | FileCheck %s --check-prefix=PIPE
// RUN: fa-t-opt %s --fat-tile --fat-tensorize --fat-pipeline --convert-fat-to-nvvm | FileCheck %s --check-prefix=NVVM
// RUN: rm -rf %t && mkdir -p %t && fa-t-opt %s --fat-to-ptx="output-dir=%t" -o %t/out.mlir
// RUN: cat %t/*.json | FileCheck %s --check-prefix=JSON
// RUN: cat %t/*.ptx | FileCheck %s --check-prefix=PTX

// Block sparsity by key ranges: `kv_ranges = 1` names capture 1 as
// [first key, end key) per batch and 64 query rows. fat.mask_mod carries it
// (`kv_ranges = 1`): its CPU decomposition conjoins the range test with the
// region per element, the kernel's lowering once per key (a warpgroup's 64
// rows are one group); the kernel narrows each tile's key blocks to the union of its
// rows' ranges, in both roles, so the producer loads and the consumer
// computes only those blocks. A four-column table adds the full range
// [r2, r3) per group, where the mask is promised true: the test stays
// mask ∧ r0 ≤ j < r1, and the kernel runs no fat.mask_mod on a block inside
// the warpgroup's [r0, r1) ∩ [r2, r3).

// In the PTX the range test and the region's predicate join as predicates
// and one selp per element keeps the score or writes −∞: the join passes an
// identity mov.pred, without which NVPTX selects once per condition (three
// selp per element here, which ptxas keeps as three FSEL).
// PTX:         mov.pred %p[[K:[0-9]+]], %p{{[0-9]+}};
// PTX-NEXT:    // end inline asm
// PTX-NEXT:    selp.f32 %r[[X:[0-9]+]], %r{{[0-9]+}}, 0fFF800000, %p[[K]];
// PTX-NOT:     selp.f32 %r{{[0-9]+}}, %r[[X]], 0fFF800000
// PTX:         mov.pred

// TILE-LABEL: func.func @documents
// TILE:         fat.mask_mod %{{.+}} captures(%{{.+}}, %{{.+}} : tensor<2x1000xi32>, tensor<2x16x2xi32>) {
// TILE:           %[[SAME:[a-z0-9]+]] = arith.cmpi eq
// TILE-NEXT:      fat.yield %[[SAME]] : i1
// TILE-NEXT:    } {kv_ranges = 1 : i64} : tensor<128x128xf32>

// The CPU form: keep = region ∧ r[b, ⌊i'/64⌋, 0] ≤ j' < r[b, ⌊i'/64⌋, 1].
// CPU-LABEL: func.func @documents
// CPU:         linalg.generic
// CPU:           %[[I:[0-9]+]] = arith.minsi
// CPU-NEXT:      %[[J:[0-9]+]] = arith.minsi
// CPU:           %[[SAME:[0-9]+]] = arith.cmpi eq
// CPU-NEXT:      %[[G:[0-9]+]] = arith.divui %[[I]], %c64 : index
// CPU-NEXT:      %[[JJ:[0-9]+]] = arith.index_cast %[[J]] : index to i32
// CPU-NEXT:      %[[LO:[a-z0-9_]+]] = tensor.extract %{{.+}}[%{{.+}}, %[[G]], %c0] : tensor<2x16x2xi32>
// CPU-NEXT:      %[[GE:[0-9]+]] = arith.cmpi sge, %[[JJ]], %[[LO]] : i32
// CPU-NEXT:      %[[HI:[a-z0-9_]+]] = tensor.extract %{{.+}}[%{{.+}}, %[[G]], %c1] : tensor<2x16x2xi32>
// CPU-NEXT:      %[[LT:[0-9]+]] = arith.cmpi slt, %[[JJ]], %[[HI]] : i32
// CPU-NEXT:      %[[IN:[0-9]+]] = arith.andi %[[GE]], %[[LT]] : i1
// CPU-NEXT:      %[[KEEP:[0-9]+]] = arith.andi %[[SAME]], %[[IN]] : i1
// CPU-NEXT:      arith.select %[[KEEP]]

// The kernel: fat.key_block_range lowered (per group two loads of the table,
// four per role; the union's blocks min(first)/N .. ⌈max(end)/N⌉), then in
// the mask region the warpgroup group's bounds loaded once, the test once
// per key and conjoined with the region of each of its two rows (here the
// version whose document reads lie in bounds, its keys not clamped:
// fragment-mods.mlir).
// NVVM-LABEL: llvm.func @fat_attention_fwd_bf16_d128_h16_16_bhsd_causal_mod
// NVVM-COUNT-4: llvm.load %{{[0-9]+}} invariant {alignment = 4 : i64} : !llvm.ptr<1> -> i32
// NVVM:         arith.divsi %{{[0-9]+}}, %c128_i32{{[_0-9]*}} : i32
// NVVM:         arith.divsi %{{[0-9]+}}, %c128_i32{{[_0-9]*}} : i32
// NVVM:         %[[GE:[0-9]+]] = arith.cmpi sge, %[[K:[0-9]+]], %[[LO:[0-9]+]] : i32
// NVVM-NEXT:    %[[LT:[0-9]+]] = arith.cmpi slt, %[[K]], %[[HI:[0-9]+]] : i32
// NVVM-NEXT:    %[[IN:[0-9]+]] = arith.andi %[[GE]], %[[LT]] : i1
// NVVM:         %[[SAME0:[0-9]+]] = arith.cmpi eq
// NVVM-NEXT:    %[[KEEP0:[0-9]+]] = arith.andi %[[SAME0]], %[[IN]] : i1
// NVVM-NEXT:    %[[PRED0:[0-9]+]] = llvm.inline_asm asm_dialect = att "mov.pred $0, $1;", "=b,b" %[[KEEP0]] : (i1) -> i1
// NVVM-NEXT:    arith.select %[[PRED0]]
// NVVM:         %[[SAME1:[0-9]+]] = arith.cmpi eq
// NVVM-NEXT:    %[[KEEP1:[0-9]+]] = arith.andi %[[SAME1]], %[[IN]] : i1
// NVVM-NEXT:    %[[PRED1:[0-9]+]] = llvm.inline_asm asm_dialect = att "mov.pred $0, $1;", "=b,b" %[[KEEP1]] : (i1) -> i1
// NVVM-NEXT:    arith.select %[[PRED1]]
// NVVM-NEXT:    %{{.+}} = arith.constant 1 : i32
// NVVM-NEXT:    %[[K1:[0-9]+]] = arith.addi %{{.+}} overflow<nsw> : i32
// NVVM-NEXT:    %{{.+}} = arith.index_cast %[[K1]]
// NVVM-NEXT:    arith.cmpi sge, %[[K1]], %[[LO]] : i32
// NVVM-NEXT:    arith.cmpi slt, %{{[0-9]+}}, %[[HI]] : i32

// Where the ranges follow captured data (the document ids beside them) the
// tiles' costs are data too: persistent CTAs take them from a counter, the
// dynamic tile scheduler, chained by the tile overlap (choosePipeline;
// tile-scheduler.mlir); a mask of positions keeps the static order.
// PIPE:         func.func @documents(
// PIPE:         fat.launch {{.+}}persistent = true, pingpong = false{{.+}}tile_overlap = true, tile_scheduler = "dynamic"
// PIPE:         func.func @documents_full(
// PIPE:         fat.launch {{.+}}persistent = true, pingpong = false{{.+}}tile_overlap = true, tile_scheduler = "dynamic"
// PIPE:         func.func @prefix_full(
// PIPE:         fat.launch {{.+}}persistent = true{{.+}}tile_scheduler = "static"

// Each role narrows every tile's key blocks with fat.key_block_range
// (block-m 128: two groups) at the top of its tile loop — the producer
// thread's before it acquires the tile's Q, the consumers' before their
// first Q·Kᵀ; a two-column table has no full range, so no block skips the
// mask region.
// PIPE:         llvm.func @{{[a-z0-9_]+}}({{.+}}, %[[RANGES:[a-z0-9]+]]: !llvm.ptr<1>)
// PIPE:         fat.warp_specialize
// PIPE:         fat.tile_loop longest_first
// PIPE:         fat.key_block_range %{{.+}}, %{{.+}} rows(%{{.+}}, %{{.+}}) batch(%{{.+}}) ranges(%[[RANGES]] : !llvm.ptr<1>) {block_m = 128 : i64, block_n = 128 : i64, table = array<i64: 2, 16, 2>}
// PIPE-NEXT:    arith.maxsi
// PIPE-NEXT:    fat.ring_acquire
// PIPE:         fat.tile_loop longest_first
// PIPE:         fat.key_block_range %{{.+}}, %{{.+}} rows(%{{.+}}, %{{.+}}) batch(%{{.+}}) ranges(%[[RANGES]] : !llvm.ptr<1>)
// PIPE-NEXT:    arith.maxsi
// PIPE-NOT:     fat.key_block_range
// PIPE:         fat.mask_mod
// PIPE:         } {kv_ranges = 1 : i64} : tensor<64x128xf32, #fat.wgmma_fragment>
// PIPE-NOT:     fat.full_key_block
// PIPE-NOT:     fat.stage = "mask_mod"

// TILE-LABEL: func.func @documents_full
// TILE:         fat.mask_mod %{{.+}} captures(%{{.+}}, %{{.+}} : tensor<2x1000xi32>, tensor<2x16x4xi32>) {
// TILE:           %[[SAME:[a-z0-9]+]] = arith.cmpi eq
// TILE-NEXT:      fat.yield %[[SAME]] : i1
// TILE-NEXT:    } {kv_ranges = 1 : i64} : tensor<128x128xf32>

// The consumer's full-block test (fat.full_key_block for the warpgroup's
// row and the causal edge) chooses between the tile as it is and the mask
// region, in both consumer paths (the first block, the loop).
// PIPE:         gpu.module
// PIPE:         %[[FULL:[0-9]+]] = fat.full_key_block %{{.+}} row(%[[WGROW:[0-9]+]]) batch(%{{[a-z0-9]+}}) ranges(%{{.+}} : !llvm.ptr<1>) edge(%{{.+}}) {block_n = 128 : i64, right = 0 : i64, table = array<i64: 2, 16, 4>}
// PIPE-NEXT:    %{{[0-9]+}} = scf.if %[[FULL]] -> (tensor<64x128xf32, #fat.wgmma_fragment>) {
// PIPE-NEXT:      scf.yield %[[S:[0-9]+]] : tensor<64x128xf32, #fat.wgmma_fragment>
// PIPE-NEXT:    } else {
// PIPE-NEXT:      fat.mask_mod %[[S]]
// PIPE:         } {kv_ranges = 1 : i64} : tensor<64x128xf32, #fat.wgmma_fragment>
// PIPE:         } {fat.stage = "mask_mod"}
// PIPE:         fat.full_key_block %{{.+}} row(%[[WGROW]])
// PIPE-NEXT:    scf.if %{{[0-9]+}} -> (tensor<64x128xf32, #fat.wgmma_fragment>) {
// PIPE:           fat.mask_mod
// PIPE:         } {fat.stage = "mask_mod"}

// Its lowering: j·N ≥ max(r0, r2) ∧ j·N + N ≤ min(r1', r3), where r1' ignores
// an end at or past the last row's diagonal (wgRow + 63 + diag + 1): those
// keys are fat.mask's, so a diagonal block inside a document skips the
// region too.
// NVVM-LABEL:   llvm.func @fat_attention_fwd_bf16_d128_h16_16_bhsd_causal_moda7455167
// NVVM:         %[[E0:[0-9]+]] = arith.addi %[[WGROW:[0-9]+]], %c63_i32{{[_0-9]*}} : i32
// NVVM-NEXT:    %[[E1:[0-9]+]] = arith.addi %[[E0]], %arg9 : i32
// NVVM-NEXT:    %[[ONE:[a-z0-9_]+]] = arith.constant 1 : i32
// NVVM-NEXT:    %[[EDGE:[0-9]+]] = arith.addi %[[E1]], %[[ONE]] : i32
// NVVM-NEXT:    %[[PAST:[0-9]+]] = arith.cmpi sge, %[[R1:[0-9]+]], %[[EDGE]] : i32
// NVVM-NEXT:    %[[MAX:[a-z0-9_]+]] = arith.constant 2147483647 : i32
// NVVM-NEXT:    %[[END:[0-9]+]] = arith.select %[[PAST]], %[[MAX]], %[[R1]] : i32
// NVVM:         %[[LO:[0-9]+]] = arith.maxsi %{{[0-9]+}}, %{{[0-9]+}} : i32
// NVVM:         %[[HI:[0-9]+]] = arith.minsi %[[END]], %{{[0-9]+}} : i32
// NVVM-NEXT:    %[[N:[a-z0-9_]+]] = arith.constant 128 : i32
// NVVM-NEXT:    %[[K0:[0-9]+]] = arith.muli %{{[a-z0-9_]+}}, %[[N]] : i32
// NVVM-NEXT:    %[[GE:[0-9]+]] = arith.cmpi sge, %[[K0]], %[[LO]] : i32
// NVVM:         %[[K1:[0-9]+]] = arith.addi %[[K0]], %{{[a-z0-9_]+}} : i32
// NVVM-NEXT:    %[[LE:[0-9]+]] = arith.cmpi sle, %[[K1]], %[[HI]] : i32
// NVVM-NEXT:    %{{[0-9]+}} = arith.andi %[[GE]], %[[LE]] : i1

// Without a causal mask the range's end bounds the full block as it is.
// PIPE:         gpu.module
// PIPE:         %[[FULL:[0-9]+]] = fat.full_key_block %{{.+}} row(%{{[0-9]+}}) batch(%{{[a-z0-9]+}}) ranges(%{{.+}} : !llvm.ptr<1>) {block_n = 128 : i64, table = array<i64: 2, 16, 4>}
// PIPE-NEXT:    %{{[0-9]+}} = scf.if %[[FULL]] -> (tensor<64x128xf32, #fat.wgmma_fragment>) {
// PIPE:         } {kv_ranges = 0 : i64} : tensor<64x128xf32, #fat.wgmma_fragment>
// PIPE:         } {fat.stage = "mask_mod"}
// This kernel splits its steady loop (ping-pong, no lazy rescale): the first
// copy runs while the blocks are the warpgroup's full ones — it starts at a
// full block and ends at fat.full_key_blocks' end (or the ragged tail's
// block) — without the mask region; the second has the full-block branch.
// PIPE:         %[[F0:[a-z0-9_]+]], %[[F1:[a-z0-9_]+]] = fat.full_key_blocks row(%{{[0-9]+}}) batch(%{{[a-z0-9]+}}) ranges(%{{.+}} : !llvm.ptr<1>) {block_n = 128 : i64, table = array<i64: 2, 16, 4>}
// PIPE-NEXT:    %[[FROMFULL:[0-9]+]] = arith.cmpi sge, %[[LO:[0-9]+]], %[[F0]] : i32
// PIPE-NEXT:    %[[END:[0-9]+]] = arith.minsi %{{[0-9]+}}, %[[F1]] : i32
// PIPE-NEXT:    %[[SPLIT:[0-9]+]] = arith.select %[[FROMFULL]], %[[END]], %[[LO]] : i32
// PIPE:         %[[MID:[0-9]+]] = arith.maxsi %[[LO]], %{{[0-9]+}} : i32
// PIPE:         scf.for %{{.+}} = %[[LO]] to %[[MID]]
// PIPE-NOT:       fat.mask_mod
// PIPE:         } {fat.order = {{.+}}, fat.stage = "mainloop"}
// PIPE:         scf.for %{{.+}} = %[[MID]] to
// PIPE:           fat.full_key_block
// PIPE:           fat.mask_mod
// NVVM-LABEL:   llvm.func @fat_attention_fwd_bf16_d128_h16_16_bhsd_mod
// NVVM-NOT:     %c63_i32
// NVVM:         arith.cmpi sle

// JSON:        "tensor": "capture1"
// JSON:        "tensor": "capture1"
// JSON:        "tensor": "capture0"

func.func @documents(%q: tensor<2x16x1000x128xbf16>, %k: tensor<2x16x1000x128xbf16>,
                     %v: tensor<2x16x1000x128xbf16>, %o: tensor<2x16x1000x128xbf16>,
                     %doc: tensor<2x1000xi32>, %r: tensor<2x16x2xi32>)
    -> tensor<2x16x1000x128xbf16> {
  %res = fat.attention ins(%q, %k, %v : tensor<2x16x1000x128xbf16>, tensor<2x16x1000x128xbf16>, tensor<2x16x1000x128xbf16>)
      outs(%o : tensor<2x16x1000x128xbf16>)
      captures(%doc, %r : tensor<2x1000xi32>, tensor<2x16x2xi32>) causal
      mask {
      ^bb0(%b: index, %h: index, %i: index, %j: index, %d: tensor<2x1000xi32>, %rr: tensor<2x16x2xi32>):
        %di = tensor.extract %d[%b, %i] : tensor<2x1000xi32>
        %dj = tensor.extract %d[%b, %j] : tensor<2x1000xi32>
        %same = arith.cmpi eq, %di, %dj : i32
        fat.yield %same : i1
      } {kv_ranges = 1 : i64} -> tensor<2x16x1000x128xbf16>
  return %res : tensor<2x16x1000x128xbf16>
}

func.func @documents_full(%q: tensor<2x16x1000x128xbf16>, %k: tensor<2x16x1000x128xbf16>,
                     %v: tensor<2x16x1000x128xbf16>, %o: tensor<2x16x1000x128xbf16>,
                     %doc: tensor<2x1000xi32>, %r: tensor<2x16x4xi32>)
    -> tensor<2x16x1000x128xbf16> {
  %res = fat.attention ins(%q, %k, %v : tensor<2x16x1000x128xbf16>, tensor<2x16x1000x128xbf16>, tensor<2x16x1000x128xbf16>)
      outs(%o : tensor<2x16x1000x128xbf16>)
      captures(%doc, %r : tensor<2x1000xi32>, tensor<2x16x4xi32>) causal
      mask {
      ^bb0(%b: index, %h: index, %i: index, %j: index, %d: tensor<2x1000xi32>, %rr: tensor<2x16x4xi32>):
        %di = tensor.extract %d[%b, %i] : tensor<2x1000xi32>
        %dj = tensor.extract %d[%b, %j] : tensor<2x1000xi32>
        %same = arith.cmpi eq, %di, %dj : i32
        fat.yield %same : i1
      } {kv_ranges = 1 : i64} -> tensor<2x16x1000x128xbf16>
  return %res : tensor<2x16x1000x128xbf16>
}

func.func @prefix_full(%q: tensor<2x16x1000x128xbf16>, %k: tensor<2x16x1000x128xbf16>,
                       %v: tensor<2x16x1000x128xbf16>, %o: tensor<2x16x1000x128xbf16>,
                       %r: tensor<2x16x4xi32>) -> tensor<2x16x1000x128xbf16> {
  %res = fat.attention ins(%q, %k, %v : tensor<2x16x1000x128xbf16>, tensor<2x16x1000x128xbf16>, tensor<2x16x1000x128xbf16>)
      outs(%o : tensor<2x16x1000x128xbf16>)
      captures(%r : tensor<2x16x4xi32>)
      mask {
      ^bb0(%b: index, %h: index, %i: index, %j: index, %rr: tensor<2x16x4xi32>):
        %c300 = arith.constant 300 : index
        %prefix = arith.cmpi ult, %j, %c300 : index
        %past = arith.cmpi ule, %j, %i : index
        %keep = arith.ori %prefix, %past : i1
        fat.yield %keep : i1
      } {kv_ranges = 0 : i64} -> tensor<2x16x1000x128xbf16>
  return %res : tensor<2x16x1000x128xbf16>
}
