//===- TensorizeTiles.cpp - the tiled online softmax onto warpgroup MMA ---===//
//
// The rewrite half of --fat-tensorize (the pass is Tensorize.cpp, its cost
// model Hopper/Model/CostModel.cpp): given the choice, each KV step of the
// tiled form becomes the ops the Hopper kernel executes, at tile
// granularity (FatTensorOps.td):
//
//   fat.qk                       → fat.wgmma a_from smem, transpose_b
//   fat.row_max + fat.exp2 (α)   → fat.softmax_max   (eager or lazy rescale)
//   fat.exp2 (P) [+ fat.row_sum] → fat.softmax_exp   (MUFU / FMA-pipe split,
//                                                     the vector row sum)
//   fat.pv                       → arith.truncf P, fat.wgmma a_from registers
//   fat.pv + fat.row_sum (mma)   → P·[V | 1]: 8 ones columns beside V, the
//                                  accumulator [α·O | α·l] (FlashAttention-T)
//
//===----------------------------------------------------------------------===//

#include "fa-t/Dialect/Fat/IR/FatOps.h"
#include "fa-t/Dialect/Fat/Transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"

#define DEBUG_TYPE "fat-tensorize"

using namespace mlir;
using namespace mlir::fat;

namespace {

/// The m64nNk16 instruction shape for a result of `n` columns.
DenseI64ArrayAttr instrShape(Builder &b, int64_t n) {
  return b.getDenseI64ArrayAttr(
      {WgmmaOp::kRowsPerWarpgroup, n, WgmmaOp::kInstrK});
}

/// fat.qk → fat.wgmma: S = Q·Kᵀ with both operands in shared memory, K
/// read N × D (transpose_b), the accumulator starting at 0.
struct QKToWgmma : OpRewritePattern<QKOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(QKOp op, PatternRewriter &rewriter) const override {
    auto s = cast<RankedTensorType>(op.getScores().getType());
    rewriter.replaceOpWithNewOp<WgmmaOp>(
        op, s, op.getQuery(), op.getKey(), /*acc=*/Value(),
        /*transpose_b=*/rewriter.getUnitAttr(),
        OperandSourceAttr::get(rewriter.getContext(), OperandSource::Smem),
        instrShape(rewriter, s.getDimSize(1)));
    return success();
  }
};

/// The ops of one KV step of the tiled form, as fat-tile writes them:
///   m' = row_max(S, m)   P = exp2(S, m')   α = exp2(m, m')
///   l' = row_sum(P, rescale(l, α))   O' = pv(P, V, rescale(O, α))
struct SoftmaxStep {
  RowMaxOp rowMax;
  Exp2Op probs, alpha;
  RowSumOp rowSum;
  PVOp pv;
  RescaleOp lRescale, oRescale;

  /// Collects the step rooted at `rowMax`; fails unless every piece is
  /// there and P, α and the two rescales have no other users.
  static FailureOr<SoftmaxStep> match(RowMaxOp rowMax) {
    SoftmaxStep st;
    st.rowMax = rowMax;
    for (Operation *user : rowMax.getResult().getUsers()) {
      auto e = dyn_cast<Exp2Op>(user);
      if (!e || e.getMax() != rowMax.getResult())
        continue;
      if (e.getInput() == rowMax.getScores())
        st.probs = e;
      else if (e.getInput() == rowMax.getInit())
        st.alpha = e;
    }
    if (!st.probs || !st.alpha || st.probs.getScale() != st.alpha.getScale())
      return failure();
    for (Operation *user : st.probs.getResult().getUsers()) {
      if (auto r = dyn_cast<RowSumOp>(user); r && r.getInput() == st.probs.getResult())
        st.rowSum = r;
      else if (auto p = dyn_cast<PVOp>(user); p && p.getProbs() == st.probs.getResult())
        st.pv = p;
      else
        return failure();
    }
    if (!st.rowSum || !st.pv)
      return failure();
    st.lRescale = st.rowSum.getInit().getDefiningOp<RescaleOp>();
    st.oRescale = st.pv.getInit().getDefiningOp<RescaleOp>();
    Value a = st.alpha.getResult();
    // The rewrite replaces both rescales: nothing else may read them.
    if (!st.lRescale || !st.oRescale || st.lRescale.getFactor() != a ||
        st.oRescale.getFactor() != a || !st.lRescale->hasOneUse() ||
        !st.oRescale->hasOneUse())
      return failure();
    for (Operation *user : a.getUsers())
      if (user != st.lRescale && user != st.oRescale)
        return failure();
    return st;
  }
};

/// One KV step's softmax and P·V → fat.softmax_max, fat.softmax_exp, the
/// rounding of P and the P·V (or P·[V | 1]) wgmma with A in registers.
struct SoftmaxStepToTensorCores : OpRewritePattern<RowMaxOp> {
  SoftmaxStepToTensorCores(MLIRContext *ctx, TileTensorization choice)
      : OpRewritePattern(ctx), choice(choice) {}

  LogicalResult matchAndRewrite(RowMaxOp op, PatternRewriter &rewriter) const override {
    FailureOr<SoftmaxStep> step = SoftmaxStep::match(op);
    if (failed(step))
      return rewriter.notifyMatchFailure(op, "not a KV step as fat-tile writes it");
    Location loc = op.getLoc();
    PVOp pv = step->pv;
    rewriter.setInsertionPoint(pv);
    Value s = op.getScores(), m = op.getInit(), v = pv.getValue();
    Value l = step->lRescale.getInput(), o = step->oRescale.getInput();
    Value scale = arith::ConstantOp::create(rewriter, loc, step->probs.getScaleAttr());
    auto sType = cast<RankedTensorType>(s.getType());
    auto vType = cast<RankedTensorType>(v.getType());
    auto oType = cast<RankedTensorType>(o.getType());
    int64_t rows = sType.getDimSize(0), keys = sType.getDimSize(1),
            dv = vType.getDimSize(1);

    // m', α = exp2(c·m − ĉm')  (eager, or lazy: only rows whose max grew > τ)
    FloatAttr tau = choice.lazyRescale
                        ? rewriter.getF32FloatAttr(choice.rescaleThreshold)
                        : FloatAttr();
    auto mx = SoftmaxMaxOp::create(rewriter, loc, m.getType(), m.getType(), s,
                                   m, scale, /*offsets=*/ValueRange(), tau);
    Value alpha = mx.getAlpha();
    // P = exp2(c·S − ĉm')  [ l' = α·l + Σ P on the vector units ]
    SmallVector<Type> expTypes = {sType};
    if (!choice.rowsumMma)
      expTypes.push_back(l.getType());
    auto ex = SoftmaxExpOp::create(rewriter, loc, expTypes, s, mx.getNewMax(),
                                   scale, /*offsets=*/ValueRange(),
                                   choice.rowsumMma ? Value() : l,
                                   choice.rowsumMma ? Value() : alpha,
                                   rewriter.getF64FloatAttr(choice.exp2Poly));
    // O = α·O, then P rounded to V's type (the A operand in registers):
    // the order the Hopper consumer issues them in, which fat-pipeline
    // keeps when it rewrites this loop.
    Value oScaled = RescaleOp::create(rewriter, loc, oType, o, alpha);
    Value p16 = arith::TruncFOp::create(
        rewriter, loc, RankedTensorType::get(sType.getShape(), vType.getElementType()),
        ex.getProbs());
    Value oNew, lNew;
    if (!choice.rowsumMma) {
      // O' = α·O + P·V
      oNew = WgmmaOp::create(rewriter, loc, oType, p16, v, oScaled, UnitAttr(),
                             OperandSourceAttr::get(getContext(), OperandSource::Registers),
                             instrShape(rewriter, dv));
      lNew = ex.getNewSum();
    } else {
      // [O' | l'] = [α·O | α·l] + P·[V | 1]: the tensor cores sum the
      // rounded P, so l' and O' see the same P (O/l unaffected by its
      // rounding); all kOnesColumns columns of l' are equal.
      int64_t ones = TileTensorization::kOnesColumns;
      Value lScaled = RescaleOp::create(rewriter, loc, l.getType(), l, alpha);
      Value lColsInit = tensor::EmptyOp::create(rewriter, loc, ArrayRef<int64_t>{rows, ones},
                                                rewriter.getF32Type());
      Value lCols = linalg::BroadcastOp::create(rewriter, loc, lScaled, lColsInit,
                                                ArrayRef<int64_t>{1})
                        .getResult()[0];
      Value acc = tensor::ConcatOp::create(rewriter, loc, /*dim=*/1,
                                           ValueRange{oScaled, lCols});
      auto onesType = RankedTensorType::get({keys, ones}, vType.getElementType());
      Value onesCst = arith::ConstantOp::create(
          rewriter, loc,
          DenseElementsAttr::get(onesType, rewriter.getFloatAttr(vType.getElementType(), 1.0)));
      Value vOnes = tensor::ConcatOp::create(rewriter, loc, /*dim=*/1, ValueRange{v, onesCst});
      Value accNew = WgmmaOp::create(
          rewriter, loc, acc.getType(), p16, vOnes, acc, UnitAttr(),
          OperandSourceAttr::get(getContext(), OperandSource::Registers),
          instrShape(rewriter, dv + ones));
      oNew = tensor::ExtractSliceOp::create(
          rewriter, loc, oType, accNew, ArrayRef<OpFoldResult>{rewriter.getIndexAttr(0), rewriter.getIndexAttr(0)},
          ArrayRef<OpFoldResult>{rewriter.getIndexAttr(rows), rewriter.getIndexAttr(dv)},
          ArrayRef<OpFoldResult>{rewriter.getIndexAttr(1), rewriter.getIndexAttr(1)});
      lNew = tensor::ExtractSliceOp::create(
          rewriter, loc, cast<RankedTensorType>(l.getType()), accNew,
          ArrayRef<OpFoldResult>{rewriter.getIndexAttr(0), rewriter.getIndexAttr(dv)},
          ArrayRef<OpFoldResult>{rewriter.getIndexAttr(rows), rewriter.getIndexAttr(1)},
          ArrayRef<OpFoldResult>{rewriter.getIndexAttr(1), rewriter.getIndexAttr(1)});
    }
    rewriter.replaceOp(pv, oNew);
    rewriter.replaceOp(step->rowSum, lNew);
    rewriter.replaceAllUsesWith(op.getResult(), mx.getNewMax());
    for (Operation *dead : {step->oRescale.getOperation(), step->lRescale.getOperation(),
                            step->probs.getOperation(), step->alpha.getOperation(),
                            op.getOperation()})
      rewriter.eraseOp(dead);
    return success();
  }

  TileTensorization choice;
};

} // namespace

LogicalResult mlir::fat::checkTensorizableTiles(Operation *scope,
                                                const TileTensorization &choice) {
  auto fits = [](Operation *op, StringRef what, int64_t value, int64_t multiple,
                 int64_t most) -> LogicalResult {
    if (!ShapedType::isDynamic(value) && value > 0 && value % multiple == 0 &&
        value <= most)
      return success();
    return op->emitError() << "fat-tensorize: " << what << " (" << value
                           << ") must be a multiple of " << multiple << " in ["
                           << multiple << ", " << most << "]";
  };
  WalkResult result = scope->walk([&](Operation *op) {
    if (auto qk = dyn_cast<QKOp>(op)) {
      auto q = cast<RankedTensorType>(qk.getQuery().getType());
      auto k = cast<RankedTensorType>(qk.getKey().getType());
      if (!q.getElementType().isF16() && !q.getElementType().isBF16()) {
        qk.emitError() << "fat-tensorize: wgmma takes f16 or bf16 operands, got "
                       << q.getElementType()
                       << " (f32 is served by the reference path, --fat-to-cpu)";
        return WalkResult::interrupt();
      }
      // Rows: one warpgroup per 64 (up to the three consumer warpgroups a
      // CTA has room for); keys: the N of Q·Kᵀ and the K-steps of P·V.
      if (failed(fits(qk, "the query rows of a tile (block-m)", q.getDimSize(0),
                      WgmmaOp::kRowsPerWarpgroup, 3 * WgmmaOp::kRowsPerWarpgroup)) ||
          failed(fits(qk, "the keys of a tile (block-n)", k.getDimSize(0),
                      WgmmaOp::kInstrK, 256)) ||
          failed(fits(qk, "the head dim D", q.getDimSize(1), WgmmaOp::kInstrK, 256)))
        return WalkResult::interrupt();
    }
    if (auto pv = dyn_cast<PVOp>(op)) {
      int64_t dv = cast<RankedTensorType>(pv.getValue().getType()).getDimSize(1);
      int64_t extra = choice.rowsumMma ? TileTensorization::kOnesColumns : 0;
      if (failed(fits(pv, choice.rowsumMma ? "Dv + 8 (P·[V | 1] with rowsum=mma)"
                                           : "the head dim Dv",
                      ShapedType::isDynamic(dv) ? dv : dv + extra, 8, 256)))
        return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

void mlir::fat::populateFatTensorizeTilePatterns(RewritePatternSet &patterns,
                                                 const TileTensorization &choice) {
  patterns.add<QKToWgmma>(patterns.getContext());
  patterns.add<SoftmaxStepToTensorCores>(patterns.getContext(), choice);
}
