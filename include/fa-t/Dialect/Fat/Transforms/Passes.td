//===- Passes.td - fat dialect passes ----------------------*- tablegen -*-===//
#ifndef FAT_DIALECT_FAT_TRANSFORMS_PASSES_TD
#define FAT_DIALECT_FAT_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def FatTile : Pass<"fat-tile"> {
  let summary = "Tile fat.attention into the FlashAttention online-softmax loop";
  let description = [{
    Tiles every `fat.attention` (through its `TilingInterface`) over a grid of
    (batch, query head, block of `block-m` query rows) — an `scf.forall` —
    and rewrites each tile into a sequential loop over blocks of `block-n`
    keys that carries the running output O, row max m and row sum l:

    ```
    S  = Q_blk · K_jᵀ                         fat.qk    (+ fat.mask at edges)
    m' = max(m, rowmax(S))                     fat.row_max
    P  = exp2(c · (S − m'))                    fat.exp2   c = scale · log2 e
    α  = exp2(c · (m − m'))                    fat.exp2
    l' = α · l + rowsum(P)                     fat.rescale, fat.row_sum
    O' = α · O + P · V_j                       fat.rescale, fat.pv
    end: O = O / l, LSE = scale · m + ln l    fat.finalize
    ```

    The KV range of a query block is split into three loops: blocks before
    the window's left edge that need a mask, blocks every query row sees in
    full (no mask), and the diagonal / right-edge / ragged-tail blocks that
    need one (their bounds: `fat.visible_key_blocks` and
    `fat.first_masked_key_block` on index, the ops the kernel computes its
    key blocks with). Blocks no row can see are never visited. Ragged Q and KV tails
    are padded with zeros inside the tile and predicated by `fat.mask`
    (`kv_len`); only the real rows are written back. Query head h reads KV
    head h / (Hq / Hkv). The memref form is first rewritten to the tensor
    form (to_tensor / materialize_in_destination).

    **Block shapes.** `block-m` / `block-n` = 0 (the default) take the
    Hopper kernel's: the blocks of the kernel that `--fat-pipeline` builds
    for the op when every schedule choice of `--fat-tensorize` and
    `--fat-pipeline` is their cost model's (`chooseKernelBlocks`; e.g. 192
    rows × 128 keys at D = 64 without a mask, 128 × 176 at D = 128 tuned for
    8k keys, 128 × 80 at D = 256), fitted to a `stages`-deep K/V ring in
    shared memory and tuned for `seq-len` keys (0: the op's static key
    length); ops that kernel does not serve (f32, other head dims) take
    128 × 128. Choices forced later (`--fat-pipeline="persistent=off"`)
    keep these blocks: give them here to change them. The forall records
    what it was tiled for: `fat.tile = {block_m, block_n, stages, seq_len}`.

    Example: `fa-t-opt --fat-tile="block-m=64 block-n=32" in.mlir`
  }];
  let options = [
    Option<"blockM", "block-m", "int64_t", /*default=*/"0",
           "Query rows per tile (the M of both GEMMs); 0 = the Hopper "
           "kernel's">,
    Option<"blockN", "block-n", "int64_t", /*default=*/"0",
           "Keys per inner-loop iteration (the N of Q·Kᵀ, the K of P·V); 0 = "
           "the Hopper kernel's">,
    Option<"stages", "stages", "int64_t", /*default=*/"0",
           "Depth of the Hopper kernel's K/V ring the automatic blocks must "
           "fit beside in shared memory (1..4; 0 = the op's fat.schedule "
           "entry, else 2)">,
    Option<"seqLen", "seq-len", "int64_t", /*default=*/"0",
           "Key-sequence length the automatic blocks are tuned for (0 = the "
           "op's static key length)">
  ];
  let dependentDialects = [
    "::mlir::affine::AffineDialect", "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::linalg::LinalgDialect", "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def FatCheckReshapes : Pass<"fat-check-reshapes"> {
  let summary = "Refuse tensor.expand_shape ops whose output_shape contradicts their type";
  let description = [{
    MLIR 22's `tensor.expand_shape` verifier accepts a static `output_shape`
    that disagrees with the result type, e.g.

    ```
    %e = tensor.expand_shape %x [[0], [1, 2]] output_shape [3, 8, 1]
        : tensor<2x8xf32> into tensor<2x8x1xf32>
    ```

    and `one-shot-bufferize` then builds a `memref.expand_shape` that does
    not verify (found by fa-t-fuzz-mlir). This check runs first in
    `--fat-to-cpu`, which bufferizes the whole module: such an op gets an
    error naming the dimension, `output_shape[i] = 3` against the result's
    2, instead of a failure inside bufferization. Dynamic entries (either
    side) are left to the op's run-time shape.

    Example: `fa-t-opt --fat-check-reshapes in.mlir`
  }];
}

def FatDecompose : Pass<"fat-decompose"> {
  let summary = "Lower the tile-level fat ops to linalg/arith/math";
  let description = [{
    Rewrites each tile op of the tiled form (`fat.qk`, `fat.mask`,
    `fat.row_max`, `fat.exp2`, `fat.row_sum`, `fat.rescale`, `fat.pv`,
    `fat.finalize`) into one `linalg.generic` whose body is the op's formula
    in f32 scalar arithmetic, and the mask's geometry over key blocks
    (`fat.visible_key_blocks`, `fat.first_masked_key_block`,
    `fat.key_block_needs_mask`) into its index arithmetic — the expansion
    `--convert-fat-to-nvvm` applies to the kernel's, so both paths visit and
    mask the same blocks. This is the target-independent reference
    lowering: its output bufferizes and runs on the host CPU
    (`--fat-to-cpu`), and it is the numerics oracle for the GPU path.

    Example: `fa-t-opt --fat-tile --fat-decompose in.mlir`
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect", "::mlir::tensor::TensorDialect"
  ];
}

def FatRaiseAttention : Pass<"fat-raise-attention"> {
  let summary = "Raise attention written in linalg (Q·Kᵀ, scale, mask, "
                "softmax, ·V) to fat.attention";
  let description = [{
    Finds scaled dot-product attention as frameworks lower it to linalg on
    tensors (torch-mlir, StableHLO→linalg, IREE input) and replaces it by one
    `fat.attention` (tensor form):

    ```
    S  = Q·Kᵀ                 linalg.matmul / batch_matmul (with or without
                              indexing_maps), linalg.contract, or a generic
    S' = c·S  (+ M)           c a scalar constant (on S, or on Q and K before
                              the matmul); M a band mask (causal,
                              sliding window)
    P  = softmax_j(S')        linalg.softmax, or exp(S' − max_j S') / Σ_j exp(…)
    O  = P·V                  as for Q·Kᵀ
    →  fat.attention ins(Q4, K4, V4) scale c [causal] [window [w, -1]]
                     [diagonal(δ)]
    ```

    The chain is read element by element (elementwise generics and named ops,
    linalg.broadcast / transpose, reshapes, casts are looked through), so the
    op boundaries a framework chooses do not matter. It is raised only when
    it is exactly attention:

    - the softmax normalizes over the keys that P·V sums over; the row sum
      starts at 0; the shift, if any, is the row max of the same scores;
      torch's `_safe_softmax` (P = 0 on rows whose scores are all −inf) is
      accepted, as fat.attention gives such rows O = 0 too;
    - the scale is one positive scalar constant (factors on S, Q and K
      multiply); any other elementwise work between Q·Kᵀ and the softmax
      (tanh soft-capping, a bias or mask tensor, a scale that is a tensor
      or a runtime value, index terms) becomes the op's `score` region,
      s' = f(s, b, h, i, j, captures…) with s = Q·Kᵀ's element and every
      tensor or scalar it reads a capture (a row such a region hides
      entirely with −inf gives O = 0 where the source gives NaN);
    - the mask is a band: a constant tensor, or index comparisons
      (`linalg.index`, `arith.cmpi`, `arith.select`; several joined by
      `andi` for the visible keys or `ori` for the hidden ones) keeping keys
      `i + λ ≤ j ≤ i + δ` (either edge may be missing), hidden entries −inf
      or any value ≤ −1e4 (exp of it underflows to 0 unless a row's visible
      scores spread over more than 9 896). The upper edge is `causal` with
      δ ≥ 0; a lower edge is `window [δ − λ, -1]` with it, or `window [0,
      -1]` at diagonal λ alone; the diagonal is stated unless it is the
      default Skv − Sq. Every row must see a key (the source gives NaN or a
      uniform average where fat.attention gives 0): row 0 needs δ ≥ 0, the
      last row λ ≤ Skv − Sq, which needs static sequence lengths;
    - Q, K, V are (views of) tensors read as `[batch…, S, D]` whose batch
      index maps onto the output's batch index: Q one to one, K and V as
      `flat(β) floordiv g` (heads broadcast with repeat_interleave: GQA with
      g = Hq / Hkv, taken from before the broadcast).

    Operands are reshaped to `[B, H, S, D]` (collapse/expand_shape, a
    transpose when K is stored as Kᵀ) and O back to the original shape. The
    dead linalg chain is erased; nothing else is folded or changed.
    Element types: Q, K, V, O of one type (f16, bf16, f32); the scores may be
    computed in f32 from 16-bit inputs (`extf`), P may be rounded back to 16
    bits for P·V, and an f32 P·V result is accepted when it is rounded to the
    input type right after (O is then that rounding). Inputs widened to f32
    by separate ops are raised on the 16-bit originals when the result is
    rounded back to 16 bits, else in f32 on the widened tensors.

    Example: torch-mlir's `softmax(q @ k.transpose(-2, -1) / 8) @ v` on
    `[2, 8, 128, 64]` tensors (batch_matmul on collapsed `[16, 128, 64]`)
    becomes

    ```mlir
    %o = fat.attention ins(%q, %k, %v : tensor<2x8x128x64xf32>, ...)
                       outs(%init : tensor<2x8x128x64xf32>) scale 1.250000e-01
                       -> tensor<2x8x128x64xf32>
    ```

    Every contraction that is fed by a softmax but is not raised says why with
    `remarks=1`. Example: `fa-t-opt --fat-raise-attention="remarks=1" in.mlir`
  }];
  let options = [
    Option<"remarks", "remarks", "bool", /*default=*/"false",
           "Emit a remark at each softmax·V contraction that is not raised, "
           "saying why">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::fat::FatDialect",
    "::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect"
  ];
}

def FatTensorize : Pass<"fat-tensorize"> {
  let summary = "Move softmax primitives onto the tensor cores (FlashAttention-T)";
  let description = [{
    Decides how the Hopper kernel computes the softmax primitives that
    FlashAttention runs on the vector units, and rewrites each KV step of
    the tiled form (after `--fat-tile`) into the tensorized level
    (FatTensorOps.td, TensorizeTiles.cpp): `fat.qk` → `fat.wgmma` (A and B
    in shared memory), the row max and α → `fat.softmax_max`, the
    numerators and the vector row sum → `fat.softmax_exp`, `fat.pv` (and
    `fat.row_sum` with `rowsum=mma`) → `arith.truncf` of P and `fat.wgmma`
    with A in registers on [V | 1]. The cost model reads D, Dv, the mask,
    the LSE and fat-tile's `fat.tile` record (blocks, K/V ring depth, key
    length) off the tiles; tiles warpgroup MMA cannot take are refused
    naming the constraint; an untiled `fat.attention` is refused.
    `--fat-to-cpu` runs the result, `--fat-pipeline` builds the kernel from
    it. The choice is recorded on the loop it rewrote, as keys of its
    `fat.schedule` (an entry already there — a schedule written by hand on
    the op, which fat-tile carries — stands unless an option forces
    another):

    - `rowsum`: `"vector"` (l += Σ_j P_ij with FADDs, a quad reduction at
      the end) or `"mma"`: the P·V wgmma gets 8 extra B columns of ones, so
      its accumulator holds [O | l] = P·[V | 1] and the tensor cores do the
      row sums; α·l then rides along with α·O.
    - `rescale`: `"always"` (O ← α·O, l ← α·l every block) or `"lazy"`: the
      reference max m of a row only moves when c·(rowmax S − m) > τ
      (`rescale_threshold`, log2 units), so P = exp2(c·S − c·m) ≤ 2^τ and
      warps whose rows all kept m skip the rescale. O/l and the LSE do not
      depend on which m was used; O, l ≤ 2^τ·(…) stay far from overflow.
    - `exp2_poly`: the fraction φ of the exponentials P = 2^x computed on
      the FMA pipe by 2^x = p(x − ⌊x⌋)·2^⌊x⌋ (a degree-3 minimax polynomial,
      relative error ≤ 8.6e-5, below bf16/f16 rounding; exponent added as an
      integer) instead of MUFU.EX2, which issues 16 per cycle per SM against
      128 FMAs: where the exponentials bound the loop (small head dims),
      both pipes then work while the tensor cores run.

    `auto` applies the cost model — per head dim and mask, from the measured
    ablation in docs/perf-log.md (runs 6, 10 and 30): row sums on the
    tensor cores where the P·V is narrow (D, Dv ≤ 64), no LSE is written, and
    either every block is full (no mask) or the causal kernel takes
    ping-pong turns (predicted with fat-pipeline's own cost model, so
    forcing `pingpong=off` there alone keeps these row sums);
    the lazy rescale where the P·V wait is late and O's rescale weighs most
    (Dv = 256, or the causal mask at Dv >= 128: runs 55 and 58; with
    ptxas's early wait its branch serializes the overlapped wgmmas, so
    fat-pipeline drops it again under a forced `pv-wait=early`), the
    eager one elsewhere; all exponentials on MUFU (exp2_poly = 0: the FMA
    pipe is the busier one in this kernel, run 14; the soft-cap's two MUFU
    ops per score measured no better, run 88). Forcing a choice is for
    ablation.

    `tanh-poly`: a score region's tanh whose argument is a constant
    multiple of the score, x = k·s (the soft-cap's s/A), runs as the odd
    polynomial tanh x ≈ x·(c0 + c1·x² + c2·x⁴ + c3·x⁶) (`fat.score_mod`'s
    `tanh_poly`: |error| ≤ 3.3e-5 on |x| ≤ 1, five FMA-pipe instructions)
    wherever a warp's |k|·max|s| ≤ 1, and on MUFU elsewhere. The soft-cap
    spends two MUFU operations per score (tanh, then the exponential)
    against the plain kernel's one; where its scores lie within the cap the
    polynomial leaves MUFU the exponentials alone. Recorded as
    `tanh_poly = true` in the schedule where taken, `h` in the kernel's
    name. `auto` keeps MUFU's tanh: the form lost 1…17% on the soft-cap
    (docs/perf-log.md, run 153), whose kernel waits on its instructions
    per score rather than on MUFU; `on` is for ablation.

        fat.score_mod %s at(...) len(...) scale 1.0 tanh_poly {
        ^bb0(%x: f32, ...):
          %y = arith.divf %x, %c30 : f32
          %t = math.tanh %y : f32
          fat.yield %t : f32
        }

    A score region s' = A·g(…) with a constant A > 0 (soft-capping's
    30·tanh(s/30)) then yields g: A joins the softmax constant,
    c = A·log2 e on `fat.softmax_max` / `fat.softmax_exp`, and the LSE's
    factor on m (`fat.finalize`'s scale), so the kernel spends no multiply
    per score on it (ScoreScales.cpp; `fat-pipeline` folds the region's
    leading constant into the kernel's scale the same way).

    `row-max=bound`: where the score region bounds the scores, L ≤ s ≤ U
    (after the fold above, a soft cap's tanh ∈ [−1, 1]) with c·(U − L) ≤
    96, the softmax takes the constant reference m = U for every row
    instead of the running maximum (BoundRowMax.cpp): `fat.softmax_max`
    and the rescales of O and l go, the row sums add without α. P ∈
    [2^(c·(L−U)), 1] as before, never below 2^−96 (f32 and bf16 keep it
    normal; f16 kernels are refused). `auto` takes the bound where it
    applies at D = 128 — with the ones columns (`rowsum=mma`) unless the
    LSE is written — and at D = 64 under a causal mask (perf log run 112:
    +6% and +21…26% causal at D = 128, +5% at D = 64 causal, −3.6% at
    D = 64 without a mask, which keeps the running maximum). The other
    primitives' `auto` assumes the reference decided first: a forced
    `row-max=online` keeps the vector row sums at D = 128. Recorded as
    `row_max = "bound"`.

    `linear-bias=mma`: a score region s' = s + G·(j − i) whose factor G
    reads neither the score nor the positions (ALiBi, G = slope_h) costs
    the vector units one FFMA per score; instead Q·Kᵀ takes one more k16
    step on extra columns chosen for it (TensorizeBias.cpp):
    `fat.bias_query_columns` (G/scale in three parts, and the block's
    offset kv_start − q_start times it) beside Q and `fat.bias_key_columns`
    (each key's offset r in its block) beside K, so the GEMM's scores carry
    G·(j − q_start) and the region goes; the softmax constant becomes
    scale·log2 e. The scores then miss G·(i − q_start), one constant per
    row, which O does not see and the LSE would: kernels that write the
    LSE are refused. `auto` = `mma` where it applies — bf16 (G/scale times
    key offsets overflows f16), no LSE, no mask region computing with
    positions beside it (the query columns spill there), the key columns
    (block-n × 32 bytes) fitting in shared memory — else `vector` (+3.8…6.1%
    over the vector form at D = 64 and 128, perf log run 115b); fat-tile
    predicts the choice and gives the kernel the plain one's key blocks.
    Recorded as `linear_bias = "mma"`.

    `linear-bias=weights`: the same region as weights on P. With rows at
    the origin the bias of key k in a run of n keys starting at j0 is
    G·(j0 + (n−1)/2) + G·(k − (n−1)/2): an offset per run, which both
    softmax ops add to each row (`offset(...)` on fat.softmax_max /
    fat.softmax_exp), and a weight w_k = e^(G·(k − (n−1)/2)) per key, which
    multiplies P after its rounding (`fat.key_weights`, `arith.mulf`), so
    O and the ones columns' row sums (rowsum=mma, which this form needs)
    read the same P̂·ŵ and its rounding cancels. Exact while the run's
    spread |G|·(n − 1)/2 ≤ 35: runs of 64 keys keep |G| ≤ 1.11 (every
    ALiBi slope is below 1); the manifest records the bound
    (`linear_bias_max_factor`) for the runtime to check a captured G, and
    a constant G past it stays per score. `auto` = weights under a causal
    mask at D = 64 and 128 tuned for ≥ 4k keys, bf16, no LSE, no
    positional mask (linearBiasAsWeights: 1.03…1.04× the columns at
    D = 128, 1.13…1.16× the vector form at D = 64, perf log run 147).
    Recorded as `linear_bias = "weights"`.

    `relative-bias=accumulator`: a score region s' = s + T(b, h, j − i)
    (or s − T, as ALiBi's s − slope·(i − j): the term is then −T) whose
    term reads neither the score nor the row and key other than as
    their difference (a learned relative-position table, T5's buckets)
    costs the vector units an add per score and its read; instead Q·Kᵀ
    accumulates onto `fat.score_band`, the tile of T / scale, and the
    region goes (TensorizeBias.cpp): scale·(Q·Kᵀ + T/scale) = scale·s + T,
    the softmax constant becomes scale·log2 e and the LSE's factor on m
    takes the scale. A block of M rows and N keys has M + N − 1 distinct
    terms, which the Hopper kernel computes once per block beside the TMA
    producer; the consumers load their accumulator fragments from shared
    memory. `auto` = vector: measured, the accumulator form is 4…9%
    slower for a table and 16…20% slower than linear-bias=mma for ALiBi
    (perf log run 136b, H100, 4k). Recorded as
    `relative_bias = "accumulator"`.

    Example: `fa-t-opt --fat-tile="block-m=128 block-n=64"
    --fat-tensorize="rowsum=mma" in.mlir` turns a D = 64 step's P·V into
    `fat.wgmma %p16, %v_ones, %acc a_from registers shape [64, 72, 16]`
    and records `{fat.schedule = {exp2_poly = 0.0 : f64, forced = true,
    rescale = "always", rescale_threshold = 8.0 : f64, rowsum = "mma"}}` on
    the loop (`forced`: some choice came from an option, not the cost
    model; the manifest says so and kernel lookup prefers the cost model's
    kernels).
  }];
  let options = [
    Option<"rowsum", "rowsum", "std::string", /*default=*/"\"auto\"",
           "Row sums: auto, vector or mma">,
    Option<"rescale", "rescale", "std::string", /*default=*/"\"auto\"",
           "Rescale of O and l: auto, always or lazy">,
    Option<"rescaleThreshold", "rescale-threshold", "double",
           /*default=*/"8.0", "Lazy-rescale threshold τ, log2 units (0..16)">,
    Option<"exp2Poly", "exp2-poly", "std::string", /*default=*/"\"auto\"",
           "Exponentials on the FMA pipe: auto, or a fraction in [0, 1] of "
           "them computed by the polynomial instead of MUFU.EX2">,
    Option<"tanhPoly", "tanh-poly", "std::string", /*default=*/"\"auto\"",
           "A score region's tanh on the FMA pipe: 'on' (fat.score_mod's "
           "odd polynomial, exact to 3.3e-5 on [-1, 1], wherever a warp's "
           "arguments all lie there; MUFU's tanh elsewhere), 'off', or "
           "'auto' (the cost model's rule: off, run 153)">,
    Option<"rowMax", "row-max", "std::string", /*default=*/"\"auto\"",
           "The softmax reference: 'online' (the running row maximum), "
           "'bound' (the bound U of a score region bounding the scores, "
           "L <= s <= U with c·(U − L) <= 96: no maximum, no rescale; bf16), "
           "'auto' = bound at D = 128 and at D = 64 causal, else online">,
    Option<"linearBias", "linear-bias", "std::string", /*default=*/"\"auto\"",
           "A score region s + G·(j − i) (ALiBi): 'vector' (the region per "
           "score), 'mma' (one more k16 step of Q·Kᵀ on bias columns; no "
           "LSE) or 'weights' (weights on P and an offset per 64-key run; "
           "needs rowsum=mma, no LSE, |G| <= 1.11); 'auto' = weights causal "
           "at D = 64, 128 from 4k keys, else mma where it applies (bf16, "
           "no LSE, no positional mask region, room for the key columns), "
           "else vector">,
    Option<"relativeBias", "relative-bias", "std::string",
           /*default=*/"\"auto\"",
           "A score region s ± T(b, h, j − i): 'vector' (the region per "
           "score) or 'accumulator' (Q·Kᵀ accumulates onto the term, each of "
           "a block's M + N − 1 terms computed once); 'auto' = vector (the "
           "accumulator form measured slower, perf log run 136b)">
  ];
}

def FatPipeline : Pass<"fat-pipeline", "::mlir::ModuleOp"> {
  let summary = "Choose the asynchronous schedule and build the pipelined Hopper kernel";
  let description = [{
    Runs on the tensorized loops `--fat-tile` and `--fat-tensorize` write
    (an `scf.forall` with a `fat.tile` record); an untiled `fat.attention`
    is refused. It reads the attention off the loop — Q, K, V and the
    destinations are the tensors the tiles slice, the layout where the
    query-block index slices Q, the mask and whether the LSE is written from
    `fat.mask` and the destinations, the primitives from the tensorized ops
    (N = Dv + 8 ones columns, `lazy threshold τ`, `exp2_poly`), the blocks,
    K/V ring depth and tuned length from `fat.tile` — and chooses the
    consumer-warpgroup schedule, recorded as keys of the loop's
    `fat.schedule`:

    - `overlap`: iteration j issues S_j = Q·K_jᵀ and O += P_{j−1}·V_{j−1}
      back to back, waits for S_j only (wgmma.wait_group 1), and runs the
      softmax of S_j while the P·V is in flight;
    - `pingpong`: the consumer warpgroups take turns issuing their GEMMs
      (named barriers 1 … n, round the n = 2 or 3 warpgroups), so one's
      softmax overlaps the others' GEMMs;
    - `persistent`: min(U, num-sms) CTAs for U work units, CTA c taking
      units c, c + G, c + 2G, … (G = num-sms), head-major so that the CTAs
      running together share K/V blocks in L2. A unit is a query block, or
      with a causal mask the pair of query blocks p and ⌈Sq/M⌉ − 1 − p of
      one head, whose keys add up to the same count for every p (so the
      static round robin is balanced). The K/V ring and its phases run on
      across tiles, Q has a full and an empty barrier, so the producer
      loads the next tile while the consumers finish the current one and
      store O;
    - `tile_overlap` (persistent CTAs with overlap): the overlapped loops of
      a CTA's tiles are chained — the last O += P·V of tile t is issued in
      the same turn as the first S = Q·Kᵀ of tile t+1 and runs under that
      block's softmax, after which tile t's O is stored; the first P·V of a
      tile starts its accumulator (wgmma scale-d = 0). A tile of n key
      blocks takes n GEMM-issue turns instead of n + 1, so the tensor cores
      see no fill and drain at tile boundaries.

    The producer warpgroup (TMA, `stages`-deep K and V rings with full and
    empty mbarriers, setmaxnreg 24/240) is the same for every choice.
    `auto`: overlap everywhere (+5.5% over the grid, perf-log run 5);
    persistent CTAs except with windows (+12…31% at S = 512, ±5% at long
    S: perf-log runs 15–19) and where a block mask's key ranges follow
    captured data (a document mask: tiles of random cost, which one CTA
    per tile balances, +1…19%: run 121); ping-pong with them at D ≤ 128
    and block-m = 128, except at D = 64 without a mask, where it ties with
    the row sums on the tensor cores (+1…5%: run 20); tile overlap for
    persistent, overlapped kernels without ping-pong (D = 64: +8% at
    S ≤ 1k, +2…5% above; causal D = 64 from 4k keys, 192 rows: +7…9%; with
    turns −1…3%: runs 34–41).

    Then it builds, for each loop, the kernel of that schedule: a
    `gpu.module` holding one `llvm.func` for
    sm_90a (docs/kernel-abi.md) in the pipelined form — warp
    specialization as `fat.warp_specialize` regions, shared memory as
    the rings Q, K and V (`!fat.ring`, handed between the roles by
    `fat.ring_acquire` / `fat.ring_wait` / `fat.ring_release`) that
    `fat.tma_load` tile copies fill, the
    consumer on the warpgroup's `#fat.wgmma_fragment` tiles — each GEMM
    as one `fat.wgmma_async` on its shared-memory operands, the wait groups as `fat.wgmma_wait` (which
    returns the tiles the retired groups wrote: the async token), the
    softmax as the tensorized level's ops, the loops carrying O, m, l and
    P as tiles — and the scheduling facts ptxas needs as ops
    (`fat.operand_fence`, `fat.schedule_fence`) that `--convert-fat-to-nvvm`
    lowers. The kernel depends only on the attention's static
    configuration (dtype, D, Dv, Hq, Hkv, causal, window, layout, LSE), the
    schedule and the pass options, so identical configurations share one
    module. The loop is replaced by `fat.launch @<module>::@<entry>` on the
    whole tensors (the host's call of the kernel, which the runtime
    performs), carrying the schedule as built; the launch manifest of each
    kernel is recorded in the module attribute `fat.kernels`.

    One CTA computes `block-m` query rows of one (head, batch); the grid is
    (⌈Sq/block-m⌉, Hq, B), or (Hq, ⌈Sq/block-m⌉, B) with the query blocks in
    reverse (longest first) for causal kernels:
    ```
    warpgroup 0 (producer, 1 thread): TMA Q once, then K_j, V_j into a
        `stages`-deep ring, full[s] / empty[s] mbarriers
    warpgroups 1..block-m/64 (consumers, 64 query rows each):
        S = Q·K_jᵀ (wgmma, smem descriptors)      mask edges, ragged tail
        m' = max(m, rowmax S)   P = exp2(c·S − c·m')   α = exp2(c·m − c·m')
        l = α·l + rowsum P      O = α·O + P·V_j (wgmma, P in registers)
    end: O /= l (0 for an empty row), LSE = (c·m + log2 l)·ln 2, or −inf
    ```
    with c = scale·log2(e) a kernel parameter.

    The FlashAttention-T primitives are the tensorized ops'; with
    `rowsum=mma` the P·V wgmma has 8 columns of ones (N = Dv + 8), so the
    tensor cores compute l = P·1 and α·l rides with α·O. After the build
    `fat.launch`'s `fat.schedule` holds what the kernel does, with its
    `block_m`, `block_n`, `stages`, `q_buffers`, `o_store`, `pv_wait`,
    `tail_split` and `mask_form`:
    the kernel drops tile overlap where one Q buffer fits or its registers
    would not hold the pending tile, and a cost-model lazy rescale under
    `pv-wait=early`. Entries already on the loop (a schedule written by
    hand on the op, which fat-tile carries) are decisions made: `q_buffers`,
    `o_store`, `pv_wait`, `tail_split` and `mask_form` win over this pass's
    options, and a schedule key
    stands unless its option is given (`on` / `off`).

    Epilogue (`o-store`): O/l is packed to 16 bits and, by default, staged
    through shared memory: each warp writes its 16 rows with `stmatrix`
    into its warpgroup's rows of the tile's Q buffer (dead once the last
    S = Q·Kᵀ is done; a row's 16-byte chunks XOR-swizzled by row mod 8 so
    neither side conflicts on banks), then reads them back and stores whole
    row segments 16 bytes per thread. `o-store=direct` stores each
    accumulator pair from registers (4 bytes, 8 rows per warp store).

    P·V wait (`pv-wait`): the overlapped loop issues S_j = Q·K_jᵀ and
    O += P_{j−1}·V_{j−1}, waits for S_j, runs its softmax and then waits
    for the P·V. ptxas lifts that second wait as high as its basic block
    allows (the 16-bit packs of P_j may take P_{j−1}'s registers only after
    it), so by default (`late`, where a block's P·V spans at least 160
    keys × 128 columns or the lazy rescale pays) the packs follow the wait
    and a branch over a `membar.cta` that never runs fences it below the
    exponentials (ptxas schedules within basic blocks); `early` leaves it
    to ptxas. Example: `fat-pipeline{pv-wait=early}`.

    Masked blocks (`tail-split`, `mask-form`): the overlapped steady loop
    is split where it pays (ping-pong without the lazy rescale, perf-log
    runs 62–63) at the first block a mask can touch — the ragged tail, the
    causal diagonal, a right window edge —, the copy below it without the
    mask test (one basic block for ptxas); a masked block compares each
    key with the row's limits, computed once per block, where the
    consumer's registers hold them (else each key's index with every
    bound). Both are recorded as `tail_split` and `mask_form`.

    The schedule stays visible in the kernel it builds: the role split is
    the `fat.warp_specialize` (an `scf.if` tagged `fat.role` once lowered),
    and the structured ops carry `fat.stage` ("ones",
    "load", "prologue", "mainloop", "mainloop-edge", "mask", "rescale",
    "epilogue"; ping-pong kernels without the lazy rescale run their main
    loop over the blocks no mask touches, then a "mainloop-edge" copy with
    the mask test over the rest), `fat.order` (the issue order of one
    main-loop iteration); a persistent kernel's tiles are a
    `fat.tile_loop` (`pairs` under a causal mask), whose expansion in
    `--convert-fat-to-nvvm` is tagged `fat.tiles` ("head-major-pairs" or
    "head-major"; with `tile-scheduler=dynamic` "dynamic-fetch" in the
    producer, which takes units from the counter and publishes them in a
    ring of two stages, and "dynamic-follow" in the consumers).

    Example: `fa-t-opt --fat-tile="block-n=128" --fat-tensorize
    --fat-pipeline in.mlir` on a causal D = 128 op gives
    `%o = fat.launch @k::@k ins(%q, %k, %v : ...) outs(%o0 : ...)
    diagonal(%d) scale 0.0883883461 {fat.schedule = {block_m = 128,
    block_n = 128, forced = false, overlap = true, persistent = true,
    pingpong = true, tile_overlap = false, ...}}` and `gpu.module @k`.
  }];
  let options = [
    Option<"overlap", "overlap", "std::string", /*default=*/"\"auto\"",
           "Intra-warpgroup overlap: auto, on or off">,
    Option<"pingpong", "pingpong", "std::string", /*default=*/"\"auto\"",
           "Consumer warpgroups take turns issuing GEMMs: auto, on or off">,
    Option<"persistent", "persistent", "std::string", /*default=*/"\"auto\"",
           "Persistent CTAs looping over the tiles: auto, on or off">,
    Option<"tileOverlap", "tile-overlap", "std::string", /*default=*/"\"auto\"",
           "A tile's last P·V issued with the next tile's first Q·Kᵀ "
           "(persistent CTAs with overlap): auto, on or off">,
    Option<"tileScheduler", "tile-scheduler", "std::string",
           /*default=*/"\"auto\"",
           "How persistent CTAs find their tiles: 'static' (CTA c takes "
           "units c, c + num-sms, ...), 'dynamic' (after the first, from a "
           "counter in global memory that the launcher passes as the "
           "tile_counter parameter, in the one-CTA-per-tile grid's order; "
           "brings persistent CTAs unless persistent is given), 'auto' = "
           "dynamic where the tiles' key blocks follow captured data (a "
           "document mask's ranges), else static">,
    Option<"sm", "sm", "std::string", /*default=*/"\"sm_90a\"",
           "Target architecture (only sm_90a: wgmma and setmaxnreg need it)">,
    Option<"qBuffers", "q-buffers", "int64_t", /*default=*/"0",
           "Q buffers in shared memory: 1, or 2 for persistent kernels (the "
           "next tile's Q loads while this tile runs); 0 = 2 where they fit "
           "beside the K/V ring, else 1">,
    Option<"ptxVersion", "ptx", "int64_t", /*default=*/"80",
           "PTX ISA version the kernel is built for (80 = PTX 8.0)">,
    Option<"numSMs", "num-sms", "int64_t", /*default=*/"132",
           "SMs of the target: the most CTAs a persistent kernel launches">,
    Option<"oStore", "o-store", "std::string", /*default=*/"\"auto\"",
           "How the epilogue writes O: 'staged' (stmatrix into the "
           "warpgroup's dead Q rows, then 16-byte stores of whole row "
           "segments; needs Dv <= D, no tile overlap and block-m <= 128), 'direct' (4-byte "
           "stores from the accumulator registers), 'auto' = staged where "
           "it can be">,
    Option<"pvWait", "pv-wait", "std::string", /*default=*/"\"auto\"",
           "Where the overlapped main loop waits for P(j-1)·V(j-1): 'late' "
           "(after the softmax of S(j), behind a scheduling fence; the P(j) "
           "packs follow the wait), 'early' (where ptxas puts it: before "
           "the softmax), 'auto' = late at Dv >= 128 where block-n × Dv >= "
           "160 × 128, Dv = 256 or the mask is causal">,
    Option<"tailSplit", "tail-split", "std::string", /*default=*/"\"auto\"",
           "The overlapped steady loop over the blocks below the first one "
           "a mask can touch in a copy without the mask test, then the rest "
           "with it: 'on' (needs overlap and no left window edge), 'off', "
           "'auto' = with ping-pong turns and without the lazy rescale">,
    Option<"maskForm", "mask-form", "std::string", /*default=*/"\"auto\"",
           "How a masked block compares its keys: 'rows' (limits per row and "
           "bound, computed once per block), 'keys' (each key's index "
           "against every bound), 'auto' = rows where the consumers have "
           "240 or more registers or, masked, tile overlap">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect", "::mlir::NVVM::NVVMDialect",
    "::mlir::scf::SCFDialect", "::mlir::tensor::TensorDialect"
  ];
}

#endif // FAT_DIALECT_FAT_TRANSFORMS_PASSES_TD
