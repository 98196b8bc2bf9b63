//===- CostModel.cpp - the auto choices of fat-tensorize, fat-pipeline ---===//
//
// The cost models behind `auto`: chooseTensorization (fat-tensorize: which
// softmax primitives run on the tensor cores, FlashAttention-T) and
// choosePipeline (fat-pipeline: the asynchronous schedule), both on the
// problem the passes read off the op or the tiles. Each rule cites the
// perf-log runs it was fitted to (docs/perf-log.md).
//
//===----------------------------------------------------------------------===//

#include "fa-t/Dialect/Fat/Hopper/KernelModel.h"

#include "mlir/IR/Diagnostics.h"

using namespace mlir;
using namespace mlir::fat;

/// Whether the kernel fits in shared memory with the ones chunks
/// (`rowsumMma`) and linear-bias=mma's key columns (`linearBiasMma`).
static bool fitsWith(const TileProblem &problem, const HopperKernelOptions &t,
                     bool rowsumMma, bool linearBiasMma) {
  AttentionKernelConfig cfg;
  cfg.headDim = problem.headDim;
  cfg.headDimV = problem.headDimV;
  cfg.schedule.rowsumMma = rowsumMma;
  cfg.schedule.linearBiasMma = linearBiasMma;
  cfg.blockM = t.blockM ? t.blockM : defaultBlockM(problem, cfg.schedule);
  if (!isSupportedBlocking(cfg.blockM, t.blockN, t.stages))
    return false;
  cfg.stages = t.stages;
  cfg.blockN = t.blockN ? t.blockN : defaultBlockN(problem, cfg.schedule);
  return cfg.dynamicSmemBytes() <= kMaxSharedMemoryPerBlock;
}

TensorizationChoice
mlir::fat::chooseTensorization(const TileProblem &asked,
                               const HopperKernelOptions &target,
                               std::optional<bool> rowMax) {
  TensorizationChoice choice;
  // A linear position bias s + G·(j − i) (ALiBi) as Q·Kᵀ's extra k16 step
  // (linear-bias=mma) instead of one FFMA per score: +3.8…6.1% over the
  // vector form at D = 64 and 128, 4k and 16k keys, causal, with the vector
  // form's tiles (perf log run 115b); the softmax is then the plain
  // kernel's, and so are its tiles (the rules below and fat-tile's blocks
  // see the problem without the score region's positions). The biased
  // scores miss one constant per row, which the LSE would see: kernels
  // writing it keep the vector form.
  // The key columns (block-n × 32 bytes) must fit beside the plain tiles:
  // at D = 256 they do not. Beside a mask region's per-element position
  // math the query columns spilled 40 bytes at D = 128 (document mask and
  // ALiBi, 128 × 128 tiles; ptxas) where the vector form spills none.
  // At D = 64 under a causal mask from 4k keys the vector form with three
  // consumer warpgroups beats the columns with two (run 142,
  // linearBiasOnThreeWarpgroups).
  // Where measured, the weights on P beat both (linearBiasAsWeights); they
  // need the ones columns beside the plain tiles.
  choice.linearBiasWeights =
      linearBiasAsWeights(asked) &&
      fitsWith(asked.withKeyWeights(), target, true, false);
  choice.linearBiasMma =
      asked.linearBias && !choice.linearBiasWeights && !asked.writesLse &&
      !asked.positionalMask && !linearBiasOnThreeWarpgroups(asked) &&
      fitsWith(asked.withBiasOnTensorCores(), target, false, true);
  const TileProblem problem = choice.linearBiasWeights ? asked.withKeyWeights()
                              : choice.linearBiasMma
                                  ? asked.withBiasOnTensorCores()
                                  : asked;
  auto onesChunksFit = [&](const TileProblem &p, const HopperKernelOptions &t) {
    return fitsWith(p, t, true, choice.linearBiasMma);
  };
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
  // this pass predicts with the same cost model: D = 64 below 2k keys) the
  // row sums pay again: +7% / +3% / +2% at S = 512 / 1k / 2k, equal at 4k
  // (perf log run 30) — the turns hide the ones columns' extra MMA work
  // behind the other warpgroup's softmax, and the diagonal block's
  // masking no longer sits on the critical path. Windows keep the vector
  // sum (not measured).
  // The same holds for the causal 192-row kernel with tile overlap (the
  // pipeline's choice from 2k keys at D = 64): +7…9% at 4k…16k over the
  // previous defaults (runs 40–41: the two-warpgroup kernel with turns at
  // 4k, the 192-row kernel with vector sums and no tile overlap above).
  PipelineChoice pipeline = choosePipeline(problem, target.blockM);
  bool causalHidden = problem.causal && !problem.windowed &&
                      (pipeline.pingpong || pipeline.tileOverlap);
  choice.rowsumMma = choice.linearBiasWeights ||
                     (problem.maxHeadDim() <= 64 &&
                      (!problem.masked() || causalHidden) &&
                      !problem.writesLse && onesChunksFit(problem, target));
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
  // The reference at a bounded score region's bound (row-max=bound) removes
  // the row maximum and every rescale. Measured on the soft-cap (perf log
  // run 112, against the previous defaults): at D = 128 with the ones
  // columns (and so 128-key blocks) +6% without a mask and +21…26% causal;
  // with vector sums (kernels writing the LSE keep them) +5.5% / +9.6%; at
  // D = 64 +5% causal but −3.6% without a mask. D = 256 not measured.
  // Without the running maximum nothing rescales and the row sums are one
  // MMA's more columns: the ones columns then pay at D = 128 as well (rb vs
  // b in run 112: +0…1%, +10…12% causal), where the LSE is not written.
  int64_t d = problem.maxHeadDim();
  choice.boundMax = rowMax.value_or(problem.boundedScores &&
                                    (d == 128 || (d <= 64 && problem.causal)));
  if (choice.boundMax && d == 128 && !problem.writesLse)
    choice.rowsumMma = onesChunksFit(problem, target);
  // The soft-cap's tanh stays on MUFU: tanh-poly (the polynomial where a
  // warp's scores lie within the cap) lost 1…17% on the grid, the
  // vote's FMNMX per score alone 6…9%, and the polynomial on every score
  // without it gained ≤ 3% (D = 64, no mask) and lost 8…9% causal (perf
  // log run 153): the soft-cap waits on its instructions per score, not on
  // MUFU's throughput.
  choice.tanhPoly = false;
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
bool mlir::fat::autoTileOverlap(const PipelineChoice &choice, bool windowed) {
  return choice.persistent && choice.overlap && !choice.pingpong && !windowed;
}

PipelineChoice mlir::fat::choosePipeline(const TileProblem &problem,
                                         int64_t blockM) {
  PipelineChoice choice;
  choice.overlap = true; // +5.5% over the grid (perf log run 5)
  // Persistent CTAs: the next tile's Q load and first Q·Kᵀ overlap this
  // tile's last P·V and O store, which a one-CTA-per-tile grid exposes once
  // per tile. Measured (perf log runs 15–19): without a mask +12…26% at
  // S = 512, +6…16% at 1k, ±3% from 4k at D ≤ 128 (where D = 128 also takes
  // 176-key blocks, defaultBlockN) and +2…5% at every S at D = 256; with
  // the causal mask (work units = pairs of query blocks) +18…31% at S = 512
  // and up to +11% at D = 256, −2…4% at D = 128 from 8k. Not measured with
  // windows, whose tiles the pairs would not balance: off there.
  // Where each tile's key blocks follow captured data (a document mask's
  // ranges) the tiles have random cost, which a static round robin leaves
  // unbalanced (one CTA per tile beat it by 12…19% at D = 128, run 121):
  // those CTAs take their tiles from a counter instead (the dynamic tile
  // scheduler, in the one-CTA-per-tile grid's order), which measured
  // +2…10% at D = 128 and +10…26% at D = 64 over one CTA per tile for
  // block-sparse documents with the tile overlap (runs 137–137b, 4k and
  // 16k); positional ranges (sinks and a window: equal-cost tiles) keep the
  // static order. Causal kernels of 192-row tiles (D = 64 from 2k keys)
  // take it too: their pairs are coarse units (11 per head at 4k), and
  // single query blocks from the counter, longest first, measured +4…8% at
  // 4k…16k (run 139b; at D = 128 and with 128 rows it did not pay, run 139).
  choice.persistent = !problem.windowed;
  if (blockM == 0)
    blockM = defaultBlockM(problem, KernelSchedule());
  choice.dynamicTiles = problem.dataBlocks ||
                        (problem.causal && !problem.windowed && blockM == 192);
  // Ping-pong with persistent CTAs: one warpgroup's softmax, epilogue and
  // next-tile start overlap the other's GEMMs. Measured (run 20, against
  // the persistent kernel without it): D = 128 +2…5% without a mask and
  // +1…5% causal, D = 64 causal +1.5…2.5%; at D = 64 without a mask it
  // ties with the tensor-core row sums chosen there (and without persistent
  // CTAs it did not combine with them, −2…5%, run 10), so the simpler
  // schedule stays; at D = 256 it is ±3% and costs the consumers a spill.
  // The automatic turns are for two consumer warpgroups (block-m = 128):
  // where the automatic block-m takes three (defaultBlockM: D = 64 without
  // a mask, or causal and tuned for 2k keys or more) turns round the three
  // measured +0…1% (run 45), so there is none (autoPingpong).
  choice.pingpong = autoPingpong(problem, blockM, choice.persistent);
  choice.tileOverlap = autoTileOverlap(choice, problem.windowed);
  return choice;
}

bool mlir::fat::autoPingpong(const TileProblem &problem, int64_t blockM,
                             bool persistent) {
  int64_t d = problem.maxHeadDim();
  if (blockM == 0)
    blockM = defaultBlockM(problem, KernelSchedule());
  // Tiles of data-dependent cost (the dynamic tile scheduler's) chain better
  // by the tile overlap than by turns: +2…11% at D = 128, +5…15% at D = 64
  // for block-sparse documents (perf log run 137b).
  return persistent && blockM == 128 && d <= 128 &&
         (problem.masked() || d > 64) && !problem.dataBlocks;
}

TensorizationChoice
mlir::fat::keepWrittenPrimitives(TensorizationChoice choice,
                                 const KernelSchedule &onIR,
                                 DictionaryAttr written) {
  if (!written)
    return choice;
  if (written.get("rowsum"))
    choice.rowsumMma = onIR.rowsumMma;
  if (written.get("rescale"))
    choice.lazyRescale = onIR.lazyRescale;
  if (written.get("exp2_poly"))
    choice.exp2Poly = onIR.exp2Poly;
  if (written.get("row_max"))
    choice.boundMax = onIR.boundMax;
  if (auto poly = dyn_cast_if_present<BoolAttr>(written.get("tanh_poly")))
    choice.tanhPoly = poly.getValue();
  if (Attribute linearBias = written.get("linear_bias")) {
    choice.linearBiasMma = onIR.linearBiasMma;
    auto name = dyn_cast<StringAttr>(linearBias);
    choice.linearBiasWeights = name && name.getValue() == "weights";
  }
  return choice;
}

TensorizationChoice mlir::fat::decideTensorization(
    const TileProblem &problem, const HopperKernelOptions &target,
    const KernelSchedule &onIR, DictionaryAttr written,
    std::optional<bool> forcedRowMax) {
  std::optional<bool> rowMax = forcedRowMax;
  if (!rowMax && written && written.get("row_max"))
    rowMax = onIR.boundMax;
  return keepWrittenPrimitives(chooseTensorization(problem, target, rowMax),
                               onIR, written);
}

PipelineChoice mlir::fat::decidePipeline(const TileProblem &problem,
                                         int64_t blockM,
                                         const KernelSchedule &onIR,
                                         DictionaryAttr written,
                                         const PipelineForce &force) {
  auto isWritten = [&](StringRef key) { return written && written.get(key); };
  auto decide = [&](const std::optional<bool> &forced, StringRef key,
                    bool onIRValue, bool &choice) {
    if (forced)
      choice = *forced;
    else if (isWritten(key))
      choice = onIRValue;
  };
  PipelineChoice choice = choosePipeline(problem, blockM);
  decide(force.overlap, "overlap", onIR.overlap, choice.overlap);
  decide(force.pingpong, "pingpong", onIR.pingpong, choice.pingpong);
  decide(force.persistent, "persistent", onIR.persistent, choice.persistent);
  // The dynamic tile scheduler is a persistent kernel's: asked for where
  // the cost model took one CTA per tile, it brings persistent CTAs (and
  // their automatic turns) unless those were decided themselves.
  decide(force.dynamicTiles, "tile_scheduler", onIR.dynamicTiles,
         choice.dynamicTiles);
  // Persistent CTAs turned off, the automatic dynamic order goes with them.
  if (!choice.persistent && !force.dynamicTiles && !isWritten("tile_scheduler"))
    choice.dynamicTiles = false;
  if (choice.dynamicTiles && !choice.persistent && !force.persistent &&
      !isWritten("persistent")) {
    choice.persistent = true;
    if (!force.pingpong && !isWritten("pingpong"))
      choice.pingpong = autoPingpong(problem, blockM, true);
  }
  // Ping-pong turns are the overlapped schedule's issue phases: a forced
  // overlap=off turns the automatic ping-pong off with it; and the
  // automatic ping-pong was measured with persistent CTAs only.
  if ((!choice.overlap || !choice.persistent) && !force.pingpong &&
      !isWritten("pingpong"))
    choice.pingpong = false;
  // Tile overlap follows the choices above unless decided itself (the
  // kernel refuses it without persistent CTAs and overlap).
  choice.tileOverlap = autoTileOverlap(choice, problem.windowed);
  decide(force.tileOverlap, "tile_overlap", onIR.tileOverlap,
         choice.tileOverlap);
  return choice;
}

std::optional<std::pair<int64_t, int64_t>>
mlir::fat::chooseKernelBlocks(AttentionOp op,
                              const HopperKernelOptions &target) {
  std::optional<TileProblem> problem = getTileProblem(op, target.seqLen);
  if (!problem)
    return std::nullopt;
  // An op the kernel refuses (f32, dynamic heads, ...) just has no kernel
  // blocks here: fat-pipeline names the reason when it builds.
  ScopedDiagnosticHandler quiet(op.getContext(),
                                [](Diagnostic &) { return success(); });
  // What the op's fat.schedule says stands (as in fat-tensorize and
  // fat-pipeline); the rest is their `auto`, in their order: the
  // primitives, then the schedule.
  HopperKernelOptions options = target;
  if (failed(applyScheduleAttr(op, options)))
    return std::nullopt;
  if (target.blockM)
    options.blockM = target.blockM;
  if (target.blockN)
    options.blockN = target.blockN;
  auto written = op->getAttrOfType<DictionaryAttr>(kScheduleAttrName);
  TensorizationChoice primitives = decideTensorization(
      *problem, options, options.schedule, written, std::nullopt);
  options.schedule.rowsumMma = primitives.rowsumMma;
  options.schedule.lazyRescale = primitives.lazyRescale;
  options.schedule.exp2Poly = primitives.exp2Poly;
  options.schedule.linearBiasMma = primitives.linearBiasMma;
  if (primitives.linearBiasMma)
    problem = problem->withBiasOnTensorCores();
  if (primitives.linearBiasWeights)
    problem = problem->withKeyWeights();
  PipelineChoice pipeline = decidePipeline(*problem, options.blockM,
                                           options.schedule, written, {});
  options.schedule.overlap = pipeline.overlap;
  options.schedule.pingpong = pipeline.pingpong;
  options.schedule.persistent = pipeline.persistent;
  options.schedule.tileOverlap = pipeline.tileOverlap;
  options.schedule.dynamicTiles = pipeline.dynamicTiles;
  FailureOr<AttentionKernelConfig> config =
      getAttentionKernelConfig(op, AttentionSignature::of(op), Attribute(),
                               options);
  if (failed(config))
    return std::nullopt;
  return std::make_pair(config->blockM, config->blockN);
}
