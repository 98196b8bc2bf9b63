//===- AttentionKernelEpilogue.cpp - O, l and the LSE to memory -----------===//
//
// The end of a tile: fat.finalize on the warpgroup's tiles gives O / l (0
// for a row without visible keys) and LSE = ln 2·(c·m + log2 l) (−inf for
// an empty row); fat.store_output and fat.stage_output (FatKernelOps.td)
// store them: O directly or staged through shared memory, the LSE by each
// quad's first lane. This file only chooses which and passes the kernel's
// addresses, strides and staging area.
//
//===----------------------------------------------------------------------===//

#include "AttentionKernelBuilder.h"

using namespace mlir;
using namespace mlir::fat;
using namespace mlir::fat::hopper;

void AttentionKernelBuilder::buildEpilogue(Value oTile, Value mTile,
                                           Value lTile, Value wgRow,
                                           Value batch, Value head,
                                           bool storeO, bool storeLse) {
  // O / l and the LSE as tiles (fat.finalize); l is the ones columns of O
  // under rowsum=mma, else the vector sums (the quad's shares until the
  // last block, FatAttrs.td).
  Type elt = inputType();
  auto fin = FinalizeOp::create(
      b, fragmentType(cfg.headDimV, elt), fragmentType(0, b.getF32Type()),
      oTile, cfg.schedule.rowsumMma ? Value() : lTile, mTile, FloatAttr(),
      v.softmaxScale);
  bool lse = cfg.lse && storeLse;
  SmallVector<Value> oStrides{v.oStrideB, v.oStrideH, v.oStrideS};
  if (storeO && cfg.stageO) {
    // O through shared memory: the tile's Q buffer or, with one Q buffer,
    // the V buffer of its last key block once every consumer is past its
    // last P·V (a tile without key blocks keeps Q).
    Value vRing, vIteration, hasKeys;
    DenseI64ArrayAttr barrier;
    if (cfg.stageOInV()) {
      vRing = v.vRing;
      vIteration = lastKeyIteration();
      hasKeys = hasKeyBlocks();
      barrier = b.getDenseI64ArrayAttr(
          {kEpilogueBarrier, 128 * cfg.numConsumerWarpgroups()});
    }
    StageOutputOp::create(
        b, fin.getOutput(), v.oPtr, oStrides, v.qRing, v.tileIndex, vRing,
        vIteration, hasKeys, wgRow, v.seqQ, batch, head,
        b.getI64IntegerAttr(cfg.oStagingColumns()),
        b.getI64IntegerAttr(cfg.blockM * 128), barrier);
  }
  bool direct = storeO && !cfg.stageO;
  if (!direct && !lse)
    return;
  StoreOutputOp::create(
      b, direct ? fin.getOutput() : Value(), direct ? v.oPtr : Value(),
      direct ? ValueRange(oStrides) : ValueRange(),
      lse ? fin.getLse() : Value(), lse ? v.lsePtr : Value(),
      lse ? ValueRange{v.lseStrideB, v.lseStrideH} : ValueRange(), wgRow,
      v.seqQ, batch, head);
}
