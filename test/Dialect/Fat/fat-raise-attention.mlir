// RUN: fa-t-opt %s --fat-raise-attention -split-input-file | FileCheck %s

// Attention as torch-mlir and StableHLO→linalg write it, raised to one
// fat.attention (tensor form) on [B, H, S, D] operands. Each case names the
// framework idiom it exercises; the dead linalg chain is erased.

// torch-mlir, softmax(q @ k.transpose(-2, -1) / 8.0) @ v on [2, 8, 128, 64]:
// aten.matmul collapses to [16, 128, 64] for linalg.batch_matmul and expands
// back; the division by an f64 literal is truncated in the body; softmax is
// decomposed with keepdim reductions (max with its argmax) and broadcast
// reads (d0, d1, d2, 0).
//   O = softmax_j(Q·Kᵀ / 8)·V  →  scale 1/8, no mask
// CHECK-LABEL: func.func @torch_sdpa
// CHECK-SAME:    (%[[Q:.+]]: tensor<2x8x128x64xf32>, %[[K:.+]]: tensor<2x8x128x64xf32>, %[[V:.+]]: tensor<2x8x128x64xf32>)
// CHECK:         %[[INIT:.+]] = tensor.empty() : tensor<2x8x128x64xf32>
// CHECK:         %[[O:.+]] = fat.attention ins(%[[Q]], %[[K]], %[[V]] : tensor<2x8x128x64xf32>, tensor<2x8x128x64xf32>, tensor<2x8x128x64xf32>)
// CHECK-SAME:      outs(%[[INIT]] : tensor<2x8x128x64xf32>) scale 1.250000e-01 -> tensor<2x8x128x64xf32>
// CHECK-NOT:     linalg.
// CHECK:         return %[[O]]
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#rows = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#keep = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>
func.func @torch_sdpa(%q: tensor<2x8x128x64xf32>, %k: tensor<2x8x128x64xf32>,
                      %v: tensor<2x8x128x64xf32>) -> tensor<2x8x128x64xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %eight = arith.constant 8.000000e+00 : f64
  %ninf = arith.constant 0xFF800000 : f32
  %c0_i64 = arith.constant 0 : i64
  %kt0 = tensor.empty() : tensor<2x8x64x128xf32>
  %kt = linalg.transpose ins(%k : tensor<2x8x128x64xf32>) outs(%kt0 : tensor<2x8x64x128xf32>) permutation = [0, 1, 3, 2]
  %qc = tensor.collapse_shape %q [[0, 1], [2], [3]] : tensor<2x8x128x64xf32> into tensor<16x128x64xf32>
  %ktc = tensor.collapse_shape %kt [[0, 1], [2], [3]] : tensor<2x8x64x128xf32> into tensor<16x64x128xf32>
  %s0 = tensor.empty() : tensor<16x128x128xf32>
  %s1 = linalg.fill ins(%zero : f32) outs(%s0 : tensor<16x128x128xf32>) -> tensor<16x128x128xf32>
  %s2 = linalg.batch_matmul ins(%qc, %ktc : tensor<16x128x64xf32>, tensor<16x64x128xf32>) outs(%s1 : tensor<16x128x128xf32>) -> tensor<16x128x128xf32>
  %s = tensor.expand_shape %s2 [[0, 1], [2], [3]] output_shape [2, 8, 128, 128] : tensor<16x128x128xf32> into tensor<2x8x128x128xf32>
  %d0 = tensor.empty() : tensor<2x8x128x128xf32>
  %d = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%s : tensor<2x8x128x128xf32>) outs(%d0 : tensor<2x8x128x128xf32>) {
  ^bb0(%in: f32, %out: f32):
    %t = arith.truncf %eight : f64 to f32
    %r = arith.divf %in, %t : f32
    linalg.yield %r : f32
  } -> tensor<2x8x128x128xf32>
  // x_max, argmax = max(x, dim=-1, keepdim=True)
  %i0 = tensor.empty() : tensor<2x8x128xi64>
  %i1 = linalg.fill ins(%c0_i64 : i64) outs(%i0 : tensor<2x8x128xi64>) -> tensor<2x8x128xi64>
  %m0 = tensor.empty() : tensor<2x8x128xf32>
  %m1 = linalg.fill ins(%ninf : f32) outs(%m0 : tensor<2x8x128xf32>) -> tensor<2x8x128xf32>
  %mx:2 = linalg.generic {indexing_maps = [#id4, #rows, #rows], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%d : tensor<2x8x128x128xf32>) outs(%m1, %i1 : tensor<2x8x128xf32>, tensor<2x8x128xi64>) {
  ^bb0(%in: f32, %out: f32, %out_1: i64):
    %idx = linalg.index 3 : index
    %idx64 = arith.index_cast %idx : index to i64
    %max = arith.maximumf %in, %out : f32
    %gt = arith.cmpf ogt, %in, %out : f32
    %arg = arith.select %gt, %idx64, %out_1 : i64
    linalg.yield %max, %arg : f32, i64
  } -> (tensor<2x8x128xf32>, tensor<2x8x128xi64>)
  %mk = tensor.expand_shape %mx#0 [[0], [1], [2, 3]] output_shape [2, 8, 128, 1] : tensor<2x8x128xf32> into tensor<2x8x128x1xf32>
  %e0 = tensor.empty() : tensor<2x8x128x128xf32>
  %sub = linalg.generic {indexing_maps = [#id4, #keep, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%d, %mk : tensor<2x8x128x128xf32>, tensor<2x8x128x1xf32>) outs(%e0 : tensor<2x8x128x128xf32>) {
  ^bb0(%in: f32, %in_1: f32, %out: f32):
    %r = arith.subf %in, %in_1 : f32
    linalg.yield %r : f32
  } -> tensor<2x8x128x128xf32>
  %exp = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%sub : tensor<2x8x128x128xf32>) outs(%e0 : tensor<2x8x128x128xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = math.exp %in : f32
    linalg.yield %r : f32
  } -> tensor<2x8x128x128xf32>
  %z1 = linalg.fill ins(%zero : f32) outs(%m0 : tensor<2x8x128xf32>) -> tensor<2x8x128xf32>
  %sum = linalg.generic {indexing_maps = [#id4, #rows], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%exp : tensor<2x8x128x128xf32>) outs(%z1 : tensor<2x8x128xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %in, %out : f32
    linalg.yield %r : f32
  } -> tensor<2x8x128xf32>
  %sk = tensor.expand_shape %sum [[0], [1], [2, 3]] output_shape [2, 8, 128, 1] : tensor<2x8x128xf32> into tensor<2x8x128x1xf32>
  %p = linalg.generic {indexing_maps = [#id4, #keep, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%exp, %sk : tensor<2x8x128x128xf32>, tensor<2x8x128x1xf32>) outs(%e0 : tensor<2x8x128x128xf32>) {
  ^bb0(%in: f32, %in_1: f32, %out: f32):
    %r = arith.divf %in, %in_1 : f32
    linalg.yield %r : f32
  } -> tensor<2x8x128x128xf32>
  %pc = tensor.collapse_shape %p [[0, 1], [2], [3]] : tensor<2x8x128x128xf32> into tensor<16x128x128xf32>
  %vc = tensor.collapse_shape %v [[0, 1], [2], [3]] : tensor<2x8x128x64xf32> into tensor<16x128x64xf32>
  %o0 = tensor.empty() : tensor<16x128x64xf32>
  %o1 = linalg.fill ins(%zero : f32) outs(%o0 : tensor<16x128x64xf32>) -> tensor<16x128x64xf32>
  %o2 = linalg.batch_matmul ins(%pc, %vc : tensor<16x128x128xf32>, tensor<16x128x64xf32>) outs(%o1 : tensor<16x128x64xf32>) -> tensor<16x128x64xf32>
  %o = tensor.expand_shape %o2 [[0, 1], [2], [3]] output_shape [2, 8, 128, 64] : tensor<16x128x64xf32> into tensor<2x8x128x64xf32>
  return %o : tensor<2x8x128x64xf32>
}

// -----

// A rank-3 [B·H, S, D] batch_matmul whose indexing_maps read K untransposed,
// the scale applied to Q (in f16) before it, a causal mask as an index
// compare inside a generic, linalg.softmax, P rounded to f16 for P·V.
//   S = (Q·c)·Kᵀ with c = 1/8; hide j > i  →  scale 1/8, causal, δ = 0 = Skv − Sq
// Heads are not known: B = 16, H = 1.
// CHECK-LABEL: func.func @rank3_scaled_q_iota_mask
// CHECK-SAME:    (%[[Q:.+]]: tensor<16x128x64xf16>, %[[K:.+]]: tensor<16x128x64xf16>, %[[V:.+]]: tensor<16x128x64xf16>)
// CHECK:         %[[Q4:.+]] = tensor.expand_shape %[[Q]] {{\[}}[0, 1], [2], [3]] output_shape [16, 1, 128, 64]
// CHECK:         %[[K4:.+]] = tensor.expand_shape %[[K]] {{\[}}[0, 1], [2], [3]] output_shape [16, 1, 128, 64]
// CHECK:         %[[V4:.+]] = tensor.expand_shape %[[V]] {{\[}}[0, 1], [2], [3]] output_shape [16, 1, 128, 64]
// CHECK:         %[[O:.+]] = fat.attention ins(%[[Q4]], %[[K4]], %[[V4]] :
// CHECK-SAME:      scale 1.250000e-01 causal -> tensor<16x1x128x64xf16>
// CHECK:         %[[R:.+]] = tensor.collapse_shape %[[O]] {{\[}}[0, 1], [2], [3]] : tensor<16x1x128x64xf16> into tensor<16x128x64xf16>
// CHECK-NOT:     linalg.
// CHECK:         return %[[R]]
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @rank3_scaled_q_iota_mask(%q: tensor<16x128x64xf16>, %k: tensor<16x128x64xf16>,
                      %v: tensor<16x128x64xf16>) -> tensor<16x128x64xf16> {
  %zero = arith.constant 0.000000e+00 : f32
  %zh = arith.constant 0.000000e+00 : f16
  %ninf = arith.constant 0xFF800000 : f32
  %c = arith.constant 1.250000e-01 : f16
  %qs0 = tensor.empty() : tensor<16x128x64xf16>
  %qs = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%q : tensor<16x128x64xf16>) outs(%qs0 : tensor<16x128x64xf16>) {
  ^bb0(%in: f16, %out: f16):
    %r = arith.mulf %in, %c : f16
    linalg.yield %r : f16
  } -> tensor<16x128x64xf16>
  %s0 = tensor.empty() : tensor<16x128x128xf32>
  %s1 = linalg.fill ins(%zero : f32) outs(%s0 : tensor<16x128x128xf32>) -> tensor<16x128x128xf32>
  %s = linalg.batch_matmul
      indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>,
                       affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>,
                       affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>]
      ins(%qs, %k : tensor<16x128x64xf16>, tensor<16x128x64xf16>) outs(%s1 : tensor<16x128x128xf32>) -> tensor<16x128x128xf32>
  %m = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<16x128x128xf32>) outs(%s0 : tensor<16x128x128xf32>) {
  ^bb0(%in: f32, %out: f32):
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %hide = arith.cmpi ugt, %j, %i : index
    %r = arith.select %hide, %ninf, %in : f32
    linalg.yield %r : f32
  } -> tensor<16x128x128xf32>
  %sm = linalg.softmax dimension(2) ins(%m : tensor<16x128x128xf32>) outs(%s0 : tensor<16x128x128xf32>) -> tensor<16x128x128xf32>
  %p0 = tensor.empty() : tensor<16x128x128xf16>
  %p = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%sm : tensor<16x128x128xf32>) outs(%p0 : tensor<16x128x128xf16>) {
  ^bb0(%in: f32, %out: f16):
    %r = arith.truncf %in : f32 to f16
    linalg.yield %r : f16
  } -> tensor<16x128x128xf16>
  %o0 = tensor.empty() : tensor<16x128x64xf16>
  %o1 = linalg.fill ins(%zh : f16) outs(%o0 : tensor<16x128x64xf16>) -> tensor<16x128x64xf16>
  %o = linalg.batch_matmul ins(%p, %v : tensor<16x128x128xf16>, tensor<16x128x64xf16>) outs(%o1 : tensor<16x128x64xf16>) -> tensor<16x128x64xf16>
  return %o : tensor<16x128x64xf16>
}

// -----

// StableHLO→linalg style on [B, H, S, D] = [2, 8, 4|6, 64], bf16 with f32
// scores: contraction generics, a splat scale tensor through linalg.mul,
// linalg.reduce / linalg.broadcast / named elementwise ops for the softmax,
// an f32 P·V rounded to bf16 after. GQA: K and V have 2 heads broadcast to 8
// (repeat_interleave: head h reads KV head h floordiv 4). The mask is a
// constant [Sq, Skv] = [4, 6] lower triangle, top-left aligned.
//   keys j ≤ i visible  →  causal with δ = 0 ≠ Skv − Sq = 2: diagonal(0)
// CHECK-LABEL: func.func @stablehlo_gqa_constant_mask
// CHECK-SAME:    (%[[Q:.+]]: tensor<2x8x4x64xbf16>, %[[K:.+]]: tensor<2x2x6x64xbf16>, %[[V:.+]]: tensor<2x2x6x64xbf16>)
// CHECK-DAG:     %[[INIT:.+]] = tensor.empty() : tensor<2x8x4x64xbf16>
// CHECK-DAG:     %[[D0:.+]] = arith.constant 0 : index
// CHECK:         %[[O:.+]] = fat.attention ins(%[[Q]], %[[K]], %[[V]] : tensor<2x8x4x64xbf16>, tensor<2x2x6x64xbf16>, tensor<2x2x6x64xbf16>)
// CHECK-SAME:      outs(%[[INIT]] : tensor<2x8x4x64xbf16>) diagonal(%[[D0]]) scale 1.250000e-01 causal
// CHECK-NOT:     linalg.
// CHECK:         return %[[O]]
#qk_q = affine_map<(b, h, i, j, d) -> (b, h, i, d)>
#qk_k = affine_map<(b, h, i, j, d) -> (b, h, j, d)>
#qk_s = affine_map<(b, h, i, j, d) -> (b, h, i, j)>
#pv_p = affine_map<(b, h, i, e, j) -> (b, h, i, j)>
#pv_v = affine_map<(b, h, i, e, j) -> (b, h, j, e)>
#pv_o = affine_map<(b, h, i, e, j) -> (b, h, i, e)>
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#mask = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
#rows = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
func.func @stablehlo_gqa_constant_mask(%q: tensor<2x8x4x64xbf16>, %k: tensor<2x2x6x64xbf16>,
                       %v: tensor<2x2x6x64xbf16>) -> tensor<2x8x4x64xbf16> {
  %zero = arith.constant 0.000000e+00 : f32
  %zb = arith.constant 0.000000e+00 : bf16
  %ninf = arith.constant 0xFF800000 : f32
  %scale = arith.constant dense<1.250000e-01> : tensor<2x8x4x6xf32>
  %mask = arith.constant dense<[[0.0, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000],
                                [0.0, 0.0, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000],
                                [0.0, 0.0, 0.0, 0xFF800000, 0xFF800000, 0xFF800000],
                                [0.0, 0.0, 0.0, 0.0, 0xFF800000, 0xFF800000]]> : tensor<4x6xf32>
  %kb0 = tensor.empty() : tensor<2x2x4x6x64xbf16>
  %kb = linalg.broadcast ins(%k : tensor<2x2x6x64xbf16>) outs(%kb0 : tensor<2x2x4x6x64xbf16>) dimensions = [2]
  %kr = tensor.collapse_shape %kb [[0], [1, 2], [3], [4]] : tensor<2x2x4x6x64xbf16> into tensor<2x8x6x64xbf16>
  %vb = linalg.broadcast ins(%v : tensor<2x2x6x64xbf16>) outs(%kb0 : tensor<2x2x4x6x64xbf16>) dimensions = [2]
  %vr = tensor.collapse_shape %vb [[0], [1, 2], [3], [4]] : tensor<2x2x4x6x64xbf16> into tensor<2x8x6x64xbf16>
  %s0 = tensor.empty() : tensor<2x8x4x6xf32>
  %s1 = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x8x4x6xf32>) -> tensor<2x8x4x6xf32>
  %s = linalg.generic {indexing_maps = [#qk_q, #qk_k, #qk_s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %kr : tensor<2x8x4x64xbf16>, tensor<2x8x6x64xbf16>) outs(%s1 : tensor<2x8x4x6xf32>) {
  ^bb0(%a: bf16, %b: bf16, %acc: f32):
    %a32 = arith.extf %a : bf16 to f32
    %b32 = arith.extf %b : bf16 to f32
    %m = arith.mulf %a32, %b32 : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x8x4x6xf32>
  %sc = linalg.mul ins(%s, %scale : tensor<2x8x4x6xf32>, tensor<2x8x4x6xf32>) outs(%s0 : tensor<2x8x4x6xf32>) -> tensor<2x8x4x6xf32>
  %mk0 = tensor.empty() : tensor<2x8x4x6xf32>
  %mb = linalg.broadcast ins(%mask : tensor<4x6xf32>) outs(%mk0 : tensor<2x8x4x6xf32>) dimensions = [0, 1]
  %sm = linalg.add ins(%sc, %mb : tensor<2x8x4x6xf32>, tensor<2x8x4x6xf32>) outs(%s0 : tensor<2x8x4x6xf32>) -> tensor<2x8x4x6xf32>
  %r0 = tensor.empty() : tensor<2x8x4xf32>
  %r1 = linalg.fill ins(%ninf : f32) outs(%r0 : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  %mx = linalg.reduce ins(%sm : tensor<2x8x4x6xf32>) outs(%r1 : tensor<2x8x4xf32>) dimensions = [3]
    (%in: f32, %init: f32) {
      %x = arith.maximumf %in, %init : f32
      linalg.yield %x : f32
    }
  %mxb = linalg.broadcast ins(%mx : tensor<2x8x4xf32>) outs(%s0 : tensor<2x8x4x6xf32>) dimensions = [3]
  %sub = linalg.sub ins(%sm, %mxb : tensor<2x8x4x6xf32>, tensor<2x8x4x6xf32>) outs(%s0 : tensor<2x8x4x6xf32>) -> tensor<2x8x4x6xf32>
  %ex = linalg.exp ins(%sub : tensor<2x8x4x6xf32>) outs(%s0 : tensor<2x8x4x6xf32>) -> tensor<2x8x4x6xf32>
  %z1 = linalg.fill ins(%zero : f32) outs(%r0 : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  %sum = linalg.reduce ins(%ex : tensor<2x8x4x6xf32>) outs(%z1 : tensor<2x8x4xf32>) dimensions = [3]
    (%in: f32, %init: f32) {
      %x = arith.addf %in, %init : f32
      linalg.yield %x : f32
    }
  %sumb = linalg.broadcast ins(%sum : tensor<2x8x4xf32>) outs(%s0 : tensor<2x8x4x6xf32>) dimensions = [3]
  %p32 = linalg.div ins(%ex, %sumb : tensor<2x8x4x6xf32>, tensor<2x8x4x6xf32>) outs(%s0 : tensor<2x8x4x6xf32>) -> tensor<2x8x4x6xf32>
  %p0 = tensor.empty() : tensor<2x8x4x6xbf16>
  %p = linalg.copy ins(%p32 : tensor<2x8x4x6xf32>) outs(%p0 : tensor<2x8x4x6xbf16>) -> tensor<2x8x4x6xbf16>
  %o0 = tensor.empty() : tensor<2x8x4x64xf32>
  %o1 = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x8x4x64xf32>) -> tensor<2x8x4x64xf32>
  %o = linalg.generic {indexing_maps = [#pv_p, #pv_v, #pv_o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %vr : tensor<2x8x4x6xbf16>, tensor<2x8x6x64xbf16>) outs(%o1 : tensor<2x8x4x64xf32>) {
  ^bb0(%a: bf16, %b: bf16, %acc: f32):
    %a32 = arith.extf %a : bf16 to f32
    %b32 = arith.extf %b : bf16 to f32
    %m = arith.mulf %a32, %b32 : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x8x4x64xf32>
  %ob0 = tensor.empty() : tensor<2x8x4x64xbf16>
  %ob = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%o : tensor<2x8x4x64xf32>) outs(%ob0 : tensor<2x8x4x64xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %r = arith.truncf %in : f32 to bf16
    linalg.yield %r : bf16
  } -> tensor<2x8x4x64xbf16>
  return %ob : tensor<2x8x4x64xbf16>
}

// -----

// Rank 2 ([S, D], no batch): K transposed by linalg.transpose, divided by a
// splat √64, an additive mask built by an index compare (finfo.min above
// j = i + 2) and added, softmax without the max shift: exp(x) / Σ exp(x).
//   hide j > i + 2  →  causal, δ = 2 = Skv − Sq: the default diagonal
// CHECK-LABEL: func.func @rank2_iota_tensor_mask
// CHECK-SAME:    (%[[Q:.+]]: tensor<4x64xf32>, %[[K:.+]]: tensor<6x64xf32>, %[[V:.+]]: tensor<6x128xf32>)
// CHECK:         %[[Q4:.+]] = tensor.expand_shape %[[Q]] {{\[}}[0, 1, 2], [3]] output_shape [1, 1, 4, 64]
// CHECK:         %[[K4:.+]] = tensor.expand_shape %[[K]] {{\[}}[0, 1, 2], [3]] output_shape [1, 1, 6, 64]
// CHECK:         %[[V4:.+]] = tensor.expand_shape %[[V]] {{\[}}[0, 1, 2], [3]] output_shape [1, 1, 6, 128]
// CHECK:         %[[O:.+]] = fat.attention ins(%[[Q4]], %[[K4]], %[[V4]] :
// CHECK-NOT:       diagonal
// CHECK-SAME:      scale 1.250000e-01 causal -> tensor<1x1x4x128xf32>
// CHECK:         %[[R:.+]] = tensor.collapse_shape %[[O]] {{\[}}[0, 1, 2], [3]] : tensor<1x1x4x128xf32> into tensor<4x128xf32>
// CHECK-NOT:     linalg.
// CHECK:         return %[[R]]
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#rowb = affine_map<(d0, d1) -> (d0, 0)>
func.func @rank2_iota_tensor_mask(%q: tensor<4x64xf32>, %k: tensor<6x64xf32>,
                                  %v: tensor<6x128xf32>) -> tensor<4x128xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %ninf = arith.constant -3.40282347E+38 : f32
  %c2 = arith.constant 2 : index
  %sqrt = arith.constant dense<8.000000e+00> : tensor<4x6xf32>
  %kt0 = tensor.empty() : tensor<64x6xf32>
  %kt = linalg.transpose ins(%k : tensor<6x64xf32>) outs(%kt0 : tensor<64x6xf32>) permutation = [1, 0]
  %s0 = tensor.empty() : tensor<4x6xf32>
  %s1 = linalg.fill ins(%zero : f32) outs(%s0 : tensor<4x6xf32>) -> tensor<4x6xf32>
  %s = linalg.matmul ins(%q, %kt : tensor<4x64xf32>, tensor<64x6xf32>) outs(%s1 : tensor<4x6xf32>) -> tensor<4x6xf32>
  %sd = linalg.div ins(%s, %sqrt : tensor<4x6xf32>, tensor<4x6xf32>) outs(%s0 : tensor<4x6xf32>) -> tensor<4x6xf32>
  // mask[i, j] = j > i + 2 ? finfo.min : 0 (bottom-right for Sq = 4, Skv = 6)
  %mask = linalg.generic {indexing_maps = [#id2], iterator_types = ["parallel", "parallel"]} outs(%s0 : tensor<4x6xf32>) {
  ^bb0(%out: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %i2 = arith.addi %i, %c2 : index
    %hide = arith.cmpi sgt, %j, %i2 : index
    %r = arith.select %hide, %ninf, %zero : f32
    linalg.yield %r : f32
  } -> tensor<4x6xf32>
  %sm = linalg.add ins(%sd, %mask : tensor<4x6xf32>, tensor<4x6xf32>) outs(%s0 : tensor<4x6xf32>) -> tensor<4x6xf32>
  // exp(x) / Σ exp(x): no max shift
  %e = linalg.exp ins(%sm : tensor<4x6xf32>) outs(%s0 : tensor<4x6xf32>) -> tensor<4x6xf32>
  %r0 = tensor.empty() : tensor<4xf32>
  %r1 = linalg.fill ins(%zero : f32) outs(%r0 : tensor<4xf32>) -> tensor<4xf32>
  %sum = linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]} ins(%e : tensor<4x6xf32>) outs(%r1 : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %out, %in : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %sk = tensor.expand_shape %sum [[0, 1]] output_shape [4, 1] : tensor<4xf32> into tensor<4x1xf32>
  %p = linalg.generic {indexing_maps = [#id2, #rowb, #id2], iterator_types = ["parallel", "parallel"]} ins(%e, %sk : tensor<4x6xf32>, tensor<4x1xf32>) outs(%s0 : tensor<4x6xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %r = arith.divf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<4x6xf32>
  %o0 = tensor.empty() : tensor<4x128xf32>
  %o1 = linalg.fill ins(%zero : f32) outs(%o0 : tensor<4x128xf32>) -> tensor<4x128xf32>
  %o = linalg.matmul ins(%p, %v : tensor<4x6xf32>, tensor<6x128xf32>) outs(%o1 : tensor<4x128xf32>) -> tensor<4x128xf32>
  return %o : tensor<4x128xf32>
}

// -----

// Dynamic batch and sequence lengths, MQA through the indexing maps (K and V
// [B, Skv, D] read without a head index), f16 with f32 scores, no scale op.
//   scale 1 (stated: the default would be 1/√D), Hkv = 1
// CHECK-LABEL: func.func @mqa_dynamic_batch
// CHECK-SAME:    (%[[Q:.+]]: tensor<?x8x?x128xf16>, %[[K:.+]]: tensor<?x?x128xf16>, %[[V:.+]]: tensor<?x?x128xf16>)
// CHECK:         %[[K4:.+]] = tensor.expand_shape %[[K]] {{\[}}[0, 1], [2], [3]] output_shape [%{{.+}}, 1, %{{.+}}, 128] : tensor<?x?x128xf16> into tensor<?x1x?x128xf16>
// CHECK:         %[[V4:.+]] = tensor.expand_shape %[[V]] {{\[}}[0, 1], [2], [3]] output_shape [%{{.+}}, 1, %{{.+}}, 128] : tensor<?x?x128xf16> into tensor<?x1x?x128xf16>
// CHECK:         %[[B:.+]] = tensor.dim %[[Q]], %{{.+}} : tensor<?x8x?x128xf16>
// CHECK:         %[[SQ:.+]] = tensor.dim %[[Q]], %{{.+}} : tensor<?x8x?x128xf16>
// CHECK:         %[[INIT:.+]] = tensor.empty(%[[B]], %[[SQ]]) : tensor<?x8x?x128xf16>
// CHECK:         %[[O:.+]] = fat.attention ins(%[[Q]], %[[K4]], %[[V4]] : tensor<?x8x?x128xf16>, tensor<?x1x?x128xf16>, tensor<?x1x?x128xf16>)
// CHECK-SAME:      outs(%[[INIT]] : tensor<?x8x?x128xf16>) scale 1.000000e+00 -> tensor<?x8x?x128xf16>
// CHECK:         return %[[O]]
#q = affine_map<(b, h, i, j, d) -> (b, h, i, d)>
#k = affine_map<(b, h, i, j, d) -> (b, j, d)>
#s = affine_map<(b, h, i, j, d) -> (b, h, i, j)>
#p = affine_map<(b, h, i, e, j) -> (b, h, i, j)>
#v = affine_map<(b, h, i, e, j) -> (b, j, e)>
#o = affine_map<(b, h, i, e, j) -> (b, h, i, e)>
func.func @mqa_dynamic_batch(%q: tensor<?x8x?x128xf16>, %k: tensor<?x?x128xf16>,
                             %v: tensor<?x?x128xf16>) -> tensor<?x8x?x128xf16> {
  %zero = arith.constant 0.000000e+00 : f32
  %zh = arith.constant 0.000000e+00 : f16
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %b = tensor.dim %q, %c0 : tensor<?x8x?x128xf16>
  %sq = tensor.dim %q, %c2 : tensor<?x8x?x128xf16>
  %skv = tensor.dim %k, %c1 : tensor<?x?x128xf16>
  %s0 = tensor.empty(%b, %sq, %skv) : tensor<?x8x?x?xf32>
  %s1 = linalg.fill ins(%zero : f32) outs(%s0 : tensor<?x8x?x?xf32>) -> tensor<?x8x?x?xf32>
  %s = linalg.generic {indexing_maps = [#q, #k, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<?x8x?x128xf16>, tensor<?x?x128xf16>) outs(%s1 : tensor<?x8x?x?xf32>) {
  ^bb0(%a: f16, %bb: f16, %acc: f32):
    %a32 = arith.extf %a : f16 to f32
    %b32 = arith.extf %bb : f16 to f32
    %m = arith.mulf %a32, %b32 : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<?x8x?x?xf32>
  %sm = linalg.softmax dimension(3) ins(%s : tensor<?x8x?x?xf32>) outs(%s0 : tensor<?x8x?x?xf32>) -> tensor<?x8x?x?xf32>
  %p0 = tensor.empty(%b, %sq, %skv) : tensor<?x8x?x?xf16>
  %pp = linalg.copy ins(%sm : tensor<?x8x?x?xf32>) outs(%p0 : tensor<?x8x?x?xf16>) -> tensor<?x8x?x?xf16>
  %o0 = tensor.empty(%b, %sq) : tensor<?x8x?x128xf16>
  %o1 = linalg.fill ins(%zh : f16) outs(%o0 : tensor<?x8x?x128xf16>) -> tensor<?x8x?x128xf16>
  %o = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%pp, %v : tensor<?x8x?x?xf16>, tensor<?x?x128xf16>) outs(%o1 : tensor<?x8x?x128xf16>) {
  ^bb0(%a: f16, %bb: f16, %acc: f16):
    %m = arith.mulf %a, %bb : f16
    %r = arith.addf %acc, %m : f16
    linalg.yield %r : f16
  } -> tensor<?x8x?x128xf16>
  return %o : tensor<?x8x?x128xf16>
}

// -----

// PyTorch's math SDPA with is_causal: q and kᵀ each multiplied by
// √scale = 128^(-1/4) (a bf16-rounded f64 literal), K transposed by a
// generic, the causal mask a boolean tril (j − i ≤ 0) applied by select.
//   scale = bf16(0.297302)² = 0.296875² = 0.0881347656, causal, δ = 0
// CHECK-LABEL: func.func @torch_math_sdpa_causal
// CHECK-SAME:    (%[[Q:.+]]: tensor<1x4x128x128xbf16>, %[[K:.+]]: tensor<1x4x128x128xbf16>, %[[V:.+]]: tensor<1x4x128x128xbf16>)
// CHECK:         %[[O:.+]] = fat.attention ins(%[[Q]], %[[K]], %[[V]] :
// CHECK-SAME:      scale 0.0881347656 causal -> tensor<1x4x128x128xbf16>
// CHECK-NOT:     linalg.
// CHECK:         return %[[O]]
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#tr = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3, d2)>
#ij = affine_map<(d0, d1) -> (d0, d1)>
#mask = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
func.func @torch_math_sdpa_causal(%q: tensor<1x4x128x128xbf16>, %k: tensor<1x4x128x128xbf16>,
                                  %v: tensor<1x4x128x128xbf16>) -> tensor<1x4x128x128xbf16> {
  %zero = arith.constant 0.000000e+00 : bf16
  %ninf = arith.constant 0xFF80 : bf16
  %root = arith.constant 2.973020e-01 : f64
  // q * sqrt(scale), k.transpose(-2, -1) * sqrt(scale)
  %qs0 = tensor.empty() : tensor<1x4x128x128xbf16>
  %qs = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%q : tensor<1x4x128x128xbf16>) outs(%qs0 : tensor<1x4x128x128xbf16>) {
  ^bb0(%in: bf16, %out: bf16):
    %c = arith.truncf %root : f64 to bf16
    %r = arith.mulf %in, %c : bf16
    linalg.yield %r : bf16
  } -> tensor<1x4x128x128xbf16>
  %kt = linalg.generic {indexing_maps = [#id4, #tr], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%k : tensor<1x4x128x128xbf16>) outs(%qs0 : tensor<1x4x128x128xbf16>) {
  ^bb0(%in: bf16, %out: bf16):
    linalg.yield %in : bf16
  } -> tensor<1x4x128x128xbf16>
  %ks = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%kt : tensor<1x4x128x128xbf16>) outs(%qs0 : tensor<1x4x128x128xbf16>) {
  ^bb0(%in: bf16, %out: bf16):
    %c = arith.truncf %root : f64 to bf16
    %r = arith.mulf %in, %c : bf16
    linalg.yield %r : bf16
  } -> tensor<1x4x128x128xbf16>
  %qc = tensor.collapse_shape %qs [[0, 1], [2], [3]] : tensor<1x4x128x128xbf16> into tensor<4x128x128xbf16>
  %kc = tensor.collapse_shape %ks [[0, 1], [2], [3]] : tensor<1x4x128x128xbf16> into tensor<4x128x128xbf16>
  %s0 = tensor.empty() : tensor<4x128x128xbf16>
  %s1 = linalg.fill ins(%zero : bf16) outs(%s0 : tensor<4x128x128xbf16>) -> tensor<4x128x128xbf16>
  %s2 = linalg.batch_matmul ins(%qc, %kc : tensor<4x128x128xbf16>, tensor<4x128x128xbf16>) outs(%s1 : tensor<4x128x128xbf16>) -> tensor<4x128x128xbf16>
  %s = tensor.expand_shape %s2 [[0, 1], [2], [3]] output_shape [1, 4, 128, 128] : tensor<4x128x128xbf16> into tensor<1x4x128x128xbf16>
  // temp_mask = ones(L, S).tril(); attn.masked_fill(temp_mask.logical_not(), -inf)
  %b0 = tensor.empty() : tensor<128x128xi1>
  %tril = linalg.generic {indexing_maps = [#ij], iterator_types = ["parallel", "parallel"]} outs(%b0 : tensor<128x128xi1>) {
  ^bb0(%out: i1):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %i64 = arith.index_cast %i : index to i64
    %j64 = arith.index_cast %j : index to i64
    %d = arith.subi %j64, %i64 : i64
    %c0 = arith.constant 0 : i64
    %keep = arith.cmpi sle, %d, %c0 : i64
    linalg.yield %keep : i1
  } -> tensor<128x128xi1>
  %sm = linalg.generic {indexing_maps = [#id4, #mask, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%s, %tril : tensor<1x4x128x128xbf16>, tensor<128x128xi1>) outs(%qs0 : tensor<1x4x128x128xbf16>) {
  ^bb0(%in: bf16, %keep: i1, %out: bf16):
    %r = arith.select %keep, %in, %ninf : bf16
    linalg.yield %r : bf16
  } -> tensor<1x4x128x128xbf16>
  %p = linalg.softmax dimension(3) ins(%sm : tensor<1x4x128x128xbf16>) outs(%qs0 : tensor<1x4x128x128xbf16>) -> tensor<1x4x128x128xbf16>
  %pc = tensor.collapse_shape %p [[0, 1], [2], [3]] : tensor<1x4x128x128xbf16> into tensor<4x128x128xbf16>
  %vc = tensor.collapse_shape %v [[0, 1], [2], [3]] : tensor<1x4x128x128xbf16> into tensor<4x128x128xbf16>
  %o2 = linalg.batch_matmul ins(%pc, %vc : tensor<4x128x128xbf16>, tensor<4x128x128xbf16>) outs(%s1 : tensor<4x128x128xbf16>) -> tensor<4x128x128xbf16>
  %o = tensor.expand_shape %o2 [[0, 1], [2], [3]] output_shape [1, 4, 128, 128] : tensor<4x128x128xbf16> into tensor<1x4x128x128xbf16>
  return %o : tensor<1x4x128x128xbf16>
}

// -----

// k.repeat(1, 2, 1, 1) (not repeat_interleave): head h reads KV head h mod 2,
// which is not fat.attention's GQA map h floordiv g. The broadcast K and V
// (4 heads) are used instead of the 2-head originals.
// CHECK-LABEL: func.func @repeat_not_interleave
// CHECK-SAME:    (%[[Q:.+]]: tensor<1x4x8x64xf16>, %[[K:.+]]: tensor<1x2x8x64xf16>, %[[V:.+]]: tensor<1x2x8x64xf16>)
// CHECK:         %[[KB:.+]] = linalg.broadcast ins(%[[K]] : tensor<1x2x8x64xf16>)
// CHECK:         %[[VB:.+]] = linalg.broadcast ins(%[[V]] : tensor<1x2x8x64xf16>)
// CHECK:         %[[KC:.+]] = tensor.collapse_shape %[[KB]] {{\[}}[0, 1, 2], [3], [4]]
// CHECK:         %[[K4:.+]] = tensor.expand_shape %[[KC]] {{\[}}[0, 1], [2], [3]] output_shape [1, 4, 8, 64]
// CHECK:         %[[VC:.+]] = tensor.collapse_shape %[[VB]] {{\[}}[0, 1, 2], [3], [4]]
// CHECK:         %[[V4:.+]] = tensor.expand_shape %[[VC]] {{\[}}[0, 1], [2], [3]] output_shape [1, 4, 8, 64]
// CHECK:         %[[O:.+]] = fat.attention ins(%[[Q]], %[[K4]], %[[V4]] : tensor<1x4x8x64xf16>, tensor<1x4x8x64xf16>, tensor<1x4x8x64xf16>)
// CHECK:         return %[[O]]
func.func @repeat_not_interleave(%q: tensor<1x4x8x64xf16>, %k: tensor<1x2x8x64xf16>,
                                 %v: tensor<1x2x8x64xf16>) -> tensor<1x4x8x64xf16> {
  %zero = arith.constant 0.000000e+00 : f16
  %e0 = tensor.empty() : tensor<1x2x2x8x64xf16>
  %kb = linalg.broadcast ins(%k : tensor<1x2x8x64xf16>) outs(%e0 : tensor<1x2x2x8x64xf16>) dimensions = [1]
  %kr = tensor.collapse_shape %kb [[0], [1, 2], [3], [4]] : tensor<1x2x2x8x64xf16> into tensor<1x4x8x64xf16>
  %vb = linalg.broadcast ins(%v : tensor<1x2x8x64xf16>) outs(%e0 : tensor<1x2x2x8x64xf16>) dimensions = [1]
  %vr = tensor.collapse_shape %vb [[0], [1, 2], [3], [4]] : tensor<1x2x2x8x64xf16> into tensor<1x4x8x64xf16>
  %qc = tensor.collapse_shape %q [[0, 1], [2], [3]] : tensor<1x4x8x64xf16> into tensor<4x8x64xf16>
  %kc = tensor.collapse_shape %kr [[0, 1], [2], [3]] : tensor<1x4x8x64xf16> into tensor<4x8x64xf16>
  %vc = tensor.collapse_shape %vr [[0, 1], [2], [3]] : tensor<1x4x8x64xf16> into tensor<4x8x64xf16>
  %s0 = tensor.empty() : tensor<4x8x8xf16>
  %s1 = linalg.fill ins(%zero : f16) outs(%s0 : tensor<4x8x8xf16>) -> tensor<4x8x8xf16>
  %s = linalg.batch_matmul
      indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>,
                       affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>,
                       affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>]
      ins(%qc, %kc : tensor<4x8x64xf16>, tensor<4x8x64xf16>) outs(%s1 : tensor<4x8x8xf16>) -> tensor<4x8x8xf16>
  %p = linalg.softmax dimension(2) ins(%s : tensor<4x8x8xf16>) outs(%s0 : tensor<4x8x8xf16>) -> tensor<4x8x8xf16>
  %o0 = tensor.empty() : tensor<4x8x64xf16>
  %o1 = linalg.fill ins(%zero : f16) outs(%o0 : tensor<4x8x64xf16>) -> tensor<4x8x64xf16>
  %o2 = linalg.batch_matmul ins(%p, %vc : tensor<4x8x8xf16>, tensor<4x8x64xf16>) outs(%o1 : tensor<4x8x64xf16>) -> tensor<4x8x64xf16>
  %o = tensor.expand_shape %o2 [[0, 1], [2], [3]] output_shape [1, 4, 8, 64] : tensor<4x8x64xf16> into tensor<1x4x8x64xf16>
  return %o : tensor<1x4x8x64xf16>
}

// -----

// K arrives pre-transposed ([B·H, D, Skv]); fat.attention reads [.., Skv, D]:
// a linalg.transpose is materialized.
// CHECK-LABEL: func.func @k_stored_transposed
// CHECK-SAME:    (%[[Q:.+]]: tensor<8x32x64xf32>, %[[KT:.+]]: tensor<8x64x48xf32>, %[[V:.+]]: tensor<8x48x64xf32>)
// CHECK:         %[[K:.+]] = linalg.transpose ins(%[[KT]] : tensor<8x64x48xf32>) outs(%{{.+}} : tensor<8x48x64xf32>) permutation = [0, 2, 1]
// CHECK:         %[[K4:.+]] = tensor.expand_shape %[[K]] {{\[}}[0, 1], [2], [3]] output_shape [8, 1, 48, 64]
// CHECK:         fat.attention ins(%{{.+}}, %[[K4]], %{{.+}} : tensor<8x1x32x64xf32>, tensor<8x1x48x64xf32>, tensor<8x1x48x64xf32>)
// CHECK-NOT:     linalg.batch_matmul
func.func @k_stored_transposed(%q: tensor<8x32x64xf32>, %kt: tensor<8x64x48xf32>,
                               %v: tensor<8x48x64xf32>) -> tensor<8x32x64xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %s0 = tensor.empty() : tensor<8x32x48xf32>
  %s1 = linalg.fill ins(%zero : f32) outs(%s0 : tensor<8x32x48xf32>) -> tensor<8x32x48xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<8x32x64xf32>, tensor<8x64x48xf32>) outs(%s1 : tensor<8x32x48xf32>) -> tensor<8x32x48xf32>
  %p = linalg.softmax dimension(2) ins(%s : tensor<8x32x48xf32>) outs(%s0 : tensor<8x32x48xf32>) -> tensor<8x32x48xf32>
  %o0 = tensor.empty() : tensor<8x32x64xf32>
  %o1 = linalg.fill ins(%zero : f32) outs(%o0 : tensor<8x32x64xf32>) -> tensor<8x32x64xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<8x32x48xf32>, tensor<8x48x64xf32>) outs(%o1 : tensor<8x32x64xf32>) -> tensor<8x32x64xf32>
  return %o : tensor<8x32x64xf32>
}

// -----

// linalg.contract for both GEMMs and linalg.elementwise for the scale.
// CHECK-LABEL: func.func @contract_elementwise
// CHECK:         fat.attention ins(%{{.+}}, %{{.+}}, %{{.+}} : tensor<8x1x32x64xf32>, tensor<8x1x48x64xf32>, tensor<8x1x48x64xf32>)
// CHECK-SAME:      scale 1.250000e-01 -> tensor<8x1x32x64xf32>
// CHECK-NOT:     linalg.
func.func @contract_elementwise(%q: tensor<8x32x64xf32>, %k: tensor<8x48x64xf32>,
                               %v: tensor<8x48x64xf32>) -> tensor<8x32x64xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %c = arith.constant dense<1.250000e-01> : tensor<8x32x48xf32>
  %s0 = tensor.empty() : tensor<8x32x48xf32>
  %s1 = linalg.fill ins(%zero : f32) outs(%s0 : tensor<8x32x48xf32>) -> tensor<8x32x48xf32>
  %s = linalg.contract
      indexing_maps = [affine_map<(b, i, j, d) -> (b, i, d)>,
                       affine_map<(b, i, j, d) -> (b, j, d)>,
                       affine_map<(b, i, j, d) -> (b, i, j)>]
      ins(%q, %k : tensor<8x32x64xf32>, tensor<8x48x64xf32>) outs(%s1 : tensor<8x32x48xf32>) -> tensor<8x32x48xf32>
  %sc = linalg.elementwise kind=#linalg.elementwise_kind<mul> ins(%s, %c : tensor<8x32x48xf32>, tensor<8x32x48xf32>) outs(%s0 : tensor<8x32x48xf32>) -> tensor<8x32x48xf32>
  %p = linalg.softmax dimension(2) ins(%sc : tensor<8x32x48xf32>) outs(%s0 : tensor<8x32x48xf32>) -> tensor<8x32x48xf32>
  %o0 = tensor.empty() : tensor<8x32x64xf32>
  %o1 = linalg.fill ins(%zero : f32) outs(%o0 : tensor<8x32x64xf32>) -> tensor<8x32x64xf32>
  %o = linalg.contract
      indexing_maps = [affine_map<(b, i, e, j) -> (b, i, j)>,
                       affine_map<(b, i, e, j) -> (b, j, e)>,
                       affine_map<(b, i, e, j) -> (b, i, e)>]
      ins(%p, %v : tensor<8x32x48xf32>, tensor<8x48x64xf32>) outs(%o1 : tensor<8x32x64xf32>) -> tensor<8x32x64xf32>
  return %o : tensor<8x32x64xf32>
}

// -----

// What torch.export gives for scaled_dot_product_attention(q, k, v,
// is_causal=True) (torch 2.x, decomposed), written as torch-mlir lowers it:
// q and kᵀ each times √(1/√64); the mask where(tril & full(True), 0, −inf)
// from two aranges (index·1 + 0, i64); _softmax decomposed; _safe_softmax's
// where(not(any_j(not(S == −inf))), 0, P), which fat.attention's "a row
// with no visible key gives 0" already is; the result permuted back.
//   scale = f32(0.353553391)² = 0.124999993, causal with δ = 0
// CHECK-LABEL: func.func @torch_export_sdpa_causal
// CHECK-SAME:    (%[[Q:.+]]: tensor<2x8x16x64xf32>, %[[K:.+]]: tensor<2x8x16x64xf32>, %[[V:.+]]: tensor<2x8x16x64xf32>)
// CHECK:         %[[O:.+]] = fat.attention ins(%[[Q]], %[[K]], %[[V]] :
// CHECK-SAME:      scale 0.124999993 causal -> tensor<2x8x16x64xf32>
// CHECK-NOT:     linalg.generic
// CHECK-NOT:     linalg.batch_matmul
// CHECK:         %[[T:.+]] = linalg.transpose ins(%[[O]] : tensor<2x8x16x64xf32>)
// CHECK:         linalg.transpose ins(%[[T]]
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#ar = affine_map<(d0) -> (d0)>
#row0 = affine_map<(d0, d1) -> (0, d1)>
#col0 = affine_map<(d0, d1) -> (d0, 0)>
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#mask4 = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
#rows = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#keep = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>
func.func @torch_export_sdpa_causal(%q: tensor<2x8x16x64xf32>, %k: tensor<2x8x16x64xf32>,
                                    %v: tensor<2x8x16x64xf32>) -> tensor<2x8x16x64xf32> {
  %c0_i64 = arith.constant 0 : i64
  %c1_i64 = arith.constant 1 : i64
  %true = arith.constant true
  %false = arith.constant false
  %zero = arith.constant 0.000000e+00 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %ninf64 = arith.constant 0xFFF0000000000000 : f64
  %s64 = arith.constant 0.35355339059327379 : f64
  // mul = q * 0.3535…
  %e4 = tensor.empty() : tensor<2x8x16x64xf32>
  %qs = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%q : tensor<2x8x16x64xf32>) outs(%e4 : tensor<2x8x16x64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %c = arith.truncf %s64 : f64 to f32
    %r = arith.mulf %in, %c : f32
    linalg.yield %r : f32
  } -> tensor<2x8x16x64xf32>
  // full([16, 16], True); arange(16) unsqueezed at -2 and -1; sub; le 0; logical_and
  %eb = tensor.empty() : tensor<16x16xi1>
  %full = linalg.fill ins(%true : i1) outs(%eb : tensor<16x16xi1>) -> tensor<16x16xi1>
  %ea = tensor.empty() : tensor<16xi64>
  %ar = linalg.generic {indexing_maps = [#ar], iterator_types = ["parallel"]} outs(%ea : tensor<16xi64>) {
  ^bb0(%out: i64):
    %i = linalg.index 0 : index
    %i64 = arith.index_cast %i : index to i64
    %m = arith.muli %i64, %c1_i64 : i64
    %a = arith.addi %m, %c0_i64 : i64
    linalg.yield %a : i64
  } -> tensor<16xi64>
  %u0 = tensor.expand_shape %ar [[0, 1]] output_shape [1, 16] : tensor<16xi64> into tensor<1x16xi64>
  %u1 = tensor.expand_shape %ar [[0, 1]] output_shape [16, 1] : tensor<16xi64> into tensor<16x1xi64>
  %ei = tensor.empty() : tensor<16x16xi64>
  %sub = linalg.generic {indexing_maps = [#row0, #col0, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%u0, %u1 : tensor<1x16xi64>, tensor<16x1xi64>) outs(%ei : tensor<16x16xi64>) {
  ^bb0(%a: i64, %b: i64, %out: i64):
    %r = arith.subi %a, %b : i64
    linalg.yield %r : i64
  } -> tensor<16x16xi64>
  %le = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%sub : tensor<16x16xi64>) outs(%eb : tensor<16x16xi1>) {
  ^bb0(%in: i64, %out: i1):
    %r = arith.cmpi sle, %in, %c0_i64 : i64
    linalg.yield %r : i1
  } -> tensor<16x16xi1>
  %and = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%le, %full : tensor<16x16xi1>, tensor<16x16xi1>) outs(%eb : tensor<16x16xi1>) {
  ^bb0(%a: i1, %b: i1, %out: i1):
    %r = arith.andi %a, %b : i1
    linalg.yield %r : i1
  } -> tensor<16x16xi1>
  // where(logical_and, scalar_tensor(0.0), scalar_tensor(-inf))
  %zt = tensor.from_elements %zero : tensor<f32>
  %nt = tensor.from_elements %ninf : tensor<f32>
  %ef = tensor.empty() : tensor<16x16xf32>
  %where = linalg.generic {indexing_maps = [#id2, affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> ()>, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%and, %zt, %nt : tensor<16x16xi1>, tensor<f32>, tensor<f32>) outs(%ef : tensor<16x16xf32>) {
  ^bb0(%c: i1, %a: f32, %b: f32, %out: f32):
    %r = arith.select %c, %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<16x16xf32>
  // permute(k, [0, 1, 3, 2]) * 0.3535…
  %ekt = tensor.empty() : tensor<2x8x64x16xf32>
  %kt = linalg.transpose ins(%k : tensor<2x8x16x64xf32>) outs(%ekt : tensor<2x8x64x16xf32>) permutation = [0, 1, 3, 2]
  %ks = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%kt : tensor<2x8x64x16xf32>) outs(%ekt : tensor<2x8x64x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %c = arith.truncf %s64 : f64 to f32
    %r = arith.mulf %in, %c : f32
    linalg.yield %r : f32
  } -> tensor<2x8x64x16xf32>
  // bmm on views [16, 16, 64] x [16, 64, 16], viewed back to [2, 8, 16, 16]
  %qv = tensor.collapse_shape %qs [[0, 1], [2], [3]] : tensor<2x8x16x64xf32> into tensor<16x16x64xf32>
  %kv = tensor.collapse_shape %ks [[0, 1], [2], [3]] : tensor<2x8x64x16xf32> into tensor<16x64x16xf32>
  %es = tensor.empty() : tensor<16x16x16xf32>
  %zs = linalg.fill ins(%zero : f32) outs(%es : tensor<16x16x16xf32>) -> tensor<16x16x16xf32>
  %bmm = linalg.batch_matmul ins(%qv, %kv : tensor<16x16x64xf32>, tensor<16x64x16xf32>) outs(%zs : tensor<16x16x16xf32>) -> tensor<16x16x16xf32>
  %s = tensor.expand_shape %bmm [[0, 1], [2], [3]] output_shape [2, 8, 16, 16] : tensor<16x16x16xf32> into tensor<2x8x16x16xf32>
  // add = s + where
  %e44 = tensor.empty() : tensor<2x8x16x16xf32>
  %add = linalg.generic {indexing_maps = [#id4, #mask4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%s, %where : tensor<2x8x16x16xf32>, tensor<16x16xf32>) outs(%e44 : tensor<2x8x16x16xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x8x16x16xf32>
  // _softmax(add, -1): amax, sub, exp, sum, div (keepdim)
  %er = tensor.empty() : tensor<2x8x16xf32>
  %m0 = linalg.fill ins(%ninf : f32) outs(%er : tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  %amax = linalg.generic {indexing_maps = [#id4, #rows], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%add : tensor<2x8x16x16xf32>) outs(%m0 : tensor<2x8x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %out : f32
    linalg.yield %r : f32
  } -> tensor<2x8x16xf32>
  %amaxk = tensor.expand_shape %amax [[0], [1], [2, 3]] output_shape [2, 8, 16, 1] : tensor<2x8x16xf32> into tensor<2x8x16x1xf32>
  %sh = linalg.generic {indexing_maps = [#id4, #keep, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%add, %amaxk : tensor<2x8x16x16xf32>, tensor<2x8x16x1xf32>) outs(%e44 : tensor<2x8x16x16xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %r = arith.subf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x8x16x16xf32>
  %ex = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%sh : tensor<2x8x16x16xf32>) outs(%e44 : tensor<2x8x16x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = math.exp %in : f32
    linalg.yield %r : f32
  } -> tensor<2x8x16x16xf32>
  %z0 = linalg.fill ins(%zero : f32) outs(%er : tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  %sum = linalg.generic {indexing_maps = [#id4, #rows], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%ex : tensor<2x8x16x16xf32>) outs(%z0 : tensor<2x8x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %in, %out : f32
    linalg.yield %r : f32
  } -> tensor<2x8x16xf32>
  %sumk = tensor.expand_shape %sum [[0], [1], [2, 3]] output_shape [2, 8, 16, 1] : tensor<2x8x16xf32> into tensor<2x8x16x1xf32>
  %sm = linalg.generic {indexing_maps = [#id4, #keep, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%ex, %sumk : tensor<2x8x16x16xf32>, tensor<2x8x16x1xf32>) outs(%e44 : tensor<2x8x16x16xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %r = arith.divf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x8x16x16xf32>
  // _safe_softmax: where(not(any(not(eq(add, -inf)), -1, keepdim)), 0, softmax)
  %eb4 = tensor.empty() : tensor<2x8x16x16xi1>
  %eq = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%add : tensor<2x8x16x16xf32>) outs(%eb4 : tensor<2x8x16x16xi1>) {
  ^bb0(%in: f32, %out: i1):
    %c = arith.truncf %ninf64 : f64 to f32
    %r = arith.cmpf oeq, %in, %c : f32
    linalg.yield %r : i1
  } -> tensor<2x8x16x16xi1>
  %ne = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%eq : tensor<2x8x16x16xi1>) outs(%eb4 : tensor<2x8x16x16xi1>) {
  ^bb0(%in: i1, %out: i1):
    %r = arith.xori %in, %true : i1
    linalg.yield %r : i1
  } -> tensor<2x8x16x16xi1>
  %ebr = tensor.empty() : tensor<2x8x16xi1>
  %f0 = linalg.fill ins(%false : i1) outs(%ebr : tensor<2x8x16xi1>) -> tensor<2x8x16xi1>
  %any = linalg.generic {indexing_maps = [#id4, #rows], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%ne : tensor<2x8x16x16xi1>) outs(%f0 : tensor<2x8x16xi1>) {
  ^bb0(%in: i1, %out: i1):
    %r = arith.ori %in, %out : i1
    linalg.yield %r : i1
  } -> tensor<2x8x16xi1>
  %anyk = tensor.expand_shape %any [[0], [1], [2, 3]] output_shape [2, 8, 16, 1] : tensor<2x8x16xi1> into tensor<2x8x16x1xi1>
  %ebk = tensor.empty() : tensor<2x8x16x1xi1>
  %none = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%anyk : tensor<2x8x16x1xi1>) outs(%ebk : tensor<2x8x16x1xi1>) {
  ^bb0(%in: i1, %out: i1):
    %r = arith.xori %in, %true : i1
    linalg.yield %r : i1
  } -> tensor<2x8x16x1xi1>
  %zl = linalg.fill ins(%zero : f32) outs(%e44 : tensor<2x8x16x16xf32>) -> tensor<2x8x16x16xf32>
  %safe = linalg.generic {indexing_maps = [#keep, #id4, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%none, %zl, %sm : tensor<2x8x16x1xi1>, tensor<2x8x16x16xf32>, tensor<2x8x16x16xf32>) outs(%e44 : tensor<2x8x16x16xf32>) {
  ^bb0(%c: i1, %a: f32, %b: f32, %out: f32):
    %r = arith.select %c, %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x8x16x16xf32>
  // bmm(view(safe), view(v)), view back, permute [2, 0, 1, 3], permute [1, 2, 0, 3]
  %pv = tensor.collapse_shape %safe [[0, 1], [2], [3]] : tensor<2x8x16x16xf32> into tensor<16x16x16xf32>
  %vv = tensor.collapse_shape %v [[0, 1], [2], [3]] : tensor<2x8x16x64xf32> into tensor<16x16x64xf32>
  %eo = tensor.empty() : tensor<16x16x64xf32>
  %zo = linalg.fill ins(%zero : f32) outs(%eo : tensor<16x16x64xf32>) -> tensor<16x16x64xf32>
  %bmm1 = linalg.batch_matmul ins(%pv, %vv : tensor<16x16x16xf32>, tensor<16x16x64xf32>) outs(%zo : tensor<16x16x64xf32>) -> tensor<16x16x64xf32>
  %o4 = tensor.expand_shape %bmm1 [[0, 1], [2], [3]] output_shape [2, 8, 16, 64] : tensor<16x16x64xf32> into tensor<2x8x16x64xf32>
  %ep1 = tensor.empty() : tensor<16x2x8x64xf32>
  %p1 = linalg.transpose ins(%o4 : tensor<2x8x16x64xf32>) outs(%ep1 : tensor<16x2x8x64xf32>) permutation = [2, 0, 1, 3]
  %p2 = linalg.transpose ins(%p1 : tensor<16x2x8x64xf32>) outs(%e4 : tensor<2x8x16x64xf32>) permutation = [1, 2, 0, 3]
  return %p2 : tensor<2x8x16x64xf32>
}

// -----

// f16 inputs widened to f32 by separate generics, attention in f32, the
// result rounded back to f16: raised on the f16 originals (fat.attention
// rounds P to f16 for P·V, as the f16 result is rounded anyway).
// CHECK-LABEL: func.func @widened_then_rounded
// CHECK-SAME:    (%[[Q:.+]]: tensor<4x32x64xf16>, %[[K:.+]]: tensor<4x32x64xf16>, %[[V:.+]]: tensor<4x32x64xf16>)
// CHECK-DAG:     %[[Q4:.+]] = tensor.expand_shape %[[Q]]
// CHECK-DAG:     %[[K4:.+]] = tensor.expand_shape %[[K]]
// CHECK-DAG:     %[[V4:.+]] = tensor.expand_shape %[[V]]
// CHECK:         fat.attention ins(%[[Q4]], %[[K4]], %[[V4]] : tensor<4x1x32x64xf16>, tensor<4x1x32x64xf16>, tensor<4x1x32x64xf16>)
// CHECK-NOT:     linalg.
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @widened_then_rounded(%q: tensor<4x32x64xf16>, %k: tensor<4x32x64xf16>,
                                %v: tensor<4x32x64xf16>) -> tensor<4x32x64xf16> {
  %zero = arith.constant 0.000000e+00 : f32
  %e = tensor.empty() : tensor<4x32x64xf32>
  %q32 = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%q : tensor<4x32x64xf16>) outs(%e : tensor<4x32x64xf32>) {
  ^bb0(%in: f16, %out: f32):
    %r = arith.extf %in : f16 to f32
    linalg.yield %r : f32
  } -> tensor<4x32x64xf32>
  %k32 = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%k : tensor<4x32x64xf16>) outs(%e : tensor<4x32x64xf32>) {
  ^bb0(%in: f16, %out: f32):
    %r = arith.extf %in : f16 to f32
    linalg.yield %r : f32
  } -> tensor<4x32x64xf32>
  %v32 = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%v : tensor<4x32x64xf16>) outs(%e : tensor<4x32x64xf32>) {
  ^bb0(%in: f16, %out: f32):
    %r = arith.extf %in : f16 to f32
    linalg.yield %r : f32
  } -> tensor<4x32x64xf32>
  %s0 = tensor.empty() : tensor<4x32x32xf32>
  %s1 = linalg.fill ins(%zero : f32) outs(%s0 : tensor<4x32x32xf32>) -> tensor<4x32x32xf32>
  %s = linalg.batch_matmul
      indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>,
                       affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>,
                       affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>]
      ins(%q32, %k32 : tensor<4x32x64xf32>, tensor<4x32x64xf32>) outs(%s1 : tensor<4x32x32xf32>) -> tensor<4x32x32xf32>
  %p = linalg.softmax dimension(2) ins(%s : tensor<4x32x32xf32>) outs(%s0 : tensor<4x32x32xf32>) -> tensor<4x32x32xf32>
  %o1 = linalg.fill ins(%zero : f32) outs(%e : tensor<4x32x64xf32>) -> tensor<4x32x64xf32>
  %o = linalg.batch_matmul ins(%p, %v32 : tensor<4x32x32xf32>, tensor<4x32x64xf32>) outs(%o1 : tensor<4x32x64xf32>) -> tensor<4x32x64xf32>
  %eh = tensor.empty() : tensor<4x32x64xf16>
  %oh = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%o : tensor<4x32x64xf32>) outs(%eh : tensor<4x32x64xf16>) {
  ^bb0(%in: f32, %out: f16):
    %r = arith.truncf %in : f32 to f16
    linalg.yield %r : f16
  } -> tensor<4x32x64xf16>
  return %oh : tensor<4x32x64xf16>
}

// -----

// The same with the f32 result kept: raised in f32 on the widened tensors.
// CHECK-LABEL: func.func @widened_result_f32
// CHECK-COUNT-3: arith.extf
// CHECK:         fat.attention ins({{.+}} : tensor<4x1x32x64xf32>, tensor<4x1x32x64xf32>, tensor<4x1x32x64xf32>)
// CHECK-NOT:     linalg.batch_matmul
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @widened_result_f32(%q: tensor<4x32x64xf16>, %k: tensor<4x32x64xf16>,
                                %v: tensor<4x32x64xf16>) -> tensor<4x32x64xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %e = tensor.empty() : tensor<4x32x64xf32>
  %q32 = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%q : tensor<4x32x64xf16>) outs(%e : tensor<4x32x64xf32>) {
  ^bb0(%in: f16, %out: f32):
    %r = arith.extf %in : f16 to f32
    linalg.yield %r : f32
  } -> tensor<4x32x64xf32>
  %k32 = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%k : tensor<4x32x64xf16>) outs(%e : tensor<4x32x64xf32>) {
  ^bb0(%in: f16, %out: f32):
    %r = arith.extf %in : f16 to f32
    linalg.yield %r : f32
  } -> tensor<4x32x64xf32>
  %v32 = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%v : tensor<4x32x64xf16>) outs(%e : tensor<4x32x64xf32>) {
  ^bb0(%in: f16, %out: f32):
    %r = arith.extf %in : f16 to f32
    linalg.yield %r : f32
  } -> tensor<4x32x64xf32>
  %s0 = tensor.empty() : tensor<4x32x32xf32>
  %s1 = linalg.fill ins(%zero : f32) outs(%s0 : tensor<4x32x32xf32>) -> tensor<4x32x32xf32>
  %s = linalg.batch_matmul
      indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>,
                       affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>,
                       affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>]
      ins(%q32, %k32 : tensor<4x32x64xf32>, tensor<4x32x64xf32>) outs(%s1 : tensor<4x32x32xf32>) -> tensor<4x32x32xf32>
  %p = linalg.softmax dimension(2) ins(%s : tensor<4x32x32xf32>) outs(%s0 : tensor<4x32x32xf32>) -> tensor<4x32x32xf32>
  %o1 = linalg.fill ins(%zero : f32) outs(%e : tensor<4x32x64xf32>) -> tensor<4x32x64xf32>
  %o = linalg.batch_matmul ins(%p, %v32 : tensor<4x32x32xf32>, tensor<4x32x64xf32>) outs(%o1 : tensor<4x32x64xf32>) -> tensor<4x32x64xf32>
  return %o : tensor<4x32x64xf32>
}

// -----

// A constant upper-triangular mask (query i sees keys j ≥ i): a sliding
// window with no upper edge, window [0, -1] at diagonal 0 (= Skv − Sq, the
// default, not stated). Every row sees at least its own key.
// CHECK-LABEL: func.func @anti_causal_constant_mask
// CHECK:         fat.attention
// CHECK-NOT:       causal
// CHECK-SAME:      window [0, -1]
// CHECK-NOT:     arith.constant dense<
func.func @anti_causal_constant_mask(%q: tensor<4x16xf32>, %kt: tensor<16x4xf32>,
                                     %v: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %mask = arith.constant dense<[[0.0, 0.0, 0.0, 0.0],
                                [0xFF800000, 0.0, 0.0, 0.0],
                                [0xFF800000, 0xFF800000, 0.0, 0.0],
                                [0xFF800000, 0xFF800000, 0xFF800000, 0.0]]> : tensor<4x4xf32>
  %s0 = tensor.empty() : tensor<4x4xf32>
  %s1 = linalg.fill ins(%zero : f32) outs(%s0 : tensor<4x4xf32>) -> tensor<4x4xf32>
  %s = linalg.matmul ins(%q, %kt : tensor<4x16xf32>, tensor<16x4xf32>) outs(%s1 : tensor<4x4xf32>) -> tensor<4x4xf32>
  %sm = linalg.add ins(%s, %mask : tensor<4x4xf32>, tensor<4x4xf32>) outs(%s0 : tensor<4x4xf32>) -> tensor<4x4xf32>
  %p = linalg.softmax dimension(1) ins(%sm : tensor<4x4xf32>) outs(%s0 : tensor<4x4xf32>) -> tensor<4x4xf32>
  %o0 = tensor.empty() : tensor<4x16xf32>
  %o1 = linalg.fill ins(%zero : f32) outs(%o0 : tensor<4x16xf32>) -> tensor<4x16xf32>
  %o = linalg.matmul ins(%p, %v : tensor<4x4xf32>, tensor<4x16xf32>) outs(%o1 : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %o : tensor<4x16xf32>
}


// -----

// The same band as an index compare (hide j < i).
// CHECK-LABEL: func.func @anti_causal_iota_mask
// CHECK:         fat.attention
// CHECK-NOT:       causal
// CHECK-SAME:      window [0, -1]
// CHECK-NOT:     arith.cmpi
func.func @anti_causal_iota_mask(%q: tensor<2x8x16xf32>, %kt: tensor<2x16x8xf32>,
                                 %v: tensor<2x8x16xf32>) -> tensor<2x8x16xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %s0 = tensor.empty() : tensor<2x8x8xf32>
  %s1 = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<2x8x16xf32>, tensor<2x16x8xf32>) outs(%s1 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %sm = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>],
                        iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %hide = arith.cmpi slt, %j, %i : index
    %r = arith.select %hide, %ninf, %in : f32
    linalg.yield %r : f32
  } -> tensor<2x8x8xf32>
  %p = linalg.softmax dimension(2) ins(%sm : tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %o0 = tensor.empty() : tensor<2x8x16xf32>
  %o1 = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x8x8xf32>, tensor<2x8x16xf32>) outs(%o1 : tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  return %o : tensor<2x8x16xf32>
}


// -----

// A sliding window, i − 2 ≤ j ≤ i, written as two comparisons joined by
// `and`: the causal mask plus a window of 2 keys to the left.
// CHECK-LABEL: func.func @window_mask
// CHECK:         fat.attention
// CHECK-SAME:      causal window [2, -1]
// CHECK-NOT:     arith.andi
func.func @window_mask(%q: tensor<2x8x16xf32>, %kt: tensor<2x16x8xf32>,
                       %v: tensor<2x8x16xf32>) -> tensor<2x8x16xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %c2 = arith.constant 2 : index
  %s0 = tensor.empty() : tensor<2x8x8xf32>
  %s1 = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<2x8x16xf32>, tensor<2x16x8xf32>) outs(%s1 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %sm = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>],
                        iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %jd = arith.addi %j, %c2 : index
    %le = arith.cmpi sle, %j, %i : index
    %ge = arith.cmpi sge, %jd, %i : index
    %keep = arith.andi %le, %ge : i1
    %r = arith.select %keep, %in, %ninf : f32
    linalg.yield %r : f32
  } -> tensor<2x8x8xf32>
  %p = linalg.softmax dimension(2) ins(%sm : tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %o0 = tensor.empty() : tensor<2x8x16xf32>
  %o1 = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x8x8xf32>, tensor<2x8x16xf32>) outs(%o1 : tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  return %o : tensor<2x8x16xf32>
}

