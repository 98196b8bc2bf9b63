// RUN: fa-t-opt %s --fat-tile="block-m=128 block-n=64" --fat-tensorize="rowsum=vector rescale=always" -split-input-file | FileCheck %s --check-prefix=VEC
// RUN: fa-t-opt %s --fat-tile="block-m=128 block-n=64" --fat-tensorize="rowsum=mma rescale=lazy rescale-threshold=6 exp2-poly=0.25" -split-input-file | FileCheck %s --check-prefix=MMA
// RUN: fa-t-opt %s --fat-tile="block-m=128 block-n=64" --fat-tensorize -split-input-file | FileCheck %s --check-prefix=AUTO
// Stepwise, each pass alone on its predecessor's printed output, down to
// the host CPU (--fat-to-cpu).
// RUN: fa-t-opt %s --fat-tile="block-m=128 block-n=64" -split-input-file -o %t.tiled.mlir
// RUN: fa-t-opt %t.tiled.mlir --fat-tensorize="rowsum=mma" -split-input-file -o %t.tensorized.mlir
// RUN: FileCheck %s --check-prefix=STEP < %t.tensorized.mlir
// RUN: fa-t-opt %t.tensorized.mlir --fat-to-cpu -split-input-file | FileCheck %s --check-prefix=CPU
// RUN: not fa-t-opt %s --fat-tile="block-m=32 block-n=64" --fat-tensorize -split-input-file 2>&1 | FileCheck %s --check-prefix=BADM
// RUN: not fa-t-opt %s --fat-tile="block-m=64 block-n=40" --fat-tensorize -split-input-file 2>&1 | FileCheck %s --check-prefix=BADN

// fat-tensorize on the tiled form (TensorizeTiles.cpp): each KV step of the
// online softmax becomes the ops the Hopper kernel executes, still on whole
// tiles. The choice is the same cost model's as on fat.attention
// (fat-tensorize.mlir), read off the tiles: D = Dv = 64, no mask, no LSE.

func.func @d64(%q: tensor<1x1x256x64xbf16>, %k: tensor<1x1x256x64xbf16>,
               %v: tensor<1x1x256x64xbf16>, %o: tensor<1x1x256x64xbf16>)
    -> tensor<1x1x256x64xbf16> {
  %r = fat.attention ins(%q, %k, %v : tensor<1x1x256x64xbf16>, tensor<1x1x256x64xbf16>,
                                      tensor<1x1x256x64xbf16>)
                     outs(%o : tensor<1x1x256x64xbf16>) -> tensor<1x1x256x64xbf16>
  return %r : tensor<1x1x256x64xbf16>
}

// rowsum=vector, rescale=always. Per KV step (c = 0.125 · log2 e):
//   S = Q·Kᵀ                         wgmma, both operands in shared memory
//   m', α = exp2(c·m − c·m')          softmax_max (eager)
//   P = exp2(c·S − c·m'), l' = α·l + Σ P   softmax_exp with the vector sum
//   O' = α·O + round(P)·V             wgmma, A = P from registers
// The first loop is the edge loop (fat-tile's masked blocks: here the
// ragged tail's kv_len test).
// VEC-LABEL: func.func @d64
// VEC:         %[[C:[a-z0-9_]+]] = arith.constant 0.180336878 : f32
// VEC:         scf.forall
// VEC:         scf.for {{.*}} iter_args(%[[O:[a-z0-9_]+]] = %{{.+}}, %[[M:[a-z0-9_]+]] = %{{.+}}, %[[L:[a-z0-9_]+]] = %{{.+}}) -> (tensor<128x64xf32>, tensor<128xf32>, tensor<128xf32>)
// VEC:           %[[S:[a-z0-9_]+]] = fat.wgmma %{{.+}}, %{{.+}} transpose_b a_from smem shape [64, 64, 16] : tensor<128x64xbf16>, tensor<64x64xbf16> -> tensor<128x64xf32>
// VEC:           %[[SM:[a-z0-9_]+]] = fat.mask %[[S]] at
// VEC:           %[[MN:[a-z0-9_]+]], %[[A:[a-z0-9_]+]] = fat.softmax_max %[[SM]], %[[M]] scale %[[C]] : tensor<128x64xf32>, tensor<128xf32>
// VEC:           %[[P:[a-z0-9_]+]], %[[LN:[a-z0-9_]+]] = fat.softmax_exp %[[SM]], %[[MN]] scale %[[C]] rowsum(%[[L]], %[[A]])
// VEC:           %[[OA:[a-z0-9_]+]] = fat.rescale %[[O]], %[[A]]
// VEC-NEXT:      %[[P16:[a-z0-9_]+]] = arith.truncf %[[P]] : tensor<128x64xf32> to tensor<128x64xbf16>
// VEC:           %[[ON:[a-z0-9_]+]] = fat.wgmma %[[P16]], %{{.+}}, %[[OA]] a_from registers shape [64, 64, 16]
// VEC:           scf.yield %[[ON]], %[[MN]], %[[LN]]
// VEC-NOT:     fat.qk
// VEC-NOT:     fat.pv
// VEC-NOT:     fat.row_sum
// VEC:         fat.finalize
// The choice as made, beside fat-tile's record, on the loop it rewrote.
// VEC:       } {fat.schedule = {exp2_poly = 0.000000e+00 : f64, forced = true, rescale = "always", rescale_threshold = 8.000000e+00 : f64, row_max = "online", rowsum = "vector"}, fat.tile = {block_m = 128 : i64, block_n = 64 : i64, seq_len = 256 : i64, stages = 2 : i64}}

// rowsum=mma, lazy rescale with τ = 6, a quarter of the exponentials on the
// FMA pipe: the row sum rides in the P·V wgmma as 8 ones columns beside V,
//   [O' | l'] = [α·O | α·l] + round(P)·[V | 1]     (N = 64 + 8 = 72)
// so l' is the sum of the rounded P the GEMM saw.
// MMA-LABEL: func.func @d64
// MMA:         %[[C:[a-z0-9_]+]] = arith.constant 0.180336878 : f32
// MMA:         scf.for {{.*}} iter_args(%[[O:[a-z0-9_]+]] = %{{.+}}, %[[M:[a-z0-9_]+]] = %{{.+}}, %[[L:[a-z0-9_]+]] = %{{.+}})
// MMA:           %[[S:[a-z0-9_]+]] = fat.wgmma
// MMA:           %[[SM:[a-z0-9_]+]] = fat.mask %[[S]] at
// MMA:           %[[MN:[a-z0-9_]+]], %[[A:[a-z0-9_]+]] = fat.softmax_max %[[SM]], %[[M]] scale %[[C]] lazy threshold 6.000000e+00
// MMA:           %[[P:[a-z0-9_]+]] = fat.softmax_exp %[[SM]], %[[MN]] scale %[[C]] exp2_poly 2.500000e-01 :
// MMA-NOT:         rowsum
// MMA:           %[[OA:[a-z0-9_]+]] = fat.rescale %[[O]], %[[A]]
// MMA-NEXT:      %[[P16:[a-z0-9_]+]] = arith.truncf %[[P]]
// MMA:           %[[LA:[a-z0-9_]+]] = fat.rescale %[[L]], %[[A]]
// MMA:           %[[LB:[a-z0-9_]+]] = linalg.broadcast ins(%[[LA]] : tensor<128xf32>) outs(%{{.+}} : tensor<128x8xf32>) dimensions = [1]
// MMA:           %[[ACC:[a-z0-9_]+]] = tensor.concat dim(1) %[[OA]], %[[LB]] : (tensor<128x64xf32>, tensor<128x8xf32>) -> tensor<128x72xf32>
// MMA:           %[[V1:[a-z0-9_]+]] = tensor.concat dim(1) %{{.+}}, %[[ONES:[a-z0-9_]+]] : (tensor<64x64xbf16>, tensor<64x8xbf16>) -> tensor<64x72xbf16>
// MMA:           %[[ACCN:[a-z0-9_]+]] = fat.wgmma %[[P16]], %[[V1]], %[[ACC]] a_from registers shape [64, 72, 16]
// MMA:           %[[ON:[a-z0-9_]+]] = tensor.extract_slice %[[ACCN]][0, 0] [128, 64] [1, 1] : tensor<128x72xf32> to tensor<128x64xf32>
// MMA:           %[[LN:[a-z0-9_]+]] = tensor.extract_slice %[[ACCN]][0, 64] [128, 1] [1, 1] : tensor<128x72xf32> to tensor<128xf32>
// MMA:           scf.yield %[[ON]], %[[MN]], %[[LN]]

// auto: D = 64 without a mask or an LSE output takes the ones columns and
// the eager rescale, all exponentials on MUFU (Tensorize.cpp's model).
// AUTO-LABEL: func.func @d64
// AUTO:         %[[C:[a-z0-9_]+]] = arith.constant 0.180336878 : f32
// AUTO:         fat.softmax_max %{{.+}}, %{{.+}} scale %[[C]] :
// AUTO:         fat.softmax_exp %{{.+}}, %{{.+}} scale %[[C]] :
// AUTO:         fat.wgmma {{.+}} a_from registers shape [64, 72, 16]

// The printed tiled form, tensorized alone, then lowered for the CPU.
// STEP-LABEL: func.func @d64
// STEP:         fat.wgmma {{.+}} a_from registers shape [64, 72, 16]
// CPU:        llvm.func @d64

// BADM: error: fat-tensorize: the query rows of a tile (block-m) (32) must be a multiple of 64 in [64, 192]
// BADN: error: fat-tensorize: the keys of a tile (block-n) (40) must be a multiple of 16 in [16, 256]

// -----

// Causal D = 128 with an LSE: vector row sums (the kernel writes the LSE
// from f32 sums) and the lazy rescale (the late P·V wait lets it run),
// chosen by the cost model from the mask the tiles carry.
func.func @causal_d128(%q: tensor<1x2x256x128xbf16>, %k: tensor<1x2x256x128xbf16>,
                       %v: tensor<1x2x256x128xbf16>, %o: tensor<1x2x256x128xbf16>,
                       %l: tensor<1x2x256xf32>)
    -> (tensor<1x2x256x128xbf16>, tensor<1x2x256xf32>) {
  %r:2 = fat.attention ins(%q, %k, %v : tensor<1x2x256x128xbf16>, tensor<1x2x256x128xbf16>,
                                        tensor<1x2x256x128xbf16>)
                       outs(%o : tensor<1x2x256x128xbf16>) lse(%l : tensor<1x2x256xf32>) causal
                       -> tensor<1x2x256x128xbf16>, tensor<1x2x256xf32>
  return %r#0, %r#1 : tensor<1x2x256x128xbf16>, tensor<1x2x256xf32>
}
// AUTO-LABEL: func.func @causal_d128
// AUTO:         fat.mask {{.+}} causal
// AUTO:         fat.softmax_max {{.+}} lazy threshold 8.000000e+00
// AUTO:         fat.softmax_exp {{.+}} rowsum(
// AUTO:         fat.wgmma {{.+}} a_from registers shape [64, 128, 16]
// AUTO-NOT:     shape [64, 136, 16]
// CPU:        llvm.func @causal_d128
