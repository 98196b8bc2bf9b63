//===- Schedule.cpp - the fat.schedule dictionary -------------------------===//
//
// The schedule of a Hopper attention kernel is recorded, pass by pass, in
// the `fat.schedule` dictionary of the tiled loop (a schedule written by
// hand on fat.attention travels there with the tiles) and, once the kernel
// is built, of the fat.launch that replaces the loop:
//
//   fat-tensorize  rowsum = "vector" | "mma", rescale = "always" | "lazy",
//                  rescale_threshold = τ,
//                  exp2_poly = φ ∈ [0, 1],
//                  row_max = "online" | "bound",
//                  linear_bias = "vector" | "mma" | "weights",
//                  relative_bias = "vector" | "accumulator"
//                  (FlashAttention-T primitives)
//   fat-pipeline   overlap = true | false, pingpong = true | false,
//                  persistent = true | false, tile_overlap = true | false,
//                  and once it has built the kernel: block_m, block_n,
//                  stages, q_buffers, o_store = "staged" | "direct",
//                  pv_wait = "late" | "early", tail_split = true | false,
//                  mask_form = "rows" | "keys"
//
// fat-pipeline then builds the kernel of the tensorized ops and the
// dictionary and writes back what the kernel runs. The
// `auto` choices are a cost model fitted to the ablation runs of
// docs/perf-log.md; every choice can be forced.
//
// This file has what both passes share: the problem
// the cost models see, merging and reading the dictionary; the passes are
// Transforms/Tensorize.cpp (fat-tensorize) and Transforms/Pipeline.cpp
// (fat-pipeline), their cost models CostModel.cpp.
//
//===----------------------------------------------------------------------===//

#include "fa-t/Dialect/Fat/Hopper/KernelModel.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

using namespace mlir;
using namespace mlir::fat;

TileProblem TileProblem::of(const AttentionSignature &sig,
                            int64_t seqLenOption) {
  unsigned feat = sig.physicalDim(AttentionOp::kFeatureDim);
  TileProblem problem;
  problem.headDim = sig.query.getDimSize(feat);
  problem.headDimV = sig.value.getDimSize(feat);
  problem.causal = sig.causal;
  problem.windowed = sig.windowed();
  problem.seqLen = sig.tunedSeqLen(seqLenOption);
  problem.positional = sig.positionalRegions;
  problem.positionalMask = sig.positionalMask;
  problem.dataBlocks = sig.dataBlocks;
  problem.boundedScores = sig.boundedScores;
  problem.linearBias = sig.linearBias;
  problem.writesLse = sig.lse;
  return problem;
}

std::optional<TileProblem>
mlir::fat::getTileProblem(const AttentionSignature &sig,
                          int64_t seqLenOption) {
  TileProblem problem = TileProblem::of(sig, seqLenOption);
  if (!isSupportedHeadDim(problem.headDim) ||
      !isSupportedHeadDim(problem.headDimV))
    return std::nullopt;
  return problem;
}

std::optional<TileProblem>
mlir::fat::getTileProblem(AttentionOp op, int64_t seqLenOption) {
  return getTileProblem(AttentionSignature::of(op), seqLenOption);
}

std::optional<bool> mlir::fat::parseWord(StringRef word,
                                         function_ref<StringRef(bool)> name) {
  if (word == name(true) || word == name(false))
    return word == name(true);
  return std::nullopt;
}

StringRef mlir::fat::rowsumName(bool mma) { return mma ? "mma" : "vector"; }

std::optional<bool> mlir::fat::parseRowsumMma(StringRef word) {
  return parseWord(word, rowsumName);
}

StringRef mlir::fat::rowMaxName(bool bound) {
  return bound ? "bound" : "online";
}

StringRef mlir::fat::relativeBiasName(bool accumulator) {
  return accumulator ? "accumulator" : "vector";
}

StringRef mlir::fat::tileSchedulerName(bool dynamic) {
  return dynamic ? "dynamic" : "static";
}

std::optional<bool> mlir::fat::parseBoundMax(StringRef word) {
  return parseWord(word, rowMaxName);
}

StringRef mlir::fat::maskFormName(bool rowLimits) {
  return rowLimits ? "rows" : "keys";
}

StringRef mlir::fat::rescaleName(bool lazy) {
  return lazy ? "lazy" : "always";
}

std::optional<bool> mlir::fat::parseLazyRescale(StringRef word) {
  return parseWord(word, rescaleName);
}

void mlir::fat::updateSchedule(Operation *op,
                               ArrayRef<NamedAttribute> entries, bool forced) {
  NamedAttrList attrs;
  if (auto old = op->getAttrOfType<DictionaryAttr>(kScheduleAttrName))
    attrs.append(old.getValue());
  if (auto before = dyn_cast_or_null<BoolAttr>(attrs.get("forced")))
    forced |= before.getValue();
  for (const NamedAttribute &e : entries)
    attrs.set(e.getName(), e.getValue());
  attrs.set("forced", BoolAttr::get(op->getContext(), forced));
  op->setAttr(kScheduleAttrName, attrs.getDictionary(op->getContext()));
}

SmallVector<AttentionOp> mlir::fat::hostAttentionOps(Operation *root) {
  SmallVector<AttentionOp> ops;
  root->walk([&](AttentionOp op) {
    if (!op->getParentOfType<gpu::GPUModuleOp>())
      ops.push_back(op);
  });
  return ops;
}

LogicalResult mlir::fat::applyScheduleAttr(AttentionOp op,
                                           HopperKernelOptions &options,
                                           bool *forced) {
  return applyScheduleAttr(op, op->getAttr(kScheduleAttrName), options,
                           forced);
}

LogicalResult mlir::fat::applyScheduleAttr(Operation *op, Attribute raw,
                                           HopperKernelOptions &options,
                                           bool *forced) {
  KernelSchedule &schedule = options.schedule;
  auto dict = dyn_cast_or_null<DictionaryAttr>(raw);
  if (!dict) {
    if (raw)
      return op->emitOpError("'") << kScheduleAttrName
                                  << "' must be a dictionary";
    return success();
  }
  for (NamedAttribute entry : dict) {
    StringRef key = entry.getName().getValue();
    Attribute value = entry.getValue();
    auto expect = [&](StringRef what) {
      return op->emitOpError("'") << kScheduleAttrName << "' entry '" << key
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
    } else if (key == "linear_bias" && isa<StringAttr>(value) &&
               cast<StringAttr>(value).getValue() == "weights") {
      // fat-tensorize's record of its rewrite (fat.key_weights): the
      // tensorized ops carry it, as relative_bias's.
      schedule.linearBiasMma = false;
    } else if (key == "rowsum" || key == "rescale" || key == "row_max" ||
               key == "linear_bias" || key == "tile_scheduler") {
      // The two-word choices (linear_bias spelled as rowsum).
      StringRef (*name)(bool) = key == "rescale"          ? rescaleName
                                : key == "row_max"        ? rowMaxName
                                : key == "tile_scheduler" ? tileSchedulerName
                                                          : rowsumName;
      auto s = dyn_cast<StringAttr>(value);
      std::optional<bool> word =
          s ? parseWord(s.getValue(), name) : std::nullopt;
      if (!word)
        return expect(
            ("\"" + name(false) + "\" or \"" + name(true) + "\"").str());
      (key == "rowsum"           ? schedule.rowsumMma
       : key == "rescale"        ? schedule.lazyRescale
       : key == "row_max"        ? schedule.boundMax
       : key == "tile_scheduler" ? schedule.dynamicTiles
                                 : schedule.linearBiasMma) = *word;
    } else if (key == "rescale_threshold") {
      auto f = dyn_cast<FloatAttr>(value);
      if (!f)
        return expect("a float");
      schedule.rescaleThreshold = f.getValueAsDouble();
    } else if (key == "block_m" || key == "block_n" || key == "stages" ||
               key == "q_buffers") {
      // Range-checked where the kernel is configured, with the options.
      auto n = dyn_cast<IntegerAttr>(value);
      if (!n || !n.getType().isSignlessInteger(64))
        return expect("an i64");
      (key == "block_m"   ? options.blockM
       : key == "block_n" ? options.blockN
       : key == "stages"  ? options.stages
                          : options.qBuffers) = n.getInt();
    } else if (key == "o_store" || key == "pv_wait" || key == "mask_form") {
      bool isStore = key == "o_store", isWait = key == "pv_wait";
      StringRef yes = isStore ? "staged" : isWait ? "late" : maskFormName(true);
      StringRef no = isStore  ? "direct"
                     : isWait ? "early"
                              : maskFormName(false);
      auto s = dyn_cast<StringAttr>(value);
      if (!s || (s.getValue() != yes && s.getValue() != no))
        return expect(("\"" + yes + "\" or \"" + no + "\"").str());
      (isStore  ? options.stageO
       : isWait ? options.latePVWait
                : options.maskByRowLimits) = s.getValue() == yes;
    } else if (key == "tail_split") {
      auto flag = dyn_cast<BoolAttr>(value);
      if (!flag)
        return expect("a bool");
      options.splitMaskedTail = flag.getValue();
    } else if (key == "tanh_poly") {
      // fat-tensorize's record of its rewrite: fat.score_mod carries it.
      if (!isa<BoolAttr>(value))
        return expect("a bool");
    } else if (key == "relative_bias") {
      // fat-tensorize's record of its rewrite: the tensorized ops carry it.
      auto s = dyn_cast<StringAttr>(value);
      if (!s || !parseWord(s.getValue(), relativeBiasName))
        return expect(("\"" + relativeBiasName(false) + "\" or \"" +
                       relativeBiasName(true) + "\"")
                          .str());
    } else if (key == "exp2_poly") {
      auto f = dyn_cast<FloatAttr>(value);
      if (!f || !(f.getValueAsDouble() >= 0.0 && f.getValueAsDouble() <= 1.0))
        return expect("a float in [0, 1]");
      schedule.exp2Poly = f.getValueAsDouble();
    } else {
      return op->emitOpError("'")
             << kScheduleAttrName << "' has unknown entry '" << key
             << "'; known: overlap, pingpong, rowsum, rescale, "
                "rescale_threshold, exp2_poly, row_max, linear_bias, "
                "relative_bias, tanh_poly, persistent, "
                "tile_overlap, tile_scheduler, "
                "forced, block_m, block_n, stages, q_buffers, o_store, "
                "pv_wait, tail_split, mask_form";
    }
  }
  return success();
}
