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
                                                 ValueRange init) {
  // Loop-carried: the tiles O (with l's ones columns beside it under
  // rowsum=mma), m and l.
  auto loop = scf::ForOp::create(b, v.kvLo, v.kvHi, c32(1), init);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value j = loop.getInductionVar();
  scf::YieldOp::create(
      b, rewriteKeyBlockStep(consumer, wgRow, j, ringIteration(j),
                             loop.getRegionIterArgs(), /*prev=*/nullptr));
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
  kRescale,      // O = α_j·O, after the P·V it scales
};
} // namespace

LoopPipeline AttentionKernelBuilder::scheduleOverlap(scf::ForOp step,
                                                     Value consumer,
                                                     bool lastTurn) {
  // The stage of each op of the step: its P·V with V's ring wait and
  // release in stage 1, everything else in stage 0; an op the schedule
  // does not name goes with its users (stage 1 if only stage 1 reads it,
  // else stage 0, no later than the softmax).
  Block *body = step.getBody();
  WgmmaAsyncOp pv;
  for (auto gemm : body->getOps<WgmmaAsyncOp>())
    if (gemm.getARegs())
      pv = gemm;
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
    Slot slot = llvm::TypeSwitch<Operation *, Slot>(&op)
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
                    .Case([&](arith::TruncFOp round) -> Slot {
                      if (round.getResult() != pv.getARegs())
                        return fromUsers(op);
                      return {0, cfg.latePVWait ? kLatePack : kSoftmax};
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

/// A wait that retires a P·V whose P the loop carries also returns that P:
/// its registers stay live up to the wait, so the next P cannot be
/// coalesced into them while the wgmma still reads them (ptxas would see
/// the A operand redefined mid-flight and serialize every wgmma, C7513).
static void keepCarriedOperandsLive(scf::ForOp loop) {
  for (auto wait :
       llvm::make_early_inc_range(loop.getBody()->getOps<WgmmaWaitOp>())) {
    SmallVector<Value> inputs(wait.getInputs());
    for (Value in : wait.getInputs()) {
      auto gemm = in.getDefiningOp<WgmmaAsyncOp>();
      auto a = gemm ? dyn_cast_or_null<BlockArgument>(gemm.getARegs())
                    : BlockArgument();
      if (a && a.getOwner() == loop.getBody() && !llvm::is_contained(inputs, a))
        inputs.push_back(a);
    }
    if (inputs.size() == wait.getInputs().size())
      continue;
    OpBuilder builder(wait);
    auto kept =
        WgmmaWaitOp::create(builder, wait.getLoc(), wait.getPending(), inputs);
    wait->replaceAllUsesWith(
        kept.getResults().take_front(wait->getNumResults()));
    wait.erase();
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
      scheduleOverlap(step, consumer, /*lastTurn=*/!cfg.schedule.persistent);

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
    // previous tile's): its accumulate flag, set beside the step's Q·Kᵀ.
    auto gemms = llvm::to_vector(loop.getBody()->getOps<WgmmaAsyncOp>());
    auto [qk, pv] = std::make_pair(gemms.front(), gemms.back());
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointAfter(qk);
    Value j = loop.getInductionVar();
    pv.getScaleDMutable().assign(arith::ExtUIOp::create(
        b, b.getI32Type(),
        cmp(arith::CmpIPredicate::ne, j, add(v.kvLo, c32(1)))));
  }
  return loop;
}

SmallVector<Value> AttentionKernelBuilder::rewriteKeyBlockStep(
    Value consumer, Value wgRow, Value kvBlock, Value iter,
    ValueRange carried, const StageOne *prev) {
  // The tensorized loop's step for block j, its ops in the loop's order:
  //   Q·Kᵀ     issued and waited for, K released;
  //   S → P    as they are (rewriteScoreOp); P's rounding and O's rescale
  //            in the loop's order;
  //   P·V      issued, waited for and V released.
  // This is every schedule's step: the overlapped one expands it by stages
  // (scheduleOverlap). Tile overlap's first step takes `prev`, the pending
  // tile's P·V: issued beside Q·Kᵀ in one turn, S waited for with it in
  // flight (groups retire in order: one pending), and in place of this
  // block's P·V (which the steady loop or the next tile issues) prev's
  // wait and retirement; P_j is packed after that wait, and this tile's O,
  // still the empty state, needs no rescale.
  bool pvLater = prev != nullptr;
  BlockRewrite r = startBlockRewrite(wgRow, carried[1], carried[2]);
  IRMapping &map = r.map;
  map.map(kvLoop().getRegionIterArgs()[0], carried[0]);
  Value o = carried[0], p;
  // prev with its V iteration resolved (null: this block's minus one).
  std::optional<StageOne> stage1;
  if (prev) {
    stage1 = *prev;
    if (!stage1->iter)
      stage1->iter = sub(iter, c32(1));
    prev = &*stage1;
  }
  // P_j is packed after prev's wait (cfg.latePVWait, and always after
  // another tile's P·V): into registers the in-flight P leaves.
  bool packLate = prev && (cfg.latePVWait || prev->otherTile);
  RescaleOp rescale;
  arith::TruncFOp round;
  SmallVector<Value> next = rewriteStep(r, [&](Operation &op) {
    llvm::TypeSwitch<Operation *>(&op)
        .Case([&](WgmmaOp gemm) {
          if (gemm.getTransposeB()) {
            RingWaitOp::create(b, v.kRing, iter);
            if (prev) {
              waitStageOne(*prev, iter);
              buildTurnBegin(consumer);
            }
            Value s = buildQK(consumer, iter, gemm);
            if (prev) {
              o = issueStageOne(*prev);
              buildTurnEnd(consumer, /*lastTurn=*/false);
            }
            s = buildWgmmaWait(b, prev ? 1 : 0, s)[0];
            takeScores(r, gemm, s, kvBlock, iter);
            return;
          }
          if (!pvLater) {
            RingWaitOp::create(b, v.vRing, iter);
            Value pv = buildPV(map.lookup(gemm.getAcc()),
                               map.lookup(gemm.getA()), iter, {}, gemm);
            map.map(gemm.getResult(), buildWgmmaWait(b, 0, pv)[0]);
            RingReleaseOp::create(b, v.vRing, iter);
            return;
          }
          // prev's P is read by the in-flight wgmma until here. Using it
          // after the wait keeps its PTX registers live, so P_j cannot be
          // coalesced into them (ptxas would see the wgmma's A operand
          // redefined mid-flight and serialize every wgmma, C7513).
          o = buildWgmmaWait(b, 0, {o, prev->p})[0];
          if (packLate) {
            Value probs = map.lookup(round.getIn());
            // After another tile's P·V: so ptxas can give P_0 the pending
            // P's registers, and the steady loop's P (which starts as P_0
            // and ends as the next pending P) stays one set of registers —
            // packed before, P_0 needs a set of its own and every
            // iteration copies P into the wgmma's operand registers (perf
            // log run 34).
            if (prev->otherTile)
              probs = buildFenceOperands(b, probs)[0];
            p = buildPackP(probs);
          }
          retireStageOne(*prev, o);
          // (row-max=bound has no rescale: α = 1.)
          if (!prev->otherTile && rescale)
            o = buildRescale(rescale, o, map.lookup(rescale.getFactor()));
          map.map(gemm.getResult(), o);
        })
        .Case([&](arith::TruncFOp t) { // P, the 16-bit A tile
          // Packed late, P_j follows the wait, and the fence keeps ptxas
          // from lifting the wait (and with it the rest of the softmax)
          // above the exponentials.
          round = t;
          if (!packLate) {
            p = buildPackP(map.lookup(t.getIn()));
            map.map(t.getResult(), p);
          } else if (cfg.latePVWait) {
            buildSchedulingFence(b, v.seqKV);
          }
        })
        .Case([&](RescaleOp t) { // O's
          if (pvLater)
            rescale = t; // after its P·V
          else
            map.map(t.getResult(), buildRescale(t, map.lookup(t.getInput()),
                                                map.lookup(t.getFactor())));
        });
  });
  if (pvLater)
    next.push_back(p);
  return next;
}

void AttentionKernelBuilder::waitStageOne(const StageOne &pv, Value kIter) {
  if (pv.waitV)
    pv.waitV(kIter);
  else
    RingWaitOp::create(b, v.vRing, pv.iter);
}

Value AttentionKernelBuilder::issueStageOne(const StageOne &pv) {
  return buildPV(pv.o, pv.p, pv.iter,
                 pv.accumulate ? pv.accumulate() : Value());
}

void AttentionKernelBuilder::retireStageOne(const StageOne &pv, Value o) {
  if (pv.retire)
    pv.retire(o);
  else
    RingReleaseOp::create(b, v.vRing, pv.iter);
}

Value AttentionKernelBuilder::drainStageOne(Value consumer,
                                            const StageOne &pv) {
  waitStageOne(pv, /*kIter=*/Value());
  buildTurnBegin(consumer);
  Value o = issueStageOne(pv);
  buildTurnEnd(consumer, pv.lastTurn);
  // No P is packed after it: nothing to keep its A live for.
  o = buildWgmmaWait(b, 0, o)[0];
  retireStageOne(pv, o);
  return o;
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
  SmallVector<Value> last =
      buildTileLoop(none.pack(), [&](ValueRange pending) {
        return buildOverlappedTile(consumer, pending);
      });
  buildDrainPending(consumer, last[0], ArrayRef<Value>(last).drop_front(2));
  buildCloseGame(consumer);
}

SmallVector<Value>
AttentionKernelBuilder::buildOverlappedTile(Value consumer,
                                            ValueRange pendingVals) {
  PendingTile pending = PendingTile::unpack(pendingVals);
  SmallVector<Value> empty = buildEmptyState();
  Value wgRow = warpgroupRow(consumer, v.rowFirst);
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
  // The first block's step issues the pending tile's last P·V (stage 1
  // across the tile boundary) and stores that tile once it retires.
  Value firstIter = ringIteration(v.kvLo);
  PendingSlot slot = buildPendingSlot(v.ringBase);
  auto waitV = [&](Value kIter) {
    // Nothing pending: K_0's buffer, just waited for, stands in for the V
    // buffer (the P = 0 product is never stored).
    RingWaitOp::create(b, v.vRing, slot.iteration, slot.isPending, v.kRing,
                       kIter);
  };
  StageOne pendingPV = pendingStageOne(consumer, slot, pending);
  pendingPV.waitV = waitV;
  pendingPV.otherTile = true;
  SmallVector<Value> init = rewriteKeyBlockStep(consumer, wgRow, v.kvLo,
                                                firstIter, empty, &pendingPV);

  // Blocks kvLo+1 .. kvHi−1; the first P·V overwrites the stored O.
  scf::ForOp step = buildStepLoop(consumer, wgRow, empty);
  LoopPipeline pipeline = scheduleOverlap(step, consumer, /*lastTurn=*/false);
  SmallVector<Value> last =
      buildSteadyLoop(pipeline, wgRow, init, /*overwriteFirst=*/true);
  step.erase();
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

AttentionKernelBuilder::StageOne AttentionKernelBuilder::pendingStageOne(
    Value consumer, const PendingSlot &slot, const PendingTile &pending) {
  // Its accumulate bit: the tile had more than one block. Once retired, the
  // pending tile's V block is released and its O stored.
  StageOne pv{pending.o, pending.p, slot.iteration};
  pv.accumulate = [this, id = pending.id]() -> Value {
    return arith::ShRUIOp::create(b, id, c32(31));
  };
  pv.retire = [this, consumer, slot, pending](Value o) {
    buildStorePending(consumer, slot, o, pending);
  };
  return pv;
}

void AttentionKernelBuilder::buildDrainPending(Value consumer,
                                               Value ringPosition,
                                               ValueRange pendingVals) {
  // The last tile's last P·V (a P = 0 product on stage 0 when the CTA had
  // no keys at all: both warpgroups still take the turn).
  PendingTile pending = PendingTile::unpack(pendingVals);
  PendingSlot slot = buildPendingSlot(ringPosition);
  auto waitV = [&](Value) {
    auto wait = scf::IfOp::create(b, slot.isPending, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(wait.thenBlock()->getTerminator());
    RingWaitOp::create(b, v.vRing, slot.iteration);
  };
  StageOne drain = pendingStageOne(consumer, slot, pending);
  drain.waitV = waitV;
  drainStageOne(consumer, drain);
}
