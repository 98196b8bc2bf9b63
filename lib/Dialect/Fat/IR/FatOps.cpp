//===- FatOps.cpp - fat.attention: verifier and interfaces ----------------===//
//
// The verifier is the user's first line of defence: every malformed
// fat.attention gets one message that names the rule and the values, at the
// op's location, so that no later pass ever sees an op it cannot lower.
//
//===----------------------------------------------------------------------===//

#include "fa-t/Dialect/Fat/IR/FatOps.h"
#include "TileVerifiers.h"

#include "mlir/Dialect/LLVMIR/LLVMTypes.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::fat;

#include "fa-t/Dialect/Fat/IR/FatEnums.cpp.inc"

using mlir::fat::detail::parseRowSum;
using mlir::fat::detail::printRowSum;
using mlir::fat::detail::parseRowSumType;
using mlir::fat::detail::printRowSumType;

#define GET_OP_CLASSES
#include "fa-t/Dialect/Fat/IR/FatOps.cpp.inc"

//===----------------------------------------------------------------------===//
// AttentionOp helpers
//===----------------------------------------------------------------------===//

/// BHSD is the identity; BSHD stores the sequence before the heads.
unsigned AttentionOp::physicalDim(Layout layout, unsigned logicalDim) {
  if (layout == Layout::BSHD && (logicalDim == kHeadDim || logicalDim == kSeqDim))
    return logicalDim == kHeadDim ? kSeqDim : kHeadDim;
  return logicalDim;
}

double AttentionOp::getEffectiveScale() {
  if (std::optional<APFloat> s = getScale())
    return s->convertToDouble();
  auto qType = cast<ShapedType>(getQuery().getType());
  return 1.0 / std::sqrt(double(qType.getDimSize(getPhysicalDim(kFeatureDim))));
}

int64_t AttentionOp::getGroupSize() {
  auto qType = cast<ShapedType>(getQuery().getType());
  auto kType = cast<ShapedType>(getKey().getType());
  unsigned h = getPhysicalDim(kHeadDim);
  return qType.getDimSize(h) / kType.getDimSize(h);
}

MutableOperandRange AttentionOp::getDpsInitsMutable() {
  // `outs` and `lse` are adjacent operand segments (#3 and #4).
  auto [outStart, outLen] = getODSOperandIndexAndLength(3);
  auto [lseStart, lseLen] = getODSOperandIndexAndLength(4);
  (void)lseStart;
  return MutableOperandRange(getOperation(), outStart, outLen + lseLen);
}

void AttentionOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  // The tensor form is pure; the memref form reads Q, K, V and writes the
  // inits (fully: every element of O and LSE is overwritten).
  if (!hasPureBufferSemantics())
    return;
  for (OpOperand *in : getDpsInputOperands())
    if (isa<MemRefType>(in->get().getType()))
      effects.emplace_back(MemoryEffects::Read::get(), in, /*stage=*/0,
                           /*effectOnFullRegion=*/true,
                           SideEffects::DefaultResource::get());
  for (OpOperand &init : getDpsInitsMutable())
    effects.emplace_back(MemoryEffects::Write::get(), &init, /*stage=*/0,
                         /*effectOnFullRegion=*/true,
                         SideEffects::DefaultResource::get());
}

//===----------------------------------------------------------------------===//
// AttentionOp verifier
//===----------------------------------------------------------------------===//

namespace {
/// Reads the logical dims of one four-dimensional operand for diagnostics.
struct Operand4D {
  StringRef name;
  ShapedType type;
  Layout layout;

  int64_t dim(unsigned logical) const {
    return type.getDimSize(AttentionOp::physicalDim(layout, logical));
  }
};

/// Printable form of a possibly dynamic size.
std::string sizeStr(int64_t s) {
  return ShapedType::isDynamic(s) ? std::string("?") : std::to_string(s);
}

constexpr const char *kDimNames[] = {"batch size B", "head count",
                                     "sequence length", "head dim"};
} // namespace

/// Emits an error unless `a` and `b` agree where both are static.
static LogicalResult verifySameSize(AttentionOp op, const Operand4D &a,
                                    unsigned aDim, const Operand4D &b,
                                    unsigned bDim, StringRef what) {
  int64_t x = a.dim(aDim), y = b.dim(bDim);
  if (ShapedType::isDynamic(x) || ShapedType::isDynamic(y) || x == y)
    return success();
  return op.emitOpError() << "expected " << b.name << " " << what << " ("
                          << y << ") to match " << a.name << "'s (" << x
                          << ")";
}

std::optional<int64_t> mlir::fat::maskRightEdge(bool causal,
                                                 int64_t windowRight) {
  if (causal)
    return 0;
  if (windowRight >= 0)
    return windowRight;
  return std::nullopt;
}

bool mlir::fat::isSupportedElementType(Type t) {
  return t.isF16() || t.isBF16() || t.isF32();
}

/// Whether the static sizes of `t` span fewer than 2^63 bytes. Every
/// lowering addresses operands with 64-bit strides and byte offsets (memref
/// descriptors, GEPs, TMA strides): a type beyond that is no buffer that
/// can exist, and its strides would wrap (negative offsets). Dynamic sizes
/// are the caller's: a real buffer always fits.
static bool staticSizesFit(ShapedType t) {
  int64_t bytes = std::max<int64_t>(t.getElementTypeBitWidth() / 8, 1);
  for (int64_t d : t.getShape()) {
    if (ShapedType::isDynamic(d))
      continue;
    if (llvm::MulOverflow(bytes, d, bytes))
      return false;
  }
  return true;
}

LogicalResult AttentionOp::verify() {
  Layout layout = getLayout();
  StringRef layoutName = stringifyLayout(layout);
  SmallVector<std::pair<StringRef, Value>> operands = {
      {"query", getQuery()}, {"key", getKey()}, {"value", getValue()},
      {"output", getOutput()}};

  // Kind: all ranked tensors, or all memrefs.
  bool isTensor = isa<RankedTensorType>(getQuery().getType());
  SmallVector<std::pair<StringRef, Value>> all(operands);
  if (getLse())
    all.push_back({"lse", getLse()});
  for (auto [name, v] : all) {
    Type t = v.getType();
    if (!isa<RankedTensorType, MemRefType>(t))
      return emitOpError() << "expected " << name
                           << " to be a ranked tensor or a memref, got " << t;
    if (isa<RankedTensorType>(t) != isTensor)
      return emitOpError() << "expected " << name << " to be a "
                           << (isTensor ? "tensor" : "memref") << " like query ("
                           << getQuery().getType() << "), got " << t;
    // Both lowerings address a memref through strides (subviews on the CPU
    // path, tensor maps and pointer strides on the GPU).
    if (auto m = dyn_cast<MemRefType>(t); m && !m.isStrided())
      return emitOpError() << "expected " << name
                           << " to have a strided layout (identity or "
                              "strided<...>), got "
                           << t;
  }

  // Rank and element types.
  SmallVector<Operand4D> ops4;
  for (auto [name, v] : operands) {
    auto t = cast<ShapedType>(v.getType());
    if (t.getRank() != 4)
      return emitOpError() << "expected " << name << " to have rank 4 (["
                           << (layout == Layout::BHSD ? "B, H, S, D"
                                                      : "B, S, H, D")
                           << "] under layout " << layoutName << "), got rank "
                           << t.getRank();
    if (!isSupportedElementType(t.getElementType()))
      return emitOpError() << "expected " << name
                           << " element type to be f16, bf16 or f32, got "
                           << t.getElementType();
    ops4.push_back({name, t, layout});
  }
  for (const Operand4D &x : ops4)
    if (!staticSizesFit(x.type))
      return emitOpError() << "expected " << x.name
                           << " to span fewer than 2^63 bytes (64-bit "
                              "offsets), got "
                           << x.type;
  const Operand4D &q = ops4[0], &k = ops4[1], &v = ops4[2], &o = ops4[3];
  Type elt = q.type.getElementType();
  for (const Operand4D &x : ArrayRef(ops4).drop_front())
    if (x.type.getElementType() != elt)
      return emitOpError() << "expected " << x.name << " element type ("
                           << x.type.getElementType() << ") to match query's ("
                           << elt << ")";

  // Heads and head dims are static: they fix the tile shapes and the GQA map.
  for (const Operand4D &x : ops4)
    for (unsigned d : {kHeadDim, kFeatureDim})
      if (ShapedType::isDynamic(x.dim(d)))
        return emitOpError()
               << "expected " << x.name << " " << kDimNames[d]
               << " (dim " << physicalDim(layout, d) << " under layout "
               << layoutName << ") to be static";
  for (const Operand4D &x : ops4)
    for (unsigned d : {kHeadDim, kFeatureDim})
      if (x.dim(d) == 0)
        return emitOpError() << "expected " << x.name << " " << kDimNames[d]
                             << " to be positive";

  // Agreement between operands (where both sizes are static).
  if (failed(verifySameSize(*this, q, kBatchDim, k, kBatchDim, "batch size B")) ||
      failed(verifySameSize(*this, q, kBatchDim, v, kBatchDim, "batch size B")) ||
      failed(verifySameSize(*this, q, kBatchDim, o, kBatchDim, "batch size B")) ||
      failed(verifySameSize(*this, q, kFeatureDim, k, kFeatureDim, "head dim D")) ||
      failed(verifySameSize(*this, k, kHeadDim, v, kHeadDim, "head count Hkv")) ||
      failed(verifySameSize(*this, k, kSeqDim, v, kSeqDim, "sequence length Skv")) ||
      failed(verifySameSize(*this, q, kHeadDim, o, kHeadDim, "head count Hq")) ||
      failed(verifySameSize(*this, q, kSeqDim, o, kSeqDim, "sequence length Sq")) ||
      failed(verifySameSize(*this, v, kFeatureDim, o, kFeatureDim, "head dim Dv")))
    return failure();

  int64_t hq = q.dim(kHeadDim), hkv = k.dim(kHeadDim);
  if (hq % hkv != 0)
    return emitOpError() << "expected Hq (" << hq
                         << ") to be a multiple of Hkv (" << hkv
                         << ") (heads are dim " << physicalDim(layout, kHeadDim)
                         << " under layout " << layoutName << ")";

  // LSE: [B, Hq, Sq] in f32, always in logical order.
  if (Value lse = getLse()) {
    auto t = cast<ShapedType>(lse.getType());
    if (!t.getElementType().isF32())
      return emitOpError() << "expected lse element type to be f32, got "
                           << t.getElementType();
    if (t.getRank() != 3)
      return emitOpError() << "expected lse to have rank 3 ([B, Hq, Sq]), got rank "
                           << t.getRank();
    if (!staticSizesFit(t))
      return emitOpError() << "expected lse to span fewer than 2^63 bytes "
                              "(64-bit offsets), got "
                           << t;
    int64_t want[3] = {q.dim(kBatchDim), hq, q.dim(kSeqDim)};
    for (unsigned i = 0; i < 3; ++i) {
      int64_t got = t.getDimSize(i);
      if (!ShapedType::isDynamic(want[i]) && !ShapedType::isDynamic(got) &&
          got != want[i])
        return emitOpError()
               << "expected lse shape [B, Hq, Sq] = [" << sizeStr(want[0])
               << ", " << want[1] << ", " << sizeStr(want[2]) << "], got "
               << t;
    }
  }

  // Attributes.
  if (std::optional<APFloat> s = getScale()) {
    double x = s->convertToDouble();
    if (!(x > 0.0) || !std::isfinite(x))
      return emitOpError() << "expected scale to be positive and finite, got "
                           << x;
  }
  if (std::optional<ArrayRef<int64_t>> w = getWindow()) {
    if (w->size() != 2)
      return emitOpError() << "expected window to have 2 entries [left, right], got "
                           << w->size();
    for (int64_t b : *w)
      if (b < -1)
        return emitOpError() << "expected window bounds to be >= 0, or -1 for "
                                "unbounded, got ["
                             << (*w)[0] << ", " << (*w)[1] << "]";
    // Positions are i32 in the kernels (as in FlashAttention's API), and the
    // lowerings add 1 to a bound: a wider window is spelled -1.
    for (int64_t b : *w)
      if (b > std::numeric_limits<int32_t>::max())
        return emitOpError() << "expected window bounds to be at most "
                             << std::numeric_limits<int32_t>::max()
                             << " (a window no sequence fills is -1, "
                                "unbounded), got ["
                             << (*w)[0] << ", " << (*w)[1] << "]";
  }
  if (getDiagonal() && !hasMask())
    return emitOpError()
           << "has a diagonal operand but no mask: 'diagonal' only positions "
              "a 'causal' or 'window' mask";

  // Results: one per init in the tensor form, none in the memref form.
  if (!isTensor) {
    if (getNumResults() != 0)
      return emitOpError() << "expected no results in the memref form, got "
                           << getNumResults();
  } else {
    if (getNumResults() != getNumDpsInits())
      return emitOpError() << "expected " << getNumDpsInits()
                           << " results (one per outs/lse operand), got "
                           << getNumResults();
    for (auto [i, res, init] :
         llvm::enumerate(getResults(), getDpsInits()))
      if (res.getType() != init.getType())
        return emitOpError() << "expected result #" << i << " type ("
                             << res.getType() << ") to match its init ("
                             << init.getType() << ")";
  }

  // Score and mask modifications.
  if (!getOffsets().empty() && getOffsets().size() != 3)
    return emitOpError() << "expected offsets (b0, h0, i0), got "
                         << getOffsets().size() << " values";
  for (auto [i, c] : llvm::enumerate(getCaptures())) {
    Type t = c.getType();
    bool scalar = t.isIntOrIndexOrFloat();
    bool sameForm = isTensor ? isa<RankedTensorType>(t) : isa<MemRefType>(t);
    if (!scalar && !sameForm)
      return emitOpError() << "expected capture #" << i << " to be a scalar or a "
                           << (isTensor ? "ranked tensor" : "memref")
                           << " (the op's form), got " << t;
  }
  if (!getCaptures().empty() && !hasModifications())
    return emitOpError() << "expected a score or mask region to read the "
                            "captures";
  // The regions see the captures in the tensor form (the memref form is
  // rewritten to it before tiling).
  SmallVector<Type> captureTypes;
  for (Value c : getCaptures()) {
    Type t = c.getType();
    if (auto m = dyn_cast<MemRefType>(t))
      t = RankedTensorType::get(m.getShape(), m.getElementType());
    captureTypes.push_back(t);
  }
  if (failed(detail::verifyKeyRanges(*this, getKvRanges(), captureTypes)))
    return failure();
  // Every (batch, 64-row group) of the op reads its row of the table; an op
  // with offsets is a tile of a larger problem whose table it indexes.
  if (std::optional<uint64_t> ranges = getKvRanges(); ranges && getOffsets().empty()) {
    auto table = cast<RankedTensorType>(captureTypes[*ranges]);
    auto q = cast<ShapedType>(getQuery().getType());
    int64_t batch = q.getDimSize(getPhysicalDim(kBatchDim));
    int64_t rows = q.getDimSize(getPhysicalDim(kSeqDim));
    int64_t groups = ShapedType::isDynamic(rows) ? rows : (rows + 63) / 64;
    for (auto [dim, need, what] :
         {std::tuple<int64_t, int64_t, StringRef>{0, batch, "batch entries"},
          {1, groups, "groups of 64 query rows"}})
      if (!ShapedType::isDynamic(need) && table.getDimSize(dim) != need)
        return emitOpError()
               << "expected the kv_ranges capture's dimension " << dim
               << " to be the " << need << " " << what << ", got "
               << table;
  }
  if (getKvRanges() && getMask().empty())
    return emitOpError() << "expected a mask region with kv_ranges (the "
                            "key ranges are conjoined with it)";
  if (failed(detail::verifyModRegion(*this, getScore(), /*isScore=*/true,
                                     captureTypes, /*optional=*/true)) ||
      failed(detail::verifyModRegion(*this, getMask(), /*isScore=*/false,
                                     captureTypes, /*optional=*/true)))
    return failure();
  return success();
}
