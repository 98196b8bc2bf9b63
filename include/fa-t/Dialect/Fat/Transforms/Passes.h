//===- Passes.h - fat dialect passes ----------------------------*- C++ -*-===//
#ifndef FAT_DIALECT_FAT_TRANSFORMS_PASSES_H
#define FAT_DIALECT_FAT_TRANSFORMS_PASSES_H

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Pass/Pass.h"

namespace mlir {
class RewritePatternSet;
namespace fat {

#define GEN_PASS_DECL
#include "fa-t/Dialect/Fat/Transforms/Passes.h.inc"

/// Tile sizes of the online-softmax decomposition.
struct AttentionTileSizes {
  int64_t blockM = 128;
  int64_t blockN = 128;
};

/// fat.attention (memref form) -> tensor form between to_tensor and
/// materialize_in_destination, so that tiling sees one form.
void populateFatAttentionToTensorPatterns(RewritePatternSet &patterns);

/// fat.attention (tensor form) -> scf.forall over (B, Hq, Sq/blockM) of the
/// online-softmax KV loop written in fat tile ops.
void populateFatTilePatterns(RewritePatternSet &patterns,
                             const AttentionTileSizes &sizes);

/// fat tile ops -> linalg.generic with arith/math bodies.
void populateFatDecomposePatterns(RewritePatternSet &patterns);

/// linalg attention (Q·Kᵀ, scale, causal mask, softmax, ·V on tensors) ->
/// fat.attention, rooted at the P·V contraction.
void populateFatRaiseAttentionPatterns(RewritePatternSet &patterns);

/// Registers the named pipelines (`fat-to-cpu`).
void registerFatPipelines();

#define GEN_PASS_REGISTRATION
#include "fa-t/Dialect/Fat/Transforms/Passes.h.inc"

} // namespace fat
} // namespace mlir

#endif // FAT_DIALECT_FAT_TRANSFORMS_PASSES_H
