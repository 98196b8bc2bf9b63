//===- Pipeline.cpp - fat-pipeline ----------------------------------------===//
//
// `--fat-pipeline`: the asynchronous schedule of the Hopper kernel, recorded
// in the tensorized loop's `fat.schedule` (then on its fat.launch):
//
//   overlap       softmax_j under P_{j−1}·V_{j−1} inside a warpgroup
//   pingpong      consumer warpgroups issue their GEMMs in turns (named
//                 barriers), one's softmax under the other's GEMMs
//   persistent    one CTA per SM looping over work units (pairs of query
//                 blocks under a causal mask, balanced longest-with-shortest)
//   tile_overlap  a tile's last P·V issued with the next tile's first Q·Kᵀ
//   tile_scheduler  static (CTA c takes units c, c + G, …) or dynamic
//                 (persistent CTAs take units from a counter in global
//                 memory, in the one-CTA-per-tile grid's order)
//
// choosePipeline (Hopper/CostModel.cpp) is the cost model; every choice can
// be forced with the pass's options for ablation. The pass then builds the
// kernel (Hopper/Kernel/AttentionKernel*.cpp) in the pipelined form and
// puts its fat.launch in the loop's place.
//
//===----------------------------------------------------------------------===//

#include "TiledAttention.h"
#include "fa-t/Dialect/Fat/Hopper/AttentionKernel.h"
#include "fa-t/Dialect/Fat/Transforms/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Analysis/TopologicalSortUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/RegionUtils.h"

namespace mlir {
namespace fat {
#define GEN_PASS_DEF_FATPIPELINE
#include "fa-t/Dialect/Fat/Transforms/Passes.h.inc"
} // namespace fat
} // namespace mlir

using namespace mlir;
using namespace mlir::fat;

/// Parses an auto/on/off option (also true/false, 1/0).
static FailureOr<std::optional<bool>> parseTriState(StringRef value) {
  if (value == "auto")
    return std::optional<bool>();
  if (value == "on" || value == "true" || value == "1")
    return std::optional<bool>(true);
  if (value == "off" || value == "false" || value == "0")
    return std::optional<bool>(false);
  return failure();
}

/// An option naming one of two choices or `auto`: sets `choice` to true for
/// `yes`, false for `no` and leaves it unset for `auto`; anything else is
/// an error naming the option and its three words.
static LogicalResult parseAutoChoice(ModuleOp top, StringRef option,
                                     StringRef value, StringRef yes,
                                     StringRef no,
                                     std::optional<bool> &choice) {
  if (value == yes || value == no) {
    choice = value == yes;
    return success();
  }
  if (value == "auto")
    return success();
  return top.emitError() << "fat-pipeline: " << option << " must be 'auto', '"
                         << yes << "' or '" << no << "', got '" << value
                         << "'";
}

/// What the kernel was built with, as fat.schedule entries: the kernel may
/// drop a choice that does not fit (KernelConfig.cpp), and takes decisions
/// of its own (tiles, Q buffers, O store, P·V wait); the IR says what it
/// runs.
static SmallVector<NamedAttribute>
builtSchedule(Builder &b, const AttentionKernelConfig &config) {
  const KernelSchedule &s = config.schedule;
  return {
      b.getNamedAttr("block_m", b.getI64IntegerAttr(config.blockM)),
      b.getNamedAttr("block_n", b.getI64IntegerAttr(config.blockN)),
      b.getNamedAttr("stages", b.getI64IntegerAttr(config.stages)),
      b.getNamedAttr("q_buffers", b.getI64IntegerAttr(config.qBuffers)),
      b.getNamedAttr("o_store",
                     b.getStringAttr(config.stageO ? "staged" : "direct")),
      b.getNamedAttr("pv_wait",
                     b.getStringAttr(config.latePVWait ? "late" : "early")),
      b.getNamedAttr("tail_split", b.getBoolAttr(config.splitMaskedTail)),
      b.getNamedAttr("mask_form",
                     b.getStringAttr(maskFormName(config.maskByRowLimits))),
      b.getNamedAttr("overlap", b.getBoolAttr(s.overlap)),
      b.getNamedAttr("pingpong", b.getBoolAttr(s.pingpong)),
      b.getNamedAttr("persistent", b.getBoolAttr(s.persistent)),
      b.getNamedAttr("tile_overlap", b.getBoolAttr(s.tileOverlap)),
      b.getNamedAttr("tile_scheduler",
                     b.getStringAttr(tileSchedulerName(s.dynamicTiles))),
      b.getNamedAttr("rowsum", b.getStringAttr(rowsumName(s.rowsumMma))),
      b.getNamedAttr("rescale", b.getStringAttr(rescaleName(s.lazyRescale))),
      b.getNamedAttr("rescale_threshold",
                     b.getF64FloatAttr(s.rescaleThreshold)),
      b.getNamedAttr("exp2_poly", b.getF64FloatAttr(s.exp2Poly)),
      b.getNamedAttr("row_max", b.getStringAttr(rowMaxName(s.boundMax)))};
}

namespace {

/// One attention as fat-tile and fat-tensorize left it: the scf.forall
/// over (b, h, query block) and what the kernel reads off it.
struct TensorizedAttention {
  /// The whole tensors the tiles are slices of, and the destinations.
  Value query, key, value, output, lse;
  /// δ + s0, the key aligned with a tile's first query row (none without
  /// a causal or window mask).
  Value tileDiagonal;
  FloatAttr scale;
  AttentionSignature sig;
  /// The tiles' rows and keys; stages and seq_len of fat.tile.
  int64_t blockM = 0, blockN = 0, stages = 2, seqLen = 0;
  /// The modifications of each block's scores (one of the KV loops'; they
  /// are the same in each).
  ScoreModOp scoreMod;
  MaskModOp maskMod;
  /// linear-bias=mma: the score region's bias as Q·Kᵀ's extra columns.
  BiasQueryColumnsOp biasQuery;
  /// relative-bias=accumulator: the tensorized loop's fat.score_band (the
  /// score region's term as Q·Kᵀ's accumulator; no score region then).
  ScoreBandOp scoreBand;
  /// linear-bias=weights: the tensorized loop's fat.key_weights (the
  /// block's offset in the softmax, the weights on P; no score region then).
  KeyWeightsOp keyWeights;
  /// The online softmax's ops and O's rescale (one KV loop's), which the
  /// consumer moves onto its tiles.
  SoftmaxMaxOp softmaxMax;
  SoftmaxExpOp softmaxExp;
  RescaleOp rescale;
  /// S = Q·Kᵀ and O += P·V, which the consumer issues on shared memory.
  WgmmaOp scoreGemm, outputGemm;
  /// The KV loop of those ops, whose body the consumer rewrites.
  scf::ForOp kvLoop;
  /// The softmax constant after a score region (the f32 constant of its
  /// fat.softmax_max): log2 e times any output factor moved out of it.
  double modSoftmaxScale = M_LOG2E;
  /// The values their regions read, in order: the kernel's `capture<i>`.
  SetVector<Value> captures;
  /// The primitives the tensorized ops compute.
  bool rowsumMma = false, lazyRescale = false;
  /// The softmax reference is a constant (row-max=bound): no
  /// fat.softmax_max, no rescale of O.
  bool boundMax = false;
  double rescaleThreshold = 8.0, exp2Poly = 0.0;
};

/// The tensor outside `loop` that `v` slices (through extract_slice, the
/// zero padding of ragged tails and the ones columns' concat), with the
/// outermost slice; null where `v` is something else.
std::pair<Value, tensor::ExtractSliceOp> wholeTensor(scf::ForallOp loop,
                                                     Value v) {
  tensor::ExtractSliceOp outermost;
  while (Operation *def = v.getDefiningOp()) {
    if (!loop->isProperAncestor(def))
      return {v, outermost};
    if (auto slice = dyn_cast<tensor::ExtractSliceOp>(def)) {
      outermost = slice;
      v = slice.getSource();
    } else if (auto pad = dyn_cast<tensor::PadOp>(def)) {
      v = pad.getSource();
    } else if (auto concat = dyn_cast<tensor::ConcatOp>(def)) {
      v = concat.getInputs().front();
    } else {
      return {};
    }
  }
  if (loop->isAncestor(cast<BlockArgument>(v).getOwner()->getParentOp()))
    return {};
  return {v, outermost};
}

/// Whether `op` of a tensorized KV loop only addresses the loop's tiles:
/// index arithmetic, the slices, padding and ones columns of the operands,
/// and the [O | l] accumulator's assembly. In the kernel the rings address
/// the blocks and the accumulator tile holds both, so these have no form
/// of their own there.
static bool isTileAddressing(Operation *op) {
  if (isa<tensor::ExtractSliceOp, tensor::PadOp, tensor::ConcatOp,
          tensor::EmptyOp, linalg::BroadcastOp, arith::ConstantOp>(op))
    return true;
  return op->getNumResults() > 0 &&
         llvm::all_of(op->getResultTypes(),
                      [](Type t) { return t.isIndex(); }) &&
         isPure(op);
}

/// Checks that every op of the tensorized KV loop `loop` has a form in the
/// consumer warpgroup (the ops the kernel rewrites onto its fragment tiles,
/// AttentionKernelConsumer.cpp), so that none is dropped on the way.
static LogicalResult checkConsumerForms(scf::ForOp loop) {
  bool afterMax = false;
  for (Operation &op : loop.getBody()->without_terminator()) {
    // The consumer modifies and masks the scores before the softmax reads
    // them (a later one would differ from what the CPU oracle runs).
    if (isa<ScoreModOp, MaskModOp, MaskOp>(op) && afterMax)
      return op.emitOpError("fat-pipeline: expected the score and mask "
                            "modifications and the mask before "
                            "fat.softmax_max in the tensorized KV loop");
    afterMax |= isa<SoftmaxMaxOp>(op);
    if (isa<WgmmaOp, ScoreModOp, MaskModOp, MaskOp, SoftmaxMaxOp, SoftmaxExpOp,
            RescaleOp, arith::TruncFOp, BiasQueryColumnsOp, BiasKeyColumnsOp,
            ScoreBandOp, KeyWeightsOp, arith::MulFOp>(op) ||
        isTileAddressing(&op))
      continue;
    return op.emitOpError("fat-pipeline: the Hopper consumer has no form for "
                          "this op in the tensorized KV loop (expected the "
                          "fat.wgmma, fat.score_mod, fat.mask_mod, fat.mask, "
                          "fat.softmax_max, fat.softmax_exp, fat.rescale, "
                          "P's arith.truncf and fat.key_weights with P's "
                          "arith.mulf that fat-tensorize writes)");
  }
  return success();
}

/// Reads the attention off a tensorized loop; emits an error naming what
/// is missing and fails where the loop is not one fat-tensorize wrote.
FailureOr<TensorizedAttention> readTensorizedAttention(scf::ForallOp loop) {
  TensorizedAttention t;
  auto fail = [&](const Twine &what) {
    return loop.emitOpError("fat-pipeline: ") << what;
  };
  auto tile = loop->getAttrOfType<DictionaryAttr>(kTileAttrName);
  if (!tile || loop.getRank() != 3)
    return fail("expected fat-tile's loop: three indices (b, h, query block) "
                "and a fat.tile dictionary");
  // The blocks are the tiles' own shapes (below); the record gives what
  // they were fitted to.
  TiledAttentionFacts facts = readTiledAttentionFacts(loop);
  t.stages = facts.stages;
  t.seqLen = facts.seqLen;
  t.sig.causal = facts.causal;
  if (facts.window)
    std::tie(t.sig.windowLeft, t.sig.windowRight) = *facts.window;
  t.tileDiagonal = facts.diagonal;
  WgmmaOp qk, pv;
  WalkResult walk = loop.walk([&](Operation *op) {
    if (isa<QKOp, PVOp>(op)) {
      op->emitError("fat-pipeline: the tiled form is not tensorized yet: run "
                    "--fat-tensorize first");
      return WalkResult::interrupt();
    }
    if (auto mma = dyn_cast<WgmmaOp>(op)) {
      (mma.getTransposeB() ? qk : pv) = mma;
    } else if (auto max = dyn_cast<SoftmaxMaxOp>(op)) {
      t.softmaxMax = max;
      if (std::optional<APFloat> tau = max.getThreshold()) {
        t.lazyRescale = true;
        t.rescaleThreshold = tau->convertToDouble();
      }
    } else if (auto exp = dyn_cast<SoftmaxExpOp>(op)) {
      t.softmaxExp = exp;
      // fat.softmax_max, where there is one, carries the same constant.
      FloatAttr c;
      if (matchPattern(exp.getScale(), m_Constant(&c)))
        t.modSoftmaxScale = c.getValueAsDouble();
      t.exp2Poly = exp.getExp2Poly().convertToDouble();
    } else if (auto rescale = dyn_cast<RescaleOp>(op);
               rescale && cast<ShapedType>(rescale.getType()).getRank() == 2) {
      t.rescale = rescale;
    } else if (auto fin = dyn_cast<FinalizeOp>(op)) {
      t.scale = fin.getScaleAttr();
    } else if (auto mod = dyn_cast<ScoreModOp>(op)) {
      t.scoreMod = mod;
      t.captures.insert(mod.getCaptures().begin(), mod.getCaptures().end());
    } else if (auto mod = dyn_cast<MaskModOp>(op)) {
      t.maskMod = mod;
      t.captures.insert(mod.getCaptures().begin(), mod.getCaptures().end());
    } else if (auto query = dyn_cast<BiasQueryColumnsOp>(op)) {
      t.biasQuery = query;
      t.captures.insert(query.getCaptures().begin(), query.getCaptures().end());
    } else if (auto band = dyn_cast<ScoreBandOp>(op)) {
      t.scoreBand = band;
      t.captures.insert(band.getCaptures().begin(), band.getCaptures().end());
    } else if (auto weights = dyn_cast<KeyWeightsOp>(op)) {
      t.keyWeights = weights;
      t.captures.insert(weights.getCaptures().begin(),
                        weights.getCaptures().end());
    }
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  // After a score region the kernel's scale is the region's input scale
  // (fat.finalize's is the LSE's factor on m) and its softmax constant is
  // the tensorized op's, a compile-time constant.
  double outputScale = 1.0;
  if (t.scoreMod && t.modSoftmaxScale != double(float(M_LOG2E)))
    outputScale = t.modSoftmaxScale / M_LOG2E;
  // The bias columns' region names the kernel where it replaced the score
  // region (a kernel of its own beside the vector form's).
  Region *scoreBody = t.scoreMod     ? &t.scoreMod.getBody()
                      : t.biasQuery  ? &t.biasQuery.getBody()
                      : t.scoreBand  ? &t.scoreBand.getBody()
                      : t.keyWeights ? &t.keyWeights.getBody()
                                     : nullptr;
  t.sig.modifications = modificationKey(
      scoreBody, t.maskMod ? &t.maskMod.getBody() : nullptr, outputScale);
  t.sig.positionalRegions = facts.positional;
  t.sig.positionalMask = facts.positionalMask;
  t.sig.dataBlocks = facts.dataBlocks;
  // Both regions see the attention's captures, in its order: the kernel's
  // parameters capture<i>.
  for (Operation *mod : {t.scoreMod.getOperation(), t.maskMod.getOperation(),
                         t.biasQuery.getOperation(), t.scoreBand.getOperation(),
                         t.keyWeights.getOperation()})
    if (mod &&
        !llvm::equal(isa<ScoreModOp>(mod)  ? cast<ScoreModOp>(mod).getCaptures()
                     : isa<MaskModOp>(mod) ? cast<MaskModOp>(mod).getCaptures()
                     : isa<ScoreBandOp>(mod)
                         ? cast<ScoreBandOp>(mod).getCaptures()
                     : isa<KeyWeightsOp>(mod)
                         ? cast<KeyWeightsOp>(mod).getCaptures()
                         : cast<BiasQueryColumnsOp>(mod).getCaptures(),
                     t.captures))
      return fail("expected the score and mask modifications to capture the "
                  "same values in the same order (the attention's captures)");
  for (Value capture : t.captures) {
    if (loop->isAncestor(capture.getParentRegion()->getParentOp()))
      return fail("expected the modifications' captures to be defined "
                  "outside the tiled loop (the kernel takes them whole)");
    t.sig.captureTypes.push_back(capture.getType());
  }
  t.scoreGemm = qk;
  t.outputGemm = pv;
  // row-max=bound: P's reference is a constant, and nothing rescales.
  DenseElementsAttr reference;
  t.boundMax = t.softmaxExp && !t.softmaxMax && !t.rescale &&
               matchPattern(t.softmaxExp.getMax(), m_Constant(&reference)) &&
               reference.isSplat();
  if (!qk || !pv || !t.scale || !t.softmaxExp ||
      (!t.boundMax && (!t.softmaxMax || !t.rescale)))
    return fail("expected the tensorized KV loop of one attention (the Q·Kᵀ "
                "and P·V fat.wgmma, fat.softmax_max, fat.softmax_exp, "
                "fat.rescale of O, fat.finalize) in this fat.tile loop");
  t.kvLoop = qk->getParentOfType<scf::ForOp>();
  if (!t.kvLoop || !t.kvLoop->isAncestor(pv) ||
      (!t.boundMax && (!t.kvLoop->isAncestor(t.softmaxMax) ||
                       !t.kvLoop->isAncestor(t.rescale))) ||
      !t.kvLoop->isAncestor(t.softmaxExp) ||
      t.kvLoop.getNumRegionIterArgs() != 3 ||
      llvm::range_size(t.kvLoop.getBody()->getOps<WgmmaOp>()) != 2)
    return fail("expected the Q·Kᵀ and P·V fat.wgmma (no other), the softmax "
                "and O's rescale in one scf.for over key blocks carrying "
                "(O, m, l)");
  // The consumer packs P where its schedule puts P·V (linear-bias=weights:
  // times the broadcast weights).
  Value pTile = pv.getA();
  if (t.keyWeights) {
    auto weighted = pTile.getDefiningOp<arith::MulFOp>();
    auto broadcast =
        weighted ? weighted.getRhs().getDefiningOp<linalg::BroadcastOp>()
                 : linalg::BroadcastOp();
    if (!broadcast || broadcast.getInput() != t.keyWeights.getWeights() ||
        t.scoreMod || t.biasQuery || t.scoreBand)
      return fail("expected linear-bias=weights' P·V to read P times the "
                  "broadcast fat.key_weights, and no other score term");
    pTile = weighted.getLhs();
  }
  auto round = pTile.getDefiningOp<arith::TruncFOp>();
  if (!round || round->getParentOp() != t.kvLoop)
    return fail("expected P·V's A to be P rounded by arith.truncf in the KV "
                "loop");
  // linear-bias=mma: Q·Kᵀ on [Q | X] and [K | R], the bias columns beside
  // the tiles the producer copies.
  Value qTile = qk.getA(), kTile = qk.getB();
  if (t.biasQuery) {
    auto qCat = qTile.getDefiningOp<tensor::ConcatOp>();
    auto kCat = kTile.getDefiningOp<tensor::ConcatOp>();
    if (!qCat || !kCat || qCat.getInputs().size() != 2 ||
        kCat.getInputs().size() != 2 ||
        qCat.getInputs()[1] != t.biasQuery.getResult() ||
        !kCat.getInputs()[1].getDefiningOp<BiasKeyColumnsOp>() || t.scoreMod)
      return fail("expected linear-bias=mma's Q·Kᵀ on [Q | "
                  "fat.bias_query_columns] and [K | fat.bias_key_columns], "
                  "and no score region beside it");
    qTile = qCat.getInputs()[0];
    kTile = kCat.getInputs()[0];
  }
  // relative-bias=accumulator: Q·Kᵀ accumulates onto the block's terms,
  // which a warp beside the producer computes; nothing else may seed it.
  if (Value acc = qk.getAcc();
      acc && (!t.scoreBand || acc != t.scoreBand.getResult() || t.scoreMod ||
              t.biasQuery))
    return fail("expected Q·Kᵀ to accumulate onto nothing or onto the "
                "block's fat.score_band, with no score region beside it");
  if (t.scoreBand && qk.getAcc() != t.scoreBand.getResult())
    return fail("expected fat.score_band to be Q·Kᵀ's accumulator");
  // The producer copies the operands the loop slices per key block, and
  // Q once per tile.
  if (!t.kvLoop.isDefinedOutsideOfLoop(qTile) ||
      qk.getAFrom() != OperandSource::Smem)
    return fail("expected Q·Kᵀ to read the tile's Q from shared memory, "
                "defined outside the KV loop");
  for (auto kv : loop.getBody()->getOps<scf::ForOp>())
    if (failed(checkConsumerForms(kv)))
      return failure();
  if (t.scoreMod)
    t.scale = t.scoreMod.getScaleAttr();
  // linear-bias=mma: the bias columns carry the attention's scale (their
  // GEMM's scores are unscaled, as without a region).
  FloatAttr biasScale;
  if (t.biasQuery &&
      !matchPattern(t.biasQuery.getScale(), m_Constant(&biasScale)))
    return fail("expected fat.bias_query_columns' scale to be a constant");
  if (t.keyWeights &&
      !matchPattern(t.keyWeights.getScale(), m_Constant(&biasScale)))
    return fail("expected fat.key_weights' scale to be a constant");
  if (biasScale)
    t.scale = biasScale;
  auto scores = cast<ShapedType>(qk.getResult().getType());
  if (scores.getRank() != 2)
    return fail("expected a 2-D score tile");
  t.blockM = scores.getDimSize(0);
  t.blockN = scores.getDimSize(1);
  tensor::ExtractSliceOp qSlice;
  std::tie(t.query, qSlice) = wholeTensor(loop, qTile);
  t.key = wholeTensor(loop, kTile).first;
  t.value = wholeTensor(loop, pv.getB()).first;
  ValueRange outs = loop.getOutputs();
  if (!t.query || !qSlice || !t.key || !t.value || outs.empty() ||
      outs.size() > 2)
    return fail("cannot find the Q, K, V and O tensors the tiles slice");
  t.output = outs[0];
  t.lse = outs.size() == 2 ? outs[1] : Value();
  auto rankIs = [](Value v, int64_t rank) {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    return type && type.getRank() == rank;
  };
  if (!rankIs(t.query, 4) || !rankIs(t.key, 4) || !rankIs(t.value, 4) ||
      !rankIs(t.output, 4) || (t.lse && !rankIs(t.lse, 3)))
    return fail("expected 4-D Q, K, V and O tensors (and a 3-D LSE) around "
                "the tiles");
  // The layout: where the query-block index slices Q.
  Value block = loop.getInductionVar(2);
  auto offsets = qSlice.getMixedOffsets();
  if (offsets.size() != 4)
    return fail("expected Q's tile to slice the 4-D Q");
  if (offsets[2] == OpFoldResult(block))
    t.sig.layout = Layout::BHSD;
  else if (offsets[1] == OpFoldResult(block))
    t.sig.layout = Layout::BSHD;
  else
    return fail("cannot tell the layout (BHSD or BSHD) from Q's slice");
  t.sig.query = cast<ShapedType>(t.query.getType());
  t.sig.key = cast<ShapedType>(t.key.getType());
  t.sig.value = cast<ShapedType>(t.value.getType());
  t.sig.output = cast<ShapedType>(t.output.getType());
  t.sig.lse = static_cast<bool>(t.lse);
  int64_t dv = t.sig.value.getDimSize(t.sig.physicalDim(AttentionOp::kFeatureDim));
  t.rowsumMma = pv.getShape()[1] ==
                dv + TileTensorization::kOnesColumns;
  // The ones columns sum the weighted P that O reads.
  if (t.keyWeights && !t.rowsumMma)
    return fail("expected linear-bias=weights' P·V to sum P's rows on the "
                "tensor cores (rowsum=mma)");
  t.seqLen = t.sig.tunedSeqLen(t.seqLen);
  return t;
}

/// δ for the launch, computed before `loop`: the tile's diagonal δ + s0 at
/// s0 = 0 (and b = h = 0), i.e. its computation cloned with the loop's
/// indices replaced by zero. Fails where that computation is not pure.
FailureOr<Value> launchDiagonal(OpBuilder &b, scf::ForallOp loop,
                                Value tileDiagonal) {
  SetVector<Operation *> slice;
  SmallVector<Value> work = {tileDiagonal};
  while (!work.empty()) {
    Value v = work.pop_back_val();
    Operation *def = v.getDefiningOp();
    if (!def || !loop->isProperAncestor(def) || slice.contains(def))
      continue;
    if (!isPure(def) || def->getNumRegions())
      return loop.emitOpError("fat-pipeline: the mask's diagonal is computed "
                              "by '")
             << def->getName() << "', which has effects";
    slice.insert(def);
    for (Value operand : def->getOperands())
      work.push_back(operand);
  }
  IRMapping map;
  Value zero = arith::ConstantIndexOp::create(b, loop.getLoc(), 0);
  for (Value iv : loop.getInductionVars())
    map.map(iv, zero);
  for (Operation *op : topologicalSort(slice)) {
    for (Value operand : op->getOperands())
      if (auto arg = dyn_cast<BlockArgument>(operand))
        if (arg.getOwner()->getParentOp() == loop && !map.contains(arg))
          return loop.emitOpError("fat-pipeline: the mask's diagonal reads "
                                  "the loop's outputs");
    // Folded as it is cloned: with static lengths δ is a constant.
    Operation *copy = b.clone(*op, map);
    SmallVector<Value> folded;
    if (succeeded(b.tryFold(copy, folded)) && !folded.empty()) {
      map.map(op->getResults(), folded);
      copy->erase();
    }
  }
  Value delta = map.lookupOrDefault(tileDiagonal);
  if (zero.use_empty() && zero != delta)
    zero.getDefiningOp()->erase();
  return delta;
}

struct FatPipelinePass : public fat::impl::FatPipelineBase<FatPipelinePass> {
  using Base::Base;

  void getDependentDialects(DialectRegistry &registry) const override {
    Base::getDependentDialects(registry);
    registerKernelTranslations(registry);
  }

  /// The forced schedule choices (nullopt: `auto`).
  std::optional<bool> forceOverlap, forcePingpong, forcePersistent,
      forceTileOverlap, forceDynamicTiles;
  bool anyForced() const {
    return forceOverlap || forcePingpong || forcePersistent ||
           forceTileOverlap || forceDynamicTiles;
  }

  /// The kernel options of the pass (the schedule comes from the IR).
  FailureOr<HopperKernelOptions> kernelOptions(ModuleOp top) {
    HopperKernelOptions options;
    options.sm = sm;
    options.qBuffers = qBuffers;
    options.ptxVersion = ptxVersion;
    options.numSMs = numSMs;
    if (failed(parseAutoChoice(top, "o-store", oStore, "staged", "direct",
                               options.stageO)) ||
        failed(parseAutoChoice(top, "pv-wait", pvWait, "late", "early",
                               options.latePVWait)) ||
        failed(parseAutoChoice(top, "tail-split", tailSplit, "on", "off",
                               options.splitMaskedTail)) ||
        failed(parseAutoChoice(top, "mask-form", maskForm, maskFormName(true),
                               maskFormName(false), options.maskByRowLimits)))
      return failure();
    return options;
  }

  /// The schedule for `problem` (decidePipeline: forced, else written in
  /// `dict`, else the cost model), recorded in the dictionary of `at`.
  void decideSchedule(Operation *at, const TileProblem &problem,
                      const HopperKernelOptions &onIR, DictionaryAttr dict) {
    PipelineChoice choice =
        decidePipeline(problem, onIR.blockM, onIR.schedule, dict,
                       {forceOverlap, forcePingpong, forcePersistent,
                        forceTileOverlap, forceDynamicTiles});
    Builder b(at->getContext());
    updateSchedule(
        at,
        {b.getNamedAttr("overlap", b.getBoolAttr(choice.overlap)),
         b.getNamedAttr("pingpong", b.getBoolAttr(choice.pingpong)),
         b.getNamedAttr("persistent", b.getBoolAttr(choice.persistent)),
         b.getNamedAttr("tile_overlap", b.getBoolAttr(choice.tileOverlap)),
         b.getNamedAttr("tile_scheduler", b.getStringAttr(tileSchedulerName(
                                              choice.dynamicTiles)))},
        anyForced());
  }

  /// Builds the kernel of `config` (or reuses the one of an earlier
  /// attention of the same configuration) and returns its entry;
  /// `manifests` collects the launch manifests by kernel name.
  FailureOr<SymbolRefAttr> buildKernel(ModuleOp top, Operation *at,
                                       const AttentionKernelConfig &config,
                                       NamedAttrList &manifests) {
    MLIRContext *ctx = &getContext();
    std::string name = config.kernelName();
    if (Operation *existing = SymbolTable::lookupSymbolIn(top, name)) {
      // The kernel of an earlier attention (or run of this pass) is reused;
      // any other symbol of that name would be called as the kernel.
      if (!isa<gpu::GPUModuleOp, gpu::BinaryOp>(existing) ||
          !manifests.get(name)) {
        InFlightDiagnostic diag =
            emitError(at->getLoc(), "'fat.attention' op ")
            << "needs the kernel name '" << name << "', which a '"
            << existing->getName()
            << "' of the module already has: rename that symbol";
        diag.attachNote(existing->getLoc()) << "the symbol is here";
        return failure();
      }
    } else {
      OpBuilder builder(ctx);
      buildAttentionKernelModule(builder, at->getLoc(), top, config);
      manifests.set(name, StringAttr::get(ctx, config.manifestJson()));
    }
    return SymbolRefAttr::get(ctx, name, {FlatSymbolRefAttr::get(ctx, name)});
  }

  /// A tensorized loop (fat-tile, fat-tensorize): its kernel from the
  /// tiles, which it replaces by the fat.launch of that kernel.
  LogicalResult pipelineLoop(ModuleOp top, scf::ForallOp loop,
                             const HopperKernelOptions &passOptions,
                             NamedAttrList &manifests) {
    FailureOr<TensorizedAttention> t = readTensorizedAttention(loop);
    if (failed(t))
      return failure();
    // The tiles are fat-tile's decision, the primitives fat-tensorize's
    // (the ops compute them; its fat.schedule on the loop says whether they
    // were forced).
    HopperKernelOptions options = passOptions;
    options.blockM = t->blockM;
    options.blockN = t->blockN;
    options.stages = t->stages;
    options.seqLen = t->seqLen;
    HopperKernelOptions onLoop = options;
    if (failed(applyScheduleAttr(loop, loop->getAttr(kScheduleAttrName),
                                 onLoop)))
      return failure();
    // A tile overlap written on the loop (by hand: fat.schedule on the
    // attention travels with its tiles) is asked for.
    auto onLoopDict = loop->getAttrOfType<DictionaryAttr>(kScheduleAttrName);
    auto written = onLoopDict ? dyn_cast_or_null<BoolAttr>(
                                    onLoopDict.get("tile_overlap"))
                              : BoolAttr();
    bool tileOverlapAsked = forceTileOverlap.value_or(
        written && written.getValue());
    // Head dims the kernel does not serve have nothing to model; the
    // kernel's configuration names them below.
    decideSchedule(loop,
                   getTileProblem(t->sig, t->seqLen).value_or(TileProblem()),
                   onLoop,
                   loop->getAttrOfType<DictionaryAttr>(kScheduleAttrName));
    // What the ops compute and the tiles are stands over any entry.
    Builder b(&getContext());
    if (t->biasQuery)
      updateSchedule(loop,
                     {b.getNamedAttr("linear_bias", b.getStringAttr("mma"))},
                     /*forced=*/false);
    if (t->scoreBand)
      updateSchedule(
          loop,
          {b.getNamedAttr("relative_bias", b.getStringAttr("accumulator"))},
          /*forced=*/false);
    if (t->keyWeights)
      updateSchedule(
          loop, {b.getNamedAttr("linear_bias", b.getStringAttr("weights"))},
          /*forced=*/false);
    updateSchedule(
        loop,
        {b.getNamedAttr("block_m", b.getI64IntegerAttr(t->blockM)),
         b.getNamedAttr("block_n", b.getI64IntegerAttr(t->blockN)),
         b.getNamedAttr("stages", b.getI64IntegerAttr(t->stages)),
         b.getNamedAttr("rowsum", b.getStringAttr(rowsumName(t->rowsumMma))),
         b.getNamedAttr("rescale",
                        b.getStringAttr(rescaleName(t->lazyRescale))),
         b.getNamedAttr("rescale_threshold",
                        b.getF64FloatAttr(t->rescaleThreshold)),
         b.getNamedAttr("exp2_poly", b.getF64FloatAttr(t->exp2Poly)),
         b.getNamedAttr("row_max", b.getStringAttr(rowMaxName(t->boundMax)))},
        /*forced=*/false);
    FailureOr<AttentionKernelConfig> config = getAttentionKernelConfig(
        loop, t->sig, loop->getAttr(kScheduleAttrName), options);
    if (failed(config))
      return failure();
    // A tile overlap asked for — this pass's option, or a fat.schedule
    // written by hand — that the kernel cannot run is not dropped silently.
    if (!config->tileOverlapDropped.empty() && tileOverlapAsked)
      emitWarning(loop.getLoc(), "'fat.attention' op ")
          << "tile-overlap=on is not built: " << config->tileOverlapDropped
          << "; fat.schedule records tile_overlap = false";
    // The kernel's one override of fat-tensorize: under the early P·V wait
    // the rescale is eager (KernelConfig.cpp; the vote's branch would make
    // ptxas serialize the wgmmas), so the loop's max loses its threshold
    // before it moves (fat.schedule records rescale = "always").
    if (!config->schedule.lazyRescale)
      loop.walk([](SoftmaxMaxOp max) { max.removeThresholdAttr(); });
    config->scoreGemm = t->scoreGemm;
    config->outputGemm = t->outputGemm;
    config->kvLoop = t->kvLoop;
    config->scoreMod = t->scoreMod;
    config->biasQuery = t->biasQuery;
    config->scoreBand = t->scoreBand;
    config->keyWeights = t->keyWeights;
    if (config->scoreBand && config->schedule.dynamicTiles)
      return loop.emitOpError("fat-pipeline: tile-scheduler=dynamic does not "
                              "serve relative-bias=accumulator (its term "
                              "writer walks the tiles of a static order); "
                              "take tile-scheduler=static or "
                              "relative-bias=vector");
    if (config->dynamicSmemBytes() > kMaxSharedMemoryPerBlock)
      return loop.emitOpError("fat-pipeline: relative-bias=accumulator's "
                              "terms (")
             << config->stages * config->bandStageBytes()
             << " bytes) leave the kernel " << config->dynamicSmemBytes()
             << " bytes of shared memory, more than the "
             << kMaxSharedMemoryPerBlock
             << " a block may use; lower block-n or stages, or take "
                "relative-bias=vector";
    config->modSoftmaxScale = t->modSoftmaxScale;
    config->maskMod = t->maskMod;
    if (t->maskMod && t->maskMod.getKvRanges())
      config->kvRanges = *t->maskMod.getKvRanges();
    FailureOr<SymbolRefAttr> kernel =
        buildKernel(top, loop, *config, manifests);
    if (failed(kernel))
      return failure();
    // The score region's leading constant joins the kernel's scale; its
    // arithmetic may contract, its tanh be approximate (bf16).
    SmallVector<Operation *> mods;
    SymbolTable::lookupNearestSymbolFrom(top, *kernel)->walk(
        [&](ScoreModOp mod) { mods.push_back(mod); });
    if (!mods.empty()) {
      RewritePatternSet patterns(&getContext());
      populateScoreInputScalePatterns(patterns);
      if (!config->lse)
        populateScoreRowsAtOriginPatterns(patterns);
      populateModificationFastMathPatterns(patterns,
                                           /*approximateTanh=*/!config->isF16);
      if (failed(applyOpPatternsGreedily(
              mods, std::move(patterns),
              GreedyRewriteConfig().setStrictness(
                  GreedyRewriteStrictness::ExistingOps))))
        return failure();
    }
    OpBuilder builder(loop);
    Value diagonal;
    if (t->tileDiagonal) {
      FailureOr<Value> delta = launchDiagonal(builder, loop, t->tileDiagonal);
      if (failed(delta))
        return failure();
      diagonal = *delta;
    }
    auto launch = LaunchOp::create(
        builder, loop.getLoc(), loop.getResultTypes(), *kernel, t->query,
        t->key, t->value, t->output, t->lse, diagonal,
        t->captures.getArrayRef(), t->scale);
    launch->setAttr(kScheduleAttrName, loop->getAttr(kScheduleAttrName));
    updateSchedule(launch, builtSchedule(b, *config), config->scheduleForced);
    // The loop goes, and with it what only the tiles used (their constants
    // and index arithmetic above the loop).
    SetVector<Value> used;
    getUsedValuesDefinedAbove(loop.getRegion(), used);
    used.insert(loop->getOperands().begin(), loop->getOperands().end());
    loop->replaceAllUsesWith(launch);
    loop->erase();
    SetVector<Operation *> defs;
    for (Value v : used)
      if (Operation *def = v.getDefiningOp())
        defs.insert(def);
    // Users first: an op is erased once, after every op that used it.
    while (!defs.empty()) {
      Operation *def = defs.pop_back_val();
      if (!isOpTriviallyDead(def))
        continue;
      for (Value operand : def->getOperands())
        if (Operation *producer = operand.getDefiningOp())
          defs.insert(producer);
      def->erase();
    }
    return success();
  }

  void runOnOperation() override {
    ModuleOp top = getOperation();
    MLIRContext *ctx = &getContext();
    FailureOr<std::optional<bool>> overlapOpt = parseTriState(overlap);
    FailureOr<std::optional<bool>> pingpongOpt = parseTriState(pingpong);
    FailureOr<std::optional<bool>> persistentOpt = parseTriState(persistent);
    FailureOr<std::optional<bool>> tileOverlapOpt = parseTriState(tileOverlap);
    if (failed(overlapOpt) || failed(pingpongOpt) ||
        failed(persistentOpt) || failed(tileOverlapOpt)) {
      top->emitError() << "fat-pipeline: overlap, pingpong, persistent and "
                          "tile-overlap must be auto, on or off, got overlap='"
                       << overlap << "' pingpong='" << pingpong
                       << "' persistent='" << persistent
                       << "' tile-overlap='" << tileOverlap << "'";
      return signalPassFailure();
    }
    forceOverlap = *overlapOpt;
    forcePingpong = *pingpongOpt;
    forcePersistent = *persistentOpt;
    forceTileOverlap = *tileOverlapOpt;
    if (failed(parseAutoChoice(top, "tile-scheduler", tileScheduler,
                               tileSchedulerName(true),
                               tileSchedulerName(false), forceDynamicTiles)))
      return signalPassFailure();
    FailureOr<HopperKernelOptions> options = kernelOptions(top);
    if (failed(options))
      return signalPassFailure();

    // Each attention becomes a kernel launched from the host; one already
    // inside device code (a gpu.module) could only be a call from a kernel,
    // which nothing lowers (upstream's translation would fail on it later,
    // naming an unrealized cast).
    bool failedAny = false;
    SmallVector<Operation *> hostWork;
    top.walk([&](Operation *op) {
      bool isLoop = isa<scf::ForallOp>(op) && op->hasAttr(kTileAttrName);
      if (!isLoop && !isa<AttentionOp>(op))
        return;
      auto device = op->getParentOfType<gpu::GPUModuleOp>();
      if (!device) {
        hostWork.push_back(op);
        return;
      }
      emitError(op->getLoc(), "'fat.attention' op ")
          << "inside gpu.module '" << device.getName()
          << "' is device code: the Hopper kernel is launched from host "
             "code, call it there";
      failedAny = true;
    });
    if (failedAny)
      return signalPassFailure();

    // The manifests built so far, by kernel name (kept across runs).
    NamedAttrList manifests;
    if (auto existing = top->getAttrOfType<DictionaryAttr>("fat.kernels"))
      manifests.append(existing.getValue());

    for (Operation *work : hostWork) {
      if (auto loop = dyn_cast<scf::ForallOp>(work)) {
        failedAny |= failed(pipelineLoop(top, loop, *options, manifests));
        continue;
      }
      work->emitOpError("is not tiled: fat-pipeline builds the kernel from "
                        "the tensorized loop, run --fat-tile and "
                        "--fat-tensorize first (or --fat-to-ptx)");
      failedAny = true;
    }
    if (failedAny)
      return signalPassFailure();
    if (!manifests.empty()) {
      top->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                   UnitAttr::get(ctx));
      top->setAttr("fat.kernels", manifests.getDictionary(ctx));
    }
  }
};
} // namespace
