//===- SoftwarePipeline.h - a loop expanded by its ops' stages --*- C++ -*-===//
//
// Modulo-schedule expansion of an scf.for whose body ops carry a stage and
// a cluster (discardable attributes, as Triton's loop.stage / loop.cluster):
// the prologue, the steady loop and the drain of a two-stage software
// pipeline, each emitted where the caller's builder stands.
//
//===----------------------------------------------------------------------===//
#ifndef FAT_DIALECT_FAT_HOPPER_SOFTWAREPIPELINE_H
#define FAT_DIALECT_FAT_HOPPER_SOFTWAREPIPELINE_H

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"

#include <array>
#include <functional>

namespace mlir {
namespace fat {

/// The schedule of one op of the loop body: its stage (0 or 1) and its
/// cluster (clusters are emitted in increasing order; inside one, ops keep
/// the body's order).
constexpr StringLiteral kPipelineStage = "fat.pipeline_stage";
constexpr StringLiteral kPipelineCluster = "fat.pipeline_cluster";
void setPipelineSchedule(Operation *op, int64_t stage, int64_t cluster);

/// Where an emission stands: stage 0 of the first iteration alone, both
/// stages (stage 0 of iteration j beside stage 1 of j − 1), stage 1 of the
/// last iteration alone.
enum class PipelinePart { Prologue, Steady, Drain };

/// A loop `for j in [lo, hi) step s iter_args(x)` whose body is scheduled
/// in two stages, expanded as
///
///   prologue:  stage 0 of iteration lo
///   steady:    for j in [lo + s, hi): stage 0 of j, stage 1 of j − s,
///              interleaved cluster by cluster
///   drain:     stage 1 of the last iteration
///
/// for a trip count ≥ 1 (the caller guards it; upstream's
/// scf::pipelineForLoop predicates each prologue op instead, which the
/// kernel's barrier and wgmma ops cannot take). Values stage 0 defines and
/// stage 1 reads cross one iteration: index arithmetic of the induction
/// variable is recomputed at j − s (j's value minus s where it is j plus
/// loop invariants), every other value is carried by the steady loop. Its iter_args are the body's — each one whose next value
/// stage 1 computes from a stage-0 value on its chain (O through α·O and
/// the P·V) replaced by that value (α·O) — then the other stage-0 values
/// stage 1 reads (P), in body order. Every op of the body has its stage
/// and cluster.
class LoopPipeline {
public:
  /// Reads the body's schedule; an error on the op that makes it one this
  /// expansion cannot run (no stage, stage 0 reading stage 1 of its own
  /// iteration, an op ordered before a value it reads).
  static FailureOr<LoopPipeline> analyze(scf::ForOp loop);

  /// Runs before the first / after the last op of a cluster, in each part
  /// that emits one (ping-pong turns around the GEMM issues, a fence).
  using ClusterHook = std::function<void(OpBuilder &, int64_t cluster,
                                         PipelinePart part, bool after)>;
  void setClusterHook(ClusterHook hook) { clusterHook = std::move(hook); }

  /// Stage 0 of iteration `lo` on `init`; returns the steady loop's init.
  SmallVector<Value> emitPrologue(OpBuilder &b, Value lo, ValueRange init);
  /// The steady loop over [lo, hi) from `init` (emitPrologue's results or
  /// the same values from elsewhere).
  scf::ForOp emitSteadyLoop(OpBuilder &b, Value lo, Value hi, ValueRange init);
  /// Stage 1 of iteration `last` from the steady loop's results; returns
  /// the original loop's results.
  SmallVector<Value> emitDrain(OpBuilder &b, Value last, ValueRange carried);

  /// The three parts' common form, for an iteration the caller describes
  /// (tile overlap's first step: stage 1 of another tile's last block):
  /// emits `part`'s stages in cluster order with map0 and map1, which map
  /// each stage's induction variable and inputs and may map any value the
  /// caller computes otherwise (an op whose results are all mapped is not
  /// emitted).
  void emit(OpBuilder &b, PipelinePart part, IRMapping &map0, IRMapping &map1);
  /// Maps stage 1's inputs to `carried`, in the steady loop's layout.
  void mapStageOneInputs(IRMapping &map1, ValueRange carried);
  /// The steady loop's carried values after an emission with these maps.
  SmallVector<Value> carriedAfter(IRMapping &map0, IRMapping &map1);

private:
  explicit LoopPipeline(scf::ForOp loop) : loop(loop) {}
  LogicalResult schedule();
  int64_t stageOf(Operation *op) const { return stages.lookup(op); }
  /// The clone of stage-1 operand `v` at iteration j − 1: carried values
  /// are in the map; index arithmetic is recomputed.
  Value rematerialize(OpBuilder &b, Value v, IRMapping &map);
  /// Index arithmetic of the induction variable and loop invariants.
  bool isRecomputable(Value v);
  /// c where `v` = c·j + loop invariants by additions and subtractions.
  std::optional<int64_t> ivCoefficient(Value v);
  /// Whether `v` is computed from `arg` inside the body.
  bool dependsOn(Value v, BlockArgument arg);

  scf::ForOp loop;
  SmallVector<Operation *> order; // the body's ops in emission order
  DenseMap<Operation *, int64_t> stages, clusters;
  /// The steady loop's iter_args: first one per iter_arg of the body,
  /// then the other stage-0 values stage 1 reads.
  struct Slot {
    enum Kind {
      StageZero, // computed by stage 0 (value: the body's next value)
      Chain,     // computed by stage 1 from `value`, a stage-0 value
      StageOne,  // read and computed by stage 1 only (value: the next)
      Crossing,  // a stage-0 value stage 1 reads (value)
    } kind;
    Value value;
  };
  SmallVector<Slot> slots;
  /// Stage-0 index values stage 1 reads, recomputed at its iteration; of
  /// them, those that are j's minus the step there.
  DenseSet<Value> recomputed, shifted;
  ClusterHook clusterHook;
};

} // namespace fat
} // namespace mlir

#endif // FAT_DIALECT_FAT_HOPPER_SOFTWAREPIPELINE_H
