//===- FatTileOps.cpp - verifiers of the tile-level primitives ------------===//
//
// Tiles are M × N (scores, probabilities), M × D / N × D (Q, K), N × Dv (V),
// M × Dv (output accumulator) and M (row vectors: max, sum, α), all f32 but
// the loaded Q/K/V tiles and the finalized output.
//
//===----------------------------------------------------------------------===//

#include "TileVerifiers.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMTypes.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/TypeUtilities.h"

#include <functional>

using namespace mlir;
using namespace mlir::fat;
using namespace mlir::fat::detail;

LogicalResult QKOp::verify() {
  Type q = getQuery().getType(), k = getKey().getType(), s = getScores().getType();
  if (failed(verifyTile(*this, "query", q, 2, false)) ||
      failed(verifyTile(*this, "key", k, 2, false)) ||
      failed(verifyTile(*this, "scores", s, 2)))
    return failure();
  if (getElementTypeOrSelf(q) != getElementTypeOrSelf(k))
    return emitOpError() << "expected query and key element types to match, got "
                         << q << " and " << k;
  return failure(failed(verifyDimsMatch(*this, "query", q, 1, "key", k, 1)) ||
                 failed(verifyDimsMatch(*this, "query", q, 0, "scores", s, 0)) ||
                 failed(verifyDimsMatch(*this, "key", k, 0, "scores", s, 1)));
}

LogicalResult MaskOp::verify() {
  if (failed(verifyTile(*this, "scores", getScores().getType(), 2)))
    return failure();
  if (std::optional<ArrayRef<int64_t>> w = getWindow())
    if (w->size() != 2 || (*w)[0] < -1 || (*w)[1] < -1)
      return emitOpError()
             << "expected window to be [left, right] with each >= -1";
  return success();
}

LogicalResult RowMaxOp::verify() {
  return verifyTileAndRows(*this, "scores", getScores().getType(), "init",
                           getInit().getType());
}

LogicalResult Exp2Op::verify() {
  Type in = getInput().getType();
  auto t = dyn_cast<RankedTensorType>(in);
  if (failed(verifyTile(*this, "input", in, t ? t.getRank() : 2)) ||
      (t.getRank() != 1 && t.getRank() != 2))
    return emitOpError() << "expected input to be an f32 tile or row vector";
  if (failed(verifyTile(*this, "max", getMax().getType(), 1)))
    return failure();
  return verifyDimsMatch(*this, "input", in, 0, "max", getMax().getType(), 0);
}

LogicalResult RowSumOp::verify() {
  return verifyTileAndRows(*this, "input", getInput().getType(), "init",
                           getInit().getType());
}

LogicalResult RescaleOp::verify() {
  Type in = getInput().getType();
  auto t = dyn_cast<RankedTensorType>(in);
  if (!t || !t.getElementType().isF32() || (t.getRank() != 1 && t.getRank() != 2))
    return emitOpError() << "expected input to be an f32 tile or row vector, got "
                         << in;
  if (failed(verifyTile(*this, "factor", getFactor().getType(), 1)) ||
      failed(verifySameEncoding(*this, "input", in, "factor",
                                getFactor().getType())))
    return failure();
  return verifyDimsMatch(*this, "input", in, 0, "factor",
                         getFactor().getType(), 0);
}

LogicalResult PVOp::verify() {
  Type p = getProbs().getType(), v = getValue().getType(), o = getInit().getType();
  if (failed(verifyTile(*this, "probs", p, 2)) ||
      failed(verifyTile(*this, "value", v, 2, false)) ||
      failed(verifyTile(*this, "init", o, 2)))
    return failure();
  return failure(failed(verifyDimsMatch(*this, "probs", p, 1, "value", v, 0)) ||
                 failed(verifyDimsMatch(*this, "probs", p, 0, "init", o, 0)) ||
                 failed(verifyDimsMatch(*this, "value", v, 1, "init", o, 1)));
}

LogicalResult FinalizeOp::verify() {
  Type acc = getAcc().getType(), out = getOutput().getType();
  // A fragment's sum may be the quad's shares (FatAttrs.td).
  Type sum = getSum() ? getSum().getType() : Type();
  if (sum && WgmmaFragmentAttr::isPartial(sum))
    sum = WgmmaFragmentAttr::withPartial(cast<RankedTensorType>(sum), false);
  if ((sum && failed(verifyTileAndRows(*this, "acc", acc, "sum", sum))) ||
      failed(verifyTileAndRows(*this, "acc", acc, "max", getMax().getType())) ||
      failed(verifyTile(*this, "output", out, 2, false)) ||
      failed(verifyTileAndRows(*this, "acc", acc, "lse", getLse().getType())) ||
      failed(verifySameEncoding(*this, "acc", acc, "output", out)))
    return failure();
  if (bool(getScaleAttr()) == bool(getExp2Scale()))
    return emitOpError() << "expected either a constant scale or a run-time "
                            "exp2_scale";
  // With the sum, O is acc; without it acc also holds the ones columns.
  ArrayRef<int64_t> accShape = cast<ShapedType>(acc).getShape(),
                    outShape = cast<ShapedType>(out).getShape();
  if (getSum() ? accShape != outShape
               : (accShape[0] != outShape[0] || ShapedType::isDynamic(accShape[1]) ||
                  ShapedType::isDynamic(outShape[1]) || accShape[1] <= outShape[1]))
    return emitOpError() << "expected output shape to match acc"
                         << (getSum() ? "" : " but for acc's ones columns")
                         << ", got " << out << " and " << acc;
  return success();
}

ParseResult mlir::fat::detail::parseRowSum(
    OpAsmParser &parser, std::optional<OpAsmParser::UnresolvedOperand> &sum) {
  if (succeeded(parser.parseOptionalKeyword("ones_columns")))
    return success();
  OpAsmParser::UnresolvedOperand operand;
  if (parser.parseOperand(operand))
    return failure();
  sum = operand;
  return success();
}

ParseResult mlir::fat::detail::parseRowSumType(
    OpAsmParser &parser, Type &accType,
    const std::optional<OpAsmParser::UnresolvedOperand> &sum, Type &type) {
  if (parser.parseType(accType))
    return failure();
  if (!sum)
    return success();
  return failure(parser.parseComma() || parser.parseType(type));
}

void mlir::fat::detail::printRowSumType(OpAsmPrinter &printer, Operation *,
                                        Type accType, Value sum, Type type) {
  printer << accType;
  if (sum)
    printer << ", " << type;
}

void mlir::fat::detail::printRowSum(OpAsmPrinter &printer, Operation *,
                                    Value sum) {
  if (sum)
    printer << sum;
  else
    printer << "ones_columns";
}

LogicalResult mlir::fat::detail::verifyModRegion(Operation *op, Region &region,
                                                 bool isScore,
                                                 TypeRange captureTypes,
                                                 bool optional) {
  StringRef what = isScore ? "score" : "mask";
  if (region.empty()) {
    if (optional)
      return success();
    return op->emitOpError() << "expected a " << what << " region";
  }
  if (!region.hasOneBlock())
    return op->emitOpError() << "expected the " << what
                             << " region to have one block";
  Block &block = region.front();
  Builder b(op->getContext());
  SmallVector<Type> expected;
  if (isScore)
    expected.push_back(b.getF32Type());
  expected.append(4, b.getIndexType());
  llvm::append_range(expected, captureTypes);
  // In a kernel a captured tensor is its address: an `!llvm.ptr` capture
  // stands for a statically shaped tensor argument, read row-major.
  auto matches = [&](Type arg, Type want) {
    if (arg == want)
      return true;
    auto tensor = dyn_cast<RankedTensorType>(arg);
    return isa<LLVM::LLVMPointerType>(want) && tensor &&
           tensor.hasStaticShape();
  };
  if (block.getNumArguments() != expected.size() ||
      !llvm::all_of(llvm::zip_equal(block.getArgumentTypes(), expected),
                    [&](auto pair) {
                      return matches(std::get<0>(pair), std::get<1>(pair));
                    })) {
    InFlightDiagnostic diag = op->emitOpError()
                              << "expected the " << what
                              << " region's arguments to be (";
    llvm::interleaveComma(expected, diag);
    diag << ") — " << (isScore ? "the scaled score, " : "")
         << "b, h, i, j, then the captures — got (";
    llvm::interleaveComma(block.getArgumentTypes(), diag);
    return diag << ")";
  }
  auto yield = dyn_cast<YieldOp>(block.getTerminator());
  Type want = isScore ? Type(b.getF32Type()) : Type(b.getI1Type());
  if (!yield || yield.getValue().getType() != want)
    return op->emitOpError() << "expected the " << what
                             << " region to end in fat.yield of " << want;
  WalkResult outside = region.walk([&](Operation *inner) {
    for (Value v : inner->getOperands())
      if (!region.isAncestor(v.getParentRegion())) {
        inner->emitOpError() << "uses a value defined outside the " << what
                             << " region: pass it in captures(...)";
        return WalkResult::interrupt();
      }
    return WalkResult::advance();
  });
  return failure(outside.wasInterrupted());
}

LogicalResult ScoreModOp::verify() {
  if (failed(verifyTile(*this, "scores", getScores().getType(), 2)) ||
      failed(verifyModRegion(*this, getBody(), /*isScore=*/true,
                             getCaptures().getTypes(), /*optional=*/false)))
    return failure();
  if (getTanhPoly() && getTanhArgumentSlice().empty())
    return emitOpError() << "tanh_poly expects every f32 tanh of the body to "
                            "take a constant multiple of the score, k·s "
                            "(multiplies and divides by constants, "
                            "negations)";
  return success();
}

SmallVector<Operation *> ScoreModOp::getTanhArgumentSlice() {
  Block &body = getBody().front();
  llvm::SmallPtrSet<Operation *, 8> slice;
  bool fromScore = true, any = false;
  std::function<void(Value)> visit = [&](Value v) {
    if (v == body.getArgument(0))
      return;
    Operation *def = v.getDefiningOp();
    if (def && matchPattern(v, m_Constant()) && def->getBlock() == &body) {
      slice.insert(def);
      return;
    }
    // x = k·s: a multiply or divide by a constant, a negation.
    auto isScaling = [](Operation *op) {
      if (isa_and_present<arith::NegFOp>(op))
        return true;
      if (!isa_and_present<arith::MulFOp, arith::DivFOp>(op))
        return false;
      return matchPattern(op->getOperand(1), m_Constant()) ||
             (isa<arith::MulFOp>(op) &&
              matchPattern(op->getOperand(0), m_Constant()));
    };
    if (!isScaling(def) || def->getBlock() != &body) {
      fromScore = false;
      return;
    }
    if (slice.insert(def).second)
      for (Value operand : def->getOperands())
        visit(operand);
  };
  getBody().walk([&](math::TanhOp tanh) {
    if (!tanh.getType().isF32() || tanh->getBlock() != &body) {
      fromScore = false;
      return;
    }
    any = true;
    slice.insert(tanh);
    visit(tanh.getOperand());
  });
  SmallVector<Operation *> ordered;
  if (!any || !fromScore)
    return ordered;
  for (Operation &inner : body.without_terminator())
    if (slice.contains(&inner))
      ordered.push_back(&inner);
  return ordered;
}

LogicalResult mlir::fat::detail::verifyKeyRanges(Operation *op,
                                                 std::optional<uint64_t> ranges,
                                                 TypeRange captureTypes) {
  if (!ranges)
    return success();
  if (*ranges >= captureTypes.size())
    return op->emitOpError() << "expected kv_ranges (" << *ranges
                             << ") to name one of the " << captureTypes.size()
                             << " captures";
  auto table = dyn_cast<RankedTensorType>(captureTypes[*ranges]);
  if (!table || table.getRank() != 3 ||
      (table.getDimSize(2) != 2 && table.getDimSize(2) != 4 &&
       table.getDimSize(2) != 6) ||
      !table.getElementType().isInteger(32))
    return op->emitOpError()
           << "expected the kv_ranges capture to be a tensor<B x G x C x i32> "
              "with C = 2, 4 or 6 (per batch and 64 query rows: [first key, "
              "end key), then [first, end) of keys the mask is promised to "
              "keep, then [first, end) of keys promised hidden from every "
              "row), got "
           << captureTypes[*ranges];
  return success();
}

LogicalResult MaskModOp::verify() {
  if (failed(verifyTile(*this, "scores", getScores().getType(), 2)) ||
      failed(verifyModRegion(*this, getBody(), /*isScore=*/false,
                             getCaptures().getTypes(), /*optional=*/false)))
    return failure();
  // The region's arguments say what the captures are (in a kernel an
  // !llvm.ptr operand stands for the tensor).
  Block &body = getBody().front();
  return verifyKeyRanges(
      *this, getKvRanges(),
      TypeRange(body.getArgumentTypes()).take_back(getCaptures().size()));
}
