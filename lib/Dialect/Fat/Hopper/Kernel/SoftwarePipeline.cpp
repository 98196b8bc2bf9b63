//===- SoftwarePipeline.cpp - a loop expanded by its ops' stages ----------===//
//
// LoopPipeline (SoftwarePipeline.h): reads the stage and cluster of each op
// of a loop body, then emits the prologue, the steady loop and the drain of
// the two-stage pipeline they describe.
//
//===----------------------------------------------------------------------===//

#include "fa-t/Dialect/Fat/Hopper/SoftwarePipeline.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;
using namespace mlir::fat;

void mlir::fat::setPipelineSchedule(Operation *op, int64_t stage,
                                    int64_t cluster) {
  Builder b(op->getContext());
  op->setAttr(kPipelineStage, b.getI64IntegerAttr(stage));
  op->setAttr(kPipelineCluster, b.getI64IntegerAttr(cluster));
}

/// Every value `op` and the ops nested in it read from outside `op`.
static SetVector<Value> operandsOf(Operation *op) {
  SetVector<Value> used;
  op->walk([&](Operation *inner) {
    for (Value v : inner->getOperands())
      if (!op->isAncestor(v.getParentRegion()->getParentOp()))
        used.insert(v);
  });
  return used;
}

FailureOr<LoopPipeline> LoopPipeline::analyze(scf::ForOp loop) {
  LoopPipeline pipeline(loop);
  if (failed(pipeline.schedule()))
    return failure();
  return pipeline;
}

LogicalResult LoopPipeline::schedule() {
  Block *body = loop.getBody();
  for (Operation &op : body->without_terminator()) {
    auto stage = op.getAttrOfType<IntegerAttr>(kPipelineStage);
    auto cluster = op.getAttrOfType<IntegerAttr>(kPipelineCluster);
    if (!stage || !cluster)
      return op.emitOpError("needs integer attributes ")
             << kPipelineStage << " and " << kPipelineCluster;
    if (stage.getInt() < 0 || stage.getInt() > 1)
      return op.emitOpError("pipeline stage must be 0 or 1");
    stages[&op] = stage.getInt();
    clusters[&op] = cluster.getInt();
  }

  for (Operation &op : body->without_terminator())
    order.push_back(&op);
  llvm::sort(order, [&](Operation *x, Operation *y) {
    int64_t cx = clusters.lookup(x), cy = clusters.lookup(y);
    return cx != cy ? cx < cy : x->isBeforeInBlock(y);
  });

  // The carried values: those stage 0 computes stay where they are; one
  // stage 1 computes from a stage-0 value (O from α·O through the P·V) is
  // carried as that value; one only stage 1 reads (O through the P·V alone)
  // is carried one iteration later.
  auto definedInBody = [&](Value v) -> Operation * {
    Operation *def = v.getDefiningOp();
    return def && def->getBlock() == body ? def : nullptr;
  };
  auto yield = cast<scf::YieldOp>(body->getTerminator());
  ValueRange iterArgs = loop.getRegionIterArgs();
  for (auto [arg, next] : llvm::zip(iterArgs, yield.getOperands())) {
    Operation *def = definedInBody(next);
    bool readByStageZero = llvm::any_of(arg.getUsers(), [&](Operation *user) {
      Operation *top = body->findAncestorOpInBlock(*user);
      return !isa<scf::YieldOp>(top) && stageOf(top) == 0;
    });
    if (!def || stageOf(def) == 0)
      slots.push_back({Slot::StageZero, next});
    else if (!readByStageZero)
      slots.push_back({Slot::StageOne, next});
    else
      slots.push_back({Slot::Chain, Value()});
  }

  // Check the dependences the expansion keeps, and collect the stage-0
  // values stage 1 reads.
  SetVector<Value> crossingSet;
  for (Operation &op : body->without_terminator()) {
    for (Value v : operandsOf(&op)) {
      if (auto arg = dyn_cast<BlockArgument>(v);
          arg && arg.getOwner() == body && arg != loop.getInductionVar()) {
        Slot::Kind kind = slots[arg.getArgNumber() - 1].kind;
        if ((kind == Slot::StageOne) != (stageOf(&op) == 1))
          return op.emitOpError("in pipeline stage ")
                 << stageOf(&op) << " reads the loop's carried value #"
                 << arg.getArgNumber() - 1 << ", which stage "
                 << (kind == Slot::StageOne ? 1 : 0) << " reads";
      }
      Operation *def = definedInBody(v);
      if (!def)
        continue;
      if (stageOf(def) > stageOf(&op))
        return op.emitOpError("in pipeline stage 0 reads a value of stage 1 "
                              "of the same iteration");
      if (stageOf(def) == stageOf(&op))
        continue;
      if (!isRecomputable(v))
        crossingSet.insert(v);
      else if (recomputed.insert(v).second && ivCoefficient(v) == 1)
        shifted.insert(v);
    }
  }
  SmallVector<Value> crossing = crossingSet.takeVector();
  llvm::sort(crossing, [&](Value x, Value y) {
    return x.getDefiningOp()->isBeforeInBlock(y.getDefiningOp());
  });
  SmallVector<bool> taken(crossing.size(), false);
  for (auto [i, slot] : llvm::enumerate(slots)) {
    if (slot.kind != Slot::Chain)
      continue;
    std::optional<size_t> chain;
    for (auto [c, value] : llvm::enumerate(crossing)) {
      if (!dependsOn(value, cast<BlockArgument>(iterArgs[i])))
        continue;
      if (chain)
        return loop.emitOpError("carried value #")
               << i << " reaches pipeline stage 1 through more than one value";
      chain = c;
    }
    if (!chain)
      return loop.emitOpError("carried value #")
             << i << " is computed by pipeline stage 1 from no stage-0 value";
    taken[*chain] = true;
    slot.value = crossing[*chain];
  }
  for (auto [c, value] : llvm::enumerate(crossing))
    if (!taken[c])
      slots.push_back({Slot::Crossing, value});

  // In the steady order each op follows what it reads from its own stage,
  // and stage 0 follows the stage-1 op that computes a carried value it
  // reads (the prologue and the drain emit parts of the same order).
  DenseSet<Operation *> emitted;
  for (Operation *op : order) {
    for (Value v : operandsOf(op)) {
      Operation *def = definedInBody(v);
      if (auto arg = dyn_cast<BlockArgument>(v);
          arg && arg.getOwner() == body && arg != loop.getInductionVar() &&
          slots[arg.getArgNumber() - 1].kind == Slot::Chain) {
        def = yield.getOperand(arg.getArgNumber() - 1).getDefiningOp();
        if (!emitted.contains(def))
          return op->emitOpError("is scheduled before pipeline stage 1 "
                                 "computes the carried value #")
                 << arg.getArgNumber() - 1 << " it reads";
        continue;
      }
      if (def && stageOf(def) == stageOf(op) && !emitted.contains(def))
        return op->emitOpError("is scheduled before the op that defines its "
                               "operand");
    }
    emitted.insert(op);
  }
  return success();
}

bool LoopPipeline::isRecomputable(Value v) {
  // Index arithmetic of the induction variable and loop invariants.
  if (v == loop.getInductionVar())
    return true;
  Operation *def = v.getDefiningOp();
  if (!def)
    return !loop.getBody()->getParent()->isAncestor(v.getParentRegion());
  if (def->getBlock() != loop.getBody())
    return !loop->isAncestor(def);
  if (def->getNumRegions() || !isPure(def))
    return false;
  return llvm::all_of(def->getOperands(),
                      [&](Value x) { return isRecomputable(x); });
}

std::optional<int64_t> LoopPipeline::ivCoefficient(Value v) {
  // c in v = c·j + (loop invariants), through additions and subtractions.
  if (v == loop.getInductionVar())
    return 1;
  Operation *def = v.getDefiningOp();
  if (!def || def->getBlock() != loop.getBody())
    return 0;
  if (!isa<arith::AddIOp, arith::SubIOp>(def))
    return std::nullopt;
  std::optional<int64_t> x = ivCoefficient(def->getOperand(0));
  std::optional<int64_t> y = ivCoefficient(def->getOperand(1));
  if (!x || !y)
    return std::nullopt;
  return isa<arith::AddIOp>(def) ? *x + *y : *x - *y;
}

bool LoopPipeline::dependsOn(Value v, BlockArgument arg) {
  SmallVector<Value> work{v};
  DenseSet<Value> seen;
  while (!work.empty()) {
    Value x = work.pop_back_val();
    if (x == arg)
      return true;
    Operation *def = x.getDefiningOp();
    if (!seen.insert(x).second || !def || def->getBlock() != loop.getBody())
      continue;
    llvm::append_range(work, operandsOf(def));
  }
  return false;
}

Value LoopPipeline::rematerialize(OpBuilder &b, Value v, IRMapping &map) {
  if (Value mapped = map.lookupOrNull(v))
    return mapped;
  Operation *def = v.getDefiningOp();
  if (!def || def->getBlock() != loop.getBody())
    return v; // a loop invariant
  for (Value x : def->getOperands())
    rematerialize(b, x, map);
  Operation *clone = b.clone(*def, map);
  clone->removeAttr(kPipelineStage);
  clone->removeAttr(kPipelineCluster);
  return map.lookup(v);
}

void LoopPipeline::emit(OpBuilder &b, PipelinePart part, IRMapping &map0,
                        IRMapping &map1) {
  std::array<IRMapping *, 2> maps = {&map0, &map1};
  ValueRange iterArgs = loop.getRegionIterArgs();
  auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
  bool stageOn[2] = {part != PipelinePart::Drain,
                     part != PipelinePart::Prologue};
  // Stage 1's index arithmetic at its iteration: where it is j's minus
  // the step, right after j's; else recomputed before its first use.
  Value iv = loop.getInductionVar();
  auto rematerializeOperands = [&](Operation *op) {
    for (Value v : operandsOf(op)) {
      if (!recomputed.contains(v) || maps[1]->contains(v))
        continue;
      if (!maps[1]->contains(iv))
        maps[1]->map(iv, arith::SubIOp::create(b, loop.getLoc(),
                                               maps[0]->lookup(iv),
                                               loop.getStep()));
      rematerialize(b, v, *maps[1]);
    }
  };

  for (size_t i = 0; i < order.size();) {
    int64_t cluster = clusters.lookup(order[i]);
    size_t end = i;
    while (end < order.size() && clusters.lookup(order[end]) == cluster)
      ++end;
    auto members = llvm::make_filter_range(
        ArrayRef<Operation *>(order).slice(i, end - i),
        [&](Operation *op) { return stageOn[stageOf(op)]; });
    bool any = members.begin() != members.end();
    if (any && clusterHook)
      clusterHook(b, cluster, part, /*after=*/false);
    for (Operation *op : members) {
      int64_t stage = stageOf(op);
      IRMapping &map = *maps[stage];
      // The caller computes it otherwise.
      if (op->getNumResults() && llvm::all_of(op->getResults(), [&](Value r) {
            return map.contains(r);
          }))
        continue;
      if (stage == 1)
        rematerializeOperands(op);
      Operation *clone = b.clone(*op, map);
      clone->removeAttr(kPipelineStage);
      clone->removeAttr(kPipelineCluster);
      if (stage == 0 && stageOn[1])
        for (Value v : op->getResults())
          if (shifted.contains(v) && !maps[1]->contains(v))
            maps[1]->map(v,
                         arith::SubIOp::create(b, loop.getLoc(), map.lookup(v),
                                               loop.getStep()));
      // Stage 1 of j − 1 computes the carried values stage 0 of j reads.
      if (stage == 1)
        for (auto [arg, next, slot] :
             llvm::zip(iterArgs, yield.getOperands(), slots))
          if (slot.kind == Slot::Chain && next.getDefiningOp() == op)
            maps[0]->map(arg, map.lookup(next));
    }
    if (any && clusterHook)
      clusterHook(b, cluster, part, /*after=*/true);
    i = end;
  }
}

SmallVector<Value> LoopPipeline::carriedAfter(IRMapping &map0,
                                              IRMapping &map1) {
  return llvm::map_to_vector(slots, [&](const Slot &slot) {
    return slot.kind == Slot::StageOne ? map1.lookupOrDefault(slot.value)
                                       : map0.lookupOrDefault(slot.value);
  });
}

SmallVector<Value> LoopPipeline::emitPrologue(OpBuilder &b, Value lo,
                                              ValueRange init) {
  IRMapping map0, map1;
  map0.map(loop.getInductionVar(), lo);
  map0.map(loop.getRegionIterArgs(), init);
  emit(b, PipelinePart::Prologue, map0, map1);
  // (Stage 1 did not run: what it carries is still the init.)
  SmallVector<Value> next = carriedAfter(map0, map1);
  for (auto [i, slot] : llvm::enumerate(slots))
    if (slot.kind == Slot::StageOne)
      next[i] = init[i];
  return next;
}

void LoopPipeline::mapStageOneInputs(IRMapping &map1, ValueRange now) {
  ValueRange iterArgs = loop.getRegionIterArgs();
  for (auto [i, slot] : llvm::enumerate(slots)) {
    if (slot.kind == Slot::StageOne)
      map1.map(iterArgs[i], now[i]);
    else if (slot.kind != Slot::StageZero)
      map1.map(slot.value, now[i]);
  }
}

scf::ForOp LoopPipeline::emitSteadyLoop(OpBuilder &b, Value lo, Value hi,
                                        ValueRange init) {
  auto steady =
      scf::ForOp::create(b, loop.getLoc(), lo, hi, loop.getStep(), init);
  OpBuilder::InsertionGuard guard(b);
  // (Without iter_args the builder made the body's yield: ours replaces it.)
  if (!steady.getBody()->empty())
    steady.getBody()->getTerminator()->erase();
  b.setInsertionPointToStart(steady.getBody());
  Value j = steady.getInductionVar();
  ValueRange now = steady.getRegionIterArgs();
  IRMapping map0, map1;
  map0.map(loop.getInductionVar(), j);
  for (auto [i, arg] : llvm::enumerate(loop.getRegionIterArgs()))
    if (slots[i].kind == Slot::StageZero)
      map0.map(arg, now[i]);
  mapStageOneInputs(map1, now);
  emit(b, PipelinePart::Steady, map0, map1);
  scf::YieldOp::create(b, loop.getLoc(), carriedAfter(map0, map1));
  return steady;
}

SmallVector<Value> LoopPipeline::emitDrain(OpBuilder &b, Value last,
                                           ValueRange steadyResults) {
  IRMapping map0, map1;
  map1.map(loop.getInductionVar(), last);
  mapStageOneInputs(map1, steadyResults);
  emit(b, PipelinePart::Drain, map0, map1);
  // The loop's results: what stage 1 computed, or what the steady loop
  // carried.
  auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
  SmallVector<Value> results;
  for (auto [i, next] : llvm::enumerate(yield.getOperands()))
    results.push_back(slots[i].kind == Slot::StageZero ? steadyResults[i]
                                                       : map1.lookup(next));
  return results;
}
