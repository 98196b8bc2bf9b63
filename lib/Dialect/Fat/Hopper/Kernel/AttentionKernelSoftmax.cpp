//===- AttentionKernelSoftmax.cpp - one key block of the softmax ----------===//
//
// The work of one key block on a consumer warpgroup: S = Q·K_jᵀ (wgmma, both
// operands in shared memory), then the mask, the online softmax, P rounded
// as the A operand and the rescale O = α·O — written as the tensorized
// level's ops on the warpgroup's #fat.wgmma_fragment tiles, which
// convert-fat-to-nvvm distributes to the thread's registers — and O +=
// P·V_j (wgmma with A in registers, and the ones columns that sum P's rows
// on the tensor cores).
//
//===----------------------------------------------------------------------===//

#include "AttentionKernelBuilder.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::fat;
using namespace mlir::fat::hopper;

Value AttentionKernelBuilder::moveGemm(Operation *tmpl, Value a, Value bAddr,
                                       ArrayRef<int64_t> boxStrides, Value acc,
                                       Value scaleD, Value biasA) {
  // The tensorized GEMM (its instruction shape, transpose_b, A's source and
  // type; K its A's columns, but for the bias columns' step) issued on this
  // warpgroup's operands: A's rows [64·consumer, +64), from shared memory
  // (an address) or registers (P's tile), B the stage's boxes.
  auto gemm = cast<WgmmaOp>(tmpl);
  auto aType = cast<RankedTensorType>(gemm.getA().getType());
  bool fromSmem = gemm.getAFrom() == OperandSource::Smem;
  ArrayRef<int64_t> shape = gemm.getShape();
  int64_t k = aType.getDimSize(1) - (biasA ? BiasKeyColumnsOp::kColumns : 0);
  return WgmmaAsyncOp::create(
      b, fragmentType(shape[1], b.getF32Type()), fromSmem ? a : Value(),
      fromSmem ? b.getI64IntegerAttr(boxStrides[0]) : IntegerAttr(),
      fromSmem ? Value() : a, bAddr, boxStrides.back(), biasA,
      biasA ? v.biasKeysAddr : Value(), acc, scaleD, gemm.getTransposeB(), k,
      shape, aType.getElementType());
}

Value AttentionKernelBuilder::buildQK(Value consumer, Value iter,
                                      Operation *tmpl, Value biasA, Value acc) {
  // Q: this warpgroup's rows of the [blockM][64] boxes of the tile's
  // buffer; K: the [blockN][64] boxes of the stage.
  Value qAddr =
      ringAddress(v.qRing, v.tileIndex, mul(consumer, c32(64 * 128)));
  return moveGemm(tmpl ? tmpl : cfg.scoreGemm, qAddr,
                  ringAddress(v.kRing, iter),
                  {cfg.blockM * 128, cfg.blockN * 128}, acc, {}, biasA);
}

Value AttentionKernelBuilder::buildBandFragment(Value consumer, Value iter) {
  // The stage is read into registers before the release: the arrive
  // orders the loads before the writer's next claim of it.
  RingWaitOp::create(b, v.bandRing, iter);
  Value frag =
      BandFragmentOp::create(b, fragmentType(cfg.blockN, b.getF32Type()),
                             RingBufferOp::create(b, v.bandRing, iter),
                             mul(consumer, c32(64)), cfg.blockM, cfg.blockN);
  RingReleaseOp::create(b, v.bandRing, iter);
  return frag;
}

Value AttentionKernelBuilder::buildBiasQuery(Operation *tmplOp, Value kvBlock,
                                             Value wgRow) {
  // The block's query columns at the warpgroup's first row (every row's
  // bias then differs from the region's by one constant per row) with the
  // kernel's run-time scale; the region as the tiled form wrote it.
  auto tmpl = cast<BiasQueryColumnsOp>(tmplOp);
  SmallVector<Value> at = modificationCoordinates(keyBlock(kvBlock), wgRow);
  auto query = BiasQueryColumnsOp::create(
      b, fragmentType(BiasKeyColumnsOp::kColumns, inputType()), at[0], at[1],
      at[2], at[3], v.scoreScale, v.captures);
  IRMapping none;
  tmpl.getBody().cloneInto(&query.getBody(), none);
  return query.getResult();
}

KeyWeightsOp AttentionKernelBuilder::buildKeyWeights(Value kvStart) {
  // The region as the tiled form wrote it, with the kernel's run-time
  // scale (the scores stay unscaled, as with the bias columns).
  auto tmpl = cast<KeyWeightsOp>(cfg.keyWeights);
  auto index = [&](Value x) -> Value {
    return arith::IndexCastOp::create(b, b.getIndexType(), x);
  };
  auto weights = KeyWeightsOp::create(
      b, fragmentType(cfg.blockN, b.getBF16Type()),
      TypeRange(tmpl.getOffsets().getTypes()), index(v.batch), index(v.head),
      index(kvStart), v.scoreScale, v.captures);
  IRMapping none;
  tmpl.getBody().cloneInto(&weights.getBody(), none);
  return weights;
}

void AttentionKernelBuilder::buildTileKeyWeights() {
  // Computed once per tile (ex2 per key of a thread's pairs in one run):
  // each block's op keeps only its offsets, its weights unused.
  if (cfg.keyWeights)
    v.keyWeights = buildKeyWeights(c32(0)).getWeights();
}

Value AttentionKernelBuilder::buildPV(Value o, Value p, Value iter,
                                     Value accumulate, Operation *tmpl) {
  // V: box c holds columns [64c, 64c+64) of the blockN key rows.
  return moveGemm(tmpl ? tmpl : cfg.outputGemm, p, ringAddress(v.vRing, iter),
                  {cfg.blockN * 128}, o, accumulate);
}

Value AttentionKernelBuilder::buildMaskIfNeeded(Value s, Value kvBlock,
                                               Value wgRow) {
  // Only blocks on a mask edge or the ragged tail pay for the mask; the
  // test is uniform over the CTA.
  Value needMask = KeyBlockNeedsMaskOp::create(
      b, kvBlock, v.rowFirst, v.rowLast, v.seqKV, v.diag, cfg.blockN,
      cfg.causal, cfg.windowLeft, cfg.windowRight);
  auto maskIf = scf::IfOp::create(
      b, needMask,
      [&](OpBuilder &nested, Location loc) {
        ImplicitLocOpBuilder nb(loc, nested);
        AttentionKernelBuilder inner(nb, cfg);
        inner.v = v;
        scf::YieldOp::create(nb, inner.buildMaskedScores(s, kvBlock, wgRow));
      },
      [&](OpBuilder &nested, Location loc) {
        scf::YieldOp::create(nested, loc, s);
      });
  tagStage(maskIf, "mask");
  return maskIf.getResult(0);
}

Value AttentionKernelBuilder::buildMaskedScores(Value s, Value kvBlock,
                                               Value wgRow) {
  // The tiled form's fat.mask on this warpgroup's tile of S (rows from
  // wgRow, keys from kvBlock·N); the per-row-limit form where the kernel
  // has the registers for it (cfg.maskByRowLimits).
  Value keyFirst = mul(kvBlock, c32(cfg.blockN));
  auto index = [&](Value x) -> Value {
    return arith::IndexCastOp::create(b, b.getIndexType(), x);
  };
  RankedTensorType type = fragmentType(cfg.blockN, b.getF32Type());
  DenseI64ArrayAttr window;
  if (cfg.windowLeft >= 0 || cfg.windowRight >= 0)
    window = b.getDenseI64ArrayAttr({cfg.windowLeft, cfg.windowRight});
  return MaskOp::create(b, type, s, index(wgRow), index(keyFirst),
                        index(v.seqKV), index(v.diag), cfg.causal, window,
                        cfg.maskByRowLimits);
}

SmallVector<Value> AttentionKernelBuilder::modificationCoordinates(
    Value kvBlock, Value wgRow) {
  // The regions' coordinates at the kernel's tile: batch, query head, the
  // warpgroup's first row, the block's first key; Sq, Skv.
  auto index = [&](Value x) -> Value {
    return arith::IndexCastOp::create(b, b.getIndexType(), x);
  };
  return {index(v.batch),         index(v.head),
          index(wgRow),           index(mul(kvBlock, c32(cfg.blockN))),
          index(v.seqQ),          index(v.seqKV)};
}

Value AttentionKernelBuilder::buildScoreMod(Operation *tmpl, Value s,
                                            ArrayRef<Value> at) {
  // The tiled form's score region, moved onto this warpgroup's tile. The
  // kernel's scale is a run-time parameter, so the tile is scaled here and
  // the modification's own scale is 1; its fast-math flags are
  // fat-pipeline's (ModificationFastMath.cpp).
  IRMapping none;
  Value scale = tensor::SplatOp::create(b, v.scoreScale, s.getType());
  auto mod = ScoreModOp::create(b, s.getType(),
                                arith::MulFOp::create(b, s, scale), at[0],
                                at[1], at[2], at[3], at[4], at[5], v.captures,
                                b.getF32FloatAttr(1.0));
  mod.setTanhPoly(cast<ScoreModOp>(tmpl).getTanhPoly());
  cast<ScoreModOp>(tmpl).getBody().cloneInto(&mod.getBody(), none);
  return mod.getResult();
}

Value AttentionKernelBuilder::buildMaskMod(Operation *tmplOp, Value s,
                                           ArrayRef<Value> at, Value kvBlock,
                                           Value wgRow) {
  // The tiled form's mask region on this warpgroup's tile.
  auto tmpl = cast<MaskModOp>(tmplOp);
  auto buildMask = [&](ImplicitLocOpBuilder &nb, Value scores) -> Value {
    IRMapping none;
    auto mod = MaskModOp::create(nb, scores.getType(), scores, at[0], at[1],
                                 at[2], at[3], at[4], at[5], v.captures,
                                 tmpl.getKvRangesAttr());
    tmpl.getBody().cloneInto(&mod.getBody(), none);
    return mod.getResult();
  };
  if (!cfg.skipsFullKeyBlocks())
    return buildMask(b, s);
  // A block inside the warpgroup's full key range skips the region (its
  // range test and the user's mask) on a uniform branch.
  auto maskIf = scf::IfOp::create(
      b, buildFullKeyBlock(kvBlock, wgRow),
      [&](OpBuilder &nested, Location loc) {
        scf::YieldOp::create(nested, loc, s);
      },
      [&](OpBuilder &nested, Location loc) {
        ImplicitLocOpBuilder nb(loc, nested);
        scf::YieldOp::create(nb, buildMask(nb, s));
      });
  tagStage(maskIf, "mask_mod");
  return maskIf.getResult(0);
}

Value AttentionKernelBuilder::buildFirstMaskedBlock() {
  // The blocks from which buildMaskIfNeeded's right-side tests stay true
  // (kernels with a left window edge, whose masked blocks also lie at the
  // start, are not split: splitMaskedTail).
  return FirstMaskedKeyBlockOp::create(b, v.rowFirst, v.seqKV, v.diag,
                                       cfg.blockN, cfg.causal,
                                       cfg.windowRight);
}

RankedTensorType AttentionKernelBuilder::fragmentType(int64_t cols,
                                                      Type elt) {
  SmallVector<int64_t> shape{WgmmaOp::kRowsPerWarpgroup};
  if (cols)
    shape.push_back(cols);
  return RankedTensorType::get(shape, elt,
                               WgmmaFragmentAttr::get(b.getContext()));
}

RankedTensorType AttentionKernelBuilder::sumType() {
  return WgmmaFragmentAttr::withPartial(fragmentType(0, b.getF32Type()),
                                        !cfg.schedule.rowsumMma);
}

Value AttentionKernelBuilder::fragmentSplat(RankedTensorType type,
                                            double value) {
  auto elt = cast<FloatType>(type.getElementType());
  return arith::ConstantOp::create(
      b, type, DenseElementsAttr::get(type, b.getFloatAttr(elt, value)));
}

Operation *AttentionKernelBuilder::moveTileOp(Operation *tmpl,
                                              ValueRange operands,
                                              TypeRange types) {
  // The op as fat-tensorize wrote it (name, attributes: its choices) on
  // this warpgroup's tiles instead of the loop's tensors.
  OperationState state(b.getLoc(), tmpl->getName());
  state.addOperands(operands);
  state.addTypes(types);
  state.addAttributes(tmpl->getDiscardableAttrDictionary().getValue());
  state.propertiesAttr = tmpl->getPropertiesAsAttribute();
  return b.create(state);
}

std::pair<Value, Value>
AttentionKernelBuilder::buildSoftmaxMax(Operation *tmpl, Value s, Value mOld,
                                        ValueRange offsets) {
  // The tensorized loop's softmax ops (FatTensorOps.td has the math and
  // the lazy-rescale numerics) move onto this warpgroup's tile of S, with
  // the kernel's run-time c; convert-fat-to-nvvm distributes them to the
  // thread's two rows. Returns m' and α.
  RankedTensorType rows = fragmentType(0, b.getF32Type());
  SmallVector<Value> operands{s, mOld, v.softmaxScale};
  llvm::append_range(operands, offsets);
  auto max = cast<SoftmaxMaxOp>(moveTileOp(tmpl, operands, {rows, rows}));
  return {max.getNewMax(), max.getAlpha()};
}

std::pair<Value, Value>
AttentionKernelBuilder::buildSoftmaxExp(Operation *tmpl, Value s, Value m,
                                        Value alpha, Value lOld,
                                        ValueRange offsets) {
  // P and l' = α·l + Σ P; rowsum=mma: the P·V wgmma's ones columns sum
  // P, l is carried unchanged.
  bool vectorSum = !cfg.schedule.rowsumMma;
  SmallVector<Value> operands{s, m, v.softmaxScale};
  llvm::append_range(operands, offsets);
  SmallVector<Type> types{s.getType()};
  if (vectorSum) {
    operands.push_back(lOld);
    if (alpha) // none with row-max=bound (α = 1)
      operands.push_back(alpha);
    types.push_back(sumType());
  }
  auto exp = cast<SoftmaxExpOp>(moveTileOp(tmpl, operands, types));
  return {exp.getProbs(), vectorSum ? exp.getNewSum() : lOld};
}

bool AttentionKernelBuilder::rewriteScoreOp(Operation &op, BlockRewrite &r) {
  // The regions' coordinates, made at the first region.
  auto coordinates = [&]() -> ArrayRef<Value> {
    if (r.at.empty())
      r.at = modificationCoordinates(r.block, r.wgRow);
    return r.at;
  };
  // The kernel serves every key length (Skv is a parameter), so the ragged
  // tail's mask is its own even where the tiled loop has none: at the
  // fat.mask, or else before the softmax; only on the blocks that need it
  // (a uniform branch, which peelUnmaskedBlocks folds where none does).
  auto mask = [&](Value s) {
    r.masked = true;
    return buildMaskIfNeeded(s, r.block, r.wgRow);
  };
  auto lookup = [&](Value x) { return r.map.lookup(x); };
  auto lookupAll = [&](ValueRange xs) {
    return llvm::map_to_vector(xs, [&](Value x) { return lookup(x); });
  };
  // The softmax's first op (fat.softmax_max, or fat.softmax_exp without
  // one: row-max=bound) masks where no fat.mask did.
  auto maskUnlessMasked = [&](Value scores) {
    if (!r.masked)
      r.map.map(scores, mask(lookup(scores)));
  };
  return llvm::TypeSwitch<Operation *, bool>(&op)
      .Case([&](ScoreModOp mod) {
        r.map.map(mod.getResult(),
                  buildScoreMod(mod, lookup(mod.getScores()), coordinates()));
        return true;
      })
      .Case([&](MaskModOp mod) {
        ArrayRef<Value> at = coordinates();
        r.map.map(mod.getResult(), buildMaskMod(mod, lookup(mod.getScores()),
                                                at, r.block, r.wgRow));
        return true;
      })
      .Case([&](KeyWeightsOp weights) { // linear-bias=weights
        // The tile's weights; this block's offsets.
        r.map.map(weights.getWeights(), v.keyWeights);
        r.map.map(weights.getOffsets(),
                  buildKeyWeights(mul(r.block, c32(cfg.blockN))).getOffsets());
        return true;
      })
      .Case([&](MaskOp m) {
        r.map.map(m.getResult(), mask(lookup(m.getScores())));
        return true;
      })
      .Case([&](SoftmaxMaxOp max) {
        maskUnlessMasked(max.getScores());
        std::tie(r.step.m, r.step.alpha) =
            buildSoftmaxMax(max, lookup(max.getScores()), lookup(max.getMax()),
                            lookupAll(max.getOffsets()));
        r.map.map(max.getNewMax(), r.step.m);
        r.map.map(max.getAlpha(), r.step.alpha);
        return true;
      })
      .Case([&](SoftmaxExpOp exp) {
        // Without fat.softmax_max (row-max=bound) the reference is the
        // loop's constant U.
        maskUnlessMasked(exp.getScores());
        if (!r.map.contains(exp.getMax()))
          r.map.map(exp.getMax(), buildRowConstant(exp.getMax()));
        Value alpha = exp.getAlpha() ? lookup(exp.getAlpha()) : Value();
        std::tie(r.probs, r.step.l) =
            buildSoftmaxExp(exp, lookup(exp.getScores()), lookup(exp.getMax()),
                            alpha, exp.getSum() ? lookup(exp.getSum()) : r.l,
                            lookupAll(exp.getOffsets()));
        r.map.map(exp.getProbs(), r.probs);
        if (exp.getNewSum())
          r.map.map(exp.getNewSum(), r.step.l);
        return true;
      })
      .Default([](Operation *) { return false; });
}

Value AttentionKernelBuilder::buildRowConstant(Value rows) {
  // A splat per row of the tensorized loop (the bound reference U) on
  // the warpgroup's row fragment.
  DenseElementsAttr value;
  bool splat = matchPattern(rows, m_Constant(&value)) && value.isSplat();
  assert(splat && "readTensorizedAttention checked the splat");
  (void)splat;
  return fragmentSplat(fragmentType(0, b.getF32Type()),
                       value.getSplatValue<APFloat>().convertToDouble());
}

AttentionKernelBuilder::BlockRewrite
AttentionKernelBuilder::startBlockRewrite(Value wgRow, Value m, Value l) {
  // The loop's carried m and l are the warpgroup's (O is the caller's:
  // only the whole step rewrites the P·V).
  BlockRewrite r;
  r.wgRow = wgRow;
  r.l = l;
  ValueRange carried = kvLoop().getRegionIterArgs();
  r.map.map(carried[1], m);
  r.map.map(carried[2], l);
  return r;
}

void AttentionKernelBuilder::takeScores(BlockRewrite &r, Operation *gemm,
                                        Value s, Value kvBlock, Value iter) {
  // S_j is complete (the caller's fat.wgmma_wait returned it): every
  // consumer thread's reads of K_j are done.
  RingReleaseOp::create(b, v.kRing, iter);
  r.block = keyBlock(kvBlock);
  r.map.map(gemm->getResult(0), s);
}

Value AttentionKernelBuilder::buildPackP(Value s) {
  // P rounded to the input type: the A operand of P·V in registers.
  Type elt = inputType();
  return arith::TruncFOp::create(b, fragmentType(cfg.blockN, elt), s);
}

Value AttentionKernelBuilder::buildRescale(Operation *tmpl, Value o,
                                           Value alpha) {
  // O (and with rowsum=mma the l columns beside it) times α, row by row.
  // Under the lazy rescale a warp whose rows all kept their reference skips
  // it (fat.rescale's warp vote). In the overlapped loop with the early P·V
  // wait that branch makes ptxas serialize every wgmma of the kernel
  // (C7513; bisected with ptxas, perf log), so the cost model pairs the
  // lazy rescale there with the late wait (KernelConfig.cpp).
  auto rescale =
      cast<RescaleOp>(moveTileOp(tmpl, {o, alpha}, {o.getType()}));
  rescale.setWarpVote(cfg.schedule.lazyRescale);
  return rescale.getResult();
}
