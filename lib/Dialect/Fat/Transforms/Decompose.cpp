//===- Decompose.cpp - --fat-decompose: tile ops -> linalg.generic --------===//
//
// Each fat tile op becomes one linalg.generic whose body is the op's formula
// in f32 scalar arithmetic. Row vectors are indexed by the row loop (d0),
// tiles by (d0, d1); the two contractions add a reduction loop d2. The ops
// of the tensorized level (fat.wgmma, fat.softmax_max, fat.softmax_exp)
// decompose the same way with the GPU's arithmetic (fma forms, the
// exponential polynomial bit for bit), so the CPU runs what the GPU runs.
//
//===----------------------------------------------------------------------===//

#include "fa-t/Dialect/Fat/IR/FatOps.h"
#include "fa-t/Dialect/Fat/Transforms/Passes.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>

#define DEBUG_TYPE "fat-decompose"

namespace mlir::fat {
#define GEN_PASS_DEF_FATDECOMPOSE
#include "fa-t/Dialect/Fat/Transforms/Passes.h.inc"
} // namespace mlir::fat

using namespace mlir;
using namespace mlir::fat;

namespace {

using utils::IteratorType;
constexpr IteratorType kPar = IteratorType::parallel;
constexpr IteratorType kRed = IteratorType::reduction;

/// Affine map over `numDims` loops selecting the listed dims.
AffineMap dimsMap(MLIRContext *ctx, unsigned numDims, ArrayRef<unsigned> dims) {
  SmallVector<AffineExpr> exprs;
  for (unsigned d : dims)
    exprs.push_back(getAffineDimExpr(d, ctx));
  return AffineMap::get(numDims, 0, exprs, ctx);
}

/// Map of a tile-or-row-vector operand of rank `rank` in a 2-loop nest.
AffineMap rowsOrTile(MLIRContext *ctx, int64_t rank) {
  return rank == 1 ? dimsMap(ctx, 1, {0}) : dimsMap(ctx, 2, {0, 1});
}

/// An empty tensor shaped like `like` (with its dynamic sizes).
Value emptyLike(OpBuilder &b, Location loc, Value like, Type elementType) {
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, like);
  return tensor::EmptyOp::create(b, loc, sizes, elementType);
}

/// An empty tensor of exactly `type` (a linalg.generic's init must have its
/// result's type), each dynamic size taken from `sizes`, one per dim, read
/// off the operands: never off the op being replaced.
Value emptyOfType(OpBuilder &b, Location loc, Type type,
                  ArrayRef<OpFoldResult> sizes) {
  auto t = cast<RankedTensorType>(type);
  SmallVector<Value> dynamicSizes;
  for (auto [size, dim] : llvm::zip_equal(sizes, t.getShape()))
    if (ShapedType::isDynamic(dim))
      dynamicSizes.push_back(getValueOrCreateConstantIndexOp(b, loc, size));
  return tensor::EmptyOp::create(b, loc, t, dynamicSizes);
}

/// Widens a 16-bit float to f32 (no-op for f32).
Value toF32(OpBuilder &b, Location loc, Value x) {
  if (x.getType().isF32())
    return x;
  return arith::ExtFOp::create(b, loc, b.getF32Type(), x);
}

Value f32Const(OpBuilder &b, Location loc, double v) {
  return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(float(v)));
}

/// Replaces `op` by d_ij = init_ij + Σ_k a_ik · b, loops (i, j, k), with
/// `aMap` / `bMap` the operands' indices, 16-bit operands widened to f32;
/// `roundA` (P·V's 16-bit type) rounds A to it first, as the tensor cores
/// see the A operand.
void replaceWithContraction(PatternRewriter &rewriter, Operation *op, Value a,
                            Value b, Value init, AffineMap aMap, AffineMap bMap,
                            Type roundA = {}) {
  MLIRContext *ctx = op->getContext();
  rewriter.replaceOpWithNewOp<linalg::GenericOp>(
      op, op->getResult(0).getType(), ValueRange{a, b}, ValueRange{init},
      ArrayRef<AffineMap>{aMap, bMap, dimsMap(ctx, 3, {0, 1})},
      ArrayRef<IteratorType>{kPar, kPar, kRed},
      [&](OpBuilder &nb, Location loc, ValueRange args) {
        Value x = args[0];
        if (roundA && !roundA.isF32())
          x = toF32(nb, loc, arith::TruncFOp::create(nb, loc, roundA, x));
        Value lhs = toF32(nb, loc, x);
        Value rhs = toF32(nb, loc, args[1]);
        Value prod = arith::MulFOp::create(nb, loc, lhs, rhs);
        linalg::YieldOp::create(nb, loc,
                                Value(arith::AddFOp::create(nb, loc, args[2], prod)));
      });
}

/// Replaces `op` (one f32 result shaped like the tile `scores`) by
/// y_ij = f(s_ij) over loops (i, j); `f` may read linalg.index.
void replaceWithTileMap(PatternRewriter &rewriter, Operation *op, Value scores,
                        function_ref<Value(OpBuilder &, Location, Value)> f) {
  Location loc = op->getLoc();
  MLIRContext *ctx = op->getContext();
  Value init = emptyLike(rewriter, loc, scores, rewriter.getF32Type());
  rewriter.replaceOpWithNewOp<linalg::GenericOp>(
      op, op->getResult(0).getType(), ValueRange{scores}, ValueRange{init},
      ArrayRef<AffineMap>{dimsMap(ctx, 2, {0, 1}), dimsMap(ctx, 2, {0, 1})},
      ArrayRef<IteratorType>{kPar, kPar},
      [&](OpBuilder &b, Location loc, ValueRange a) {
        linalg::YieldOp::create(b, loc, f(b, loc, a[0]));
      });
}

/// fat.qk: s_ij = Σ_d q_id · k_jd, loops (i, j, d).
struct DecomposeQK : OpRewritePattern<QKOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(QKOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    // S is [rows of Q, rows of K]; its type may be dynamic where the operands
    // are not, or the other way round.
    Value empty = emptyOfType(
        rewriter, loc, op.getScores().getType(),
        {tensor::getMixedSize(rewriter, loc, op.getQuery(), 0),
         tensor::getMixedSize(rewriter, loc, op.getKey(), 0)});
    Value init = linalg::FillOp::create(rewriter, loc,
                                        f32Const(rewriter, loc, 0.0), empty)
                     .getResult(0);
    replaceWithContraction(rewriter, op, op.getQuery(), op.getKey(), init,
                           dimsMap(ctx, 3, {0, 2}), dimsMap(ctx, 3, {1, 2}));
    return success();
  }
};

/// fat.mask: s_ij = visible(q_start + i, kv_start + j) ? s_ij : −inf.
struct DecomposeMask : OpRewritePattern<MaskOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MaskOp op, PatternRewriter &rewriter) const override {
    bool causal = op.getCausal();
    int64_t left = -1, right = -1;
    if (std::optional<ArrayRef<int64_t>> w = op.getWindow())
      left = (*w)[0], right = (*w)[1];
    Value qStart = op.getQStart(), kvStart = op.getKvStart(),
          kvLen = op.getKvLen(), diag = op.getDiagonal();
    replaceWithTileMap(
        rewriter, op, op.getScores(), [&](OpBuilder &b, Location loc, Value s) {
          using P = arith::CmpIPredicate;
          Value i = linalg::IndexOp::create(b, loc, 0);
          Value j = linalg::IndexOp::create(b, loc, 1);
          Value q = arith::AddIOp::create(b, loc, qStart, i);
          Value k = arith::AddIOp::create(b, loc, kvStart, j);
          Value qd = arith::AddIOp::create(b, loc, q, diag); // q + δ
          Value visible = arith::CmpIOp::create(b, loc, P::slt, k, kvLen);
          auto both = [&](Value c) {
            visible = arith::AndIOp::create(b, loc, visible, c);
          };
          auto idx = [&](int64_t v) {
            return arith::ConstantIndexOp::create(b, loc, v);
          };
          if (causal)
            both(arith::CmpIOp::create(b, loc, P::sle, k, qd));
          if (left >= 0)
            both(arith::CmpIOp::create(
                b, loc, P::sge, k, arith::SubIOp::create(b, loc, qd, idx(left))));
          if (right >= 0)
            both(arith::CmpIOp::create(
                b, loc, P::sle, k, arith::AddIOp::create(b, loc, qd, idx(right))));
          Value ninf = f32Const(b, loc, -INFINITY);
          return Value(arith::SelectOp::create(b, loc, visible, s, ninf));
        });
    return success();
  }
};

/// The row reduction init_i = combine(init_i, x_ij) over j: loops (i, j),
/// j a reduction, the row vector `init` as the accumulator.
template <typename CombineOp>
Value buildRowReduction(OpBuilder &b, Location loc, Value tile, Value init) {
  MLIRContext *ctx = b.getContext();
  return linalg::GenericOp::create(
             b, loc, init.getType(), ValueRange{tile}, ValueRange{init},
             ArrayRef<AffineMap>{dimsMap(ctx, 2, {0, 1}), dimsMap(ctx, 2, {0})},
             ArrayRef<IteratorType>{kPar, kRed},
             [](OpBuilder &nb, Location nloc, ValueRange a) {
               linalg::YieldOp::create(nb, nloc,
                                       Value(CombineOp::create(nb, nloc, a[0], a[1])));
             })
      .getResult(0);
}

/// fat.row_max: m'_i = max(m_i, max_j s_ij).
struct DecomposeRowMax : OpRewritePattern<RowMaxOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(RowMaxOp op, PatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, buildRowReduction<arith::MaximumFOp>(
                               rewriter, op.getLoc(), op.getScores(), op.getInit()));
    return success();
  }
};

/// Replaces `op` by the elementwise y_ij = f(x_ij, r_i) over a tile or row
/// vector `x`, the row vector `r` broadcast along the columns.
void replaceWithRowBroadcast(
    PatternRewriter &rewriter, Operation *op, Value x, Value r,
    function_ref<Value(OpBuilder &, Location, Value, Value)> f) {
  Location loc = op->getLoc();
  MLIRContext *ctx = op->getContext();
  int64_t rank = cast<RankedTensorType>(x.getType()).getRank();
  AffineMap tile = rowsOrTile(ctx, rank);
  AffineMap rows = AffineMap::get(rank, 0, getAffineDimExpr(0, ctx), ctx);
  Value init = emptyLike(rewriter, loc, x, rewriter.getF32Type());
  rewriter.replaceOpWithNewOp<linalg::GenericOp>(
      op, x.getType(), ValueRange{x, r}, ValueRange{init},
      ArrayRef<AffineMap>{tile, rows, tile}, SmallVector<IteratorType>(rank, kPar),
      [&](OpBuilder &b, Location loc, ValueRange a) {
        linalg::YieldOp::create(b, loc, f(b, loc, a[0], a[1]));
      });
}

/// fat.exp2: y = m == −inf ? 0 : exp2(c · (x − m)).
struct DecomposeExp2 : OpRewritePattern<Exp2Op> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(Exp2Op op, PatternRewriter &rewriter) const override {
    double c = op.getScale().convertToDouble();
    replaceWithRowBroadcast(
        rewriter, op, op.getInput(), op.getMax(),
        [&](OpBuilder &b, Location loc, Value x, Value m) -> Value {
          Value diff = arith::SubFOp::create(b, loc, x, m);
          Value e = math::Exp2Op::create(
              b, loc, arith::MulFOp::create(b, loc, diff, f32Const(b, loc, c)));
          Value empty = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                              m, f32Const(b, loc, -INFINITY));
          return arith::SelectOp::create(b, loc, empty, f32Const(b, loc, 0.0), e);
        });
    return success();
  }
};

/// fat.row_sum: l'_i = l_i + Σ_j p_ij.
struct DecomposeRowSum : OpRewritePattern<RowSumOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(RowSumOp op, PatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, buildRowReduction<arith::AddFOp>(rewriter, op.getLoc(),
                                                            op.getInput(), op.getInit()));
    return success();
  }
};

/// fat.rescale: x'_ij = α_i · x_ij.
struct DecomposeRescale : OpRewritePattern<RescaleOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(RescaleOp op, PatternRewriter &rewriter) const override {
    replaceWithRowBroadcast(rewriter, op, op.getInput(), op.getFactor(),
                            [](OpBuilder &b, Location loc, Value x, Value alpha) -> Value {
                              return arith::MulFOp::create(b, loc, x, alpha);
                            });
    return success();
  }
};

/// fat.pv: o'_id = o_id + Σ_j round_V(p_ij) · v_jd, loops (i, d, j).
struct DecomposePV : OpRewritePattern<PVOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(PVOp op, PatternRewriter &rewriter) const override {
    MLIRContext *ctx = op.getContext();
    // P is the 16-bit A operand of the tensor-core GEMM: round it the same
    // way here so the reference sees the same products.
    replaceWithContraction(rewriter, op, op.getProbs(), op.getValue(), op.getInit(),
                           dimsMap(ctx, 3, {0, 2}), dimsMap(ctx, 3, {2, 1}),
                           getElementTypeOrSelf(op.getValue().getType()));
    return success();
  }
};

/// fat.finalize: O_i = l_i ≠ 0 ? o_i / l_i : 0,
///               LSE_i = l_i ≠ 0 ? scale · m_i + ln l_i : −inf
/// (with a run-time c = scale · log2 e: ln 2 · (c · m_i + log2 l_i); without
/// a sum operand, l is acc's column Dv, the first ones column).
struct DecomposeFinalize : OpRewritePattern<FinalizeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(FinalizeOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    Type outElt = getElementTypeOrSelf(op.getOutput().getType());
    Value acc = op.getAcc(), sum = op.getSum(), c = op.getExp2Scale();
    if (!sum) {
      // The output's columns of acc, and the row sums beside them.
      auto accType = cast<RankedTensorType>(acc.getType());
      int64_t dv = cast<ShapedType>(op.getOutput().getType()).getDimSize(1);
      SmallVector<OpFoldResult> rows{tensor::getMixedSize(rewriter, loc, acc, 0)};
      OpFoldResult zero = rewriter.getIndexAttr(0), one = rewriter.getIndexAttr(1);
      sum = tensor::ExtractSliceOp::create(
          rewriter, loc,
          RankedTensorType::get({accType.getDimSize(0)}, accType.getElementType()),
          acc, {zero, rewriter.getIndexAttr(dv)}, {rows[0], one}, {one, one});
      acc = tensor::ExtractSliceOp::create(
          rewriter, loc, acc, {zero, zero}, {rows[0], rewriter.getIndexAttr(dv)},
          {one, one});
    }
    // O is shaped like acc; LSE has acc's rows, whatever the type of l says.
    SmallVector<OpFoldResult> accSizes = tensor::getMixedSizes(rewriter, loc, acc);
    Value outInit =
        emptyOfType(rewriter, loc, op.getOutput().getType(), accSizes);
    Value lseInit = emptyOfType(rewriter, loc, op.getLse().getType(),
                                ArrayRef(accSizes).take_front());
    AffineMap tile = dimsMap(ctx, 2, {0, 1}), rows = dimsMap(ctx, 2, {0});
    // The LSE is written once per row although the loop nest visits each
    // row Dv times; every visit writes the same value.
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{op.getOutput().getType(), op.getLse().getType()},
        ValueRange{acc, sum, op.getMax()}, ValueRange{outInit, lseInit},
        ArrayRef<AffineMap>{tile, rows, rows, tile, rows},
        ArrayRef<IteratorType>{kPar, kPar},
        [&](OpBuilder &b, Location loc, ValueRange a) {
          Value o = a[0], l = a[1], m = a[2];
          Value zero = f32Const(b, loc, 0.0);
          Value nonEmpty =
              arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, l, zero);
          Value out = arith::SelectOp::create(
              b, loc, nonEmpty, arith::DivFOp::create(b, loc, o, l), zero);
          if (!outElt.isF32())
            out = arith::TruncFOp::create(b, loc, outElt, out);
          Value lse =
              c ? arith::MulFOp::create(
                      b, loc,
                      arith::AddFOp::create(b, loc, arith::MulFOp::create(b, loc, m, c),
                                            math::Log2Op::create(b, loc, l)),
                      f32Const(b, loc, M_LN2))
                      .getResult()
                : arith::AddFOp::create(
                      b, loc,
                      arith::MulFOp::create(
                          b, loc, m,
                          f32Const(b, loc, op.getScaleAttr().getValueAsDouble())),
                      math::LogOp::create(b, loc, l))
                      .getResult();
          lse = arith::SelectOp::create(b, loc, nonEmpty, lse,
                                        f32Const(b, loc, -INFINITY));
          linalg::YieldOp::create(b, loc, ValueRange{out, lse});
        });
    rewriter.replaceOp(op, generic.getResults());
    return success();
  }
};

/// The global position (i', j') of the element (linalg.index 0, 1) of a
/// fat.score_mod / fat.mask_mod tile. Padding rows and keys of a tile read
/// the last real ones (their results are masked or dropped), so a region
/// indexing a capture stays in range.
template <typename ModOp>
std::pair<Value, Value> clampedPosition(OpBuilder &b, Location loc, ModOp op,
                                        bool rowsAtOrigin = false) {
  Value i = rowsAtOrigin ? op.getQStart()
                         : Value(arith::AddIOp::create(
                               b, loc, op.getQStart(),
                               linalg::IndexOp::create(b, loc, 0)));
  Value j = arith::AddIOp::create(b, loc, op.getKvStart(),
                                  linalg::IndexOp::create(b, loc, 1));
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value lastRow = arith::SubIOp::create(b, loc, op.getQLen(), one);
  Value lastKey = arith::SubIOp::create(b, loc, op.getKvLen(), one);
  return {arith::MinSIOp::create(b, loc, i, lastRow),
          arith::MinSIOp::create(b, loc, j, lastKey)};
}

/// The body of fat.score_mod / fat.mask_mod cloned into a linalg.generic
/// over the tile: the region's (score,) b, h, i, j and captures mapped to
/// the element (scaled), the op's batch and head, the clamped global row
/// and key, and the capture values; returns the yielded value.
/// With `tanhPoly` (fat.score_mod's tanh_poly) an f32 tanh of x is the
/// op's polynomial where |x| ≤ its bound, the precise tanh elsewhere.
template <typename ModOp>
Value cloneModBody(OpBuilder &b, Location loc, ModOp op, Value score,
                   std::pair<Value, Value> position, bool tanhPoly = false) {
  Block &body = op.getBody().front();
  SmallVector<Value> args;
  if (score)
    args.push_back(score);
  args.append({op.getBatch(), op.getHead(), position.first, position.second});
  llvm::append_range(args, op.getCaptures());
  IRMapping mapping;
  mapping.map(body.getArguments(), args);
  for (Operation &inner : body.without_terminator()) {
    Operation *copy = b.clone(inner, mapping);
    auto tanh = dyn_cast<math::TanhOp>(copy);
    if (!tanhPoly || !tanh || !tanh.getType().isF32())
      continue;
    const auto &c = ScoreModOp::kTanhPoly;
    Value x = tanh.getOperand();
    Value t = arith::MulFOp::create(b, loc, x, x);
    Value p = f32Const(b, loc, c[3]);
    for (int k = 2; k >= 0; --k)
      p = math::FmaOp::create(b, loc, p, t, f32Const(b, loc, c[k]));
    Value poly = arith::MulFOp::create(b, loc, x, p);
    double bound = ScoreModOp::kTanhPolyBound;
    Value inRange = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLE, t,
                                          f32Const(b, loc, bound * bound));
    mapping.map(inner.getResult(0),
                arith::SelectOp::create(b, loc, inRange, poly, tanh));
  }
  return mapping.lookup(cast<YieldOp>(body.getTerminator()).getValue());
}

/// fat.score_mod: s'_ij = body(scale · s_ij, b, h, i', j', captures) (i'
/// the clamped q_start for every row with rows_at_origin; tanh_poly's
/// polynomial per element, as cloneModBody says).
struct DecomposeScoreMod : OpRewritePattern<ScoreModOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ScoreModOp op, PatternRewriter &rewriter) const override {
    double scale = op.getScale().convertToDouble();
    replaceWithTileMap(rewriter, op, op.getScores(),
                       [&](OpBuilder &b, Location loc, Value s) {
                         Value scaled =
                             arith::MulFOp::create(b, loc, s, f32Const(b, loc, scale));
                         return cloneModBody(
                             b, loc, op, scaled,
                             clampedPosition(b, loc, op, op.getRowsAtOrigin()),
                             op.getTanhPoly());
                       });
    return success();
  }
};

/// fat.score_band: t_ij = body(b, h, i', j', captures) · (1 / scale), the
/// reciprocal rounded once as on the GPU (i', j' clamped as for the score
/// region: a padding row or key reads the last real one).
struct DecomposeScoreBand : OpRewritePattern<ScoreBandOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ScoreBandOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value reciprocal = arith::DivFOp::create(
        rewriter, loc, f32Const(rewriter, loc, 1.0), op.getScale());
    Value shape = tensor::EmptyOp::create(
        rewriter, loc, cast<RankedTensorType>(op.getType()), ValueRange{});
    replaceWithTileMap(
        rewriter, op, shape, [&](OpBuilder &b, Location loc, Value) {
          Value term =
              cloneModBody(b, loc, op, Value(), clampedPosition(b, loc, op));
          return arith::MulFOp::create(b, loc, term, reciprocal).getResult();
        });
    return success();
  }
};

/// fat.mask_mod: s'_ij = keep_ij ? s_ij : −inf with keep = body(b, h, i',
/// j', captures), and with `kv_ranges = n` also r[b, ⌊i'/64⌋, 0] ≤ j' <
/// r[b, ⌊i'/64⌋, 1] for r capture n (the verifier of fat.attention gave the
/// table a row per batch entry and 64 query rows).
struct DecomposeMaskMod : OpRewritePattern<MaskModOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MaskModOp op, PatternRewriter &rewriter) const override {
    replaceWithTileMap(
        rewriter, op, op.getScores(), [&](OpBuilder &b, Location loc, Value s) {
          std::pair<Value, Value> at = clampedPosition(b, loc, op);
          Value keep = cloneModBody(b, loc, op, Value(), at);
          if (std::optional<uint64_t> ranges = op.getKvRanges()) {
            auto idx = [&](int64_t v) {
              return arith::ConstantIndexOp::create(b, loc, v);
            };
            Value table = op.getCaptures()[*ranges];
            Value group = arith::DivUIOp::create(b, loc, at.first, idx(64));
            auto bound = [&](int64_t column) {
              return tensor::ExtractOp::create(
                  b, loc, table, ValueRange{op.getBatch(), group, idx(column)});
            };
            Value j = arith::IndexCastOp::create(b, loc, b.getI32Type(),
                                                 at.second);
            Value inside = arith::AndIOp::create(
                b, loc,
                arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, j,
                                      bound(0)),
                arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, j,
                                      bound(1)));
            keep = arith::AndIOp::create(b, loc, keep, inside);
          }
          return Value(arith::SelectOp::create(b, loc, keep, s,
                                               f32Const(b, loc, -INFINITY)));
        });
    return success();
  }
};

/// fat.wgmma: d_ij = c_ij + Σ_k a_ik · b_kj (b_jk with transpose_b), loops
/// (i, j, k); the accumulator starts at 0 without `acc` (scale-d = 0).
struct DecomposeWgmma : OpRewritePattern<WgmmaOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(WgmmaOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    Value init = op.getAcc();
    if (!init) {
      Value empty = tensor::EmptyOp::create(
          rewriter, loc, cast<RankedTensorType>(op.getResult().getType()),
          ValueRange{});
      init = linalg::FillOp::create(rewriter, loc, f32Const(rewriter, loc, 0.0),
                                    empty)
                 .getResult(0);
    }
    AffineMap bMap = op.getTransposeB() ? dimsMap(ctx, 3, {1, 2})
                                        : dimsMap(ctx, 3, {2, 1});
    replaceWithContraction(rewriter, op, op.getA(), op.getB(), init,
                           dimsMap(ctx, 3, {0, 2}), bMap);
    return success();
  }
};

/// fat.bias_key_columns: the constant tile, row r = [r, r, r, 256, 256,
/// 256, 0, …].
struct DecomposeBiasKeyColumns : OpRewritePattern<BiasKeyColumnsOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(BiasKeyColumnsOp op,
                                PatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    SmallVector<Attribute> values;
    for (int64_t r = 0; r < type.getDimSize(0); ++r)
      for (int64_t c = 0; c < type.getDimSize(1); ++c)
        values.push_back(FloatAttr::get(type.getElementType(),
                                        BiasKeyColumnsOp::value(r, c)));
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(
        op, DenseElementsAttr::get(type, values));
    return success();
  }
};

/// fat.bias_query_columns: G from the region, then every row [split(g),
/// split(g·d/256), 0, …] with g = G / scale, d = float(kv_start −
/// q_start), split as the op's description gives it (the GPU rounds the
/// same values in the same order).
/// The factor G a bias op's region yields (fat.bias_query_columns',
/// fat.key_weights'), its body cloned at the op with b, h and the captures.
template <typename BiasOp>
Value cloneFactorRegion(PatternRewriter &rewriter, BiasOp op) {
  Block &body = op.getBody().front();
  IRMapping mapping;
  SmallVector<Value> args{op.getBatch(), op.getHead()};
  llvm::append_range(args, op.getCaptures());
  mapping.map(body.getArguments(), args);
  for (Operation &inner : body.without_terminator())
    rewriter.clone(inner, mapping);
  return mapping.lookup(cast<YieldOp>(body.getTerminator()).getValue());
}

struct DecomposeBiasQueryColumns : OpRewritePattern<BiasQueryColumnsOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(BiasQueryColumnsOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getType());
    Type elt = type.getElementType();
    Value factor = cloneFactorRegion(rewriter, op);
    Value g = arith::DivFOp::create(rewriter, loc, factor, op.getScale());
    Value offset =
        arith::SubIOp::create(rewriter, loc, op.getKvStart(), op.getQStart());
    Value d = arith::SIToFPOp::create(
        rewriter, loc, rewriter.getF32Type(),
        arith::IndexCastOp::create(rewriter, loc, rewriter.getI64Type(),
                                   offset));
    Value t = arith::MulFOp::create(
        rewriter, loc, arith::MulFOp::create(rewriter, loc, g, d),
        f32Const(rewriter, loc, 1.0 / BiasKeyColumnsOp::kOffsetScale));
    SmallVector<Value> row;
    for (Value x : {g, t}) {
      // x₀ = rnd(x), x₁ = rnd(x − x₀), x₂ = rnd(x − x₀ − x₁); the
      // differences are exact in f32.
      Value rest = x;
      for (int64_t k = 0; k < BiasKeyColumnsOp::kParts; ++k) {
        Value part = arith::TruncFOp::create(rewriter, loc, elt, rest);
        row.push_back(part);
        rest = arith::SubFOp::create(
            rewriter, loc, rest,
            arith::ExtFOp::create(rewriter, loc, rewriter.getF32Type(), part));
      }
    }
    Value zero =
        arith::ConstantOp::create(rewriter, loc, FloatAttr::get(elt, 0.0));
    row.resize(type.getDimSize(1), zero);
    Value vector = tensor::FromElementsOp::create(
        rewriter, loc, RankedTensorType::get({type.getDimSize(1)}, elt), row);
    Value empty = tensor::EmptyOp::create(rewriter, loc, type, ValueRange{});
    rewriter.replaceOp(op,
                       linalg::BroadcastOp::create(rewriter, loc, vector, empty,
                                                   ArrayRef<int64_t>{0})
                           ->getResult(0));
    return success();
  }
};

/// fat.key_weights: G from the region, a = G·log2 e, ŵ_k = rnd(exp2(a·(k −
/// (N−1)/2))), offset (G / scale)·(j₀ + (N−1)/2) — NaN where |G|·(N−1)/2
/// exceeds the bound the weights are exact under, as on the GPU (the output
/// turns NaN instead of silently wrong).
struct DecomposeKeyWeights : OpRewritePattern<KeyWeightsOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(KeyWeightsOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    auto type = cast<RankedTensorType>(op.getWeights().getType());
    Type elt = type.getElementType();
    int64_t runKeys = op.getRunKeys();
    double centre = 0.5 * double(runKeys - 1);
    Value factor = cloneFactorRegion(rewriter, op);
    Value a = arith::MulFOp::create(rewriter, loc, factor,
                                    f32Const(rewriter, loc, M_LOG2E));
    // Past the exact spread the weights and offsets are NaN (as the GPU's).
    Value spread = arith::MulFOp::create(
        rewriter, loc, math::AbsFOp::create(rewriter, loc, factor),
        f32Const(rewriter, loc, centre));
    Value exact = arith::CmpFOp::create(
        rewriter, loc, arith::CmpFPredicate::OLE, spread,
        f32Const(rewriter, loc, KeyWeightsOp::kMaxSpread));
    Value weights =
        linalg::GenericOp::create(
            rewriter, loc, type, ValueRange{},
            ValueRange{
                tensor::EmptyOp::create(rewriter, loc, type, ValueRange{})},
            ArrayRef<AffineMap>{dimsMap(ctx, 1, {0})},
            ArrayRef<IteratorType>{kPar},
            [&](OpBuilder &b, Location loc, ValueRange) {
              // r, the key's place in its run.
              Value k = arith::SIToFPOp::create(
                  b, loc, b.getF32Type(),
                  arith::IndexCastOp::create(
                      b, loc, b.getI64Type(),
                      arith::RemUIOp::create(
                          b, loc, linalg::IndexOp::create(b, loc, 0),
                          arith::ConstantIndexOp::create(b, loc, runKeys))));
              Value x = arith::MulFOp::create(
                  b, loc, a,
                  arith::SubFOp::create(b, loc, k, f32Const(b, loc, centre)));
              linalg::YieldOp::create(
                  b, loc,
                  Value(arith::TruncFOp::create(
                      b, loc, elt,
                      arith::SelectOp::create(b, loc, exact,
                                              math::Exp2Op::create(b, loc, x),
                                              f32Const(b, loc, NAN)))));
            })
            .getResult(0);
    Value g = arith::DivFOp::create(rewriter, loc, factor, op.getScale());
    Value start = arith::SIToFPOp::create(
        rewriter, loc, rewriter.getF32Type(),
        arith::IndexCastOp::create(rewriter, loc, rewriter.getI64Type(),
                                   op.getKvStart()));
    SmallVector<Value> results{weights};
    for (size_t p = 0; p < op.getOffsets().size(); ++p) {
      // o_p = (G/c)·(j₀ + p·n + (n − 1)/2): the run's middle key, exact
      // in f32 (as the GPU adds it).
      Value middle = arith::AddFOp::create(
          rewriter, loc, start,
          f32Const(rewriter, loc, double(p * runKeys) + centre));
      Value offset = arith::MulFOp::create(rewriter, loc, g, middle);
      results.push_back(arith::SelectOp::create(rewriter, loc, exact, offset,
                                                f32Const(rewriter, loc, NAN)));
    }
    rewriter.replaceOp(op, results);
    return success();
  }
};

/// ĉm = m' = −inf ? 0 : c·m' (fat.softmax_max / fat.softmax_exp; c·(m' −
/// o) with an offset o): the subtrahend of every exponent argument, 0 for a
/// row with nothing visible.
Value scaledMax(OpBuilder &b, Location loc, Value m, Value c,
                Value offset = {}) {
  Value isNegInf = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, m,
                                         f32Const(b, loc, -INFINITY));
  // With an offset o the scores read as s + o: ĉm = c·(m' − o).
  Value shifted = offset ? arith::SubFOp::create(b, loc, m, offset) : m;
  return arith::SelectOp::create(b, loc, isNegInf, f32Const(b, loc, 0.0),
                                 arith::MulFOp::create(b, loc, shifted, c));
}

/// fat.softmax_max: a row-max reduction, then per row (m' , α) as the op's
/// description gives them (eager or lazy).
struct DecomposeSoftmaxMax : OpRewritePattern<SoftmaxMaxOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SoftmaxMaxOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    Value m = op.getMax();
    // m̂ = max(m, rowmax S), or with offsets max(m, max_p (rowmax S_p +
    // o_p)) over the runs S_p of columns
    Value mHat;
    if (ValueRange offsets = op.getOffsets(); !offsets.empty()) {
      auto sType = cast<RankedTensorType>(op.getScores().getType());
      int64_t rows = sType.getDimSize(0);
      int64_t runKeys = sType.getDimSize(1) / int64_t(offsets.size());
      SmallVector<Value> runMax;
      for (size_t p = 0; p < offsets.size(); ++p) {
        Value lowest = linalg::FillOp::create(
                           rewriter, loc, f32Const(rewriter, loc, -INFINITY),
                           emptyLike(rewriter, loc, m, rewriter.getF32Type()))
                           .getResult(0);
        Value run = tensor::ExtractSliceOp::create(
            rewriter, loc, op.getScores(),
            ArrayRef<OpFoldResult>{rewriter.getIndexAttr(0),
                                   rewriter.getIndexAttr(p * runKeys)},
            ArrayRef<OpFoldResult>{rewriter.getIndexAttr(rows),
                                   rewriter.getIndexAttr(runKeys)},
            ArrayRef<OpFoldResult>{rewriter.getIndexAttr(1),
                                   rewriter.getIndexAttr(1)});
        runMax.push_back(
            buildRowReduction<arith::MaxNumFOp>(rewriter, loc, run, lowest));
      }
      SmallVector<Value> inputs(runMax);
      inputs.push_back(m);
      AffineMap row = dimsMap(ctx, 1, {0});
      SmallVector<AffineMap> maps(inputs.size() + 1, row);
      mHat = linalg::GenericOp::create(
                 rewriter, loc, m.getType(), inputs,
                 ValueRange{emptyLike(rewriter, loc, m, rewriter.getF32Type())},
                 maps, ArrayRef<IteratorType>{kPar},
                 [&](OpBuilder &b, Location loc, ValueRange a) {
                   Value acc = a[offsets.size()];
                   for (size_t p = 0; p < offsets.size(); ++p)
                     acc = arith::MaxNumFOp::create(
                         b, loc, acc,
                         arith::AddFOp::create(b, loc, a[p], offsets[p]));
                   linalg::YieldOp::create(b, loc, acc);
                 })
                 .getResult(0);
    } else {
      mHat =
          buildRowReduction<arith::MaxNumFOp>(rewriter, loc, op.getScores(), m);
    }
    Value c = op.getScale();
    std::optional<double> tau;
    if (std::optional<APFloat> t = op.getThreshold())
      tau = t->convertToDouble();
    AffineMap row = dimsMap(ctx, 1, {0});
    Value init0 = emptyLike(rewriter, loc, m, rewriter.getF32Type());
    Value init1 = emptyLike(rewriter, loc, m, rewriter.getF32Type());
    auto rows = linalg::GenericOp::create(
        rewriter, loc, TypeRange{m.getType(), m.getType()}, ValueRange{mHat, m},
        ValueRange{init0, init1}, ArrayRef<AffineMap>{row, row, row, row},
        ArrayRef<IteratorType>{kPar},
        [&](OpBuilder &b, Location loc, ValueRange a) {
          Value hat = a[0], old = a[1], cst = c;
          Value mNew = hat, moved;
          if (tau) {
            // c·(m̂ − m) is NaN for m = −inf: test that case on its own.
            Value growth = arith::MulFOp::create(
                b, loc, arith::SubFOp::create(b, loc, hat, old), cst);
            moved = arith::OrIOp::create(
                b, loc,
                arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, growth,
                                      f32Const(b, loc, *tau)),
                arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, old,
                                      f32Const(b, loc, -INFINITY)));
            mNew = arith::SelectOp::create(b, loc, moved, hat, old);
          }
          Value negScaled = arith::NegFOp::create(b, loc, scaledMax(b, loc, mNew, cst));
          Value alpha = math::Exp2Op::create(
              b, loc, math::FmaOp::create(b, loc, old, cst, negScaled));
          if (tau)
            alpha = arith::SelectOp::create(b, loc, moved, alpha,
                                            f32Const(b, loc, 1.0));
          linalg::YieldOp::create(b, loc, ValueRange{mNew, alpha});
        });
    rewriter.replaceOp(op, rows.getResults());
    return success();
  }
};

/// 2^x on the FMA pipe as the GPU computes it (fat.softmax_exp): x clamped
/// to ≥ −127, p(x − ⌊x⌋) in f32 Horner form, ⌊x⌋ added to p's exponent bits
/// as an integer (the GPU takes ⌊x⌋ from a round-down add of 1.5·2^23,
/// which equals floor here).
Value buildExp2Polynomial(OpBuilder &b, Location loc, Value x) {
  const auto &c = SoftmaxExpOp::kExp2Poly;
  Type i32 = b.getI32Type();
  Value clamped = arith::MaxNumFOp::create(b, loc, x, f32Const(b, loc, -127.0));
  Value floorX = math::FloorOp::create(b, loc, clamped);
  Value frac = arith::SubFOp::create(b, loc, clamped, floorX);
  Value p = math::FmaOp::create(b, loc, frac, f32Const(b, loc, c[2]),
                                f32Const(b, loc, c[1]));
  p = math::FmaOp::create(b, loc, frac, p, f32Const(b, loc, c[0]));
  p = math::FmaOp::create(b, loc, frac, p, f32Const(b, loc, 1.0));
  Value exponent = arith::ShLIOp::create(
      b, loc, arith::FPToSIOp::create(b, loc, i32, floorX),
      arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(23)));
  Value bits = arith::AddIOp::create(
      b, loc, arith::BitcastOp::create(b, loc, i32, p), exponent);
  return arith::BitcastOp::create(b, loc, b.getF32Type(), bits);
}

/// fat.softmax_exp: p_ij = exp2 or poly of fma(s_ij, c, −ĉm_i), the
/// polynomial columns a constant i1 row vector read off the fragment
/// layout; with rowsum, l'_i = fma(l_i, α_i, Σ_j p_ij) (without α,
/// l_i + Σ_j p_ij).
struct DecomposeSoftmaxExp : OpRewritePattern<SoftmaxExpOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SoftmaxExpOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    auto sType = cast<RankedTensorType>(op.getScores().getType());
    int64_t n = sType.getDimSize(1);
    if (ShapedType::isDynamic(n))
      return rewriter.notifyMatchFailure(op, "dynamic column count");
    double phi = op.getExp2Poly().convertToDouble();
    SmallVector<bool> poly;
    for (int64_t j = 0; j < n; ++j)
      poly.push_back(SoftmaxExpOp::usesPolynomial(
          SoftmaxExpOp::fragmentElement(j), phi));
    auto polyType = RankedTensorType::get({n}, rewriter.getI1Type());
    Value polyColumns = arith::ConstantOp::create(
        rewriter, loc, DenseElementsAttr::get(polyType, ArrayRef<bool>(poly)));
    Value c = op.getScale();
    Value init = emptyLike(rewriter, loc, op.getScores(), rewriter.getF32Type());
    auto probs = linalg::GenericOp::create(
        rewriter, loc, sType, ValueRange{op.getScores(), op.getMax(), polyColumns},
        ValueRange{init},
        ArrayRef<AffineMap>{dimsMap(ctx, 2, {0, 1}), dimsMap(ctx, 2, {0}),
                            dimsMap(ctx, 2, {1}), dimsMap(ctx, 2, {0, 1})},
        ArrayRef<IteratorType>{kPar, kPar},
        [&](OpBuilder &b, Location loc, ValueRange a) {
          Value cst = c;
          // With offsets: the column's run's.
          Value offset;
          if (ValueRange offsets = op.getOffsets(); !offsets.empty()) {
            Value run = arith::DivUIOp::create(
                b, loc, linalg::IndexOp::create(b, loc, 1),
                arith::ConstantIndexOp::create(b, loc,
                                               n / int64_t(offsets.size())));
            offset = offsets.back();
            for (size_t p = offsets.size() - 1; p-- > 0;)
              offset = arith::SelectOp::create(
                  b, loc,
                  arith::CmpIOp::create(
                      b, loc, arith::CmpIPredicate::eq, run,
                      arith::ConstantIndexOp::create(b, loc, p)),
                  offsets[p], offset);
          }
          Value negScaled = arith::NegFOp::create(
              b, loc, scaledMax(b, loc, a[1], cst, offset));
          Value x = math::FmaOp::create(b, loc, a[0], cst, negScaled);
          Value e = math::Exp2Op::create(b, loc, x);
          if (phi > 0.0)
            e = arith::SelectOp::create(b, loc, a[2],
                                        buildExp2Polynomial(b, loc, x), e);
          linalg::YieldOp::create(b, loc, e);
        });
    Value p = probs.getResult(0);
    if (!op.getSum()) {
      rewriter.replaceOp(op, ValueRange{p});
      return success();
    }
    // l' = fma(l, α, Σ_j P): the block's sum first, as the GPU's per-thread
    // partial sums, then one fused multiply-add per row.
    Value zeros = linalg::FillOp::create(
                      rewriter, loc, f32Const(rewriter, loc, 0.0),
                      emptyLike(rewriter, loc, op.getSum(), rewriter.getF32Type()))
                      .getResult(0);
    Value blockSum = buildRowReduction<arith::AddFOp>(rewriter, loc, p, zeros);
    if (!op.getAlpha()) { // a fixed reference: l' = l + Σ_j P
      rewriter.replaceOp(
          op, ValueRange{p, arith::AddFOp::create(rewriter, loc, op.getSum(),
                                                  blockSum)});
      return success();
    }
    AffineMap row = dimsMap(ctx, 1, {0});
    Value sumInit = emptyLike(rewriter, loc, op.getSum(), rewriter.getF32Type());
    Value newSum = linalg::GenericOp::create(
                       rewriter, loc, op.getSum().getType(),
                       ValueRange{op.getSum(), op.getAlpha(), blockSum}, ValueRange{sumInit},
                       ArrayRef<AffineMap>{row, row, row, row}, ArrayRef<IteratorType>{kPar},
                       [](OpBuilder &b, Location loc, ValueRange a) {
                         linalg::YieldOp::create(
                             b, loc, Value(math::FmaOp::create(b, loc, a[0], a[1], a[2])));
                       })
                       .getResult(0);
    rewriter.replaceOp(op, ValueRange{p, newSum});
    return success();
  }
};

struct FatDecomposePass : fat::impl::FatDecomposeBase<FatDecomposePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateFatDecomposePatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace

void mlir::fat::populateFatDecomposePatterns(RewritePatternSet &patterns) {
  patterns
      .add<DecomposeQK, DecomposeMask, DecomposeRowMax, DecomposeExp2,
           DecomposeRowSum, DecomposeRescale, DecomposePV, DecomposeFinalize,
           DecomposeWgmma, DecomposeSoftmaxMax, DecomposeSoftmaxExp,
           DecomposeScoreMod, DecomposeMaskMod, DecomposeBiasKeyColumns,
           DecomposeBiasQueryColumns, DecomposeScoreBand, DecomposeKeyWeights>(
          patterns.getContext());
  populateKeyGeometryExpansionPatterns(patterns);
}
