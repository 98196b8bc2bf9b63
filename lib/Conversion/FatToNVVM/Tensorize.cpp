//===- Tensorize.cpp - fat-tensorize and its cost model -------------------===//
//
// `--fat-tensorize`, the FlashAttention-T step: which softmax primitives of
// the online softmax run on the tensor cores or off the per-block vector
// path, recorded in the op's `fat.schedule`:
//
//   rowsum    l += rowsum(P) as 8 ones columns of the P·V wgmma ("mma") or
//             on the vector units ("vector")
//   rescale   O ← α·O every block ("always") or only in warps whose row
//             max grew by more than τ = rescale_threshold ("lazy")
//   exp2_poly the fraction φ of exponentials on the FMA pipe (a polynomial)
//             beside MUFU.EX2
//
// chooseTensorization is the cost model (fitted to docs/perf-log.md); every
// choice can be forced with the pass's options for ablation.
//
//===----------------------------------------------------------------------===//

#include "Schedule.h"

#include "fa-t/Dialect/Fat/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/FormatVariadic.h"

namespace mlir {
namespace fat {
#define GEN_PASS_DEF_FATTENSORIZE
#include "fa-t/Conversion/FatToNVVM/Passes.h.inc"
} // namespace fat
} // namespace mlir

using namespace mlir;
using namespace mlir::fat;

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

TensorizationChoice
mlir::fat::chooseTensorization(AttentionOp op,
                               const HopperKernelOptions &target) {
  std::optional<TileProblem> shape = getTileProblem(op, target.seqLen);
  if (!shape)
    return TensorizationChoice();
  return chooseTensorization(*shape, /*writesLse=*/bool(op.getLse()), target);
}

TensorizationChoice
mlir::fat::chooseTensorization(const TileProblem &problem, bool writesLse,
                               const HopperKernelOptions &target) {
  TensorizationChoice choice;
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
  PipelineChoice pipeline = choosePipeline(problem, target.blockM);
  bool causalHidden = problem.causal && !problem.windowed &&
                      (pipeline.pingpong || pipeline.tileOverlap);
  choice.rowsumMma = problem.maxHeadDim() <= 64 &&
                     (!problem.masked() || causalHidden) && !writesLse &&
                     onesChunksFit(problem, target);
  // The lazy rescale (O ← α·O only in warps where a row's maximum grew by
  // more than τ) where it pays with the late P·V wait it needs
  // (AttentionKernelConfig::lazyRescalePays, autoLatePVWait): with ptxas's
  // early wait its branch serializes the overlapped wgmmas (C7513, −21%,
  // perf log run 7; −20…30% at D = 128 with 128-key blocks in run 55).
  // The key-block width does not matter: where the lazy rescale pays, the
  // wait is late at any width.
  {
    AttentionKernelConfig late;
    late.headDimV = problem.headDimV;
    late.causal = problem.causal;
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

/// Parses `auto` (nullopt) or a fraction in [0, 1].
static FailureOr<std::optional<double>> parseFraction(StringRef value) {
  if (value == "auto")
    return std::optional<double>();
  double fraction;
  if (value.getAsDouble(fraction) || !(fraction >= 0.0 && fraction <= 1.0))
    return failure();
  return std::optional<double>(fraction);
}

namespace {

/// A tiled attention as fat-tensorize's cost model sees it.
struct TiledProblem {
  /// None for head dims the Hopper kernel does not serve (nothing to model).
  std::optional<TileProblem> problem;
  bool writesLse = false;
  int64_t blockM = 0, blockN = 0;
};

/// The scopes holding one tiled attention each: the scf.forall fat-tile
/// made (or, for tiled IR written by hand, the closest isolated op).
SetVector<Operation *> tiledAttentionScopes(Operation *root) {
  SetVector<Operation *> scopes;
  root->walk([&](QKOp qk) {
    Operation *scope = qk->getParentOfType<scf::ForallOp>();
    if (!scope)
      scope = qk->getParentWithTrait<OpTrait::IsIsolatedFromAbove>();
    scopes.insert(scope);
  });
  return scopes;
}

/// Reads the problem off the tiled ops: D from the Q·Kᵀ operands, Dv from
/// the P·V, the mask from fat.mask, whether the LSE is written from
/// fat.finalize, the key length the tiles were chosen for from fat-tile's
/// `fat.tile` record (unless `seqLenOption` names one).
TiledProblem readTiledProblem(Operation *scope, int64_t seqLenOption) {
  TiledProblem tiled;
  TileProblem p;
  scope->walk([&](Operation *op) {
    if (auto qk = dyn_cast<QKOp>(op)) {
      auto s = cast<ShapedType>(qk.getScores().getType());
      p.headDim = cast<ShapedType>(qk.getQuery().getType()).getDimSize(1);
      tiled.blockM = s.getDimSize(0);
      tiled.blockN = s.getDimSize(1);
    } else if (auto pv = dyn_cast<PVOp>(op)) {
      p.headDimV = cast<ShapedType>(pv.getValue().getType()).getDimSize(1);
    } else if (auto mask = dyn_cast<MaskOp>(op)) {
      p.causal |= mask.getCausal();
      p.windowed |= mask.getWindow().has_value();
    } else if (isa<MaskModOp>(op)) {
      // A mask region may hide keys in any block: modeled as a window (the
      // mask the cost model knows whose every block may be partial).
      p.windowed = true;
    } else if (auto fin = dyn_cast<FinalizeOp>(op)) {
      tiled.writesLse |= !fin.getLse().use_empty();
    }
  });
  p.seqLen = seqLenOption;
  if (auto record = scope->getAttrOfType<DictionaryAttr>(kTileAttrName))
    if (auto recorded = dyn_cast_or_null<IntegerAttr>(record.get("seq_len")))
      if (p.seqLen <= 0)
        p.seqLen = recorded.getInt();
  if (isSupportedHeadDim(p.headDim) && isSupportedHeadDim(p.headDimV))
    tiled.problem = p;
  return tiled;
}

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
    // The cost model's choice with every forced option in its place.
    auto withForced = [&](TensorizationChoice choice) {
      choice.rowsumMma = forceRowsumMma.value_or(choice.rowsumMma);
      choice.lazyRescale = forceLazyRescale.value_or(choice.lazyRescale);
      choice.exp2Poly = forceExp2Poly->value_or(choice.exp2Poly);
      return choice;
    };
    Builder b(&getContext());
    for (AttentionOp op : hostAttentionOps(root)) {
      TensorizationChoice choice = withForced(chooseTensorization(op, target));
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
    // The tiled form (after fat-tile): the same choice, made per tiled
    // attention with the same cost model, rewritten into ops.
    for (Operation *scope : tiledAttentionScopes(root)) {
      TiledProblem tiled = readTiledProblem(scope, seqLen);
      TensorizationChoice choice;
      if (tiled.problem) {
        HopperKernelOptions target;
        target.blockM = tiled.blockM;
        target.blockN = tiled.blockN;
        target.stages = stages;
        target.seqLen = tiled.problem->seqLen;
        choice = chooseTensorization(*tiled.problem, tiled.writesLse, target);
      }
      choice = withForced(choice);
      TileTensorization rewrite;
      rewrite.rowsumMma = choice.rowsumMma;
      rewrite.lazyRescale = choice.lazyRescale;
      rewrite.rescaleThreshold = rescaleThreshold;
      rewrite.exp2Poly = choice.exp2Poly;
      if (failed(checkTensorizableTiles(scope, rewrite)))
        return signalPassFailure();
      RewritePatternSet patterns(&getContext());
      populateFatTensorizeTilePatterns(patterns, rewrite);
      if (failed(applyPatternsGreedily(scope, std::move(patterns))))
        return signalPassFailure();
      WalkResult left = scope->walk([](Operation *op) {
        if (!isa<QKOp, PVOp, RowSumOp, RowMaxOp, Exp2Op>(op))
          return WalkResult::advance();
        op->emitError() << "fat-tensorize: this " << op->getName()
                        << " is not part of a KV step as fat-tile writes it "
                           "(row_max, exp2 of P and α, row_sum, pv), so it "
                           "has no tensor-core form";
        return WalkResult::interrupt();
      });
      if (left.wasInterrupted())
        return signalPassFailure();
    }
  }
};

} // namespace
