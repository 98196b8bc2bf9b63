//===- AttentionKernelBuilder.h - the kernel builder's state ----*- C++ -*-===//
//
// The class that builds the Hopper attention kernel (AttentionKernel.cpp has
// the overview: roles, ring, schedules), shared by the files that build its
// stages, one job each:
//   AttentionKernel.cpp          entry: parameters, shared memory, barriers,
//                                the role split and setmaxnreg
//   AttentionKernelTiles.cpp     which tile and key blocks a CTA runs (the
//                                persistent tile loop) and the producer's
//                                TMA loads into the ring
//   AttentionKernelSoftmax.cpp   one key block: S = Q·Kᵀ, the mask, the
//                                online softmax, O = α·O, O += P·V
//   AttentionKernelConsumer.cpp  the consumer loops (plain, overlapped,
//                                ping-pong turns) and tile overlap
//   SoftwarePipeline.cpp         a loop expanded by its ops' stages (the
//                                overlapped loop's prologue, steady loop
//                                and drain; SoftwarePipeline.h)
//   AttentionKernelEpilogue.cpp  O / l and the LSE to global memory
//
//===----------------------------------------------------------------------===//
#ifndef FAT_LIB_DIALECT_FAT_HOPPER_ATTENTIONKERNELBUILDER_H
#define FAT_LIB_DIALECT_FAT_HOPPER_ATTENTIONKERNELBUILDER_H

#include "fa-t/Dialect/Fat/Hopper/AttentionKernel.h"
#include "fa-t/Dialect/Fat/Hopper/HopperBuilders.h"
#include "fa-t/Dialect/Fat/Hopper/SoftwarePipeline.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"

#include <functional>
#include <optional>

namespace mlir {
namespace fat {
namespace hopper {

/// The schedule in the IR: discardable attributes on the structured ops of
/// the kernel (scf.if / scf.for, which convert-scf-to-cf erases before
/// translation to LLVM IR), so that `--fat-pipeline` output shows
/// which stage and order each region is, and lit can check it (the role
/// split is the fat.warp_specialize op; its lowering tags the branch
/// `fat.role`):
///   fat.tiles = "head-major-pairs" | "head-major"  persistent tile loop
///   fat.stage = "ones" | "load" | "terms" | "prologue" | "mainloop" | "mask" |
///               "rescale" | "epilogue"
///   fat.order = the issue order of one main-loop iteration (ASCII, so the
///               printed IR stays readable)
inline void tag(Operation *op, StringRef name, Attribute value) {
  op->setAttr(name, value);
}
inline void tagStage(Operation *op, StringRef stage) {
  tag(op, "fat.stage", StringAttr::get(op->getContext(), stage));
}

/// The values of the kernel that every stage of it reads.
struct KernelValues {
  // Parameters.
  Value qMap, kMap, vMap;
  Value oPtr, oStrideB, oStrideH, oStrideS;
  Value lsePtr, lseStrideB, lseStrideH;
  Value seqQ, seqKV, diag, scaleLog2e;
  // The softmax's c (scaleLog2e; log2 e where a score modification reads
  // the scaled scores s' = f(scale·s)) and that scale, scaleLog2e · ln 2.
  Value softmaxScale, scoreScale;
  // The modifications' captured tensors (kernel parameters capture<i>).
  SmallVector<Value> captures;
  // Persistent kernels: the batch size (the tile count is ⌈Sq/M⌉·Hq·B)
  // and the query blocks per head ⌈Sq/M⌉ (set by the tile loop).
  Value batchCount, numM;
  // tile-scheduler=dynamic: the counter the producer takes units from
  // (`!llvm.ptr<1>`, parameter tile_counter) and the ring it publishes
  // them in (iteration = the tile index).
  Value tileCounter, unitsRing;
  // Thread coordinates.
  Value tid, warpgroup;
  // Aligned dynamic shared memory (`!llvm.ptr<3>`) and its address (i64).
  Value smem, smemAddr;
  // linear-bias=mma: the bias key columns' address (i64).
  Value biasKeysAddr;
  // The rings (!fat.ring): Q (iteration = the tile index), K and V
  // (iteration = ringIteration of the key block).
  Value qRing, kRing, vRing;
  // relative-bias=accumulator: the ring of the key blocks' terms
  // (iteration = ringIteration of the key block, as K's).
  Value bandRing;
  // linear-bias=weights: the tile's weights on P (a bf16 fragment of P's
  // shape, the same N per row; set at the start of each consumer tile).
  Value keyWeights;
  // Tile coordinates and its KV block range [kvLo, kvHi): the loops count
  // blocks (ring positions); with a hole (holeLen, a six-column kv_ranges
  // table) the physical blocks skip [holeFirst, holeFirst + holeLen), and
  // kvHi counts the blocks walked (keyBlock maps one to the other).
  Value mBlock, head, kvHead, batch, rowFirst, rowLast, kvLo, kvHi;
  Value holeFirst, holeLen;
  // Ring blocks of the CTA's earlier tiles (0 without persistence) and the
  // tile's index among the CTA's tiles (the Q barriers' phase).
  Value ringBase, tileIndex;
};

/// The state tile overlap carries from one tile to the next: the tile whose
/// last P·V is still to be issued ("pending"), as loop-carried values. Its
/// V block is the CTA's last ring iteration (ring position − 1; tiles
/// without keys take none), and there is one exactly when the ring
/// position is > 0. A CTA starts with nothing pending: P = 0 (a P·V of it
/// is issued anyway, on stage 0, and never stored), so every tile body is
/// the same straight-line code around its wgmmas (branches that merge
/// accumulator definitions make ptxas serialize every wgmma, C7513).
/// Registers are what the 160- and 240-register consumers run out of, so
/// the tile's coordinates travel as one i32: bit 31 = its last P·V adds to
/// O (it has more than one block), bits 0–30 = (batch·Hq + head)·⌈Sq/M⌉ +
/// query block (< 2^31 like the unit count).
struct PendingTile {
  Value o; // accumulator tile (O, and l in its ones columns with rowsum=mma)
  // Row vectors. rowsum=mma: m for the LSE (l is in o's ones columns);
  // rowsum=vector: l = the rows' full sums, the LSE already written at the
  // tile's end.
  Value m, l;
  Value p;  // P of its last block, rounded (the 16-bit A tile)
  Value id; // accumulate bit and tile coordinates, see above

  static PendingTile unpack(ValueRange vals) {
    assert(vals.size() == 5 && "a pending tile is {O, m, l, P, id}");
    return {vals[0], vals[1], vals[2], vals[3], vals[4]};
  }
  SmallVector<Value> pack() const { return {o, m, l, p, id}; }
};

/// Builds the kernel body; one method per stage of the kernel. Its index
/// arithmetic (add, sub, mul, c32, cmp, ext64 at `b`) is I32Math's.
class AttentionKernelBuilder : I32Math {
public:
  AttentionKernelBuilder(ImplicitLocOpBuilder &b,
                         const AttentionKernelConfig &cfg)
      : I32Math{b}, cfg(cfg) {}

  void build(LLVM::LLVMFuncOp func, LLVM::GlobalOp dynamicSmem);

private:
  /// The CTA's ring iteration of key block `kvBlock` of the current tile:
  /// the K and V rings advance by one per key block, across tiles.
  Value ringIteration(Value kvBlock) {
    return add(v.ringBase, sub(kvBlock, v.kvLo));
  }
  /// The address (i64, in the shared window) of `ring`'s buffer of
  /// iteration `i`, plus `offset` (i32) bytes, as fat.wgmma_async reads
  /// operands. (The offset is added in i32 to the buffer's: a 64-bit
  /// loop-invariant offset would be hoisted and held through the tile.)
  Value ringAddress(Value ring, Value i, Value offset = {}) {
    Value bytes = smemOffset(RingBufferOp::create(b, ring, i));
    if (offset)
      bytes = add(bytes, offset);
    return arith::AddIOp::create(b, v.smemAddr, ext64(bytes));
  }
  /// The byte offset (i32) of shared-memory pointer `ptr` from the base.
  Value smemOffset(Value ptr) {
    Value addr = LLVM::PtrToIntOp::create(b, b.getI64Type(), ptr);
    return arith::TruncIOp::create(b, b.getI32Type(),
                                   arith::SubIOp::create(b, addr, v.smemAddr));
  }

  void buildSharedMemoryAndBarriers(LLVM::GlobalOp dynamicSmem);
  /// rowsum=mma: fills the constant ones chunk after every V stage.
  void buildOnesChunks();
  /// linear-bias=mma: fills the bias key columns (fat.bias_keys_fill).
  void buildBiasKeys();
  /// The tile's coordinates from (query block, head, batch): rows, KV
  /// head, KV block range.
  void buildTileCoordinates(Value mBlock, Value head, Value batch);
  /// [lo, hi) of the tile's key blocks narrowed to its rows' key ranges
  /// (cfg.kvRanges): fat.key_block_range.
  std::pair<Value, Value> buildKeyRangeBlocks(Value lo, Value hi);
  /// The key block walked `j`-th from kvLo: j, or j + holeLen at and past
  /// the tile's hole (fat.key_block_hole).
  Value keyBlock(Value j);
  /// The inverse for a block bound p: the first walked index whose block
  /// is ≥ p (a bound inside the hole maps to the hole's start).
  Value walkIndex(Value p);
  /// Whether key block `kvBlock` lies inside the full key range of the
  /// warpgroup's rows (a four-column kv_ranges table), where no mask
  /// region runs: fat.full_key_block.
  Value buildFullKeyBlock(Value kvBlock, Value wgRow);
  /// The warpgroup's full key blocks [first, end): fat.full_key_blocks.
  std::pair<Value, Value> buildFullKeyBlocks(Value wgRow);
  /// Non-persistent: the tile of this CTA, from blockIdx.
  void buildBlockCoordinates();
  /// Persistent: runs `body` on each of this CTA's tiles, the body of a
  /// fat.tile_loop (coordinates, ringBase and tileIndex set in `v` from its
  /// arguments); the next tile's ringBase grows by the tile's KV blocks. The loop also carries `extraInit` from tile to
  /// tile: `body` receives the values of the previous tile and returns the
  /// next ones. Returns the final (ring position, tile count, extras...).
  SmallVector<Value>
  buildTileLoop(ValueRange extraInit,
                function_ref<SmallVector<Value>(ValueRange)> body,
                bool fetchesTiles = false);
  void buildTileLoop(function_ref<void()> body, bool fetchesTiles = false) {
    buildTileLoop(
        ValueRange{},
        [&](ValueRange) {
          body();
          return SmallVector<Value>{};
        },
        fetchesTiles);
  }
  /// A role's walk over its tiles: the persistent tile loop, or the CTA's
  /// one tile (buildBlockCoordinates set it). `fetchesTiles`: this role
  /// takes the dynamic scheduler's units (the producer thread).
  void buildEachTile(function_ref<void()> body, bool fetchesTiles = false) {
    if (cfg.schedule.persistent)
      buildTileLoop(body, fetchesTiles);
    else
      body();
  }
  /// Whether the current tile has key blocks (kvLo < kvHi), and the ring
  /// iteration of its last one (meaningless without).
  Value hasKeyBlocks() {
    return cmp(arith::CmpIPredicate::slt, v.kvLo, v.kvHi);
  }
  Value lastKeyIteration() { return ringIteration(sub(v.kvHi, c32(1))); }
  /// Persistent kernels: every consumer thread releases its tile's Q buffer
  /// after the tile's last S = Q·Kᵀ — unless the epilogue of this path
  /// stages O in it (`stagedInQ`); then buildReleaseStaging does, after the
  /// epilogue.
  void buildReleaseQ(bool stagedInQ);
  /// The tile index for releasing its Q buffer, behind a fat.operand_fence:
  /// Q's full and empty barriers share the address base + 8·slot, and
  /// without the fence LLVM would keep the tile start's 64-bit address
  /// live through the tile for the release (perf log run 108).
  Value qReleaseIteration();
  /// After a staged epilogue: the staging area goes back to the producer
  /// (Q, or with stageOInV the last V stage, or Q for a tile without keys).
  void buildReleaseStaging();
  void buildProducer();
  void buildProducerTile();
  void buildConsumer();
  void buildConsumerTile();

  /// Issues S = Q·Kᵀ for this warpgroup's 64 rows, K the ring's buffer of
  /// iteration `iter` (one fat.wgmma_async, a commit group); the caller
  /// waits. S is an f32 fragment tile. `tmpl`: the tensorized fat.wgmma
  /// it issues (cfg.scoreGemm by default; buildPV's cfg.outputGemm).
  /// `biasA`: linear-bias=mma's query columns, the fragment tile of the
  /// block's fat.bias_query_columns (buildBiasQuery).
  Value buildQK(Value consumer, Value iter, Operation *tmpl = nullptr,
                Value biasA = {}, Value acc = {});
  /// relative-bias=accumulator: the warpgroup's accumulator fragment of
  /// key block iteration `iter`'s terms (waits for the band stage, reads
  /// it, gives it back).
  Value buildBandFragment(Value consumer, Value iter);
  /// relative-bias=accumulator: warp 1 of the producer warpgroup computes
  /// each key block's M + N − 1 terms into the band ring (fat.band_stage).
  void buildBandWriter();
  void buildBandWriterTile();
  /// linear-bias=mma: the tensorized loop's fat.bias_query_columns `tmpl`
  /// on this warpgroup's rows (from wgRow) and key block kvBlock.
  Value buildBiasQuery(Operation *tmpl, Value kvBlock, Value wgRow);
  /// linear-bias=weights: the tensorized loop's fat.key_weights on P's
  /// fragment at key `kvStart` (i32): the weights (the same for every
  /// block) and that block's offsets, one per run of keys.
  KeyWeightsOp buildKeyWeights(Value kvStart);
  /// The tile's weights into v.keyWeights, once per consumer tile (none
  /// without linear-bias=weights).
  void buildTileKeyWeights();
  /// Sets S to −inf where the mask or the ragged KV tail hides the key
  /// (fat.mask of the warpgroup's tile: rows from wgRow, keys from block
  /// kvBlock).
  Value buildMaskedScores(Value s, Value kvBlock, Value wgRow);
  /// buildMaskedScores on the blocks that need it (a CTA-uniform branch).
  Value buildMaskIfNeeded(Value s, Value kvBlock, Value wgRow);
  /// The regions' coordinates for block kvBlock of the warpgroup's tile
  /// (index): batch, head, first row, first key, Sq, Skv.
  SmallVector<Value> modificationCoordinates(Value kvBlock, Value wgRow);
  /// The attention's score and mask modifications: one fat.score_mod /
  /// fat.mask_mod `tmpl` of the tensorized loop on the warpgroup's tile at
  /// coordinates `at` (rows from wgRow, keys from block kvBlock; with full
  /// key ranges, a block in the warpgroup's full range skips the mask
  /// region on a uniform branch).
  Value buildScoreMod(Operation *tmpl, Value s, ArrayRef<Value> at);
  Value buildMaskMod(Operation *tmpl, Value s, ArrayRef<Value> at,
                     Value kvBlock, Value wgRow);
  /// Issues O += P·V with P the 16-bit tile in registers, V the ring's
  /// buffer of iteration `iter` (one fat.wgmma_async, a commit group); the
  /// caller waits. With `accumulate` (i32) zero at run time the result is
  /// P·V alone (O's values are ignored).
  Value buildPV(Value o, Value p, Value iter, Value accumulate = {},
                Operation *tmpl = nullptr);
  /// The online-softmax step on the scores of one block: turns `s` into P
  /// (f32), returns the row vectors m' and l' and α (fat.rescale reads it).
  struct SoftmaxStep {
    Value m, l, alpha;
  };
  /// The warpgroup tile of `cols` columns (a row vector for cols = 0) of
  /// `elt` in the wgmma fragment layout.
  RankedTensorType fragmentType(int64_t cols, Type elt);
  /// The running row sum l: the quad's shares (`#fat.wgmma_fragment
  /// <partial>`) under rowsum=vector; under rowsum=mma a plain row vector
  /// the loop carries unchanged (the ones columns of O sum P).
  RankedTensorType sumType();
  /// A tile of `type` holding `value` everywhere.
  Value fragmentSplat(RankedTensorType type, double value);
  /// The accumulator tile of P·V: O, then the ones columns' l.
  RankedTensorType accType() {
    return fragmentType(cfg.pvColumns(), b.getF32Type());
  }
  /// The 16-bit input type (Q, K, V, P's rounding, O).
  Type inputType() {
    return cfg.isF16 ? Type(b.getF16Type()) : Type(b.getBF16Type());
  }
  /// The block mask's key-range table (the kv_ranges capture): its address
  /// and its static shape [B, groups, columns], the operands of every
  /// fat.key_block_* op.
  Value rangeTable() { return v.captures[*cfg.kvRanges]; }
  ArrayRef<int64_t> rangeTableShape() {
    return cfg.captureTypes[*cfg.kvRanges].getShape();
  }
  /// `tmpl` (an op of the tensorized loop: a fat.softmax_max, ...) moved onto
  /// the warpgroup's tiles: its name and attributes with `operands` and
  /// result `types` (the fragment tiles) in their place.
  Operation *moveTileOp(Operation *tmpl, ValueRange operands, TypeRange types);
  /// The tensorized loop's fat.wgmma `tmpl` as this warpgroup's
  /// fat.wgmma_async: A `a` (a shared-memory address or P's tile, as its
  /// a_from says), B at address `bAddr`, the box strides of the operands
  /// in shared memory (A's first), the accumulator and run-time scale-d;
  /// `biasA`: Q·Kᵀ's extra k16 step on the bias columns (linear-bias=mma).
  Value moveGemm(Operation *tmpl, Value a, Value bAddr,
                 ArrayRef<int64_t> boxStrides, Value acc = {},
                 Value scaleD = {}, Value biasA = {});
  /// The online softmax's two ops, from the tensorized loop's `tmpl`:
  /// (m', α), and (P, l').
  std::pair<Value, Value> buildSoftmaxMax(Operation *tmpl, Value s, Value mOld,
                                          ValueRange offsets = {});
  /// The tensorized loop's splat row constant `rows` on the warpgroup's
  /// rows (row-max=bound's reference).
  Value buildRowConstant(Value rows);
  std::pair<Value, Value> buildSoftmaxExp(Operation *tmpl, Value s, Value m,
                                          Value alpha, Value lOld,
                                          ValueRange offsets = {});
  /// One key block of the tensorized KV loop (cfg.kvLoop) rewritten onto
  /// the warpgroup's tiles: the loop's values → the warpgroup's. The
  /// schedules place the GEMMs, P's rounding and O's rescale; the ops from
  /// S to P are rewritten in the loop's order (rewriteScoreOp).
  struct BlockRewrite {
    IRMapping map;
    /// The key block (past a hole) and the warpgroup's first row.
    Value block, wgRow;
    /// The carried l (rowsum=mma carries it unchanged).
    Value l;
    /// The regions' coordinates, made at the first region.
    SmallVector<Value> at;
    /// The mask is placed.
    bool masked = false;
    /// m', l', α and P (f32) once the softmax is rewritten.
    SoftmaxStep step;
    Value probs;
  };
  scf::ForOp kvLoop() { return cast<scf::ForOp>(cfg.kvLoop); }
  /// A rewrite of a block with the loop's m and l mapped to `m`, `l`.
  BlockRewrite startBlockRewrite(Value wgRow, Value m, Value l);
  /// Rewrites `op` if it is one of the loop's ops from S to P (fat.score_mod,
  /// fat.mask_mod, fat.mask, fat.softmax_max, fat.softmax_exp); false for
  /// any other.
  bool rewriteScoreOp(Operation &op, BlockRewrite &r);
  /// Rewrites `op` if it assembles or splits rowsum=mma's [O | l] around
  /// the P·V (l's fat.rescale, tensor.concat, tensor.extract_slice): the
  /// accumulator tile holds both; false for any other.
  bool rewriteAccumulatorOp(Operation &op, BlockRewrite &r);
  /// Walks the tensorized loop's step in its order: the ops from S to P
  /// and the [O | l] assembly are rewritten here, every other op (the
  /// GEMMs, P's rounding, O's rescale) goes to the schedule's `place`;
  /// returns the values the loop yields, mapped.
  SmallVector<Value> rewriteStep(BlockRewrite &r,
                                 function_ref<void(Operation &)> place);
  /// After the wait for S_j = `s`, the result of the loop's Q·Kᵀ `gemm`:
  /// releases K_j, sets the rewrite's key block (past a hole) and maps S.
  void takeScores(BlockRewrite &r, Operation *gemm, Value s, Value kvBlock,
                  Value iter);
  /// The first key block from which every block may need a mask (the
  /// ragged tail, the causal diagonal or the right window edge), so
  /// blocks below it need none (no left window edge: splitMaskedTail):
  /// fat.first_masked_key_block.
  Value buildFirstMaskedBlock();
  /// P (f32 tile) rounded to the 16-bit A tile of P·V.
  Value buildPackP(Value s);
  /// O = α·O on the accumulator tile, the loop's fat.rescale `tmpl`
  /// (skipped by the warps whose rows kept their max, under lazy rescale).
  Value buildRescale(Operation *tmpl, Value o, Value alpha);
  /// The online softmax before any key: (O = 0, m = −inf, l = 0), the tiles
  /// the consumer loops carry.
  SmallVector<Value> buildEmptyState();
  /// The tensorized step over the tile's key blocks from `init` = (O, m,
  /// l): the plain loop, and what the overlapped schedule expands; its
  /// blocks' ring iteration in `iteration`.
  scf::ForOp buildStepLoop(Value consumer, Value wgRow, ValueRange init,
                           Value *iteration = nullptr);
  /// The two consumer loops, by the P·V's stage; both return (O, m, l).
  SmallVector<Value> buildPlainLoop(Value consumer, Value wgRow);
  SmallVector<Value> buildOverlappedLoop(Value consumer, Value wgRow);
  /// The overlapped schedule on `step` (buildStepLoop): each op's stage and
  /// cluster (P_j packed after the P·V's wait with `packLate`), ping-pong's
  /// turns around the GEMM issues (the drain's the game's last when
  /// `lastTurn`) and the late P·V wait's fence.
  LoopPipeline scheduleOverlap(scf::ForOp step, Value consumer, bool lastTurn,
                               bool packLate);
  /// The overlapped loop's steady state over blocks kvLo+1 .. kvHi−1,
  /// from `init` = (O, m, l, P_kvLo); returns the same after the last
  /// block (P of block kvHi−1 not yet multiplied). `overwriteFirst`: the
  /// first P·V ignores the incoming O (tile overlap hands in the previous
  /// tile's).
  SmallVector<Value> buildSteadyLoop(LoopPipeline &pipeline, Value wgRow,
                                     ValueRange init, bool overwriteFirst);
  /// The consumer's schedules are the tensorized step (cfg.kvLoop)
  /// rewritten op by op onto the warpgroup's tiles, software-pipelined by
  /// the stage of its P·V (pvStage()): stage 0 of block j is everything
  /// from its Q·Kᵀ to its P. A P·V in stage 0 (overlap off) is issued and
  /// retired in its own step: the plain loop. In stage 1 it is issued by
  /// the next step beside that step's Q·Kᵀ and retired after its softmax:
  /// LoopPipeline expands the step into the prologue (stage 0 alone), the
  /// steady loop (both) and the drain (stage 1 alone); tile overlap
  /// continues the same pipeline across tiles (a tile's first step is a
  /// steady step whose stage 1 is the previous tile's last P·V).
  int pvStage() const { return cfg.schedule.overlap ? 1 : 0; }
  /// The step of block kvBlock (ring iteration `iter`) from the carried
  /// (O, m, l); returns (O, m, l) for the next step.
  SmallVector<Value> rewriteKeyBlockStep(Value consumer, Value wgRow,
                                         Value kvBlock, Value iter,
                                         ValueRange carried);
  /// Sets the run-time accumulate flag of P·V `pv` (built by `flag` right
  /// before its V buffer's address).
  void setAccumulate(WgmmaAsyncOp pv, function_ref<Value()> flag);
  /// One steady-state loop over blocks [lo, hi) (buildSteadyLoop).
  scf::ForOp buildSteadyRange(LoopPipeline &pipeline, ValueRange init,
                              bool overwriteFirst, Value lo, Value hi);
  /// Peels the iterations [lo, loop's lower bound) of a steady loop into a
  /// copy before it in which no block needs a mask (and, `full`, every
  /// block lies in the warpgroup's full key range): the mask branches fold
  /// away there. The loop then starts from the copy's results, behind a
  /// fat.operand_fence.
  void peelUnmaskedBlocks(scf::ForOp loop, Value lo, bool full);
  /// Tile overlap (KernelSchedule::tileOverlap): the consumer's tile loop,
  /// one tile, and the final P·V after the last tile. A tile's step loop
  /// (with its blocks' ring iteration and its schedule) stays until the
  /// final P·V is emitted from it.
  struct TileStep {
    scf::ForOp loop;
    Value iter;
    LoopPipeline pipeline;
  };
  void buildOverlappedTiles();
  SmallVector<Value> buildOverlappedTile(Value consumer, ValueRange pending,
                                         std::optional<TileStep> &step);
  void buildDrainPending(Value consumer, Value ringPosition, ValueRange pending,
                         TileStep &step);
  /// The pending tile's V block from the CTA's ring position (blocks
  /// issued so far): whether there is one (position > 0) and its ring
  /// iteration (0 when there is none: the P = 0 product reads any stage).
  struct PendingSlot {
    Value isPending, iteration;
  };
  PendingSlot buildPendingSlot(Value ringPosition);
  void buildStorePending(Value consumer, const PendingSlot &slot, Value o,
                         const PendingTile &pending);
  /// The pending tile's last P·V as `pipeline`'s stage 1 (map1: its O, P
  /// and V's ring iteration), beside a tile's first block (part Steady,
  /// K's ring iteration kIter) or alone (part Drain): issued with the
  /// tile's accumulate bit, retired by storing the tile
  /// (buildStorePending). Returns the carried values after it.
  SmallVector<Value> emitPendingStageOne(LoopPipeline &pipeline,
                                         PipelinePart part, IRMapping &map0,
                                         IRMapping &map1, Value consumer,
                                         const PendingSlot &slot,
                                         const PendingTile &pending,
                                         Value kIter);
  /// Ping-pong turn taking around one GEMM issue phase (no-ops without it),
  /// and the game's first hand-over (the last consumer to 0) and last
  /// take-over: the fat.turn* ops.
  void buildOpenGame(Value consumer);
  void buildCloseGame(Value consumer);
  void buildTurnBegin(Value consumer);
  void buildTurnEnd(Value consumer, bool lastTurn);
  /// Writes O / l (and the LSE) of the warpgroup's 64 rows from `wgRow`
  /// of (batch, head): fat.finalize of the accumulator tile `o` and the
  /// row vectors `m`, `l` (ignored under rowsum=mma: the ones columns of
  /// `o` hold the sums), then fat.stage_output / fat.store_output.
  /// The parts: `storeO`, `storeLse` (only where the kernel writes one).
  void buildEpilogue(Value o, Value m, Value l, Value wgRow, Value batch,
                     Value head, bool storeO = true, bool storeLse = true);
  /// The first row of the consumer's warpgroup (64 rows each) in the tile
  /// starting at row `rowFirst`.
  Value warpgroupRow(Value consumer, Value rowFirst) {
    return add(rowFirst, mul(consumer, c32(64)));
  }

  const AttentionKernelConfig &cfg;
  KernelValues v;
};

} // namespace hopper
} // namespace fat
} // namespace mlir

#endif // FAT_LIB_DIALECT_FAT_HOPPER_ATTENTIONKERNELBUILDER_H
