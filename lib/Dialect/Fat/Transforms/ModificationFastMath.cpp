//===- ModificationFastMath.cpp - a kernel's score region: FMAs, tanh -----===//
//
// The fast-math flags of a score region once it runs in the Hopper kernel,
// each a numerics argument against the 16-bit P the scores feed:
//
//   contract  the scaled score k·s and the region's arithmetic may fuse into
//             FMAs (ALiBi's k·s − slope·d, a bias table's k·s + t: one FFMA
//             each). A fused op rounds once, within ½ ulp of f32, far below
//             the 2^−8 / 2^−11 of a bf16 / f16 P (perf log run 85).
//   afn       on math.tanh of a bf16 kernel: MUFU's tanh.approx (relative
//             error 2^−11, below bf16's 2^−8; perf log run 76) instead of
//             ex2 + rcp. f16 (2^−11) keeps the precise form.
//
// convert-fat-to-nvvm reads the flags (contract → FMA, `tanh=auto` → afn).
//
//===----------------------------------------------------------------------===//

#include "fa-t/Dialect/Fat/IR/FatOps.h"
#include "fa-t/Dialect/Fat/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::fat;

/// Adds `flags` to `op`'s fast-math flags; whether they were missing.
static bool addFastMath(RewriterBase &rewriter, arith::ArithFastMathInterface op,
                        arith::FastMathFlags flags) {
  arith::FastMathFlags old = op.getFastMathFlagsAttr().getValue();
  if ((old & flags) == flags)
    return false;
  rewriter.modifyOpInPlace(op, [&] {
    op->setAttr(op.getFastMathAttrName(),
                arith::FastMathFlagsAttr::get(op->getContext(), old | flags));
  });
  return true;
}

namespace {
/// fat.score_mod of a kernel: `contract` on the multiply that scales its
/// tile and on the region's arithmetic; `afn` on its tanh where approximate.
struct ModificationFastMath : OpRewritePattern<ScoreModOp> {
  ModificationFastMath(MLIRContext *context, bool approximateTanh)
      : OpRewritePattern(context), approximateTanh(approximateTanh) {}

  LogicalResult matchAndRewrite(ScoreModOp op,
                                PatternRewriter &rewriter) const override {
    auto contract = arith::FastMathFlags::contract;
    bool changed = false;
    if (auto scale = op.getScores().getDefiningOp<arith::MulFOp>())
      changed |= addFastMath(rewriter, scale, contract);
    op.getBody().walk([&](arith::ArithFastMathInterface inner) {
      changed |= addFastMath(rewriter, inner, contract);
    });
    if (approximateTanh)
      op.getBody().walk([&](math::TanhOp tanh) {
        changed |= addFastMath(rewriter, tanh, arith::FastMathFlags::afn);
      });
    return success(changed);
  }

  bool approximateTanh;
};
} // namespace

void mlir::fat::populateModificationFastMathPatterns(RewritePatternSet &patterns,
                                                     bool approximateTanh) {
  patterns.add<ModificationFastMath>(patterns.getContext(), approximateTanh);
}
