//===- Passes.h - fat dialect passes ----------------------------*- C++ -*-===//
#ifndef FAT_DIALECT_FAT_TRANSFORMS_PASSES_H
#define FAT_DIALECT_FAT_TRANSFORMS_PASSES_H

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Pass/Pass.h"

namespace mlir {
class RewritePatternSet;
class RewriterBase;
namespace fat {
class AttentionOp;

#define GEN_PASS_DECL
#include "fa-t/Dialect/Fat/Transforms/Passes.h.inc"

/// Tile sizes of the online-softmax decomposition. A block size of 0 is
/// the Hopper kernel's (chooseKernelBlocks: the cost models' kernel for
/// the op), or 128 for an op that kernel does not serve; `stages` and
/// `seqLen` are what that choice is fitted to: the depth of the kernel's
/// K/V ring (the blocks must fit in shared memory beside it) and the key
/// length to tune for (0 = the op's static key length).
struct AttentionTileSizes {
  int64_t blockM = 128;
  int64_t blockN = 128;
  /// 0: the op's `stages` schedule entry, else 2.
  int64_t stages = 0;
  int64_t seqLen = 0;
};

/// What fat-tile records on each scf.forall it makes: {block_m, block_n,
/// stages, seq_len} (seq_len: the key length the tiles were chosen for —
/// the seq-len option, else the static key length, 0 when dynamic).
/// fat-tensorize's and fat-pipeline's cost models read it.
constexpr llvm::StringLiteral kTileAttrName = "fat.tile";

/// fat.attention (memref form) -> tensor form between to_tensor and
/// materialize_in_destination, so that tiling sees one form.
void populateFatAttentionToTensorPatterns(RewritePatternSet &patterns);

/// The same rewrite of one op; returns the tensor-form op (`op` itself when
/// it already is one).
AttentionOp convertAttentionToTensorForm(RewriterBase &rewriter, AttentionOp op);

/// Tiles one fat.attention (tensor form) into the scf.forall of KV loops
/// that --fat-tile writes and returns the forall (with Skv statically 0:
/// the fill of O = 0, as there is nothing to tile). Fails, leaving the IR
/// unchanged, on the memref form or when TilingInterface tiling fails.
FailureOr<Operation *> tileAttention(RewriterBase &rewriter, AttentionOp op,
                                     const AttentionTileSizes &sizes);

/// fat.attention (tensor form) -> scf.forall over (B, Hq, Sq/blockM) of the
/// online-softmax KV loop written in fat tile ops.
void populateFatTilePatterns(RewritePatternSet &patterns,
                             const AttentionTileSizes &sizes);

/// How the tiled online softmax runs on the Hopper kernel: --fat-tensorize's
/// choice (its cost model lives with the kernel, Hopper/Model/CostModel.cpp), which the
/// rewrite below turns into ops.
struct TileTensorization {
  /// Ones columns appended to V for rowsum=mma: the narrowest wgmma N step.
  static constexpr int64_t kOnesColumns = 8;
  /// l = P·1 by the P·V wgmma (true) or on the vector units.
  bool rowsumMma = false;
  /// Move a row's reference max only when it grows by more than
  /// rescaleThreshold (log2 units).
  bool lazyRescale = false;
  double rescaleThreshold = 8.0;
  /// Fraction of the exponentials on the FMA pipe.
  double exp2Poly = 0.0;
};

/// The KV steps of the tiled form -> the tensorized level (FatTensorOps.td):
/// fat.wgmma, fat.softmax_max, fat.softmax_exp as `choice` says.
void populateFatTensorizeTilePatterns(RewritePatternSet &patterns,
                                      const TileTensorization &choice);

/// fat.score_mod {s + G·(j − i)} (G free of the score and the positions)
/// on a tensorized Q·Kᵀ → one wgmma on [Q | fat.bias_query_columns] ·
/// [K | fat.bias_key_columns]ᵀ, the softmax constant times the scale
/// (TensorizeBias.cpp). Only for kernels that write no LSE: the scores
/// miss one constant per row.
void populateLinearBiasTensorCorePatterns(RewritePatternSet &patterns);

/// fat.score_mod {s + G·(j − i)} on a tensorized Q·Kᵀ whose P·V reads
/// [V | ones] (rowsum=mma) → fat.key_weights on those rows, the softmax
/// reading the unscaled scores with the key block's offset
/// (TensorizeBias.cpp). Only for kernels that write no LSE.
void populateLinearBiasWeightPatterns(RewritePatternSet &patterns);

/// fat.score_mod {s + T(b, h, j − i)} (T free of the score, the row and key
/// only as their difference) on a tensorized Q·Kᵀ → Q·Kᵀ accumulated onto
/// fat.score_band (T / scale), the softmax constant times the scale
/// (TensorizeBias.cpp).
void populateRelativeBiasAccumulatorPatterns(RewritePatternSet &patterns);

/// Emits an error at the first tile op under `scope` whose shape warpgroup
/// MMA cannot take under `choice` (rows a multiple of 64, keys and D of 16,
/// Dv (+ 8 ones columns) of 8, f16/bf16 operands) and fails; else succeeds.
LogicalResult checkTensorizableTiles(Operation *scope,
                                     const TileTensorization &choice);

/// A score region s' = A·g(·) with a constant A > 0 under `scope` (one
/// tensorized attention): A moves into the softmax constant of its
/// fat.softmax_max / fat.softmax_exp and fat.finalize's scale, and the
/// region yields g(·). Leaves the IR alone where any score does not end so
/// or reaches anything but masks and the softmax.
void foldScoreOutputScale(Operation *scope);

/// [L, U] of the visible scores of a tile where a score region bounds them
/// (through fat.mask / fat.mask_mod, which only hide scores); nullopt where
/// its output is not provably bounded (BoundRowMax.cpp).
std::optional<std::pair<double, double>> boundedScoreRange(Value scores);
/// fat.softmax_max on bounded scores (c·(U − L) ≤ kMaxBoundSpan) → the
/// constant reference U, α = 1: the rescales of O and l and the row sums'
/// α go with it (`--fat-tensorize row-max=bound`).
void populateBoundRowMaxPatterns(RewritePatternSet &patterns);

/// The mask's geometry over key blocks (fat.visible_key_blocks,
/// fat.first_masked_key_block, fat.key_block_needs_mask) as arith on the
/// op's integer type, `operands` in place of its own (a conversion's
/// adaptor); returns the values replacing its results.
SmallVector<Value> expandKeyGeometry(OpBuilder &builder, Operation *op,
                                     ValueRange operands);
/// Those ops expanded where they are (the tiled form's, on index).
void populateKeyGeometryExpansionPatterns(RewritePatternSet &patterns);

/// fat.score_mod on a tile scaled by a splat (the kernel's run-time scale)
/// whose region first multiplies the score by a constant: the constant
/// joins the splat. Not a canonicalization: on the tiled and tensorized
/// forms fat-pipeline replaces the op's scale by the kernel's.
void populateScoreInputScalePatterns(RewritePatternSet &patterns);

/// fat.score_mod whose region adds ±B·float(i − j) last, with B free of
/// the score and the positions (ALiBi): rows_at_origin. Only for a kernel
/// that writes no LSE (each row's scores shift by a constant, which O does
/// not see and the LSE would).
void populateScoreRowsAtOriginPatterns(RewritePatternSet &patterns);

/// fat.score_mod in a Hopper kernel: `contract` on the multiply scaling its
/// tile and on the region's arithmetic, `afn` on its math.tanh when
/// `approximateTanh` (bf16 kernels).
void populateModificationFastMathPatterns(RewritePatternSet &patterns,
                                          bool approximateTanh);

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
