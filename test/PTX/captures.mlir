// RUN: fa-t-opt %s --fat-tile --fat-tensorize="relative-bias=vector" --fat-pipeline | FileCheck %s --check-prefix=PIPE
// RUN: rm -rf %t && mkdir -p %t && fa-t-opt %s --fat-to-ptx="relative-bias=vector output-dir=%t" -o %t/out.mlir
// RUN: cat %t/*.json | FileCheck %s --check-prefix=JSON
// RUN: cat %t/*.ptx | FileCheck %s --check-prefix=PTX
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t/*.ptx -o %t/a.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS %}

// Modifications that read captured tensors: a document mask (ids per batch
// and position) and ALiBi with a slopes tensor per head. The kernel takes
// each capture by address after its other parameters (capture0, capture1
// in the manifest); the host's fat.launch passes the tensors; in the
// kernel fat.score_mod / fat.mask_mod carry the addresses and
// convert-fat-to-nvvm loads the elements the regions extract (ld.global.nc:
// the loads are invariant). Beside the mask region's position math ALiBi's
// bias stays in the score region (linear-bias=auto: the query columns would
// spill there).

// PIPE:        fat.launch @[[K:[a-z0-9_]+]]::@{{[a-z0-9_]+}} ins({{.+}}) outs({{.+}}) diagonal(%{{.+}}) captures(%arg4, %arg5 : tensor<2x1000xi32>, tensor<16xf32>)
// PIPE:        gpu.module @[[K]]
// PIPE:          llvm.func @{{[a-z0-9_]+}}({{.+}}, %[[DOC:[a-z0-9]+]]: !llvm.ptr<1>, %[[SLOPES:[a-z0-9]+]]: !llvm.ptr<1>)
// PIPE:          fat.score_mod %{{.+}} captures(%[[DOC]], %[[SLOPES]] : !llvm.ptr<1>, !llvm.ptr<1>) {
// PIPE-NEXT:     ^bb0(%{{.+}}: tensor<2x1000xi32>, %{{.+}}: tensor<16xf32>):
// PIPE:          fat.mask_mod %{{.+}} captures(%[[DOC]], %[[SLOPES]] : !llvm.ptr<1>, !llvm.ptr<1>) {

// JSON:        "symbol": "B"
// JSON:        "kind": "ptr",
// JSON-NEXT:   "tensor": "capture0"
// JSON:        "kind": "ptr",
// JSON-NEXT:   "tensor": "capture1"
// JSON-NEXT:   }
// JSON-NEXT: ],

// PTX:         .param .u64 .ptr .global .align 1 {{.+}}_param_12,
// PTX-NEXT:    .param .u64 .ptr .global .align 1 {{.+}}_param_13
// PTX:         ld.global.nc.b32
// PTXAS: 0 bytes spill stores, 0 bytes spill loads

func.func @doc_alibi(%q: tensor<2x16x1000x128xbf16>, %k: tensor<2x16x1000x128xbf16>,
                     %v: tensor<2x16x1000x128xbf16>, %o: tensor<2x16x1000x128xbf16>,
                     %doc: tensor<2x1000xi32>, %slopes: tensor<16xf32>)
    -> tensor<2x16x1000x128xbf16> {
  %r = fat.attention ins(%q, %k, %v : tensor<2x16x1000x128xbf16>, tensor<2x16x1000x128xbf16>, tensor<2x16x1000x128xbf16>)
      outs(%o : tensor<2x16x1000x128xbf16>)
      captures(%doc, %slopes : tensor<2x1000xi32>, tensor<16xf32>) causal
      score {
      ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index, %d: tensor<2x1000xi32>, %s: tensor<16xf32>):
        %slope = tensor.extract %s[%h] : tensor<16xf32>
        %dist = arith.subi %j, %i : index
        %di = arith.index_cast %dist : index to i32
        %df = arith.sitofp %di : i32 to f32
        %bias = arith.mulf %slope, %df : f32
        %y = arith.addf %x, %bias : f32
        fat.yield %y : f32
      }
      mask {
      ^bb0(%b: index, %h: index, %i: index, %j: index, %d: tensor<2x1000xi32>, %s: tensor<16xf32>):
        %di = tensor.extract %d[%b, %i] : tensor<2x1000xi32>
        %dj = tensor.extract %d[%b, %j] : tensor<2x1000xi32>
        %same = arith.cmpi eq, %di, %dj : i32
        fat.yield %same : i1
      } -> tensor<2x16x1000x128xbf16>
  return %r : tensor<2x16x1000x128xbf16>
}
