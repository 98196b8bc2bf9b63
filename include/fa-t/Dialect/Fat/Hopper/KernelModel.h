//===- KernelModel.h - the Hopper kernel's configuration and cost models -===//
//
// What the Hopper attention kernel is made of (its schedule, tile shapes,
// shared-memory layout, registers) and the cost models that choose it:
// fat-tile's block shapes, fat-tensorize's FlashAttention-T primitives and
// fat-pipeline's asynchronous schedule read the same functions, so a pass
// run alone on printed IR predicts what the next one chooses.
//
//===----------------------------------------------------------------------===//
#ifndef FAT_DIALECT_FAT_HOPPER_KERNELMODEL_H
#define FAT_DIALECT_FAT_HOPPER_KERNELMODEL_H

#include "fa-t/Dialect/Fat/IR/FatOps.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

namespace mlir {
namespace fat {

/// How the consumer warpgroups schedule their work (pass options; the
/// defaults are the measured-best choices, docs/perf-log.md).
struct KernelSchedule {
  /// Intra-warpgroup overlap: iteration j issues S_j = Q·K_jᵀ and
  /// O += P_{j−1}·V_{j−1} back to back, waits only for S_j, and runs the
  /// softmax of S_j while the P·V wgmma of the previous block still runs.
  bool overlap = true;
  /// Ping-pong: the consumer warpgroups take turns issuing their GEMMs
  /// (named barriers 1 … n), so one's softmax overlaps the others' GEMMs.
  /// Needs two or three consumer warpgroups (block-m = 128 or 192).
  bool pingpong = false;
  /// FlashAttention-T row sums: l = rowsum(P) by the tensor cores. The P·V
  /// wgmma gets 8 extra B columns of ones (a constant shared-memory chunk
  /// beside each V stage), so its accumulator carries l = Σ_j P·1 next to O
  /// and the rescale α·l rides along with α·O. Needs Dv + 8 ≤ 256.
  bool rowsumMma = false;
  /// linear-bias=mma: a score region s + G·(j − i) as Q·Kᵀ's extra k16
  /// step on bias columns (fat-tensorize, TensorizeBias.cpp).
  bool linearBiasMma = false;
  /// Lazy rescale: a row's reference max m only moves when the block max
  /// exceeds it by more than `rescaleThreshold` in log2 units; otherwise
  /// P = exp2(c·S − c·m) ≤ 2^threshold and O, l are not rescaled. A warp
  /// skips the O multiply when none of its rows moved.
  bool lazyRescale = false;
  double rescaleThreshold = 8.0;
  /// Fraction of the softmax exponentials P = 2^x computed by a polynomial
  /// on the FMA pipe (hopper::buildExp2Poly) instead of MUFU.EX2, in
  /// [0, 1]: MUFU issues 16 per cycle per SM against 128 FMAs, so at small
  /// head dims the exponentials, not the GEMMs, bound the loop. The chosen
  /// elements are spread evenly over each row's registers.
  double exp2Poly = 0.0;
  /// Persistent CTAs: the grid is min(units, num-sms) CTAs, each looping
  /// over the work units u ≡ blockIdx.x mod num-sms, head-major: a query
  /// block, or with a causal mask the pair of query blocks p and nM − 1 − p
  /// (equal work for every p). The producer runs ahead into the next
  /// tile's Q, K and V while the consumers finish a tile and store its O,
  /// and the prologue of a CTA (barriers, ones chunks) is paid once per SM.
  bool persistent = false;
  /// Overlap across tiles (persistent CTAs with overlap): the last
  /// O += P·V of tile t is issued together with the first S = Q·Kᵀ of the
  /// CTA's next tile and runs under that block's softmax; tile t's O is
  /// stored after it. A tile of n key blocks then takes n GEMM-issue turns
  /// instead of n + 1, and the tensor cores get no fill/drain bubble at tile
  /// boundaries. The first P·V of each tile overwrites the accumulator
  /// (wgmma scale-d = 0) instead of adding to a zeroed one.
  bool tileOverlap = false;
  /// Dynamic tile scheduler (persistent CTAs, tile-scheduler=dynamic): a
  /// CTA's units after its first come from a counter in global memory in
  /// the one-CTA-per-tile grid's order (fat.tile_loop's dynamic order), so
  /// tiles of data-dependent cost balance while each CTA still loads its
  /// next tile's Q under the current one.
  bool dynamicTiles = false;
  /// The softmax reference is the score region's bound U, not the running
  /// row maximum (row-max=bound, BoundRowMax.cpp): no maximum, no rescale.
  bool boundMax = false;

  bool operator==(const KernelSchedule &o) const {
    return overlap == o.overlap && pingpong == o.pingpong &&
           boundMax == o.boundMax && rowsumMma == o.rowsumMma &&
           lazyRescale == o.lazyRescale &&
           rescaleThreshold == o.rescaleThreshold && exp2Poly == o.exp2Poly &&
           persistent == o.persistent && tileOverlap == o.tileOverlap &&
           dynamicTiles == o.dynamicTiles;
  }
};

/// The op attribute holding the schedule chosen by fat-tensorize and
/// fat-pipeline: a dictionary with keys overlap, pingpong (bool), rowsum
/// ("vector" | "mma"), rescale ("always" | "lazy"), rescale_threshold (f64),
/// exp2_poly (f64 fraction in [0, 1]), persistent (bool), and forced (bool:
/// some entry was forced by an option instead of chosen by the cost model).
constexpr llvm::StringLiteral kScheduleAttrName = "fat.schedule";

/// The FlashAttention-T primitives the cost model picks for an op.
struct TensorizationChoice {
  bool rowsumMma = false;
  bool lazyRescale = false;
  double exp2Poly = 0.0;
  /// The softmax reference at the scores' bound (row-max=bound).
  bool boundMax = false;
  /// A linear position bias as Q·Kᵀ's extra k16 step (linear-bias=mma).
  bool linearBiasMma = false;
  /// A linear position bias as weights on P (linear-bias=weights; implies
  /// rowsumMma, whose ones columns carry the weights into the row sums).
  bool linearBiasWeights = false;
  /// The score region's tanh as fat.score_mod's polynomial on the FMA pipe
  /// where a warp's arguments allow it (tanh-poly).
  bool tanhPoly = false;
};
/// The consumer schedule the cost model picks for an op.
struct PipelineChoice {
  bool overlap = true;
  bool pingpong = false;
  bool persistent = false;
  bool tileOverlap = false;
  bool dynamicTiles = false;
};
struct HopperKernelOptions;
struct TileProblem;
struct AttentionSignature;
/// The cost models of fat-tensorize and fat-pipeline (`auto`), by head dims
/// and mask, on a problem read off the tiled form or the op; see
/// Hopper/Model/CostModel.cpp for the measurements behind each rule.
/// Whether the LSE is an output is `problem.writesLse`. `rowMax`: the softmax
/// reference already decided (forced by an option or written on the IR),
/// which the other primitives' rules then assume; nullopt lets the cost
/// model decide it too.
TensorizationChoice
chooseTensorization(const TileProblem &problem,
                    const HopperKernelOptions &target,
                    std::optional<bool> rowMax = std::nullopt);
PipelineChoice choosePipeline(const TileProblem &problem, int64_t blockM);
/// The cost model's ping-pong turns for `blockM` rows (0: the default
/// block-m) with or without persistent CTAs.
bool autoPingpong(const TileProblem &problem, int64_t blockM, bool persistent);

/// The schedule's words, one spelling for the pass options, `fat.schedule`
/// and the manifest: rowsum "vector" | "mma", rescale "always" | "lazy".
/// The parsers return nullopt for any other word.
StringRef rowsumName(bool mma);
std::optional<bool> parseRowsumMma(StringRef word);
StringRef rescaleName(bool lazy);
/// row_max "online" | "bound".
StringRef rowMaxName(bool bound);
/// relative_bias "vector" | "accumulator".
StringRef relativeBiasName(bool accumulator);
/// tile_scheduler "static" | "dynamic".
StringRef tileSchedulerName(bool dynamic);
std::optional<bool> parseBoundMax(StringRef word);
/// A two-word choice spelled by `name` (rowsumName, rescaleName,
/// rowMaxName): true for name(true), false for name(false), else nullopt.
std::optional<bool> parseWord(StringRef word,
                              function_ref<StringRef(bool)> name);
/// mask_form "rows" (per-row limits) | "keys" (per-key bounds).
StringRef maskFormName(bool rowLimits);
std::optional<bool> parseLazyRescale(StringRef word);

/// Overrides `options` with the op's `fat.schedule` entries (the schedule
/// keys, and the kernel's block_m, block_n, stages, q_buffers, o_store,
/// pv_wait, tail_split, mask_form that fat-pipeline records after building);
/// emits an error naming the entry and fails on a malformed one. `forced` (if
/// given) receives the dictionary's `forced` entry: true when some choice was
/// forced by a pass option rather than made by the cost model.
LogicalResult applyScheduleAttr(AttentionOp op, HopperKernelOptions &options,
                                bool *forced = nullptr);
/// The same for a schedule dictionary `schedule` (may be null) written on
/// `op` (which errors name).
LogicalResult applyScheduleAttr(Operation *op, Attribute schedule,
                                HopperKernelOptions &options,
                                bool *forced = nullptr);

/// Target choices of the Hopper kernel: the pass options.
struct HopperKernelOptions {
  std::string sm = "sm_90a";
  /// 0 = defaultBlockM.
  int64_t blockM = 0;
  /// 0 = defaultBlockN.
  int64_t blockN = 0;
  int64_t stages = 2;
  /// 0 = 2 for persistent kernels where they fit, else 1.
  int64_t qBuffers = 0;
  /// Skv to tune the default tiles for (TileProblem); 0 = the op's static
  /// key length, if any.
  int64_t seqLen = 0;
  int64_t ptxVersion = 80;
  /// SMs of the target (H100 SXM and H200: 132): persistent kernels launch
  /// at most this many CTAs, one per SM.
  int64_t numSMs = 132;
  /// How O reaches global memory (the `o-store` option): true = staged
  /// through shared memory, false = straight from the accumulator
  /// registers, nullopt = staged wherever the kernel can
  /// (AttentionKernelConfig::canStageO).
  std::optional<bool> stageO;
  /// Where the overlapped main loop waits for P_{j−1}·V_{j−1} (the
  /// `pv-wait` option): true = late, after the softmax of S_j behind a
  /// scheduling fence, false = where ptxas puts it, nullopt = late where it
  /// pays (AttentionKernelConfig::lateWaitPays).
  std::optional<bool> latePVWait;
  /// Whether the overlapped steady loop runs the blocks below the first
  /// one a mask can touch in a copy without the mask test (the
  /// `tail-split` option): nullopt = where it pays
  /// (AttentionKernelConfig::tailSplitPays).
  std::optional<bool> splitMaskedTail;
  /// How a masked block compares its keys (the `mask-form` option): true =
  /// per-row limits, false = per-key bounds, nullopt = the limits where
  /// the registers hold them (AttentionKernelConfig::rowLimitsFit).
  std::optional<bool> maskByRowLimits;
  KernelSchedule schedule;
};

/// Everything the generated kernel depends on. Two fat.attention ops with
/// equal configurations share one kernel.
struct AttentionKernelConfig {
  bool isF16 = false; ///< else bf16
  int64_t headDim = 0, headDimV = 0;
  int64_t numHeadsQ = 0, numHeadsKV = 0;
  Layout layout = Layout::BHSD;
  bool causal = false;
  int64_t windowLeft = -1, windowRight = -1;
  /// A sliding-window bound on either side.
  bool windowed() const { return windowLeft >= 0 || windowRight >= 0; }
  /// Some keys are hidden: causal or windowed.
  bool masked() const { return causal || windowed(); }
  /// The last visible key of a row as an offset from its diagonal
  /// (maskRightEdge).
  std::optional<int64_t> rightEdge() const {
    return maskRightEdge(causal, windowRight);
  }
  bool lse = false;
  int64_t blockM = 128, blockN = 128, stages = 2;
  /// Q buffers: 2 lets a persistent CTA's producer load tile t+1's Q while
  /// tile t still reads its own (tile t uses buffer t mod qBuffers).
  int64_t qBuffers = 1;
  /// The key-sequence length the default tiles were tuned for (0 = any).
  int64_t seqLen = 0;
  /// The epilogue stages O through shared memory: each warp writes its 16
  /// normalized rows with stmatrix into a staging area, reads them back as
  /// 16-byte row segments and stores those, so a warp's store covers whole
  /// 128-byte lines instead of 8 rows × 16 bytes (8× fewer L1 wavefronts;
  /// the direct stores took a quarter of the time at D = 256, S = 512,
  /// perf log run 47). The staging area is the warpgroup's own rows of the
  /// tile's Q buffer (dead after the tile's last S = Q·Kᵀ; persistent
  /// kernels then release Q after the epilogue), or, for persistent
  /// kernels with one Q buffer (stageOInV), the V stage of the tile's last
  /// key block.
  bool stageO = false;
  /// Persistent kernels with one Q buffer stage O in the last key block's
  /// V stage rather than in Q: holding the only Q buffer through the
  /// epilogue would delay the next tile's Q load (its first S waited ~1 µs
  /// for it, perf log run 50). All consumer warpgroups must be done with
  /// that V (a named barrier, kEpilogueBarrier), which is released after
  /// the epilogue; a tile without key blocks stages in Q instead.
  bool stageOInV() const { return stageO && oStagingAreaIsV(); }
  /// A persistent causal kernel's units are pairs of query blocks
  /// (fat.tile_loop `pairs`), but for the dynamic scheduler, whose units
  /// are single query blocks, the longest first.
  bool usesPairs() const {
    return schedule.persistent && causal && !schedule.dynamicTiles;
  }
  /// The overlapped main loop waits for P_{j−1}·V_{j−1} only after the
  /// softmax of S_j (its exponentials, row maxima and sums): the P_j packs
  /// follow the wait and a scheduling fence precedes it
  /// (hopper::buildSchedulingFence). Without it ptxas lifts the wait above
  /// the softmax — the 16-bit packs of P_j may reuse P_{j−1}'s registers
  /// only after it, and ptxas schedules the packs (and so the wait) as
  /// early as their inputs allow — so the softmax never ran under the P·V
  /// the schedule overlaps it with (perf log run 54).
  bool latePVWait = false;
  /// The late wait needs the overlapped loop: the plain loop has no P·V in
  /// flight during a softmax. With tile overlap it also fences the wait of
  /// a tile's first block (the pending tile's P·V runs under softmax_0).
  bool canWaitLate() const {
    return schedule.overlap;
  }
  /// pv-wait=auto's rule (measurements in KernelConfig.cpp).
  bool lateWaitPays() const;
  /// Where rescale=auto takes the lazy rescale, given the late wait.
  bool lazyRescalePays() const;
  /// pv-wait=auto's choice (fat-tensorize predicts it for the lazy rescale).
  bool autoLatePVWait() const { return canWaitLate() && lateWaitPays(); }
  /// Where staged O would go: the last V stage for persistent kernels with
  /// one Q buffer, else Q.
  bool oStagingAreaIsV() const {
    return schedule.persistent && qBuffers == 1;
  }
  /// Columns of O staged per round (all of Dv in Q; in a V stage what fits).
  int64_t oStagingColumns() const;
  /// Whether O can be staged through shared memory.
  bool canStageO() const;
  /// o-store=auto's rule (measurements in KernelConfig.cpp).
  bool stagingPays() const;
  /// stagingPays without the tuned length (the name spells out o-store where
  /// it differs from this).
  bool stagingPaysForShape() const;
  KernelSchedule schedule;
  std::string sm = "sm_90a";
  int64_t ptxVersion = 80;
  /// Persistent kernels: the most CTAs to launch (the target's SMs).
  int64_t numSMs = 132;
  /// Whether the schedule was forced (an ablation variant) rather than
  /// chosen by the cost model; the manifest says so, and kernel lookup
  /// prefers the cost model's kernel of a config.
  bool scheduleForced = false;
  /// Why the kernel is built without the tile overlap its schedule asked
  /// for (empty: it was not dropped); fat-pipeline warns where it was
  /// forced.
  std::string tileOverlapDropped;
  /// Score / mask modifications (fat.attention's regions): the key naming
  /// their bodies (modificationKey; empty: none) and the tensorized loop's
  /// fat.score_mod / fat.mask_mod the kernel applies to each block's scores
  /// (set by fat-pipeline, which owns the loop while the kernel is built).
  std::string modifications;
  Operation *scoreMod = nullptr, *maskMod = nullptr;
  /// The score region's tanh on the FMA pipe (fat.score_mod's tanh_poly).
  bool tanhPoly() const;
  /// linear-bias=mma: the tensorized loop's fat.bias_query_columns (the
  /// score region's bias as Q·Kᵀ's extra k16 step; no score region then).
  Operation *biasQuery = nullptr;
  /// relative-bias=accumulator: the tensorized loop's fat.score_band (the
  /// score region's term as Q·Kᵀ's accumulator; no score region then).
  Operation *scoreBand = nullptr;
  /// linear-bias=weights: the tensorized loop's fat.key_weights (the block's
  /// offset in the softmax and the weights P is multiplied by; no score
  /// region then).
  Operation *keyWeights = nullptr;
  /// The tensorized scf.for over key blocks (set by fat-pipeline, which
  /// owns it while the kernel is built): the consumer rewrites its ops onto
  /// the fragment tiles — the plain loop all of them in the loop's order,
  /// the overlapped one those from S to P in that order, the GEMMs, P's
  /// rounding and O's rescale where its software pipeline places them.
  Operation *kvLoop = nullptr;
  /// Its two fat.wgmma, S = Q·Kᵀ and O += P·V: each becomes the consumer's
  /// fat.wgmma_async on the ring's boxes.
  Operation *scoreGemm = nullptr, *outputGemm = nullptr;
  /// The softmax constant c after a score region (its scores are already
  /// scaled): log2 e, times the region's output factor where fat-tensorize
  /// moved one out of it (foldScoreOutputScale).
  double modSoftmaxScale = M_LOG2E;
  /// The tensors the regions read, in capture order: statically shaped,
  /// passed by address after the other parameters (`capture<i>`).
  SmallVector<RankedTensorType> captureTypes;
  /// The capture holding key ranges per 64 query rows (fat.mask_mod's
  /// kv_ranges): the kernel visits only key blocks inside them.
  std::optional<int64_t> kvRanges;

  /// Consumer warpgroups (64 query rows each) and the CTA size: one extra
  /// warpgroup is the TMA producer.
  int64_t numConsumerWarpgroups() const { return blockM / 64; }
  int64_t numThreads() const { return 128 * (1 + numConsumerWarpgroups()); }
  /// Registers of a consumer thread after setmaxnreg: 255, 240 or 160.
  int64_t consumerRegisters() const;
  /// Registers of a producer thread after setmaxnreg (with more than one
  /// consumer warpgroup): what the consumers' rise leaves.
  int64_t producerRegisters() const;
  /// The overlapped steady loop is built twice: unmasked blocks, then the
  /// masked tail ("mainloop-edge"); needs overlap and no left window edge.
  bool splitMaskedTail = false;
  /// tail-split=auto's rule (measurements in KernelConfig.cpp).
  bool tailSplitPays() const;
  /// Whether the split is possible: the blocks below the first masked one
  /// (FirstMaskedKeyBlockOp) need no mask only without a left window edge,
  /// and only the overlapped loop has a steady state to split.
  bool canSplitMaskedTail() const;
  /// A masked block compares keys with per-row limits rather than per-key
  /// bounds (fat.mask's `row_limits`).
  bool maskByRowLimits = false;
  /// mask-form=auto's rule: where ptxas keeps the limits without spilling.
  bool rowLimitsFit() const;
  /// Whether a key block inside its warpgroup's full key range (a
  /// four-column kv_ranges table) skips the mask region.
  bool skipsFullKeyBlocks() const;
  /// Whether the tile's key walk skips the blocks inside its groups' common
  /// hole (a six-column kv_ranges table: keys no row of a group sees).
  bool skipsKeyHoles() const;
  int64_t elementBytes() const { return 2; }

  /// Shared-memory layout (byte offsets from a 1024-byte aligned base):
  ///
  ///   [ Q buffer 0 .. qBuffers-1: D/64 chunks of blockM x 128 B each ]
  ///   [ K stage 0 .. stages-1: D/64 chunks of blockN x 128 B each ]
  ///   [ V stage 0 .. stages-1: Dv/64 chunks of blockN x 128 B each ]
  ///   [ linear-bias=mma: the bias key columns, blockN x 32 B ]
  ///   [ relative-bias=accumulator: band stage 0 .. stages-1, 16·(M + N) B ]
  ///   [ tile-scheduler=dynamic: units stage 0, 1, 1024 B each ]
  ///   [ mbarriers, 8 B each, ring by ring (!fat.ring): Q's full[qBuffers]
  ///     (and, persistent, empty[qBuffers]), K's full[stages] and
  ///     empty[stages], V's full[stages] and empty[stages], the band's
  ///     full[stages] and empty[stages] ]
  ///
  /// K and V have rings of their own: the consumers release K_j as soon
  /// as S_j is computed, long before they are done with V_j.
  ///
  /// Every chunk is one 128B-swizzled TMA box whose rows are 128 bytes, so
  /// each starts on a 1024-byte boundary as the swizzle and the wgmma
  /// descriptors (base_offset 0) require.
  int64_t qBytes() const { return blockM * headDim * elementBytes(); }
  int64_t kStageBytes() const { return blockN * headDim * elementBytes(); }
  /// Bytes TMA writes into one V stage, and the stage's footprint: with
  /// rowsumMma one more 64-column chunk of constant ones follows the V
  /// chunks, where the P·V wgmma's extra B columns read it.
  int64_t vLoadBytes() const { return blockN * headDimV * elementBytes(); }
  int64_t onesChunkBytes() const { return schedule.rowsumMma ? blockN * 128 : 0; }
  int64_t vStageBytes() const { return vLoadBytes() + onesChunkBytes(); }
  /// Columns of the P·V accumulator: Dv, plus the 8 ones columns.
  int64_t pvColumns() const { return headDimV + (schedule.rowsumMma ? 8 : 0); }
  int64_t kOffset() const { return qBuffers * qBytes(); }
  int64_t vOffset() const { return kOffset() + stages * kStageBytes(); }
  /// The bias key columns (fat.bias_keys_fill's layout): one tile for
  /// every key block.
  int64_t biasKeysOffset() const { return vOffset() + stages * vStageBytes(); }
  /// linear-bias=mma's key columns (blockN × 16 bf16), counted from the
  /// schedule's choice on so that the Q buffers and block-n fit beside them.
  int64_t biasKeysBytes() const {
    return biasOnTensorCores() ? blockN * 32 : 0;
  }
  /// Whether a linear position bias rides in Q·Kᵀ (linear-bias=mma): on the
  /// tensorized loop, or chosen by the schedule before it is built.
  bool biasOnTensorCores() const { return biasQuery || schedule.linearBiasMma; }
  /// relative-bias=accumulator: the band ring's stages after them, one
  /// per K stage (fat.band_stage's layout: four arrays of M + N floats).
  int64_t bandOffset() const { return biasKeysOffset() + biasKeysBytes(); }
  int64_t bandStageBytes() const {
    return scoreBand ? 16 * (blockM + blockN) : 0;
  }
  /// tile-scheduler=dynamic: the units ring after them, two stages that
  /// each hold a published unit (fat.tile_loop; 4 bytes used, but a ring's
  /// stages are whole 1024-byte swizzle atoms).
  int64_t unitsOffset() const {
    return bandOffset() + stages * bandStageBytes();
  }
  static constexpr int64_t kUnitStages = 2, kUnitStageBytes = 1024;
  int64_t unitsBytes() const {
    return schedule.dynamicTiles ? kUnitStages * kUnitStageBytes : 0;
  }
  int64_t barrierOffset() const { return unitsOffset() + unitsBytes(); }
  /// Persistent kernels give Q buffers back (empty barriers): the
  /// consumers release Q when their last S = Q·Kᵀ of a tile is done, and
  /// the producer loads a later tile's Q into it.
  int64_t numBarriers() const {
    return qBuffers * (schedule.persistent ? 2 : 1) + 4 * stages +
           (scoreBand ? 2 * stages : 0) +
           (schedule.dynamicTiles ? 2 * kUnitStages : 0);
  }
  /// Dynamic shared memory to request: the layout plus 1024 bytes of slack
  /// for aligning the base at run time.
  int64_t dynamicSmemBytes() const {
    return barrierOffset() + 8 * numBarriers() + 1024;
  }

  /// The kernel's name: entry symbol, gpu.module name and file stem.
  std::string kernelName() const;
  /// The manifest of docs/kernel-abi.md as JSON text.
  std::string manifestJson() const;
};

/// The named barrier the consumer warpgroups meet at before staging O in
/// the last V stage (AttentionKernelConfig::stageOInV): ids 1 to 3 are
/// ping-pong's turns.
constexpr int64_t kEpilogueBarrier = 4;
/// Largest dynamic shared memory one block may use on sm_90 (227 KB).
constexpr int64_t kMaxSharedMemoryPerBlock = 232448;

/// Whether a kernel can be built for PTX ISA `version` (the `ptx` option,
/// 80 = 8.0): 8.0 or newer (wgmma, setmaxnreg), and known to LLVM 22's NVPTX
/// backend (+ptx80 ... +ptx88, +ptx90). Any other value would reach
/// nvvm-attach-target as a feature LLVM ignores with a warning, and the PTX
/// would declare an older `.version` than its instructions need.
bool isSupportedPTXVersion(int64_t version);

/// The supported `ptx` values, as diagnostics name them.
constexpr const char *kSupportedPTXVersions = "80 to 88, or 90";

/// Head dims the kernel serves: whole 128-byte swizzle rows of 16-bit
/// elements, up to one wgmma N of 256.
bool isSupportedHeadDim(int64_t d);
/// Keys per KV block the kernel serves: 64 to 192 in steps of 16 (the N of
/// S = Q·Kᵀ's wgmma, and whole k16 steps of P·V). 256 keys spill: S, the
/// next block's S in flight and O no longer fit 240 registers. Shared
/// memory bounds it further per head dim (80 at D = 256, FlashAttention-3's
/// tile there; 192 at D = 128 with two stages).
bool isSupportedBlockN(int64_t blockN);
/// What the default tile sizes depend on besides the schedule: the head
/// dims, the mask, and the key-sequence length the kernel is tuned for.
/// Every kernel serves every length; `seqLen` only picks the tiles that
/// measured fastest around it (0 = unknown: tiles good at every length).
struct TileProblem {
  int64_t headDim = 0, headDimV = 0;
  bool causal = false, windowed = false;
  int64_t seqLen = 0;
  /// Score or mask regions compute with positions per element.
  bool positional = false;
  /// The score region bounds the scores (row-max=bound applies).
  bool boundedScores = false;
  /// The score region is a linear position bias that linear-bias=mma can
  /// take onto the tensor cores (isLinearBias), and whether the mask alone
  /// still computes with positions once it has (`positional` then).
  bool linearBias = false, positionalMask = false;
  /// Each tile's key blocks, hence its cost, follow captured data
  /// (keyBlocksFollowData): a document mask's ranges.
  bool dataBlocks = false;
  /// The kernel carries linear-bias=mma's query columns (registers).
  bool biasColumns = false;
  /// The kernel writes the LSE.
  bool writesLse = false;
  int64_t maxHeadDim() const { return std::max(headDim, headDimV); }
  bool masked() const { return causal || windowed; }
  /// The problem read off `sig`, tuned for `seqLenOption` keys
  /// (AttentionSignature::tunedSeqLen), whatever its head dims.
  static TileProblem of(const AttentionSignature &sig, int64_t seqLenOption);
  /// The problem of the kernel whose score region went onto the tensor
  /// cores (linear-bias=mma): no position math per score is left of it.
  TileProblem withBiasOnTensorCores() const {
    TileProblem p = *this;
    p.positional = positionalMask;
    p.linearBias = false;
    p.biasColumns = true;
    return p;
  }
  /// The problem of the kernel whose score region became weights on P
  /// (linear-bias=weights): the plain kernel's softmax and tiles, with the
  /// row sums on the tensor cores.
  TileProblem withKeyWeights() const {
    TileProblem p = *this;
    p.positional = positionalMask;
    p.linearBias = false;
    return p;
  }
};
/// block-n = 0's choice: 80 keys above D = 128 (two stages of K and V then
/// still fit in shared memory, and 80 measured faster than 64), 64 when
/// tuned for Skv ≤ 512 (≤ 1k causal); at 64 < D ≤
/// 128 with persistent CTAs and vector row sums, without a mask 176 (128
/// when tuned for Skv < 2048, 160 for Skv < 8192: two Q buffers then fit),
/// with the causal mask 160 when tuned for Skv ≥ 4096; else 128 (always
/// for regions that read positions, TileProblem::positional).
int64_t defaultBlockN(const TileProblem &problem,
                      const KernelSchedule &schedule);
/// Query rows per CTA: 64, 128 or 192 (one, two or three consumer
/// warpgroups; 192 only at D = 64, where 160 registers per thread hold S, P
/// and O).
bool isSupportedBlockM(int64_t blockM);
/// block-m = 0's choice: 192 at D, Dv ≤ 64 without ping-pong, a window or
/// regions that read positions (but linearBiasOnThreeWarpgroups), without a
/// mask or, causal, when tuned for Skv ≥ 2048 (FlashAttention-3's D = 64
/// tile); else 128.
int64_t defaultBlockM(const TileProblem &problem,
                      const KernelSchedule &schedule);
/// Whether a linear position bias (ALiBi) stays on the vector units with
/// three consumer warpgroups instead of taking linear-bias=mma's columns
/// with two: D, Dv ≤ 64, causal, no other positional region, no LSE, tuned
/// for Skv ≥ 4096.
bool linearBiasOnThreeWarpgroups(const TileProblem &problem);
/// Whether `auto` takes a linear position bias (ALiBi) as weights on P
/// (linear-bias=weights): D = 64 or 128, causal without a window, no other
/// positional region, no LSE, tuned for Skv ≥ 4096 (where it was measured).
bool linearBiasAsWeights(const TileProblem &problem);
/// Depth of the K/V ring: 1 to 4.
bool isSupportedStages(int64_t stages);
/// Block shapes the kernel serves: isSupportedBlockM, block-n 0 (by head
/// dim) or isSupportedBlockN, isSupportedStages. The cost models only size supported
/// kernels (the shared-memory arithmetic then stays far from overflow);
/// convert-fat-to-nvvm diagnoses the rest.
bool isSupportedBlocking(int64_t blockM, int64_t blockN, int64_t stages);

/// What the kernel's configuration reads off an attention: the untiled
/// `fat.attention`, or the tensorized loop fat-tile wrote for one
/// (fat-pipeline reads it off the tiles).
struct AttentionSignature {
  ShapedType query, key, value, output;
  Layout layout = Layout::BHSD;
  bool causal = false;
  int64_t windowLeft = -1, windowRight = -1;
  bool lse = false;
  /// Score or mask regions: modificationKey of their bodies (empty: none),
  /// and the types of the values they capture (kernel parameters).
  std::string modifications;
  SmallVector<Type> captureTypes;
  /// The regions read the query or key position (readsPositions); the
  /// mask region (or its key ranges) alone does.
  bool positionalRegions = false, positionalMask = false;
  /// The key blocks a tile visits follow captured data
  /// (keyBlocksFollowData).
  bool dataBlocks = false;
  /// The score region is a linear position bias on bf16 inputs
  /// (isLinearBias).
  bool linearBias = false;
  /// The score region bounds its output so that row-max=bound applies
  /// (boundsScores).
  bool boundedScores = false;

  static AttentionSignature of(AttentionOp op);
  /// The position of logical dim (B, H, S, D) = (0, 1, 2, 3) in the layout.
  unsigned physicalDim(unsigned logical) const;
  /// A sliding-window bound on either side.
  bool windowed() const { return windowLeft >= 0 || windowRight >= 0; }
  /// The Skv a kernel is tuned for: `option` (the passes' `seq-len`) when
  /// positive, else the static key length, else 0 (unknown).
  int64_t tunedSeqLen(int64_t option) const;
};

/// A short key naming the bodies of a score and a mask region (either may
/// be null or empty): equal bodies give equal keys, so kernels of one
/// modification share a name. Empty when both are absent. `outputScale`:
/// the score region's output factor that fat-tensorize moved into the
/// softmax constant (1: none).
std::string modificationKey(Region *score, Region *mask,
                            double outputScale = 1.0);
/// Whether a score or mask region (either may be null or empty) reads the
/// query or key position, or the mask carries a key-range test
/// (`kv_ranges`): index math per score element.
bool readsPositions(Region *score, Region *mask, bool kvRanges);
/// Whether a mask region with key ranges (`kv_ranges` = the ranges'
/// capture) also reads another captured tensor (document ids, run bounds):
/// the key blocks each tile visits then follow the data, not the positions.
bool keyBlocksFollowData(Region *mask, std::optional<uint64_t> kvRanges);
/// [lo, hi] of a score region's output whatever its arguments (constants,
/// tanh, their sums, negations and constant multiples); nullopt where it is
/// not provably bounded or the region is empty.
std::optional<std::pair<double, double>> scoreRegionRange(Region &score);
/// Whether row-max=bound applies to a score region on `element` inputs:
/// bf16 (f16's P is normal only down to 2^-14) and log2 e·(U − L) <=
/// kMaxBoundSpan, the softmax constant before any factor leaves the region.
bool boundsScores(Region &score, Type element);
/// A score region's yield y = rest ± B·float(i − j) (or j − i) whose factor
/// B reads neither the score nor the positions (ALiBi): y = rest + G·(j − i)
/// with G = B, or −B where `negated`; `restNegated`: y = −rest + …
/// (rows_at_origin, and linear-bias=mma's bias columns).
struct PositionTerm {
  Value factor, rest;
  bool negated = false, restNegated = false;
};
/// The region body's position term, or failure with the reason in `why`.
FailureOr<PositionTerm> matchPositionTerm(Block &body, std::string &why);
/// Whether linear-bias=mma applies to a score region on `element` inputs:
/// the region is s + G·(j − i) (matchPositionTerm with the score as the
/// rest) and the inputs bf16 (the query columns' G/scale times key offsets
/// overflow f16).
bool isLinearBias(Region &score, Type element);
/// The widest c·(U − L) for which row-max=bound takes the reference at the
/// scores' bound U: P ≥ 2^−96 stays 2^30 above f32's smallest normal.
constexpr double kMaxBoundSpan = 96.0;

/// Reads the static configuration of the attention `sig` describes under
/// `options`, with the schedule dictionary `schedule` (may be null). Emits
/// an error at `op` naming what is supported and fails when the kernel
/// cannot handle it (dtype, head dims, dynamic heads, block sizes, shared
/// memory).
FailureOr<AttentionKernelConfig>
getAttentionKernelConfig(Operation *op, const AttentionSignature &sig,
                         Attribute schedule,
                         const HopperKernelOptions &options);

/// The problem the cost models see for the attention `sig` describes; none
/// for head dims the Hopper kernel does not serve.
std::optional<TileProblem> getTileProblem(const AttentionSignature &sig,
                                          int64_t seqLenOption);
/// The same for `op`.
std::optional<TileProblem> getTileProblem(AttentionOp op,
                                          int64_t seqLenOption);

/// Merges `entries` into the `fat.schedule` of `op` (a fat.attention, the
/// tensorized loop, or fat.launch; an entry already there is replaced);
/// `forced` marks the dictionary as an ablation variant.
void updateSchedule(Operation *op, ArrayRef<NamedAttribute> entries,
                    bool forced);

/// The fat.attention ops under `root` outside device code.
SmallVector<AttentionOp> hostAttentionOps(Operation *root);

/// `choice` with the primitives `written` in the IR's fat.schedule (their
/// values in `onIR`) in place of the cost model's: fat-tensorize's rule,
/// which fat-tile's prediction follows.
TensorizationChoice keepWrittenPrimitives(TensorizationChoice choice,
                                          const KernelSchedule &onIR,
                                          DictionaryAttr written);
/// fat-tensorize's primitives for `problem`: the softmax reference forced
/// (`forcedRowMax`), else written in the IR's fat.schedule, else the cost
/// model's, decided first; then chooseTensorization under it with every
/// primitive `written` kept (keepWrittenPrimitives). fat-tile's prediction
/// follows the same rule.
TensorizationChoice decideTensorization(const TileProblem &problem,
                                        const HopperKernelOptions &target,
                                        const KernelSchedule &onIR,
                                        DictionaryAttr written,
                                        std::optional<bool> forcedRowMax);

/// Schedule choices forced by options (nullopt: not forced).
struct PipelineForce {
  std::optional<bool> overlap, pingpong, persistent, tileOverlap, dynamicTiles;
};
/// fat-pipeline's schedule for `problem` with `blockM` rows: a forced
/// choice, else an entry `written` in the IR's fat.schedule (its value in
/// `onIR`), else the cost model (choosePipeline); ping-pong only with
/// overlap and persistent CTAs unless decided itself, tile overlap by
/// autoTileOverlap unless decided itself.
PipelineChoice decidePipeline(const TileProblem &problem, int64_t blockM,
                              const KernelSchedule &onIR,
                              DictionaryAttr written,
                              const PipelineForce &force);

/// fat-tile's automatic block shapes {block-m, block-n}: those of the kernel
/// fat-pipeline builds for `op` when every schedule choice is the cost
/// models' (chooseTensorization, choosePipeline), with `target`'s block-m /
/// block-n where nonzero, its stages and tuned length. None when the op has
/// no Hopper kernel (element type, head dims, ...).
std::optional<std::pair<int64_t, int64_t>>
chooseKernelBlocks(AttentionOp op, const HopperKernelOptions &target);

/// tile-overlap=auto's rule given the other pipeline choices.
bool autoTileOverlap(const PipelineChoice &choice, bool windowed);

} // namespace fat
} // namespace mlir

#endif // FAT_DIALECT_FAT_HOPPER_KERNELMODEL_H
