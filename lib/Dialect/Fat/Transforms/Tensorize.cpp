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
//   row_max   the softmax reference: the running row maximum ("online") or
//             a bounded score region's bound ("bound", BoundRowMax.cpp)
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
  /// Q's element type (null without a fat.qk).
  Type element;
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
  ScoreModOp scoreMod;
  Type element;
  scope->walk([&](Operation *op) {
    if (auto qk = dyn_cast<QKOp>(op)) {
      auto s = cast<ShapedType>(qk.getScores().getType());
      p.headDim = cast<ShapedType>(qk.getQuery().getType()).getDimSize(1);
      element = cast<ShapedType>(qk.getQuery().getType()).getElementType();
      tiled.blockM = s.getDimSize(0);
      tiled.blockN = s.getDimSize(1);
    } else if (auto pv = dyn_cast<PVOp>(op)) {
      p.headDimV = cast<ShapedType>(pv.getValue().getType()).getDimSize(1);
    } else if (auto fin = dyn_cast<FinalizeOp>(op)) {
      tiled.writesLse |= !fin.getLse().use_empty();
    } else if (auto mod = dyn_cast<ScoreModOp>(op)) {
      scoreMod = mod;
    }
  });
  tiled.element = element;
  TiledAttentionFacts facts = readTiledAttentionFacts(scope);
  p.causal = facts.causal;
  // A mask region may hide keys in any block: modeled as a window (the
  // mask the cost model knows whose every block may be partial).
  p.windowed = facts.window.has_value() || facts.maskMod;
  p.seqLen = facts.seqLen;
  p.boundedScores =
      scoreMod && element && boundsScores(scoreMod.getBody(), element);
  p.linearBias = scoreMod && isLinearBias(scoreMod.getBody(), element);
  p.positional = facts.positional;
  p.positionalMask = facts.positionalMask;
  p.dataBlocks = facts.dataBlocks;
  p.writesLse = tiled.writesLse;
  tiled.stages = facts.stages;
  if (isSupportedHeadDim(p.headDim) && isSupportedHeadDim(p.headDimV))
    tiled.problem = p;
  return tiled;
}

/// The softmax constant c of `max` (a compile-time constant after
/// fat-tensorize), 0 if it is not one.
double softmaxConstant(SoftmaxMaxOp max) {
  FloatAttr c;
  return matchPattern(max.getScale(), m_Constant(&c)) ? c.getValueAsDouble()
                                                      : 0.0;
}

/// Applies one of fat-tensorize's pattern sets to `scope`. A set that does
/// not converge is a bug in its patterns (one that changes the IR and then
/// fails): an error naming the set, never a silent failure.
LogicalResult applyTensorizePatterns(Operation *scope,
                                     RewritePatternSet &&patterns,
                                     StringRef what) {
  if (succeeded(applyPatternsGreedily(scope, std::move(patterns))))
    return success();
  return scope->emitError("fat-tensorize: the ")
         << what << " rewrite did not converge (a compiler bug)";
}

/// row-max=bound on one tiled attention: each fat.softmax_max on bounded
/// scores becomes the constant reference; one left is an error naming why.
LogicalResult takeBoundReference(Operation *scope) {
  // P is rounded to the inputs' type for the P·V: f16 keeps it normal only
  // down to 2^−14, far above the bound's smallest P.
  WalkResult f16 = scope->walk([](arith::TruncFOp round) {
    if (!getElementTypeOrSelf(round.getType()).isF16())
      return WalkResult::advance();
    round.emitError("fat-tensorize: row-max=bound needs bf16 inputs: P, "
                    "rounded to f16 for the P·V, is normal only down to "
                    "2^-14, and the bound's P go down to 2^-96");
    return WalkResult::interrupt();
  });
  if (f16.wasInterrupted())
    return failure();
  RewritePatternSet patterns(scope->getContext());
  populateBoundRowMaxPatterns(patterns);
  if (failed(
          applyTensorizePatterns(scope, std::move(patterns), "row-max=bound")))
    return failure();
  WalkResult left = scope->walk([](SoftmaxMaxOp max) {
    InFlightDiagnostic diag = max.emitError("fat-tensorize: row-max=bound ");
    std::optional<std::pair<double, double>> range =
        boundedScoreRange(max.getScores());
    if (!range)
      diag << "needs a score region whose output is bounded (constants, "
              "tanh, and their sums and constant multiples), so that the "
              "bound can stand for every row's maximum";
    else
      diag << llvm::formatv(
          "needs c·(U − L) <= {0} (the smallest P stays a normal number); "
          "this region's scores lie in [{1:f1}, {2:f1}], c·(U − L) = {3:f1}",
          int64_t(kMaxBoundSpan), range->first, range->second,
          softmaxConstant(max) * (range->second - range->first));
    return WalkResult::interrupt();
  });
  return failure(left.wasInterrupted());
}

/// The LSE's factor on m (fat.finalize's scale) of every finalize under
/// `scope` times `scale`: the scores became unscaled.
void scaleLseFactor(Operation *scope, double scale) {
  Builder b(scope->getContext());
  scope->walk([&](FinalizeOp fin) {
    if (std::optional<APFloat> old = fin.getScale())
      fin.setScaleAttr(b.getF32FloatAttr(
          static_cast<float>(old->convertToDouble() * scale)));
  });
}

/// linear-bias=mma: every score region of `scope` as the bias columns of
/// Q·Kᵀ (TensorizeBias.cpp), recorded as `linear_bias = "mma"`; an error
/// where the kernel writes the LSE or a region is not s + G·(j − i).
LogicalResult takeLinearBiasOnTensorCores(Operation *scope,
                                          const TiledProblem &tiled,
                                          bool forced) {
  ScoreModOp first;
  scope->walk([&](ScoreModOp mod) { first = first ? first : mod; });
  if (!first)
    return scope->emitError("fat-tensorize: linear-bias=mma needs a score "
                            "region s + G·(j − i); this attention has none");
  // The query columns hold G/scale and G/scale·(kv_start − q_start)/256 in
  // the inputs' type: bf16 has f32's range, f16 overflows at 65504 (a
  // slope of 1 at D = 128 past 1.5k keys).
  if (tiled.element && tiled.element.isF16())
    return first.emitError(
        "fat-tensorize: linear-bias=mma needs bf16 inputs: its query columns "
        "hold G/scale times key offsets, which overflow f16 (65504) where "
        "bf16 has f32's range");
  if (tiled.writesLse)
    return first.emitError(
        "fat-tensorize: linear-bias=mma needs a kernel that writes no LSE: "
        "the biased scores miss G·(i − q_start), one constant per row, "
        "which O does not see and the LSE would");
  // The scores become unscaled (the region received scale·s): the LSE's
  // factor on m, fat.finalize's scale, takes the scale too.
  double scale = first.getScale().convertToDouble();
  RewritePatternSet patterns(scope->getContext());
  populateLinearBiasTensorCorePatterns(patterns);
  if (failed(applyTensorizePatterns(scope, std::move(patterns),
                                    "linear-bias=mma")))
    return failure();
  WalkResult left = scope->walk([](ScoreModOp mod) {
    mod.emitError("fat-tensorize: linear-bias=mma needs the score region "
                  "to be s + G·(j − i) with G reading neither the score nor "
                  "the positions (ALiBi), on the scores of Q·Kᵀ read only "
                  "by masks and the softmax");
    return WalkResult::interrupt();
  });
  if (left.wasInterrupted())
    return failure();
  scaleLseFactor(scope, scale);
  Builder b(scope->getContext());
  updateSchedule(scope, {b.getNamedAttr("linear_bias", b.getStringAttr("mma"))},
                 forced);
  return success();
}

/// linear-bias=weights: every score region of `scope` as fat.key_weights
/// on P·V's [V | ones] and the runs' offsets in the softmax
/// (TensorizeBias.cpp), recorded as `linear_bias = "weights"`. Forced, an
/// error where it does not apply; the cost model's choice (the problem
/// already checked, linearBiasAsWeights) leaves a region it cannot take —
/// a constant G past the exact spread — to the vector form.
LogicalResult takeLinearBiasWeights(Operation *scope, const TiledProblem &tiled,
                                    bool forced) {
  ScoreModOp first;
  scope->walk([&](ScoreModOp mod) { first = first ? first : mod; });
  if (!first)
    return scope->emitError("fat-tensorize: linear-bias=weights needs a "
                            "score region s + G·(j − i); this attention has "
                            "none");
  if (tiled.element && !tiled.element.isBF16())
    return first.emitError(
        "fat-tensorize: linear-bias=weights needs bf16 inputs: the weights "
        "e^(G·(k − (N−1)/2)) scale V's rows, which overflow f16 (65504)");
  if (tiled.writesLse)
    return first.emitError(
        "fat-tensorize: linear-bias=weights needs a kernel that writes no "
        "LSE: the weighted scores miss G·i, one constant per row, which O "
        "does not see and the LSE would");
  double scale = first.getScale().convertToDouble();
  RewritePatternSet patterns(scope->getContext());
  populateLinearBiasWeightPatterns(patterns);
  if (failed(applyTensorizePatterns(scope, std::move(patterns),
                                    "linear-bias=weights")))
    return failure();
  bool taken = false;
  scope->walk([&](KeyWeightsOp) { taken = true; });
  if (!forced && !taken)
    return success();
  WalkResult left = scope->walk([](ScoreModOp mod) {
    mod.emitError() << "fat-tensorize: linear-bias=weights needs the score "
                       "region to be s + G·(j − i) with G reading neither the "
                       "score nor the positions (ALiBi) and, where G is a "
                       "constant, |G|·(N − 1)/2 ≤ "
                    << KeyWeightsOp::kMaxSpread
                    << " for N keys per block; on the scores of Q·Kᵀ read "
                       "only by masks and the softmax, whose P·V reads [V | "
                       "ones] (rowsum=mma)";
    return WalkResult::interrupt();
  });
  if (left.wasInterrupted())
    return failure();
  scaleLseFactor(scope, scale);
  Builder b(scope->getContext());
  updateSchedule(scope,
                 {b.getNamedAttr("linear_bias", b.getStringAttr("weights"))},
                 forced);
  return success();
}

/// relative-bias=accumulator: every score region s ± T(b, h, j − i) of
/// `scope` as Q·Kᵀ's accumulator (TensorizeBias.cpp), recorded as
/// `relative_bias = "accumulator"`; forced, an error where a region is not
/// of that form.
LogicalResult takeRelativeBiasAccumulator(Operation *scope, bool forced) {
  ScoreModOp first;
  scope->walk([&](ScoreModOp mod) { first = first ? first : mod; });
  if (!first) {
    if (!forced)
      return success();
    // linear-bias=mma (run before) may have taken the region already.
    bool columns = false;
    scope->walk([&](BiasQueryColumnsOp) { columns = true; });
    if (columns)
      return scope->emitError(
          "fat-tensorize: relative-bias=accumulator: linear-bias=mma has "
          "taken the score region onto Q·Kᵀ's extra columns; pass "
          "linear-bias=vector to have the accumulator take it");
    return scope->emitError("fat-tensorize: relative-bias=accumulator needs "
                            "a score region s ± T(b, h, j − i); this "
                            "attention has none");
  }
  double scale = first.getScale().convertToDouble();
  RewritePatternSet patterns(scope->getContext());
  populateRelativeBiasAccumulatorPatterns(patterns);
  if (failed(applyTensorizePatterns(scope, std::move(patterns),
                                    "relative-bias=accumulator")))
    return failure();
  ScoreModOp left;
  scope->walk([&](ScoreModOp mod) { left = left ? left : mod; });
  if (left) {
    if (!forced)
      return success();
    return left.emitError(
        "fat-tensorize: relative-bias=accumulator needs the score region to "
        "be s ± T with T reading neither the score nor the row and key other "
        "than as their difference j − i, on the scores of Q·Kᵀ read only by "
        "masks and the softmax");
  }
  scaleLseFactor(scope, scale);
  Builder b(scope->getContext());
  updateSchedule(
      scope, {b.getNamedAttr("relative_bias", b.getStringAttr("accumulator"))},
      forced);
  return success();
}

struct FatTensorizePass
    : public fat::impl::FatTensorizeBase<FatTensorizePass> {
  using Base::Base;
  void runOnOperation() override {
    Operation *root = getOperation();
    // A two-word option: nullopt for auto; an error naming the words for
    // anything else.
    auto parseChoice = [&](StringRef option, StringRef value,
                           function_ref<StringRef(bool)> name)
        -> FailureOr<std::optional<bool>> {
      std::optional<bool> choice = parseWord(value, name);
      if (value == "auto" || choice)
        return choice;
      return root->emitError()
             << "fat-tensorize: " << option << " must be auto, " << name(false)
             << " or " << name(true) << ", got '" << value << "'";
    };
    FailureOr<std::optional<bool>> rowsumOpt =
        parseChoice("rowsum", rowsum, rowsumName);
    FailureOr<std::optional<bool>> rescaleOpt =
        parseChoice("rescale", rescale, rescaleName);
    FailureOr<std::optional<bool>> rowMaxOpt =
        parseChoice("row-max", rowMax, rowMaxName);
    // linear-bias: the words of rowsum, "vector" | "mma", or "weights"
    // (not the columns: the weights on P·V's B rows, which need rowsum=mma).
    bool linearBiasWeights = linearBias == "weights";
    if (linearBias != "auto" && !linearBiasWeights &&
        !parseWord(linearBias, rowsumName)) {
      root->emitError() << "fat-tensorize: linear-bias must be auto, vector, "
                           "mma or weights, got '"
                        << linearBias << "'";
      return signalPassFailure();
    }
    FailureOr<std::optional<bool>> linearBiasOpt =
        linearBiasWeights
            ? FailureOr<std::optional<bool>>(std::optional<bool>(false))
            : parseChoice("linear-bias", linearBias, rowsumName);
    FailureOr<std::optional<bool>> relativeBiasOpt =
        parseChoice("relative-bias", relativeBias, relativeBiasName);
    if (failed(rowsumOpt) || failed(rescaleOpt) || failed(rowMaxOpt) ||
        failed(linearBiasOpt) || failed(relativeBiasOpt))
      return signalPassFailure();
    std::optional<bool> forceRowsumMma = *rowsumOpt,
                        forceLazyRescale = *rescaleOpt,
                        forceBoundMax = *rowMaxOpt;
    if (linearBiasWeights) {
      if (forceRowsumMma == false) {
        root->emitError() << "fat-tensorize: linear-bias=weights needs "
                             "rowsum=mma (the ones columns carry the weights "
                             "into the row sums), got rowsum=vector";
        return signalPassFailure();
      }
      forceRowsumMma = true;
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
    std::optional<bool> forceTanhPoly;
    if (tanhPoly == "on" || tanhPoly == "off")
      forceTanhPoly = tanhPoly == "on";
    else if (tanhPoly != "auto") {
      root->emitError() << "fat-tensorize: tanh-poly must be auto, on or off, "
                           "got '"
                        << tanhPoly << "'";
      return signalPassFailure();
    }
    // The cost model's choice with every forced option in its place.
    auto withForced = [&](TensorizationChoice choice) {
      choice.tanhPoly = forceTanhPoly.value_or(choice.tanhPoly);
      choice.boundMax = forceBoundMax.value_or(choice.boundMax);
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
      // Entries already on the loop (a schedule written by hand on the op,
      // which fat-tile carries) stand unless an option forces another.
      HopperKernelOptions written;
      if (failed(applyScheduleAttr(scope, scope->getAttr(kScheduleAttrName),
                                   written)))
        return signalPassFailure();
      auto dict = scope->getAttrOfType<DictionaryAttr>(kScheduleAttrName);
      TiledProblem tiled = readTiledProblem(scope);
      TensorizationChoice choice =
          keepWrittenPrimitives({}, written.schedule, dict);
      if (tiled.problem) {
        HopperKernelOptions target;
        target.blockM = tiled.blockM;
        target.blockN = tiled.blockN;
        target.stages = tiled.stages;
        target.seqLen = tiled.problem->seqLen;
        choice = decideTensorization(*tiled.problem, target, written.schedule,
                                     dict, forceBoundMax);
      }
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
           b.getNamedAttr("exp2_poly", b.getF64FloatAttr(choice.exp2Poly)),
           b.getNamedAttr("row_max",
                          b.getStringAttr(rowMaxName(choice.boundMax)))},
          /*forced=*/forceRowsumMma || forceLazyRescale || *forceExp2Poly ||
              forceBoundMax ||
              // linear-bias decides only for a linear bias region.
              (linearBiasOpt->has_value() && tiled.problem &&
               tiled.problem->linearBias));
      TileTensorization rewrite;
      rewrite.rowsumMma = choice.rowsumMma;
      rewrite.lazyRescale = choice.lazyRescale;
      rewrite.rescaleThreshold = threshold;
      rewrite.exp2Poly = choice.exp2Poly;
      if (failed(checkTensorizableTiles(scope, rewrite)))
        return signalPassFailure();
      RewritePatternSet patterns(&getContext());
      populateFatTensorizeTilePatterns(patterns, rewrite);
      if (failed(applyTensorizePatterns(scope, std::move(patterns),
                                        "tile tensorization")))
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
      if (choice.boundMax && failed(takeBoundReference(scope)))
        return signalPassFailure();
      // The tanh on the FMA pipe, where the region's tanh arguments come
      // from the score alone (a warp's vote needs them before the region).
      // Recorded where taken, as the bias forms are; tanh-poly decides only
      // for such a region.
      SmallVector<ScoreModOp> tanhOfScore;
      scope->walk([&](ScoreModOp mod) {
        if (!mod.getTanhArgumentSlice().empty())
          tanhOfScore.push_back(mod);
      });
      if (!tanhOfScore.empty()) {
        SmallVector<NamedAttribute> taken;
        if (choice.tanhPoly) {
          for (ScoreModOp mod : tanhOfScore)
            mod.setTanhPoly(true);
          taken.push_back(b.getNamedAttr("tanh_poly", b.getBoolAttr(true)));
        }
        updateSchedule(scope, taken, /*forced=*/forceTanhPoly.has_value());
      }
      // The bias columns: forced, written by hand on the op, or the cost
      // model's (a linear bias without an LSE).
      if (linearBiasOpt->value_or(choice.linearBiasMma) &&
          failed(takeLinearBiasOnTensorCores(
              scope, tiled,
              /*forced=*/linearBiasOpt->has_value())))
        return signalPassFailure();
      // The weights on P: forced, or the cost model's where the ones columns
      // stand (a forced rowsum=vector leaves the region per score).
      bool weights = linearBiasWeights ||
                     (!linearBiasOpt->has_value() && choice.linearBiasWeights &&
                      choice.rowsumMma);
      if (weights && failed(takeLinearBiasWeights(scope, tiled,
                                                  /*forced=*/linearBiasWeights)))
        return signalPassFailure();
      // A term of j − i as Q·Kᵀ's accumulator where forced: auto keeps the
      // vector form, which measured faster (perf log run 136b).
      if (relativeBiasOpt->value_or(false) &&
          failed(takeRelativeBiasAccumulator(scope, /*forced=*/true)))
        return signalPassFailure();
    }
  }
};

} // namespace
