// RUN: fa-t-opt %s --fat-raise-attention="remarks=1" -split-input-file -verify-diagnostics | FileCheck %s

// Near misses of attention that --fat-raise-attention must leave alone: each
// differs from a raisable case in one place, says why in a remark (at the
// P·V contraction), and keeps its ops. Q·Kᵀ reads K pre-transposed (%kt).

// Softmax over the query dim: P[b, :, j] sums to 1, not P[b, i, :].
// CHECK-LABEL: func.func @softmax_over_queries
// CHECK-NOT:     fat.attention
// CHECK:         linalg.softmax dimension(1)
// CHECK:         linalg.batch_matmul
func.func @softmax_over_queries(%q: tensor<2x8x16xf32>, %kt: tensor<2x16x8xf32>,
                                %v: tensor<2x8x16xf32>) -> tensor<2x8x16xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %s0 = tensor.empty() : tensor<2x8x8xf32>
  %s1 = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<2x8x16xf32>, tensor<2x16x8xf32>) outs(%s1 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %p = linalg.softmax dimension(1) ins(%s : tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %o0 = tensor.empty() : tensor<2x8x16xf32>
  %o1 = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  // expected-remark @below {{not raised to fat.attention: linalg.softmax normalizes over dim 1, not over the keys that P·V sums over}}
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x8x8xf32>, tensor<2x8x16xf32>) outs(%o1 : tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  return %o : tensor<2x8x16xf32>
}

// -----

// The decomposed softmax reduces over dim 0 (the queries i) of [i, j].
// CHECK-LABEL: func.func @decomposed_softmax_over_queries
// CHECK-NOT:     fat.attention
// CHECK-COUNT-2: linalg.matmul
func.func @decomposed_softmax_over_queries(%q: tensor<8x16xf32>, %kt: tensor<16x8xf32>,
                                           %v: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %s0 = tensor.empty() : tensor<8x8xf32>
  %s1 = linalg.fill ins(%zero : f32) outs(%s0 : tensor<8x8xf32>) -> tensor<8x8xf32>
  %s = linalg.matmul ins(%q, %kt : tensor<8x16xf32>, tensor<16x8xf32>) outs(%s1 : tensor<8x8xf32>) -> tensor<8x8xf32>
  %c0 = tensor.empty() : tensor<8xf32>
  %m1 = linalg.fill ins(%ninf : f32) outs(%c0 : tensor<8xf32>) -> tensor<8xf32>
  %max = linalg.reduce ins(%s : tensor<8x8xf32>) outs(%m1 : tensor<8xf32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %x = arith.maximumf %in, %acc : f32
      linalg.yield %x : f32
    }
  %maxb = linalg.broadcast ins(%max : tensor<8xf32>) outs(%s0 : tensor<8x8xf32>) dimensions = [0]
  %sub = linalg.sub ins(%s, %maxb : tensor<8x8xf32>, tensor<8x8xf32>) outs(%s0 : tensor<8x8xf32>) -> tensor<8x8xf32>
  %e = linalg.exp ins(%sub : tensor<8x8xf32>) outs(%s0 : tensor<8x8xf32>) -> tensor<8x8xf32>
  %z1 = linalg.fill ins(%zero : f32) outs(%c0 : tensor<8xf32>) -> tensor<8xf32>
  %sum = linalg.reduce ins(%e : tensor<8x8xf32>) outs(%z1 : tensor<8xf32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %x = arith.addf %in, %acc : f32
      linalg.yield %x : f32
    }
  %sumb = linalg.broadcast ins(%sum : tensor<8xf32>) outs(%s0 : tensor<8x8xf32>) dimensions = [0]
  %p = linalg.div ins(%e, %sumb : tensor<8x8xf32>, tensor<8x8xf32>) outs(%s0 : tensor<8x8xf32>) -> tensor<8x8xf32>
  %o0 = tensor.empty() : tensor<8x16xf32>
  %o1 = linalg.fill ins(%zero : f32) outs(%o0 : tensor<8x16xf32>) -> tensor<8x16xf32>
  // expected-remark @below {{not raised to fat.attention: the softmax row sum varies along the keys j: it reduces over another dim}}
  %o = linalg.matmul ins(%p, %v : tensor<8x8xf32>, tensor<8x16xf32>) outs(%o1 : tensor<8x16xf32>) -> tensor<8x16xf32>
  return %o : tensor<8x16xf32>
}

// -----

// A finite mask value that is not negative enough: exp(−100) is not 0 next
// to the visible scores, so the source's P differs from a causal one.
// CHECK-LABEL: func.func @mask_not_small_enough
// CHECK-NOT:     fat.attention
// CHECK:         linalg.add
func.func @mask_not_small_enough(%q: tensor<2x16xf32>, %kt: tensor<16x2xf32>,
                                 %v: tensor<2x16xf32>) -> tensor<2x16xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %mask = arith.constant dense<[[0.0, -100.0], [0.0, 0.0]]> : tensor<2x2xf32>
  %s0 = tensor.empty() : tensor<2x2xf32>
  %s1 = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x2xf32>) -> tensor<2x2xf32>
  %s = linalg.matmul ins(%q, %kt : tensor<2x16xf32>, tensor<16x2xf32>) outs(%s1 : tensor<2x2xf32>) -> tensor<2x2xf32>
  %sm = linalg.add ins(%s, %mask : tensor<2x2xf32>, tensor<2x2xf32>) outs(%s0 : tensor<2x2xf32>) -> tensor<2x2xf32>
  %p = linalg.softmax dimension(1) ins(%sm : tensor<2x2xf32>) outs(%s0 : tensor<2x2xf32>) -> tensor<2x2xf32>
  %o0 = tensor.empty() : tensor<2x16xf32>
  %o1 = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x16xf32>) -> tensor<2x16xf32>
  // expected-remark @below {{not raised to fat.attention: mask entry (0, 1) is neither 0 nor ≤ -1e4}}
  %o = linalg.matmul ins(%p, %v : tensor<2x2xf32>, tensor<2x16xf32>) outs(%o1 : tensor<2x16xf32>) -> tensor<2x16xf32>
  return %o : tensor<2x16xf32>
}

// -----

// A causal mask shifted so that query row 0 sees no key (δ = −1): the source
// gives NaN there, fat.attention 0.
// CHECK-LABEL: func.func @row_without_keys
// CHECK-NOT:     fat.attention
func.func @row_without_keys(%q: tensor<2x16xf32>, %kt: tensor<16x2xf32>,
                            %v: tensor<2x16xf32>) -> tensor<2x16xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %mask = arith.constant dense<[[0xFF800000, 0xFF800000], [0.0, 0xFF800000]]> : tensor<2x2xf32>
  %s0 = tensor.empty() : tensor<2x2xf32>
  %s1 = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x2xf32>) -> tensor<2x2xf32>
  %s = linalg.matmul ins(%q, %kt : tensor<2x16xf32>, tensor<16x2xf32>) outs(%s1 : tensor<2x2xf32>) -> tensor<2x2xf32>
  %sm = linalg.add ins(%s, %mask : tensor<2x2xf32>, tensor<2x2xf32>) outs(%s0 : tensor<2x2xf32>) -> tensor<2x2xf32>
  %p = linalg.softmax dimension(1) ins(%sm : tensor<2x2xf32>) outs(%s0 : tensor<2x2xf32>) -> tensor<2x2xf32>
  %o0 = tensor.empty() : tensor<2x16xf32>
  %o1 = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x16xf32>) -> tensor<2x16xf32>
  // expected-remark @below {{not raised to fat.attention: the causal mask hides every key of query row 0 (diagonal -1)}}
  %o = linalg.matmul ins(%p, %v : tensor<2x2xf32>, tensor<2x16xf32>) outs(%o1 : tensor<2x16xf32>) -> tensor<2x16xf32>
  return %o : tensor<2x16xf32>
}

// -----

// P·V contracts over the queries: O = Pᵀ·V.
// CHECK-LABEL: func.func @pv_sums_over_queries
// CHECK-NOT:     fat.attention
// CHECK:         linalg.transpose
func.func @pv_sums_over_queries(%q: tensor<2x8x16xf32>, %kt: tensor<2x16x8xf32>,
                                %v: tensor<2x8x16xf32>) -> tensor<2x8x16xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %s0 = tensor.empty() : tensor<2x8x8xf32>
  %s1 = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<2x8x16xf32>, tensor<2x16x8xf32>) outs(%s1 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %p = linalg.softmax dimension(2) ins(%s : tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %pt = linalg.transpose ins(%p : tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) permutation = [0, 2, 1]
  %o0 = tensor.empty() : tensor<2x8x16xf32>
  %o1 = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  // expected-remark @below {{not raised to fat.attention: linalg.softmax normalizes over dim 2, not over the keys that P·V sums over}}
  %o = linalg.batch_matmul ins(%pt, %v : tensor<2x8x8xf32>, tensor<2x8x16xf32>) outs(%o1 : tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  return %o : tensor<2x8x16xf32>
}

// -----

// Q·Kᵀ pairs the query of (batch b, head h) with the keys of (batch h, head
// b): no [B, H, S, D] reading of K follows the output's (b, h).
// CHECK-LABEL: func.func @heads_mismatched
// CHECK-NOT:     fat.attention
// CHECK:         linalg.generic
func.func @heads_mismatched(%q: tensor<2x2x8x16xf32>, %k: tensor<2x2x8x16xf32>,
                            %v: tensor<2x2x8x16xf32>) -> tensor<2x2x8x16xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %s0 = tensor.empty() : tensor<2x2x8x8xf32>
  %s1 = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x2x8x8xf32>) -> tensor<2x2x8x8xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(b, h, i, j, d) -> (b, h, i, d)>,
                                        affine_map<(b, h, i, j, d) -> (h, b, j, d)>,
                                        affine_map<(b, h, i, j, d) -> (b, h, i, j)>],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>) outs(%s1 : tensor<2x2x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x2x8x8xf32>
  %p = linalg.softmax dimension(3) ins(%s : tensor<2x2x8x8xf32>) outs(%s0 : tensor<2x2x8x8xf32>) -> tensor<2x2x8x8xf32>
  %o0 = tensor.empty() : tensor<2x2x8x16xf32>
  %o1 = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x2x8x16xf32>) -> tensor<2x2x8x16xf32>
  // expected-remark @below {{not raised to fat.attention: Q, K and V do not index batch and heads consistently with the output (or their element types differ)}}
  %o = linalg.generic {indexing_maps = [affine_map<(b, h, i, e, j) -> (b, h, i, j)>,
                                        affine_map<(b, h, i, e, j) -> (b, h, j, e)>,
                                        affine_map<(b, h, i, e, j) -> (b, h, i, e)>],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<2x2x8x8xf32>, tensor<2x2x8x16xf32>) outs(%o1 : tensor<2x2x8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x2x8x16xf32>
  return %o : tensor<2x2x8x16xf32>
}

// -----

// f16 inputs, an f32 result that stays f32: fat.attention would round O to
// f16.
// CHECK-LABEL: func.func @f32_result_of_f16
// CHECK-NOT:     fat.attention
func.func @f32_result_of_f16(%q: tensor<2x8x16xf16>, %kt: tensor<2x16x8xf16>,
                             %v: tensor<2x8x16xf16>) -> tensor<2x8x16xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %s0 = tensor.empty() : tensor<2x8x8xf32>
  %s1 = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<2x8x16xf16>, tensor<2x16x8xf16>) outs(%s1 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %p = linalg.softmax dimension(2) ins(%s : tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %p0 = tensor.empty() : tensor<2x8x8xf16>
  %ph = linalg.copy ins(%p : tensor<2x8x8xf32>) outs(%p0 : tensor<2x8x8xf16>) -> tensor<2x8x8xf16>
  %o0 = tensor.empty() : tensor<2x8x16xf32>
  %o1 = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  // expected-remark @below {{not raised to fat.attention: P·V produces f32 but Q, K, V are f16 and nothing rounds the result to it: fat.attention writes O in the input type}}
  %o = linalg.batch_matmul ins(%ph, %v : tensor<2x8x8xf16>, tensor<2x8x16xf16>) outs(%o1 : tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  return %o : tensor<2x8x16xf32>
}

// -----

// P·V accumulates into a bias (a non-zero init).
// CHECK-LABEL: func.func @pv_into_bias
// CHECK-NOT:     fat.attention
func.func @pv_into_bias(%q: tensor<2x8x16xf32>, %kt: tensor<2x16x8xf32>,
                        %v: tensor<2x8x16xf32>, %bias: tensor<2x8x16xf32>) -> tensor<2x8x16xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %s0 = tensor.empty() : tensor<2x8x8xf32>
  %s1 = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<2x8x16xf32>, tensor<2x16x8xf32>) outs(%s1 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %p = linalg.softmax dimension(2) ins(%s : tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  // expected-remark @below {{not raised to fat.attention: the candidate P·V accumulates into a non-zero init}}
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x8x8xf32>, tensor<2x8x16xf32>) outs(%bias : tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  return %o : tensor<2x8x16xf32>
}

// -----

// Dropout on P: P·V reads softmax(S) · keep / (1 − p), not softmax(S).
// CHECK-LABEL: func.func @dropout
// CHECK-NOT:     fat.attention
func.func @dropout(%q: tensor<2x8x16xf32>, %kt: tensor<2x16x8xf32>,
                   %v: tensor<2x8x16xf32>, %keep: tensor<2x8x8xf32>) -> tensor<2x8x16xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %s0 = tensor.empty() : tensor<2x8x8xf32>
  %s1 = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<2x8x16xf32>, tensor<2x16x8xf32>) outs(%s1 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %p = linalg.softmax dimension(2) ins(%s : tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %pd = linalg.mul ins(%p, %keep : tensor<2x8x8xf32>, tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %o0 = tensor.empty() : tensor<2x8x16xf32>
  %o1 = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  // expected-remark @below {{not raised to fat.attention: P is not a softmax: expected exp(x) / Σ_j exp(x) or linalg.softmax}}
  %o = linalg.batch_matmul ins(%pd, %v : tensor<2x8x8xf32>, tensor<2x8x16xf32>) outs(%o1 : tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  return %o : tensor<2x8x16xf32>
}

// -----

// A select that zeroes the rows with *some* hidden key (any_j(S == −inf)),
// not only those with no visible key as torch's _safe_softmax does.
// CHECK-LABEL: func.func @zero_rows_with_a_hidden_key
// CHECK-NOT:     fat.attention
func.func @zero_rows_with_a_hidden_key(%q: tensor<2x8x16xf32>, %kt: tensor<2x16x8xf32>,
                                       %v: tensor<2x8x16xf32>) -> tensor<2x8x16xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %false = arith.constant false
  %s0 = tensor.empty() : tensor<2x8x8xf32>
  %s1 = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<2x8x16xf32>, tensor<2x16x8xf32>) outs(%s1 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %p = linalg.softmax dimension(2) ins(%s : tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %b0 = tensor.empty() : tensor<2x8xi1>
  %b1 = linalg.fill ins(%false : i1) outs(%b0 : tensor<2x8xi1>) -> tensor<2x8xi1>
  %any = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i)>],
                         iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%s : tensor<2x8x8xf32>) outs(%b1 : tensor<2x8xi1>) {
  ^bb0(%in: f32, %acc: i1):
    %hidden = arith.cmpf oeq, %in, %ninf : f32
    %r = arith.ori %hidden, %acc : i1
    linalg.yield %r : i1
  } -> tensor<2x8xi1>
  %ps = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i)>, affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>],
                        iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%any, %p : tensor<2x8xi1>, tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) {
  ^bb0(%c: i1, %x: f32, %out: f32):
    %r = arith.select %c, %zero, %x : f32
    linalg.yield %r : f32
  } -> tensor<2x8x8xf32>
  %o0 = tensor.empty() : tensor<2x8x16xf32>
  %o1 = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  // expected-remark @below {{not raised to fat.attention: P is zeroed on rows that have visible keys}}
  %o = linalg.batch_matmul ins(%ps, %v : tensor<2x8x8xf32>, tensor<2x8x16xf32>) outs(%o1 : tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  return %o : tensor<2x8x16xf32>
}

// -----

// A sliding window on dynamic sequence lengths: whether the last rows see a
// key depends on Sq − Skv, which fat.attention would answer with O = 0
// where the source gives NaN.
// CHECK-LABEL: func.func @window_dynamic_lengths
// CHECK-NOT:     fat.attention
func.func @window_dynamic_lengths(%q: tensor<2x?x16xf32>, %kt: tensor<2x16x?xf32>,
                                  %v: tensor<2x?x16xf32>, %s0: tensor<2x?x?xf32>,
                                  %o0: tensor<2x?x16xf32>) -> tensor<2x?x16xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %c2 = arith.constant 2 : index
  %s1 = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x?x?xf32>) -> tensor<2x?x?xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<2x?x16xf32>, tensor<2x16x?xf32>) outs(%s1 : tensor<2x?x?xf32>) -> tensor<2x?x?xf32>
  %sm = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>],
                        iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<2x?x?xf32>) outs(%s0 : tensor<2x?x?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %jd = arith.addi %j, %c2 : index
    %le = arith.cmpi sle, %j, %i : index
    %ge = arith.cmpi sge, %jd, %i : index
    %keep = arith.andi %le, %ge : i1
    %r = arith.select %keep, %in, %ninf : f32
    linalg.yield %r : f32
  } -> tensor<2x?x?xf32>
  %p = linalg.softmax dimension(2) ins(%sm : tensor<2x?x?xf32>) outs(%s0 : tensor<2x?x?xf32>) -> tensor<2x?x?xf32>
  %o1 = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x?x16xf32>) -> tensor<2x?x16xf32>
  // expected-remark @below {{not raised to fat.attention: a sliding window (keys j ≥ i − 2) needs static sequence lengths: the last rows see no key when Sq − Skv > 2}}
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x?x?xf32>, tensor<2x?x16xf32>) outs(%o1 : tensor<2x?x16xf32>) -> tensor<2x?x16xf32>
  return %o : tensor<2x?x16xf32>
}

// -----

// Keys j ≥ i with more queries than keys: rows 4 to 7 see no key.
// CHECK-LABEL: func.func @window_empties_last_rows
// CHECK-NOT:     fat.attention
func.func @window_empties_last_rows(%q: tensor<8x16xf32>, %kt: tensor<16x4xf32>,
                                    %v: tensor<4x16xf32>) -> tensor<8x16xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %s0 = tensor.empty() : tensor<8x4xf32>
  %s1 = linalg.fill ins(%zero : f32) outs(%s0 : tensor<8x4xf32>) -> tensor<8x4xf32>
  %s = linalg.matmul ins(%q, %kt : tensor<8x16xf32>, tensor<16x4xf32>) outs(%s1 : tensor<8x4xf32>) -> tensor<8x4xf32>
  %sm = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                        iterator_types = ["parallel", "parallel"]}
      ins(%s : tensor<8x4xf32>) outs(%s0 : tensor<8x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %hide = arith.cmpi slt, %j, %i : index
    %r = arith.select %hide, %ninf, %in : f32
    linalg.yield %r : f32
  } -> tensor<8x4xf32>
  %p = linalg.softmax dimension(1) ins(%sm : tensor<8x4xf32>) outs(%s0 : tensor<8x4xf32>) -> tensor<8x4xf32>
  %o0 = tensor.empty() : tensor<8x16xf32>
  %o1 = linalg.fill ins(%zero : f32) outs(%o0 : tensor<8x16xf32>) -> tensor<8x16xf32>
  // expected-remark @below {{not raised to fat.attention: the sliding window hides every key of the last query rows (j ≥ i, Skv − Sq = -4)}}
  %o = linalg.matmul ins(%p, %v : tensor<8x4xf32>, tensor<4x16xf32>) outs(%o1 : tensor<8x16xf32>) -> tensor<8x16xf32>
  return %o : tensor<8x16xf32>
}

// -----

// A constant mask whose row 1 sees two separate runs of keys (0 and 2): no
// band fits (row 0 gives j ≤ i, which row 1 breaks at key 1).
// CHECK-LABEL: func.func @two_runs_mask
// CHECK-NOT:     fat.attention
func.func @two_runs_mask(%q: tensor<3x16xf32>, %kt: tensor<16x3xf32>,
                         %v: tensor<3x16xf32>) -> tensor<3x16xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %mask = arith.constant dense<[[0.0, 0xFF800000, 0xFF800000],
                                [0.0, 0xFF800000, 0.0],
                                [0.0, 0.0, 0.0]]> : tensor<3x3xf32>
  %s0 = tensor.empty() : tensor<3x3xf32>
  %s1 = linalg.fill ins(%zero : f32) outs(%s0 : tensor<3x3xf32>) -> tensor<3x3xf32>
  %s = linalg.matmul ins(%q, %kt : tensor<3x16xf32>, tensor<16x3xf32>) outs(%s1 : tensor<3x3xf32>) -> tensor<3x3xf32>
  %sm = linalg.add ins(%s, %mask : tensor<3x3xf32>, tensor<3x3xf32>) outs(%s0 : tensor<3x3xf32>) -> tensor<3x3xf32>
  %p = linalg.softmax dimension(1) ins(%sm : tensor<3x3xf32>) outs(%s0 : tensor<3x3xf32>) -> tensor<3x3xf32>
  %o0 = tensor.empty() : tensor<3x16xf32>
  %o1 = linalg.fill ins(%zero : f32) outs(%o0 : tensor<3x16xf32>) -> tensor<3x16xf32>
  // expected-remark @below {{not raised to fat.attention: the mask is not a band of keys: entry (1, 1) breaks j ≤ i}}
  %o = linalg.matmul ins(%p, %v : tensor<3x3xf32>, tensor<3x16xf32>) outs(%o1 : tensor<3x16xf32>) -> tensor<3x16xf32>
  return %o : tensor<3x16xf32>
}
