//===- RaiseAttentionRegion.cpp - a score term as fat.attention's region ---===//
//
// When the scores are more than c·Q·Kᵀ under a band mask (tanh soft-capping,
// a bias tensor, a runtime scale or mask), the matcher leaves their term
// (ScoreMatch::region, in the root loops β…, i, dv, j of P·V). This file
// writes that term as the op's score region
//
//   ^bb0(%s: f32, %b, %h, %i, %j: index, captures…):  s' = c · term
//
// with Q·Kᵀ's leaf read as %s (fat.attention's scale is then the factors on
// Q and K alone), the root loops as the region's indices (i, j directly;
// the batch loops from flat(β) = b·Hq + h, the OperandMatcher's split), and
// every tensor or scalar the term reads from outside as a capture.
//
//===----------------------------------------------------------------------===//

#include "RaiseAttentionMatchers.h"

#include "fa-t/Dialect/Fat/IR/FatOps.h"

#include "mlir/Dialect/Affine/Utils.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::fat;
using namespace mlir::fat::raise;

namespace {

struct RegionWriter {
  RegionWriter(OpBuilder &b, Location loc, const AttentionMatch &m, Block *block)
      : b(b), loc(loc), m(m), block(block) {}

  OpBuilder &b;
  Location loc;
  const AttentionMatch &m;
  Block *block;
  SmallVector<Value> captures;
  DenseMap<const Term *, Value> memo;
  DenseMap<Value, Value> captured; // outside value -> block argument

  Value arg(unsigned i) { return block->getArgument(i); }
  Value s() { return arg(0); }

  Value capture(Value outside) {
    auto it = captured.find(outside);
    if (it != captured.end())
      return it->second;
    captures.push_back(outside);
    Value a = block->addArgument(outside.getType(), loc);
    captured[outside] = a;
    return a;
  }

  Value idx(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }

  /// The root loop `dim` in the region's indices.
  Value loop(unsigned dim) {
    const PVMatch &pv = m.pv;
    if (dim == pv.query)
      return arg(3);
    if (dim == pv.key)
      return arg(4);
    // Batch loops: flat(β) = b·Hq + h, split row-major over their sizes.
    Value flat = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, arg(1), idx(m.operands.heads)),
        arg(2));
    for (auto [k, d] : llvm::enumerate(pv.batch)) {
      if (d != dim)
        continue;
      int64_t stride = 1;
      for (unsigned later : ArrayRef(pv.batch).drop_front(k + 1))
        stride *= pv.sizes[later];
      Value v = arith::DivUIOp::create(b, loc, flat, idx(stride));
      if (k > 0)
        v = arith::RemUIOp::create(b, loc, v, idx(pv.sizes[d]));
      return v;
    }
    llvm_unreachable("a region leaf reads a loop the matcher refused");
  }

  Value constant(double x, Type type) {
    if (isa<FloatType>(type))
      return arith::ConstantOp::create(b, loc, b.getFloatAttr(type, x));
    if (type.isIndex())
      return idx(int64_t(x));
    return arith::ConstantOp::create(b, loc, b.getIntegerAttr(type, int64_t(x)));
  }

  /// The value of `t` (of type `want` where the term does not say).
  Value emit(const Term *t, Type want) {
    if (Value v = memo.lookup(t))
      return v;
    Value v;
    switch (t->kind) {
    case Term::Kind::Constant:
      return constant(t->number, want); // not memoized: types may differ
    case Term::Kind::Index:
      v = loop(t->dim);
      break;
    case Term::Kind::Scalar:
      v = capture(t->value);
      break;
    case Term::Kind::Element:
      if (sameTerm(t, m.scores.qk)) {
        // Q·Kᵀ's element, in its own type.
        Type elt = getElementTypeOrSelf(t->value.getType());
        v = s();
        if (elt != v.getType())
          v = arith::TruncFOp::create(b, loc, elt, v);
      } else {
        SmallVector<Value> dims;
        for (unsigned d = 0, e = t->map.getNumDims(); d < e; ++d)
          dims.push_back(t->map.isFunctionOfDim(d) ? loop(d) : Value());
        SmallVector<Value> indices;
        for (AffineExpr r : t->map.getResults())
          indices.push_back(affine::expandAffineExpr(b, loc, r, dims, {}));
        v = tensor::ExtractOp::create(b, loc, capture(t->value), indices);
      }
      break;
    case Term::Kind::Op: {
      // Operands: the non-constant ones first, whose types give the
      // constants theirs (a select's branches and every other operand of a
      // same-typed op take the result type).
      SmallVector<Value> operands(t->operands.size());
      Type sibling;
      for (auto [k, o] : llvm::enumerate(t->operands))
        if (!o->isConstant()) {
          Type hint = t->type;
          if (t->name == arith::SelectOp::getOperationName() && k == 0)
            hint = b.getI1Type();
          operands[k] = emit(o, hint);
          if (!(t->name == arith::SelectOp::getOperationName() && k == 0))
            sibling = operands[k].getType();
        }
      for (auto [k, o] : llvm::enumerate(t->operands))
        if (o->isConstant()) {
          Type type = sibling ? sibling : t->type;
          if (t->name == arith::SelectOp::getOperationName() && k == 0)
            type = b.getI1Type();
          operands[k] = constant(o->number, type);
        }
      OperationState state(loc, t->name);
      state.addOperands(operands);
      state.addTypes(t->type);
      if (t->predicate >= 0) {
        if (t->name == arith::CmpFOp::getOperationName())
          state.addAttribute("predicate",
                             arith::CmpFPredicateAttr::get(
                                 b.getContext(), arith::CmpFPredicate(t->predicate)));
        else
          state.addAttribute("predicate",
                             arith::CmpIPredicateAttr::get(
                                 b.getContext(), arith::CmpIPredicate(t->predicate)));
      }
      v = b.create(state)->getResult(0);
      break;
    }
    }
    memo[t] = v;
    return v;
  }
};

} // namespace

SmallVector<Value> mlir::fat::raise::writeScoreRegion(OpBuilder &builder,
                                                     Location loc,
                                                     const AttentionMatch &m,
                                                     Region &region) {
  OpBuilder::InsertionGuard guard(builder);
  Block *block = builder.createBlock(&region);
  block->addArgument(builder.getF32Type(), loc);
  for (int i = 0; i < 4; ++i)
    block->addArgument(builder.getIndexType(), loc);
  RegionWriter w(builder, loc, m, block);
  Value s = w.emit(m.scores.region, builder.getF32Type());
  if (!s.getType().isF32())
    s = arith::ExtFOp::create(builder, loc, builder.getF32Type(), s);
  if (m.scores.regionScale != 1.0)
    s = arith::MulFOp::create(
        builder, loc, s,
        arith::ConstantOp::create(builder, loc,
                                  builder.getF32FloatAttr(m.scores.regionScale)));
  YieldOp::create(builder, loc, s);
  return w.captures;
}
