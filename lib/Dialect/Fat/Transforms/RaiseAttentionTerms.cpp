//===- RaiseAttentionTerms.cpp - terms and the Tracer ---------------------===//
//
// How each op is seen through: an elementwise linalg op is its body with its
// operands read at the composed indexing maps, a reshape is index arithmetic,
// a splat is a number, arith/math ops in bodies are term nodes (folded when
// their operands are numbers).
//
//===----------------------------------------------------------------------===//

#include "RaiseAttentionTerms.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"

#include <cmath>

using namespace mlir;
using namespace mlir::fat::raise;

namespace {

/// `x` rounded to the float type `t` (identity for f64 and non-floats), so
/// that folded constants carry the value the program computes.
double roundTo(Type t, double x) {
  auto ft = dyn_cast<FloatType>(t);
  if (!ft || ft.isF64())
    return x;
  APFloat f(x);
  bool lost = false;
  f.convert(ft.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
  return f.convertToDouble();
}

/// The number an attribute holds (booleans are 0 / 1).
std::optional<double> numberOf(Attribute attr) {
  if (auto f = dyn_cast<FloatAttr>(attr))
    return f.getValueAsDouble();
  if (auto i = dyn_cast<IntegerAttr>(attr))
    return i.getType().isInteger(1) ? double(i.getValue().getZExtValue())
                                    : double(i.getValue().getSExtValue());
  return std::nullopt;
}

/// The source indices of a tensor.expand_shape read at result indices `map`:
/// each source dim is the row-major linearization of its group. Needs static
/// sizes for all but the outermost dim of a group.
std::optional<AffineMap> expandSourceMap(tensor::ExpandShapeOp op,
                                         AffineMap map) {
  ArrayRef<int64_t> sizes = op.getResultType().getShape();
  SmallVector<AffineExpr> exprs;
  for (const ReassociationIndices &group : op.getReassociationIndices()) {
    AffineExpr e = map.getResult(group[0]);
    for (int64_t d : ArrayRef(group).drop_front()) {
      if (ShapedType::isDynamic(sizes[d]))
        return std::nullopt;
      e = e * sizes[d] + map.getResult(d);
    }
    exprs.push_back(e);
  }
  return AffineMap::get(map.getNumDims(), 0, exprs, op.getContext());
}

/// The source indices of a tensor.collapse_shape read at result indices
/// `map`: each result index unfolds into its group by floordiv / mod. Needs
/// static sizes for all but the outermost dim of a group.
std::optional<AffineMap> collapseSourceMap(tensor::CollapseShapeOp op,
                                           AffineMap map) {
  ArrayRef<int64_t> sizes = op.getSrcType().getShape();
  SmallVector<AffineExpr> exprs;
  for (auto [r, group] : llvm::enumerate(op.getReassociationIndices())) {
    AffineExpr idx = map.getResult(r);
    SmallVector<AffineExpr> unfolded(group.size());
    int64_t stride = 1; // product of the sizes inside the group after dim k
    for (int64_t k = group.size() - 1; k >= 0; --k) {
      AffineExpr e = idx.floorDiv(stride);
      if (k > 0) {
        int64_t size = sizes[group[k]];
        if (ShapedType::isDynamic(size))
          return std::nullopt;
        e = e % size;
        stride *= size;
      }
      unfolded[k] = e;
    }
    llvm::append_range(exprs, unfolded);
  }
  return AffineMap::get(map.getNumDims(), 0, exprs, op.getContext());
}

} // namespace

/// Structural equality; commutative ops match either operand order.
bool mlir::fat::raise::sameTerm(const Term *a, const Term *b) {
  if (a == b)
    return true;
  if (a->kind != b->kind)
    return false;
  switch (a->kind) {
  case Term::Kind::Element:
    return a->value == b->value && a->map == b->map;
  case Term::Kind::Constant:
    return a->number == b->number ||
           (std::isnan(a->number) && std::isnan(b->number));
  case Term::Kind::Index:
    return a->dim == b->dim;
  case Term::Kind::Scalar:
    return a->value == b->value;
  case Term::Kind::Op:
    if (a->name != b->name || a->type != b->type ||
        a->predicate != b->predicate ||
        a->operands.size() != b->operands.size())
      return false;
    if (llvm::equal(a->operands, b->operands, sameTerm))
      return true;
    return a->commutative && a->operands.size() == 2 &&
           sameTerm(a->operand(0), b->operand(1)) &&
           sameTerm(a->operand(1), b->operand(0));
  }
  llvm_unreachable("unknown term kind");
}

/// Whether any leaf of `t` satisfies `pred`.
bool mlir::fat::raise::anyLeaf(const Term *t,
                               function_ref<bool(const Term *)> pred) {
  if (t->kind == Term::Kind::Op)
    return llvm::any_of(t->operands,
                        [&](const Term *o) { return anyLeaf(o, pred); });
  return pred(t);
}

/// Whether any op of `t` is a `name`.
bool mlir::fat::raise::anyOp(const Term *t, StringRef name) {
  if (t->kind != Term::Kind::Op)
    return false;
  return t->name == name || llvm::any_of(t->operands, [&](const Term *o) {
           return anyOp(o, name);
         });
}

/// For t = x·c, c·x or x/c with c a constant: x and the factor c (or 1/c).
std::optional<std::pair<const Term *, double>>
mlir::fat::raise::constantFactor(const Term *t) {
  bool div = t->is<arith::DivFOp>();
  if (!div && !t->is<arith::MulFOp>())
    return std::nullopt;
  if (t->operand(1)->isConstant()) {
    double c = t->operand(1)->number;
    return std::pair(t->operand(0), div ? 1.0 / c : c);
  }
  if (!div && t->operand(0)->isConstant())
    return std::pair(t->operand(1), t->operand(0)->number);
  return std::nullopt;
}

const Term *Tracer::element(Value tensor, AffineMap map, unsigned depth) {
  map = simplifyAffineMap(map);
  DenseElementsAttr dense;
  if (matchPattern(tensor, m_Constant(&dense)) && dense.isSplat())
    if (std::optional<double> x = numberOf(dense.getSplatValue<Attribute>()))
      return constant(*x);
  Operation *def = tensor.getDefiningOp();
  if (!def || depth == 0 || terms.size() >= kMaxTerms)
    return leaf(Term::Kind::Element, tensor, map);

  if (auto cast = dyn_cast<tensor::CastOp>(def))
    return element(cast.getSource(), map, depth - 1);
  // A one-element tensor (torch's scalar_tensor) is its element.
  if (auto fromElements = dyn_cast<tensor::FromElementsOp>(def))
    if (fromElements.getElements().size() == 1)
      return scalarOutside(fromElements.getElements().front());
  if (auto expand = dyn_cast<tensor::ExpandShapeOp>(def)) {
    if (std::optional<AffineMap> src = expandSourceMap(expand, map))
      return element(expand.getSrc(), *src, depth - 1);
  } else if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(def)) {
    if (std::optional<AffineMap> src = collapseSourceMap(collapse, map))
      return element(collapse.getSrc(), *src, depth - 1);
  } else if (auto linalgOp = dyn_cast<linalg::LinalgOp>(def)) {
    // Elementwise (with broadcasts and transposes): element = body(operands).
    auto result = cast<OpResult>(tensor);
    AffineMap outMap = linalgOp.getIndexingMapMatchingResult(result);
    if (linalgOp.hasPureTensorSemantics() &&
        linalgOp.getNumReductionLoops() == 0 && outMap.isPermutation()) {
      AffineMap loops = inversePermutation(outMap).compose(map);
      Value yielded = linalgOp.getBlock()->getTerminator()->getOperand(
          result.getResultNumber());
      return scalarIn(yielded, linalgOp, loops, depth - 1);
    }
  } else if (def->hasTrait<OpTrait::Elementwise>() &&
             def->getNumResults() == 1 &&
             llvm::all_of(def->getOperandTypes(), [&](Type t) {
               return isa<RankedTensorType>(t) &&
                      cast<ShapedType>(t).getShape() ==
                          cast<ShapedType>(tensor.getType()).getShape();
             })) {
    // arith / math ops applied to whole tensors.
    SmallVector<const Term *, 3> operands;
    for (Value x : def->getOperands())
      operands.push_back(element(x, map, depth - 1));
    return opTerm(def, operands);
  }
  return leaf(Term::Kind::Element, tensor, map);
}

const Term *Tracer::scalarIn(Value v, linalg::LinalgOp op, AffineMap loops,
                             unsigned depth) {
  Block *body = op.getBlock();
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    if (arg.getOwner() != body)
      return leaf(Term::Kind::Scalar, v);
    OpOperand *operand = op.getMatchingOpOperand(arg);
    Value t = operand->get();
    if (!isa<RankedTensorType>(t.getType()))
      return scalarOutside(t);
    return element(t, op.getMatchingIndexingMap(operand).compose(loops), depth);
  }
  Operation *def = v.getDefiningOp();
  if (def->getBlock() != body || matchPattern(v, m_Constant()))
    return scalarOutside(v);
  if (auto index = dyn_cast<linalg::IndexOp>(def)) {
    AffineExpr e = loops.getResult(index.getDim());
    if (auto d = dyn_cast<AffineDimExpr>(e)) {
      Term &t = make(Term::Kind::Index);
      t.dim = d.getPosition();
      return &t;
    }
    if (auto c = dyn_cast<AffineConstantExpr>(e))
      return constant(c.getValue());
    return leaf(Term::Kind::Scalar, v);
  }
  if (def->getNumResults() != 1 || def->getNumRegions() != 0 ||
      terms.size() >= kMaxTerms)
    return leaf(Term::Kind::Scalar, v);
  SmallVector<const Term *, 3> operands;
  for (Value x : def->getOperands())
    operands.push_back(scalarIn(x, op, loops, depth));
  return opTerm(def, operands);
}

const Term *Tracer::scalarOutside(Value v) {
  Attribute attr;
  if (matchPattern(v, m_Constant(&attr)))
    if (std::optional<double> x = numberOf(attr))
      return constant(*x);
  return leaf(Term::Kind::Scalar, v);
}

const Term *Tracer::opTerm(Operation *op,
                           SmallVector<const Term *, 3> operands) {
  Term &t = make(Term::Kind::Op);
  t.name = op->getName().getStringRef();
  t.type = getElementTypeOrSelf(op->getResult(0).getType());
  t.commutative = op->hasTrait<OpTrait::IsCommutative>();
  if (auto cmp = dyn_cast<arith::CmpIOp>(op))
    t.predicate = int64_t(cmp.getPredicate());
  else if (auto cmp = dyn_cast<arith::CmpFOp>(op))
    t.predicate = int64_t(cmp.getPredicate());
  t.operands = std::move(operands);
  if (std::optional<double> x = fold(t))
    return constant(*x);
  return &t;
}

/// Folds the ops that compute a scale out of constants (torch-mlir truncates
/// f64 literals inside the body; 1/sqrt(d) is sometimes written out).
std::optional<double> Tracer::fold(const Term &t) {
  if (!llvm::all_of(t.operands, [](const Term *o) { return o->isConstant(); }))
    return std::nullopt;
  auto x = [&](unsigned i) { return t.operand(i)->number; };
  std::optional<double> r;
  if (t.is<arith::MulFOp>() || t.is<arith::MulIOp>())
    r = x(0) * x(1);
  else if (t.is<arith::DivFOp>())
    r = x(0) / x(1);
  else if (t.is<arith::AddFOp>() || t.is<arith::AddIOp>())
    r = x(0) + x(1);
  else if (t.is<arith::SubFOp>() || t.is<arith::SubIOp>())
    r = x(0) - x(1);
  else if (t.is<arith::NegFOp>())
    r = -x(0);
  else if (t.is<math::SqrtOp>())
    r = std::sqrt(x(0));
  else if (t.is<math::RsqrtOp>())
    r = 1.0 / std::sqrt(x(0));
  else if (t.is<arith::ExtFOp>() || t.is<arith::TruncFOp>() ||
           t.is<arith::SIToFPOp>() || t.is<arith::IndexCastOp>() ||
           t.is<arith::ExtSIOp>())
    r = x(0);
  if (!r)
    return std::nullopt;
  return roundTo(t.type, *r);
}
