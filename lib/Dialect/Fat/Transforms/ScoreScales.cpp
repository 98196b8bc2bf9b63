//===- ScoreScales.cpp - a score region's constant factors, moved out ----===//
//
// A score region of the form s' = A·g(f·s) (soft-capping: A = c, f = 1/c,
// g = tanh) spends two multiplies per score on constants that the kernel
// already multiplies by elsewhere:
//
//   output  A > 0 commutes with the row max and the masks' −inf, so
//           exp2(c·(A·t − A·m_t)) = exp2((c·A)·(t − m_t)): A joins the
//           softmax constant c of fat.softmax_max / fat.softmax_exp and the
//           LSE's factor on m (fat.finalize's scale), and the region yields t.
//   input   f joins the tile's scale: body(f·(k·s)) = body'((k·f)·s), one
//           scalar multiply per kernel instead of one per score.
//
// The kernel then spends one FMUL per score on the scaled score and none on
// the factors (perf log run 84). Both rewrites are exact in real arithmetic;
// in f32 they move one rounding of each score by ≤ 1 ulp, far below P's
// 16-bit rounding.
//
//===----------------------------------------------------------------------===//

#include "TiledAttention.h"
#include "fa-t/Dialect/Fat/Hopper/KernelModel.h"
#include "fa-t/Dialect/Fat/IR/FatOps.h"
#include "fa-t/Dialect/Fat/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::fat;

/// The finite nonzero constant c of `op` when it is x·c, c·x or x / c
/// (then 1/c), with x = `operand`; none otherwise.
static std::optional<double> constantFactorOf(Operation *op, Value operand) {
  auto constantOf = [](Value v) -> std::optional<double> {
    FloatAttr attr;
    if (!matchPattern(v, m_Constant(&attr)) || !attr.getType().isF32())
      return std::nullopt;
    double c = attr.getValueAsDouble();
    if (!std::isfinite(c) || c == 0.0)
      return std::nullopt;
    return c;
  };
  if (auto mul = dyn_cast<arith::MulFOp>(op)) {
    if (mul.getLhs() == operand && mul.getRhs() != operand)
      return constantOf(mul.getRhs());
    if (mul.getRhs() == operand && mul.getLhs() != operand)
      return constantOf(mul.getLhs());
  }
  if (auto div = dyn_cast<arith::DivFOp>(op))
    if (div.getLhs() == operand && div.getRhs() != operand)
      if (std::optional<double> c = constantOf(div.getRhs()))
        return 1.0 / *c;
  return std::nullopt;
}

/// Drops the constants of `body` that a fold left unused.
static void eraseDeadConstants(RewriterBase &rewriter, Block &body) {
  for (Operation &op : llvm::make_early_inc_range(body.without_terminator()))
    if (isa<arith::ConstantOp>(op) && op.use_empty())
      rewriter.eraseOp(&op);
}

/// The region's yield t·A with A > 0 a constant.
struct TrailingFactor {
  Operation *mul;
  Value t;
  double a;
};
static std::optional<TrailingFactor> trailingFactor(ScoreModOp mod) {
  auto yield = cast<YieldOp>(mod.getBody().front().getTerminator());
  Operation *mul = yield.getValue().getDefiningOp<arith::MulFOp>();
  if (!mul || !mul->hasOneUse() || mul->getParentRegion() != &mod.getBody())
    return std::nullopt;
  for (Value t : mul->getOperands())
    if (std::optional<double> a = constantFactorOf(mul, t))
      if (*a > 0.0)
        return TrailingFactor{mul, t, *a};
  return std::nullopt;
}

void mlir::fat::foldScoreOutputScale(Operation *scope) {
  SmallVector<ScoreModOp> mods;
  scope->walk([&](ScoreModOp mod) { mods.push_back(mod); });
  if (mods.empty())
    return;
  std::optional<double> a;
  SmallVector<TrailingFactor> tails;
  for (ScoreModOp mod : mods) {
    std::optional<TrailingFactor> tail = trailingFactor(mod);
    if (!tail || (a && *a != tail->a))
      return;
    a = tail->a;
    tails.push_back(*tail);
  }
  // The scores reach only masks (−inf stays −inf under A > 0) and the
  // softmax, whose constants are f32 constants to scale.
  SmallVector<OpOperand *> constants;
  SmallVector<Value> worklist;
  for (ScoreModOp mod : mods)
    worklist.push_back(mod.getResult());
  while (!worklist.empty()) {
    for (OpOperand &use : worklist.pop_back_val().getUses()) {
      Operation *user = use.getOwner();
      if (isa<MaskOp, MaskModOp>(user) && use.getOperandNumber() == 0) {
        worklist.push_back(user->getResult(0));
      } else if (auto max = dyn_cast<SoftmaxMaxOp>(user);
                 max && use.get() == max.getScores()) {
        constants.push_back(&max.getScaleMutable());
      } else if (auto exp = dyn_cast<SoftmaxExpOp>(user);
                 exp && use.get() == exp.getScores()) {
        constants.push_back(&exp.getScaleMutable());
      } else {
        return;
      }
    }
  }
  SmallVector<FinalizeOp> finalizes;
  scope->walk([&](FinalizeOp op) { finalizes.push_back(op); });
  if (finalizes.size() != 1 || !finalizes.front().getScaleAttr() ||
      constants.empty() ||
      !llvm::all_of(constants, [](OpOperand *c) {
        return matchPattern(c->get(), m_Constant());
      }))
    return;
  // Every softmax op of the scope reads these scores: m and c·m stay in
  // one unit.
  int64_t softmaxOps = 0;
  scope->walk([&](Operation *op) {
    softmaxOps += isa<SoftmaxMaxOp, SoftmaxExpOp>(op);
  });
  if (softmaxOps != static_cast<int64_t>(constants.size()))
    return;

  IRRewriter rewriter(scope->getContext());
  DenseMap<Value, Value> scaled; // c → c·A, beside c
  for (OpOperand *c : constants) {
    Value &into = scaled[c->get()];
    if (!into) {
      FloatAttr attr;
      matchPattern(c->get(), m_Constant(&attr));
      rewriter.setInsertionPointAfterValue(c->get());
      into = arith::ConstantOp::create(
          rewriter, c->get().getLoc(),
          rewriter.getF32FloatAttr(float(attr.getValueAsDouble() * *a)));
    }
    c->set(into);
  }
  FinalizeOp fin = finalizes.front();
  fin.setScaleAttr(rewriter.getF32FloatAttr(
      float(fin.getScaleAttr().getValueAsDouble() * *a)));
  for (auto [mod, tail] : llvm::zip_equal(mods, tails)) {
    rewriter.replaceOp(tail.mul, tail.t);
    eraseDeadConstants(rewriter, mod.getBody().front());
  }
}

namespace {

/// fat.score_mod on mulf(t, splat(k)) whose body starts with f·x (x the
/// score argument, used once) and scale σ → the same op on
/// mulf(t, splat(k·σ·f)) with scale 1 and the body reading x itself.
struct ScoreInputScaleIntoTile : OpRewritePattern<ScoreModOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ScoreModOp op,
                                PatternRewriter &rewriter) const override {
    BlockArgument x = op.getBody().getArgument(0);
    if (!x.hasOneUse())
      return rewriter.notifyMatchFailure(op, "the score is read more than once");
    Operation *first = *x.getUsers().begin();
    std::optional<double> f = constantFactorOf(first, x);
    if (!f)
      return rewriter.notifyMatchFailure(op, "no constant factor on the score");
    auto mul = op.getScores().getDefiningOp<arith::MulFOp>();
    if (!mul || !mul->hasOneUse())
      return rewriter.notifyMatchFailure(op, "the tile is not scaled here");
    Value tile = mul.getLhs();
    auto splat = mul.getRhs().getDefiningOp<tensor::SplatOp>();
    if (!splat) {
      tile = mul.getRhs();
      splat = mul.getLhs().getDefiningOp<tensor::SplatOp>();
    }
    if (!splat || !splat.getInput().getType().isF32())
      return rewriter.notifyMatchFailure(op, "the tile's scale is not a splat");
    // k·σ·f once, where k is defined (the kernel's entry for its scale).
    Location loc = mul.getLoc();
    rewriter.setInsertionPointAfterValue(splat.getInput());
    double factor = op.getScale().convertToDouble() * *f;
    Value k = arith::MulFOp::create(
        rewriter, loc, splat.getInput(),
        arith::ConstantOp::create(rewriter, loc,
                                  rewriter.getF32FloatAttr(float(factor))));
    rewriter.setInsertionPoint(mul);
    Value scaled = arith::MulFOp::create(
        rewriter, loc, tile,
        tensor::SplatOp::create(rewriter, loc, k, splat.getType()),
        mul.getFastmathAttr());
    rewriter.modifyOpInPlace(op, [&] {
      op.getScoresMutable().assign(scaled);
      op.setScaleAttr(rewriter.getF32FloatAttr(1.0f));
    });
    rewriter.replaceOp(first, x);
    eraseDeadConstants(rewriter, op.getBody().front());
    rewriter.eraseOp(mul);
    if (splat->use_empty())
      rewriter.eraseOp(splat);
    return success();
  }
};

/// fat.score_mod whose body's row i enters only through the yielded sum
/// y = a ± B·float(i − j) (or j − i), B computed without the score, the
/// row or the key (ALiBi: `score − slopes[h]·(i − j)`): then body(i) −
/// body(i') = ∓B·(i − i') for every key, one constant per row, and the op
/// may evaluate every row at the tile's first (rows_at_origin).
struct ScoreRowsAtOrigin : OpRewritePattern<ScoreModOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ScoreModOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getRowsAtOrigin())
      return rewriter.notifyMatchFailure(op, "already at the origin");
    std::string why;
    if (failed(matchPositionTerm(op.getBody().front(), why)))
      return rewriter.notifyMatchFailure(op, why);
    rewriter.modifyOpInPlace(op, [&] { op.setRowsAtOrigin(true); });
    return success();
  }
};

} // namespace

void mlir::fat::populateScoreInputScalePatterns(RewritePatternSet &patterns) {
  patterns.add<ScoreInputScaleIntoTile>(patterns.getContext());
}

void mlir::fat::populateScoreRowsAtOriginPatterns(RewritePatternSet &patterns) {
  patterns.add<ScoreRowsAtOrigin>(patterns.getContext());
}
