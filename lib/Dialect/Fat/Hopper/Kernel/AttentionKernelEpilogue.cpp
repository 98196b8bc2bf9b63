//===- AttentionKernelEpilogue.cpp - O, l and the LSE to memory -----------===//
//
// The end of a tile: fat.finalize on the warpgroup's tiles gives O / l (0
// for a row without visible keys) and LSE = ln 2·(c·m + log2 l) (−inf for
// an empty row); this file stores them, O directly or staged through shared
// memory (stmatrix, then 16-byte rows), the LSE by each quad's first lane.
//
//===----------------------------------------------------------------------===//

#include "AttentionKernelBuilder.h"

using namespace mlir;
using namespace mlir::fat;
using namespace mlir::fat::hopper;

Value AttentionKernelBuilder::buildORowOffset(Value batch, Value head,
                                              Value row) {
  return arith::AddIOp::create(
      b,
      arith::AddIOp::create(
          b, arith::MulIOp::create(b, ext64(batch), v.oStrideB),
          arith::MulIOp::create(b, ext64(head), v.oStrideH)),
      arith::MulIOp::create(b, ext64(row), v.oStrideS));
}

void AttentionKernelBuilder::buildEpilogue(Value oTile, Value mTile,
                                           Value lTile, Value rowBase,
                                           Value batch, Value head,
                                           bool storeO, bool storeLse) {
  Value quadLane = arith::RemUIOp::create(b, v.lane, c32(4));
  // O / l and the LSE as tiles (fat.finalize); l is the ones columns of O
  // under rowsum=mma, else the vector sums (the quad's shares until the
  // last block, FatAttrs.td).
  Type elt = cfg.isF16 ? Type(b.getF16Type()) : Type(b.getBF16Type());
  auto fin = FinalizeOp::create(
      b, fragmentType(cfg.headDimV, elt), fragmentType(0, b.getF32Type()),
      oTile, cfg.schedule.rowsumMma ? Value() : lTile, mTile, FloatAttr(),
      v.softmaxScale);
  bool direct = storeO && !cfg.stageO;
  bool lse = cfg.lse && storeLse;
  // The stores work on this thread's registers of the results: register
  // 2i + r of O is the pair (row r, columns 8i + 2t, +1), r of the LSE row
  // r. convert-fat-to-nvvm forms each where it is stored.
  SmallVector<Value> o, lseRegs;
  if (storeO)
    o = toRegisters(fin.getOutput());
  if (lse)
    lseRegs = toRegisters(fin.getLse());
  auto packed = [&](int64_t i, int r) { return o[2 * i + r]; };
  if (storeO && cfg.stageO)
    buildStoreOStaged(packed, rowBase, batch, head);

  for (int r = 0; r < 2 && (direct || lse); ++r) {
    Value row = add(rowBase, c32(8 * r));
    Value inRange = cmp(arith::CmpIPredicate::slt, row, v.seqQ);
    auto ifRow = scf::IfOp::create(b, inRange, /*withElseRegion=*/false);
    tagStage(ifRow, "epilogue");
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(ifRow.thenBlock()->getTerminator());

    // O[b, h, row, 8i + 2t + {0, 1}] as one 32-bit store per pair.
    Value rowOffset = buildORowOffset(batch, head, row);
    Value colBase = mul(quadLane, c32(2));
    for (int64_t i = 0; direct && i < cfg.headDimV / 8; ++i) {
      Value index = arith::AddIOp::create(
          b, rowOffset, ext64(add(colBase, c32(8 * i))));
      Value ptr = LLVM::GEPOp::create(b, v.oPtr.getType(), b.getI16Type(),
                                      v.oPtr, ValueRange{index});
      LLVM::StoreOp::create(b, packed(i, r), ptr, /*alignment=*/4);
    }
    if (!lse)
      continue;
    Value firstOfQuad = cmp(arith::CmpIPredicate::eq, quadLane, c32(0));
    auto ifLane = scf::IfOp::create(b, firstOfQuad, /*withElseRegion=*/false);
    b.setInsertionPoint(ifLane.thenBlock()->getTerminator());
    Value index = arith::AddIOp::create(
        b,
        arith::AddIOp::create(
            b, arith::MulIOp::create(b, ext64(batch), v.lseStrideB),
            arith::MulIOp::create(b, ext64(head), v.lseStrideH)),
        ext64(row));
    Value ptr = LLVM::GEPOp::create(b, v.lsePtr.getType(), b.getF32Type(),
                                    v.lsePtr, ValueRange{index});
    LLVM::StoreOp::create(b, lseRegs[r], ptr, /*alignment=*/4);
  }
}

void AttentionKernelBuilder::buildStoreOStaged(
    function_ref<Value(int64_t, int)> packed, Value rowBase, Value batch,
    Value head) {
  // Warp w of warpgroup c owns rows 16w .. 16w+15 of the warpgroup's 64
  // and stages them in rounds of R = cfg.oStagingColumns() columns: 16 rows
  // × R/8 chunks of 16 bytes (pitch 2R) in a region of its own, 32·R bytes:
  //  - in Q: the warpgroup's rows [64c, 64c+64) of the D/64 Q boxes, 8 KB
  //    per box, so warp w's region starts at box ⌊w·32R / 8192⌋, offset
  //    w·32R mod 8192 (R ≤ Dv ≤ D: the warpgroup has the boxes; 8192 is a
  //    multiple of 32R, so a region never straddles two boxes). Only this
  //    warpgroup's wgmmas read those rows, and its last one has completed.
  //  - with stageOInV, in the last key block's V stage: region (4c + w)·32R
  //    of it, once every consumer warpgroup is past its last P·V (they all
  //    read that stage); a tile without key blocks uses Q as above.
  int64_t cols = cfg.oStagingColumns();
  int64_t pitch = 2 * cols, chunksPerRow = cols / 8;
  int64_t regionBytes = 16 * pitch;
  // The addresses below depend only on the thread (and the Q slot): LLVM
  // would hoist their parts to the top of the kernel and keep them live
  // through the main loop (36…80 bytes of spills at D = 256). Opaque
  // copies of the thread's indices keep them here.
  SmallVector<Value> ids = buildFenceOperands(b, {v.tid, qSlot()});
  Value tid = ids[0];
  Value lane = arith::RemUIOp::create(b, tid, c32(32));
  Value warp = arith::RemUIOp::create(
      b, arith::DivUIOp::create(b, tid, c32(32)), c32(4));
  Value consumer = sub(arith::DivUIOp::create(b, tid, c32(128)), c32(1));
  Value linear = mul(warp, c32(regionBytes));
  Value box = arith::DivUIOp::create(b, linear, c32(8192));
  Value within = arith::RemUIOp::create(b, linear, c32(8192));
  Value warpOffset =
      add(add(mul(ids[1], c32(cfg.qBytes())), mul(box, c32(cfg.blockM * 128))),
          add(mul(consumer, c32(64 * 128)), within));
  if (cfg.stageOInV()) {
    Value inV = add(stageOffset(lastKeyStage(), /*isV=*/true),
                    mul(add(mul(consumer, c32(4)), warp), c32(regionBytes)));
    warpOffset = arith::SelectOp::create(b, hasKeyBlocks(), inV, warpOffset);
    buildNamedBarrierSync(b, c32(kEpilogueBarrier),
                          128 * cfg.numConsumerWarpgroups());
  }
  // Chunk c of staged row ρ lives at ρ·pitch + 16·(c ⊕ (ρ mod 8)): the
  // eight rows of an 8×8 stmatrix tile land on eight different 16-byte
  // bank groups, and a read of one row is still one permutation of it.
  auto chunkOffset = [&](Value rho, Value chunk) {
    Value swizzled = arith::XOrIOp::create(
        b, chunk, arith::AndIOp::create(b, rho, c32(7)));
    return add(add(warpOffset, mul(rho, c32(pitch))), mul(swizzled, c32(16)));
  };
  auto smemAt = [&](Value offset, int64_t plus) {
    return buildByteOffset(b, buildByteOffset(b, v.smem, offset), plus);
  };

  // stmatrix .x4: matrix k of the four is (chunk 2j + k/2, rows 8·(k mod 2)
  // .. +7); its register in each lane is exactly that lane's accumulator
  // pair (row g, columns 2t, 2t+1), and lanes 8k .. 8k+7 give its rows'
  // addresses. (2j + k/2) ⊕ ρ only changes the low three bits, which
  // repeat every 4 j: four base addresses, the rest immediate offsets.
  Value lane8 = arith::RemUIOp::create(b, lane, c32(8));
  Value matrix = arith::DivUIOp::create(b, lane, c32(8));
  Value rho = add(lane8, mul(arith::RemUIOp::create(b, matrix, c32(2)), c32(8)));
  Value chunkOfLane = arith::DivUIOp::create(b, matrix, c32(2));
  int64_t writePeriod = std::min<int64_t>(4, chunksPerRow / 2);
  SmallVector<Value> writeBase;
  for (int64_t j = 0; j < writePeriod; ++j)
    writeBase.push_back(chunkOffset(rho, add(chunkOfLane, c32(2 * j))));

  // Read back: load k of lane λ is chunk 32k + λ of the warp's 16·R/8,
  // i.e. row k·rowsPerLoad + ⌊λ / (R/8)⌋, chunk λ mod R/8: one 16-byte
  // load and store per lane covers 512 contiguous bytes of O per warp
  // instruction (4 full 128-byte lines). A loop, not unrolled: with all
  // loads in flight at once (Dv/4 registers) ptxas spills at D = 256.
  int64_t rowsPerLoad = 32 / chunksPerRow;
  Value laneRow = arith::DivUIOp::create(b, lane, c32(chunksPerRow));
  Value chunk = arith::RemUIOp::create(b, lane, c32(chunksPerRow));
  Value warpRow0 = sub(rowBase, arith::DivUIOp::create(b, lane, c32(4)));
  Value firstRow = add(warpRow0, laneRow);
  Value firstIndex = arith::AddIOp::create(
      b, buildORowOffset(batch, head, firstRow), ext64(mul(chunk, c32(8))));
  auto vecType = VectorType::get({4}, b.getI32Type());
  auto *ctx = b.getContext();
  for (int64_t round = 0; round < cfg.headDimV / cols; ++round) {
    // bar.warp.sync orders the warp's shared-memory accesses: the previous
    // round's reads before these writes, these writes before the reads.
    if (round > 0)
      NVVM::SyncWarpOp::create(b, c32(-1));
    int64_t firstChunk = round * chunksPerRow;
    for (int64_t j = 0; j < chunksPerRow / 2; ++j) {
      int64_t i = firstChunk + 2 * j;
      NVVM::StMatrixOp::create(
          b, smemAt(writeBase[j % writePeriod], 16 * 8 * (j / writePeriod)),
          ValueRange{packed(i, 0), packed(i, 1), packed(i + 1, 0),
                     packed(i + 1, 1)},
          NVVM::MMALayout::row, NVVM::LdStMatrixShapeAttr::get(ctx, 8, 8),
          NVVM::LdStMatrixEltType::B16);
    }
    NVVM::SyncWarpOp::create(b, c32(-1));

    auto loop = scf::ForOp::create(b, c32(0), c32(16), c32(rowsPerLoad));
    tagStage(loop, "epilogue");
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value step = loop.getInductionVar();
    Value data = LLVM::LoadOp::create(
        b, vecType, smemAt(chunkOffset(add(laneRow, step), chunk), 0),
        /*alignment=*/16);
    Value row = add(firstRow, step);
    auto ifRow = scf::IfOp::create(
        b, cmp(arith::CmpIPredicate::slt, row, v.seqQ),
        /*withElseRegion=*/false);
    b.setInsertionPoint(ifRow.thenBlock()->getTerminator());
    Value index = arith::AddIOp::create(
        b, firstIndex,
        arith::AddIOp::create(b, arith::MulIOp::create(b, v.oStrideS, ext64(step)),
                              i64Const(b, round * cols)));
    Value ptr = LLVM::GEPOp::create(b, v.oPtr.getType(), b.getI16Type(),
                                    v.oPtr, ValueRange{index});
    LLVM::StoreOp::create(b, data, ptr, /*alignment=*/16);
    b.setInsertionPointAfter(loop);
  }
  // The producer's TMA (async proxy) overwrites these bytes with a later
  // tile's Q or V once they are released: order this warp's generic-proxy
  // accesses before that.
  NVVM::FenceProxyOp::create(
      b, NVVM::ProxyKindAttr::get(ctx, NVVM::ProxyKind::async_shared),
      NVVM::SharedSpaceAttr::get(ctx, NVVM::SharedSpace::shared_cta));
}
