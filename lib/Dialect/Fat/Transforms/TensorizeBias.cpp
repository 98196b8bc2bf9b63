//===- TensorizeBias.cpp - positional biases onto the tensor cores --------===//
//
// Part of --fat-tensorize (`linear-bias=mma|weights`,
// `relative-bias=accumulator`). A
// score region s' = s + G·(j − i) with G free of the score and the positions
// (ALiBi) costs the vector units one FFMA per score on top of the plain
// kernel's softmax. Choosing Q's and K's extra columns moves it into Q·Kᵀ
// instead (FlashAttention-T's idea, applied to the bias):
//
//   fat.wgmma(Q, K)              fat.wgmma([Q | X], [K | R])
//   fat.score_mod {s + G(j−i)} → (no region)
//   softmax constant log2 e      softmax constant scale·log2 e
//
// with X = fat.bias_query_columns (G / scale in three parts, and the block's
// offset kv_start − q_start times it) and R = fat.bias_key_columns (the key
// offsets r within the block): one more k16 step, D = 128: 1/8 more of
// Q·Kᵀ. The scores then miss G·(i − q_start), one constant per row: O does
// not see it, the LSE would, so only kernels that write no LSE.
//
// `linear-bias=weights` leaves Q·Kᵀ alone: e^(s + G·j) = e^(s + o_b)·w_k
// with o_b the key block's share (one add per row in the softmax) and w_k
// = e^(G·(k − (N−1)/2)) the same N weights in every block, which multiply
// the rounded P column by column (rowsum=mma's ones columns then sum the
// same weighted P that O reads, so the product's rounding cancels where a
// few keys dominate; on V's rows it did not: perf log run 143):
//
//   fat.score_mod {s + G(j−i)}  → (no region)
//   fat.softmax_max/_exp S      → … S offset %o (constant scale·log2 e)
//   fat.wgmma(P̂, [V | 1])       → fat.wgmma(P̂ · bcast(fat.key_weights), [V |
//   1])
//
// A score region s' = s ± T(b, h, j − i) whose term reads the row and key
// only as their difference (a learned relative-position table) has no such
// low-rank form, but Q·Kᵀ's accumulator is free:
//
//   fat.wgmma(Q, K)              fat.wgmma(Q, K, fat.score_band)
//   fat.score_mod {s + T}      → (no region)
//   softmax constant log2 e      softmax constant scale·log2 e
//
// with fat.score_band the tile of T / scale, so scale·(Q·Kᵀ + T/scale) =
// scale·s + T: the LSE keeps every term. A block's M·N terms take M + N − 1
// values, which the Hopper kernel computes once per block (perf log run
// 136).
//
//===----------------------------------------------------------------------===//

#include "TiledAttention.h"
#include "fa-t/Dialect/Fat/Hopper/KernelModel.h"
#include "fa-t/Dialect/Fat/IR/FatOps.h"
#include "fa-t/Dialect/Fat/Transforms/Passes.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace mlir::fat;

namespace {

/// The softmax ops that read `scores` (through masks): the ones whose
/// constant c changes with the scores' unit. Fails where anything else
/// reads them.
LogicalResult collectSoftmaxReaders(Value scores,
                                    SmallVectorImpl<Operation *> &readers) {
  SmallVector<Value> work{scores};
  while (!work.empty()) {
    Value s = work.pop_back_val();
    for (OpOperand &use : s.getUses()) {
      Operation *user = use.getOwner();
      if (isa<MaskOp, MaskModOp>(user) && use.getOperandNumber() == 0) {
        work.push_back(user->getResult(0));
      } else if (auto max = dyn_cast<SoftmaxMaxOp>(user);
                 max && max.getScores() == s) {
        readers.push_back(max);
      } else if (auto exp = dyn_cast<SoftmaxExpOp>(user);
                 exp && exp.getScores() == s) {
        readers.push_back(exp);
      } else {
        return failure();
      }
    }
  }
  return success();
}

/// The softmax constant c of each of `readers` times `scale`: the scores
/// they read become unscaled (as in a kernel without a region).
void scaleSoftmaxConstants(PatternRewriter &rewriter, Location loc,
                           ArrayRef<Operation *> readers, double scale) {
  for (Operation *reader : readers) {
    OpOperand &c = isa<SoftmaxMaxOp>(reader)
                       ? cast<SoftmaxMaxOp>(reader).getScaleMutable()
                       : cast<SoftmaxExpOp>(reader).getScaleMutable();
    rewriter.setInsertionPoint(reader);
    FloatAttr constant;
    Value scaled =
        matchPattern(c.get(), m_Constant(&constant))
            ? Value(arith::ConstantOp::create(
                  rewriter, loc,
                  rewriter.getF32FloatAttr(
                      static_cast<float>(constant.getValueAsDouble() * scale))))
            : Value(arith::MulFOp::create(
                  rewriter, loc, c.get(),
                  arith::ConstantOp::create(
                      rewriter, loc,
                      rewriter.getF32FloatAttr(static_cast<float>(scale)))));
    rewriter.modifyOpInPlace(reader, [&] { c.set(scaled); });
  }
}

/// Writes into `region` (empty) the factor G of the score region `body`'s
/// position term: a block of (b, h, captures…) computing G from the
/// region's slice of it, negated where the term is −G·(j − i), yielded.
LogicalResult buildFactorRegion(PatternRewriter &rewriter, Location loc,
                                Region &region, Block &body,
                                const PositionTerm &term) {
  OpBuilder::InsertionGuard guard(rewriter);
  SmallVector<Type> types{rewriter.getIndexType(), rewriter.getIndexType()};
  auto captureArgs = body.getArguments().drop_front(5);
  for (BlockArgument arg : captureArgs)
    types.push_back(arg.getType());
  Block *factorBody = rewriter.createBlock(
      &region, {}, types, SmallVector<Location>(types.size(), loc));
  IRMapping mapping;
  mapping.map(body.getArgument(1), factorBody->getArgument(0));
  mapping.map(body.getArgument(2), factorBody->getArgument(1));
  for (auto [from, to] :
       llvm::zip_equal(captureArgs, factorBody->getArguments().drop_front(2)))
    mapping.map(from, to);
  // The ops of the body G is computed from, in a valid order.
  SetVector<Operation *> slice;
  BackwardSliceOptions options;
  options.inclusive = true;
  options.filter = [&](Operation *inner) { return inner->getBlock() == &body; };
  if (failed(getBackwardSlice(term.factor, &slice, options)))
    return failure();
  for (Operation *inner : slice)
    rewriter.clone(*inner, mapping);
  Value g = mapping.lookupOrDefault(term.factor);
  if (term.negated)
    g = arith::NegFOp::create(rewriter, loc, g);
  YieldOp::create(rewriter, loc, g);
  return success();
}

/// A score region s + G·(j − i): the position term beside the score itself
/// (the linear bias forms' common match).
static FailureOr<PositionTerm> matchLinearBias(Block &body, std::string &why) {
  FailureOr<PositionTerm> term = matchPositionTerm(body, why);
  if (succeeded(term) &&
      (term->rest != body.getArgument(0) || term->restNegated)) {
    why = "the region is not the score plus the position term";
    return failure();
  }
  return term;
}

/// fat.wgmma Q·Kᵀ → fat.score_mod {s + G·(j − i)} as one wgmma on
/// [Q | X]·[K | R]ᵀ, X and R the bias columns; the softmax constant c of
/// the ops reading the scores becomes c·scale (the scores are now unscaled,
/// as in a kernel without a region).
struct LinearBiasToTensorCores : OpRewritePattern<ScoreModOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ScoreModOp op,
                                PatternRewriter &rewriter) const override {
    Block &body = op.getBody().front();
    std::string why;
    FailureOr<PositionTerm> term = matchLinearBias(body, why);
    if (failed(term))
      return rewriter.notifyMatchFailure(op, why);
    auto gemm = op.getScores().getDefiningOp<WgmmaOp>();
    if (!gemm || gemm.getAFrom() != OperandSource::Smem ||
        !gemm.getTransposeB() || gemm.getAcc() || !gemm->hasOneUse())
      return rewriter.notifyMatchFailure(op, "the scores are not Q·Kᵀ's");
    auto sType = cast<RankedTensorType>(op.getScores().getType());
    if (sType.getDimSize(1) > 256)
      return rewriter.notifyMatchFailure(op, "over 256 keys per block");
    SmallVector<Operation *> readers;
    if (failed(collectSoftmaxReaders(op.getResult(), readers)))
      return rewriter.notifyMatchFailure(op, "a score is read by other ops");

    Location loc = op.getLoc();
    auto qType = cast<RankedTensorType>(gemm.getA().getType());
    Type elt = qType.getElementType();
    int64_t cols = BiasKeyColumnsOp::kColumns;
    double scale = op.getScale().convertToDouble();
    Value c = arith::ConstantOp::create(
        rewriter, loc, rewriter.getF32FloatAttr(static_cast<float>(scale)));
    auto query = BiasQueryColumnsOp::create(
        rewriter, loc, RankedTensorType::get({qType.getDimSize(0), cols}, elt),
        op.getBatch(), op.getHead(), op.getQStart(), op.getKvStart(), c,
        op.getCaptures());
    if (failed(buildFactorRegion(rewriter, loc, query.getBody(), body, *term)))
      return rewriter.notifyMatchFailure(op, "no slice of the factor");
    auto keyType = RankedTensorType::get({sType.getDimSize(1), cols}, elt);
    Value keys = BiasKeyColumnsOp::create(rewriter, loc, keyType);
    Value a = tensor::ConcatOp::create(rewriter, loc, /*dim=*/1,
                                       ValueRange{gemm.getA(), query});
    Value b = tensor::ConcatOp::create(rewriter, loc, /*dim=*/1,
                                       ValueRange{gemm.getB(), keys});
    auto biased = WgmmaOp::create(rewriter, loc, sType, a, b, /*acc=*/Value(),
                                  gemm.getTransposeBAttr(), gemm.getAFromAttr(),
                                  gemm.getShapeAttr());
    scaleSoftmaxConstants(rewriter, loc, readers, scale);
    rewriter.replaceOp(op, biased.getResult());
    rewriter.eraseOp(gemm);
    return success();
  }
};

/// The P·V fat.wgmma that reads the numerators of `exp` (rounded by
/// arith.truncf) with B = [V | ones] (rowsum=mma's ones columns), and that
/// concat; failure for any other form.
FailureOr<std::pair<WgmmaOp, tensor::ConcatOp>>
findOnesColumnsPV(SoftmaxExpOp exp) {
  for (Operation *user : exp.getProbs().getUsers()) {
    auto round = dyn_cast<arith::TruncFOp>(user);
    if (!round)
      continue;
    for (Operation *reader : round->getUsers()) {
      auto pv = dyn_cast<WgmmaOp>(reader);
      if (!pv || pv.getA() != round.getResult() || pv.getTransposeB())
        continue;
      auto concat = pv.getB().getDefiningOp<tensor::ConcatOp>();
      DenseElementsAttr ones;
      if (!concat || concat.getInputs().size() != 2 || !concat->hasOneUse() ||
          !matchPattern(concat.getInputs()[1], m_Constant(&ones)) ||
          !ones.isSplat() ||
          ones.getSplatValue<APFloat>().convertToDouble() != 1.0)
        return failure();
      return std::make_pair(pv, concat);
    }
  }
  return failure();
}

/// fat.wgmma Q·Kᵀ → fat.score_mod {s + G·(j − i)} as weights on P:
/// fat.key_weights gives the N weights e^(G·(r − (n−1)/2)) (r a key's place
/// in its run of n ≤ 64) and each run's offset; the softmax reads the
/// unscaled scores with the offsets (a row constant per run) and the
/// constant c·scale, and the rounded P is multiplied by
/// the weights column by column before P·V. Needs rowsum=mma's ones columns
/// (the row sums then read the weighted P that O reads) and no LSE (−G·i
/// is dropped).
struct LinearBiasToKeyWeights : OpRewritePattern<ScoreModOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ScoreModOp op,
                                PatternRewriter &rewriter) const override {
    Block &body = op.getBody().front();
    std::string why;
    FailureOr<PositionTerm> term = matchLinearBias(body, why);
    if (failed(term))
      return rewriter.notifyMatchFailure(op, why);
    auto gemm = op.getScores().getDefiningOp<WgmmaOp>();
    if (!gemm || !gemm.getTransposeB() || gemm.getAcc())
      return rewriter.notifyMatchFailure(op, "the scores are not Q·Kᵀ's");
    SmallVector<Operation *> readers;
    if (failed(collectSoftmaxReaders(op.getResult(), readers)))
      return rewriter.notifyMatchFailure(op, "a score is read by other ops");
    SoftmaxExpOp exp;
    for (Operation *reader : readers)
      if (auto e = dyn_cast<SoftmaxExpOp>(reader))
        exp = e;
    if (!exp)
      return rewriter.notifyMatchFailure(op, "no softmax_exp reads the scores");
    FailureOr<std::pair<WgmmaOp, tensor::ConcatOp>> pv = findOnesColumnsPV(exp);
    if (failed(pv))
      return rewriter.notifyMatchFailure(
          op, "P·V does not read [V | ones] (rowsum=mma)");
    WgmmaOp pvGemm = pv->first;
    auto pType = cast<RankedTensorType>(pvGemm.getA().getType());
    if (!pType.getElementType().isBF16())
      return rewriter.notifyMatchFailure(op, "P is not rounded to bf16");
    // Runs of at most 64 keys (whole 8-key groups, equal): a spread of
    // 31.5·|G| keeps every slope up to 1.1 exact (KeyWeightsOp); a constant
    // factor must fit it.
    int64_t keys = pType.getDimSize(1);
    int64_t runs = (keys + 63) / 64;
    while (keys % (8 * runs) != 0)
      ++runs;
    FloatAttr constant;
    if (matchPattern(term->factor, m_Constant(&constant)) &&
        std::abs(constant.getValueAsDouble()) * 0.5 * double(keys / runs - 1) >
            KeyWeightsOp::kMaxSpread)
      return rewriter.notifyMatchFailure(
          op, "|G|·(n − 1)/2 over KeyWeightsOp::kMaxSpread");

    // The weights where the softmax first reads the scores.
    Operation *first = readers.front();
    for (Operation *reader : readers)
      if (reader->isBeforeInBlock(first))
        first = reader;
    Location loc = op.getLoc();
    double scale = op.getScale().convertToDouble();
    rewriter.setInsertionPoint(first);
    Value c = arith::ConstantOp::create(
        rewriter, loc, rewriter.getF32FloatAttr(static_cast<float>(scale)));
    auto weightType = RankedTensorType::get({keys}, pType.getElementType());
    auto weights = KeyWeightsOp::create(
        rewriter, loc, weightType,
        SmallVector<Type>(runs, rewriter.getF32Type()), op.getBatch(),
        op.getHead(), op.getKvStart(), c, op.getCaptures());
    if (failed(
            buildFactorRegion(rewriter, loc, weights.getBody(), body, *term)))
      return rewriter.notifyMatchFailure(op, "no slice of the factor");
    // P̂ · ŵ column by column, right before P·V reads it.
    rewriter.setInsertionPoint(pvGemm);
    Value columns =
        linalg::BroadcastOp::create(
            rewriter, loc, weights.getWeights(),
            tensor::EmptyOp::create(rewriter, loc, pType, ValueRange{}),
            ArrayRef<int64_t>{0})
            ->getResult(0);
    Value weighted =
        arith::MulFOp::create(rewriter, loc, pvGemm.getA(), columns);
    rewriter.modifyOpInPlace(pvGemm,
                             [&] { pvGemm.getAMutable().assign(weighted); });
    for (Operation *reader : readers)
      rewriter.modifyOpInPlace(reader, [&] {
        if (auto max = dyn_cast<SoftmaxMaxOp>(reader))
          max.getOffsetsMutable().assign(weights.getOffsets());
        else
          cast<SoftmaxExpOp>(reader).getOffsetsMutable().assign(
              weights.getOffsets());
      });
    scaleSoftmaxConstants(rewriter, loc, readers, scale);
    rewriter.replaceOp(op, op.getScores());
    return success();
  }
};

/// fat.wgmma Q·Kᵀ → fat.score_mod {s ± T(b, h, j − i)} as Q·Kᵀ accumulated
/// onto fat.score_band (T / scale per element), the region's term; the
/// softmax constant c of the ops reading the scores becomes c·scale.
struct RelativeBiasToAccumulator : OpRewritePattern<ScoreModOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ScoreModOp op,
                                PatternRewriter &rewriter) const override {
    Block &body = op.getBody().front();
    Value score = body.getArgument(0);
    // s + T, T + s, or s − T (ALiBi's s − slope·(i − j)), whose term is −T.
    Operation *sum =
        cast<YieldOp>(body.getTerminator()).getValue().getDefiningOp();
    if (!sum || !isa<arith::AddFOp, arith::SubFOp>(sum) || op.getRowsAtOrigin())
      return rewriter.notifyMatchFailure(op, "the region is not s ± T");
    bool negate = isa<arith::SubFOp>(sum);
    Value lhs = sum->getOperand(0), rhs = sum->getOperand(1);
    if ((lhs == score) == (rhs == score) || (negate && lhs != score))
      return rewriter.notifyMatchFailure(op, "the region is not s ± T");
    Value term = lhs == score ? rhs : lhs;
    // T's ops in a valid order; none of them may read the score, and the
    // row and key may enter only as their difference.
    SetVector<Operation *> slice;
    BackwardSliceOptions options;
    options.inclusive = true;
    options.filter = [&](Operation *inner) {
      return inner->getBlock() == &body;
    };
    if (Operation *def = term.getDefiningOp())
      if (failed(getBackwardSlice(def, &slice, options)))
        return rewriter.notifyMatchFailure(op, "no slice of the term");
    for (Operation *inner : slice)
      if (llvm::is_contained(inner->getOperands(), score))
        return rewriter.notifyMatchFailure(op, "the term reads the score");
    for (Operation &inner : body.without_terminator())
      if (!inner.use_empty() && !slice.contains(&inner) && &inner != sum)
        return rewriter.notifyMatchFailure(op, "the region computes more");
    // Every op left reads into T, so the row and key (arguments 3 and 4)
    // enter T exactly as they enter the region.
    if (!ScoreBandOp::readsPositionsAsDifference(body.getArgument(3),
                                                 body.getArgument(4)))
      return rewriter.notifyMatchFailure(
          op, "the term reads the row or key other than as j − i");
    auto gemm = op.getScores().getDefiningOp<WgmmaOp>();
    if (!gemm || gemm.getAFrom() != OperandSource::Smem ||
        !gemm.getTransposeB() || gemm.getAcc() || !gemm->hasOneUse())
      return rewriter.notifyMatchFailure(op, "the scores are not Q·Kᵀ's");
    SmallVector<Operation *> readers;
    if (failed(collectSoftmaxReaders(op.getResult(), readers)))
      return rewriter.notifyMatchFailure(op, "a score is read by other ops");

    Location loc = op.getLoc();
    auto sType = cast<RankedTensorType>(op.getScores().getType());
    double scale = op.getScale().convertToDouble();
    Value c = arith::ConstantOp::create(
        rewriter, loc, rewriter.getF32FloatAttr(static_cast<float>(scale)));
    auto band = ScoreBandOp::create(
        rewriter, loc, sType, op.getBatch(), op.getHead(), op.getQStart(),
        op.getKvStart(), op.getQLen(), op.getKvLen(), c, op.getCaptures());
    {
      // The region: T from b, h, i, j and the captures (the score region
      // without its score).
      OpBuilder::InsertionGuard guard(rewriter);
      SmallVector<Type> types(4, rewriter.getIndexType());
      auto captureArgs = body.getArguments().drop_front(5);
      for (BlockArgument arg : captureArgs)
        types.push_back(arg.getType());
      Block *termBody = rewriter.createBlock(
          &band.getBody(), {}, types, SmallVector<Location>(types.size(), loc));
      IRMapping mapping;
      for (unsigned a = 1; a < body.getNumArguments(); ++a)
        mapping.map(body.getArgument(a), termBody->getArgument(a - 1));
      for (Operation *inner : slice)
        rewriter.clone(*inner, mapping);
      Value t = mapping.lookupOrDefault(term);
      if (negate)
        t = arith::NegFOp::create(rewriter, loc, t);
      YieldOp::create(rewriter, loc, t);
    }
    auto biased = WgmmaOp::create(
        rewriter, loc, sType, gemm.getA(), gemm.getB(), band.getResult(),
        gemm.getTransposeBAttr(), gemm.getAFromAttr(), gemm.getShapeAttr());
    scaleSoftmaxConstants(rewriter, loc, readers, scale);
    rewriter.replaceOp(op, biased.getResult());
    rewriter.eraseOp(gemm);
    return success();
  }
};

} // namespace

void mlir::fat::populateRelativeBiasAccumulatorPatterns(
    RewritePatternSet &patterns) {
  patterns.add<RelativeBiasToAccumulator>(patterns.getContext());
}

void mlir::fat::populateLinearBiasWeightPatterns(RewritePatternSet &patterns) {
  patterns.add<LinearBiasToKeyWeights>(patterns.getContext());
}

void mlir::fat::populateLinearBiasTensorCorePatterns(
    RewritePatternSet &patterns) {
  patterns.add<LinearBiasToTensorCores>(patterns.getContext());
}
