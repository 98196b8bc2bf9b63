//===- RaiseAttentionMatchers.h - linalg attention, stage by stage -*- C++
//-*-===//
//
// The matchers of --fat-raise-attention, one per stage of
//   S = Q·Kᵀ,  S' = c·S (+ causal mask),  P = softmax_j(S'),  O = P·V
// rooted at the P·V contraction. Every term is written in the loops of that
// contraction (β…, i, dv, j); Q·Kᵀ adds one loop for the head dim d. Each
// stage returns what it captured or says why not in a Diagnosis.
//
//===----------------------------------------------------------------------===//

#ifndef FAT_LIB_DIALECT_FAT_TRANSFORMS_RAISEATTENTIONMATCHERS_H
#define FAT_LIB_DIALECT_FAT_TRANSFORMS_RAISEATTENTIONMATCHERS_H

#include "RaiseAttentionTerms.h"

#include <optional>
#include <string>

namespace mlir::fat::raise {

/// Why a candidate was not raised: the first stage that refused says it.
struct Diagnosis {
  std::string reason;

  LogicalResult fail(const Twine &why) {
    reason = why.str();
    return failure();
  }
};

/// A linalg contraction C[parallel loops] = Σ_r A·B on tensors, accumulated
/// from zero.
struct Contraction {
  linalg::LinalgOp op;
  OpOperand *lhs, *rhs;
  unsigned reduction; // the one reduction loop
  AffineMap outMap;   // loops -> result indices (all parallel loops once)
};

/// The root contraction and the roles of its loops, which are the root loops
/// every term is written in.
struct PVMatch {
  Contraction c;
  OpOperand *p, *v;
  unsigned query, value, key;  // i (rows of O), dv (cols of O), j (summed)
  SmallVector<unsigned> batch; // β, in the order of O's dims
  SmallVector<int64_t> sizes;  // static loop ranges (kDynamic if unknown)
};

/// What the scores add to Q·Kᵀ: S = scale · Q·Kᵀ, masked to keys
/// j ≤ i + diagonal when `causal` and j ≥ i + lower when `lower` is set.
struct ScoreMatch {
  double scale = 1.0;
  bool causal = false;
  int64_t diagonal = 0; // δ: keys j ≤ i + δ are visible
  std::optional<int64_t> lower; // a sliding window's lower edge (j − i)
  const Term *qk = nullptr;
  /// Elementwise work fat.attention's scale and band cannot hold (tanh
  /// soft-capping, a bias tensor, a runtime scale or mask tensor): the
  /// scores are `regionScale` · `region`, a term in which `qk` is one leaf,
  /// and become the op's score region (fat.attention scale = the factors
  /// on Q and K only).
  const Term *region = nullptr;
  double regionScale = 1.0;
};

/// One way of reading an operand: `tensor` at `map` (extended root loops ->
/// its dims), after constant factors `scale` on the way to the contraction.
struct OperandView {
  Value tensor;
  AffineMap map;
  double scale = 1.0;
  bool transposed = false;       // stored [batch…, feat, seq]
  SmallVector<AffineExpr> batch; // the indices of its leading dims
  SmallVector<int64_t> batchSizes;
  int64_t count = 0; // product of batchSizes (or kDynamic)
  AffineExpr flat;   // row-major linearization of `batch`

  Type elementType() const {
    return cast<ShapedType>(tensor.getType()).getElementType();
  }
};

/// The views of Q, K and V fat.attention reads, and how the flat batch·head
/// index splits: Hq = heads, Hkv = heads / group.
struct OperandMatch {
  OperandView q, k, v;
  int64_t heads = 1; // Hq
  int64_t group = 1; // Hq / Hkv
};

/// Everything the rewrite needs.
struct AttentionMatch {
  PVMatch pv;
  ScoreMatch scores;
  OperandMatch operands;
  Operation *output; // the op whose result fat.attention's O replaces
};

/// Whether `op` is a two-input reduction (a contraction, roughly) with an
/// input computed from an exp or a linalg.softmax: what a user expects to see
/// raised.
bool readsSoftmax(linalg::LinalgOp op, Tracer &tracer);

/// Runs the stages on a candidate P·V contraction. The match's terms live
/// in `tracer`: keep it while reading them (writeScoreRegion).
FailureOr<AttentionMatch> matchAttention(linalg::LinalgOp op, Diagnosis &diag,
                                         Tracer &tracer);

/// Writes `m.scores.region` into the empty `region` as fat.attention's score
/// region (RaiseAttentionRegion.cpp); returns the values it captures, in
/// the order of its trailing block arguments.
SmallVector<Value> writeScoreRegion(OpBuilder &builder, Location loc,
                                    const AttentionMatch &m, Region &region);

} // namespace mlir::fat::raise

#endif // FAT_LIB_DIALECT_FAT_TRANSFORMS_RAISEATTENTIONMATCHERS_H
