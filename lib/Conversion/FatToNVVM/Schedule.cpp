//===- Schedule.cpp - fat-tensorize, fat-pipeline and fat.schedule --------===//
//
// The schedule of a Hopper attention kernel is decided on the fat.attention
// op, before any kernel is built, and recorded in its `fat.schedule`
// dictionary:
//
//   fat-tensorize  rowsum = "vector" | "mma", rescale = "always" | "lazy",
//                  rescale_threshold = τ,
//                  exp2_poly = φ ∈ [0, 1]          (FlashAttention-T primitives)
//   fat-pipeline   overlap = true | false, pingpong = true | false,
//                  persistent = true | false, tile_overlap = true | false
//
// convert-fat-to-nvvm builds exactly what the dictionary says (keys it lacks
// come from its own options). The `auto` choices are a cost model fitted to
// the ablation runs of docs/perf-log.md; every choice can be forced.
//
//===----------------------------------------------------------------------===//

#include "fa-t/Conversion/FatToNVVM/FatToNVVM.h"

#include "llvm/Support/FormatVariadic.h"

namespace mlir {
namespace fat {
#define GEN_PASS_DEF_FATTENSORIZE
#define GEN_PASS_DEF_FATPIPELINE
#include "fa-t/Conversion/FatToNVVM/Passes.h.inc"
} // namespace fat
} // namespace mlir

using namespace mlir;
using namespace mlir::fat;

/// Head dims, mask and tuned key length of `op` as the cost model sees
/// them (`seqLenOption`: the passes' seq-len, see getTunedSeqLen). None for
/// head dims the kernel does not serve (convert-fat-to-nvvm says so; the
/// model has nothing to choose).
static bool isWindowed(AttentionOp op) {
  return op.getWindowLeft() >= 0 || op.getWindowRight() >= 0;
}

static std::optional<TileProblem> getTileProblem(AttentionOp op,
                                                 int64_t seqLenOption) {
  auto q = cast<ShapedType>(op.getQuery().getType());
  auto v = cast<ShapedType>(op.getValue().getType());
  unsigned feat = op.getPhysicalDim(AttentionOp::kFeatureDim);
  int64_t d = q.getDimSize(feat), dv = v.getDimSize(feat);
  if (!isSupportedHeadDim(d) || !isSupportedHeadDim(dv))
    return std::nullopt;
  return TileProblem{d, dv, op.getCausal(), isWindowed(op),
                     getTunedSeqLen(op, seqLenOption)};
}

/// Whether the kernel still fits in shared memory with the ones chunks.
static bool onesChunksFit(const TileProblem &problem,
                          const HopperKernelOptions &t) {
  AttentionKernelConfig cfg;
  cfg.headDim = problem.headDim;
  cfg.headDimV = problem.headDimV;
  cfg.schedule.rowsumMma = true;
  cfg.blockM = t.blockM ? t.blockM : defaultBlockM(problem, cfg.schedule);
  if (!isSupportedBlocking(cfg.blockM, t.blockN, t.stages))
    return false;
  cfg.stages = t.stages;
  cfg.blockN = t.blockN ? t.blockN : defaultBlockN(problem, cfg.schedule);
  return cfg.dynamicSmemBytes() <= kMaxSharedMemoryPerBlock;
}

StringRef mlir::fat::rowsumName(bool mma) { return mma ? "mma" : "vector"; }

std::optional<bool> mlir::fat::parseRowsumMma(StringRef word) {
  if (word == "mma" || word == "vector")
    return word == "mma";
  return std::nullopt;
}

StringRef mlir::fat::rescaleName(bool lazy) {
  return lazy ? "lazy" : "always";
}

std::optional<bool> mlir::fat::parseLazyRescale(StringRef word) {
  if (word == "lazy" || word == "always")
    return word == "lazy";
  return std::nullopt;
}

TensorizationChoice
mlir::fat::chooseTensorization(AttentionOp op,
                               const HopperKernelOptions &target) {
  TensorizationChoice choice;
  std::optional<TileProblem> shape = getTileProblem(op, target.seqLen);
  if (!shape)
    return choice;
  // Row sums on the tensor cores pay where every block is full and the P·V
  // is narrow enough for 8 more columns: no mask, D, Dv ≤ 64. Measured
  // round-robin (perf log run 10): +3…5% at D = 64, +1…2.5% at D = 128
  // (S = 512…16k); with a causal mask the diagonal blocks make it a loss
  // (−1…4%), and Dv = 256 has no room (N = Dv + 8 > 256). At D = 128 the
  // persistent kernel's 176-key blocks, which leave no room for the ones
  // chunks, measured faster still (+1…6% over the row sums, run 17).
  // The ones chunks (block-n × 128 B per stage) must fit too: D = 128 with
  // three 128-key stages does not. And the tensor cores sum P after its
  // rounding to bf16/f16: O is unaffected (numerator and denominator use the
  // same rounded P), but l, hence the LSE, then carries that rounding
  // (|ΔLSE| up to ~2^-9 on short rows instead of f32 level), so kernels
  // that output the LSE — for merges and backward passes — keep the vector
  // sum.
  // Under a causal mask with ping-pong (the pipeline's own choice, which
  // this pass predicts with the same cost model: D = 64 below 4k keys) the
  // row sums pay again: +7% / +3% / +2% at S = 512 / 1k / 2k, equal at 4k
  // (perf log run 30) — the turns hide the ones columns' extra MMA work
  // behind the other warpgroup's softmax, and the diagonal block's
  // masking no longer sits on the critical path. Windows keep the vector
  // sum (not measured).
  // The same holds for the causal 192-row kernel with tile overlap (the
  // pipeline's choice from 4k keys at D = 64): +7…9% at 4k…16k over the
  // previous defaults (runs 40–41: the two-warpgroup kernel with turns at
  // 4k, the 192-row kernel with vector sums and no tile overlap above).
  PipelineChoice pipeline = choosePipeline(op, target.blockM, target.seqLen);
  bool causalHidden = shape->causal && !shape->windowed &&
                      (pipeline.pingpong || pipeline.tileOverlap);
  choice.rowsumMma = shape->maxHeadDim() <= 64 &&
                     (!shape->masked() || causalHidden) && !op.getLse() &&
                     onesChunksFit(*shape, target);
  // The lazy rescale (O ← α·O only in warps where a row's maximum grew by
  // more than τ) where it pays with the late P·V wait it needs
  // (AttentionKernelConfig::lazyRescalePays, autoLatePVWait): with ptxas's
  // early wait its branch serializes the overlapped wgmmas (C7513, −21%,
  // perf log run 7; −20…30% at D = 128 with 128-key blocks in run 55).
  // The key-block width does not matter: where the lazy rescale pays, the
  // wait is late at any width.
  {
    AttentionKernelConfig late;
    late.headDimV = shape->headDimV;
    late.causal = shape->causal;
    late.schedule.overlap = pipeline.overlap;
    choice.lazyRescale = late.lazyRescalePays() && late.autoLatePVWait();
  }
  // The FMA-pipe exponentials stay off: the FMA/ALU pipe, not MUFU, is the
  // busier one in this kernel (perf log run 14: φ = 1/8 gains ≤ 4% at D = 64
  // without a mask, below the row sums on the tensor cores there, and loses
  // 1…3% elsewhere; φ ≥ 1/4 loses 2…21% everywhere). Re-measured on the
  // three-warpgroup D = 64 kernels, whose MUFU work about equals their
  // tensor work (run 60): φ = 1/16, 1/8, 3/16, 1/4 lose 1.7, 3.6, 6.3,
  // 10.2% — the polynomial's 9 instructions lengthen each warpgroup's
  // softmax chain, which binds, while MUFU's throughput does not.
  choice.exp2Poly = 0.0;
  return choice;
}

/// Tile overlap: a persistent CTA issues a tile's last P·V with its next
/// tile's first Q·Kᵀ and stores the tile's O under that block's softmax.
/// Measured (perf log runs 34–35, against the same kernels without it):
/// without ping-pong turns the tensor cores otherwise idle through every
/// tile's last P·V, O store and first softmax — +8% at S = 512 / 1k, +2%
/// from 2k for D = 64 without a mask (192 rows, three warpgroups); with
/// turns the other warpgroup's GEMMs already fill that gap and the longer
/// first turn costs 1…3% (D = 128, causal D = 64 with turns). The causal
/// 192-row kernel (D = 64 from 4k keys) gains +5% at 4k…16k with it (run
/// 37, tensor-core row sums: 416 / 456 / 475 → 436 / 481 / 502 TFLOP/s;
/// as the default +7…9%, runs 40–41);
/// its masked blocks then compare with per-row limits, the form that fits
/// its registers (AttentionKernelConfig::maskByRowLimits). Windows get
/// persistent CTAs only when forced and were not measured with it.
static bool autoTileOverlap(const PipelineChoice &choice, AttentionOp op) {
  return choice.persistent && choice.overlap && !choice.pingpong &&
         !isWindowed(op);
}

PipelineChoice mlir::fat::choosePipeline(AttentionOp op, int64_t blockM,
                                         int64_t seqLen) {
  PipelineChoice choice;
  choice.overlap = true; // +5.5% over the grid (perf log run 5)
  std::optional<TileProblem> shape = getTileProblem(op, seqLen);
  // Persistent CTAs: the next tile's Q load and first Q·Kᵀ overlap this
  // tile's last P·V and O store, which a one-CTA-per-tile grid exposes once
  // per tile. Measured (perf log runs 15–19): without a mask +12…26% at
  // S = 512, +6…16% at 1k, ±3% from 4k at D ≤ 128 (where D = 128 also takes
  // 176-key blocks, defaultBlockN) and +2…5% at every S at D = 256; with
  // the causal mask (work units = pairs of query blocks) +18…31% at S = 512
  // and up to +11% at D = 256, −2…4% at D = 128 from 8k. Not measured with
  // windows, whose tiles the pairs would not balance: off there.
  choice.persistent = shape && !shape->windowed;
  // Ping-pong with persistent CTAs: one warpgroup's softmax, epilogue and
  // next-tile start overlap the other's GEMMs. Measured (run 20, against
  // the persistent kernel without it): D = 128 +2…5% without a mask and
  // +1…5% causal, D = 64 causal +1.5…2.5%; at D = 64 without a mask it
  // ties with the tensor-core row sums chosen there (and without persistent
  // CTAs it did not combine with them, −2…5%, run 10), so the simpler
  // schedule stays; at D = 256 it is ±3% and costs the consumers a spill.
  // The automatic turns are for two consumer warpgroups (block-m = 128):
  // where the automatic block-m takes three (defaultBlockM: D = 64 without
  // a mask, or causal and tuned for 4k keys or more) turns round the three
  // measured +0…1% (run 45), so there is none.
  int64_t d = shape ? shape->maxHeadDim() : 0;
  if (blockM == 0 && shape)
    blockM = defaultBlockM(*shape, KernelSchedule());
  choice.pingpong = choice.persistent && blockM == 128 && d <= 128 &&
                    (shape->masked() || d > 64);
  choice.tileOverlap = autoTileOverlap(choice, op);
  return choice;
}

/// Merges `entries` into the op's `fat.schedule` dictionary; `forced`
/// accumulates (either pass forcing a choice makes the schedule forced).
static void updateSchedule(AttentionOp op, ArrayRef<NamedAttribute> entries,
                           bool forced) {
  NamedAttrList attrs;
  if (auto old = op->getAttrOfType<DictionaryAttr>(kScheduleAttrName))
    attrs.append(old.getValue());
  if (auto before = dyn_cast_or_null<BoolAttr>(attrs.get("forced")))
    forced |= before.getValue();
  for (const NamedAttribute &e : entries)
    attrs.set(e.getName(), e.getValue());
  attrs.set("forced", BoolAttr::get(op.getContext(), forced));
  op->setAttr(kScheduleAttrName, attrs.getDictionary(op.getContext()));
}

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

/// Parses `auto` (nullopt) or a fraction in [0, 1].
static FailureOr<std::optional<double>> parseFraction(StringRef value) {
  if (value == "auto")
    return std::optional<double>();
  double fraction;
  if (value.getAsDouble(fraction) || !(fraction >= 0.0 && fraction <= 1.0))
    return failure();
  return std::optional<double>(fraction);
}

/// The fat.attention ops of a pass's scope that will become host calls.
static SmallVector<AttentionOp> hostAttentionOps(Operation *root) {
  SmallVector<AttentionOp> ops;
  root->walk([&](AttentionOp op) {
    if (!op->getParentOfType<gpu::GPUModuleOp>())
      ops.push_back(op);
  });
  return ops;
}

namespace {
struct FatTensorizePass
    : public fat::impl::FatTensorizeBase<FatTensorizePass> {
  using Base::Base;
  void runOnOperation() override {
    Operation *root = getOperation();
    std::optional<bool> forceRowsumMma = parseRowsumMma(rowsum);
    std::optional<bool> forceLazyRescale = parseLazyRescale(rescale);
    if (rowsum != "auto" && !forceRowsumMma) {
      root->emitError() << "fat-tensorize: rowsum must be auto, vector or "
                           "mma, got '"
                        << rowsum << "'";
      return signalPassFailure();
    }
    if (rescale != "auto" && !forceLazyRescale) {
      root->emitError() << "fat-tensorize: rescale must be auto, always or "
                           "lazy, got '"
                        << rescale << "'";
      return signalPassFailure();
    }
    if (!(rescaleThreshold >= 0.0 && rescaleThreshold <= 16.0)) {
      root->emitError() << "fat-tensorize: rescale-threshold must be in "
                           "[0, 16] (log2 units), got "
                        << llvm::formatv("{0}", rescaleThreshold).str();
      return signalPassFailure();
    }
    FailureOr<std::optional<double>> forceExp2Poly = parseFraction(exp2Poly);
    if (failed(forceExp2Poly)) {
      root->emitError() << "fat-tensorize: exp2-poly must be auto or a "
                           "fraction in [0, 1], got '"
                        << exp2Poly << "'";
      return signalPassFailure();
    }
    HopperKernelOptions target;
    target.blockM = blockM;
    target.blockN = blockN;
    target.stages = stages;
    target.seqLen = seqLen;
    Builder b(&getContext());
    for (AttentionOp op : hostAttentionOps(root)) {
      TensorizationChoice choice = chooseTensorization(op, target);
      if (forceRowsumMma)
        choice.rowsumMma = *forceRowsumMma;
      if (forceLazyRescale)
        choice.lazyRescale = *forceLazyRescale;
      if (*forceExp2Poly)
        choice.exp2Poly = **forceExp2Poly;
      updateSchedule(
          op, {b.getNamedAttr("rowsum",
                              b.getStringAttr(rowsumName(choice.rowsumMma))),
               b.getNamedAttr("rescale",
                              b.getStringAttr(rescaleName(choice.lazyRescale))),
               b.getNamedAttr("rescale_threshold",
                              b.getF64FloatAttr(rescaleThreshold)),
               b.getNamedAttr("exp2_poly", b.getF64FloatAttr(choice.exp2Poly))},
          /*forced=*/forceRowsumMma || forceLazyRescale || *forceExp2Poly);
    }
  }
};

struct FatPipelinePass : public fat::impl::FatPipelineBase<FatPipelinePass> {
  using Base::Base;
  void runOnOperation() override {
    Operation *root = getOperation();
    FailureOr<std::optional<bool>> forceOverlap = parseTriState(overlap);
    FailureOr<std::optional<bool>> forcePingpong = parseTriState(pingpong);
    FailureOr<std::optional<bool>> forcePersistent = parseTriState(persistent);
    FailureOr<std::optional<bool>> forceTileOverlap = parseTriState(tileOverlap);
    if (failed(forceOverlap) || failed(forcePingpong) ||
        failed(forcePersistent) || failed(forceTileOverlap)) {
      root->emitError() << "fat-pipeline: overlap, pingpong, persistent and "
                           "tile-overlap must be auto, on or off, got overlap='"
                        << overlap << "' pingpong='" << pingpong
                        << "' persistent='" << persistent
                        << "' tile-overlap='" << tileOverlap << "'";
      return signalPassFailure();
    }
    Builder b(&getContext());
    for (AttentionOp op : hostAttentionOps(root)) {
      PipelineChoice choice = choosePipeline(op, blockM, seqLen);
      if (*forceOverlap)
        choice.overlap = **forceOverlap;
      if (*forcePingpong)
        choice.pingpong = **forcePingpong;
      if (*forcePersistent)
        choice.persistent = **forcePersistent;
      // Ping-pong turns are the overlapped schedule's issue phases: a
      // forced overlap=off turns the automatic ping-pong off with it; and
      // the automatic ping-pong was measured with persistent CTAs only.
      if ((!choice.overlap || !choice.persistent) && !*forcePingpong)
        choice.pingpong = false;
      // Tile overlap follows the forced choices above unless forced itself
      // (convert-fat-to-nvvm refuses it without persistent CTAs and
      // overlap).
      choice.tileOverlap = *forceTileOverlap ? **forceTileOverlap
                                             : autoTileOverlap(choice, op);
      updateSchedule(op, {b.getNamedAttr("overlap",
                                         b.getBoolAttr(choice.overlap)),
                          b.getNamedAttr("pingpong",
                                         b.getBoolAttr(choice.pingpong)),
                          b.getNamedAttr("persistent",
                                         b.getBoolAttr(choice.persistent)),
                          b.getNamedAttr("tile_overlap",
                                         b.getBoolAttr(choice.tileOverlap))},
                     /*forced=*/forceOverlap->has_value() ||
                         forcePingpong->has_value() ||
                         forcePersistent->has_value() ||
                         forceTileOverlap->has_value());
    }
  }
};
} // namespace

LogicalResult mlir::fat::applyScheduleAttr(AttentionOp op,
                                           KernelSchedule &schedule,
                                           bool *forced) {
  auto dict = op->getAttrOfType<DictionaryAttr>(kScheduleAttrName);
  if (!dict) {
    if (op->hasAttr(kScheduleAttrName))
      return op.emitOpError("'") << kScheduleAttrName
                                 << "' must be a dictionary";
    return success();
  }
  for (NamedAttribute entry : dict) {
    StringRef key = entry.getName().getValue();
    Attribute value = entry.getValue();
    auto expect = [&](StringRef what) {
      return op.emitOpError("'") << kScheduleAttrName << "' entry '" << key
                                 << "' must be " << what << ", got " << value;
    };
    if (key == "forced") {
      auto flag = dyn_cast<BoolAttr>(value);
      if (!flag)
        return expect("a bool");
      if (forced)
        *forced = flag.getValue();
    } else if (key == "overlap" || key == "pingpong" || key == "persistent" ||
               key == "tile_overlap") {
      auto flag = dyn_cast<BoolAttr>(value);
      if (!flag)
        return expect("a bool");
      (key == "overlap"      ? schedule.overlap
       : key == "pingpong"   ? schedule.pingpong
       : key == "persistent" ? schedule.persistent
                             : schedule.tileOverlap) = flag.getValue();
    } else if (key == "rowsum") {
      auto s = dyn_cast<StringAttr>(value);
      std::optional<bool> mma = s ? parseRowsumMma(s.getValue()) : std::nullopt;
      if (!mma)
        return expect("\"vector\" or \"mma\"");
      schedule.rowsumMma = *mma;
    } else if (key == "rescale") {
      auto s = dyn_cast<StringAttr>(value);
      std::optional<bool> lazy =
          s ? parseLazyRescale(s.getValue()) : std::nullopt;
      if (!lazy)
        return expect("\"always\" or \"lazy\"");
      schedule.lazyRescale = *lazy;
    } else if (key == "rescale_threshold") {
      auto f = dyn_cast<FloatAttr>(value);
      if (!f)
        return expect("a float");
      schedule.rescaleThreshold = f.getValueAsDouble();
    } else if (key == "exp2_poly") {
      auto f = dyn_cast<FloatAttr>(value);
      if (!f || !(f.getValueAsDouble() >= 0.0 && f.getValueAsDouble() <= 1.0))
        return expect("a float in [0, 1]");
      schedule.exp2Poly = f.getValueAsDouble();
    } else {
      return op.emitOpError("'")
             << kScheduleAttrName << "' has unknown entry '" << key
             << "'; known: overlap, pingpong, rowsum, rescale, "
                "rescale_threshold, exp2_poly, persistent, tile_overlap, "
                "forced";
    }
  }
  return success();
}
