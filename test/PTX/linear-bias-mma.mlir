// RUN: fa-t-opt %s --fat-tile --fat-tensorize="linear-bias=mma" --fat-pipeline | FileCheck %s --check-prefix=PIPE
// RUN: fa-t-opt %s --fat-tile --fat-tensorize="linear-bias=mma" --fat-pipeline --convert-fat-to-nvvm | FileCheck %s --check-prefix=NVVM
// RUN: rm -rf %t && mkdir -p %t/one %t/step
// RUN: fa-t-opt %s --fat-to-ptx="linear-bias=mma output-dir=%t/one" -o /dev/null
// RUN: cat %t/one/*.ptx | FileCheck %s --check-prefix=PTX
// RUN: cat %t/one/*.json | FileCheck %s --check-prefix=MANIFEST
// RUN: fa-t-opt %s --fat-to-ptx="linear-bias=vector output-dir=%t/vec" -o /dev/null
// RUN: cat %t/vec/*.json | FileCheck %s --check-prefix=VECMANIFEST
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t/one/*.ptx -o %t/a.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS %}
// Stepwise, each pass on the printed IR of the one before: the same PTX.
// RUN: fa-t-opt %s --fat-tile -o %t/tiled.mlir
// RUN: fa-t-opt %t/tiled.mlir --fat-tensorize="linear-bias=mma" -o %t/tensorized.mlir
// RUN: fa-t-opt %t/tensorized.mlir --fat-pipeline -o %t/pipelined.mlir
// RUN: fa-t-opt %t/pipelined.mlir --convert-fat-to-nvvm -o %t/nvvm.mlir
// RUN: fa-t-opt %t/nvvm.mlir --pass-pipeline="builtin.module(gpu.module(convert-scf-to-cf,convert-nvvm-to-llvm,convert-gpu-to-nvvm,reconcile-unrealized-casts,canonicalize,cse),nvvm-attach-target{chip=sm_90a features=+ptx80 O=3},gpu-module-to-binary{format=isa},fat-emit-kernels{output-dir=%t/step})" -o /dev/null
// RUN: diff -r %t/one %t/step

// linear-bias=mma in the Hopper kernel: ALiBi's slope·(j − i) rides in
// Q·Kᵀ. The kernel fills the key columns once per CTA after the V stages
// (fat.bias_keys_fill), each consumer evaluates the block's query columns
// on its A fragment (the slope read from the captured tensor, the scale
// the kernel's run-time one) and issues Q·Kᵀ with the extra k16 step; no
// score region is left. The kernel is named by the bias region, apart
// from the vector form's.

// The manifest's schedule says where the bias went: "linear_bias": "mma",
// absent for the vector form.
// MANIFEST:      "schedule": {
// MANIFEST:        "linear_bias": "mma",
// MANIFEST:      },
// VECMANIFEST:   "schedule": {
// VECMANIFEST-NOT: linear_bias
// VECMANIFEST:   },

// PIPE:        fat.launch @[[K:fat_attention_fwd_bf16_d128_h16_16_bhsd_causal_mod[a-z0-9]+_]]
// PIPE-SAME:   linear_bias = "mma"
// PIPE:        llvm.func @{{.+}}, %[[SLOPES:[a-z0-9]+]]: !llvm.ptr<1>)
// PIPE:          %[[KEYS:.+]] = arith.addi %{{.+}}, %c{{[0-9]+}}_i64 : i64
// PIPE:          fat.bias_keys_fill %{{.+}} thread(%{{.+}}) {elt = bf16, keys = 128 : i64, threads = 384 : i64}
// PIPE:          nvvm.barrier
// PIPE:          %[[X:.+]] = fat.bias_query_columns at(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}) scale %{{.+}} captures(%[[SLOPES]] : !llvm.ptr<1>) {
// PIPE-NEXT:     ^bb0(%{{.+}}: index, %[[H:.+]]: index, %[[T:.+]]: tensor<16xf32>):
// PIPE-NEXT:       %[[G:.+]] = tensor.extract %[[T]][%[[H]]] : tensor<16xf32>
// PIPE-NEXT:       fat.yield %[[G]] : f32
// PIPE-NEXT:     } : tensor<64x16xbf16, #fat.wgmma_fragment>
// PIPE:          fat.wgmma_async a_smem(%{{.+}} box_stride 16384) b(%{{.+}} box_stride 16384) bias(%[[X]] : tensor<64x16xbf16, #fat.wgmma_fragment>, %[[KEYS]]) transpose_b k 128 shape [64, 128, 16] bf16
// PIPE-NOT:      fat.score_mod

// Lowered: the key columns' loop of 16-byte stores, the query columns'
// slope load and division, the extra step with A in registers and B
// K-major (imm-trans-b 0) after Q·Kᵀ's eight steps.
// NVVM:          llvm.store %{{.+}} {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr<3>
// NVVM-NEXT:   } {fat.stage = "bias-keys"}
// NVVM-NEXT:   nvvm.fence.proxy
// NVVM:        llvm.load %{{.+}} invariant : !llvm.ptr<1> -> f32
// NVVM:        arith.divf
// NVVM-COUNT-8: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.+}}, p, 1, 1, 0, 0;
// NVVM:        wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.+}}, {$64, $65, $66, $67}, $68, p, 1, 1, 0;

// PTX:         st.shared.v4.b32
// PTX:         div.rn.f32
// PTX:         wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.+}}, {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, %rd{{[0-9]+}}, p, 1, 1, 0;
// PTXAS: 0 bytes spill stores, 0 bytes spill loads

func.func @alibi(%q: tensor<2x16x1000x128xbf16>, %k: tensor<2x16x1000x128xbf16>,
                 %v: tensor<2x16x1000x128xbf16>, %o: tensor<2x16x1000x128xbf16>,
                 %slopes: tensor<16xf32>) -> tensor<2x16x1000x128xbf16> {
  %r = fat.attention ins(%q, %k, %v : tensor<2x16x1000x128xbf16>, tensor<2x16x1000x128xbf16>, tensor<2x16x1000x128xbf16>)
      outs(%o : tensor<2x16x1000x128xbf16>) captures(%slopes : tensor<16xf32>) causal
      score {
      ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index, %s: tensor<16xf32>):
        %slope = tensor.extract %s[%h] : tensor<16xf32>
        %d = arith.subi %i, %j : index
        %d64 = arith.index_cast %d : index to i64
        %df = arith.sitofp %d64 : i64 to f32
        %bias = arith.mulf %slope, %df : f32
        %y = arith.subf %x, %bias : f32
        fat.yield %y : f32
      } -> tensor<2x16x1000x128xbf16>
  return %r : tensor<2x16x1000x128xbf16>
}
