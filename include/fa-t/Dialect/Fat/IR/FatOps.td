//===- FatOps.td - fat.attention ----------------------------*- tablegen -*-===//
//
// The whole attention operation. Its tile-level decomposition lives in
// FatTileOps.td, the tensorized level (what --fat-tensorize writes) in
// FatTensorOps.td.
//
//===----------------------------------------------------------------------===//

#ifndef FAT_DIALECT_FAT_IR_FATOPS_TD
#define FAT_DIALECT_FAT_IR_FATOPS_TD

include "fa-t/Dialect/Fat/IR/FatDialect.td"
include "mlir/IR/EnumAttr.td"
include "mlir/Interfaces/DestinationStyleOpInterface.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/TilingInterface.td"

def Fat_Layout : I32EnumAttr<"Layout",
    "memory order of the four-dimensional attention operands", [
      I32EnumAttrCase<"BHSD", 0, "bhsd">,
      I32EnumAttrCase<"BSHD", 1, "bshd">
    ]> {
  let cppNamespace = "::mlir::fat";
}

def Fat_AttentionOp : Fat_Op<"attention", [
    AttrSizedOperandSegments, IsolatedFromAbove,
    DestinationStyleOpInterface,
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>,
    DeclareOpInterfaceMethods<TilingInterface, [
      "getIterationDomain", "getLoopIteratorTypes", "getTiledImplementation",
      "getResultTilePosition"]>]> {
  let summary = "scaled dot-product attention with online-softmax semantics";
  let description = [{
    Computes, for every batch `b`, query head `h` and query row `i`:

    ```
    s_ij      = scale · Σ_d Q[b, h, i, d] · K[b, h / g, j, d]     (g = Hq / Hkv)
    p_ij      = exp(s_ij − max_j s_ij)   over the visible keys j, else 0
    O[b,h,i,:] = Σ_j p_ij · V[b, h / g, j, :] / Σ_j p_ij
    LSE[b,h,i] = log Σ_j exp(s_ij)        (natural log, PyTorch's convention)
    ```

    Shapes (logical order; `layout(bshd)` swaps the head and sequence dims of
    Q, K, V and O in memory): Q `[B, Hq, Sq, D]`, K `[B, Hkv, Skv, D]`,
    V `[B, Hkv, Skv, Dv]`, O `[B, Hq, Sq, Dv]`, LSE `[B, Hq, Sq]` in f32.
    `Hq` must be a multiple of `Hkv` (GQA; `Hkv = 1` is MQA). B, Sq and Skv
    may be dynamic; heads and head dims are static. Q, K, V (and O) are f16
    or bf16, or f32 for reference use; accumulation is f32. Memrefs have a
    strided layout (identity or `strided<...>`).

    `scale` defaults to 1/sqrt(D).

    **Masks** are expressed with the *diagonal* `δ`: the key index aligned
    with query row 0. `causal` keeps key j for query i iff `j ≤ i + δ`;
    `window [left, right]` (each in [0, 2³¹ − 1], or −1 for unbounded) keeps
    `i + δ − left ≤ j ≤ i + δ + right`; both together keep the
    intersection. By default `δ = Skv − Sq`: the bottom-right alignment of
    FlashAttention ≥ 2.1. PyTorch's `is_causal` is top-left aligned:
    pass `diagonal(%c0)`. A query row that sees no key yields `O = 0` and
    `LSE = −inf`, never NaN.

    The op is destination style: with tensors it returns the updated `outs`
    (and `lse`) values; with memrefs it writes them in place and returns
    nothing. It implements `TilingInterface` over the parallel iteration
    domain `(B, Hq, Sq)`.

    **Score and mask modifications** (FlexAttention's `score_mod` and
    `mask_mod`): an optional `score` region computes s'_ij = f(s_ij, b, h,
    i, j) from the scaled score s_ij (f32) and the global batch, query
    head, query row and key indices; an optional `mask` region returns an
    i1 per (b, h, i, j), false hiding the key (s' = −inf). Both see the
    `captures(...)` operands as trailing block arguments (a bias table,
    per-head slopes, document ids: tensors in the tensor form, memrefs in
    the memref form, or scalars) and nothing else from outside, and end in
    `fat.yield`. They are evaluated only for real positions (i < Sq,
    j < Skv); the causal / window mask applies as well. `offsets(%b0, %h0,
    %i0)` (default 0) is the position of this op's first batch, head and
    query row in a larger problem: what a tile of the op passes so its
    regions still see global indices. On the GPU (`--fat-to-ptx`) the
    regions run in the kernel with 32-bit index arithmetic (positions
    below 2^31); captured tensors must have static shapes (the kernel
    reads them by address, each index clamped into the shape).

    **Key ranges** (block sparsity, FlexAttention's block mask):
    `{kv_ranges = n}` names capture n, a `tensor<B × G × C × i32>` with
    C = 2, 4 or 6 and G = ⌈Sq/64⌉. With r = its row
    `[b, ⌊i/64⌋]`, row i of batch b sees key j iff

    ```
    r0 ≤ j < r1  ∧  mask(b, h, i, j, …)   (∧ causal/window)
    ```

    The mask region must exist; fat-tile passes the attribute to its
    `fat.mask_mod`, whose semantics include the range test, so the CPU
    path runs it too. The GPU kernel visits only the key blocks
    inside the union of its rows' [r0, r1), so a document or prefix mask
    costs the blocks it shows, not the causal triangle. A fourth and third
    column [r2, r3) are the caller's promise that the mask holds on those
    keys for every row of the group and head (FlexAttention's full
    blocks): the kernel may then skip the region on a block inside a
    warpgroup's [r2, r3) ∩ [r0, r1). A fifth and sixth column [r4, r5)
    promise the opposite: no row of the group sees those keys (the gap
    between attention sinks and a sliding window), so the kernel walks
    around the key blocks inside every group's hole of its tile. Where a
    promise is broken the keys seen there are unspecified (fa_t checks a
    table it did not build).

    ```
    s'_ij = score(scale · Σ_d q_id k_jd, b, h, i, j, captures…)
    p_ij  = exp(s'_ij − max_j s'_ij)   over j with mask(b, h, i, j, …) ∧ causal/window
    ```

    Example (tanh soft-capping at 30, ALiBi slopes per head):

    ```mlir
    %o = fat.attention ins(%q, %k, %v : ...) outs(%o0 : ...)
        captures(%slopes : tensor<16xf32>) causal
        score {
        ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index,
             %sl: tensor<16xf32>):
          %c = arith.constant 30.0 : f32
          %t = math.tanh (%s / %c) ...            // 30·tanh(s/30) − slope_h·(i − j)
          fat.yield %r : f32
        } -> tensor<...>
    ```

    Example (GQA with 4 query heads per KV head, causal, with LSE):

    ```mlir
    %o, %lse = fat.attention
        ins(%q, %k, %v : tensor<2x16x4096x128xbf16>, tensor<2x4x4096x128xbf16>,
                         tensor<2x4x4096x128xbf16>)
        outs(%o0 : tensor<2x16x4096x128xbf16>)
        lse(%l0 : tensor<2x16x4096xf32>)
        causal
        -> tensor<2x16x4096x128xbf16>, tensor<2x16x4096xf32>
    ```
  }];

  let arguments = (ins
    AnyShaped:$query,
    AnyShaped:$key,
    AnyShaped:$value,
    AnyShaped:$output,
    Optional<AnyShaped>:$lse,
    Optional<Index>:$diagonal,
    Variadic<Index>:$offsets,
    Variadic<AnyType>:$captures,
    OptionalAttr<F32Attr>:$scale,
    UnitAttr:$causal,
    OptionalAttr<DenseI64ArrayAttr>:$window,
    OptionalAttr<I64Attr>:$kv_ranges,
    DefaultValuedAttr<Fat_Layout, "::mlir::fat::Layout::BHSD">:$layout
  );
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let regions = (region AnyRegion:$score, AnyRegion:$mask);

  let assemblyFormat = [{
    `ins` `(` $query `,` $key `,` $value `:`
              type($query) `,` type($key) `,` type($value) `)`
    `outs` `(` $output `:` type($output) `)`
    (`lse` `(` $lse^ `:` type($lse) `)`)?
    (`diagonal` `(` $diagonal^ `)`)?
    (`offsets` `(` $offsets^ `)`)?
    (`captures` `(` $captures^ `:` type($captures) `)`)?
    (`scale` $scale^)?
    (`causal` $causal^)?
    (`window` $window^)?
    (`layout` `(` $layout^ `)`)?
    (`score` $score^)?
    (`mask` $mask^)?
    attr-dict (`->` type($results)^)?
  }];

  let hasVerifier = 1;

  let extraClassDeclaration = [{
    /// Logical dimension indices of the four-dimensional operands.
    static constexpr unsigned kBatchDim = 0, kHeadDim = 1, kSeqDim = 2,
                              kFeatureDim = 3;

    /// The physical position of logical dimension `logicalDim` (one of the
    /// k*Dim constants) in Q, K, V and O under this op's layout.
    unsigned getPhysicalDim(unsigned logicalDim) {
      return physicalDim(getLayout(), logicalDim);
    }
    static unsigned physicalDim(::mlir::fat::Layout layout,
                                unsigned logicalDim);

    /// The scale applied to Q·Kᵀ: the attribute, else 1/sqrt(D).
    double getEffectiveScale();

    /// Number of query heads sharing one KV head, Hq / Hkv.
    int64_t getGroupSize();

    /// True when a causal or window mask is present.
    bool hasMask() { return getCausal() || getWindow(); }

    /// True when a score or mask region modifies the scores.
    bool hasModifications() {
      return !getScore().empty() || !getMask().empty();
    }

    /// Window bounds; −1 means unbounded on that side.
    int64_t getWindowLeft() { return getWindow() ? (*getWindow())[0] : -1; }
    int64_t getWindowRight() { return getWindow() ? (*getWindow())[1] : -1; }

    /// DestinationStyleOpInterface: the inits are `outs` and `lse`.
    ::mlir::MutableOperandRange getDpsInitsMutable();
  }];
}

def Fat_YieldOp : Fat_Op<"yield", [Pure, Terminator,
    ParentOneOf<["AttentionOp", "ScoreModOp", "MaskModOp",
                 "BiasQueryColumnsOp", "ScoreBandOp", "BandStageOp",
                 "KeyWeightsOp"]>]> {
  let summary = "the value of a score or mask region";
  let description = [{
    Ends the `score` region of `fat.attention` / `fat.score_mod` with the
    modified score (f32), the `mask` region of `fat.attention` /
    `fat.mask_mod` with whether the key stays visible (i1), or the region
    of `fat.bias_query_columns` with the bias factor G (f32).

    ```mlir
    fat.yield %s2 : f32
    ```
  }];
  let arguments = (ins AnyType:$value);
  let assemblyFormat = "$value attr-dict `:` type($value)";
}

include "fa-t/Dialect/Fat/IR/FatTileOps.td"
include "fa-t/Dialect/Fat/IR/FatTensorOps.td"
include "fa-t/Dialect/Fat/IR/FatKernelOps.td"

#endif // FAT_DIALECT_FAT_IR_FATOPS_TD
