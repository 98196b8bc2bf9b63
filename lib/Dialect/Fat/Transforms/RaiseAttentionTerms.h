//===- RaiseAttentionTerms.h - what one tensor element computes -*- C++ -*-===//
//
// --fat-raise-attention reads linalg through *terms*: a tree that says what
// one element of a tensor computes, in the coordinates of a chosen set of
// *root loops*. The Tracer builds them by inlining elementwise linalg ops
// (generic or named), broadcasts, transposes, splat constants, casts and
// reshapes (as floordiv/mod index arithmetic); it stops at contractions,
// reductions, linalg.softmax and anything else, which become leaves. Two
// programs that compute the same elements through different op boundaries
// get equal terms.
//
//===----------------------------------------------------------------------===//

#ifndef FAT_LIB_DIALECT_FAT_TRANSFORMS_RAISEATTENTIONTERMS_H
#define FAT_LIB_DIALECT_FAT_TRANSFORMS_RAISEATTENTIONTERMS_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/AffineMap.h"

#include <deque>
#include <optional>

namespace mlir::fat::raise {

/// What one element of a tensor computes, as a tree over leaves, in the
/// coordinates of the root loops.
struct Term {
  enum class Kind {
    Element,  // value[map(root loops)]: a tensor the tracer does not enter
    Constant, // a number (float, integer or boolean)
    Index,    // the root loop `dim` itself (a linalg.index)
    Scalar,   // a scalar SSA value the tracer does not enter
    Op        // an arith / math op `name` applied to `operands`
  };
  Kind kind = Kind::Constant;
  Value value;            // Element, Scalar
  AffineMap map;          // Element: root loops -> indices of `value`
  double number = 0.0;    // Constant
  unsigned dim = 0;       // Index
  StringRef name;         // Op
  Type type;              // Op: the scalar result type
  int64_t predicate = -1; // Op: the cmpi / cmpf predicate
  bool commutative = false;
  SmallVector<const Term *, 3> operands;

  bool isElement() const { return kind == Kind::Element; }
  bool isConstant() const { return kind == Kind::Constant; }
  bool isConstant(double x) const { return isConstant() && number == x; }
  template <typename OpTy> bool is() const {
    return kind == Kind::Op && name == OpTy::getOperationName();
  }
  const Term *operand(unsigned i) const { return operands[i]; }
  /// The op producing an Element leaf's tensor (null for block arguments).
  Operation *producer() const {
    return value ? value.getDefiningOp() : nullptr;
  }
};

/// Structural equality; commutative ops match either operand order.
bool sameTerm(const Term *a, const Term *b);

/// Whether any leaf of `t` satisfies `pred`.
bool anyLeaf(const Term *t, function_ref<bool(const Term *)> pred);

/// Whether any op of `t` is a `name`.
bool anyOp(const Term *t, StringRef name);

/// For t = x·c, c·x or x/c with c a constant: x and the factor c (or 1/c).
std::optional<std::pair<const Term *, double>> constantFactor(const Term *t);

/// Builds terms. Owns them for the duration of one match.
class Tracer {
public:
  static constexpr unsigned kUnbounded = ~0u;
  /// Attention needs well under a hundred terms; a runaway DAG stops here
  /// (the rest of it becomes leaves, which then match nothing).
  static constexpr size_t kMaxTerms = 4096;

  /// The term of `tensor[map(root loops)]`, looking through at most `depth`
  /// producers (each elementwise op, reshape or cast is one).
  const Term *element(Value tensor, AffineMap map, unsigned depth = kUnbounded);

  /// The term of the scalar `v` inside the body of `op`, whose loops are
  /// `loops` (root loops -> loops of `op`); tensor operands read at `depth`.
  const Term *scalarIn(Value v, linalg::LinalgOp op, AffineMap loops,
                       unsigned depth = kUnbounded);

  const Term *constant(double x) {
    Term &t = make(Term::Kind::Constant);
    t.number = x;
    return &t;
  }

private:
  Term &make(Term::Kind kind) {
    Term &t = terms.emplace_back();
    t.kind = kind;
    return t;
  }
  const Term *leaf(Term::Kind kind, Value v, AffineMap map = {}) {
    Term &t = make(kind);
    t.value = v;
    t.map = map;
    return &t;
  }
  const Term *scalarOutside(Value v);
  const Term *opTerm(Operation *op, SmallVector<const Term *, 3> operands);
  std::optional<double> fold(const Term &t);

  std::deque<Term> terms;
};

} // namespace mlir::fat::raise

#endif // FAT_LIB_DIALECT_FAT_TRANSFORMS_RAISEATTENTIONTERMS_H
