// RUN: fa-t-opt %s --fat-tile | FileCheck %s --check-prefix=TILE
// RUN: fa-t-opt %s --fat-tile --fat-tensorize --fat-pipeline | FileCheck %s --check-prefix=PIPE
// RUN: rm -rf %t && mkdir -p %t && fa-t-opt %s --fat-to-ptx="output-dir=%t" -o %t/out.mlir
// RUN: cat %t/*.json | FileCheck %s --check-prefix=JSON

// Block sparsity by key ranges: `kv_ranges = 1` names capture 1 as
// [first key, end key) per batch and 64 query rows. fat-tile conjoins the
// range test with the mask region (so the CPU oracle and the kernel mask the
// same keys); the kernel narrows each tile's key blocks to the union of its
// rows' ranges, in both roles, so the producer loads and the consumer
// computes only those blocks.

// TILE-LABEL: func.func @documents
// TILE:         fat.mask_mod %{{.+}} captures(%{{.+}}, %{{.+}} : tensor<2x1000xi32>, tensor<2x16x2xi32>) {
// TILE-NEXT:    ^bb0(%[[B:[a-z0-9]+]]: index, %{{[a-z0-9]+}}: index, %[[I:[a-z0-9]+]]: index, %[[J:[a-z0-9]+]]: index, %{{[a-z0-9]+}}: tensor<2x1000xi32>, %[[R:[a-z0-9]+]]: tensor<2x16x2xi32>):
// TILE:           %[[SAME:[0-9]+]] = arith.cmpi eq
// TILE-NEXT:      %[[G:[0-9]+]] = arith.divui %[[I]], %{{.+}} : index
// TILE-NEXT:      %[[LO:[a-z0-9_]+]] = tensor.extract %[[R]][%[[B]], %[[G]], %{{.+}}] : tensor<2x16x2xi32>
// TILE-NEXT:      %[[HI:[a-z0-9_]+]] = tensor.extract %[[R]][%[[B]], %[[G]], %{{.+}}] : tensor<2x16x2xi32>
// TILE-NEXT:      %[[JJ:[0-9]+]] = arith.index_cast %[[J]] : index to i32
// TILE-NEXT:      %[[GE:[0-9]+]] = arith.cmpi sge, %[[JJ]], %[[LO]] : i32
// TILE-NEXT:      %[[LT:[0-9]+]] = arith.cmpi slt, %[[JJ]], %[[HI]] : i32
// TILE-NEXT:      %[[IN:[0-9]+]] = arith.andi %[[GE]], %[[LT]] : i1
// TILE-NEXT:      %[[KEEP:[0-9]+]] = arith.andi %[[SAME]], %[[IN]] : i1
// TILE-NEXT:      fat.yield %[[KEEP]] : i1
// TILE-NEXT:    } {kv_ranges = 1 : i64} : tensor<128x128xf32>

// Each role reads two groups' ranges (block-m 128) per tile: four loads
// of the ranges capture, the union's blocks min(first)/N .. ⌈max(end)/N⌉.
// PIPE:         llvm.func @{{[a-z0-9_]+}}({{.+}}, %[[RANGES:[a-z0-9]+]]: !llvm.ptr<1>)
// PIPE:         fat.warp_specialize
// PIPE-COUNT-4: llvm.getelementptr %[[RANGES]]
// PIPE-COUNT-4: llvm.getelementptr %[[RANGES]]
// PIPE:         fat.mask_mod
// PIPE:         } {kv_ranges = 1 : i64} : tensor<64x128xf32, #fat.wgmma_fragment>

// JSON:        "tensor": "capture1"

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
