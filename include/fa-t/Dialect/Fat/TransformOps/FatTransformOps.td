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

def PipelineLoopOp : Op<Transform_Dialect, "fat.pipeline_loop",
    [FunctionalStyleTransformOpTrait, MemoryEffectsOpInterface,
     TransformEachOpTrait, TransformOpInterface,
     ReportTrackingListenerFailuresOpTrait]> {
  let summary = "Expand an scf.for into the two-stage software pipeline its "
                "ops' stages describe";
  let description = [{
    The expansion `--fat-pipeline` gives the consumer's key-block loop
    (LoopPipeline, SoftwarePipeline.h), on any `scf.for` whose body ops
    carry `fat.pipeline_stage` (0 or 1) and `fat.pipeline_cluster` (an
    integer; clusters run in increasing order, an op keeps its place in the
    body inside its cluster). For a loop over [lb, ub) with step s:

    ```
    if lb < ub:
      stage 0 of lb                                      (prologue)
      for j in [lb + s, ub): stage 0 of j, stage 1 of j − s
                                                         (steady loop)
      stage 1 of the last iteration                      (drain)
    else: the loop's init values
    ```

    A stage-0 value stage 1 reads is carried one iteration by the steady
    loop, except index arithmetic of the induction variable, which is
    recomputed at j − s (as j's value − s where it is j plus loop
    invariants). A carried value stage 1 computes and stage 0 reads (the
    online softmax's O: α·O in stage 0, + P·V in stage 1) is carried as
    the stage-0 value on its chain. The schedule is trusted with what the
    IR does not show: memory an op of stage 1 writes and the next
    iteration's stage 0 reads (as upstream's `scf::pipelineForLoop`).

    #### Return modes

    Consumes the target handle and returns a handle to the steady loop. A
    target that is not an `scf.for` is a silenceable failure; a schedule
    the expansion cannot run (an op without a stage, stage 0 reading stage
    1 of its own iteration, an op placed before what it reads) is a
    definite one, with an error on the op.

    ```mlir
    %steady = transform.fat.pipeline_loop %for
        : (!transform.any_op) -> !transform.any_op
    ```
  }];
  let arguments = (ins TransformHandleTypeInterface:$target);
  let results = (outs TransformHandleTypeInterface:$result);
  let assemblyFormat = [{
    $target attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    ::mlir::DiagnosedSilenceableFailure applyToOne(
        ::mlir::transform::TransformRewriter &rewriter,
        ::mlir::Operation *target,
        ::mlir::transform::ApplyToEachResultList &results,
        ::mlir::transform::TransformState &state);
  }];
}

#endif // FAT_DIALECT_FAT_TRANSFORMOPS_FATTRANSFORMOPS_TD
