//===- AttentionTilingInterface.cpp - TilingInterface for fat.attention ---===//
//
// The iteration domain of fat.attention is the parallel space (B, Hq, Sq):
// every (batch, query head, query row) produces one output row and one LSE
// value independently. The KV sequence is a reduction that the online
// softmax performs inside a tile (see --fat-tile), not a tiled loop here.
//
// A tile [b0, b0+nb) × [h0, h0+nh) × [s0, s0+ns) reads
//   Q[b0:nb, h0:nh, s0:ns, :]       K, V[b0:nb, h0/g : nh/g, :, :]
// with g = Hq / Hkv query heads per KV head, and keeps its mask in place by
// moving the diagonal: a query row s0 + i of the full op is row i of the
// tile, so δ_tile = δ + s0.
//
//===----------------------------------------------------------------------===//

#include "fa-t/Dialect/Fat/IR/FatOps.h"
#include "mlir/IR/IRMapping.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

using namespace mlir;
using namespace mlir::fat;

/// Size of logical dimension `logical` of a four-dimensional operand.
static OpFoldResult logicalSize(OpBuilder &b, Location loc, AttentionOp op,
                                Value v, unsigned logical) {
  unsigned d = op.getPhysicalDim(logical);
  if (isa<MemRefType>(v.getType()))
    return memref::getMixedSize(b, loc, v, d);
  return tensor::getMixedSize(b, loc, v, d);
}

/// Extracts the slice at logical offsets/sizes (B, H, S, D order; unit
/// strides) of a four-dimensional operand, permuted to the op's layout.
static Value sliceLogical(OpBuilder &b, Location loc, AttentionOp op, Value v,
                          ArrayRef<OpFoldResult> offsets,
                          ArrayRef<OpFoldResult> sizes) {
  SmallVector<OpFoldResult> offs(offsets.size()), szs(sizes.size());
  for (unsigned l = 0; l < offsets.size(); ++l) {
    unsigned p = offsets.size() == 4 ? op.getPhysicalDim(l) : l;
    offs[p] = offsets[l];
    szs[p] = sizes[l];
  }
  SmallVector<OpFoldResult> strides(offsets.size(), b.getIndexAttr(1));
  if (isa<MemRefType>(v.getType()))
    return memref::SubViewOp::create(b, loc, v, offs, szs, strides);
  return tensor::ExtractSliceOp::create(b, loc, v, offs, szs, strides);
}

SmallVector<utils::IteratorType> AttentionOp::getLoopIteratorTypes() {
  return SmallVector<utils::IteratorType>(3, utils::IteratorType::parallel);
}

SmallVector<Range> AttentionOp::getIterationDomain(OpBuilder &b) {
  Location loc = getLoc();
  OpFoldResult zero = b.getIndexAttr(0), one = b.getIndexAttr(1);
  SmallVector<Range> domain;
  for (unsigned l : {kBatchDim, kHeadDim, kSeqDim})
    domain.push_back({zero, logicalSize(b, loc, *this, getQuery(), l), one});
  return domain;
}

/// The KV-head slice [offset, size) read by the query-head tile
/// [hOffset, hOffset + hSize), or failure when that tile does not map onto
/// whole KV heads (a tile that straddles a GQA group boundary).
static FailureOr<std::pair<OpFoldResult, OpFoldResult>>
kvHeadSlice(OpBuilder &b, Location loc, int64_t group, OpFoldResult hOffset,
            OpFoldResult hSize) {
  if (group == 1)
    return std::make_pair(hOffset, hSize);
  std::optional<int64_t> size = getConstantIntValue(hSize);
  if (!size)
    return failure();
  AffineExpr h = b.getAffineDimExpr(0);
  OpFoldResult kvOffset =
      affine::makeComposedFoldedAffineApply(b, loc, h.floorDiv(group), {hOffset});
  // A tile of whole groups reads nh/g KV heads; a tile inside one group (the
  // tiler's offsets are multiples of the tile size) reads one.
  if (*size % group == 0)
    return std::make_pair(kvOffset, OpFoldResult(b.getIndexAttr(*size / group)));
  if (group % *size == 0)
    return std::make_pair(kvOffset, OpFoldResult(b.getIndexAttr(1)));
  return failure();
}

FailureOr<TilingResult>
AttentionOp::getTiledImplementation(OpBuilder &b, ArrayRef<OpFoldResult> offsets,
                                    ArrayRef<OpFoldResult> sizes) {
  Location loc = getLoc();
  OpFoldResult zero = b.getIndexAttr(0);
  OpFoldResult bOff = offsets[0], hOff = offsets[1], sOff = offsets[2];
  OpFoldResult bSz = sizes[0], hSz = sizes[1], sSz = sizes[2];

  FailureOr<std::pair<OpFoldResult, OpFoldResult>> kvHeads =
      kvHeadSlice(b, loc, getGroupSize(), hOff, hSz);
  if (failed(kvHeads))
    return emitOpError() << "cannot tile the query heads by "
                         << (getConstantIntValue(hSz) ? std::to_string(*getConstantIntValue(hSz)) : "a dynamic size")
                         << ": a tile must cover whole groups of "
                         << getGroupSize()
                         << " query heads per KV head, or lie inside one";

  OpFoldResult d = logicalSize(b, loc, *this, getQuery(), kFeatureDim);
  OpFoldResult dv = logicalSize(b, loc, *this, getValue(), kFeatureDim);
  OpFoldResult skv = logicalSize(b, loc, *this, getKey(), kSeqDim);
  // K and V are sliced whole along Skv, at offset 0: no valid slice when Skv
  // is statically 0 (--fat-tile rewrites that op to O = 0, LSE = −inf).
  if (isConstantIntValue(skv, 0))
    return emitOpError() << "cannot tile with no keys (Skv = 0): every row "
                            "yields O = 0 and LSE = -inf without a KV loop";

  SmallVector<Operation *> slices;
  auto slice = [&](Value v, ArrayRef<OpFoldResult> o,
                   ArrayRef<OpFoldResult> s) {
    Value r = sliceLogical(b, loc, *this, v, o, s);
    slices.push_back(r.getDefiningOp());
    return r;
  };
  Value q = slice(getQuery(), {bOff, hOff, sOff, zero}, {bSz, hSz, sSz, d});
  Value k = slice(getKey(), {bOff, kvHeads->first, zero, zero},
                  {bSz, kvHeads->second, skv, d});
  Value v = slice(getValue(), {bOff, kvHeads->first, zero, zero},
                  {bSz, kvHeads->second, skv, dv});
  Value o = slice(getOutput(), {bOff, hOff, sOff, zero}, {bSz, hSz, sSz, dv});
  Value lse;
  if (getLse())
    lse = slice(getLse(), {bOff, hOff, sOff}, {bSz, hSz, sSz});

  // δ_tile = δ + s0, with δ = Skv − Sq unless given.
  Value diagonal;
  if (hasMask()) {
    Value base = getDiagonal();
    if (!base) {
      OpFoldResult sq = logicalSize(b, loc, *this, getQuery(), kSeqDim);
      base = getValueOrCreateConstantIndexOp(
          b, loc,
          affine::makeComposedFoldedAffineApply(
              b, loc, b.getAffineDimExpr(0) - b.getAffineDimExpr(1), {skv, sq}));
    }
    diagonal = getValueOrCreateConstantIndexOp(
        b, loc,
        affine::makeComposedFoldedAffineApply(
            b, loc, b.getAffineDimExpr(0) + b.getAffineDimExpr(1),
            {OpFoldResult(base), sOff}));
  }

  SmallVector<Type> resultTypes;
  if (hasPureTensorSemantics()) {
    resultTypes.push_back(o.getType());
    if (lse)
      resultTypes.push_back(lse.getType());
  }
  // The scale default 1/sqrt(D) does not change with tiling, but pin it so
  // the tile op is self-describing.
  // The regions see global indices: the tile's first (b, h, i) is this op's
  // offsets plus the tile's.
  SmallVector<Value> tileOffsets;
  if (hasModifications()) {
    ValueRange base = getOffsets();
    OpFoldResult tileStart[3] = {bOff, hOff, sOff};
    for (int i = 0; i < 3; ++i) {
      Value start = getValueOrCreateConstantIndexOp(b, loc, tileStart[i]);
      tileOffsets.push_back(
          base.empty() ? start : arith::AddIOp::create(b, loc, base[i], start));
    }
  }
  auto tiled = AttentionOp::create(
      b, loc, resultTypes, q, k, v, o, lse, diagonal, tileOffsets, getCaptures(),
      b.getF32FloatAttr(getEffectiveScale()), getCausalAttr(), getWindowAttr(),
      getKvRangesAttr(), getLayoutAttr());
  IRMapping none;
  getScore().cloneInto(&tiled.getScore(), none);
  getMask().cloneInto(&tiled.getMask(), none);
  return TilingResult{{tiled}, SmallVector<Value>(tiled->getResults()), slices};
}

LogicalResult AttentionOp::getResultTilePosition(
    OpBuilder &b, unsigned resultNumber, ArrayRef<OpFoldResult> offsets,
    ArrayRef<OpFoldResult> sizes, SmallVector<OpFoldResult> &resultOffsets,
    SmallVector<OpFoldResult> &resultSizes) {
  if (resultNumber == 1) {
    resultOffsets.assign(offsets.begin(), offsets.end());
    resultSizes.assign(sizes.begin(), sizes.end());
    return success();
  }
  OpFoldResult dv = logicalSize(b, getLoc(), *this, getOutput(), kFeatureDim);
  SmallVector<OpFoldResult> lo = {offsets[0], offsets[1], offsets[2],
                                  b.getIndexAttr(0)};
  SmallVector<OpFoldResult> ls = {sizes[0], sizes[1], sizes[2], dv};
  resultOffsets.resize(4);
  resultSizes.resize(4);
  for (unsigned l = 0; l < 4; ++l) {
    resultOffsets[getPhysicalDim(l)] = lo[l];
    resultSizes[getPhysicalDim(l)] = ls[l];
  }
  return success();
}
