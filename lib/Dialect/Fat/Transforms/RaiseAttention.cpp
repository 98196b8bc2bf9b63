//===- RaiseAttention.cpp - --fat-raise-attention: linalg -> fat.attention ===//
//
// Frameworks lower scaled dot-product attention to a few linalg ops on
// tensors, with reshapes, transposes and broadcasts in between:
//
//   S  = Q·Kᵀ               matmul / batch_matmul / contraction generic
//   S' = c·S (+ M)          elementwise scale, additive or select mask
//   P  = softmax_j(S')      linalg.softmax, or max, sub, exp, sum, div
//   O  = P·V                matmul / batch_matmul / contraction generic
//
// This file finds that chain and replaces O by one fat.attention.
//
// How the IR is read: every tensor is seen through *terms*, trees that say
// what one of its elements computes, in the coordinates of the loops of the
// P·V contraction (the *root loops* β…, i, dv, j). The Tracer inlines
// elementwise linalg ops (generic or named), broadcasts, transposes, splat
// constants and reshapes (as floordiv/mod index arithmetic); it stops at
// contractions, reductions, linalg.softmax and anything else. torch-mlir
// writes one generic per torch op, StableHLO→linalg uses linalg.reduce,
// linalg.broadcast and named elementwise ops, fusion merges bodies: all give
// the same terms, so the matchers compare small trees, not op sequences.
//
// The stages are matched in RaiseAttentionMatchers.cpp (terms and the
// Tracer in RaiseAttentionTerms.cpp); this file rewrites a match into
// reshapes + fat.attention and holds the pass.
//
//===----------------------------------------------------------------------===//

#include "RaiseAttentionMatchers.h"

#include "fa-t/Dialect/Fat/IR/FatDialect.h"
#include "fa-t/Dialect/Fat/IR/FatOps.h"
#include "fa-t/Dialect/Fat/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "fat-raise-attention"

namespace mlir::fat {
#define GEN_PASS_DEF_FATRAISEATTENTION
#include "fa-t/Dialect/Fat/Transforms/Passes.h.inc"
} // namespace mlir::fat

using namespace mlir;
using namespace mlir::fat;
using namespace mlir::fat::raise;

namespace {

/// `view` as a [B, H, S, D] tensor with H = `heads`: a transpose of the last
/// two dims if it is stored [.., D, S], then its batch dims collapsed to one
/// and split into (B, H) (row-major, as the matcher's flat index).
Value toBHSD(OpBuilder &b, Location loc, const OperandView &view,
             int64_t heads) {
  Value x = view.tensor;
  auto type = cast<RankedTensorType>(x.getType());
  int64_t rank = type.getRank();
  if (view.transposed) {
    SmallVector<int64_t> perm = llvm::to_vector(llvm::seq<int64_t>(0, rank));
    std::swap(perm[rank - 1], perm[rank - 2]);
    SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, x);
    std::swap(sizes[rank - 1], sizes[rank - 2]);
    Value init = tensor::EmptyOp::create(b, loc, sizes, type.getElementType());
    x = linalg::TransposeOp::create(b, loc, x, init, perm)->getResult(0);
    type = cast<RankedTensorType>(x.getType());
  }
  ArrayRef<int64_t> shape = type.getShape();
  int64_t nb = rank - 2, seq = shape[rank - 2], feat = shape[rank - 1];
  if (nb == 2 && shape[1] == heads)
    return x;
  if (nb == 0)
    return tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get({1, 1, seq, feat}, type.getElementType()),
        x, ArrayRef<ReassociationIndices>{{0, 1, 2}, {3}});
  if (nb > 1) {
    ReassociationIndices all = llvm::to_vector(llvm::seq<int64_t>(0, nb));
    x = tensor::CollapseShapeOp::create(
        b, loc, x, ArrayRef<ReassociationIndices>{all, {nb}, {nb + 1}});
  }
  int64_t count = cast<RankedTensorType>(x.getType()).getDimSize(0);
  int64_t batch = ShapedType::isDynamic(count) ? count : count / heads;
  return tensor::ExpandShapeOp::create(
      b, loc,
      RankedTensorType::get({batch, heads, seq, feat}, type.getElementType()),
      x, ArrayRef<ReassociationIndices>{{0, 1}, {2}, {3}});
}

/// The inverse for O: [B, H, Sq, Dv] -> the shape of the replaced value
/// (its batch dims the row-major split of B·H).
Value fromBHSD(OpBuilder &b, Location loc, Value o, RankedTensorType target) {
  auto type = cast<RankedTensorType>(o.getType());
  int64_t nb = target.getRank() - 2;
  if (nb == 0) {
    o = tensor::CollapseShapeOp::create(
        b, loc, o, ArrayRef<ReassociationIndices>{{0, 1, 2}, {3}});
  } else if (!(nb == 2 && target.getDimSize(1) == type.getDimSize(1))) {
    o = tensor::CollapseShapeOp::create(
        b, loc, o, ArrayRef<ReassociationIndices>{{0, 1}, {2}, {3}});
    if (nb > 1) {
      ReassociationIndices all = llvm::to_vector(llvm::seq<int64_t>(0, nb));
      o = tensor::ExpandShapeOp::create(
          b, loc, target, o,
          ArrayRef<ReassociationIndices>{all, {nb}, {nb + 1}});
    }
  }
  if (o.getType() != target)
    o = tensor::CastOp::create(b, loc, target, o);
  return o;
}

/// linalg attention -> fat.attention, rooted at the P·V contraction.
struct RaiseAttention : OpInterfaceRewritePattern<linalg::LinalgOp> {
  using OpInterfaceRewritePattern::OpInterfaceRewritePattern;

  LogicalResult matchAndRewrite(linalg::LinalgOp op,
                                PatternRewriter &rewriter) const override {
    Diagnosis diag;
    Tracer tracer;
    FailureOr<AttentionMatch> m = matchAttention(op, diag, tracer);
    if (failed(m)) {
      LLVM_DEBUG(llvm::dbgs() << "not raised: " << diag.reason << "\n");
      return rewriter.notifyMatchFailure(op, diag.reason);
    }
    const OperandMatch &ops = m->operands;
    Location loc = op.getLoc();
    rewriter.setInsertionPoint(m->output);
    int64_t kvHeads = ops.heads / ops.group;
    Value q = toBHSD(rewriter, loc, ops.q, ops.heads);
    Value k = toBHSD(rewriter, loc, ops.k, kvHeads);
    Value v = toBHSD(rewriter, loc, ops.v, kvHeads);

    // O: [B, Hq, Sq, Dv], B and Sq as in Q.
    Type elt = ops.q.elementType();
    int64_t dv = cast<RankedTensorType>(v.getType()).getDimSize(3);
    SmallVector<OpFoldResult> sizes = {
        tensor::getMixedSize(rewriter, loc, q, 0),
        rewriter.getIndexAttr(ops.heads),
        tensor::getMixedSize(rewriter, loc, q, 2), rewriter.getIndexAttr(dv)};
    Value init = tensor::EmptyOp::create(rewriter, loc, sizes, elt);

    // The band lower ≤ j − i ≤ δ as fat.attention's mask, whose keys are
    //   causal: j ≤ i + diag;  window [left, right]: i + diag − left ≤ j
    //   (≤ i + diag + right unless right = −1):
    //   upper only    causal, diag = δ
    //   lower only    window [0, −1], diag = lower
    //   both          causal + window [δ − lower, −1], diag = δ
    // The default diagonal is Skv − Sq (bottom-right); state it unless the
    // shapes say it is that.
    const ScoreMatch &s = m->scores;
    int64_t delta = s.causal ? s.diagonal : s.lower.value_or(0);
    DenseI64ArrayAttr window;
    if (s.lower)
      window = rewriter.getDenseI64ArrayAttr(
          {s.causal ? s.diagonal - *s.lower : 0, -1});
    Value diagonal;
    int64_t sq = m->pv.sizes[m->pv.query], skv = m->pv.sizes[m->pv.key];
    if ((s.causal || s.lower) &&
        (ShapedType::isDynamic(sq) || ShapedType::isDynamic(skv) ||
         skv - sq != delta))
      diagonal = arith::ConstantIndexOp::create(rewriter, loc, delta);

    // Scores beyond c·Q·Kᵀ (+ band) become the score region; its captures
    // are the tensors and scalars it reads.
    Region score;
    SmallVector<Value> captures;
    if (s.region)
      captures = writeScoreRegion(rewriter, loc, *m, score);
    auto attention =
        AttentionOp::create(rewriter, loc, TypeRange{init.getType()}, q, k, v,
                            init, /*lse=*/Value(), diagonal,
                            /*offsets=*/ValueRange(), captures,
                            rewriter.getF32FloatAttr(float(s.scale)), s.causal,
                            window, /*kv_ranges=*/IntegerAttr());
    attention.getScore().takeBody(score);
    Value o = attention->getResult(0);

    // torch-mlir expands a [B·H, Sq, Dv] P·V right back to [B, H, Sq, Dv]:
    // replace that expand_shape by O rather than undo it with a collapse.
    Operation *replaced = m->output;
    if (replaced->hasOneUse())
      if (auto expand =
              dyn_cast<tensor::ExpandShapeOp>(*replaced->user_begin()))
        if (expand.getResultType() == o.getType() &&
            expand.getReassociationIndices() ==
                SmallVector<ReassociationIndices>{{0, 1}, {2}, {3}})
          replaced = expand;
    auto target = cast<RankedTensorType>(replaced->getResult(0).getType());
    rewriter.replaceOp(replaced, fromBHSD(rewriter, loc, o, target));
    return success();
  }
};

struct FatRaiseAttentionPass
    : fat::impl::FatRaiseAttentionBase<FatRaiseAttentionPass> {
  using Base::Base;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateFatRaiseAttentionPatterns(patterns);
    // Only the raise: no folding, so IR that is not attention stays as is.
    GreedyRewriteConfig config;
    config.enableFolding(false).enableConstantCSE(false);
    if (failed(
            applyPatternsGreedily(getOperation(), std::move(patterns), config)))
      return signalPassFailure();
    if (!remarks)
      return;
    getOperation()->walk([](linalg::LinalgOp op) {
      Tracer tracer;
      Diagnosis diag;
      if (readsSoftmax(op, tracer) && failed(matchAttention(op, diag, tracer)))
        op->emitRemark("not raised to fat.attention: ") << diag.reason;
    });
  }
};

} // namespace

void mlir::fat::populateFatRaiseAttentionPatterns(RewritePatternSet &patterns) {
  patterns.add<RaiseAttention>(patterns.getContext());
}
