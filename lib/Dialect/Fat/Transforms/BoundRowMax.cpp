//===- BoundRowMax.cpp - the softmax reference at the scores' bound -------===//
//
// `--fat-tensorize row-max=bound`: where a score region bounds its output,
// L ≤ s ≤ U (a soft cap A·tanh(s/A), whose A fat-tensorize has moved into
// the softmax constant c: tanh ∈ [−1, 1]), the online softmax needs no
// running maximum. With the reference m = U for every row,
//
//   P = exp2(c·(s − U)) ∈ [2^(c·(L−U)), 1],   α = 1,
//
// so fat.softmax_max, O's and l's rescale and the row sums' α go, and a row
// that saw no key keeps m = −inf, l = 0. P never exceeds 1, as with the
// running maximum; c·(U − L) ≤ kMaxBoundSpan keeps the smallest P of a row
// 2^30 above f32's (and bf16's) smallest normal number, so a row's sum
// cannot underflow wherever its scores lie. f16's P, normal only down to
// 2^−14, is not served.
//
//===----------------------------------------------------------------------===//

#include "fa-t/Dialect/Fat/Hopper/KernelModel.h"
#include "fa-t/Dialect/Fat/IR/FatOps.h"
#include "fa-t/Dialect/Fat/Transforms/Passes.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::fat;

namespace {

/// fat.softmax_max → the constant reference U: its new max replaced by U,
/// α by 1 (the rescales of O and l return their input, fat.softmax_exp
/// adds its row sums without α).
struct SoftmaxMaxAtBound : OpRewritePattern<SoftmaxMaxOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SoftmaxMaxOp op,
                                PatternRewriter &rewriter) const override {
    std::optional<std::pair<double, double>> bounds =
        boundedScoreRange(op.getScores());
    FloatAttr c;
    if (!bounds || !matchPattern(op.getScale(), m_Constant(&c)))
      return rewriter.notifyMatchFailure(op, "scores without a bound");
    if (c.getValueAsDouble() * (bounds->second - bounds->first) >
        kMaxBoundSpan)
      return rewriter.notifyMatchFailure(op, "bounds too far apart");
    for (Operation *user : op.getAlpha().getUsers())
      if (!isa<RescaleOp, SoftmaxExpOp>(user))
        return rewriter.notifyMatchFailure(user, "α has another use");
    auto rows = cast<RankedTensorType>(op.getNewMax().getType());
    Value bound = arith::ConstantOp::create(
        rewriter, op.getLoc(),
        DenseElementsAttr::get(rows, rewriter.getF32FloatAttr(
                                         float(bounds->second))));
    for (Operation *user :
         llvm::make_early_inc_range(op.getAlpha().getUsers())) {
      if (auto rescale = dyn_cast<RescaleOp>(user)) {
        rewriter.replaceOp(rescale, rescale.getInput());
        continue;
      }
      rewriter.modifyOpInPlace(user, [&] {
        cast<SoftmaxExpOp>(user).getAlphaMutable().clear();
      });
    }
    rewriter.replaceAllUsesWith(op.getNewMax(), bound);
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

std::optional<std::pair<double, double>>
mlir::fat::boundedScoreRange(Value scores) {
  // Masks only hide scores (−inf): the visible ones keep the region's range.
  while (Operation *def = scores.getDefiningOp()) {
    if (auto mask = dyn_cast<MaskOp>(def))
      scores = mask.getScores();
    else if (auto mask = dyn_cast<MaskModOp>(def))
      scores = mask.getScores();
    else
      break;
  }
  auto mod = scores.getDefiningOp<ScoreModOp>();
  if (!mod || !cast<ShapedType>(scores.getType()).getElementType().isF32())
    return std::nullopt;
  return scoreRegionRange(mod.getBody());
}

void mlir::fat::populateBoundRowMaxPatterns(RewritePatternSet &patterns) {
  patterns.add<SoftmaxMaxAtBound>(patterns.getContext());
}
