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

#endif // FAT_DIALECT_FAT_TRANSFORMS_PASSES_TD
