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
    need one. Blocks no row can see are never visited. Ragged Q and KV tails
    are padded with zeros inside the tile and predicated by `fat.mask`
    (`kv_len`); only the real rows are written back. Query head h reads KV
    head h / (Hq / Hkv). The memref form is first rewritten to the tensor
    form (to_tensor / materialize_in_destination).

    Example: `fa-t-opt --fat-tile="block-m=64 block-n=32" in.mlir`
  }];
  let options = [
    Option<"blockM", "block-m", "int64_t", /*default=*/"128",
           "Query rows per tile (the M of both GEMMs)">,
    Option<"blockN", "block-n", "int64_t", /*default=*/"128",
           "Keys per inner-loop iteration (the N of Q·Kᵀ, the K of P·V)">
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
    in f32 scalar arithmetic. This is the target-independent reference
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

#endif // FAT_DIALECT_FAT_TRANSFORMS_PASSES_TD
