//===- Pipeline.cpp - fat-pipeline ----------------------------------------===//
//
// `--fat-pipeline`: the asynchronous schedule of the Hopper kernel, recorded
// in the op's `fat.schedule`:
//
//   overlap       softmax_j under P_{j−1}·V_{j−1} inside a warpgroup
//   pingpong      consumer warpgroups issue their GEMMs in turns (named
//                 barriers), one's softmax under the other's GEMMs
//   persistent    one CTA per SM looping over work units (pairs of query
//                 blocks under a causal mask, balanced longest-with-shortest)
//   tile_overlap  a tile's last P·V issued with the next tile's first Q·Kᵀ
//
// choosePipeline (Hopper/CostModel.cpp) is the cost model; every choice can
// be forced with the pass's options for ablation. The pass then builds the
// kernel (Hopper/AttentionKernel*.cpp) in the pipelined form.
//
//===----------------------------------------------------------------------===//

#include "fa-t/Dialect/Fat/Hopper/AttentionKernel.h"
#include "fa-t/Dialect/Fat/Transforms/Passes.h"

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
  return {b.getNamedAttr("block_m", b.getI64IntegerAttr(config.blockM)),
          b.getNamedAttr("block_n", b.getI64IntegerAttr(config.blockN)),
          b.getNamedAttr("stages", b.getI64IntegerAttr(config.stages)),
          b.getNamedAttr("q_buffers", b.getI64IntegerAttr(config.qBuffers)),
          b.getNamedAttr("o_store",
                         b.getStringAttr(config.stageO ? "staged" : "direct")),
          b.getNamedAttr("pv_wait",
                         b.getStringAttr(config.latePVWait ? "late" : "early")),
          b.getNamedAttr("overlap", b.getBoolAttr(s.overlap)),
          b.getNamedAttr("pingpong", b.getBoolAttr(s.pingpong)),
          b.getNamedAttr("persistent", b.getBoolAttr(s.persistent)),
          b.getNamedAttr("tile_overlap", b.getBoolAttr(s.tileOverlap)),
          b.getNamedAttr("rowsum", b.getStringAttr(rowsumName(s.rowsumMma))),
          b.getNamedAttr("rescale",
                         b.getStringAttr(rescaleName(s.lazyRescale))),
          b.getNamedAttr("rescale_threshold",
                         b.getF64FloatAttr(s.rescaleThreshold)),
          b.getNamedAttr("exp2_poly", b.getF64FloatAttr(s.exp2Poly))};
}

namespace {
struct FatPipelinePass : public fat::impl::FatPipelineBase<FatPipelinePass> {
  using Base::Base;

  void getDependentDialects(DialectRegistry &registry) const override {
    Base::getDependentDialects(registry);
    registerKernelTranslations(registry);
  }

  /// The kernel options of the pass (the schedule comes from the op).
  FailureOr<HopperKernelOptions> kernelOptions(ModuleOp top) {
    HopperKernelOptions options;
    options.sm = sm;
    options.blockM = blockM;
    options.blockN = blockN;
    options.stages = stages;
    options.qBuffers = qBuffers;
    options.seqLen = seqLen;
    options.ptxVersion = ptxVersion;
    options.numSMs = numSMs;
    if (failed(parseAutoChoice(top, "o-store", oStore, "staged", "direct",
                               options.stageO)) ||
        failed(parseAutoChoice(top, "pv-wait", pvWait, "late", "early",
                               options.latePVWait)))
      return failure();
    return options;
  }

  /// Builds the kernel of `op` (or reuses the one of an earlier op of the
  /// same configuration) and tags the op with it; `manifests` collects the
  /// launch manifests by kernel name.
  LogicalResult buildKernel(ModuleOp top, AttentionOp op,
                            const HopperKernelOptions &options,
                            NamedAttrList &manifests) {
    MLIRContext *ctx = &getContext();
    FailureOr<AttentionKernelConfig> config =
        getAttentionKernelConfig(op, options);
    if (failed(config))
      return failure();
    std::string name = config->kernelName();
    if (Operation *existing = SymbolTable::lookupSymbolIn(top, name)) {
      // The kernel of an earlier op (or run of this pass) is reused; any
      // other symbol of that name would be called as the kernel.
      if (!isa<gpu::GPUModuleOp, gpu::BinaryOp>(existing) ||
          !manifests.get(name)) {
        InFlightDiagnostic diag =
            op.emitOpError() << "needs the kernel name '" << name
                             << "', which a '" << existing->getName()
                             << "' of the module already has: rename that "
                                "symbol";
        diag.attachNote(existing->getLoc()) << "the symbol is here";
        return failure();
      }
    } else {
      OpBuilder builder(ctx);
      buildAttentionKernelModule(builder, op.getLoc(), top, *config);
      manifests.set(name, StringAttr::get(ctx, config->manifestJson()));
    }
    op->setAttr(kKernelAttrName,
                SymbolRefAttr::get(ctx, name,
                                   {FlatSymbolRefAttr::get(ctx, name)}));
    Builder b(ctx);
    updateSchedule(op, builtSchedule(b, *config),
                   config->scheduleForced);
    return success();
  }

  void runOnOperation() override {
    ModuleOp top = getOperation();
    MLIRContext *ctx = &getContext();
    FailureOr<std::optional<bool>> forceOverlap = parseTriState(overlap);
    FailureOr<std::optional<bool>> forcePingpong = parseTriState(pingpong);
    FailureOr<std::optional<bool>> forcePersistent = parseTriState(persistent);
    FailureOr<std::optional<bool>> forceTileOverlap = parseTriState(tileOverlap);
    if (failed(forceOverlap) || failed(forcePingpong) ||
        failed(forcePersistent) || failed(forceTileOverlap)) {
      top->emitError() << "fat-pipeline: overlap, pingpong, persistent and "
                          "tile-overlap must be auto, on or off, got overlap='"
                       << overlap << "' pingpong='" << pingpong
                       << "' persistent='" << persistent
                       << "' tile-overlap='" << tileOverlap << "'";
      return signalPassFailure();
    }
    FailureOr<HopperKernelOptions> options = kernelOptions(top);
    if (failed(options))
      return signalPassFailure();

    // Each op becomes a kernel launched from the host; one already inside
    // device code (a gpu.module) could only be a call from a kernel, which
    // nothing lowers (upstream's translation would fail on it later, naming
    // an unrealized cast).
    bool failedAny = false;
    SmallVector<AttentionOp> hostOps;
    top.walk([&](AttentionOp op) {
      auto device = op->getParentOfType<gpu::GPUModuleOp>();
      if (!device) {
        hostOps.push_back(op);
        return;
      }
      op.emitOpError() << "inside gpu.module '" << device.getName()
                       << "' is device code: the Hopper kernel is "
                          "launched from host code, call it there";
      failedAny = true;
    });
    if (failedAny)
      return signalPassFailure();

    // The manifests built so far, by kernel name (kept across runs).
    NamedAttrList manifests;
    if (auto existing = top->getAttrOfType<DictionaryAttr>("fat.kernels"))
      manifests.append(existing.getValue());

    Builder b(ctx);
    for (AttentionOp op : hostOps) {
      if (op->hasAttr(kKernelAttrName))
        continue; // built by an earlier run
      // What the op already says (fat-tensorize's keys, or entries written
      // by hand) is the starting point: such a decision stands unless an
      // option forces another, and the cost model sees the op's block-m.
      HopperKernelOptions onOp = *options;
      if (failed(applyScheduleAttr(op, onOp))) {
        failedAny = true;
        continue;
      }
      auto dict = op->getAttrOfType<DictionaryAttr>(kScheduleAttrName);
      auto written = [&](StringRef key) { return dict && dict.get(key); };
      auto decide = [&](const std::optional<bool> &forced, StringRef key,
                        bool onOpValue, bool &choice) {
        if (forced)
          choice = *forced;
        else if (written(key))
          choice = onOpValue;
      };
      PipelineChoice choice = choosePipeline(op, onOp.blockM, onOp.seqLen);
      decide(*forceOverlap, "overlap", onOp.schedule.overlap, choice.overlap);
      decide(*forcePingpong, "pingpong", onOp.schedule.pingpong,
             choice.pingpong);
      decide(*forcePersistent, "persistent", onOp.schedule.persistent,
             choice.persistent);
      // Ping-pong turns are the overlapped schedule's issue phases: a
      // forced overlap=off turns the automatic ping-pong off with it; and
      // the automatic ping-pong was measured with persistent CTAs only.
      if ((!choice.overlap || !choice.persistent) && !*forcePingpong &&
          !written("pingpong"))
        choice.pingpong = false;
      // Tile overlap follows the choices above unless decided itself (the
      // kernel refuses it without persistent CTAs and overlap).
      choice.tileOverlap = autoTileOverlap(choice, isWindowed(op));
      decide(*forceTileOverlap, "tile_overlap", onOp.schedule.tileOverlap,
             choice.tileOverlap);
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
      if (failed(buildKernel(top, op, *options, manifests)))
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
