//===- Schedule.h - what fat-tensorize and fat-pipeline share ---*- C++ -*-===//
//
// Helpers of the two schedule passes (Tensorize.cpp, Pipeline.cpp) over the
// `fat.schedule` dictionary they fill (Schedule.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef FAT_LIB_CONVERSION_FATTONVVM_SCHEDULE_H
#define FAT_LIB_CONVERSION_FATTONVVM_SCHEDULE_H

#include "fa-t/Conversion/FatToNVVM/FatToNVVM.h"

namespace mlir {
namespace fat {

/// Whether the op has a sliding window (either edge).
bool isWindowed(AttentionOp op);

/// Head dims, mask and tuned key length of `op` as the cost models see
/// them (`seqLenOption`: the passes' seq-len, see getTunedSeqLen). None for
/// head dims the kernel does not serve (fat-pipeline says so when it builds; the
/// models have nothing to choose).
std::optional<TileProblem> getTileProblem(AttentionOp op,
                                          int64_t seqLenOption);

/// Merges `entries` into the op's `fat.schedule` dictionary; `forced`
/// accumulates (either pass forcing a choice makes the schedule forced).
void updateSchedule(AttentionOp op, ArrayRef<NamedAttribute> entries,
                    bool forced);

/// The fat.attention ops of a pass's scope that will become host calls
/// (not those already inside a gpu.module).
SmallVector<AttentionOp> hostAttentionOps(Operation *root);

} // namespace fat
} // namespace mlir

#endif // FAT_LIB_CONVERSION_FATTONVVM_SCHEDULE_H
