//===- Tile.cpp - --fat-tile: fat.attention -> online-softmax loop --------===//
//
// Two steps, both reusable on their own:
//  1. TilingInterface tiling of fat.attention over (B, Hq, Sq) with tile
//     sizes [1, 1, block-m] into an scf.forall (standard machinery);
//  2. the rewrite of one such tile into the loop over KV blocks that carries
//     (O, m, l), written in fat tile ops (FatTileOps.td), one per formula.
//
//===----------------------------------------------------------------------===//

#include "TiledAttention.h"
#include "fa-t/Dialect/Fat/Hopper/KernelModel.h"
#include "fa-t/Dialect/Fat/IR/FatOps.h"
#include "fa-t/Dialect/Fat/Transforms/Passes.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/Support/Debug.h"

#include <cmath>

#define DEBUG_TYPE "fat-tile"

namespace mlir::fat {
#define GEN_PASS_DEF_FATTILE
#include "fa-t/Dialect/Fat/Transforms/Passes.h.inc"
} // namespace mlir::fat

using namespace mlir;
using namespace mlir::fat;

namespace {

/// Index arithmetic shorthands for the block-range computations.
struct IndexMath {
  ImplicitLocOpBuilder &b;
  Value c(int64_t v) { return arith::ConstantIndexOp::create(b, v); }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, x, y); }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, x, y); }
  Value min(Value x, Value y) { return arith::MinSIOp::create(b, x, y); }
  Value max(Value x, Value y) { return arith::MaxSIOp::create(b, x, y); }
  Value ceilDiv(Value x, int64_t d) {
    return arith::CeilDivSIOp::create(b, x, c(d));
  }
  Value clamp(Value x, Value lo, Value hi) { return min(max(x, lo), hi); }
};

/// The pieces of one query block that every KV step reads.
struct BlockState {
  AttentionOp op;
  AttentionTileSizes sizes;
  Value q;        // [BM, D], zero-padded query tile
  Value key, value; // the op's K / V ([1, 1, Skv, *] up to layout)
  Value skv;      // number of keys
  Value diagonal; // key index aligned with query row 0 of this block
  float expScale; // c = scale · log2 e (log2 e after a score region, whose
                  // scores are already scaled)
  UnitAttr causal;            // the op's mask attributes
  DenseI64ArrayAttr window;
  // Score / mask regions: the tile's global (b, h, first query row), the
  // global query count its rows clamp to, and the captures.
  Value batch, head, qStart, qLen;
};

/// Applies the op's score and mask regions to the raw score tile `s` of the
/// KV block starting at key j0 (fat.score_mod, fat.mask_mod: the region
/// cloned into each).
Value buildModifications(ImplicitLocOpBuilder &b, const BlockState &st, Value s,
                         Value j0) {
  AttentionOp op = st.op;
  IRMapping none;
  if (!op.getScore().empty()) {
    auto mod = ScoreModOp::create(b, s.getType(), s, st.batch, st.head, st.qStart,
                                  j0, st.qLen, st.skv, op.getCaptures(),
                                  b.getF32FloatAttr(op.getEffectiveScale()));
    op.getScore().cloneInto(&mod.getBody(), none);
    s = mod.getResult();
  }
  if (!op.getMask().empty()) {
    auto mod = MaskModOp::create(b, s.getType(), s, st.batch, st.head, st.qStart,
                                 j0, st.qLen, st.skv, op.getCaptures(),
                                 op.getKvRangesAttr());
    op.getMask().cloneInto(&mod.getBody(), none);
    s = mod.getResult();
  }
  return s;
}

/// Extracts rows [start, start + size) of a [1, 1, S, X] operand (logical
/// order) as a rank-2 tensor [size, X], zero-padded to [padTo, X] when `size`
/// is not statically padTo.
Value loadRows(ImplicitLocOpBuilder &b, AttentionOp op, Value src,
               OpFoldResult start, OpFoldResult size, int64_t padTo) {
  auto srcType = cast<RankedTensorType>(src.getType());
  int64_t width = srcType.getDimSize(op.getPhysicalDim(AttentionOp::kFeatureDim));
  SmallVector<OpFoldResult> offs(4, b.getIndexAttr(0)), szs(4, b.getIndexAttr(1));
  std::optional<int64_t> staticSize = getConstantIntValue(size);
  if (staticSize)
    size = b.getIndexAttr(*staticSize);
  offs[op.getPhysicalDim(AttentionOp::kSeqDim)] = start;
  szs[op.getPhysicalDim(AttentionOp::kSeqDim)] = size;
  szs[op.getPhysicalDim(AttentionOp::kFeatureDim)] = b.getIndexAttr(width);
  auto sliceType = RankedTensorType::get(
      {staticSize ? *staticSize : ShapedType::kDynamic, width},
      srcType.getElementType());
  SmallVector<OpFoldResult> strides(4, b.getIndexAttr(1));
  Value rows = tensor::ExtractSliceOp::create(b, sliceType, src, offs, szs, strides);
  if (staticSize == padTo)
    return rows;
  // Ragged tail: zero rows below the data. Zero keys score 0 and are masked
  // to −inf by kv_len; zero values are multiplied by P = 0.
  Value high = arith::SubIOp::create(
      b, arith::ConstantIndexOp::create(b, padTo),
      getValueOrCreateConstantIndexOp(b, b.getLoc(), size));
  Value zero = arith::ConstantOp::create(
      b, b.getZeroAttr(srcType.getElementType()));
  auto padded = RankedTensorType::get({padTo, width}, srcType.getElementType());
  return tensor::PadOp::create(
      b, padded, rows, ArrayRef<OpFoldResult>{b.getIndexAttr(0), b.getIndexAttr(0)},
      ArrayRef<OpFoldResult>{OpFoldResult(high), b.getIndexAttr(0)}, zero);
}

/// Emits one online-softmax step over the KV block starting at key j0 and
/// returns the updated (O, m, l).
SmallVector<Value> buildKVStep(ImplicitLocOpBuilder &b, const BlockState &st,
                               Value j0, bool masked, ValueRange carried) {
  Value o = carried[0], m = carried[1], l = carried[2];
  int64_t bn = st.sizes.blockN;
  // Unmasked blocks are full by construction; masked ones may run past Skv.
  IndexMath im{b};
  OpFoldResult rows = b.getIndexAttr(bn);
  if (masked)
    rows = im.min(im.c(bn), im.sub(st.skv, j0));
  AttentionOp op = st.op;
  Value k = loadRows(b, op, st.key, j0, rows, bn);
  Value v = loadRows(b, op, st.value, j0, rows, bn);

  auto f32 = b.getF32Type();
  auto sType = RankedTensorType::get({st.sizes.blockM, bn}, f32);
  // S = Q · Kᵀ (unscaled; the scale lives in the exp2 argument)
  Value s = QKOp::create(b, sType, st.q, k);
  // s' = score(scale·S, b, h, i, j); −inf where mask(b, h, i, j) is false
  if (AttentionOp(st.op).hasModifications())
    s = buildModifications(b, st, s, j0);
  // S_ij = −inf where key j0 + j is invisible to query i (or past Skv)
  if (masked)
    s = MaskOp::create(b, sType, s, IndexMath{b}.c(0), j0, st.skv,
                       st.diagonal, st.causal, st.window,
                       /*row_limits=*/UnitAttr());
  // m' = max(m, rowmax(S))
  Value mNew = RowMaxOp::create(b, m.getType(), s, m);
  // P = exp2(c · (S − m'))
  FloatAttr c = b.getF32FloatAttr(st.expScale);
  Value p = Exp2Op::create(b, sType, s, mNew, c);
  // α = exp2(c · (m − m'))
  Value alpha = Exp2Op::create(b, m.getType(), m, mNew, c);
  // l' = α · l + rowsum(P)
  Value lNew = RowSumOp::create(b, l.getType(), p,
                                RescaleOp::create(b, l.getType(), l, alpha));
  // O' = α · O + P · V
  Value oNew = PVOp::create(b, o.getType(), p, v,
                            RescaleOp::create(b, o.getType(), o, alpha));
  return {oNew, mNew, lNew};
}

/// Emits `for jb in [lo, hi): state = step(jb · BN)`.
SmallVector<Value> buildKVLoop(ImplicitLocOpBuilder &b, const BlockState &st,
                               Value lo, Value hi, bool masked,
                               ValueRange init) {
  IndexMath im{b};
  auto loop = scf::ForOp::create(
      b, lo, hi, im.c(1), init,
      [&](OpBuilder &nb, Location loc, Value jb, ValueRange carried) {
        ImplicitLocOpBuilder ib(loc, nb);
        Value j0 = IndexMath{ib}.mul(jb, IndexMath{ib}.c(st.sizes.blockN));
        scf::YieldOp::create(ib, buildKVStep(ib, st, j0, masked, carried));
      });
  loop->setAttr("fat.kv_loop", b.getStringAttr(masked ? "masked" : "unmasked"));
  return loop.getResults();
}

} // namespace

/// Rewrites one query-block tile of fat.attention (B = Hq = 1, at most
/// block-m query rows, tensor form) into the KV loop.
static LogicalResult lowerAttentionBlock(RewriterBase &rewriter, AttentionOp op,
                                         const AttentionTileSizes &sizes) {
  ImplicitLocOpBuilder b(op.getLoc(), rewriter);
  b.setInsertionPoint(op);
  IndexMath im{b};
  int64_t bm = sizes.blockM, bn = sizes.blockN;

  auto dimOf = [&](Value v, unsigned logical) {
    return getValueOrCreateConstantIndexOp(
        b, b.getLoc(), tensor::getMixedSize(b, b.getLoc(), v, op.getPhysicalDim(logical)));
  };
  Value rows = dimOf(op.getQuery(), AttentionOp::kSeqDim);
  Value skv = dimOf(op.getKey(), AttentionOp::kSeqDim);

  BlockState st;
  st.op = op;
  st.sizes = sizes;
  st.key = op.getKey();
  st.value = op.getValue();
  st.skv = skv;
  st.q = loadRows(b, op, op.getQuery(), b.getIndexAttr(0), rows, bm);
  st.diagonal = op.getDiagonal() ? op.getDiagonal() : im.sub(skv, rows);
  bool scaled = !op.getScore().empty();
  st.expScale = float((scaled ? 1.0 : op.getEffectiveScale()) * M_LOG2E);
  if (op.hasModifications()) {
    ValueRange offsets = op.getOffsets();
    Value zero = im.c(0);
    st.batch = offsets.empty() ? zero : offsets[0];
    st.head = offsets.empty() ? zero : offsets[1];
    st.qStart = offsets.empty() ? zero : offsets[2];
    st.qLen = im.add(st.qStart, rows);
  }
  st.causal = op.getCausalAttr();
  st.window = op.getWindowAttr();

  // The key blocks of the block's real rows 0 .. rows − 1 (the mask's
  // geometry, FatKernelOps.td: the kernel's ops, on index): [nLo, nHi)
  // visible; [uLo, uHi) seen whole by every row (no mask). uHi is where
  // the causal / right edge and the ragged tail begin; uLo, where the left
  // edge ends (the kernel does not split there), is
  //   k ≥ rows − 1 + δ − left (the last row)   → ⌈max(…, 0) / N⌉.
  Value delta = st.diagonal;
  int64_t left = op.getWindowLeft();
  Value zero = im.c(0);
  auto visible = VisibleKeyBlocksOp::create(
      b, zero, im.sub(rows, im.c(1)), skv, delta, bn, op.getCausal(), left,
      op.getWindowRight());
  Value nLo = visible.getFirstBlock();
  Value nHi = im.max(visible.getEndBlock(), nLo);
  Value fullLo = zero;
  if (left >= 0)
    fullLo = im.max(im.sub(im.add(rows, delta), im.c(left + 1)), zero);
  Value uLo = im.clamp(im.ceilDiv(fullLo, bn), nLo, nHi);
  Value firstMasked = FirstMaskedKeyBlockOp::create(
      b, zero, skv, delta, bn, op.getCausal(), op.getWindowRight());
  Value uHi = im.clamp(firstMasked, uLo, nHi);

  // Running state: O = 0, m = −inf, l = 0.
  auto f32 = b.getF32Type();
  int64_t dv = cast<ShapedType>(op.getValue().getType())
                   .getDimSize(op.getPhysicalDim(AttentionOp::kFeatureDim));
  auto fill = [&](ArrayRef<int64_t> shape, float v) -> Value {
    Value empty = tensor::EmptyOp::create(b, shape, f32);
    Value cst = arith::ConstantOp::create(b, b.getF32FloatAttr(v));
    return linalg::FillOp::create(b, cst, empty).getResult(0);
  };
  SmallVector<Value> state = {fill({bm, dv}, 0.0f),
                              fill({bm}, -INFINITY), fill({bm}, 0.0f)};
  state = buildKVLoop(b, st, nLo, uLo, /*masked=*/true, state);
  state = buildKVLoop(b, st, uLo, uHi, /*masked=*/false, state);
  state = buildKVLoop(b, st, uHi, nHi, /*masked=*/true, state);

  // O = O / l, LSE = scale · m + ln l (0 and −inf for rows with no key).
  auto outType = cast<RankedTensorType>(op.getOutput().getType());
  auto finalize = FinalizeOp::create(
      b, RankedTensorType::get({bm, dv}, outType.getElementType()),
      RankedTensorType::get({bm}, f32), state[0], state[2], state[1],
      b.getF32FloatAttr(scaled ? 1.0f : float(op.getEffectiveScale())));

  // Write back the block's real rows.
  SmallVector<Value> results;
  {
    SmallVector<OpFoldResult> offs(4, b.getIndexAttr(0)), szs(4, b.getIndexAttr(1));
    szs[op.getPhysicalDim(AttentionOp::kSeqDim)] = rows;
    szs[op.getPhysicalDim(AttentionOp::kFeatureDim)] = b.getIndexAttr(dv);
    Value real = tensor::ExtractSliceOp::create(
        b, finalize.getOutput(), ArrayRef<OpFoldResult>{b.getIndexAttr(0), b.getIndexAttr(0)},
        ArrayRef<OpFoldResult>{rows, b.getIndexAttr(dv)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1)});
    results.push_back(tensor::InsertSliceOp::create(
        b, real, op.getOutput(), offs, szs, SmallVector<OpFoldResult>(4, b.getIndexAttr(1))));
  }
  if (Value lse = op.getLse()) {
    Value real = tensor::ExtractSliceOp::create(
        b, finalize.getLse(), ArrayRef<OpFoldResult>{b.getIndexAttr(0)},
        ArrayRef<OpFoldResult>{rows}, ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
    results.push_back(tensor::InsertSliceOp::create(
        b, real, lse, SmallVector<OpFoldResult>(3, b.getIndexAttr(0)),
        ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1), rows},
        SmallVector<OpFoldResult>(3, b.getIndexAttr(1))));
  }
  rewriter.replaceOp(op, results);
  return success();
}

namespace {

/// fat.attention (memref form) -> to_tensor + tensor form +
/// materialize_in_destination.
struct AttentionMemrefToTensor : OpRewritePattern<AttentionOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AttentionOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.hasPureBufferSemantics())
      return rewriter.notifyMatchFailure(op, "not the memref form");
    (void)convertAttentionToTensorForm(rewriter, op);
    return success();
  }
};

/// Whether K and V hold no key at all (Skv statically 0). Then there is
/// nothing to tile: every row sees no key, and the K/V tiles could not even
/// be sliced (tensor.extract_slice rejects any static offset into an empty
/// dim, 0 included).
bool hasStaticallyNoKeys(AttentionOp op) {
  return cast<ShapedType>(op.getKey().getType())
             .getDimSize(op.getPhysicalDim(AttentionOp::kSeqDim)) == 0;
}

/// Replaces `op` (tensor form) by what a row with no visible key yields:
/// O = 0 and LSE = −inf; returns the fill of O.
Operation *replaceWithNoKeyResult(RewriterBase &rewriter, AttentionOp op) {
  Location loc = op.getLoc();
  auto fill = [&](Value init, TypedAttr value) -> Value {
    Value cst = arith::ConstantOp::create(rewriter, loc, value);
    return linalg::FillOp::create(rewriter, loc, cst, init).getResult(0);
  };
  Type outElt = getElementTypeOrSelf(op.getOutput().getType());
  SmallVector<Value> results = {
      fill(op.getOutput(), rewriter.getZeroAttr(outElt))};
  if (Value lse = op.getLse())
    results.push_back(fill(lse, rewriter.getF32FloatAttr(-INFINITY)));
  rewriter.replaceOp(op, results);
  return results.front().getDefiningOp();
}

/// fat.attention (tensor form) -> scf.forall over (B, Hq, Sq / block-m) of
/// the KV loop.
struct TileAttention : OpRewritePattern<AttentionOp> {
  TileAttention(MLIRContext *ctx, AttentionTileSizes sizes)
      : OpRewritePattern(ctx), sizes(sizes) {}

  LogicalResult matchAndRewrite(AttentionOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.hasPureTensorSemantics())
      return rewriter.notifyMatchFailure(op, "not the tensor form");
    if (failed(tileAttention(rewriter, op, sizes)))
      return rewriter.notifyMatchFailure(op, "tiling failed");
    return success();
  }

  AttentionTileSizes sizes;
};

struct FatTilePass : fat::impl::FatTileBase<FatTilePass> {
  using FatTileBase::FatTileBase;

  void runOnOperation() override {
    for (auto [name, v] : {std::pair<StringRef, int64_t>{"block-m", blockM},
                           {"block-n", blockN}})
      if (v < 0 || v > 1024) {
        getOperation()->emitError()
            << "fat-tile: option " << name
            << " must be in [1, 1024], or 0 for the Hopper kernel's, got " << v;
        return signalPassFailure();
      }
    if (stages != 0 && !isSupportedStages(stages)) {
      getOperation()->emitError()
          << "fat-tile: option stages must be in [1, 4] (the depth of the "
             "kernel's K/V ring), or 0 for the op's entry else 2, got "
          << static_cast<int64_t>(stages);
      return signalPassFailure();
    }
    if (seqLen < 0) {
      getOperation()->emitError()
          << "fat-tile: option seq-len must be a key length to tune the "
             "tiles for, or 0 (the op's static key length), got "
          << static_cast<int64_t>(seqLen);
      return signalPassFailure();
    }
    RewritePatternSet patterns(&getContext());
    populateFatAttentionToTensorPatterns(patterns);
    populateFatTilePatterns(patterns, {blockM, blockN, stages, seqLen});
    // Only the functions that hold a fat.attention (the driver folds what it
    // visits): other functions and a kernel already built stay as they are,
    // so the pass is a no-op on IR without one.
    SetVector<Operation *> scopes;
    getOperation()->walk([&](AttentionOp op) {
      scopes.insert(op->getParentWithTrait<OpTrait::IsIsolatedFromAbove>());
    });
    FrozenRewritePatternSet frozen(std::move(patterns));
    for (Operation *scope : scopes)
      if (failed(applyPatternsGreedily(scope, frozen)))
        return signalPassFailure();
    WalkResult left = getOperation()->walk([](AttentionOp op) {
      op.emitError("fat-tile: could not tile this fat.attention");
      return WalkResult::interrupt();
    });
    if (left.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace

AttentionOp mlir::fat::convertAttentionToTensorForm(RewriterBase &rewriter,
                                                   AttentionOp op) {
  if (!op.hasPureBufferSemantics())
    return op;
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(op);
  Location loc = op.getLoc();
  auto toTensor = [&](Value m, bool writable) -> Value {
    if (!m)
      return m;
    auto t = cast<MemRefType>(m.getType());
    auto tt = RankedTensorType::get(t.getShape(), t.getElementType());
    return bufferization::ToTensorOp::create(rewriter, loc, tt, m,
                                             /*restrict=*/true, writable);
  };
  Value o = toTensor(op.getOutput(), true), lse = toTensor(op.getLse(), true);
  SmallVector<Type> resultTypes = {o.getType()};
  if (lse)
    resultTypes.push_back(lse.getType());
  SmallVector<Value> captures;
  for (Value c : op.getCaptures())
    captures.push_back(isa<MemRefType>(c.getType()) ? toTensor(c, false) : c);
  auto t = AttentionOp::create(
      rewriter, loc, resultTypes, toTensor(op.getQuery(), false),
      toTensor(op.getKey(), false), toTensor(op.getValue(), false), o, lse,
      op.getDiagonal(), op.getOffsets(), captures, op.getScaleAttr(),
      op.getCausalAttr(), op.getWindowAttr(), op.getKvRangesAttr(),
      op.getLayoutAttr());
  t->setDiscardableAttrs(op->getDiscardableAttrDictionary());
  rewriter.inlineRegionBefore(op.getScore(), t.getScore(), t.getScore().end());
  rewriter.inlineRegionBefore(op.getMask(), t.getMask(), t.getMask().end());
  for (auto [res, dest] : llvm::zip(t.getResults(), op.getDpsInits())) {
    auto m = bufferization::MaterializeInDestinationOp::create(
        rewriter, loc, TypeRange{}, res, dest);
    m.setWritable(true);
    m.setRestrict(true);
  }
  rewriter.eraseOp(op);
  return t;
}

FailureOr<Operation *> mlir::fat::tileAttention(RewriterBase &rewriter,
                                                AttentionOp op,
                                                const AttentionTileSizes &requested) {
  if (!op.hasPureTensorSemantics())
    return failure();
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(op);
  if (hasStaticallyNoKeys(op)) {
    return replaceWithNoKeyResult(rewriter, op);
  }
  int64_t skv = cast<ShapedType>(op.getKey().getType())
                    .getDimSize(op.getPhysicalDim(AttentionOp::kSeqDim));
  int64_t seqLen =
      requested.seqLen > 0 ? requested.seqLen
                           : (ShapedType::isDynamic(skv) ? 0 : skv);
  AttentionTileSizes sizes = requested;
  // A size of 0: the entry written in the op's fat.schedule, else the
  // cost model's (stages: else 2).
  auto written = [&](StringRef key, int64_t &size) {
    if (auto dict = op->getAttrOfType<DictionaryAttr>(kScheduleAttrName))
      if (auto entry = dyn_cast_or_null<IntegerAttr>(dict.get(key)))
        if (!size)
          size = entry.getInt();
  };
  written("block_m", sizes.blockM);
  written("block_n", sizes.blockN);
  written("stages", sizes.stages);
  if (!sizes.stages)
    sizes.stages = 2;
  if (!sizes.blockM || !sizes.blockN) {
    HopperKernelOptions target;
    target.blockM = sizes.blockM;
    target.blockN = sizes.blockN;
    target.stages = sizes.stages;
    target.seqLen = seqLen;
    std::optional<std::pair<int64_t, int64_t>> kernel =
        chooseKernelBlocks(op, target);
    if (!sizes.blockM)
      sizes.blockM = kernel ? kernel->first : 128;
    if (!sizes.blockN)
      sizes.blockN = kernel ? kernel->second : 128;
  }
  scf::SCFTilingOptions options;
  options.setLoopType(scf::SCFTilingOptions::LoopType::ForallOp);
  options.setTileSizes({rewriter.getIndexAttr(1), rewriter.getIndexAttr(1),
                        rewriter.getIndexAttr(sizes.blockM)});
  FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(
      rewriter, cast<TilingInterface>(op.getOperation()), options);
  if (failed(tiled) || tiled->loops.empty())
    return failure();
  // A schedule written on the op (by hand) is a decision the later passes
  // keep: it travels with the tiles.
  Attribute schedule = op->getAttr(kScheduleAttrName);
  rewriter.replaceOp(op, tiled->replacements);
  Builder b(rewriter.getContext());
  Operation *forall = tiled->loops.front();
  forall->setAttr(kTileAttrName,
                  b.getDictionaryAttr(
                      {b.getNamedAttr("block_m", b.getI64IntegerAttr(sizes.blockM)),
                       b.getNamedAttr("block_n", b.getI64IntegerAttr(sizes.blockN)),
                       b.getNamedAttr("stages", b.getI64IntegerAttr(sizes.stages)),
                       b.getNamedAttr("seq_len", b.getI64IntegerAttr(seqLen))}));
  if (schedule)
    forall->setAttr(kScheduleAttrName, schedule);
  for (Operation *t : tiled->tiledOps)
    if (auto block = dyn_cast<AttentionOp>(t))
      if (failed(lowerAttentionBlock(rewriter, block, sizes)))
        return failure();
  return forall;
}

void mlir::fat::populateFatAttentionToTensorPatterns(RewritePatternSet &patterns) {
  patterns.add<AttentionMemrefToTensor>(patterns.getContext());
}

void mlir::fat::populateFatTilePatterns(RewritePatternSet &patterns,
                                        const AttentionTileSizes &sizes) {
  patterns.add<TileAttention>(patterns.getContext(), sizes);
}

TiledAttentionFacts
mlir::fat::readTiledAttentionFacts(Operation *scope) {
  TiledAttentionFacts f;
  Region *scoreBody = nullptr, *maskBody = nullptr;
  std::optional<uint64_t> kvRanges;
  scope->walk([&](Operation *op) {
    if (auto mask = dyn_cast<MaskOp>(op)) {
      f.causal |= mask.getCausal();
      if (std::optional<ArrayRef<int64_t>> window = mask.getWindow())
        f.window = {(*window)[0], (*window)[1]};
      if (mask.getCausal() || mask.getWindow())
        f.diagonal = mask.getDiagonal();
    } else if (auto mod = dyn_cast<ScoreModOp>(op)) {
      f.scoreMod = true;
      scoreBody = &mod.getBody();
    } else if (auto mod = dyn_cast<MaskModOp>(op)) {
      f.maskMod = true;
      maskBody = &mod.getBody();
      kvRanges = mod.getKvRanges();
    }
  });
  f.positional = readsPositions(scoreBody, maskBody, kvRanges.has_value());
  f.positionalMask = readsPositions(nullptr, maskBody, kvRanges.has_value());
  f.dataBlocks = keyBlocksFollowData(maskBody, kvRanges);
  if (auto record = scope->getAttrOfType<DictionaryAttr>(kTileAttrName)) {
    if (auto v = dyn_cast_or_null<IntegerAttr>(record.get("stages")))
      f.stages = v.getInt();
    if (auto v = dyn_cast_or_null<IntegerAttr>(record.get("seq_len")))
      f.seqLen = v.getInt();
  }
  return f;
}
