//===- FatTensorOps.cpp - verifiers of the tensorized level ---------------===//
//
// fat.wgmma's shapes are the hardware's: 64 rows per warpgroup, K a multiple
// of 16 (one m64nNk16 step for 16-bit operands), N a multiple of 8 up to
// 256. The softmax ops work on an f32 tile [M, N] and its row vectors [M].
//
//===----------------------------------------------------------------------===//

#include "TileVerifiers.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMTypes.h"
#include "mlir/IR/Matchers.h"

#include <cmath>

using namespace mlir;
using namespace mlir::fat;
using namespace mlir::fat::detail;

/// The wgmma operand element types: f16 or bf16 (tf32 and fp8 need other
/// instruction shapes).
static bool isWgmmaElementType(Type t) { return t.isF16() || t.isBF16(); }

LogicalResult WgmmaOp::verify() {
  auto a = cast<RankedTensorType>(getA().getType());
  auto b = cast<RankedTensorType>(getB().getType());
  auto d = cast<RankedTensorType>(getResult().getType());
  if (a.getRank() != 2 || b.getRank() != 2 || d.getRank() != 2 ||
      !a.hasStaticShape() || !b.hasStaticShape() || !d.hasStaticShape())
    return emitOpError() << "expected static rank-2 operands and result, got "
                         << a << ", " << b << " -> " << d;
  if (!isWgmmaElementType(a.getElementType()) ||
      a.getElementType() != b.getElementType())
    return emitOpError() << "expected A and B to share an f16 or bf16 "
                            "element type, got "
                         << a << " and " << b;
  if (!d.getElementType().isF32())
    return emitOpError() << "expected an f32 accumulator, got " << d;
  if (getAcc() && getAcc().getType() != d)
    return emitOpError() << "expected the accumulator type " << getAcc().getType()
                         << " to equal the result type " << d;
  ArrayRef<int64_t> shape = getShape();
  if (shape.size() != 3 || shape[0] != kRowsPerWarpgroup || shape[2] != kInstrK)
    return emitOpError() << "expected shape [64, N, 16] (m64nNk16), got ["
                         << llvm::make_range(shape.begin(), shape.end()) << "]";
  int64_t m = a.getDimSize(0), k = a.getDimSize(1), n = d.getDimSize(1);
  int64_t bk = b.getDimSize(getTransposeB() ? 1 : 0);
  int64_t bn = b.getDimSize(getTransposeB() ? 0 : 1);
  if (m % kRowsPerWarpgroup != 0 || m == 0)
    return emitOpError() << "expected A's rows (" << m
                         << ") to be a positive multiple of 64, one warpgroup "
                            "each";
  if (k % kInstrK != 0 || k == 0)
    return emitOpError() << "expected the contraction size (" << k
                         << ") to be a positive multiple of 16";
  if (bk != k)
    return emitOpError() << "expected B's contraction size (" << bk
                         << ") to equal A's (" << k << ")";
  if (d.getDimSize(0) != m || bn != n)
    return emitOpError() << "expected the result to be [" << m << ", " << bn
                         << "], got " << d;
  if (shape[1] != n || n % 8 != 0 || n < 8 || n > 256)
    return emitOpError() << "expected the instruction N (" << shape[1]
                         << ") to equal the result's columns (" << n
                         << ") and be a multiple of 8 in [8, 256]";
  return success();
}

/// A scale known at compile time must be finite and positive (a kernel's
/// run-time scale is checked where it is passed).
static LogicalResult verifyConstantScale(Operation *op, Value scale) {
  APFloat c(0.0f);
  if (matchPattern(scale, m_ConstantFloat(&c)) &&
      !(std::isfinite(c.convertToDouble()) && c.convertToDouble() > 0.0))
    return op->emitOpError()
           << "expected a finite positive scale, got " << c.convertToDouble();
  return success();
}

/// The offsets of a softmax op split the columns into equal runs of whole
/// 8-key groups (fat.key_weights').
static LogicalResult verifyRunOffsets(Operation *op, Type scores,
                                      ValueRange offsets) {
  auto t = cast<ShapedType>(scores);
  if (offsets.empty() || !t.hasStaticShape())
    return success();
  int64_t cols = t.getDimSize(t.getRank() - 1);
  if (cols % (8 * int64_t(offsets.size())) != 0)
    return op->emitOpError()
           << "expected the offsets to split the " << cols
           << " columns into equal runs of whole 8-key groups, got "
           << offsets.size();
  return success();
}

LogicalResult SoftmaxMaxOp::verify() {
  if (failed(verifyTileAndRows(*this, "scores", getScores().getType(), "max",
                               getMax().getType())))
    return failure();
  if (failed(verifyConstantScale(*this, getScale())) ||
      failed(verifyRunOffsets(*this, getScores().getType(), getOffsets())))
    return failure();
  if (std::optional<APFloat> tau = getThreshold())
    if (!(tau->convertToDouble() >= 0.0 && tau->convertToDouble() <= 16.0))
      return emitOpError() << "expected the lazy threshold in [0, 16] (log2 "
                              "units; P stays below 2^threshold), got "
                           << tau->convertToDouble();
  return success();
}

LogicalResult SoftmaxExpOp::verify() {
  Type s = getScores().getType(), m = getMax().getType();
  if (failed(verifyTileAndRows(*this, "scores", s, "max", m)))
    return failure();
  if (getProbs().getType() != s)
    return emitOpError() << "expected probs to have the type of scores, " << s;
  if (failed(verifyConstantScale(*this, getScale())) ||
      failed(verifyRunOffsets(*this, s, getOffsets())))
    return failure();
  double phi = getExp2Poly().convertToDouble();
  if (!(phi >= 0.0 && phi <= 1.0))
    return emitOpError() << "expected exp2_poly to be a fraction in [0, 1], got "
                         << phi;
  bool hasSum = bool(getSum()), hasAlpha = bool(getAlpha()),
       hasNewSum = bool(getNewSum());
  if (hasSum != hasNewSum || (hasAlpha && !hasSum))
    return emitOpError() << "expected rowsum(sum[, alpha]) and the new_sum "
                            "result together, or none of them";
  // On fragments the sums may be the quad's shares of l (FatAttrs.td).
  auto isSumType = [&](Type t) {
    return t == m || (WgmmaFragmentAttr::isFragment(m) &&
                      t == WgmmaFragmentAttr::withPartial(
                               cast<RankedTensorType>(m), true));
  };
  if (hasSum && (!isSumType(getSum().getType()) ||
                 (hasAlpha && getAlpha().getType() != m) ||
                 getNewSum().getType() != getSum().getType()))
    return emitOpError() << "expected alpha to have the type of max, " << m
                         << ", and sum and new_sum that type or its "
                            "#fat.wgmma_fragment<partial> form";
  return success();
}

bool SoftmaxExpOp::usesPolynomial(int64_t k, double phi) {
  // The 1e-9 keeps fractions like 1/8 exact at multiples of 8 (as the GPU
  // kernel's choice, which must agree element for element).
  return std::floor((k + 1) * phi + 1e-9) > std::floor(k * phi + 1e-9);
}

/// A static rows × 16 tile of a wgmma operand type, with at most
/// `maxRows` rows where given (the key offsets r < 256 are exact in f16
/// and bf16).
static LogicalResult verifyBiasColumns(Operation *op, Type type,
                                       std::optional<int64_t> maxRows) {
  auto t = dyn_cast<RankedTensorType>(type);
  if (t && t.getRank() == 2 && t.hasStaticShape() &&
      t.getDimSize(1) == BiasKeyColumnsOp::kColumns && t.getDimSize(0) >= 1 &&
      t.getDimSize(0) <= maxRows.value_or(t.getDimSize(0)) &&
      isWgmmaElementType(t.getElementType()))
    return success();
  InFlightDiagnostic diag = op->emitOpError()
                            << "expected a static " << (maxRows ? "N" : "M")
                            << " x " << BiasKeyColumnsOp::kColumns
                            << " tile of f16 or bf16";
  if (maxRows)
    diag << " with 1 <= N <= " << *maxRows;
  return diag << ", got " << type;
}

LogicalResult mlir::fat::detail::verifyTermRegion(Operation *op, Block &body,
                                                  unsigned indices,
                                                  ValueRange captures,
                                                  StringRef names,
                                                  StringRef what) {
  Builder b(op->getContext());
  SmallVector<Type> expected(indices, b.getIndexType());
  llvm::append_range(expected, captures.getTypes());
  // In a kernel a captured tensor is its address.
  auto matches = [](Type arg, Type want) {
    auto tensor = dyn_cast<RankedTensorType>(arg);
    return arg == want || (isa<LLVM::LLVMPointerType>(want) && tensor &&
                           tensor.hasStaticShape());
  };
  if (body.getNumArguments() != expected.size() ||
      !llvm::all_of(
          llvm::zip_equal(body.getArgumentTypes(), expected),
          [&](auto p) { return matches(std::get<0>(p), std::get<1>(p)); })) {
    InFlightDiagnostic diag = op->emitOpError()
                              << "expected the region's arguments to be (";
    llvm::interleaveComma(expected, diag);
    return diag << ") — " << names << ", then the captures";
  }
  auto yield = dyn_cast<YieldOp>(body.getTerminator());
  if (!yield || !yield.getValue().getType().isF32())
    return op->emitOpError()
           << "expected the region to end in fat.yield of " << what << " (f32)";
  return success();
}

LogicalResult BiasKeyColumnsOp::verify() {
  return verifyBiasColumns(*this, getType(), /*maxRows=*/256);
}

LogicalResult BiasQueryColumnsOp::verify() {
  if (failed(verifyBiasColumns(*this, getType(), std::nullopt)))
    return failure();
  if (failed(verifyConstantScale(*this, getScale())))
    return failure();
  return verifyTermRegion(*this, getBody().front(), 2, getCaptures(), "b, h",
                          "the bias factor G");
}

LogicalResult KeyWeightsOp::verify() {
  // The tensorized loop's N weights, or in the kernel a warpgroup's P-shaped
  // fragment of them (every row the same N).
  auto t = dyn_cast<RankedTensorType>(getWeights().getType());
  bool fragment = t && WgmmaFragmentAttr::isFragment(t) && t.getRank() == 2 &&
                  t.getDimSize(0) == WgmmaOp::kRowsPerWarpgroup;
  if (!t || !(t.getRank() == 1 || fragment) || !t.hasStaticShape() ||
      !t.getElementType().isBF16())
    return emitOpError() << "expected a static 1-D bf16 vector of per-key "
                            "weights (f16 overflows with them) or a "
                            "warpgroup's 64 x N #fat.wgmma_fragment of them, "
                            "got "
                         << getWeights().getType();
  // Runs of whole 8-key groups (a thread's registers hold 8-key groups).
  size_t runs = getOffsets().size();
  if (runs == 0 || t.getDimSize(t.getRank() - 1) % (8 * runs) != 0)
    return emitOpError() << "expected one offset per run of keys, the runs "
                            "equal and of whole 8-key groups; got "
                         << runs << " for " << t.getDimSize(t.getRank() - 1)
                         << " keys";
  if (failed(verifyConstantScale(*this, getScale())))
    return failure();
  return verifyTermRegion(*this, getBody().front(), 2, getCaptures(), "b, h",
                          "the bias factor G");
}

bool ScoreBandOp::readsPositionsAsDifference(Block &body) {
  return readsPositionsAsDifference(body.getArgument(2), body.getArgument(3));
}

bool ScoreBandOp::readsPositionsAsDifference(Value i, Value j) {
  auto difference = [&](Operation *user) {
    auto sub = dyn_cast<arith::SubIOp>(user);
    return sub && ((sub.getLhs() == j && sub.getRhs() == i) ||
                   (sub.getLhs() == i && sub.getRhs() == j));
  };
  return llvm::all_of(i.getUsers(), difference) &&
         llvm::all_of(j.getUsers(), difference);
}

LogicalResult ScoreBandOp::verify() {
  auto t = dyn_cast<RankedTensorType>(getType());
  if (!t || t.getRank() != 2 || !t.hasStaticShape() ||
      !t.getElementType().isF32())
    return emitOpError() << "expected a static 2-D f32 tile, got " << getType();
  if (failed(verifyConstantScale(*this, getScale())))
    return failure();
  Block &body = getBody().front();
  if (failed(verifyTermRegion(*this, body, 4, getCaptures(), "b, h, i, j",
                              "the term T")))
    return failure();
  if (!readsPositionsAsDifference(body))
    return emitOpError() << "expected the region to read the row and key "
                            "only through arith.subi of one from the other "
                            "(a term of j − i)";
  return success();
}
