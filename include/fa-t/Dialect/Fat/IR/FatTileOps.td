//===- FatTileOps.td - tile-level online-softmax primitives -*- tablegen -*-===//
//
// One op per formula of the FlashAttention online softmax, on tensor tiles:
// M query rows × N keys, head dims D and Dv. Scores are kept unscaled; the
// softmax scale is folded into the exp2 argument (c = scale · log2 e), so a
// row's running max m is in raw score units.
//
//===----------------------------------------------------------------------===//

#ifndef FAT_DIALECT_FAT_IR_FATTILEOPS_TD
#define FAT_DIALECT_FAT_IR_FATTILEOPS_TD

include "mlir/Interfaces/SideEffectInterfaces.td"

class Fat_TileOp<string mnemonic, list<Trait> traits = []>
    : Fat_Op<mnemonic, !listconcat(traits, [Pure])> {
  let hasVerifier = 1;
}

def Fat_QKOp : Fat_TileOp<"qk"> {
  let summary = "tile of raw attention scores S = Q · Kᵀ";
  let description = [{
    `s_ij = Σ_d q_id · k_jd`, accumulated in f32 from f16/bf16/f32 operands.
    The scale is not applied here: it is folded into `fat.exp2`.

    ```mlir
    %s = fat.qk %q, %k : tensor<64x128xbf16>, tensor<64x128xbf16> -> tensor<64x64xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$query, AnyRankedTensor:$key);
  let results = (outs AnyRankedTensor:$scores);
  let assemblyFormat = [{
    $query `,` $key attr-dict `:` type($query) `,` type($key) `->` type($scores)
  }];
}

def Fat_MaskOp : Fat_TileOp<"mask", [AllTypesMatch<["scores", "result"]>]> {
  let summary = "set invisible scores of a tile to −inf";
  let description = [{
    For the tile whose first query row is `q_start` and first key is
    `kv_start` (global positions), with `δ` = `diagonal`:

    ```
    q = q_start + i,  k = kv_start + j
    visible(q, k) = k < kv_len
                  ∧ (¬causal ∨ k ≤ q + δ)
                  ∧ (left  < 0 ∨ k ≥ q + δ − left)
                  ∧ (right < 0 ∨ k ≤ q + δ + right)
    s'_ij = visible(q, k) ? s_ij : −inf
    ```

    `k < kv_len` is the ragged-tail predicate: the last KV block may run past
    the end of the sequence (its padding rows are zeros, not keys).

    On a `#fat.wgmma_fragment` tile (a kernel's) `row_limits` picks how the
    GPU evaluates the bounds: with each thread's key k = k0 + κ (k0 its
    first column, κ = 8i + e a constant per register), every bound becomes
    a limit on κ per row, computed once, and an element costs one compare
    with an immediate instead of its key's index and a compare per bound.
    The limits stay live across the block, so `--fat-pipeline` sets it only
    where the kernel has the registers for them. The result is the same.

    ```mlir
    %m = fat.mask %s at(%q0, %k0) kv_len(%skv) diagonal(%d) causal
        : tensor<64x64xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$scores, Index:$q_start,
                   Index:$kv_start, Index:$kv_len, Index:$diagonal,
                   UnitAttr:$causal,
                   OptionalAttr<DenseI64ArrayAttr>:$window,
                   UnitAttr:$row_limits);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $scores `at` `(` $q_start `,` $kv_start `)` `kv_len` `(` $kv_len `)`
    `diagonal` `(` $diagonal `)` (`causal` $causal^)? (`window` $window^)?
    (`row_limits` $row_limits^)? attr-dict `:` type($scores)
  }];
}

def Fat_RowMaxOp : Fat_TileOp<"row_max", [AllTypesMatch<["init", "result"]>]> {
  let summary = "running row maximum, m' = max(m, max_j s_ij)";
  let description = [{
    ```mlir
    %m1 = fat.row_max %s, %m0 : tensor<64x64xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$scores, AnyRankedTensor:$init);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $scores `,` $init attr-dict `:` type($scores) `,` type($init)
  }];
}

def Fat_Exp2Op : Fat_TileOp<"exp2", [AllTypesMatch<["input", "result"]>]> {
  let summary = "scaled, max-shifted exponential p = exp2(c · (x − m))";
  let description = [{
    Broadcasts the row vector `m` over the columns of `x` (or pairs it
    elementwise when `x` is a row vector too) and computes

    ```
    y = m == −inf ? 0 : exp2(scale · (x − m))
    ```

    With `x` = scores and `m` the new row max this is the softmax numerator
    P; with `x` = the old row max it is the rescale factor
    α = exp2(c · (m_old − m_new)). Since x ≤ m, y ∈ [0, 1] and cannot
    overflow. A row that has seen no visible key yet has m = −inf; its
    numerators and its α are 0 (not the NaN of −inf − (−inf)), which keeps
    O and l at exactly 0.

    ```mlir
    %p = fat.exp2 %s, %m scale 0.127516 : tensor<64x64xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, AnyRankedTensor:$max,
                   F32Attr:$scale);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `,` $max `scale` $scale attr-dict `:` type($input) `,` type($max)
  }];
}

def Fat_RowSumOp : Fat_TileOp<"row_sum", [AllTypesMatch<["init", "result"]>]> {
  let summary = "accumulating row sum, l' = l + Σ_j p_ij";
  let description = [{
    The softmax denominator. `--fat-tensorize` may compute it as P · 1 on
    tensor cores.

    ```mlir
    %l1 = fat.row_sum %p, %l0 : tensor<64x64xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, AnyRankedTensor:$init);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `,` $init attr-dict `:` type($input) `,` type($init)
  }];
}

def Fat_RescaleOp : Fat_TileOp<"rescale", [AllTypesMatch<["input", "result"]>]> {
  let summary = "row rescale x'_i· = α_i · x_i·";
  let description = [{
    Multiplies each row of `x` (a tile, or a row vector) by its factor α.
    Used on the running output O and the running sum l when the row max
    grows.

    `warp_vote` (set by `--fat-pipeline` on a kernel's tiles, under the lazy
    rescale) lets each warp skip the multiplies when α = 1 on all of its
    rows, decided by a warp vote: exact, since x·1 = x, and with the lazy
    rescale α is exactly 1 on a row that kept its reference. The result is
    the same with or without it; it is a branch in the kernel, which only
    the loop without overlapped GEMMs can afford (a branch around an
    accumulator that an in-flight wgmma owns makes ptxas serialize them).

    ```mlir
    %o1 = fat.rescale %o0, %alpha : tensor<64x128xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, AnyRankedTensor:$factor,
                   UnitAttr:$warp_vote);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `,` $factor (`warp_vote` $warp_vote^)? attr-dict `:` type($input)
    `,` type($factor)
  }];
}

def Fat_PVOp : Fat_TileOp<"pv", [AllTypesMatch<["init", "result"]>]> {
  let summary = "output accumulation O' = O + P · V";
  let description = [{
    `o'_id = o_id + Σ_j round(p_ij) · v_jd`, where `round` converts P to V's
    element type first (as the tensor-core kernels do: P is the 16-bit A
    operand of the second GEMM); accumulation is f32.

    ```mlir
    %o1 = fat.pv %p, %v, %o0
        : tensor<64x64xf32>, tensor<64x128xbf16>, tensor<64x128xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$probs, AnyRankedTensor:$value,
                   AnyRankedTensor:$init);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $probs `,` $value `,` $init attr-dict `:` type($probs) `,` type($value)
    `,` type($init)
  }];
}

def Fat_FinalizeOp : Fat_TileOp<"finalize", [AttrSizedOperandSegments]> {
  let summary = "normalize the output and form the log-sum-exp";
  let description = [{
    ```
    O_i   = l_i ≠ 0 ? o_i / l_i               : 0
    LSE_i = l_i ≠ 0 ? scale · m_i + ln(l_i)   : −inf
    ```

    A row with nothing visible sums exactly 0 (every p is 0); any other l
    is positive, or NaN where the scores were (a NaN input, or a linear
    bias's weights past their exact range, fat.key_weights): NaN then
    reaches O and the LSE rather than an empty row's zeros, which would
    read as a plausible answer.

    `m` is the raw-score row max and l = Σ_j exp(scale · (s_ij − m)), so
    log Σ_j exp(scale · s_ij) = scale · m + ln l (natural log, as PyTorch
    reports LSE). The output is rounded to its element type.

    The scale is a constant (`scale`), or in a kernel the run-time
    `exp2_scale` c = scale · log2 e of the softmax ops, with LSE_i =
    ln 2 · (c · m_i + log2 l_i). Without `sum` (`ones_columns`), l is
    `acc`'s first column past the output's: the P·[V | 1] wgmma's ones
    columns, each of which holds the row sum. On `#fat.wgmma_fragment`
    tiles a thread computes 1 / l once per row and O as o · (1 / l),
    within an ulp of the division, and each output register is formed
    where it is stored (see its lowering).

    ```mlir
    %o, %lse = fat.finalize %acc, %l, %m scale 0.0883883
        : tensor<64x128xf32>, tensor<64xf32>, tensor<64xf32>
        -> tensor<64x128xbf16>, tensor<64xf32>
    %o2, %lse2 = fat.finalize %acc_ones, ones_columns, %m exp2_scale %c
        : tensor<64x136xf32, #fat.wgmma_fragment>,
          tensor<64xf32, #fat.wgmma_fragment>
        -> tensor<64x128xbf16, #fat.wgmma_fragment>,
           tensor<64xf32, #fat.wgmma_fragment>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$acc, Optional<AnyRankedTensor>:$sum,
                   AnyRankedTensor:$max, OptionalAttr<F32Attr>:$scale,
                   Optional<F32>:$exp2_scale);
  let results = (outs AnyRankedTensor:$output, AnyRankedTensor:$lse);
  let assemblyFormat = [{
    $acc `,` custom<RowSum>($sum) `,` $max (`scale` $scale^)?
    (`exp2_scale` $exp2_scale^)? attr-dict `:`
    custom<RowSumType>(type($acc), ref($sum), type($sum)) `,` type($max) `->`
    type($output) `,` type($lse)
  }];
  let builders = [
    OpBuilder<(ins "Type":$output, "Type":$lse, "Value":$acc, "Value":$sum,
                   "Value":$max, "FloatAttr":$scale), [{
      build($_builder, $_state, output, lse, acc, sum, max, scale, Value());
    }]>
  ];
}

def Fat_ScoreModOp : Fat_TileOp<"score_mod",
    [AllTypesMatch<["scores", "result"]>, IsolatedFromAbove]> {
  let summary = "apply fat.attention's score region to a tile of raw scores";
  let description = [{
    For the tile whose first query row is `q_start` and first key is
    `kv_start` (global positions of batch `batch`, query head `head`), with
    the body the `score` region of the `fat.attention` it came from:

    ```
    i' = min(q_start + i, q_len − 1),  j' = min(kv_start + j, kv_len − 1)
    s'_ij = body(scale · s_ij, batch, head, i', j', captures…)
    ```

    The result holds *scaled* scores, so the softmax after it uses
    c = log2 e. Clamping the indices keeps the body's reads in range on a
    tile's padding rows and keys, whose values `fat.mask` (kv_len) hides or
    the write-back drops: a lowering may give padding keys other values (the
    kernel's does, without the clamp, where every read of the tile is known
    to lie in its tensor).

    `rows_at_origin` evaluates the body with every row at the tile's first,
    i' = min(q_start, q_len − 1). `--fat-pipeline` sets it in a kernel that
    writes no LSE when the body's row enters only as an added term
    ±B·float(i − j) with B independent of the score, row and key (ALiBi):
    each row's scores then shift by one constant, −B·(i − i'), which the
    softmax ignores (O is unchanged; the LSE would not be), and the kernel
    computes float(j − i') once per key instead of float(j) − float(i) per
    element.

    `tanh_poly` (set by `--fat-tensorize`, tanh-poly) lets a lowering take
    the body's `math.tanh` as the odd polynomial

    ```
    tanh x ≈ x·(c0 + c1·x² + c2·x⁴ + c3·x⁶)   for |x| ≤ 1
    ```

    (minimax in absolute error: ≤ 3.3e-5, relative ≤ 3.1e-4; MUFU's
    tanh.approx.f32 has relative error 2^−11 ≈ 4.9e-4) and the precise tanh
    elsewhere. Every tanh argument must be x = k·s, a constant multiple of
    the score (a soft-cap's s/A). The Hopper kernel decides per warp and
    key block: where |k|·max|s| ≤ 1 over the warp's fragment (a vote) the
    polynomial runs on the FMA pipe — five instructions for one MUFU
    operation, which the soft-cap's exponentials share — and MUFU's tanh
    otherwise (and in a body whose reads of captures move with the key: its
    tile is versioned by their bounds instead). The CPU lowering chooses per
    element.

    ```mlir
    %s1 = fat.score_mod %s at(%b, %h, %q0, %k0) len(%sq, %skv) scale 0.125 {
    ^bb0(%x: f32, %bb: index, %hh: index, %i: index, %j: index):
      ...
      fat.yield %y : f32
    } : tensor<64x64xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$scores, Index:$batch, Index:$head,
                   Index:$q_start, Index:$kv_start, Index:$q_len,
                   Index:$kv_len, Variadic<AnyType>:$captures,
                   F32Attr:$scale, UnitAttr:$rows_at_origin,
                   UnitAttr:$tanh_poly);
  let results = (outs AnyRankedTensor:$result);
  let regions = (region SizedRegion<1>:$body);
  let extraClassDeclaration = [{
    /// tanh_poly's polynomial: c_k of x·Σ c_k·x^(2k), exact to 3.3e-5 on
    /// |x| ≤ kTanhPolyBound (a fit of tanh(x)/x in x², the error's extrema
    /// levelled).
    static constexpr double kTanhPoly[4] = {
        0.9996937892217888, -0.3288922371247971, 0.11541436465824169,
        -0.024654464578408544};
    static constexpr double kTanhPolyBound = 1.0;
    /// The body's ops that compute its f32 tanh arguments as x = k·s from
    /// the score s (multiplies and divides by constants, negations; the
    /// constants included), the tanh ops included, in the body's order;
    /// empty where the body has no tanh or some tanh argument is another
    /// function. tanh_poly's lowering bounds every |x| by |k|·max|s|
    /// before the body runs.
    SmallVector<Operation *> getTanhArgumentSlice();
  }];
  let assemblyFormat = [{
    $scores `at` `(` $batch `,` $head `,` $q_start `,` $kv_start `)`
    `len` `(` $q_len `,` $kv_len `)` `scale` $scale
    (`rows_at_origin` $rows_at_origin^)? (`tanh_poly` $tanh_poly^)?
    (`captures` `(` $captures^ `:` type($captures) `)`)? $body attr-dict
    `:` type($scores)
  }];
}

def Fat_MaskModOp : Fat_TileOp<"mask_mod",
    [AllTypesMatch<["scores", "result"]>, IsolatedFromAbove]> {
  let summary = "apply fat.attention's mask region to a tile of scores";
  let description = [{
    With i', j' the clamped global positions as in `fat.score_mod` and the
    body the `mask` region of the `fat.attention` it came from:

    ```
    keep_ij = body(batch, head, i', j', captures…)
              ∧ r[batch, ⌊i'/64⌋, 0] ≤ j' < r[batch, ⌊i'/64⌋, 1]   (kv_ranges = n)
    s'_ij   = keep_ij ? s_ij : −inf
    ```

    `kv_ranges = n` (from fat.attention) names capture n, r, holding each
    64-row group's key range [r0, r1) and, with four columns, its full
    range [r2, r3) where the body is promised true: the kernel skips key
    blocks outside the first and may skip this op on a block inside both
    for the warpgroup's rows. A six-column table's hole [r4, r5), keys
    promised hidden from every row, is not part of this op either: only
    the kernel's key walk reads it (fat.key_block_hole). The range test is part of the op, not of the
    body, so each lowering places it: the CPU decomposition per element,
    the kernel once per key — a fragment tile (`#fat.wgmma_fragment`) is a
    warpgroup's 64 rows from a `q_start` that is a multiple of 64, so its
    rows share one group.

    ```mlir
    %s2 = fat.mask_mod %s1 at(%b, %h, %q0, %k0) len(%sq, %skv)
        captures(%doc : tensor<256xi32>) {
    ^bb0(%bb: index, %hh: index, %i: index, %j: index, %d: tensor<256xi32>):
      ...
      fat.yield %same : i1
    } : tensor<64x64xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$scores, Index:$batch, Index:$head,
                   Index:$q_start, Index:$kv_start, Index:$q_len,
                   Index:$kv_len, Variadic<AnyType>:$captures,
                   OptionalAttr<I64Attr>:$kv_ranges);
  let results = (outs AnyRankedTensor:$result);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $scores `at` `(` $batch `,` $head `,` $q_start `,` $kv_start `)`
    `len` `(` $q_len `,` $kv_len `)`
    (`captures` `(` $captures^ `:` type($captures) `)`)? $body attr-dict
    `:` type($scores)
  }];
}

#endif // FAT_DIALECT_FAT_IR_FATTILEOPS_TD
