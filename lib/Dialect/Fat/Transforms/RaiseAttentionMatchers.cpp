//===- RaiseAttentionMatchers.cpp - the stages of --fat-raise-attention ---===//
//
// One matcher per stage; each returns what it captured or a reason:
//   PVMatcher       O[β, i, dv] = Σ_j P[β, i, j]·V[…, j, dv]   (the root)
//   SoftmaxMatcher  P = exp(S − max_j S) / Σ_j exp(S − max_j S)
//   ScoreMatcher    S = c·(Q·Kᵀ) with an optional causal mask → scale, δ
//   QKMatcher       a contraction whose rows are the queries i, columns keys j
//   OperandMatcher  Q, K, V as [batch…, S, D] views → 4-D operands, GQA group
//
//===----------------------------------------------------------------------===//

#include "RaiseAttentionMatchers.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Matchers.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace mlir;
using namespace mlir::fat::raise;

namespace {

//===----------------------------------------------------------------------===//
// Shared helpers of the matchers
//===----------------------------------------------------------------------===//

/// Whether the body of `op` yields acc + a·b, each of a and b a block
/// argument, possibly widened by arith.extf (mixed-precision matmuls).
bool isMulAddBody(linalg::LinalgOp op) {
  Block *body = op.getBlock();
  auto yield = cast<linalg::YieldOp>(body->getTerminator());
  if (yield.getNumOperands() != 1)
    return false;
  auto add = yield.getOperand(0).getDefiningOp<arith::AddFOp>();
  if (!add)
    return false;
  Value acc = body->getArgument(2);
  Value prod = add.getLhs() == acc   ? add.getRhs()
               : add.getRhs() == acc ? add.getLhs()
                                     : Value();
  auto mul = prod ? prod.getDefiningOp<arith::MulFOp>() : nullptr;
  if (!mul)
    return false;
  auto strip = [](Value v) {
    if (auto ext = v.getDefiningOp<arith::ExtFOp>())
      return ext.getIn();
    return v;
  };
  Value a = strip(mul.getLhs()), b = strip(mul.getRhs());
  Value x = body->getArgument(0), y = body->getArgument(1);
  return (a == x && b == y) || (a == y && b == x);
}

/// Matches a contraction (linalg.matmul / batch_matmul with or without
/// indexing_maps, linalg.contract, or a generic) producing `result`.
FailureOr<Contraction> matchContraction(Value result, Tracer &tracer,
                                        Diagnosis &diag, StringRef what) {
  auto op = result.getDefiningOp<linalg::LinalgOp>();
  if (!op)
    return diag.fail(Twine(what) + " is not computed by a linalg op");
  if (!op.hasPureTensorSemantics() || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1 || op.getNumReductionLoops() != 1 ||
      !op.hasOnlyProjectedPermutations() || !isMulAddBody(op))
    return diag.fail(Twine(what) +
                     " is not a contraction Σ a·b over one loop "
                     "(" +
                     op->getName().getStringRef() + ")");
  Contraction c;
  c.op = op;
  c.lhs = op.getDpsInputOperand(0);
  c.rhs = op.getDpsInputOperand(1);
  SmallVector<unsigned> red;
  op.getReductionDims(red);
  c.reduction = red.front();
  c.outMap = op.getIndexingMapMatchingResult(cast<OpResult>(result));
  if (c.outMap.getNumResults() != op.getNumLoops() - 1 ||
      c.outMap.isFunctionOfDim(c.reduction))
    return diag.fail(Twine(what) + " does not write every parallel loop once");
  if (!op.getMatchingIndexingMap(c.lhs).isFunctionOfDim(c.reduction) ||
      !op.getMatchingIndexingMap(c.rhs).isFunctionOfDim(c.reduction))
    return diag.fail(Twine(what) + " reduces over a loop one operand lacks");
  OpOperand *init = op.getDpsInitOperand(0);
  AffineMap identity = AffineMap::getMultiDimIdentityMap(
      cast<ShapedType>(init->get().getType()).getRank(), op.getContext());
  if (!tracer.element(init->get(), identity)->isConstant(0.0))
    return diag.fail(Twine(what) + " accumulates into a non-zero init");
  return c;
}

/// The position of loop `dim` among the results of `map` (a projected
/// permutation), if it is there.
std::optional<unsigned> resultOf(AffineMap map, unsigned dim) {
  for (auto [i, e] : llvm::enumerate(map.getResults()))
    if (auto d = dyn_cast<AffineDimExpr>(e); d && d.getPosition() == dim)
      return i;
  return std::nullopt;
}

bool isDim(AffineExpr e, unsigned dim) {
  auto d = dyn_cast<AffineDimExpr>(e);
  return d && d.getPosition() == dim;
}

/// The value of `e` at integer dims `dims`; floordiv / mod / ceildiv by
/// positive constants only.
std::optional<int64_t> evaluate(AffineExpr e, ArrayRef<int64_t> dims) {
  if (auto d = dyn_cast<AffineDimExpr>(e))
    return dims[d.getPosition()];
  if (auto c = dyn_cast<AffineConstantExpr>(e))
    return c.getValue();
  auto bin = dyn_cast<AffineBinaryOpExpr>(e);
  if (!bin)
    return std::nullopt;
  std::optional<int64_t> l = evaluate(bin.getLHS(), dims),
                         r = evaluate(bin.getRHS(), dims);
  if (!l || !r)
    return std::nullopt;
  switch (e.getKind()) {
  case AffineExprKind::Add:
    return *l + *r;
  case AffineExprKind::Mul:
    return *l * *r;
  case AffineExprKind::FloorDiv:
    return *r > 0 ? std::optional(llvm::divideFloorSigned(*l, *r))
                  : std::nullopt;
  case AffineExprKind::CeilDiv:
    return *r > 0 ? std::optional(llvm::divideCeilSigned(*l, *r))
                  : std::nullopt;
  case AffineExprKind::Mod:
    return *r > 0 ? std::optional(llvm::mod(*l, *r)) : std::nullopt;
  default:
    return std::nullopt;
  }
}

/// Whether the quasi-affine `f` and `g` agree for every value of `dims` in
/// [0, sizes) (dynamic sizes: every value ≥ 0).
///
/// Both are affine plus terms periodic with period P = the product of their
/// divisors (shifting a dim by P shifts each floordiv argument by a multiple
/// of its divisor). So f − g changes by a constant per P-step along each dim:
/// if it is zero on [0, 2P) in every dim, that constant is zero and f − g is
/// zero everywhere. Checking that box (clipped to the static sizes) decides
/// equality exactly, also for dynamic sizes.
bool agreeEverywhere(AffineExpr f, AffineExpr g, ArrayRef<unsigned> dims,
                     ArrayRef<int64_t> sizes, unsigned numDims) {
  int64_t period = 1;
  bool tooBig = false;
  auto collect = [&](AffineExpr e) {
    e.walk([&](AffineExpr sub) {
      auto bin = dyn_cast<AffineBinaryOpExpr>(sub);
      if (!bin || sub.getKind() == AffineExprKind::Add ||
          sub.getKind() == AffineExprKind::Mul)
        return;
      auto c = dyn_cast<AffineConstantExpr>(bin.getRHS());
      if (!c || c.getValue() <= 0 || period > (int64_t(1) << 16) / c.getValue())
        tooBig = true;
      else
        period *= c.getValue();
    });
  };
  collect(f);
  collect(g);
  if (tooBig)
    return false;
  SmallVector<int64_t> box;
  int64_t points = 1;
  for (int64_t s : sizes) {
    box.push_back(ShapedType::isDynamic(s) ? 2 * period
                                           : std::min(s, 2 * period));
    points *= box.back();
    if (points > (int64_t(1) << 22))
      return false;
  }
  SmallVector<int64_t> at(numDims, 0);
  for (int64_t p = 0; p < points; ++p) {
    for (int64_t k = dims.size() - 1, rest = p; k >= 0; --k) {
      at[dims[k]] = rest % box[k];
      rest /= box[k];
    }
    std::optional<int64_t> x = evaluate(f, at), y = evaluate(g, at);
    if (!x || !y || *x != *y)
      return false;
  }
  return true;
}

/// Row-major linearization of `idx` over a shape `sizes`; all but the first
/// size must be static.
std::optional<AffineExpr> linearize(ArrayRef<AffineExpr> idx,
                                    ArrayRef<int64_t> sizes, MLIRContext *ctx) {
  AffineExpr lin = getAffineConstantExpr(0, ctx);
  for (auto [k, e] : llvm::enumerate(idx)) {
    if (k > 0) {
      if (ShapedType::isDynamic(sizes[k]))
        return std::nullopt;
      lin = lin * sizes[k];
    }
    lin = lin + e;
  }
  return lin;
}

/// Product of `sizes` (dynamic if any is).
int64_t product(ArrayRef<int64_t> sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) {
    if (ShapedType::isDynamic(s))
      return ShapedType::kDynamic;
    n *= s;
  }
  return n;
}

//===----------------------------------------------------------------------===//
// Stage 1: the root, O = P·V
//===----------------------------------------------------------------------===//

/// Stage 1: the root contraction and the roles of its loops.
struct PVMatcher {
  Tracer &tracer;
  Diagnosis &diag;

  /// O[β…, i, dv] = Σ_j P[…i…j]·V[…j…dv]: O's last two dims are the rows and
  /// columns, P is the operand carrying the rows, V the one carrying columns.
  FailureOr<PVMatch> match(linalg::LinalgOp op) {
    if (op->getNumResults() != 1)
      return diag.fail("not a single-result contraction");
    FailureOr<Contraction> c =
        matchContraction(op->getResult(0), tracer, diag, "the candidate P·V");
    if (failed(c))
      return failure();
    PVMatch m;
    m.c = *c;
    unsigned rank = c->outMap.getNumResults();
    if (rank < 2)
      return diag.fail("P·V has a rank-" + Twine(rank) + " result");
    auto dimAt = [&](unsigned r) {
      return cast<AffineDimExpr>(c->outMap.getResult(r)).getPosition();
    };
    m.query = dimAt(rank - 2);
    m.value = dimAt(rank - 1);
    m.key = c->reduction;
    for (unsigned r = 0; r + 2 < rank; ++r)
      m.batch.push_back(dimAt(r));
    auto uses = [&](OpOperand *o, unsigned dim) {
      return op.getMatchingIndexingMap(o).isFunctionOfDim(dim);
    };
    for (auto [p, v] : {std::pair(c->lhs, c->rhs), std::pair(c->rhs, c->lhs)})
      if (uses(p, m.query) && !uses(p, m.value) && uses(v, m.value) &&
          !uses(v, m.query)) {
        m.p = p;
        m.v = v;
        m.sizes = op.getStaticLoopRanges();
        return m;
      }
    return diag.fail(
        "the contraction is not P·V-shaped: no operand carries "
        "only the rows of its result and another only the columns");
  }
};

//===----------------------------------------------------------------------===//
// Stage 2: the softmax
//===----------------------------------------------------------------------===//

/// What a row reduction combines.
enum class Combiner { Sum, Max, Or };

/// The name of a row reduction in messages.
StringRef rowReductionName(Combiner kind) {
  switch (kind) {
  case Combiner::Sum:
    return "row sum";
  case Combiner::Max:
    return "row max";
  case Combiner::Or:
    return "row any";
  }
  llvm_unreachable("unknown combiner");
}

/// `c` without logical negations (xori with true, cmpi eq with false), and
/// whether an odd number of them was stripped.
std::pair<const Term *, bool> stripNot(const Term *c) {
  bool negated = false;
  while (true) {
    const Term *inner = nullptr;
    if (c->is<arith::XOrIOp>()) {
      for (unsigned k : {0u, 1u})
        if (c->operand(k)->isConstant(1.0))
          inner = c->operand(1 - k);
    } else if (c->is<arith::CmpIOp>() &&
               arith::CmpIPredicate(c->predicate) == arith::CmpIPredicate::eq) {
      for (unsigned k : {0u, 1u})
        if (c->operand(k)->isConstant(0.0))
          inner = c->operand(1 - k);
    }
    if (!inner)
      return {c, negated};
    c = inner;
    negated = !negated;
  }
}

/// Stage 2: P is a softmax over the keys j of the scores S; returns S.
struct SoftmaxMatcher {
  Tracer &tracer;
  Diagnosis &diag;
  unsigned key; // the root loop j that P·V sums over

  /// The scores S, given P: exp(S − max_j S) / Σ_j exp(S − max_j S) (also
  /// as exp(…)·(1/Σ), without the max, or as linalg.softmax over j).
  FailureOr<const Term *> match(const Term *p) {
    // P rounded to 16 bits for the P·V GEMM: fat.attention does the same.
    while (p->is<arith::TruncFOp>() || p->is<arith::ExtFOp>())
      p = p->operand(0);
    if (p->is<arith::SelectOp>())
      return matchSafe(p);
    if (p->isElement())
      if (auto softmax = dyn_cast_or_null<linalg::SoftmaxOp>(p->producer()))
        return matchNamed(softmax, p->map);

    const Term *num = nullptr, *den = nullptr;
    if (p->is<arith::DivFOp>()) {
      num = p->operand(0);
      den = p->operand(1);
    } else if (p->is<arith::MulFOp>()) {
      for (unsigned k : {0u, 1u}) {
        const Term *r = p->operand(k);
        if (r->is<arith::DivFOp>() && r->operand(0)->isConstant(1.0)) {
          num = p->operand(1 - k);
          den = r->operand(1);
        }
      }
    }
    if (!num || !num->is<math::ExpOp>())
      return diag.fail("P is not a softmax: expected exp(x) / Σ_j exp(x) or "
                       "linalg.softmax");
    FailureOr<const Term *> summed = matchRowReduction(den, Combiner::Sum);
    if (failed(summed))
      return failure();
    if (!sameTerm(*summed, num))
      return diag.fail("the softmax denominator does not sum its numerator "
                       "exp(x) over the keys j");
    const Term *x = num->operand(0);
    if (!x->is<arith::SubFOp>())
      return x; // exp(S) / Σ exp(S): the same softmax without the shift
    // Softmax is invariant to a per-row shift; the usual one is the row max.
    const Term *s = x->operand(0);
    FailureOr<const Term *> maxed =
        matchRowReduction(x->operand(1), Combiner::Max);
    if (failed(maxed))
      return failure();
    if (!sameTerm(*maxed, s))
      return diag.fail("the softmax subtracts the row max of another tensor");
    return s;
  }

private:
  /// torch's _safe_softmax: select(row has no visible key, 0, softmax(S)).
  /// fat.attention gives such a row O = 0 as well, so this is the same
  /// attention when the condition is exactly "every S_ij of the row is −inf":
  /// not(any_j(S_ij != −inf)), the form torch writes.
  FailureOr<const Term *> matchSafe(const Term *sel) {
    auto [cond, negated] = stripNot(sel->operand(0));
    const Term *zeroArm = sel->operand(1), *inner = sel->operand(2);
    bool zeroIfCond = true;
    if (!zeroArm->isConstant(0.0)) {
      std::swap(zeroArm, inner);
      zeroIfCond = false;
    }
    if (!zeroArm->isConstant(0.0))
      return diag.fail("P is a select that is not torch's _safe_softmax "
                       "(neither arm is 0)");
    FailureOr<const Term *> s = match(inner);
    if (failed(s))
      return failure();
    // any_j(x) with x = "S_ij is not −inf", possibly negated.
    FailureOr<const Term *> anyOf = matchRowReduction(cond, Combiner::Or);
    if (failed(anyOf))
      return diag.fail("P is zeroed where a condition holds that is not "
                       "\"the row's scores are all −inf\"");
    auto [test, testNegated] = stripNot(*anyOf);
    using F = arith::CmpFPredicate;
    bool isTest = test->is<arith::CmpFOp>() && test->operand(1)->isConstant() &&
                  test->operand(1)->number == -INFINITY &&
                  sameTerm(test->operand(0), *s);
    auto pred = F(test->predicate);
    bool eq = pred == F::OEQ || pred == F::UEQ;
    if (!isTest || !(eq || pred == F::ONE || pred == F::UNE))
      return diag.fail("P is zeroed where a condition holds that is not "
                       "\"the row's scores are all −inf\"");
    // The reduced test must be "S_ij is not −inf", so that any_j of it is
    // "the row has a visible key"; the zero arm must be taken exactly when
    // that is false.
    bool visibleKeyTest = eq == testNegated;
    bool zeroWhenVisible = zeroIfCond != negated;
    if (!visibleKeyTest || zeroWhenVisible)
      return diag.fail("P is zeroed on rows that have visible keys");
    return s;
  }

  /// linalg.softmax read at `map`: its dimension must be the key loop j
  /// (read as plain j), and no other dim may vary with j.
  FailureOr<const Term *> matchNamed(linalg::SoftmaxOp softmax, AffineMap map) {
    unsigned d = softmax.getDimension();
    for (auto [r, e] : llvm::enumerate(map.getResults())) {
      bool ok = r == d ? isDim(e, key) : !e.isFunctionOfDim(key);
      if (!ok)
        return diag.fail("linalg.softmax normalizes over dim " + Twine(d) +
                         ", not over the keys that P·V sums over");
    }
    return tracer.element(softmax.getInput(), map);
  }

  /// For `leaf` = r[rows] where r is a one-loop reduction combining with
  /// `kind` from a constant init: the reduced term with the reduction loop
  /// identified with the key loop j, so that it compares with the numerator.
  FailureOr<const Term *> matchRowReduction(const Term *leaf, Combiner kind) {
    StringRef what = rowReductionName(kind);
    auto op = leaf->isElement()
                  ? dyn_cast_or_null<linalg::LinalgOp>(leaf->producer())
                  : linalg::LinalgOp();
    if (!op || !op.hasPureTensorSemantics() || op.getNumReductionLoops() != 1)
      return diag.fail(Twine("the softmax ") + what +
                       " is not a reduction over one loop");
    if (leaf->map.isFunctionOfDim(key))
      return diag.fail(Twine("the softmax ") + what +
                       " varies along the keys j: it reduces over another dim");
    auto result = cast<OpResult>(leaf->value);
    AffineMap outMap = op.getIndexingMapMatchingResult(result);
    SmallVector<unsigned> red;
    op.getReductionDims(red);
    // Root loops -> the reduction's loops: parallel ones from its result,
    // the reduction loop := j.
    SmallVector<AffineExpr> loops;
    MLIRContext *ctx = op.getContext();
    for (unsigned l = 0, e = op.getNumLoops(); l < e; ++l) {
      if (l == red.front()) {
        loops.push_back(getAffineDimExpr(key, ctx));
        continue;
      }
      std::optional<unsigned> r = resultOf(outMap, l);
      if (!r)
        return diag.fail(Twine("the softmax ") + what +
                         " drops a parallel loop");
      loops.push_back(leaf->map.getResult(*r));
    }
    AffineMap loopMap = AffineMap::get(leaf->map.getNumDims(), 0, loops, ctx);

    Block *body = op.getBlock();
    Value acc = op.getMatchingBlockArgument(
        op.getDpsInitOperand(result.getResultNumber()));
    Value yielded = body->getTerminator()->getOperand(result.getResultNumber());
    Operation *combine = yielded.getDefiningOp();
    Value x;
    if (combine && combine->getBlock() == body &&
        combine->getNumOperands() == 2) {
      bool ok = kind == Combiner::Sum ? isa<arith::AddFOp>(combine)
                : kind == Combiner::Max
                    ? isa<arith::MaximumFOp, arith::MaxNumFOp>(combine)
                    : isa<arith::OrIOp>(combine);
      if (ok && combine->getOperand(1) == acc)
        x = combine->getOperand(0);
      else if (ok && combine->getOperand(0) == acc)
        x = combine->getOperand(1);
    }
    if (!x)
      return diag.fail(Twine("the softmax ") + what +
                       " does not combine with the expected op");
    // Sum and any start at 0 (false); the max at anything but +inf or NaN (a
    // finite start only shifts the row, which softmax ignores).
    const Term *init =
        tracer.element(op.getDpsInitOperand(result.getResultNumber())->get(),
                       outMap.compose(loopMap));
    bool goodInit = init->isConstant() &&
                    (kind == Combiner::Max
                         ? !std::isnan(init->number) && init->number != INFINITY
                         : init->number == 0.0);
    if (!goodInit)
      return diag.fail(Twine("the softmax ") + what +
                       " starts from a wrong or non-constant init");
    return tracer.scalarIn(x, op, loopMap);
  }
};

//===----------------------------------------------------------------------===//
// Stage 3: scale and mask
//===----------------------------------------------------------------------===//

/// Mask entries at or below this value count as "hidden". After the row max
/// is subtracted, a hidden score s + m weighs exp(s + m − max) ≤ exp(m + Δ)
/// where Δ is the spread of the visible scores of the row; exp underflows to
/// 0 in f32 below −104. So any m ≤ −1e4 gives exactly the weight 0 of a −inf
/// mask unless Δ > 9 896, far beyond any trained model's scaled scores (a
/// row with such a spread is one-hot anyway). −1e4 is also the largest
/// "minus infinity" in use: BERT's extended attention mask writes −10000,
/// others −1e9, finfo.min (−65504 in f16, −3.4e38 in f32) or −inf.
constexpr double kHiddenAtMost = -1.0e4;

/// "i", "i + 3" or "i − 2": row i shifted by `offset`, for diagnostics.
static std::string rowPlus(int64_t offset) {
  if (offset == 0)
    return "i";
  return "i " + std::string(offset > 0 ? "+ " : "− ") +
         std::to_string(offset > 0 ? offset : -offset);
}

/// A linear form a·i + b·j + c over the query and key loops.
struct LinearForm {
  int64_t i = 0, j = 0, c = 0;
  LinearForm operator-(const LinearForm &o) const {
    return {i - o.i, j - o.j, c - o.c};
  }
  LinearForm operator+(const LinearForm &o) const {
    return {i + o.i, j + o.j, c + o.c};
  }
};

/// Stage 3: the scores are a constant multiple of Q·Kᵀ with an optional
/// causal mask; returns the scale, the mask's diagonal and the Q·Kᵀ element.
struct ScoreMatcher {
  Diagnosis &diag;
  unsigned query, key; // root loops i, j
  int64_t seqQ, seqKV; // static Sq, Skv (or kDynamic)

  /// Peels c·S, S/c, S + M, select(visible, S, −inf) and float casts, in
  /// any order, down to the Q·Kᵀ element.
  /// What is left once the peeling stops at an op it cannot fold (a
  /// function of the score, a runtime factor, bias or mask) becomes a score
  /// region (ScoreMatch::region), provided Q·Kᵀ is one of its leaves.
  FailureOr<ScoreMatch> match(const Term *s) {
    ScoreMatch m;
    double outer = 1.0; // scale applied outside the part peeled so far
    bool masked = false;
    while (true) {
      if (s->is<arith::ExtFOp>() || s->is<arith::TruncFOp>()) {
        s = s->operand(0);
      } else if (s->is<arith::MulFOp>() || s->is<arith::DivFOp>()) {
        std::optional<std::pair<const Term *, double>> f = constantFactor(s);
        if (!f)
          return toRegion(s, outer, m);
        m.scale *= f->second;
        outer *= f->second;
        s = f->first;
      } else if ((s->is<arith::AddFOp>() || s->is<arith::SelectOp>()) &&
                 !masked && isBandMask(s)) {
        masked = true;
        FailureOr<const Term *> rest = s->is<arith::AddFOp>()
                                           ? peelAdditiveMask(s, outer, m)
                                           : peelSelectMask(s, outer, m);
        if (failed(rest))
          return failure();
        s = *rest;
      } else if (s->kind == Term::Kind::Op) {
        return toRegion(s, outer, m);
      } else {
        break;
      }
    }
    m.qk = s;
    return m;
  }

  /// The scores from `rest` on as a score region: s = outer · rest.
  FailureOr<ScoreMatch> toRegion(const Term *rest, double outer, ScoreMatch &m) {
    m.region = rest;
    m.regionScale = outer;
    m.scale = 1.0;
    return m;
  }

private:
  /// Whether `t` (an addf or select) is S plus / or a constant or index
  /// mask, which fat.attention's causal and window attributes can hold.
  static bool isBandMask(const Term *t) {
    if (t->is<arith::AddFOp>())
      return isMaskTerm(t->operand(0)) != isMaskTerm(t->operand(1));
    for (unsigned k : {1u, 2u})
      if (t->operand(k)->isConstant() && t->operand(k)->number <= kHiddenAtMost)
        return isMaskTerm(t->operand(0));
    return false;
  }

  /// A mask operand: a term of the loop indices and constant tensors only.
  static bool isMaskTerm(const Term *t) {
    return !anyLeaf(t, [](const Term *l) {
      if (l->kind == Term::Kind::Scalar)
        return true;
      if (!l->isElement())
        return false;
      DenseElementsAttr dense;
      return !matchPattern(l->value, m_Constant(&dense));
    });
  }

  /// S + M with M hiding keys j > i + δ (isBandMask: exactly one operand is
  /// a mask term).
  FailureOr<const Term *> peelAdditiveMask(const Term *add, double outer,
                                           ScoreMatch &m) {
    bool first = isMaskTerm(add->operand(0));
    const Term *mask = add->operand(first ? 0 : 1);
    // select(c, 0, −inf) (an iota compare written to a tensor and added).
    const Term *scores = add->operand(first ? 1 : 0);
    if (mask->is<arith::SelectOp>() && mask->operand(1)->isConstant() &&
        mask->operand(2)->isConstant()) {
      double a = mask->operand(1)->number, b = mask->operand(2)->number;
      std::optional<bool> visibleIf;
      if (a == 0.0 && b * outer <= kHiddenAtMost)
        visibleIf = true;
      else if (b == 0.0 && a * outer <= kHiddenAtMost)
        visibleIf = false;
      else
        return diag.fail("the mask selects between values that are not 0 and "
                         "≤ -1e4");
      if (failed(maskFromPredicate(mask->operand(0), *visibleIf, m)))
        return failure();
      return scores;
    }
    if (mask->isElement()) {
      DenseElementsAttr dense;
      matchPattern(mask->value, m_Constant(&dense));
      if (dense && isa<FloatType>(dense.getElementType())) {
        auto values = dense.getValues<APFloat>();
        auto entry = [&](int64_t index) -> std::optional<bool> {
          double x = values[index].convertToDouble();
          if (x == 0.0)
            return true;
          if (x * outer <= kHiddenAtMost)
            return false;
          return std::nullopt;
        };
        if (failed(maskFromTable(mask, entry, m)))
          return failure();
        return scores;
      }
    }
    return diag.fail("the additive mask is neither a constant tensor nor an "
                     "index comparison");
  }

  /// select(visible, S, −inf) or select(hidden, −inf, S).
  FailureOr<const Term *> peelSelectMask(const Term *sel, double outer,
                                         ScoreMatch &m) {
    const Term *pred = sel->operand(0);
    for (unsigned k : {1u, 2u}) {
      const Term *hidden = sel->operand(k);
      if (!hidden->isConstant() || hidden->number * outer > kHiddenAtMost)
        continue;
      if (!isMaskTerm(pred))
        return diag.fail("the mask condition is not a constant or an index "
                         "comparison");
      bool visibleIf = k == 2; // the scores are the true operand
      if (pred->isElement()) {
        DenseElementsAttr dense;
        matchPattern(pred->value, m_Constant(&dense));
        if (!dense || !dense.getElementType().isInteger(1))
          return diag.fail("the mask condition is not a boolean constant");
        auto values = dense.getValues<bool>();
        auto entry = [&](int64_t index) -> std::optional<bool> {
          return values[index] == visibleIf;
        };
        if (failed(maskFromTable(pred, entry, m)))
          return failure();
      } else if (failed(maskFromPredicate(pred, visibleIf, m))) {
        return failure();
      }
      return sel->operand(3 - k);
    }
    return diag.fail("the scores are selected against a value that is not a "
                     "constant ≤ -1e4");
  }

  /// The linear form of an integer term over the loops i and j.
  std::optional<LinearForm> linear(const Term *t) const {
    if (t->kind == Term::Kind::Index) {
      if (t->dim == query)
        return LinearForm{1, 0, 0};
      if (t->dim == key)
        return LinearForm{0, 1, 0};
      return std::nullopt;
    }
    if (t->isConstant())
      return LinearForm{0, 0, int64_t(t->number)};
    if (t->is<arith::IndexCastOp>() || t->is<arith::IndexCastUIOp>() ||
        t->is<arith::ExtSIOp>() || t->is<arith::ExtUIOp>() ||
        t->is<arith::TruncIOp>())
      return linear(t->operand(0));
    if (t->is<arith::MulIOp>()) { // arange's index · step
      for (unsigned k : {0u, 1u})
        if (t->operand(k)->isConstant())
          if (std::optional<LinearForm> f = linear(t->operand(1 - k))) {
            auto c = int64_t(t->operand(k)->number);
            return LinearForm{f->i * c, f->j * c, f->c * c};
          }
      return std::nullopt;
    }
    if (t->is<arith::AddIOp>() || t->is<arith::SubIOp>()) {
      std::optional<LinearForm> a = linear(t->operand(0)),
                                b = linear(t->operand(1));
      if (!a || !b)
        return std::nullopt;
      return t->is<arith::AddIOp>() ? *a + *b : *a - *b;
    }
    return std::nullopt;
  }

  /// The keys a mask leaves visible to row i: lower ≤ j − i ≤ upper (a
  /// missing bound is unbounded). The upper bound alone is a causal mask
  /// with diagonal δ = upper; a lower bound is a sliding window.
  struct Band {
    std::optional<int64_t> lower, upper;
    void intersect(const Band &o) {
      if (o.lower)
        lower = lower ? std::max(*lower, *o.lower) : *o.lower;
      if (o.upper)
        upper = upper ? std::min(*upper, *o.upper) : *o.upper;
    }
  };

  /// The band of a mask condition: one comparison of linear forms in i and
  /// j, or an intersection of them — `and` of visible conditions, `or` of
  /// hidden ones. `visibleIf` says whether the key is visible when `pred`
  /// holds.
  FailureOr<Band> bandFromPredicate(const Term *pred, bool visibleIf) {
    // torch's causal mask is logical_and(tril, full(True)).
    while (pred->is<arith::AndIOp>() && (pred->operand(0)->isConstant(1.0) ||
                                         pred->operand(1)->isConstant(1.0)))
      pred = pred->operand(pred->operand(0)->isConstant(1.0) ? 1 : 0);
    // visible ⇔ a ∧ b, or hidden ⇔ a ∨ b (visible ⇔ ¬a ∧ ¬b).
    if ((visibleIf && pred->is<arith::AndIOp>()) ||
        (!visibleIf && pred->is<arith::OrIOp>())) {
      FailureOr<Band> a = bandFromPredicate(pred->operand(0), visibleIf);
      if (failed(a))
        return failure();
      FailureOr<Band> b = bandFromPredicate(pred->operand(1), visibleIf);
      if (failed(b))
        return failure();
      a->intersect(*b);
      return *a;
    }
    if (!pred->is<arith::CmpIOp>())
      return diag.fail("the mask condition is not integer comparisons of the "
                       "query and key indices (one, or an intersection)");
    std::optional<LinearForm> l = linear(pred->operand(0)),
                              r = linear(pred->operand(1));
    if (!l || !r)
      return diag.fail("the mask compares something other than the query and "
                       "key indices (plus constants)");
    LinearForm d = *l - *r; // the comparison is d ⋈ 0
    using P = arith::CmpIPredicate;
    auto p = P(pred->predicate);
    // Unsigned compares agree with signed ones when both sides are ≥ 0.
    auto nonNegative = [](const LinearForm &f) {
      return f.i >= 0 && f.j >= 0 && f.c >= 0;
    };
    if ((p == P::ule || p == P::ult || p == P::uge || p == P::ugt) &&
        !(nonNegative(*l) && nonNegative(*r)))
      return diag.fail("the mask compares possibly negative indices unsigned");
    const LinearForm one{0, 0, 1};
    LinearForm le; // the comparison holds ⇔ le ≤ 0
    switch (p) {
    case P::sle:
    case P::ule:
      le = d;
      break;
    case P::slt:
    case P::ult:
      le = d + one;
      break;
    case P::sge:
    case P::uge:
      le = LinearForm{} - d;
      break;
    case P::sgt:
    case P::ugt:
      le = one - d;
      break;
    default:
      return diag.fail("the mask condition is an equality, not a band of "
                       "keys");
    }
    if (!visibleIf) // visible ⇔ le > 0 ⇔ 1 − le ≤ 0
      le = one - le;
    // visible ⇔ k·(j − i) + c ≤ 0: j − i ≤ ⌊−c/k⌋ for k > 0 (an upper
    // bound), j − i ≥ ⌈c/|k|⌉ for k < 0 (a lower bound).
    if (le.j == 0 || le.i != -le.j)
      return diag.fail("the mask is not a band of keys (visible keys are not "
                       "bounded by i + constants)");
    Band band;
    if (le.j > 0)
      band.upper = llvm::divideFloorSigned(-le.c, le.j);
    else
      band.lower = llvm::divideCeilSigned(le.c, -le.j);
    return band;
  }

  LogicalResult maskFromPredicate(const Term *pred, bool visibleIf,
                                    ScoreMatch &m) {
    FailureOr<Band> band = bandFromPredicate(pred, visibleIf);
    if (failed(band))
      return failure();
    return applyBand(*band, m);
  }

  /// The band of a constant table read through `leaf`'s map at (i, j):
  /// `entry` says visible / hidden / neither for a linear index into the
  /// constant. Every row must see one run of keys, [i + lower, i + upper]
  /// clipped to [0, Skv).
  LogicalResult
  maskFromTable(const Term *leaf,
                  function_ref<std::optional<bool>(int64_t)> entry,
                  ScoreMatch &m) {
    if (ShapedType::isDynamic(seqQ) || ShapedType::isDynamic(seqKV))
      return diag.fail("a constant mask needs static sequence lengths");
    for (AffineExpr e : leaf->map.getResults())
      for (unsigned d = 0, n = leaf->map.getNumDims(); d < n; ++d)
        if (d != query && d != key && e.isFunctionOfDim(d))
          return diag.fail("the mask varies over batch or heads");
    auto shape = cast<ShapedType>(leaf->value.getType()).getShape();
    SmallVector<int64_t> at(leaf->map.getNumDims(), 0);
    auto visible = [&](int64_t i, int64_t j) -> std::optional<bool> {
      at[query] = i;
      at[key] = j;
      int64_t index = 0;
      for (auto [r, e] : llvm::enumerate(leaf->map.getResults())) {
        std::optional<int64_t> x = evaluate(e, at);
        if (!x || *x < 0 || *x >= shape[r])
          return std::nullopt;
        index = index * shape[r] + *x;
      }
      return entry(index);
    };
    // The bounds from the rows whose run ends before Skv − 1 (upper) or
    // starts after 0 (lower); every row is then checked against them.
    Band band;
    for (int64_t i = 0; i < seqQ; ++i) {
      int64_t first = 0;
      while (first < seqKV && visible(i, first) == false)
        ++first;
      int64_t last = first;
      while (last < seqKV && visible(i, last) == true)
        ++last;
      --last; // the run is [first, last]; empty when last < first
      if (last < first)
        continue;
      if (first > 0 && !band.lower)
        band.lower = first - i;
      if (last < seqKV - 1 && !band.upper)
        band.upper = last - i;
    }
    if (!band.upper && !band.lower)
      band.upper = seqKV - 1; // hides nothing (or every row is empty)
    for (int64_t i = 0; i < seqQ; ++i)
      for (int64_t j = 0; j < seqKV; ++j) {
        std::optional<bool> v = visible(i, j);
        if (!v)
          return diag.fail("mask entry (" + Twine(i) + ", " + Twine(j) +
                           ") is neither 0 nor ≤ -1e4");
        bool inBand = (!band.lower || j - i >= *band.lower) &&
                      (!band.upper || j - i <= *band.upper);
        if (*v != inBand)
          return diag.fail(
              "the mask is not a band of keys: entry (" + Twine(i) + ", " +
              Twine(j) + ") breaks " +
              (band.lower ? rowPlus(*band.lower) + " ≤ " : std::string()) +
              "j" +
              (band.upper ? " ≤ " + rowPlus(*band.upper) : std::string()));
      }
    return applyBand(band, m);
  }

  /// Records the band on `m` (upper → causal with δ = upper, lower → the
  /// window's lower edge). Rows that see no key give NaN (−inf mask) or a
  /// uniform average (finite mask) in the source but 0 in fat.attention, so
  /// a band that empties a row is refused: row 0 needs upper ≥ 0, every
  /// row lower ≤ upper, and the last row lower ≤ Skv − Sq (static sizes
  /// only: with dynamic ones that cannot be checked). Bounds that hide
  /// nothing are dropped.
  LogicalResult applyBand(const Band &band, ScoreMatch &m) {
    if (band.upper && *band.upper < 0)
      return diag.fail("the causal mask hides every key of query row 0 "
                       "(diagonal " +
                       Twine(*band.upper) + ")");
    if (band.lower) {
      if (band.upper && *band.lower > *band.upper)
        return diag.fail("the mask hides every key (" + Twine(*band.lower) +
                         " ≤ j − i ≤ " + Twine(*band.upper) + ")");
      if (ShapedType::isDynamic(seqQ) || ShapedType::isDynamic(seqKV))
        return diag.fail("a sliding window (keys j ≥ " +
                         rowPlus(*band.lower) +
                         ") needs static sequence lengths: the last rows see "
                         "no key when Sq − Skv > " +
                         Twine(-*band.lower));
      if (*band.lower > seqKV - seqQ)
        return diag.fail("the sliding window hides every key of the last "
                         "query rows (j ≥ " +
                         rowPlus(*band.lower) + ", Skv − Sq = " +
                         Twine(seqKV - seqQ) + ")");
    }
    m.causal = band.upper.has_value();
    m.diagonal = band.upper.value_or(0);
    if (m.causal && !ShapedType::isDynamic(seqKV) && m.diagonal >= seqKV - 1)
      m.causal = false;
    m.lower = band.lower;
    if (m.lower && *m.lower <= -(seqQ - 1))
      m.lower.reset();
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Stage 4: S = Q·Kᵀ
//===----------------------------------------------------------------------===//

/// The Q·Kᵀ contraction and how its loops map to the *extended* root loops:
/// the root loops plus one for the head dim d it sums over.
struct QKMatch {
  Contraction c;
  OpOperand *q, *k;
  AffineMap loops;  // extended root loops -> loops of the contraction
  unsigned headDim; // the extended loop d
};

/// Stage 4: the Q·Kᵀ contraction, its rows the queries and columns the keys.
struct QKMatcher {
  Tracer &tracer;
  Diagnosis &diag;
  unsigned query, key;

  /// `qk` = C[map] for a contraction C: its loop read at i carries Q, the
  /// one read at j carries K.
  FailureOr<QKMatch> match(const Term *qk) {
    if (!qk->isElement())
      return diag.fail(Twine("the softmax input is not [scale ·] [mask +] "
                             "Q·Kᵀ: found ") +
                       (qk->kind == Term::Kind::Op ? qk->name : "a scalar"));
    FailureOr<Contraction> c =
        matchContraction(qk->value, tracer, diag, "Q·Kᵀ");
    if (failed(c))
      return failure();
    MLIRContext *ctx = qk->map.getContext();
    QKMatch m;
    m.c = *c;
    m.headDim = qk->map.getNumDims();
    SmallVector<AffineExpr> loops;
    for (unsigned l = 0, e = c->op.getNumLoops(); l < e; ++l) {
      if (l == c->reduction) {
        loops.push_back(getAffineDimExpr(m.headDim, ctx));
        continue;
      }
      loops.push_back(qk->map.getResult(*resultOf(c->outMap, l)));
    }
    m.loops = AffineMap::get(m.headDim + 1, 0, loops, ctx);
    std::optional<unsigned> rowLoop, colLoop;
    for (auto [l, e] : llvm::enumerate(loops)) {
      if (isDim(e, query))
        rowLoop = l;
      else if (isDim(e, key))
        colLoop = l;
    }
    if (!rowLoop || !colLoop)
      return diag.fail("the dims of Q·Kᵀ do not line up with the query rows "
                       "and the keys of the softmax and of P·V");
    auto uses = [&](OpOperand *o, unsigned l) {
      return c->op.getMatchingIndexingMap(o).isFunctionOfDim(l);
    };
    for (auto [q, k] : {std::pair(c->lhs, c->rhs), std::pair(c->rhs, c->lhs)})
      if (uses(q, *rowLoop) && !uses(q, *colLoop) && uses(k, *colLoop) &&
          !uses(k, *rowLoop)) {
        m.q = q;
        m.k = k;
        return m;
      }
    return diag.fail("Q·Kᵀ mixes the query rows and the keys in one operand");
  }
};

/// `t` as MLIR prints it.
std::string typeName(Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << t;
  return s;
}

/// The op whose result O replaces: P·V itself when it produces the element
/// type of Q, K and V; else (16-bit operands, f32 P·V) the user that rounds
/// it to that type, since fat.attention writes O in the input type.
Operation *findOutput(linalg::LinalgOp pv, Type elementType, Tracer &tracer) {
  Value result = pv->getResult(0);
  auto type = cast<RankedTensorType>(result.getType());
  if (type.getElementType() == elementType)
    return pv.getOperation();
  for (Operation *user : result.getUsers()) {
    if (user->getNumResults() != 1)
      continue;
    auto userType = dyn_cast<RankedTensorType>(user->getResult(0).getType());
    if (!userType || userType.getShape() != type.getShape() ||
        userType.getElementType() != elementType)
      continue;
    AffineMap id =
        AffineMap::getMultiDimIdentityMap(type.getRank(), pv.getContext());
    const Term *t = tracer.element(user->getResult(0), id, /*depth=*/1);
    if (t->is<arith::TruncFOp>() && t->operand(0)->isElement() &&
        t->operand(0)->value == result && t->operand(0)->map == id)
      return user;
  }
  return nullptr;
}

//===----------------------------------------------------------------------===//
// Stage 5: Q, K, V as 4-D operands
//===----------------------------------------------------------------------===//

/// Stage 5: Q, K and V as [B, H, S, D] operands and the GQA group.
struct OperandMatcher {
  Tracer &tracer;
  Diagnosis &diag;
  unsigned query, key, value, headDim;
  ArrayRef<unsigned> batch;     // β
  ArrayRef<int64_t> batchSizes; // sizes of β

  /// Views of every operand along its chain of producers, deepest first,
  /// that read as [batch…, seq, feat]; then the deepest choice for Q, K and
  /// V that agrees on element type and on the batch/head mapping
  ///   flat(Q) = flat(β),  flat(K) = flat(V) = flat(β) floordiv g,
  /// in an element type T that O can be written in (`writesO(T)`).
  FailureOr<OperandMatch> match(OpOperand *q, AffineMap qMap, OpOperand *k,
                                AffineMap kMap, OpOperand *v, AffineMap vMap,
                                function_ref<bool(Type)> writesO,
                                Type resultType) {
    MLIRContext *ctx = qMap.getContext();
    SmallVector<AffineExpr> idx;
    for (unsigned d : batch)
      idx.push_back(getAffineDimExpr(d, ctx));
    std::optional<AffineExpr> flatBeta = linearize(idx, batchSizes, ctx);
    if (!flatBeta)
      return diag.fail("the output has more than one dynamic batch dim");

    SmallVector<OperandView> qs = views(q->get(), qMap, query, headDim, true);
    SmallVector<OperandView> ks = views(k->get(), kMap, key, headDim, true);
    SmallVector<OperandView> vs = views(v->get(), vMap, key, value, false);
    for (auto [name, list] :
         {std::pair("Q", &qs), std::pair("K", &ks), std::pair("V", &vs)})
      if (list->empty())
        return diag.fail(Twine(name) +
                         " is not read as [batch…, S, D] with "
                         "batch indices from the output's batch dims only");

    if (std::optional<OperandMatch> m = search(qs, ks, vs, *flatBeta, writesO))
      return chooseHeads(*m);
    if (std::optional<OperandMatch> m =
            search(qs, ks, vs, *flatBeta, [](Type) { return true; }))
      return diag.fail("P·V produces " + typeName(resultType) +
                       " but Q, K, V are " + typeName(m->q.elementType()) +
                       " and nothing rounds the result to it: fat.attention "
                       "writes O in the input type");
    return diag.fail("Q, K and V do not index batch and heads consistently "
                     "with the output (or their element types differ)");
  }

private:
  /// The deepest views of Q, K, V (in that order of preference) of one
  /// element type accepted by `typeOk` whose batch indices agree with β.
  std::optional<OperandMatch> search(ArrayRef<OperandView> qs,
                                     ArrayRef<OperandView> ks,
                                     ArrayRef<OperandView> vs,
                                     AffineExpr flatBeta,
                                     function_ref<bool(Type)> typeOk) {
    int64_t countBeta = product(batchSizes);
    auto agrees = [&](const OperandView &x, int64_t group) {
      return agreeEverywhere(x.flat, flatBeta.floorDiv(group), batch,
                             batchSizes, headDim + 1);
    };
    for (const OperandView &qv : qs) {
      if (!typeOk(qv.elementType()) || !agrees(qv, 1) ||
          (!ShapedType::isDynamic(qv.count) &&
           !ShapedType::isDynamic(countBeta) && qv.count != countBeta))
        continue;
      for (const OperandView &kv : ks) {
        std::optional<int64_t> g = groupSize(qv, kv);
        if (kv.elementType() != qv.elementType() || !g || !agrees(kv, *g))
          continue;
        for (const OperandView &vv : vs) {
          if (vv.elementType() != qv.elementType() || groupSize(qv, vv) != g ||
              !agrees(vv, *g))
            continue;
          OperandMatch m;
          m.q = qv;
          m.k = kv;
          m.v = vv;
          m.group = *g;
          return m;
        }
      }
    }
    return std::nullopt;
  }

  /// The chain of views of `operand`: the operand itself, then through each
  /// producer that is a pure view (transpose, broadcast, reshape, copy),
  /// a multiplication by a constant (only if `allowScale`) or a widening.
  SmallVector<OperandView> views(Value operand, AffineMap map, unsigned seq,
                                 unsigned feat, bool allowScale) {
    SmallVector<OperandView> chain, usable;
    OperandView cur;
    cur.tensor = operand;
    cur.map = map;
    while (true) {
      chain.push_back(cur);
      const Term *t = tracer.element(cur.tensor, cur.map, /*depth=*/1);
      double scale = cur.scale;
      while (true) {
        if (t->is<arith::ExtFOp>()) {
          t = t->operand(0);
        } else if (std::optional<std::pair<const Term *, double>> f =
                       allowScale ? constantFactor(t) : std::nullopt) {
          scale *= f->second;
          t = f->first;
        } else {
          break;
        }
      }
      if (!t->isElement() || t->value == cur.tensor)
        break;
      cur = OperandView();
      cur.tensor = t->value;
      cur.map = t->map;
      cur.scale = scale;
    }
    for (OperandView &view : llvm::reverse(chain))
      if (succeeded(describe(view, seq, feat)))
        usable.push_back(view);
    return usable;
  }

  /// Fills the batch description of `view` if it reads as [batch…, seq,
  /// feat] or [batch…, feat, seq], the batch indices using root batch loops
  /// only.
  LogicalResult describe(OperandView &view, unsigned seq, unsigned feat) {
    auto type = cast<RankedTensorType>(view.tensor.getType());
    unsigned n = view.map.getNumResults();
    if (n < 2 || type.getRank() != int64_t(n))
      return failure();
    AffineExpr a = view.map.getResult(n - 2), b = view.map.getResult(n - 1);
    if (isDim(a, seq) && isDim(b, feat))
      view.transposed = false;
    else if (isDim(a, feat) && isDim(b, seq))
      view.transposed = true;
    else
      return failure();
    for (unsigned r = 0; r + 2 < n; ++r) {
      AffineExpr e = view.map.getResult(r);
      for (unsigned d : {query, key, value, headDim})
        if (e.isFunctionOfDim(d))
          return failure();
      view.batch.push_back(e);
      view.batchSizes.push_back(type.getDimSize(r));
    }
    if (ShapedType::isDynamic(type.getDimSize(view.transposed ? n - 2 : n - 1)))
      return failure(); // fat.attention needs a static head dim
    std::optional<AffineExpr> flat =
        linearize(view.batch, view.batchSizes, type.getContext());
    if (!flat)
      return failure();
    view.flat = *flat;
    view.count = product(view.batchSizes);
    return success();
  }

  /// g = (# Q batch·head slices) / (# K slices), from static counts or, with
  /// a dynamic outer dim on both, from their static inner dims.
  static std::optional<int64_t> groupSize(const OperandView &q,
                                          const OperandView &k) {
    int64_t nq = q.count, nk = k.count;
    if (ShapedType::isDynamic(nq) != ShapedType::isDynamic(nk))
      return std::nullopt;
    if (ShapedType::isDynamic(nq)) {
      nq = product(ArrayRef(q.batchSizes).drop_front());
      nk = product(ArrayRef(k.batchSizes).drop_front());
    }
    if (nk <= 0 || nq % nk != 0)
      return std::nullopt;
    return nq / nk;
  }

  /// Splits the flat batch·head index into (B, Hq): Hq from the inner batch
  /// dims of the output, else of Q, else of K times g, else all static
  /// slices are heads when there is a group (B = 1), else Hq = 1.
  FailureOr<OperandMatch> chooseHeads(OperandMatch m) {
    int64_t countBeta = product(batchSizes);
    int64_t heads;
    if (batchSizes.size() >= 2)
      heads = product(batchSizes.drop_front());
    else if (m.q.batchSizes.size() >= 2)
      heads = product(ArrayRef(m.q.batchSizes).drop_front());
    else if (m.k.batchSizes.size() >= 2)
      heads = product(ArrayRef(m.k.batchSizes).drop_front()) * m.group;
    else if (m.group > 1)
      heads = countBeta;
    else
      heads = 1;
    if (ShapedType::isDynamic(heads))
      return diag.fail("cannot split a dynamic batch·heads dim into B and H "
                       "for a group of " +
                       Twine(m.group));
    if (heads % m.group != 0 ||
        (!ShapedType::isDynamic(countBeta) && countBeta % heads != 0))
      return diag.fail("no head count H with H % g == 0 (g = " +
                       Twine(m.group) + ") divides the batch·heads dim");
    m.heads = heads;
    return m;
  }
};

//===----------------------------------------------------------------------===//
// The whole match
//===----------------------------------------------------------------------===//

} // namespace

/// Whether `op` is a two-input reduction (a contraction, roughly) with an
/// input computed from an exp or a linalg.softmax: what a user expects to see
/// raised.
bool mlir::fat::raise::readsSoftmax(linalg::LinalgOp op, Tracer &tracer) {
  if (op.getNumDpsInputs() != 2 || op.getNumReductionLoops() != 1)
    return false;
  return llvm::any_of(op.getDpsInputOperands(), [&](OpOperand *in) {
    if (!isa<RankedTensorType>(in->get().getType()))
      return false;
    const Term *t = tracer.element(in->get(), op.getMatchingIndexingMap(in));
    return anyOp(t, math::ExpOp::getOperationName()) ||
           anyLeaf(t, [](const Term *l) {
             return l->isElement() &&
                    isa_and_nonnull<linalg::SoftmaxOp>(l->producer());
           });
  });
}

/// Runs the stages on a candidate P·V contraction.
FailureOr<AttentionMatch> mlir::fat::raise::matchAttention(linalg::LinalgOp op,
                                                           Diagnosis &diag,
                                                           Tracer &tracer) {
  AttentionMatch m;
  FailureOr<PVMatch> pv = PVMatcher{tracer, diag}.match(op);
  if (failed(pv))
    return failure();
  m.pv = *pv;

  const Term *p =
      tracer.element(pv->p->get(), op.getMatchingIndexingMap(pv->p));
  FailureOr<const Term *> s = SoftmaxMatcher{tracer, diag, pv->key}.match(p);
  if (failed(s))
    return failure();

  FailureOr<ScoreMatch> scores =
      ScoreMatcher{diag, pv->query, pv->key, pv->sizes[pv->query],
                   pv->sizes[pv->key]}
          .match(*s);
  if (failed(scores))
    return failure();
  m.scores = *scores;

  if (scores->region) {
    // Q·Kᵀ is the one leaf of the region that is such a contraction.
    SmallVector<const Term *> leaves;
    std::function<void(const Term *)> collect = [&](const Term *t) {
      if (t->isElement() && llvm::find(leaves, t) == leaves.end())
        leaves.push_back(t);
      for (const Term *o : t->operands)
        collect(o);
    };
    collect(scores->region);
    for (const Term *leaf : leaves) {
      Diagnosis scratch;
      if (succeeded(QKMatcher{tracer, scratch, pv->query, pv->key}.match(leaf))) {
        if (scores->qk && !sameTerm(scores->qk, leaf))
          return diag.fail("the scores read two products of the shape of Q·Kᵀ");
        scores->qk = leaf;
      }
    }
    if (!scores->qk)
      return diag.fail("the softmax input is not a function of Q·Kᵀ");
    m.scores.qk = scores->qk;
    // The region sees b, h, i, j: its other leaves may read the batch, query
    // and key loops only.
    auto readsOther = [&](const Term *t) {
      if (t->kind == Term::Kind::Index)
        return t->dim == pv->value;
      return t->isElement() && !sameTerm(t, scores->qk) &&
             t->map.isFunctionOfDim(pv->value);
    };
    if (anyLeaf(scores->region, readsOther))
      return diag.fail("the scores read the value dim of P·V");
  }
  FailureOr<QKMatch> qk =
      QKMatcher{tracer, diag, pv->query, pv->key}.match(scores->qk);
  if (failed(qk))
    return failure();

  // V in the extended root loops (the head dim d is unused there).
  MLIRContext *ctx = op.getContext();
  AffineMap vMap = op.getMatchingIndexingMap(pv->v);
  vMap = AffineMap::get(qk->headDim + 1, 0, vMap.getResults(), ctx);
  SmallVector<int64_t> batchSizes;
  for (unsigned d : pv->batch)
    batchSizes.push_back(pv->sizes[d]);
  auto writesO = [&](Type t) { return findOutput(op, t, tracer) != nullptr; };
  FailureOr<OperandMatch> operands =
      OperandMatcher{tracer,    diag,        pv->query, pv->key,
                     pv->value, qk->headDim, pv->batch, batchSizes}
          .match(
              qk->q, qk->c.op.getMatchingIndexingMap(qk->q).compose(qk->loops),
              qk->k, qk->c.op.getMatchingIndexingMap(qk->k).compose(qk->loops),
              pv->v, vMap, writesO, getElementTypeOrSelf(op->getResult(0)));
  if (failed(operands))
    return failure();
  m.operands = *operands;
  // fat.attention's scale: the factors on S, on Q and on K.
  m.scores.scale *= operands->q.scale * operands->k.scale;
  if (!(m.scores.scale > 0.0) || !std::isfinite(m.scores.scale))
    return diag.fail(llvm::formatv("the scale {0} is not positive and finite",
                                   m.scores.scale));

  m.output = findOutput(op, operands->q.elementType(), tracer);
  return m;
}
