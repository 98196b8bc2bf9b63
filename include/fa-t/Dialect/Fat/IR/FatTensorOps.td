//===- FatTensorOps.td - the tensorized level (warpgroup ops) -*- tablegen -*-===//
//
// What `--fat-tensorize` rewrites the tiled form into: the online softmax as
// the Hopper kernel computes it, still on whole tiles (so the level runs on
// the CPU through --fat-decompose), with each GPU rounding point explicit.
// Threads appear only in the final conversion; the fragment layout is an
// attribute (`shape`, the per-warpgroup wgmma instruction shape m64nNk16).
//
//===----------------------------------------------------------------------===//

#ifndef FAT_DIALECT_FAT_IR_FATTENSOROPS_TD
#define FAT_DIALECT_FAT_IR_FATTENSOROPS_TD


def Fat_OperandSource : I32EnumAttr<"OperandSource",
    "where a wgmma reads its A operand from", [
      I32EnumAttrCase<"Smem", 0, "smem">,
      I32EnumAttrCase<"Registers", 1, "registers">
    ]> {
  let cppNamespace = "::mlir::fat";
}

def Fat_WgmmaOp : Fat_Op<"wgmma", [Pure]> {
  let summary = "warpgroup matrix multiply-accumulate on a tile, D = C + A·B";
  let description = [{
    The tile-level form of Hopper's `wgmma.mma_async`: one warpgroup per 64
    rows of A, each issuing m64nNk16 instructions (`shape = [64, N, 16]`)
    over the K dimension:

    ```
    d_ij = c_ij + Σ_k a_ik · b_kj          (b_jk with transpose_b)
    ```

    A and B are f16 or bf16, the accumulator f32; without `%acc` the
    accumulator starts at 0 (the instruction's scale-d = 0). `a_from`
    records where A lives: `smem` (Q for S = Q·Kᵀ) or `registers` (P for
    O += P·V, rounded to 16 bits by an explicit `arith.truncf` before the
    op — the rounding point the CPU oracle must share with the GPU).

    The accumulator fragment layout is the m64nNk16 one: in warpgroup w,
    thread t (warp t/32, lane t%32) holds rows 64w + 16(t/32) + (t%32)/4 +
    8r and columns 8i + 2(t%4) + e in its register 4i + 2r + e (r, e ∈
    {0, 1}, i < N/8): every thread holds N/4 elements of each of two rows.

    Why not `nvgpu.warpgroup.mma`: upstream's op takes descriptors of
    shared-memory operands only (no A from registers), works on the
    per-thread `!nvgpu.warpgroup.accumulator` fragments (so it cannot run
    on the CPU or stay at tile granularity), and wraps each op in its own
    fence / commit / wait — the overlapped schedule issues two GEMMs per
    wait group. This op is the tile-level contract; the per-thread form is
    the final conversion's business.

    ```mlir
    %s = fat.wgmma %q, %k transpose_b a_from smem shape [64, 128, 16]
        : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
    %o1 = fat.wgmma %p16, %v, %o a_from registers shape [64, 64, 16]
        : tensor<128x128xbf16>, tensor<128x64xbf16>, tensor<128x64xf32>
        -> tensor<128x64xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$a, AnyRankedTensor:$b,
                   Optional<AnyRankedTensor>:$acc, UnitAttr:$transpose_b,
                   Fat_OperandSource:$a_from,
                   DenseI64ArrayAttr:$shape);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $a `,` $b (`,` $acc^)? (`transpose_b` $transpose_b^)? `a_from` $a_from
    `shape` $shape attr-dict `:` type($a) `,` type($b) (`,` type($acc)^)?
    `->` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Rows each warpgroup computes (the instruction's M).
    static constexpr int64_t kRowsPerWarpgroup = 64;
    /// The K of one instruction for 16-bit operands.
    static constexpr int64_t kInstrK = 16;
    /// Warpgroups the op spreads over: M / 64.
    int64_t getNumWarpgroups() {
      return ::llvm::cast<::mlir::ShapedType>(getA().getType()).getDimSize(0) /
             kRowsPerWarpgroup;
    }
  }];
}

def Fat_SoftmaxMaxOp : Fat_Op<"softmax_max",
    [Pure, AllTypesMatch<["max", "new_max", "alpha"]>]> {
  let summary = "the online softmax's reference max m' and rescale factor α";
  let description = [{
    For each row i of the f32 score tile S (c = `%scale` = softmax scale ·
    log2 e, an f32 value so that a kernel can take it at run time; m the
    running reference max):

    ```
    m̂_i = max(m_i, max_j s_ij)
    m'_i = m̂_i                                                   (eager)
    m'_i = moved_i ? m̂_i : m_i,  moved_i = c·(m̂_i − m_i) > τ ∨ m_i = −inf
                                                      (lazy, τ = threshold)
    ĉm_i = m'_i = −inf ? 0 : c·m'_i
    α_i  = exp2(fma(m_i, c, −ĉm_i))          (lazy: 1 where ¬moved_i)
    ```

    The lazy form moves a row's reference only when its max grows by more
    than τ (log2 units), so every P = exp2(c·s − ĉm) ≤ 2^τ, and O, l ≤
    2^τ·Σ|v|, Skv·2^τ stay far from f32 overflow; O/l and the LSE do not
    depend on which reference was used. α is exactly 1 for a row that kept
    its reference (fma(m, c, −c·m) is the rounding error of c·m, not 0), so
    the GPU can skip the multiply in warps where no row moved (a warp vote)
    without changing a bit. A row with nothing visible yet has m' = −inf
    and α = 0, keeping O and l at exactly 0.

    With `offset(%o_0, …, %o_{P−1})` (f32) the op reads the block's scores
    in P equal runs of columns, run p as s + o_p — one constant per row
    and run instead of one add per score: m̂_i = max(m_i, max_p (max_{j in
    run p} s_ij + o_p)) (`linear-bias=weights`: o_p is run p's share of a
    linear position bias, whose spread inside the run rides on P; see
    `fat.key_weights`).

    ```mlir
    %m1, %alpha = fat.softmax_max %s, %m scale %c lazy threshold 8.0
        : tensor<128x128xf32>, tensor<128xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$scores, AnyRankedTensor:$max,
                   F32:$scale, Variadic<F32>:$offsets,
                   OptionalAttr<F32Attr>:$threshold);
  let results = (outs AnyRankedTensor:$new_max, AnyRankedTensor:$alpha);
  let assemblyFormat = [{
    $scores `,` $max `scale` $scale (`offset` `(` $offsets^ `)`)?
    (`lazy` `threshold` $threshold^)? attr-dict `:` type($scores) `,`
    type($max)
  }];
  let hasVerifier = 1;
}

def Fat_SoftmaxExpOp : Fat_Op<"softmax_exp",
    [Pure, AttrSizedOperandSegments]> {
  let summary = "softmax numerators P = exp2(c·S − c·m'), MUFU and FMA-pipe";
  let description = [{
    For each element of the f32 score tile S, with ĉm_i = m'_i = −inf ? 0 :
    c·m'_i as in `fat.softmax_max`:

    ```
    x_ij = fma(s_ij, c, −ĉm_i)
    p_ij = exp2(x_ij)                       (MUFU.EX2 on the GPU)
         | poly(x_ij) for the columns j the FMA pipe takes (exp2_poly φ)
    l'_i = fma(l_i, α_i, Σ_j p_ij)          (with rowsum(l, α): the vector
                                             row sum; without it the P·V
                                             wgmma's ones columns sum P)
    l'_i = l_i + Σ_j p_ij                   (rowsum(l): a fixed reference,
                                             α = 1; see below)
    ```
    The reference m' is usually `fat.softmax_max`'s running maximum. Where
    the scores are bounded, L ≤ s ≤ U (a soft-capped score region), it may
    be the constant U for every row (`--fat-tensorize row-max=bound`): no
    row maximum, α = 1, no rescale of O or l; P ∈ [2^(c·(L−U)), 1] as with
    the running maximum, and c·(U − L) ≤ 96 keeps every P a normal f32
    (and bf16) number with 30 binades to spare, so no row's sum underflows.
    A row with nothing visible keeps its initial m = −inf and l = 0.

    With `offset(%o_0, …)` (as `fat.softmax_max`'s) the scores of run p are
    read as s + o_p: ĉm_ip = m'_i = −inf ? 0 : c·(m'_i − o_p), so x_ij =
    fma(s_ij, c, −ĉm_ip) = c·(s_ij + o_p − m'_i) up to rounding, still one
    FFMA per score (a row constant per run).

    On `#fat.wgmma_fragment` tiles the sums may be `partial` (each thread
    adds its own p_ij into its share of l; `fat.convert_layout` sums the
    quad's shares once, after the loop).

    `poly` is 2^x = p(x − ⌊x⌋)·2^⌊x⌋ with p a degree-3 minimax polynomial
    (relative error ≤ 8.6e-5, below 16-bit rounding) evaluated in f32
    Horner form on x clamped to ≥ −127, the exponent added as an integer.
    Which columns: element k of a thread's N/4 registers per row (the
    m64nNk16 fragment: column j is element k = 2⌊j/8⌋ + j mod 2, the same
    for every thread) goes to the polynomial when ⌊(k+1)·φ⌋ > ⌊k·φ⌋, so
    φ·N/4 of them spread evenly and the two pipes interleave; φ = 0 keeps
    every exponential on MUFU.

    ```mlir
    %p, %l1 = fat.softmax_exp %s, %m1 scale %c exp2_poly 0.25
        rowsum(%l, %alpha)
        : (tensor<128x128xf32>, tensor<128xf32>, f32, tensor<128xf32>,
           tensor<128xf32>) -> (tensor<128x128xf32>, tensor<128xf32>)
    ```
  }];
  let arguments = (ins AnyRankedTensor:$scores, AnyRankedTensor:$max,
                   F32:$scale, Variadic<F32>:$offsets,
                   Optional<AnyRankedTensor>:$sum,
                   Optional<AnyRankedTensor>:$alpha,
                   DefaultValuedAttr<F64Attr, "0.0">:$exp2_poly);
  let results = (outs AnyRankedTensor:$probs,
                 Optional<AnyRankedTensor>:$new_sum);
  let assemblyFormat = [{
    $scores `,` $max `scale` $scale (`offset` `(` $offsets^ `)`)?
    (`exp2_poly` $exp2_poly^)?
    (`rowsum` `(` $sum^ (`,` $alpha^)? `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The element k of a thread's N/4 registers per row that holds tile
    /// column `column` in the m64nNk16 accumulator fragment:
    /// 2⌊column/8⌋ + column mod 2 (the same for every thread).
    static int64_t fragmentElement(int64_t column) {
      return 2 * (column / 8) + column % 2;
    }
    /// Whether fragment element `k` takes the FMA-pipe polynomial for the
    /// fraction `phi`: ⌊(k+1)·φ⌋ > ⌊k·φ⌋.
    static bool usesPolynomial(int64_t k, double phi);
    /// `poly`'s p(f) = 1 + f·(c1 + f·(c2 + f·c3)): c1, c2, c3 of the
    /// minimax fit of 2^f on [0, 1) for relative error with p(0) = 1 (the
    /// GPU's hopper::buildExp2Poly and the CPU's fat-decompose alike).
    static constexpr double kExp2Poly[3] = {
        0.6951168179512024, 0.22764484584331512, 0.07706717401742935};
  }];
}

// A linear positional bias on the tensor cores: Q·Kᵀ's extra k16 step.
def Fat_BiasKeyColumnsOp : Fat_Op<"bias_key_columns", [Pure]> {
  let summary = "Q·Kᵀ's extra B columns for a linear positional bias";
  let description = [{
    The constant N × 16 tile whose row r (the key's offset in its block) is

    ```
    [r, r, r, 256, 256, 256, 0, …, 0]
    ```

    in the operand type (exact: r < 256 and 256 are representable in f16
    and bf16). Appended to K's columns, it meets `fat.bias_query_columns`
    appended to Q's in one more k16 step of Q·Kᵀ, which then adds the
    bias g·(r + d) to every score (see there). The kernel fills it into
    shared memory once per CTA: it is the same for every key block.

    ```mlir
    %kx = fat.bias_key_columns : tensor<128x16xbf16>
    ```
  }];
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The extra columns: one k16 step of the GEMM.
    static constexpr int64_t kColumns = 16;
    /// Columns that carry each of the two terms (g's and g·d's parts).
    static constexpr int64_t kParts = 3;
    /// The offset term's columns hold 256 (its A parts g·d / 256), so
    /// that g·d up to 2^24 stays inside f16's range.
    static constexpr int64_t kOffsetScale = 256;
    /// The value of column `column` of row `row`.
    static double value(int64_t row, int64_t column) {
      return column < kParts ? double(row)
             : column < 2 * kParts ? double(kOffsetScale) : 0.0;
    }
  }];
}

def Fat_BiasQueryColumnsOp : Fat_Op<"bias_query_columns",
    [Pure, IsolatedFromAbove]> {
  let summary = "Q·Kᵀ's extra A columns for a linear positional bias";
  let description = [{
    A score region s' = s + G·(j − i) whose factor G is free of the score
    and the positions (ALiBi: G = slope_h) adds per score one term that the
    vector units would pay for element by element. On the tensor cores it
    costs one k16 step of Q·Kᵀ instead: with this op's tile appended to Q's
    columns and `fat.bias_key_columns` to K's,

    ```
    g = G / c                    (f32, IEEE division; c = %scale, the
                                  attention's scale: the GEMM's scores are
                                  unscaled. An f32 value, so that a kernel
                                  can take it at run time.)
    d = float(kv_start − q_start)
    t = g·d / 256
    split(x) = (x₀, x₁, x₂):  x₀ = rnd(x), x₁ = rnd(x − x₀),
                              x₂ = rnd(x − x₀ − x₁)
                              (rnd: to the element type; differences in f32)
    row i (every row):  [split(g), split(t), 0, …, 0]      (16 columns)
    ```

    and the step adds Σ_c x_c·k_rc = (g₀+g₁+g₂)·r + 256·(t₀+t₁+t₂) = g·(r +
    d) to score (i, r) of the block (each part's product exact in f32, the
    parts' sum within 2^−(3p) of the factor for p-bit parts). So scale·S' =
    scale·q·k + G·(j − q_start): the region's bias up to G·(i − q_start),
    one constant per row, which the softmax does not see — for kernels that
    write no LSE (the LSE would). The region yields G from the batch and
    head and the captures; it reads neither a position nor the score.

    ```mlir
    %x = fat.bias_query_columns at(%b, %h, %q0, %k0) scale %c {
    ^bb0(%bb: index, %hh: index):
      %g = arith.constant 2.500000e-01 : f32
      fat.yield %g : f32
    } : tensor<128x16xbf16>
    ```
  }];
  let arguments = (ins Index:$batch, Index:$head, Index:$q_start,
                   Index:$kv_start, F32:$scale,
                   Variadic<AnyType>:$captures);
  let results = (outs AnyRankedTensor:$result);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    `at` `(` $batch `,` $head `,` $q_start `,` $kv_start `)` `scale` $scale
    (`captures` `(` $captures^ `:` type($captures) `)`)? $body attr-dict
    `:` type($result)
  }];
  let hasVerifier = 1;
}

def Fat_KeyWeightsOp : Fat_Op<"key_weights", [Pure, IsolatedFromAbove]> {
  let summary = "a linear positional bias as per-key weights on P and per-run offsets";
  let description = [{
    A score region s' = s + G·(j − i) (ALiBi: G = slope_h) without an LSE
    output may drop −G·i, one constant per row. The op splits a key block of
    N keys starting at j₀ into P equal runs of n = N/P keys (one result
    offset per run); key k = p·n + r of the block (r its place in run p)
    gains G·j = o_p + β_r:

    ```
    o_p = G·(j₀ + p·n + (n − 1)/2)     (run p's share: one constant)
    β_r = G·(r − (n − 1)/2)            (the spread: the same n numbers in
                                        every run and block)
    ```

    and e^(s + G·j) = e^(s + o_p) · e^(β_r). The softmax reads run p's
    scores as s + o_p (`offset` of `fat.softmax_max` / `fat.softmax_exp`: a
    row constant per run) and P, once rounded to the input type, is
    multiplied by this op's N weights column by column (`arith.mulf` with
    the broadcast weights: one packed multiply per two scores on the GPU).
    P·V's ones columns then sum the same weighted P that O reads, so the
    product's rounding cancels in O / l where a few keys dominate a row, as
    P's own does (weights on V's rows instead measured 1.5× the error: perf
    log run 143). With c = `%scale`, the attention's (Q·Kᵀ's scores are
    unscaled, so the offsets are divided by it):

    ```
    a    = G · log2 e                                  (f32)
    ŵ_k  = rnd(exp2(a · (r − (n − 1)/2)))              (the element type)
    o_p  = (G / c) · (j₀ + p·n + (n − 1)/2)            (f32; NaN where
           σ = |G|·(n − 1)/2 > 35, so that the output turns NaN instead
           of silently wrong)
    ```

    Numerics: P ≤ 2^τ as without the bias, ŵ ∈ [e^(−σ), e^σ], and the
    reference max_k (s_k + o_p) misses the spread: a row whose first key of
    a run ties its last one after the bias leaves the last key P̂ = e^(−2σ)
    before its weight, and a key 2^−24 below them e^(−2σ)·2^−24 — inside
    f32's normal range (2^−126; ex2.approx.ftz flushes below it) while σ ≤
    35. One run per 128-key block (σ = 63.5·|G|) loses BLOOM's steepest
    slopes (0.71 at 16 heads: σ = 45; such a key's share is lost from σ =
    43.7, perf log run 147 and scripts/alibi_weights_numerics.py's
    last_key_share); two runs (σ = 31.5·|G|) keep every slope up to 1.1.
    The products stay far inside bf16's and f32's range. bf16 only (f16's
    65504 overflows). The region yields G from the batch, the head and the
    captures.

    ```mlir
    %w, %o:2 = fat.key_weights at(%b, %h, %k0) scale %c {
    ^bb0(%bb: index, %hh: index):
      %g = arith.constant 2.500000e-01 : f32
      fat.yield %g : f32
    } : tensor<128xbf16>, f32, f32
    ```
  }];
  let arguments = (ins Index:$batch, Index:$head, Index:$kv_start, F32:$scale,
                   Variadic<AnyType>:$captures);
  let results = (outs AnyRankedTensor:$weights, Variadic<F32>:$offsets);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    `at` `(` $batch `,` $head `,` $kv_start `)` `scale` $scale
    (`captures` `(` $captures^ `:` type($captures) `)`)? $body attr-dict
    `:` type($weights) `,` type($offsets)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The largest spread σ = |G|·(n − 1)/2 of a run the weights keep exact
    /// (see above).
    static constexpr double kMaxSpread = 35.0;
    /// Keys per block: the weights' (the fragment's columns in a kernel).
    int64_t getBlockKeys() {
      auto type = cast<RankedTensorType>(getWeights().getType());
      return type.getDimSize(type.getRank() - 1);
    }
    /// Keys per run: N / P.
    int64_t getRunKeys() { return getBlockKeys() / getOffsets().size(); }
    /// The largest |G| the weights keep exact: kMaxSpread / ((n − 1)/2) for
    /// runs of n keys (1.11 for 64). Kernels record it in their manifest
    /// (`linear_bias_max_factor`): a G the compiler cannot see (a captured
    /// slope) is checked against it before the launch.
    double getMaxFactor() {
      return kMaxSpread / (0.5 * double(getRunKeys() - 1));
    }
  }];
}

def Fat_ScoreBandOp : Fat_Op<"score_band", [Pure, IsolatedFromAbove]> {
  let summary = "a score term that depends on the positions only through j − i, as Q·Kᵀ's accumulator";
  let description = [{
    A score region s' = s + T(b, h, i, j) whose term T reads neither the
    score nor the positions other than through their difference j − i (a
    learned relative-position bias table[h, j − i + S − 1], T5's buckets of
    j − i) adds per score one term that the vector units would pay for
    element by element (one add before the row maximum, and its load).
    Q·Kᵀ's wgmma adds its accumulator for free, so this op's tile becomes
    that accumulator and the region goes:

    ```
    t_rc = T(b, h, q_start + r, kv_start + c) · (1 / c)      (f32; 1 / c
          rounded once, c = %scale the attention's: the GEMM's scores are
          unscaled, so scale·(Q·Kᵀ + t) = scale·s + T)
    ```

    for rows q_start + r < Sq and keys kv_start + c < Skv (`len`). A
    padding row or key (past the tile's ragged edge) gets some finite term
    (the CPU reads T at the last real row and key, the GPU at the shifted
    difference with its captures' indices clamped): its score is masked or
    its row never stored.

    The region yields T from b, h, i, j and the captures; i and j enter
    only through `arith.subi` of one from the other (the verifier checks),
    so a block of M rows and N keys has M + N − 1 distinct terms: the
    Hopper kernel computes each once per block, in a warp beside the TMA
    producer, and the consumers read their accumulator fragments from
    shared memory (`fat.band_stage`, `fat.band_fragment`).

    ```mlir
    %t = fat.score_band at(%b, %h, %q0, %k0) len(%sq, %skv) scale %c
        captures(%table : tensor<16x8191xf32>) {
    ^bb0(%bb: index, %hh: index, %i: index, %j: index, %tab: tensor<16x8191xf32>):
      %d = arith.subi %j, %i : index
      %off = arith.constant 4095 : index
      %x = arith.addi %d, %off : index
      %v = tensor.extract %tab[%hh, %x] : tensor<16x8191xf32>
      fat.yield %v : f32
    } : tensor<128x128xf32>
    %s = fat.wgmma %q, %k, %t transpose_b a_from smem shape [64, 128, 16]
        : tensor<128x64xbf16>, tensor<128x64xbf16>, tensor<128x128xf32>
        -> tensor<128x128xf32>
    ```
  }];
  let arguments = (ins Index:$batch, Index:$head, Index:$q_start,
                   Index:$kv_start, Index:$q_len, Index:$kv_len, F32:$scale,
                   Variadic<AnyType>:$captures);
  let results = (outs AnyRankedTensor:$result);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    `at` `(` $batch `,` $head `,` $q_start `,` $kv_start `)`
    `len` `(` $q_len `,` $kv_len `)` `scale` $scale
    (`captures` `(` $captures^ `:` type($captures) `)`)? $body attr-dict
    `:` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Whether the row and key arguments (numbers 2 and 3) of `body` are
    /// read only by `arith.subi` of one from the other: the terms of a
    /// block then depend on j − i alone.
    static bool readsPositionsAsDifference(::mlir::Block &body);
    /// The same for the row `i` and key `j` of any region.
    static bool readsPositionsAsDifference(::mlir::Value i, ::mlir::Value j);
  }];
}

#endif // FAT_DIALECT_FAT_IR_FATTENSOROPS_TD
