//===- Tensorize.cpp - fat-tensorize --------------------------------------===//
//
// `--fat-tensorize`, the FlashAttention-T step: which softmax primitives of
// the online softmax run on the tensor cores or off the per-block vector
// path, recorded in the op's `fat.schedule`:
//
//   rowsum    l += rowsum(P) as 8 ones columns of the P·V wgmma ("mma") or
//             on the vector units ("vector")
//   rescale   O ← α·O every block ("always") or only in warps whose row
//             max grew by more than τ = rescale_threshold ("lazy")
//   exp2_poly the fraction φ of exponentials on the FMA pipe (a polynomial)
//             beside MUFU.EX2
//
// A score region's positive constant output factor then joins the softmax
// constant (foldScoreOutputScale, ScoreScales.cpp).
//
// chooseTensorization (Hopper/CostModel.cpp) is the cost model; every choice
// can be forced with the pass's options for ablation.
//
//===----------------------------------------------------------------------===//

#include "TiledAttention.h"
#include "fa-t/Dialect/Fat/Hopper/KernelModel.h"
#include "fa-t/Dialect/Fat/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/FormatVariadic.h"

namespace mlir {
namespace fat {
#define GEN_PASS_DEF_FATTENSORIZE
#include "fa-t/Dialect/Fat/Transforms/Passes.h.inc"
} // namespace fat
} // namespace mlir

using namespace mlir;
using namespace mlir::fat;

/// Parses `auto` (nullopt) or a fraction in [0, 1].
static FailureOr<std::optional<double>> parseFraction(StringRef value) {
  if (value == "auto")
    return std::optional<double>();
  double fraction;
  if (value.getAsDouble(fraction) || !(fraction >= 0.0 && fraction <= 1.0))
    return failure();
  return std::optional<double>(fraction);
}

namespace {

/// A tiled attention as fat-tensorize's cost model sees it.
struct TiledProblem {
  /// None for head dims the Hopper kernel does not serve (nothing to model).
  std::optional<TileProblem> problem;
  bool writesLse = false;
  int64_t blockM = 0, blockN = 0, stages = 2;
};

/// The scopes holding one tiled attention each: the scf.forall fat-tile
/// made (or, for tiled IR written by hand, the closest isolated op).
SetVector<Operation *> tiledAttentionScopes(Operation *root) {
  SetVector<Operation *> scopes;
  root->walk([&](QKOp qk) {
    Operation *scope = qk->getParentOfType<scf::ForallOp>();
    if (!scope)
      scope = qk->getParentWithTrait<OpTrait::IsIsolatedFromAbove>();
    scopes.insert(scope);
  });
  return scopes;
}

/// Reads the problem off the tiled ops: D from the Q·Kᵀ operands, Dv from
/// the P·V, the mask from fat.mask, whether the LSE is written from
/// fat.finalize, the key length the tiles were chosen for and the K/V ring
/// depth they fit from fat-tile's `fat.tile` record.
TiledProblem readTiledProblem(Operation *scope) {
  TiledProblem tiled;
  TileProblem p;
  scope->walk([&](Operation *op) {
    if (auto qk = dyn_cast<QKOp>(op)) {
      auto s = cast<ShapedType>(qk.getScores().getType());
      p.headDim = cast<ShapedType>(qk.getQuery().getType()).getDimSize(1);
      tiled.blockM = s.getDimSize(0);
      tiled.blockN = s.getDimSize(1);
    } else if (auto pv = dyn_cast<PVOp>(op)) {
      p.headDimV = cast<ShapedType>(pv.getValue().getType()).getDimSize(1);
    } else if (auto fin = dyn_cast<FinalizeOp>(op)) {
      tiled.writesLse |= !fin.getLse().use_empty();
    }
  });
  TiledAttentionFacts facts = readTiledAttentionFacts(scope);
  p.causal = facts.causal;
  // A mask region may hide keys in any block: modeled as a window (the
  // mask the cost model knows whose every block may be partial).
  p.windowed = facts.window.has_value() || facts.maskMod;
  p.seqLen = facts.seqLen;
  tiled.stages = facts.stages;
  if (isSupportedHeadDim(p.headDim) && isSupportedHeadDim(p.headDimV))
    tiled.problem = p;
  return tiled;
}

struct FatTensorizePass
    : public fat::impl::FatTensorizeBase<FatTensorizePass> {
  using Base::Base;
  void runOnOperation() override {
    Operation *root = getOperation();
    std::optional<bool> forceRowsumMma = parseRowsumMma(rowsum);
    std::optional<bool> forceLazyRescale = parseLazyRescale(rescale);
    if (rowsum != "auto" && !forceRowsumMma) {
      root->emitError() << "fat-tensorize: rowsum must be auto, vector or "
                           "mma, got '"
                        << rowsum << "'";
      return signalPassFailure();
    }
    if (rescale != "auto" && !forceLazyRescale) {
      root->emitError() << "fat-tensorize: rescale must be auto, always or "
                           "lazy, got '"
                        << rescale << "'";
      return signalPassFailure();
    }
    if (!(rescaleThreshold >= 0.0 && rescaleThreshold <= 16.0)) {
      root->emitError() << "fat-tensorize: rescale-threshold must be in "
                           "[0, 16] (log2 units), got "
                        << llvm::formatv("{0}", rescaleThreshold).str();
      return signalPassFailure();
    }
    FailureOr<std::optional<double>> forceExp2Poly = parseFraction(exp2Poly);
    if (failed(forceExp2Poly)) {
      root->emitError() << "fat-tensorize: exp2-poly must be auto or a "
                           "fraction in [0, 1], got '"
                        << exp2Poly << "'";
      return signalPassFailure();
    }
    // The cost model's choice with every forced option in its place.
    auto withForced = [&](TensorizationChoice choice) {
      choice.rowsumMma = forceRowsumMma.value_or(choice.rowsumMma);
      choice.lazyRescale = forceLazyRescale.value_or(choice.lazyRescale);
      choice.exp2Poly = forceExp2Poly->value_or(choice.exp2Poly);
      return choice;
    };
    // The tensor-core form is written on tiles: an untiled op has none.
    WalkResult untiled = root->walk([](AttentionOp op) {
      if (op->getParentOfType<scf::ForallOp>())
        return WalkResult::advance();
      op.emitOpError("is not tiled: run --fat-tile first (fat-tensorize "
                     "rewrites the tiled form's KV steps)");
      return WalkResult::interrupt();
    });
    if (untiled.wasInterrupted())
      return signalPassFailure();
    Builder b(&getContext());
    // Per tiled attention: the cost model's choice on the problem read off
    // its tiles, rewritten into ops.
    for (Operation *scope : tiledAttentionScopes(root)) {
      TiledProblem tiled = readTiledProblem(scope);
      TensorizationChoice choice;
      if (tiled.problem) {
        HopperKernelOptions target;
        target.blockM = tiled.blockM;
        target.blockN = tiled.blockN;
        target.stages = tiled.stages;
        target.seqLen = tiled.problem->seqLen;
        choice = chooseTensorization(*tiled.problem, tiled.writesLse, target);
      }
      // Entries already on the loop (a schedule written by hand on the op,
      // which fat-tile carries) stand unless an option forces another.
      HopperKernelOptions written;
      if (failed(applyScheduleAttr(scope, scope->getAttr(kScheduleAttrName),
                                   written)))
        return signalPassFailure();
      auto dict = scope->getAttrOfType<DictionaryAttr>(kScheduleAttrName);
      choice = keepWrittenPrimitives(choice, written.schedule, dict);
      double threshold = rescaleThreshold;
      if (dict && dict.get("rescale_threshold") && !rescaleThreshold.hasValue())
        threshold = written.schedule.rescaleThreshold;
      if (!(threshold >= 0.0 && threshold <= 16.0)) {
        scope->emitError()
            << "rescale-threshold must be in [0, 16] (log2 units: P may "
               "reach 2^threshold), got "
            << llvm::formatv("{0}", threshold).str();
        return signalPassFailure();
      }
      choice = withForced(choice);
      // The choice as made, on the loop it rewrote: fat-pipeline builds
      // the kernel of these ops and reads whether they were forced.
      updateSchedule(
          scope,
          {b.getNamedAttr("rowsum",
                          b.getStringAttr(rowsumName(choice.rowsumMma))),
           b.getNamedAttr("rescale",
                          b.getStringAttr(rescaleName(choice.lazyRescale))),
           b.getNamedAttr("rescale_threshold", b.getF64FloatAttr(threshold)),
           b.getNamedAttr("exp2_poly", b.getF64FloatAttr(choice.exp2Poly))},
          /*forced=*/forceRowsumMma || forceLazyRescale || *forceExp2Poly);
      TileTensorization rewrite;
      rewrite.rowsumMma = choice.rowsumMma;
      rewrite.lazyRescale = choice.lazyRescale;
      rewrite.rescaleThreshold = threshold;
      rewrite.exp2Poly = choice.exp2Poly;
      if (failed(checkTensorizableTiles(scope, rewrite)))
        return signalPassFailure();
      RewritePatternSet patterns(&getContext());
      populateFatTensorizeTilePatterns(patterns, rewrite);
      if (failed(applyPatternsGreedily(scope, std::move(patterns))))
        return signalPassFailure();
      WalkResult left = scope->walk([](Operation *op) {
        if (!isa<QKOp, PVOp, RowSumOp, RowMaxOp, Exp2Op>(op))
          return WalkResult::advance();
        op->emitError() << "fat-tensorize: this " << op->getName()
                        << " is not part of a KV step as fat-tile writes it "
                           "(row_max, exp2 of P and α, row_sum, pv), so it "
                           "has no tensor-core form";
        return WalkResult::interrupt();
      });
      if (left.wasInterrupted())
        return signalPassFailure();
      foldScoreOutputScale(scope);
    }
  }
};

} // namespace
