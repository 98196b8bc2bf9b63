//===- AttentionKernelTiles.cpp - tiles and the producer ------------------===//
//
// Which tile a CTA runs — one per CTA from blockIdx, or the persistent loop
// over work units — the key blocks its rows can see, and the producer that
// loads Q and the K/V ring for it with TMA.
//
//===----------------------------------------------------------------------===//

#include "AttentionKernelBuilder.h"

using namespace mlir;
using namespace mlir::fat;
using namespace mlir::fat::hopper;

void AttentionKernelBuilder::buildBlockCoordinates() {
  Value ctaX = NVVM::BlockIdXOp::create(b, b.getI32Type());
  Value ctaY = NVVM::BlockIdYOp::create(b, b.getI32Type());
  Value batch = NVVM::BlockIdZOp::create(b, b.getI32Type());
  v.ringBase = c32(0);
  v.tileIndex = c32(0);
  if (cfg.causal) {
    // Causal: the last query blocks see the most keys. The grid is
    // (Hq, ⌈Sq/M⌉, B) and block y = 0 takes the last query block, so the
    // CTAs launch longest first across all heads and the short ones fill the
    // tail of the last wave.
    Value gridY = NVVM::GridDimYOp::create(b, b.getI32Type());
    buildTileCoordinates(sub(sub(gridY, c32(1)), ctaY), ctaX, batch);
  } else {
    // Grid (⌈Sq/M⌉, Hq, B): CTAs that run together share one head's K/V in L2.
    buildTileCoordinates(ctaX, ctaY, batch);
  }
}

SmallVector<Value> AttentionKernelBuilder::buildTileLoop(
    ValueRange extraInit, function_ref<SmallVector<Value>(ValueRange)> body,
    bool fetchesTiles) {
  // The CTA's tiles (fat.tile_loop has the order and its math): head-major
  // units of one query block, or under a causal mask of the pair of query
  // blocks p and nM − 1 − p, whose keys add up to the same for every p.
  // Measured alternatives (perf log runs 15–18): longest first over all
  // heads at once lost 6…16% at D ≥ 128 — the CTAs running together then
  // belong to different heads and share no K/V block, and streaming 1/M
  // byte per flop at 700 TFLOP/s wants more than the H200's 4.8 TB/s;
  // longest first within groups of heads fitting the L2 lost up to 40% at
  // long S — with one head per group a CTA's tiles sit at the same place of
  // every group's sawtooth, always long or always short.
  // The step is the launch's CTA count as a constant: the manifest's grid
  // is min(U, num-sms) CTAs, so CTA c's next unit c + num-sms is past U
  // whenever fewer were launched. (Reading gridDim.x instead costs the
  // 24-register producer a register it spills.)
  Value numM = arith::DivUIOp::create(
      b, add(v.seqQ, c32(cfg.blockM - 1)), c32(cfg.blockM));
  v.numM = numM;
  // The dynamic scheduler's units follow the one-CTA-per-tile grid
  // (buildBlockCoordinates): longest first under a causal mask.
  bool dynamic = cfg.schedule.dynamicTiles;
  auto loop = TileLoopOp::create(
      b, numM, v.batchCount, extraInit, cfg.numHeadsQ, cfg.numSMs,
      cfg.usesPairs(), /*longestFirst=*/dynamic && cfg.causal,
      dynamic ? v.unitsRing : Value(),
      dynamic && fetchesTiles ? v.tileCounter : Value());
  OpBuilder::InsertionGuard guard(b);
  Block &tile = loop.getBodyBlock();
  b.setInsertionPointToStart(&tile);
  v.ringBase = tile.getArgument(3);
  v.tileIndex = tile.getArgument(4);
  buildTileCoordinates(tile.getArgument(0), tile.getArgument(1),
                       tile.getArgument(2));
  SmallVector<Value> extra = body(loop.getCarried());
  TileYieldOp::create(b, sub(v.kvHi, v.kvLo), extra);
  return SmallVector<Value>(loop->getResults());
}

void AttentionKernelBuilder::buildTileCoordinates(Value mBlock, Value head,
                                                  Value batch) {
  v.mBlock = mBlock;
  v.head = head;
  v.batch = batch;
  // GQA: query head h reads KV head h / (Hq / Hkv).
  v.kvHead = arith::DivUIOp::create(
      b, v.head, c32(cfg.numHeadsQ / cfg.numHeadsKV));

  // Rows [rowFirst, rowLast] of this CTA that exist (rowLast < Sq).
  v.rowFirst = mul(v.mBlock, c32(cfg.blockM));
  v.rowLast = sub(
      arith::MinSIOp::create(b, add(v.rowFirst, c32(cfg.blockM)), v.seqQ),
      c32(1));

  // KV blocks any row of the CTA can see (fat.visible_key_blocks). Blocks
  // outside are never loaded; a CTA whose range is empty writes O = 0 and
  // LSE = −inf.
  auto visible = VisibleKeyBlocksOp::create(
      b, v.rowFirst, v.rowLast, v.seqKV, v.diag, cfg.blockN, cfg.causal,
      cfg.windowLeft, cfg.windowRight);
  Value lo = visible.getFirstBlock(), hi = visible.getEndBlock();
  if (cfg.kvRanges)
    std::tie(lo, hi) = buildKeyRangeBlocks(lo, hi);
  v.kvLo = lo;
  v.kvHi = arith::MaxSIOp::create(b, hi, lo);
  v.holeFirst = v.holeLen = Value();
  if (cfg.skipsKeyHoles()) {
    // Blocks no row of the tile sees between two visible runs (attention
    // sinks and a window): both roles walk around them.
    auto hole = KeyBlockHoleOp::create(
        b, lo, hi, v.rowFirst, v.rowLast, v.batch, rangeTable(),
        cfg.blockM, cfg.blockN, rangeTableShape());
    v.holeFirst = hole.getHoleFirst();
    v.holeLen = sub(hole.getHoleEnd(), hole.getHoleFirst());
    v.kvHi = sub(v.kvHi, v.holeLen);
  }
}

Value AttentionKernelBuilder::keyBlock(Value j) {
  if (!v.holeLen)
    return j;
  return add(j, arith::SelectOp::create(
                    b, cmp(arith::CmpIPredicate::sge, j, v.holeFirst),
                    v.holeLen, c32(0)));
}

Value AttentionKernelBuilder::walkIndex(Value p) {
  if (!v.holeLen)
    return p;
  return arith::SelectOp::create(
      b, cmp(arith::CmpIPredicate::sge, p, v.holeFirst),
      arith::MaxSIOp::create(b, sub(p, v.holeLen), v.holeFirst), p);
}

std::pair<Value, Value> AttentionKernelBuilder::buildKeyRangeBlocks(Value lo,
                                                                    Value hi) {
  // Both roles narrow the tile's blocks, so the producer loads the blocks
  // the consumers compute.
  auto range = KeyBlockRangeOp::create(
      b, lo, hi, v.rowFirst, v.rowLast, v.batch, rangeTable(),
      cfg.blockM, cfg.blockN,
      rangeTableShape());
  return {range.getFirstBlock(), range.getEndBlock()};
}

Value AttentionKernelBuilder::buildFullKeyBlock(Value kvBlock, Value wgRow) {
  std::optional<int64_t> right = cfg.rightEdge();
  return FullKeyBlockOp::create(
      b, kvBlock, wgRow, v.batch, rangeTable(),
      right ? v.diag : Value(), cfg.blockN,
      right ? b.getI64IntegerAttr(*right) : IntegerAttr(),
      rangeTableShape());
}

std::pair<Value, Value> AttentionKernelBuilder::buildFullKeyBlocks(Value wgRow) {
  std::optional<int64_t> right = cfg.rightEdge();
  auto blocks = FullKeyBlocksOp::create(
      b, wgRow, v.batch, rangeTable(), right ? v.diag : Value(),
      cfg.blockN, right ? b.getI64IntegerAttr(*right) : IntegerAttr(),
      rangeTableShape());
  return {blocks.getFirstBlock(), blocks.getEndBlock()};
}

Value AttentionKernelBuilder::qReleaseIteration() {
  return buildFenceOperands(b, v.tileIndex)[0];
}

void AttentionKernelBuilder::buildReleaseQ(bool stagedInQ) {
  if (cfg.schedule.persistent && !stagedInQ)
    RingReleaseOp::create(b, v.qRing, qReleaseIteration());
}

void AttentionKernelBuilder::buildReleaseStaging() {
  if (!cfg.stageO || !cfg.schedule.persistent)
    return;
  if (!cfg.stageOInV()) {
    RingReleaseOp::create(b, v.qRing, qReleaseIteration());
    return;
  }
  // O was staged in the last V stage, or in Q for a tile without keys.
  Value t = qReleaseIteration();
  RingReleaseOp::create(b, v.vRing, lastKeyIteration(), hasKeyBlocks(),
                        v.qRing, t);
}

void AttentionKernelBuilder::buildProducer() {
  // One thread issues every TMA copy; the other producer threads only give
  // their registers away (setmaxnreg) and exit — but for warp 1 under
  // relative-bias=accumulator, which writes the key blocks' terms.
  Value isThread0 = cmp(arith::CmpIPredicate::eq, v.tid, c32(0));
  auto ifOp = scf::IfOp::create(b, isThread0, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
  buildEachTile([&] { buildProducerTile(); }, /*fetchesTiles=*/true);
  b.setInsertionPointAfter(ifOp);
  if (cfg.scoreBand)
    buildBandWriter();
}

void AttentionKernelBuilder::buildBandWriter() {
  // Warp 1 of the producer warpgroup, the same tiles and key blocks as
  // thread 0's copies.
  Value warp = arith::DivUIOp::create(b, v.tid, c32(32));
  auto ifOp = scf::IfOp::create(b, cmp(arith::CmpIPredicate::eq, warp, c32(1)),
                                /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
  buildEachTile([&] { buildBandWriterTile(); });
}

void AttentionKernelBuilder::buildBandWriterTile() {
  // Per key block: claim its stage once the consumers gave it back, write
  // the block's terms for the whole tile (its M rows), announce them.
  auto tmpl = cast<ScoreBandOp>(cfg.scoreBand);
  auto loop = scf::ForOp::create(b, v.kvLo, v.kvHi, c32(1));
  tagStage(loop, "terms");
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value kvBlock = loop.getInductionVar();
  Value iter = ringIteration(kvBlock);
  Value buffer = RingClaimOp::create(b, v.bandRing, iter);
  SmallVector<Value> at =
      modificationCoordinates(keyBlock(kvBlock), v.rowFirst);
  Value lane = arith::RemUIOp::create(b, v.tid, c32(32));
  auto stage =
      BandStageOp::create(b, buffer, lane, at[0], at[1], at[2], at[3],
                          v.scoreScale, v.captures, cfg.blockM, cfg.blockN);
  IRMapping none;
  tmpl.getBody().cloneInto(&stage.getBody(), none);
  RingCommitOp::create(b, v.bandRing, iter);
}

void AttentionKernelBuilder::buildProducerTile() {
  // The tensorized loop's GEMMs read their shared-memory operands from the
  // tensors the loop slices: Q·Kᵀ's A (Q, the same for every key block),
  // its B (K_j) and P·V's B (V_j; rowsum=mma's ones columns beside it are
  // filled once, fat.ring_fill). The producer is that loop with each such
  // operand turned into a TMA copy of the block into its ring, in the
  // loop's order; one defined outside the loop is copied once per tile,
  // before it.
  struct Copy {
    Value ring, map;
    int64_t bytes, columns;
  };
  SmallVector<Copy> perBlock;
  scf::ForOp tmpl = kvLoop();
  for (auto gemm : tmpl.getBody()->getOps<WgmmaOp>()) {
    if (gemm.getTransposeB()) {
      // Q: D/64 boxes of [blockM rows][64 columns] into the tile's Q
      // buffer. A persistent CTA first waits for the consumers to release
      // that buffer's previous tile; with two buffers that is tile t − 2,
      // released while tile t − 1 ran, so Q(t) loads while the consumers
      // still work on tile t − 1.
      // (With linear-bias=mma A is [Q | bias columns]: Q is the first.)
      Value query = gemm.getA();
      if (auto concat = query.getDefiningOp<tensor::ConcatOp>())
        query = concat.getInputs().front();
      assert(gemm.getAFrom() == OperandSource::Smem &&
             tmpl.isDefinedOutsideOfLoop(query) &&
             "Q·Kᵀ reads the tile's Q from shared memory");
      (void)query;
      auto q = RingAcquireOp::create(b, v.qRing, v.tileIndex, cfg.qBytes());
      TmaLoadOp::create(b, v.qMap, ValueRange{v.rowFirst, v.head, v.batch},
                        q.getBuffer(), cfg.blockM * 128, cfg.headDim,
                        q.getFull());
      perBlock.push_back({v.kRing, v.kMap, cfg.kStageBytes(), cfg.headDim});
    } else {
      perBlock.push_back({v.vRing, v.vMap, cfg.vLoadBytes(), cfg.headDimV});
    }
  }

  // K_j and V_j: [blockN rows][64 columns] boxes into their ring's stage
  // once the consumers released it.
  auto loop = scf::ForOp::create(b, v.kvLo, v.kvHi, c32(1));
  tagStage(loop, "load");
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value kvBlock = loop.getInductionVar();
  Value iter = ringIteration(kvBlock);
  Value kvRow = mul(keyBlock(kvBlock), c32(cfg.blockN));
  for (const Copy &copy : perBlock) {
    auto slot = RingAcquireOp::create(b, copy.ring, iter, copy.bytes);
    TmaLoadOp::create(b, copy.map, ValueRange{kvRow, v.kvHead, v.batch},
                      slot.getBuffer(), cfg.blockN * 128, copy.columns,
                      slot.getFull());
  }
}
