//===- FatTransformOps.td - transform-dialect ops of fat ---*- tablegen -*-===//
//
// The steps a framework may want to drive from a transform script instead of
// a pass pipeline (upstream's NVGPUTransformOps.td is the model).
//
//===----------------------------------------------------------------------===//

#ifndef FAT_DIALECT_FAT_TRANSFORMOPS_FATTRANSFORMOPS_TD
#define FAT_DIALECT_FAT_TRANSFORMOPS_FATTRANSFORMOPS_TD

include "mlir/Dialect/Transform/IR/TransformDialect.td"
include "mlir/Dialect/Transform/Interfaces/TransformInterfaces.td"
include "mlir/Dialect/Transform/IR/TransformTypes.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def TileAttentionOp : Op<Transform_Dialect, "fat.tile_attention",
    [FunctionalStyleTransformOpTrait, MemoryEffectsOpInterface,
     TransformEachOpTrait, TransformOpInterface,
     ReportTrackingListenerFailuresOpTrait]> {
  let summary = "Tile fat.attention into the online-softmax KV loop (--fat-tile)";
  let description = [{
    Rewrites each targeted `fat.attention` exactly as `--fat-tile` does
    (Tile.cpp, `tileAttention`): an `scf.forall` over (batch, query head,
    block of `block_m` query rows) whose body runs the online softmax over
    blocks of `block_n` keys in fat tile ops,

    ```
    S = Q_blk·K_jᵀ   m' = max(m, rowmax S)   P = exp2(c·(S − m'))
    α = exp2(c·(m − m'))   l' = α·l + rowsum P   O' = α·O + P·V_j
    ```

    with the KV range split into masked edge blocks and unmasked ones, and
    the forall tagged `fat.tile = {block_m, block_n, seq_len}`. A memref-form
    op is first rewritten to the tensor form between `to_tensor` and
    `materialize_in_destination`.

    #### Return modes

    Consumes the target handle (fat.attention ops) and returns a handle to
    the `scf.forall` made for each (for an op with statically no keys, the
    `linalg.fill` of O = 0 that replaces it). A target that is not a
    `fat.attention` is a silenceable failure; a tiling that fails after
    rewriting part of the IR is a definite one. Sizes must be in [1, 1024].

    ```mlir
    %forall = transform.fat.tile_attention %attn tile_sizes [128, 64]
        : (!transform.any_op) -> !transform.any_op
    ```
  }];
  let arguments = (ins TransformHandleTypeInterface:$target,
                   DenseI64ArrayAttr:$tile_sizes);
  let results = (outs TransformHandleTypeInterface:$result);
  let assemblyFormat = [{
    $target `tile_sizes` $tile_sizes attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::DiagnosedSilenceableFailure applyToOne(
        ::mlir::transform::TransformRewriter &rewriter,
        ::mlir::Operation *target,
        ::mlir::transform::ApplyToEachResultList &results,
        ::mlir::transform::TransformState &state);
  }];
}

#endif // FAT_DIALECT_FAT_TRANSFORMOPS_FATTRANSFORMOPS_TD
