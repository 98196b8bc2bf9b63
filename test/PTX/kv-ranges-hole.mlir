// RUN: fa-t-opt %s --fat-tile --fat-decompose | FileCheck %s --check-prefix=CPU
// RUN: fa-t-opt %s --fat-tile --fat-tensorize --fat-pipeline | FileCheck %s --check-prefix=PIPE
// RUN: fa-t-opt %s --fat-tile --fat-tensorize --fat-pipeline --convert-fat-to-nvvm | FileCheck %s --check-prefix=NVVM
// RUN: rm -rf %t && mkdir -p %t && fa-t-opt %s --fat-to-ptx="output-dir=%t" -o %t/out.mlir
// RUN: ls %t | FileCheck %s --check-prefix=FILES

// A six-column kv_ranges table: after (first, end) and the full range, a
// hole [r4, r5) per 64 query rows that no row of the group sees — here a
// causal sliding window of 1024 keys with 4 attention sinks, whose rows
// past the window see keys [0, 4) and (i − 1024, i]. The hole is a promise,
// as the full range is: the CPU decomposition's range test reads columns 0
// and 1 only, and the kernel walks around the key blocks inside every
// group's hole of its tile (fat.key_block_hole, both roles).

// CPU-LABEL: func.func @sinks
// CPU:         %[[LO:[a-z0-9_]+]] = tensor.extract %{{.+}}[%{{.+}}, %{{.+}}, %c0] : tensor<1x64x6xi32>
// CPU:         %[[HI:[a-z0-9_]+]] = tensor.extract %{{.+}}[%{{.+}}, %{{.+}}, %c1] : tensor<1x64x6xi32>
// CPU-NOT:     %c4] : tensor<1x64x6xi32>

// Both roles: the tile's blocks, then its hole inside them; the walk counts
// end − first − (hole_end − hole_first) blocks from first.
// PIPE-LABEL:   gpu.module
// PIPE:         %[[FIRST:[a-z0-9_]+]], %[[END:[a-z0-9_]+]] = fat.key_block_range %{{.+}}, %{{.+}} rows(%[[R0:[0-9]+]], %[[R1:[0-9]+]]) batch(%[[B:[a-z0-9]+]]) ranges(%[[T:[a-z0-9]+]] : !llvm.ptr<1>) {block_m = 128 : i64, block_n = 128 : i64, table = array<i64: 1, 64, 6>}
// PIPE-NEXT:    %[[HI:[0-9]+]] = arith.maxsi %[[END]], %[[FIRST]] : i32
// PIPE-NEXT:    %[[H0:[a-z0-9_]+]], %[[H1:[a-z0-9_]+]] = fat.key_block_hole %[[FIRST]], %[[END]] rows(%[[R0]], %[[R1]]) batch(%[[B]]) ranges(%[[T]] : !llvm.ptr<1>) {block_m = 128 : i64, block_n = 128 : i64, table = array<i64: 1, 64, 6>}
// PIPE-NEXT:    %[[LEN:[0-9]+]] = arith.subi %[[H1]], %[[H0]] : i32
// PIPE-NEXT:    %[[COUNT:[0-9]+]] = arith.subi %[[HI]], %[[LEN]] : i32
// The producer: the walk's j-th block is j, or j + len at and past the hole.
// PIPE:         scf.for %[[J:[a-z0-9]+]] = %[[FIRST]] to %[[COUNT]]
// PIPE:           %[[PAST:[0-9]+]] = arith.cmpi sge, %[[J]], %[[H0]] : i32
// PIPE-NEXT:      %{{.+}} = arith.constant 0 : i32
// PIPE-NEXT:      %[[SKIP:[0-9]+]] = arith.select %[[PAST]], %[[LEN]], %{{.+}} : i32
// PIPE-NEXT:      %[[BLOCK:[0-9]+]] = arith.addi %[[J]], %[[SKIP]] : i32
// PIPE-NEXT:      %{{.+}} = arith.constant 128 : i32
// PIPE-NEXT:      %[[ROW:[0-9]+]] = arith.muli %[[BLOCK]], %{{.+}} : i32
// PIPE:           fat.tma_load %arg1[%[[ROW]],
// The consumers: the same tile range and hole; the mask region and the
// full-block test see the block the walk maps to.
// PIPE:         fat.key_block_hole
// PIPE:         arith.cmpi sge, %{{.+}}, %[[CH0:[a-z0-9_]+]] : i32
// PIPE:         fat.full_key_block %[[CB:[0-9]+]] row(

// The hole's lowering, per 64-row group: r4 and r5 where the group sees a
// key (r1 > r0), else (0, 2^31 − 1); over the groups max r4 and min r5, then
// ⌈max r4 / N⌉ and ⌊min r5 / N⌋ clamped into the tile's blocks.
// NVVM-LABEL:   llvm.func @fat_attention_fwd_bf16_d128_h16_16_bhsd_causal_mod
// NVVM:         %[[AT5:[0-9]+]] = arith.addi %{{[0-9]+}}, %c5_i32{{[_0-9]*}} : i32
// NVVM-NEXT:    %[[P5:[0-9]+]] = llvm.getelementptr %arg12[%[[AT5]]]
// NVVM-NEXT:    %[[R5:[0-9]+]] = llvm.load %[[P5]] invariant {alignment = 4 : i64} : !llvm.ptr<1> -> i32
// NVVM-NEXT:    %[[INF:[a-z0-9_]+]] = arith.constant 2147483647 : i32
// NVVM-NEXT:    %[[E0:[0-9]+]] = arith.select %{{[0-9]+}}, %[[R5]], %[[INF]] : i32
// The second group of the tile (rows + 64).
// NVVM:         %[[SEEN:[0-9]+]] = arith.cmpi sgt, %{{[0-9]+}}, %{{[0-9]+}} : i32
// NVVM-NEXT:    %[[C4:[a-z0-9_]+]] = arith.constant 4 : i32
// NVVM-NEXT:    %[[AT4:[0-9]+]] = arith.addi %[[ROW:[0-9]+]], %[[C4]] : i32
// NVVM-NEXT:    %[[P4:[0-9]+]] = llvm.getelementptr %arg12[%[[AT4]]]
// NVVM-NEXT:    %[[R4:[0-9]+]] = llvm.load %[[P4]] invariant {alignment = 4 : i64} : !llvm.ptr<1> -> i32
// NVVM-NEXT:    %[[ZERO:[a-z0-9_]+]] = arith.constant 0 : i32
// NVVM-NEXT:    %[[F1:[0-9]+]] = arith.select %[[SEEN]], %[[R4]], %[[ZERO]] : i32
// NVVM:         %[[E1:[0-9]+]] = arith.select %[[SEEN]], %{{[0-9]+}}, %{{[a-z0-9_]+}} : i32
// NVVM-NEXT:    %[[F:[0-9]+]] = arith.maxsi %[[F0:[0-9]+]], %[[F1]] : i32
// NVVM-NEXT:    %[[E:[0-9]+]] = arith.minsi %[[E0]], %[[E1]] : i32
// NVVM:         %[[UP:[0-9]+]] = arith.addi %{{[0-9]+}}, %c127_i32{{[_0-9]*}} : i32
// NVVM:         arith.divsi %[[UP]], %c128_i32{{[_0-9]*}} : i32
// NVVM:         %[[EPOS:[0-9]+]] = arith.maxsi %[[E]], %{{.+}} : i32
// NVVM:         arith.divsi %[[EPOS]], %c128_i32{{[_0-9]*}} : i32
// NVVM-NOT:     fat.key_block_hole

// FILES: fat_attention_fwd_bf16_d128_h16_16_bhsd_causal_mod{{[0-9a-f]+}}_m128n128s2q2_opl8t132.ptx

func.func @sinks(%q: tensor<1x16x4096x128xbf16>, %k: tensor<1x16x4096x128xbf16>,
                 %v: tensor<1x16x4096x128xbf16>, %o: tensor<1x16x4096x128xbf16>,
                 %r: tensor<1x64x6xi32>) -> tensor<1x16x4096x128xbf16> {
  %res = fat.attention ins(%q, %k, %v : tensor<1x16x4096x128xbf16>, tensor<1x16x4096x128xbf16>, tensor<1x16x4096x128xbf16>)
      outs(%o : tensor<1x16x4096x128xbf16>)
      captures(%r : tensor<1x64x6xi32>) causal
      mask {
      ^bb0(%b: index, %h: index, %i: index, %j: index, %rr: tensor<1x64x6xi32>):
        %c1024 = arith.constant 1024 : index
        %c4 = arith.constant 4 : index
        %d = arith.subi %i, %j : index
        %near = arith.cmpi ult, %d, %c1024 : index
        %sink = arith.cmpi ult, %j, %c4 : index
        %keep = arith.ori %near, %sink : i1
        fat.yield %keep : i1
      } {kv_ranges = 0 : i64} -> tensor<1x16x4096x128xbf16>
  return %res : tensor<1x16x4096x128xbf16>
}
