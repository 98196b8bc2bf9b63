//===- AttentionKernelConsumer.cpp - the consumer loops -------------------===//
//
// The consumer warpgroups' schedules over a tile's key blocks, all the loop
// of one step of the tensorized KV loop: the plain loop, the overlapped
// software pipeline (its ops' stages and clusters set by scheduleOverlap,
// expanded by LoopPipeline: P_{j−1}·V_{j−1} under softmax_j; prologue,
// steady loop, drain), the steady loop split at the mask's first block
// (index-set splitting), ping-pong turns on named barriers, and tile
// overlap (the pipeline across a persistent CTA's tiles).
//
//===----------------------------------------------------------------------===//

#include "AttentionKernelBuilder.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/TypeSwitch.h"

#include <limits>
#include <optional>

using namespace mlir;
using namespace mlir::fat;
using namespace mlir::fat::hopper;

void AttentionKernelBuilder::buildConsumer() {
  if (!cfg.schedule.persistent) {
    buildConsumerTile();
    return;
  }
  // Ping-pong over tiles: one game, opened before the first tile and closed
  // after the last, with every turn handed over in between. A game per
  // tile would be as correct (test/CPU/test_barrier_protocol.py checks both
  // orders of turns), but consumer 1 would re-open it only after its own
  // epilogue; here its last turn of tile i hands over at once, so consumer
  // 0 issues tile i+1's first S = Q·Kᵀ while consumer 1 stores O.
  if (cfg.schedule.tileOverlap) {
    buildOverlappedTiles();
    return;
  }
  Value consumer = sub(v.warpgroup, c32(1));
  buildOpenGame(consumer);
  buildTileLoop([&] { buildConsumerTile(); });
  buildCloseGame(consumer);
}

void AttentionKernelBuilder::buildConsumerTile() {
  Value consumer = sub(v.warpgroup, c32(1));
  Value wgRow = warpgroupRow(consumer, v.rowFirst);
  buildTileKeyWeights();

  RingWaitOp::create(b, v.qRing, v.tileIndex);
  SmallVector<Value> results = pvStage() == 1
                                   ? buildOverlappedLoop(consumer, wgRow)
                                   : buildPlainLoop(consumer, wgRow);
  buildEpilogue(results[0], results[1], results[2], wgRow, v.batch,
                v.head);
  buildReleaseStaging();
}

// Ping-pong's turns (FatKernelOps.td has the game): the consumer
// warpgroups issue their GEMMs in turns; without ping-pong these build
// nothing.
void AttentionKernelBuilder::buildOpenGame(Value consumer) {
  if (cfg.schedule.pingpong)
    TurnsOpenOp::create(b, consumer, cfg.numConsumerWarpgroups());
}

void AttentionKernelBuilder::buildCloseGame(Value consumer) {
  if (cfg.schedule.pingpong)
    TurnsCloseOp::create(b, consumer, cfg.numConsumerWarpgroups());
}

void AttentionKernelBuilder::buildTurnBegin(Value consumer) {
  if (cfg.schedule.pingpong)
    TurnBeginOp::create(b, consumer, cfg.numConsumerWarpgroups());
}

void AttentionKernelBuilder::buildTurnEnd(Value consumer, bool lastTurn) {
  if (cfg.schedule.pingpong)
    TurnEndOp::create(b, consumer, cfg.numConsumerWarpgroups(), lastTurn);
}

SmallVector<Value> AttentionKernelBuilder::buildEmptyState() {
  RankedTensorType rows = fragmentType(0, b.getF32Type());
  return {fragmentSplat(accType(), 0.0),
          fragmentSplat(rows, -std::numeric_limits<double>::infinity()),
          fragmentSplat(sumType(), 0.0)};
}

scf::ForOp AttentionKernelBuilder::buildStepLoop(Value consumer, Value wgRow,
                                                 ValueRange init,
                                                 Value *iteration) {
  // Loop-carried: the tiles O (with l's ones columns beside it under
  // rowsum=mma), m and l.
  auto loop = scf::ForOp::create(b, v.kvLo, v.kvHi, c32(1), init);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value j = loop.getInductionVar();
  Value iter = ringIteration(j);
  if (iteration)
    *iteration = iter;
  scf::YieldOp::create(b, rewriteKeyBlockStep(consumer, wgRow, j, iter,
                                              loop.getRegionIterArgs()));
  return loop;
}

SmallVector<Value> AttentionKernelBuilder::buildPlainLoop(Value consumer,
                                                          Value wgRow) {
  scf::ForOp loop = buildStepLoop(consumer, wgRow, buildEmptyState());
  tagStage(loop, "mainloop");
  tag(loop, "fat.order",
      b.getStrArrayAttr({"wait K(j)", "S(j) = Q*K(j)^T", "wait S", "softmax(j)",
                         "O = alpha*O", "wait V(j)", "O += P(j)*V(j)",
                         "wait O"}));
  buildReleaseQ(/*stagedInQ=*/cfg.stageO);
  return SmallVector<Value>(loop.getResults());
}

SmallVector<Value>
AttentionKernelBuilder::rewriteStep(BlockRewrite &r,
                                    function_ref<void(Operation &)> place) {
  scf::ForOp tmpl = kvLoop();
  for (Operation &op : tmpl.getBody()->without_terminator())
    if (!rewriteScoreOp(op, r) && !rewriteAccumulatorOp(op, r))
      place(op);
  auto yield = cast<scf::YieldOp>(tmpl.getBody()->getTerminator());
  return llvm::map_to_vector(yield.getOperands(),
                             [&](Value x) { return r.map.lookup(x); });
}

bool AttentionKernelBuilder::rewriteAccumulatorOp(Operation &op,
                                                  BlockRewrite &r) {
  // Under rowsum=mma the loop carries O and l apart and assembles
  // [α·O | α·l] around its P·[V | 1]; the kernel's accumulator tile holds
  // both (its ones columns sum P) and l is carried unchanged. So l's
  // rescale is l, the concat is the rescaled accumulator (V's ones columns
  // are the ring's: unmapped), and the slices of [O' | l'] are the
  // accumulator and l.
  return llvm::TypeSwitch<Operation *, bool>(&op)
      .Case([&](RescaleOp rescale) {
        if (cast<ShapedType>(rescale.getType()).getRank() != 1)
          return false;
        r.map.map(rescale.getResult(), r.map.lookup(rescale.getInput()));
        return true;
      })
      .Case([&](tensor::ConcatOp concat) {
        if (Value acc = r.map.lookupOrNull(concat.getInputs().front()))
          r.map.map(concat.getResult(), acc);
        return true;
      })
      .Case([&](tensor::ExtractSliceOp slice) {
        if (Value acc = r.map.lookupOrNull(slice.getSource()))
          r.map.map(slice.getResult(),
                    slice.getType().getRank() == 2 ? acc : r.l);
        return true;
      })
      .Default([](Operation *) { return false; });
}

namespace {
/// The overlapped schedule's clusters: one iteration of its steady loop
/// issues them in this order (stage 0 of block j, stage 1 of block j − 1).
enum OverlapCluster : int64_t {
  kWaitOperands, // j's ring iteration; wait for K_j, then for V_{j−1}
  kIssue,        // S_j = Q·K_jᵀ, then O += P_{j−1}·V_{j−1}: one turn
  kSoftmax,      // wait for S_j, release K_j, S_j → P_j (P_j packed here
                 // unless the P·V wait is late)
  kRetirePV,     // wait for P_{j−1}·V_{j−1}
  kLatePack,     // P_j packed into the registers P_{j−1} leaves
  kReleaseV,     // V_{j−1} back to the producer
  kRescale,      // O = α_j·O, after the P·V it scales (O then holds
                 // Σ_{i<j} relative to m_{j−1}; α_j moves it to m_j)
};
} // namespace

/// The step's P·V: its GEMM with A in registers.
static WgmmaAsyncOp findPV(Block *body) {
  WgmmaAsyncOp pv;
  for (auto gemm : body->getOps<WgmmaAsyncOp>())
    if (gemm.getARegs())
      pv = gemm;
  return pv;
}

LoopPipeline AttentionKernelBuilder::scheduleOverlap(scf::ForOp step,
                                                     Value consumer,
                                                     bool lastTurn,
                                                     bool packLate) {
  // The stage of each op of the step: its P·V with V's ring wait and
  // release in stage 1, everything else in stage 0; an op the schedule
  // does not name goes with its users (stage 1 if only stage 1 reads it,
  // else stage 0, no later than the softmax).
  Block *body = step.getBody();
  WgmmaAsyncOp pv = findPV(body);
  using Slot = std::pair<int64_t, int64_t>;
  auto fromUsers = [&](Operation &op) -> Slot {
    std::optional<int64_t> stageOne, stageZero;
    for (Operation *user : op.getUsers()) {
      Operation *top = body->findAncestorOpInBlock(*user);
      if (isa<scf::YieldOp>(top))
        continue;
      auto stage = top->getAttrOfType<IntegerAttr>(kPipelineStage).getInt();
      auto cluster = top->getAttrOfType<IntegerAttr>(kPipelineCluster).getInt();
      std::optional<int64_t> &at = stage ? stageOne : stageZero;
      at = std::min(at.value_or(cluster), cluster);
    }
    if (stageOne && !stageZero)
      return {1, *stageOne};
    return {0, std::min<int64_t>(stageZero.value_or(kSoftmax), kSoftmax)};
  };
  for (Operation &op : llvm::reverse(body->without_terminator())) {
    Slot slot =
        llvm::TypeSwitch<Operation *, Slot>(&op)
            .Case([&](RingWaitOp wait) -> Slot {
              return {wait.getRing() == v.vRing, kWaitOperands};
            })
            .Case([&](WgmmaAsyncOp gemm) -> Slot {
              return {gemm == pv, kIssue};
            })
            .Case([&](WgmmaWaitOp wait) -> Slot {
              if (llvm::is_contained(wait.getInputs(), pv.getResult()))
                return {1, kRetirePV};
              return {0, kSoftmax};
            })
            .Case([&](RingReleaseOp release) -> Slot {
              if (release.getRing() == v.vRing)
                return {1, kReleaseV};
              return {0, kSoftmax};
            })
            .Case<arith::TruncFOp, arith::MulFOp>([&](Operation *pack) -> Slot {
              // P's rounding, or its weights after it
              // (linear-bias=weights): the op that makes P·V's A.
              if (pack->getResult(0) != pv.getARegs())
                return fromUsers(op);
              return {0, packLate ? kLatePack : kSoftmax};
            })
            .Case([&](RescaleOp) -> Slot {
              return {0, kRescale};
            })
            .Default([&](Operation *) { return fromUsers(op); });
    setPipelineSchedule(&op, slot.first, slot.second);
  }
  FailureOr<LoopPipeline> pipeline = LoopPipeline::analyze(step);
  if (failed(pipeline))
    llvm::report_fatal_error("fa-t: the overlapped schedule does not expand");
  pipeline->setClusterHook(
      [this, consumer, lastTurn](OpBuilder &, int64_t cluster,
                                 PipelinePart part, bool after) {
        // Ping-pong: a step's GEMMs are issued in one turn.
        if (cluster == kIssue && !after)
          buildTurnBegin(consumer);
        if (cluster == kIssue && after)
          buildTurnEnd(consumer, lastTurn && part == PipelinePart::Drain);
        // Packed late, P_j follows the wait, and the fence keeps ptxas from
        // lifting the wait (and with it the rest of the softmax) above the
        // exponentials.
        if (cluster == kRetirePV && !after && part == PipelinePart::Steady &&
            cfg.latePVWait)
          buildSchedulingFence(b, v.seqKV);
      });
  return *pipeline;
}

/// Each fat.wgmma_wait of `block` waits for the youngest commit group it
/// returns a result of: `pending` is the number of groups issued after it
/// and not yet retired (groups retire in order).
static void assignWaitPending(Block &block) {
  SmallVector<Operation *> inFlight;
  for (Operation &op : block) {
    if (isa<WgmmaAsyncOp>(op))
      inFlight.push_back(&op);
    auto wait = dyn_cast<WgmmaWaitOp>(op);
    if (!wait)
      continue;
    std::optional<size_t> youngest;
    for (auto [i, group] : llvm::enumerate(inFlight))
      if (llvm::is_contained(wait.getInputs(), group->getResult(0)))
        youngest = i;
    if (!youngest)
      continue;
    wait.setPendingAttr(IntegerAttr::get(IntegerType::get(op.getContext(), 32),
                                         inFlight.size() - *youngest - 1));
    inFlight.erase(inFlight.begin(), inFlight.begin() + *youngest + 1);
  }
}

/// `wait` (which retires a P·V) also returning that P·V's A tile `a`, so
/// that a's registers stay live up to the wait and the next P cannot be
/// coalesced into them while the wgmma still reads them (ptxas would see
/// the A operand redefined mid-flight and serialize every wgmma, C7513).
/// Returns the new wait's results for the old ones.
static ValueRange keepOperandLive(WgmmaWaitOp wait, Value a) {
  SmallVector<Value> inputs(wait.getInputs());
  inputs.push_back(a);
  OpBuilder builder(wait);
  auto kept =
      WgmmaWaitOp::create(builder, wait.getLoc(), wait.getPending(), inputs);
  ValueRange results = kept.getResults().take_front(wait->getNumResults());
  wait->replaceAllUsesWith(results);
  wait.erase();
  return results;
}

/// In the steady loop, the waits for P·Vs of the P the loop carries.
static void keepCarriedOperandsLive(scf::ForOp loop) {
  for (auto wait :
       llvm::make_early_inc_range(loop.getBody()->getOps<WgmmaWaitOp>()))
    for (Value in : wait.getInputs()) {
      auto gemm = in.getDefiningOp<WgmmaAsyncOp>();
      auto a = gemm ? dyn_cast_or_null<BlockArgument>(gemm.getARegs())
                    : BlockArgument();
      if (a && a.getOwner() == loop.getBody() &&
          !llvm::is_contained(wait.getInputs(), a)) {
        keepOperandLive(wait, a);
        break;
      }
    }
}

SmallVector<Value> AttentionKernelBuilder::buildOverlappedLoop(Value consumer,
                                                               Value wgRow) {
  SmallVector<Value> empty = buildEmptyState();

  // The software pipeline needs a first block: CTAs with an empty KV range
  // (all rows masked out) skip straight to the epilogue with O = 0, l = 0.
  Value hasWork = hasKeyBlocks();
  auto work = scf::IfOp::create(b, TypeRange(ValueRange(empty)), hasWork,
                                /*withElseRegion=*/true);
  tagStage(work, "prologue");
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(work.elseBlock());
  // Without a key block there is no V stage to stage O in: it goes through
  // Q in either staging mode.
  buildReleaseQ(/*stagedInQ=*/cfg.stageO);
  scf::YieldOp::create(b, empty);
  b.setInsertionPointToStart(work.thenBlock());

  // A persistent CTA plays one game over all its tiles (buildConsumer).
  if (!cfg.schedule.persistent)
    buildOpenGame(consumer);

  // The step over the tile's blocks, expanded by its stages.
  scf::ForOp step = buildStepLoop(consumer, wgRow, empty);
  LoopPipeline pipeline =
      scheduleOverlap(step, consumer, /*lastTurn=*/!cfg.schedule.persistent,
                      /*packLate=*/cfg.latePVWait);

  // Prologue, block kvLo: the step's first stage alone (S_0, its softmax,
  // P_0). O is still the empty state: α·0 = 0 for every α fat.softmax_max
  // gives (finite; 0 before any visible key), so it is not rescaled.
  SmallVector<Value> init = pipeline.emitPrologue(b, v.kvLo, empty);
  if (auto rescale = init[0].getDefiningOp<RescaleOp>();
      rescale && rescale.getInput() == empty[0]) {
    init[0] = empty[0];
    rescale.erase();
  }

  // Steady state, blocks kvLo+1 .. kvHi−1, carrying (O, m, l, P_{j−1}).
  SmallVector<Value> last = buildSteadyLoop(pipeline, wgRow, init,
                                            /*overwriteFirst=*/false);

  // Every S of the tile is done: Q may be overwritten (persistent).
  buildReleaseQ(/*stagedInQ=*/cfg.stageO && !cfg.stageOInV());
  // Drain: O += P_last·V_last. With stageOInV the epilogue stages O in
  // this V stage and releases it.
  SmallVector<Value> results = pipeline.emitDrain(b, sub(v.kvHi, c32(1)), last);
  if (cfg.stageOInV())
    for (Operation &op : llvm::reverse(*b.getInsertionBlock()))
      if (auto release = dyn_cast<RingReleaseOp>(op);
          release && release.getRing() == v.vRing) {
        release.erase();
        break;
      }
  step.erase();
  scf::YieldOp::create(b, results);
  return SmallVector<Value>(work.getResults());
}

SmallVector<Value>
AttentionKernelBuilder::buildSteadyLoop(LoopPipeline &pipeline, Value wgRow,
                                        ValueRange init, bool overwriteFirst) {
  // Where it measured faster (splitMaskedTail), the blocks below the first
  // one a mask can touch are peeled into a copy of the loop whose body has
  // no mask branch (one basic block for ptxas), then the rest with it.
  Value lo = add(v.kvLo, c32(1));
  if (!cfg.splitMaskedTail)
    return buildSteadyRange(pipeline, init, overwriteFirst, lo, v.kvHi)
        .getResults();
  Value firstMasked = walkIndex(buildFirstMaskedBlock());
  bool full = cfg.skipsFullKeyBlocks();
  if (full) {
    // With full key ranges the first copy also skips the mask region: it
    // ends at the warpgroup's last full block, and is empty unless its
    // first block is full (perf log run 93).
    auto blocks = buildFullKeyBlocks(wgRow);
    Value fromFull =
        cmp(arith::CmpIPredicate::sge, keyBlock(lo), blocks.first);
    firstMasked = arith::SelectOp::create(
        b, fromFull,
        arith::MinSIOp::create(b, firstMasked, walkIndex(blocks.second)), lo);
  }
  Value mid = arith::MaxSIOp::create(
      b, lo, arith::MinSIOp::create(b, v.kvHi, firstMasked));
  scf::ForOp loop =
      buildSteadyRange(pipeline, init, overwriteFirst, mid, v.kvHi);
  peelUnmaskedBlocks(loop, lo, full);
  return loop.getResults();
}

void AttentionKernelBuilder::peelUnmaskedBlocks(scf::ForOp loop, Value lo,
                                                bool full) {
  // Index-set splitting: iterations [lo, mid) of the loop over [mid, hi)
  // run in a copy before it, where every block is known to need no mask
  // (fat.key_block_needs_mask false) and, with `full`, to lie in the
  // warpgroup's full key range (fat.full_key_block true), so the branches
  // on them fold to the scores they keep.
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(loop);
  auto peeled = cast<scf::ForOp>(b.clone(*loop));
  peeled.setLowerBound(lo);
  peeled.setUpperBound(loop.getLowerBound());
  tagStage(peeled, "mainloop");
  SmallVector<std::pair<Operation *, bool>> known;
  peeled.walk([&](KeyBlockNeedsMaskOp op) { known.push_back({op, false}); });
  if (full)
    peeled.walk([&](FullKeyBlockOp op) { known.push_back({op, true}); });
  IRRewriter rewriter(b);
  for (auto [predicate, value] : known) {
    for (Operation *user :
         llvm::make_early_inc_range(predicate->getResult(0).getUsers())) {
      auto branch = dyn_cast<scf::IfOp>(user);
      if (!branch || branch.getCondition() != predicate->getResult(0))
        continue;
      Block *taken = value ? branch.thenBlock() : branch.elseBlock();
      auto yield = cast<scf::YieldOp>(taken->getTerminator());
      SmallVector<Value> kept(yield.getOperands());
      rewriter.eraseOp(yield);
      rewriter.inlineBlockBefore(taken, branch);
      rewriter.replaceOp(branch, kept);
    }
    if (predicate->use_empty())
      rewriter.eraseOp(predicate);
  }
  // Pinned between the loops: otherwise ptxas may join them with copies of
  // the carried P and O that it counts as redefining wgmma operands inside
  // a pipeline stage, and serializes every wgmma (C7513).
  loop.getInitArgsMutable().assign(
      buildFenceOperands(b, peeled.getResults()));
}

scf::ForOp AttentionKernelBuilder::buildSteadyRange(LoopPipeline &pipeline,
                                                    ValueRange init,
                                                    bool overwriteFirst,
                                                    Value lo, Value hi) {
  scf::ForOp loop = pipeline.emitSteadyLoop(b, lo, hi, init);
  tagStage(loop, cfg.splitMaskedTail ? "mainloop-edge" : "mainloop");
  tag(loop, "fat.order",
      b.getStrArrayAttr({"wait K(j), V(j-1)", "S(j) = Q*K(j)^T",
                         "O += P(j-1)*V(j-1)", "wait S (1 pending)",
                         "softmax(j)", "wait O", "O = alpha*O"}));
  assignWaitPending(*loop.getBody());
  keepCarriedOperandsLive(loop);
  if (overwriteFirst) {
    // Block kvLo+1's P·V starts the tile's O (tile overlap hands in the
    // previous tile's).
    Value j = loop.getInductionVar();
    setAccumulate(findPV(loop.getBody()), [&]() -> Value {
      return arith::ExtUIOp::create(
          b, b.getI32Type(),
          cmp(arith::CmpIPredicate::ne, j, add(v.kvLo, c32(1))));
    });
  }
  return loop;
}

void AttentionKernelBuilder::setAccumulate(WgmmaAsyncOp pv,
                                           function_ref<Value()> flag) {
  // The P·V's run-time accumulate flag (fat.wgmma_async scale_d), built
  // right before the address of its V buffer.
  Operation *first = pv;
  for (Operation *op = pv->getPrevNode(); op; op = op->getPrevNode()) {
    first = op;
    if (auto buffer = dyn_cast<RingBufferOp>(op);
        buffer && buffer.getRing() == v.vRing)
      break;
  }
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(first);
  pv.getScaleDMutable().assign(flag());
}

SmallVector<Value>
AttentionKernelBuilder::rewriteKeyBlockStep(Value consumer, Value wgRow,
                                            Value kvBlock, Value iter,
                                            ValueRange carried) {
  // The tensorized loop's step for block j, its ops in the loop's order:
  //   Q·Kᵀ     issued and waited for, K released;
  //   S → P    as they are (rewriteScoreOp); P's rounding and O's rescale
  //            in the loop's order;
  //   P·V      issued, waited for and V released.
  // This is every schedule's step: the overlapped one expands its loop by
  // stages (scheduleOverlap).
  BlockRewrite r = startBlockRewrite(wgRow, carried[1], carried[2]);
  IRMapping &map = r.map;
  map.map(kvLoop().getRegionIterArgs()[0], carried[0]);
  return rewriteStep(r, [&](Operation &op) {
    llvm::TypeSwitch<Operation *>(&op)
        .Case([&](BiasQueryColumnsOp query) { // linear-bias=mma
          map.map(query.getResult(), buildBiasQuery(query, kvBlock, wgRow));
        })
        .Case([&](WgmmaOp gemm) {
          if (gemm.getTransposeB()) {
            RingWaitOp::create(b, v.kRing, iter);
            Value biasA, terms;
            if (auto concat = gemm.getA().getDefiningOp<tensor::ConcatOp>())
              biasA = map.lookup(concat.getInputs().back());
            if (gemm.getAcc()) // relative-bias=accumulator
              terms = buildBandFragment(consumer, iter);
            Value s = buildWgmmaWait(
                b, 0, buildQK(consumer, iter, gemm, biasA, terms))[0];
            takeScores(r, gemm, s, kvBlock, iter);
            return;
          }
          RingWaitOp::create(b, v.vRing, iter);
          Value pv = buildPV(map.lookup(gemm.getAcc()), map.lookup(gemm.getA()),
                             iter, {}, gemm);
          map.map(gemm.getResult(), buildWgmmaWait(b, 0, pv)[0]);
          RingReleaseOp::create(b, v.vRing, iter);
        })
        .Case([&](arith::TruncFOp t) { // P, the 16-bit A tile
          map.map(t.getResult(), buildPackP(map.lookup(t.getIn())));
        })
        .Case([&](arith::MulFOp t) { // linear-bias=weights: P·ŵ
          map.map(t.getResult(), arith::MulFOp::create(
                                     b, map.lookup(t.getLhs()), v.keyWeights));
        })
        .Case([&](RescaleOp t) { // O's
          map.map(t.getResult(), buildRescale(t, map.lookup(t.getInput()),
                                              map.lookup(t.getFactor())));
        });
  });
}

void AttentionKernelBuilder::buildOverlappedTiles() {
  // Tile overlap: per tile of n ≥ 1 key blocks,
  //   turn 1:     S_0 = Q·K_0ᵀ of this tile, O' += P'·V' of the pending tile
  //   wait S_0; softmax_0; wait O'; store the pending tile's O', l', LSE
  //   turns 2..n: the overlapped steady state (its first P·V overwrites O)
  // and the last tile's P·V after the loop, so a tile takes n GEMM-issue
  // turns (not n + 1) and the next tile's first scores are computed while
  // the tensor cores finish this one. A tile without keys (all its rows
  // masked) stores O = 0, LSE = −inf and leaves the pending tile as it is.
  Value consumer = sub(v.warpgroup, c32(1));
  // Nothing pending yet: the empty state, P = 0 and tile id 0.
  SmallVector<Value> nothing = buildEmptyState();
  // A pending tile's sums are complete (see buildOverlappedTile).
  nothing[2] = fragmentSplat(fragmentType(0, b.getF32Type()), 0.0);
  Type elt = inputType();
  nothing.append({fragmentSplat(fragmentType(cfg.blockN, elt), 0.0), c32(0)});
  PendingTile none = PendingTile::unpack(nothing);
  buildOpenGame(consumer);
  std::optional<TileStep> step;
  SmallVector<Value> last = buildTileLoop(none.pack(), [&](ValueRange pending) {
    return buildOverlappedTile(consumer, pending, step);
  });
  buildDrainPending(consumer, last[0], ArrayRef<Value>(last).drop_front(2),
                    *step);
  step->loop.erase();
  buildCloseGame(consumer);
}

SmallVector<Value> AttentionKernelBuilder::buildOverlappedTile(
    Value consumer, ValueRange pendingVals, std::optional<TileStep> &step) {
  PendingTile pending = PendingTile::unpack(pendingVals);
  SmallVector<Value> empty = buildEmptyState();
  Value wgRow = warpgroupRow(consumer, v.rowFirst);
  buildTileKeyWeights();
  // This tile's name once it is pending, taken now: the coordinates it is
  // made of then need no registers through the tile.
  Value tile = add(mul(add(mul(v.batch, c32(cfg.numHeadsQ)), v.head), v.numM),
                   v.mBlock);
  RingWaitOp::create(b, v.qRing, v.tileIndex);

  Value hasWork = hasKeyBlocks();
  auto work = scf::IfOp::create(b, TypeRange(ValueRange(pendingVals)),
                                hasWork, /*withElseRegion=*/true);
  tagStage(work, "prologue");
  tag(work, "fat.order",
      b.getStrArrayAttr({"wait K(0), V'", "S(0) = Q*K(0)^T", "O' += P'*V'",
                         "wait S (1 pending)", "softmax(0)", "wait O'",
                         "store O'", "mainloop"}));
  OpBuilder::InsertionGuard guard(b);
  // No keys: this tile's rows get O = 0, LSE = −inf; the pending tile
  // stays pending.
  b.setInsertionPointToStart(work.elseBlock());
  buildReleaseQ(/*stagedInQ=*/false);
  buildEpilogue(empty[0], empty[1], empty[2], wgRow, v.batch, v.head);
  scf::YieldOp::create(b, pendingVals);

  b.setInsertionPointToStart(work.thenBlock());
  // The first block's step is the steady loop's with the pending tile's
  // last P·V as its stage 1 (the pipeline across the tile boundary): it
  // issues that P·V beside S_0 and stores the tile once it retires.
  Value firstIter = ringIteration(v.kvLo);
  PendingSlot slot = buildPendingSlot(v.ringBase);
  Value iter;
  scf::ForOp loop = buildStepLoop(consumer, wgRow, empty, &iter);
  LoopPipeline first = scheduleOverlap(loop, consumer, /*lastTurn=*/false,
                                       /*packLate=*/true);
  IRMapping map0, map1;
  map0.map(loop.getInductionVar(), v.kvLo);
  map0.map(loop.getRegionIterArgs(), empty);
  map0.map(iter, firstIter);
  first.mapStageOneInputs(map1, pendingVals.take_front(4));
  map1.map(iter, slot.iteration);
  SmallVector<Value> init =
      emitPendingStageOne(first, PipelinePart::Steady, map0, map1, consumer,
                          slot, pending, firstIter);

  // Blocks kvLo+1 .. kvHi−1; the first P·V overwrites the stored O.
  step.emplace(TileStep{loop, iter,
                        scheduleOverlap(loop, consumer, /*lastTurn=*/false,
                                        /*packLate=*/cfg.latePVWait)});
  SmallVector<Value> last =
      buildSteadyLoop(step->pipeline, wgRow, init, /*overwriteFirst=*/true);
  // Every S of the tile is done: Q may be overwritten.
  buildReleaseQ(/*stagedInQ=*/false);

  // The steady loop carries {O, m, l, P}; the tile id is set below.
  PendingTile next{last[0], last[1], last[2], last[3], Value()};
  if (!cfg.schedule.rowsumMma) {
    // The vector row sums and the row max are final before the last P·V:
    // finish the sums and write the LSE now, so that only the two sums
    // wait in registers through the next tile's first block.
    next.l = ConvertLayoutOp::create(
        b, fragmentType(0, b.getF32Type()), next.l);
    buildEpilogue(next.o, next.m, next.l, wgRow, v.batch, v.head,
                  /*storeO=*/false, /*storeLse=*/true);
    next.m = empty[1];
  }
  // Bit 31: more than one block, so its last P·V adds to O.
  Value several = arith::ExtUIOp::create(
      b, b.getI32Type(),
      cmp(arith::CmpIPredicate::ugt, sub(v.kvHi, v.kvLo), c32(1)));
  next.id = arith::OrIOp::create(b, tile,
                                 arith::ShLIOp::create(b, several, c32(31)));
  scf::YieldOp::create(b, next.pack());
  return SmallVector<Value>(work.getResults());
}

AttentionKernelBuilder::PendingSlot
AttentionKernelBuilder::buildPendingSlot(Value ringPosition) {
  Value isPending = cmp(arith::CmpIPredicate::ugt, ringPosition, c32(0));
  return {isPending,
          arith::SelectOp::create(b, isPending, sub(ringPosition, c32(1)),
                                  c32(0))};
}


void AttentionKernelBuilder::buildStorePending(Value consumer,
                                               const PendingSlot &slot,
                                               Value o,
                                               const PendingTile &pending) {
  // Release the pending tile's V block and store its O (and LSE).
  auto store = scf::IfOp::create(b, slot.isPending, /*withElseRegion=*/false);
  tagStage(store, "epilogue");
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(store.thenBlock()->getTerminator());
  RingReleaseOp::create(b, v.vRing, slot.iteration);
  Value tile = arith::AndIOp::create(b, pending.id, c32(0x7fffffff));
  Value rest = arith::DivUIOp::create(b, tile, v.numM);
  Value heads = c32(cfg.numHeadsQ);
  Value rowFirst =
      mul(arith::RemUIOp::create(b, tile, v.numM), c32(cfg.blockM));
  // rowsum=vector: the sums are final and the LSE written (tile end).
  bool vectorSums = !cfg.schedule.rowsumMma;
  buildEpilogue(o, pending.m, pending.l, warpgroupRow(consumer, rowFirst),
                arith::DivUIOp::create(b, rest, heads),
                arith::RemUIOp::create(b, rest, heads), /*storeO=*/true,
                /*storeLse=*/!vectorSums);
}

SmallVector<Value> AttentionKernelBuilder::emitPendingStageOne(
    LoopPipeline &pipeline, PipelinePart part, IRMapping &map0, IRMapping &map1,
    Value consumer, const PendingSlot &slot, const PendingTile &pending,
    Value kIter) {
  // The pending tile's P·V as stage 1 (map1 holds its O, P and V's ring
  // iteration), emitted as `part`, then made the pending tile's: V is
  // waited for only where a tile is pending (nothing pending: after a first
  // step, K_0's buffer stands in — the P = 0 product is never stored; in
  // the final drain, no wait), the P·V accumulates by the tile's bit 31,
  // and its retirement stores the tile. Beside a new tile's first block
  // (part Steady) that block's P_0 is packed after the wait into registers
  // the pending P leaves, the pending P kept live to the wait, and this
  // tile's O — overwritten by its next P·V — is not rescaled.
  Block *block = b.getInsertionBlock();
  Operation *before = block->empty() ? nullptr : &block->back();
  pipeline.emit(b, part, map0, map1);
  SmallVector<Value> carried = pipeline.carriedAfter(map0, map1);
  auto emitted = llvm::make_early_inc_range(llvm::make_range(
      before ? std::next(before->getIterator()) : block->begin(),
      block->end()));
  auto replaceCarried = [&](ValueRange from, ValueRange to) {
    for (Value &x : carried)
      for (auto [f, t] : llvm::zip(from, to))
        if (x == f)
          x = t;
  };
  OpBuilder::InsertionGuard guard(b);
  WgmmaAsyncOp pv;
  Value retired; // the pending tile's O once its P·V is complete
  for (Operation &op : emitted) {
    b.setInsertionPoint(&op);
    if (auto gemm = dyn_cast<WgmmaAsyncOp>(op); gemm && gemm.getARegs())
      pv = gemm;
    if (auto wait = dyn_cast<RingWaitOp>(op);
        wait && wait.getRing() == v.vRing) {
      if (part == PipelinePart::Steady) {
        RingWaitOp::create(b, v.vRing, slot.iteration, slot.isPending, v.kRing,
                           kIter);
      } else {
        auto pendingOnly =
            scf::IfOp::create(b, slot.isPending, /*withElseRegion=*/false);
        b.setInsertionPoint(pendingOnly.thenBlock()->getTerminator());
        RingWaitOp::create(b, v.vRing, slot.iteration);
      }
      op.erase();
    } else if (auto wait = dyn_cast<WgmmaWaitOp>(op);
               wait && pv &&
               llvm::is_contained(wait.getInputs(), pv.getResult())) {
      retired = wait.getResult(0);
      if (part != PipelinePart::Steady)
        continue;
      SmallVector<Value> old(wait.getResults());
      ValueRange results = keepOperandLive(wait, pending.p);
      replaceCarried(old, results);
      retired = results[0];
    } else if (auto round = dyn_cast<arith::TruncFOp>(op);
               round && part == PipelinePart::Steady) {
      // So ptxas can give P_0 the pending P's registers, and the steady
      // loop's P (which starts as P_0 and ends as the next pending P) stays
      // one set of registers — packed before, P_0 needs a set of its own
      // and every iteration copies P into the wgmma's operand registers
      // (perf log run 34).
      round.getInMutable().assign(buildFenceOperands(b, round.getIn())[0]);
    } else if (auto release = dyn_cast<RingReleaseOp>(op);
               release && release.getRing() == v.vRing) {
      buildStorePending(consumer, slot, retired, pending);
      op.erase();
    } else if (auto rescale = dyn_cast<RescaleOp>(op);
               rescale && cast<ShapedType>(rescale.getType()).getRank() == 2) {
      replaceCarried(rescale.getResult(), rescale.getInput());
      rescale.replaceAllUsesWith(rescale.getInput());
      op.erase();
    }
  }
  setAccumulate(pv, [&]() -> Value {
    return arith::ShRUIOp::create(b, pending.id, c32(31));
  });
  assignWaitPending(*block);
  return carried;
}

void AttentionKernelBuilder::buildDrainPending(Value consumer,
                                               Value ringPosition,
                                               ValueRange pendingVals,
                                               TileStep &step) {
  // The last tile's last P·V (a P = 0 product on stage 0 when the CTA had
  // no keys at all: both warpgroups still take the turn).
  PendingTile pending = PendingTile::unpack(pendingVals);
  PendingSlot slot = buildPendingSlot(ringPosition);
  IRMapping map0, map1;
  step.pipeline.mapStageOneInputs(map1, pendingVals.take_front(4));
  map1.map(step.iter, slot.iteration);
  emitPendingStageOne(step.pipeline, PipelinePart::Drain, map0, map1, consumer,
                      slot, pending, Value());
}
