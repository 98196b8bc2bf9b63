//===- TiledAttention.h - what the tiles of one attention say ---*- C++ -*-===//
//
// Private to FatTransforms: the facts fat-tensorize (Tensorize.cpp) and
// fat-pipeline (Pipeline.cpp) both read off one tiled attention — its mask,
// its modifications and fat-tile's record — read in one place.
//
//===----------------------------------------------------------------------===//
#ifndef FAT_LIB_DIALECT_FAT_TRANSFORMS_TILEDATTENTION_H
#define FAT_LIB_DIALECT_FAT_TRANSFORMS_TILEDATTENTION_H

#include "fa-t/Dialect/Fat/IR/FatOps.h"

#include <optional>

namespace mlir::fat {

/// The mask and modifications of the tile ops under `scope`, and fat-tile's
/// record on it (`fat.tile`: the K/V ring depth and the key length the
/// tiles were chosen for; absent entries keep their defaults).
struct TiledAttentionFacts {
  bool causal = false;
  /// fat.mask's [left, right] (−1: unbounded), where it has a window.
  std::optional<std::pair<int64_t, int64_t>> window;
  /// The tile's diagonal δ + s0 of a causal or windowed fat.mask.
  Value diagonal;
  /// A fat.score_mod / fat.mask_mod region modifies the scores.
  bool scoreMod = false, maskMod = false;
  /// Some region computes with the row or key positions (`readsPositions`);
  /// the mask region does.
  bool positional = false, positionalMask = false;
  /// The mask's key ranges follow captured data (keyBlocksFollowData).
  bool dataBlocks = false;
  int64_t stages = 2, seqLen = 0;
};

TiledAttentionFacts readTiledAttentionFacts(Operation *scope);

} // namespace mlir::fat

#endif // FAT_LIB_DIALECT_FAT_TRANSFORMS_TILEDATTENTION_H
