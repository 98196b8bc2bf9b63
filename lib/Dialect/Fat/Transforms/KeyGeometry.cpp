//===- KeyGeometry.cpp - the mask's geometry over key blocks, expanded ----===//
//
// fat.visible_key_blocks, fat.first_masked_key_block and
// fat.key_block_needs_mask (FatKernelOps.td has the formulas) as arith on
// their own integer type: i32 in the kernel (convert-fat-to-nvvm), index in
// the tiled form (fat-decompose). One expansion for both, so the tiled form
// and the kernel visit and mask the same key blocks.
//
//===----------------------------------------------------------------------===//

#include "fa-t/Dialect/Fat/IR/FatOps.h"
#include "fa-t/Dialect/Fat/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::fat;

namespace {

/// The formulas' arithmetic on the ops' type, and the edges of a row:
/// row + δ + right and row + δ − left.
struct KeyGeometry {
  ImplicitLocOpBuilder &b;
  Type type;
  Value diag;
  std::optional<uint64_t> left, right;

  Value c(int64_t v) {
    return arith::ConstantOp::create(b, type, b.getIntegerAttr(type, v));
  }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, x, y); }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, x, y); }
  /// x / n for x ≥ 0.
  Value divu(Value x, int64_t n) { return arith::DivUIOp::create(b, x, c(n)); }
  Value cmp(arith::CmpIPredicate p, Value x, Value y) {
    return arith::CmpIOp::create(b, p, x, y);
  }
  /// row + δ + right + plus.
  Value rightEdge(Value row, int64_t plus = 0) {
    return add(add(row, diag), c(static_cast<int64_t>(*right) + plus));
  }
  /// row + δ − left.
  Value leftEdge(Value row) {
    return sub(add(row, diag), c(static_cast<int64_t>(*left)));
  }
};

/// ⌈·/N⌉ of Skv and of the last row's right edge + 1 (clamped to ≥ 0),
/// ⌊·/N⌋ of the first row's left edge (≥ 0); the divisions unsigned on
/// non-negative values.
SmallVector<Value> expand(ImplicitLocOpBuilder &b, VisibleKeyBlocksOp op,
                          VisibleKeyBlocksOp::Adaptor in) {
  KeyGeometry g{b, in.getKvLen().getType(), in.getDiag(), op.getLeft(),
                op.getRight()};
  int64_t n = op.getBlockN();
  auto ceilDiv = [&](Value x) { return g.divu(g.add(x, g.c(n - 1)), n); };
  Value end = ceilDiv(in.getKvLen());
  if (g.right) {
    Value keyEnd =
        arith::MaxSIOp::create(b, g.rightEdge(in.getRowLast(), 1), g.c(0));
    end = arith::MinSIOp::create(b, end, ceilDiv(keyEnd));
  }
  Value first = g.c(0);
  if (g.left)
    first = g.divu(
        arith::MaxSIOp::create(b, g.leftEdge(in.getRowFirst()), g.c(0)), n);
  return {first, end};
}

/// Skv / N (unsigned), with a right edge the smaller of that and ⌊(row + δ
/// + right + 1) / N⌋ (signed floor: the edge may be negative).
SmallVector<Value> expand(ImplicitLocOpBuilder &b, FirstMaskedKeyBlockOp op,
                          FirstMaskedKeyBlockOp::Adaptor in) {
  KeyGeometry g{b, in.getKvLen().getType(), in.getDiag(), std::nullopt,
                op.getRight()};
  int64_t n = op.getBlockN();
  Value first = g.divu(in.getKvLen(), n);
  if (g.right)
    first = arith::MinSIOp::create(
        b, first,
        arith::FloorDivSIOp::create(b, g.rightEdge(in.getRowFirst(), 1),
                                    g.c(n)));
  return {first};
}

/// The op's three compares, or-ed.
SmallVector<Value> expand(ImplicitLocOpBuilder &b, KeyBlockNeedsMaskOp op,
                          KeyBlockNeedsMaskOp::Adaptor in) {
  KeyGeometry g{b, in.getKvLen().getType(), in.getDiag(), op.getLeft(),
                op.getRight()};
  Value n = g.c(op.getBlockN());
  Value block = in.getBlock();
  Value blockEnd = g.mul(g.add(block, g.c(1)), n);
  Value needs = g.cmp(arith::CmpIPredicate::sgt, blockEnd, in.getKvLen());
  if (g.right)
    needs = arith::OrIOp::create(
        b, needs,
        g.cmp(arith::CmpIPredicate::sgt, g.sub(blockEnd, g.c(1)),
              g.rightEdge(in.getRowFirst())));
  if (g.left)
    needs = arith::OrIOp::create(
        b, needs,
        g.cmp(arith::CmpIPredicate::slt, g.mul(block, n),
              g.leftEdge(in.getRowLast())));
  return {needs};
}

/// The tiled form's ops (index), expanded where they are.
template <typename OpTy> struct ExpandKeyGeometry : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    rewriter.replaceOp(op,
                       expandKeyGeometry(rewriter, op, op->getOperands()));
    return success();
  }
};

} // namespace

SmallVector<Value> mlir::fat::expandKeyGeometry(OpBuilder &builder,
                                                Operation *op,
                                                ValueRange operands) {
  ImplicitLocOpBuilder b(op->getLoc(), builder);
  if (auto visible = dyn_cast<VisibleKeyBlocksOp>(op))
    return expand(b, visible, {operands, visible});
  if (auto first = dyn_cast<FirstMaskedKeyBlockOp>(op))
    return expand(b, first, {operands, first});
  auto needs = cast<KeyBlockNeedsMaskOp>(op);
  return expand(b, needs, {operands, needs});
}

void mlir::fat::populateKeyGeometryExpansionPatterns(
    RewritePatternSet &patterns) {
  patterns.add<ExpandKeyGeometry<VisibleKeyBlocksOp>,
               ExpandKeyGeometry<FirstMaskedKeyBlockOp>,
               ExpandKeyGeometry<KeyBlockNeedsMaskOp>>(patterns.getContext());
}
