//===- AttentionKernel.cpp - the Hopper FlashAttention forward kernel -----===//
//
// Builds the kernel of one AttentionKernelConfig as an `llvm.func` inside a
// `gpu.module`, written with arith/scf on i32/f32 plus LLVM and NVVM ops; the
// fat-to-ptx pipeline lowers the rest. Parameters follow docs/kernel-abi.md.
//
// CTA = 1 producer warpgroup + block-m/64 (1 to 3) consumer warpgroups.
//
//   producer (thread 0)                 consumers (64 query rows each)
//   ------------------                  ------------------------------
//   TMA Q  ---------------------------> wait q
//   for j: wait emptyK[s], TMA K_j ---> S_j = Q·K_jᵀ      then arrive emptyK[s]
//          wait emptyV[s], TMA V_j ---> O += P_j·V_j      then arrive emptyV[s]
//
// with s = (j − j0) mod stages and the parity flipping each time s wraps.
// K and V have barriers of their own, so K_{j+1} can land while V_j is read.
//
// Persistent kernels (KernelSchedule::persistent) wrap both roles in the
// same loop over work units u ≡ blockIdx.x (mod num-sms), a query block or,
// with a causal mask, a pair of them (buildTileLoop); the ring index runs
// on across tiles (s = (n + j − j0) mod stages, n = blocks of earlier
// tiles), and Q gets an empty barrier: the consumers release it after the
// tile's last S = Q·Kᵀ, the producer then loads a later tile's Q into it.
// With two Q buffers (qBuffers, where shared memory allows) tile t uses
// buffer t mod 2, so tile t+1's Q lands while tile t still runs.
//
// Consumer schedules (KernelSchedule):
//   plain     for j: S_j = QK_j; wait; softmax_j; O = α·O; O += P_j·V_j; wait
//   overlap   S_0 = QK_0; wait; softmax_0
//             for j ≥ 1: issue S_j = QK_j, issue O += P_{j−1}·V_{j−1}
//                        wait S_j (wait_group 1); softmax_j (the P·V runs)
//                        wait P·V (wait_group 0); O = α_j·O
//             O += P_last·V_last
//   pingpong  (with overlap) the consumer warpgroups issue their GEMMs in
//             turns — bar.sync on their own named barrier before issuing,
//             bar.arrive on the next one's after — so the tensor cores work
//             for one warpgroup while the others run their softmax.
//   tile overlap (persistent, with overlap) the loops of a CTA's tiles are
//             chained: tile t+1's first turn issues S_0 = QK_0 together
//             with tile t's last O += P_last·V_last, and tile t's O is
//             stored after softmax_0 of tile t+1 (buildOverlappedTiles).
//
//===----------------------------------------------------------------------===//

#include "HopperBuilders.h"
#include "fa-t/Conversion/FatToNVVM/FatToNVVM.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::fat;
using namespace mlir::fat::hopper;

namespace {

/// The schedule in the IR: discardable attributes on the structured ops of
/// the kernel (scf.if / scf.for, which convert-scf-to-cf erases before
/// translation to LLVM IR), so that `--convert-fat-to-nvvm` output shows
/// which role, stage and order each region is, and lit can check it:
///   fat.role  = ["producer", "consumer"]          the warpgroup-role split
///   fat.tiles = "head-major-pairs" | "head-major"  persistent tile loop
///   fat.stage = "ones" | "load" | "prologue" | "mainloop" | "mask" |
///               "rescale" | "epilogue"
///   fat.order = the issue order of one main-loop iteration (ASCII, so the
///               printed IR stays readable)
void tag(Operation *op, StringRef name, Attribute value) {
  op->setAttr(name, value);
}
void tagStage(Operation *op, StringRef stage) {
  tag(op, "fat.stage", StringAttr::get(op->getContext(), stage));
}
ArrayAttr stringArray(MLIRContext *ctx, ArrayRef<StringRef> items) {
  SmallVector<Attribute> attrs;
  for (StringRef item : items)
    attrs.push_back(StringAttr::get(ctx, item));
  return ArrayAttr::get(ctx, attrs);
}

/// The values of the kernel that every stage of it reads.
struct KernelValues {
  // Parameters.
  Value qMap, kMap, vMap;
  Value oPtr, oStrideB, oStrideH, oStrideS;
  Value lsePtr, lseStrideB, lseStrideH;
  Value seqQ, seqKV, diag, scaleLog2e;
  // Persistent kernels: the batch size (the tile count is ⌈Sq/M⌉·Hq·B)
  // and the query blocks per head ⌈Sq/M⌉ (set by the tile loop).
  Value batchCount, numM;
  // Thread coordinates.
  Value tid, warpgroup, warp, lane;
  // Aligned dynamic shared memory (`!llvm.ptr<3>`) and its address (i64).
  Value smem, smemAddr;
  // Tile coordinates and its KV block range [kvLo, kvHi).
  Value mBlock, head, kvHead, batch, rowFirst, rowLast, kvLo, kvHi;
  // Ring blocks of the CTA's earlier tiles (0 without persistence) and the
  // tile's index among the CTA's tiles (the Q barriers' phase).
  Value ringBase, tileIndex;
};

/// The state tile overlap carries from one tile to the next: the tile whose
/// last P·V is still to be issued ("pending"), flattened into loop-carried
/// values. Its V block is the CTA's last ring iteration (ring position − 1;
/// tiles without keys take none), and there is one exactly when the ring
/// position is > 0. A CTA starts with nothing pending: P = 0 (a P·V of it is
/// issued anyway, on stage 0, and never stored), so every tile body is the
/// same straight-line code around its wgmmas (branches that merge
/// accumulator definitions make ptxas serialize every wgmma, C7513).
/// Registers are what the 160- and 240-register consumers run out of, so
/// the tile travels as one i32: bit 31 = its last P·V adds to O (it has
/// more than one block), bits 0–30 = (batch·Hq + head)·⌈Sq/M⌉ + query block
/// (< 2^31 like the unit count).
struct PendingTile {
  SmallVector<Value> o; // accumulator (O, and l with rowsum=mma)
  // rowsum=mma: m for the LSE (l is in o's ones columns); rowsum=vector:
  // l = the rows' full sums, the LSE already written at the tile's end.
  Value m[2], l[2];
  SmallVector<Value> p; // packed P of its last block
  Value id;             // accumulate bit and tile coordinates, see above

  static PendingTile unpack(ValueRange vals, int64_t oRegs) {
    PendingTile t;
    t.o.assign(vals.begin(), vals.begin() + oRegs);
    ValueRange rest = vals.drop_front(oRegs);
    t.m[0] = rest[0], t.m[1] = rest[1], t.l[0] = rest[2], t.l[1] = rest[3];
    ValueRange p = rest.slice(4, rest.size() - 5);
    t.p.assign(p.begin(), p.end());
    t.id = rest.back();
    return t;
  }
  SmallVector<Value> pack() const {
    SmallVector<Value> vals(o);
    vals.append({m[0], m[1], l[0], l[1]});
    vals.append(p);
    vals.push_back(id);
    return vals;
  }
};

/// Builds the kernel body; one method per stage of the kernel.
class AttentionKernelBuilder {
public:
  AttentionKernelBuilder(ImplicitLocOpBuilder &b,
                         const AttentionKernelConfig &cfg)
      : b(b), cfg(cfg) {}

  void build(LLVM::LLVMFuncOp func, LLVM::GlobalOp dynamicSmem);

private:
  Value add(Value x, Value y) { return arith::AddIOp::create(b, x, y); }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, x, y); }
  Value c32(int64_t v) { return i32Const(b, v); }
  Value cmp(arith::CmpIPredicate p, Value x, Value y) {
    return arith::CmpIOp::create(b, p, x, y);
  }
  Value ext64(Value x) { return arith::ExtSIOp::create(b, b.getI64Type(), x); }

  /// A shared-memory barrier pointer: 0 = q, then fullK[s], fullV[s],
  /// emptyK[s], emptyV[s].
  Value barrier(Value index);
  Value ringBarrier(int64_t group, Value stage) {
    return barrier(add(stage, c32(1 + group * cfg.stages)));
  }
  Value fullBarrier(Value stage, bool isV) {
    return ringBarrier(isV ? 1 : 0, stage);
  }
  Value emptyBarrier(Value stage, bool isV) {
    return ringBarrier(isV ? 3 : 2, stage);
  }
  /// Ring slot and phase parity of KV block `kvBlock` of the current tile,
  /// and of the CTA's `iter`-th block.
  std::pair<Value, Value> ringSlot(Value kvBlock);
  std::pair<Value, Value> ringSlotOfIteration(Value iter);
  /// Byte offset of K (or V) stage `stage` from the shared-memory base.
  Value stageOffset(Value stage, bool isV);

  void buildSharedMemoryAndBarriers(LLVM::GlobalOp dynamicSmem);
  /// rowsum=mma: fills the constant ones chunk after every V stage.
  void buildOnesChunks();
  /// Registers of the P·V accumulator (O, then the ones columns' l).
  int64_t accRegs() const { return cfg.pvColumns() / 2; }
  /// The tile's coordinates from (query block, head, batch): rows, KV
  /// head, KV block range.
  void buildTileCoordinates(Value mBlock, Value head, Value batch);
  /// Non-persistent: the tile of this CTA, from blockIdx.
  void buildBlockCoordinates();
  /// Persistent: runs `body` on each of this CTA's tiles (coordinates,
  /// ringBase and tileIndex set in `v`); the next tile's ringBase grows by
  /// the tile's KV blocks. The loop also carries `extraInit` from tile to
  /// tile: `body` receives the values of the previous tile and returns the
  /// next ones. Returns the final (ring position, tile count, extras...).
  SmallVector<Value>
  buildTileLoop(ValueRange extraInit,
                function_ref<SmallVector<Value>(ValueRange)> body);
  void buildTileLoop(function_ref<void()> body) {
    buildTileLoop(ValueRange{}, [&](ValueRange) {
      body();
      return SmallVector<Value>{};
    });
  }
  /// The Q buffer of the current tile (tile index mod qBuffers) and the
  /// phase parity of its barriers (the tile's use count of that buffer).
  Value qSlot() {
    return cfg.qBuffers == 2 ? arith::AndIOp::create(b, v.tileIndex, c32(1))
                             : c32(0);
  }
  Value qParity() {
    Value uses = cfg.qBuffers == 2
                     ? arith::ShRUIOp::create(b, v.tileIndex, c32(1))
                     : v.tileIndex;
    return arith::AndIOp::create(b, uses, c32(1));
  }
  /// Q's full barrier (index 0, or 2 + 4·stages for buffer 1) and empty
  /// barrier (persistent kernels only: 1 + 4·stages, or 3 + 4·stages).
  Value qFullBarrier(Value slot) {
    return barrier(mul(slot, c32(2 + 4 * cfg.stages)));
  }
  Value qEmptyBarrier(Value slot) {
    return barrier(add(c32(1 + 4 * cfg.stages), mul(slot, c32(2))));
  }
  /// Whether the current tile has key blocks (kvLo < kvHi), and the ring
  /// stage of its last one (meaningless without).
  Value hasKeyBlocks() {
    return cmp(arith::CmpIPredicate::slt, v.kvLo, v.kvHi);
  }
  Value lastKeyStage() { return ringSlot(sub(v.kvHi, c32(1))).first; }
  /// Persistent kernels: every consumer thread releases its tile's Q buffer
  /// after the tile's last S = Q·Kᵀ — unless the epilogue of this path
  /// stages O in it (`stagedInQ`); then buildReleaseStaging does, after the
  /// epilogue.
  void buildReleaseQ(bool stagedInQ);
  /// After a staged epilogue: the staging area goes back to the producer
  /// (Q, or with stageOInV the last V stage, or Q for a tile without keys).
  void buildReleaseStaging();
  void buildProducer();
  void buildProducerTile();
  void buildConsumer();
  void buildConsumerTile();

  /// Issues S = Q·K_sᵀ for this warpgroup's 64 rows (D/16 wgmma k-steps)
  /// as one commit group; the caller waits.
  SmallVector<Value> buildQK(Value consumer, Value stage);
  /// Sets S to −inf where the mask or the ragged KV tail hides the key.
  SmallVector<Value> buildMaskedScores(ValueRange s, Value kvBlock,
                                       Value rowBase);
  SmallVector<Value> buildMaskedScoresByKey(ValueRange s, Value kvBlock,
                                            Value rowBase);
  /// buildMaskedScores on the blocks that need it (a CTA-uniform branch).
  SmallVector<Value> buildMaskIfNeeded(ValueRange s, Value kvBlock,
                                       Value rowBase);
  /// Issues O += P·V_s with P in registers (N/16 register-A wgmma k-steps)
  /// as one commit group; the caller waits. With `accumulate` (i32) zero at
  /// run time the result is P·V_s alone (O's values are ignored).
  SmallVector<Value> buildPV(ValueRange o, ArrayRef<Value> p, Value stage,
                             Value accumulate = {});
  /// The online-softmax step on the scores of one block: turns `s` into P
  /// (f32), returns m', l' and α for the thread's two rows.
  struct SoftmaxStep {
    Value m[2], l[2], alpha[2];
    /// Lazy rescale: i1, true when some row of the warp moved its max.
    Value anyMoved;
  };
  SoftmaxStep buildSoftmax(SmallVectorImpl<Value> &s, ValueRange mOld,
                           ValueRange lOld);
  /// After the wait for S_j: fence S, release K_j, mask, softmax (S → P).
  /// `mayMask` false: the caller knows block kvBlock needs no mask.
  SoftmaxStep buildScoresToP(SmallVectorImpl<Value> &s, Value kvBlock,
                             Value stage, Value rowBase, ValueRange mOld,
                             ValueRange lOld, bool mayMask = true);
  /// The first key block from which every block may need a mask (the
  /// ragged tail, the causal diagonal or the right window edge), so
  /// blocks below it need none (no left window edge: splitMaskedTail).
  Value buildFirstMaskedBlock();
  /// P (f32, accumulator layout) packed into the A fragments of P·V.
  SmallVector<Value> buildPackP(ArrayRef<Value> s);
  /// O = α·O on the accumulator layout (skipped by the warps whose rows
  /// kept their max, under lazy rescale).
  void buildRescale(SmallVectorImpl<Value> &o, const SoftmaxStep &step);
  /// The two consumer loops; both return (O, m[2], l[2]).
  SmallVector<Value> buildPlainLoop(Value consumer, Value rowBase);
  SmallVector<Value> buildOverlappedLoop(Value consumer, Value rowBase);
  /// The overlapped loop's steady state over blocks kvLo+1 .. kvHi−1,
  /// from `init` = (O, m[2], l[2], P_kvLo); returns the same after the last
  /// block (P of block kvHi−1 not yet multiplied). `overwriteFirst`: the
  /// first P·V ignores the incoming O (tile overlap hands in the previous
  /// tile's).
  SmallVector<Value> buildSteadyLoop(Value consumer, Value rowBase,
                                     ValueRange init, bool overwriteFirst);
  /// One steady-state loop over blocks [lo, hi) (buildSteadyLoop).
  SmallVector<Value> buildSteadyRange(Value consumer, Value rowBase,
                                      ValueRange init, bool overwriteFirst,
                                      Value lo, Value hi, bool mayMask);
  /// Tile overlap (KernelSchedule::tileOverlap): the consumer's tile loop,
  /// one tile, and the final P·V after the last tile.
  void buildOverlappedTiles();
  SmallVector<Value> buildOverlappedTile(Value consumer, ValueRange pending);
  void buildDrainPending(Value consumer, Value ringPosition,
                         ValueRange pending);
  /// The pending tile's V block from the CTA's ring position (blocks
  /// issued so far): whether there is one (position > 0), its stage (0
  /// when there is none: the P = 0 product reads any stage) and parity.
  struct PendingSlot {
    Value isPending, stage, parity;
  };
  PendingSlot buildPendingSlot(Value ringPosition);
  void buildStorePending(Value consumer, const PendingSlot &slot,
                         ValueRange o, const PendingTile &pending);
  /// Ping-pong turn taking around one GEMM issue phase (no-ops without it),
  /// and the game's first hand-over (the last consumer to 0) and last
  /// take-over.
  void buildOpenGame(Value consumer);
  /// Builds `body` for consumer warpgroup `which` only.
  void buildOnConsumer(Value consumer, int64_t which, function_ref<void()> body);
  void buildCloseGame(Value consumer);
  void buildTurnBegin(Value consumer);
  void buildTurnEnd(Value consumer, bool lastTurn);
  /// Writes O / l (and the LSE) of this thread's two rows of (batch, head).
  /// The parts: `storeO`, `storeLse` (only where the kernel writes one);
  /// `lIsSum`: `l` holds the rows' full sums already (else the ones columns
  /// of `o` or the quad's partials do).
  void buildEpilogue(ValueRange o, ArrayRef<Value> m, ArrayRef<Value> l,
                     Value rowBase, Value batch, Value head,
                     bool storeO = true, bool storeLse = true,
                     bool lIsSum = false);
  /// Element offset of O[batch, head, row, 0] (i64).
  Value buildORowOffset(Value batch, Value head, Value row);
  /// The epilogue's O stores with cfg.stageO: `packed(i, r)` builds this
  /// thread's normalized pair of chunk i (columns 8i + 2t, +1) in row
  /// rowBase + 8r.
  void buildStoreOStaged(function_ref<Value(int64_t, int)> packed,
                         Value rowBase, Value batch, Value head);
  /// This thread's first row in the tile starting at row `rowFirst` (the
  /// second is +8), see HopperBuilders.h.
  Value buildRowBase(Value consumer, Value rowFirst);

  ImplicitLocOpBuilder &b;
  const AttentionKernelConfig &cfg;
  KernelValues v;
};

} // namespace

Value AttentionKernelBuilder::barrier(Value index) {
  Value offset =
      add(c32(cfg.barrierOffset()), mul(index, c32(8)));
  return buildByteOffset(b, v.smem, offset);
}

std::pair<Value, Value> AttentionKernelBuilder::ringSlot(Value kvBlock) {
  return ringSlotOfIteration(add(v.ringBase, sub(kvBlock, v.kvLo)));
}

std::pair<Value, Value>
AttentionKernelBuilder::ringSlotOfIteration(Value iter) {
  Value stage = arith::RemUIOp::create(b, iter, c32(cfg.stages));
  Value parity = arith::AndIOp::create(
      b, arith::DivUIOp::create(b, iter, c32(cfg.stages)), c32(1));
  return {stage, parity};
}

Value AttentionKernelBuilder::stageOffset(Value stage, bool isV) {
  int64_t base = isV ? cfg.vOffset() : cfg.kOffset();
  int64_t size = isV ? cfg.vStageBytes() : cfg.kStageBytes();
  return add(c32(base), mul(stage, c32(size)));
}

void AttentionKernelBuilder::buildSharedMemoryAndBarriers(
    LLVM::GlobalOp dynamicSmem) {
  // Align the dynamic shared memory base to 1024 bytes at run time: the
  // 128B swizzle pattern and the wgmma descriptors (base_offset 0) assume
  // tiles start on 1024-byte boundaries. The manifest requests 1024 bytes of
  // slack for this.
  Value raw = LLVM::AddressOfOp::create(b, dynamicSmem);
  Value rawAddr = LLVM::PtrToIntOp::create(b, b.getI64Type(), raw);
  Value pad = arith::AndIOp::create(
      b, arith::SubIOp::create(b, i64Const(b, 1024),
                               arith::AndIOp::create(b, rawAddr,
                                                     i64Const(b, 1023))),
      i64Const(b, 1023));
  v.smem = buildByteOffset(b, raw, pad);
  v.smemAddr = arith::AddIOp::create(b, rawAddr, pad);

  // Thread 0 initializes the barriers: q and full*[s] expect one arrival
  // (the producer's arrive.expect_tx) plus the TMA bytes; empty*[s] expect
  // every consumer thread.
  Value isThread0 = cmp(arith::CmpIPredicate::eq, v.tid, c32(0));
  auto ifOp = scf::IfOp::create(b, isThread0, /*withElseRegion=*/false);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
    for (int64_t slot = 0; slot < cfg.qBuffers; ++slot)
      buildMBarrierInit(b, qFullBarrier(c32(slot)), 1);
    for (int64_t s = 0; s < cfg.stages; ++s) {
      for (bool isV : {false, true}) {
        buildMBarrierInit(b, fullBarrier(c32(s), isV), 1);
        buildMBarrierInit(b, emptyBarrier(c32(s), isV),
                          128 * cfg.numConsumerWarpgroups());
      }
    }
    if (cfg.schedule.persistent)
      for (int64_t slot = 0; slot < cfg.qBuffers; ++slot)
        buildMBarrierInit(b, qEmptyBarrier(c32(slot)),
                          128 * cfg.numConsumerWarpgroups());
    // Make the initialization visible to the async proxy (TMA) before use.
    NVVM::FenceMbarrierInitOp::create(b);
  }
  if (cfg.schedule.rowsumMma)
    buildOnesChunks();
  NVVM::BarrierOp::create(b);
}

void AttentionKernelBuilder::buildOnesChunks() {
  // Every thread fills its share of the ones chunk after each V stage with
  // 16-byte stores of 1.0 pairs, then fences the generic-proxy writes
  // against the async proxy that wgmma reads shared memory through. The
  // swizzle is irrelevant: every byte of the chunk holds 1.0.
  uint32_t one = cfg.isF16 ? 0x3C00u : 0x3F80u;
  Value pair = c32(static_cast<int32_t>(one | (one << 16)));
  auto vecType = VectorType::get({4}, b.getI32Type());
  Value ones = LLVM::UndefOp::create(b, vecType);
  for (int64_t i = 0; i < 4; ++i)
    ones = LLVM::InsertElementOp::create(b, ones, pair, c32(i));
  int64_t perStage = cfg.onesChunkBytes() / 16;
  int64_t total = perStage * cfg.stages;
  auto loop = scf::ForOp::create(b, v.tid, c32(total), c32(cfg.numThreads()));
  tagStage(loop, "ones");
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value idx = loop.getInductionVar();
    Value stage = arith::DivUIOp::create(b, idx, c32(perStage));
    Value within = arith::RemUIOp::create(b, idx, c32(perStage));
    Value offset = add(add(stageOffset(stage, /*isV=*/true),
                           c32(cfg.vLoadBytes())),
                       mul(within, c32(16)));
    LLVM::StoreOp::create(b, ones, buildByteOffset(b, v.smem, offset),
                          /*alignment=*/16);
  }
  NVVM::FenceProxyOp::create(
      b, NVVM::ProxyKindAttr::get(b.getContext(), NVVM::ProxyKind::async_shared),
      NVVM::SharedSpaceAttr::get(b.getContext(), NVVM::SharedSpace::shared_cta));
}

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
    ValueRange extraInit, function_ref<SmallVector<Value>(ValueRange)> body) {
  // Work units u ∈ [0, U), CTA c taking c, c + G, c + 2G, … (G = num-sms;
  // min(U, G) CTAs are launched), head-major: u = (b·Hq + h)·P + p, so the
  // CTAs running together work on few heads and share their K/V blocks in
  // L2. With nM = ⌈Sq/M⌉:
  //   else    P = nM, unit p is query block m = p;
  //   causal  P = ⌈nM/2⌉, unit p is the pair of query blocks p and
  //           nM − 1 − p (one block when they coincide). A block's work
  //           grows linearly with m under a causal mask, so every pair costs
  //           the same (nM + 1 blocks of keys when M = N, Sq = Skv) and a
  //           static round robin is balanced to within one unit.
  // Measured alternatives (perf log runs 15–18): longest first over all
  // heads at once (t = (nM − 1 − m)·Hq·B + …) lost 6…16% at D ≥ 128 — the
  // CTAs running together then belong to different heads and share no K/V
  // block, and streaming 1/M byte per flop at 700 TFLOP/s wants more than
  // the H200's 4.8 TB/s; longest first within groups of heads fitting the
  // L2 lost up to 40% at long S — with one head per group a CTA's tiles sit
  // at the same place of every group's sawtooth, always long or always
  // short.
  // The step is the launch's CTA count as a constant: the manifest's grid
  // is min(U, num-sms) CTAs, so CTA c's next unit c + num-sms is past U
  // whenever fewer were launched. (Reading gridDim.x instead costs the
  // 24-register producer a register it spills.)
  Value numM = arith::DivUIOp::create(
      b, add(v.seqQ, c32(cfg.blockM - 1)), c32(cfg.blockM));
  v.numM = numM;
  Value heads = c32(cfg.numHeadsQ);
  Value unitsPerHead =
      cfg.causal ? arith::DivUIOp::create(b, add(numM, c32(1)), c32(2)) : numM;
  Value numUnits = mul(unitsPerHead, mul(heads, v.batchCount));
  Value first = NVVM::BlockIdXOp::create(b, b.getI32Type());
  int64_t step = cfg.numSMs;
  // One tile of unit u: coordinates, the role's body; returns the carried
  // ring position and tile index for the next tile.
  auto buildTile = [&](Value u, Value mBlock, ValueRange carried) {
    Value rest = arith::DivUIOp::create(b, u, unitsPerHead);
    v.ringBase = carried[0];
    v.tileIndex = carried[1];
    buildTileCoordinates(mBlock, arith::RemUIOp::create(b, rest, heads),
                         arith::DivUIOp::create(b, rest, heads));
    SmallVector<Value> extra = body(carried.drop_front(2));
    SmallVector<Value> next{add(v.ringBase, sub(v.kvHi, v.kvLo)),
                            add(v.tileIndex, c32(1))};
    next.append(extra);
    return next;
  };
  SmallVector<Value> init{c32(0), c32(0)};
  llvm::append_range(init, extraInit);
  if (!cfg.causal) {
    auto loop = scf::ForOp::create(b, first, numUnits, c32(step), init);
    tag(loop, "fat.tiles", b.getStringAttr("head-major"));
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      Value u = loop.getInductionVar();
      scf::YieldOp::create(
          b, buildTile(u, arith::RemUIOp::create(b, u, unitsPerHead),
                       loop.getRegionIterArgs()));
    }
    return SmallVector<Value>(loop.getResults());
  }
  // Causal: one loop over tile positions w = 2u + k (k = 0: block p, k = 1:
  // block nM − 1 − p), from 2c: after k = 0 the next position is w + 1, or
  // the next unit's w + 2G when the pair is one block; after k = 1 it is
  // w + 2G − 1. The next position is computed before the tile's body, so
  // only it, the ring position and the tile index live across the body: a
  // loop nest (units, then the pair) keeps its bounds live and spills in
  // the 24-register producer and the D = 256 consumers. Positions stay
  // below 2U + 2G < 2^32 (U < 2^31): unsigned compares.
  Value end = mul(numUnits, c32(2));
  init.insert(init.begin(), mul(first, c32(2)));
  SmallVector<Type> types(ValueRange(init).getTypes());
  SmallVector<Location> locs(init.size(), b.getLoc());
  auto loop = scf::WhileOp::create(b, types, init);
  tag(loop, "fat.tiles", b.getStringAttr("head-major-pairs"));
  OpBuilder::InsertionGuard guard(b);
  {
    Block *before = b.createBlock(&loop.getBefore(), {}, types, locs);
    scf::ConditionOp::create(
        b, cmp(arith::CmpIPredicate::ult, before->getArgument(0), end),
        before->getArguments());
  }
  Block *after = b.createBlock(&loop.getAfter(), {}, types, locs);
  Value w = after->getArgument(0);
  Value u = arith::ShRUIOp::create(b, w, c32(1));
  Value second = cmp(arith::CmpIPredicate::ne,
                     arith::AndIOp::create(b, w, c32(1)), c32(0));
  Value p = arith::RemUIOp::create(b, u, unitsPerHead);
  Value longer = sub(sub(numM, c32(1)), p);
  Value afterFirst = arith::SelectOp::create(
      b, cmp(arith::CmpIPredicate::ugt, longer, p), add(w, c32(1)),
      add(w, c32(2 * step)));
  Value next = arith::SelectOp::create(b, second, add(w, c32(2 * step - 1)),
                                       afterFirst);
  Value mBlock = arith::SelectOp::create(b, second, longer, p);
  SmallVector<Value> carried =
      buildTile(u, mBlock, after->getArguments().drop_front());
  carried.insert(carried.begin(), next);
  scf::YieldOp::create(b, carried);
  b.setInsertionPointAfter(loop);
  return SmallVector<Value>(loop.getResults().drop_front());
}

void AttentionKernelBuilder::buildReleaseQ(bool stagedInQ) {
  if (cfg.schedule.persistent && !stagedInQ)
    buildMBarrierArrive(b, qEmptyBarrier(qSlot()));
}

void AttentionKernelBuilder::buildReleaseStaging() {
  if (!cfg.stageO || !cfg.schedule.persistent)
    return;
  Value bar = qEmptyBarrier(qSlot());
  if (cfg.stageOInV())
    bar = arith::SelectOp::create(b, hasKeyBlocks(),
                                  emptyBarrier(lastKeyStage(), /*isV=*/true),
                                  bar);
  buildMBarrierArrive(b, bar);
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

  // KV blocks any row of the CTA can see:
  //   kvHi = min(⌈Skv/N⌉, ⌈(rowLast + diag + right + 1)/N⌉)  (causal: right 0)
  //   kvLo = ⌊max(rowFirst + diag − left, 0)/N⌋
  // Blocks outside are never loaded; a CTA whose range is empty writes O = 0
  // and LSE = −inf.
  int64_t n = cfg.blockN;
  auto ceilDivNonNeg = [&](Value x) {
    return arith::DivUIOp::create(b, add(x, c32(n - 1)), c32(n));
  };
  Value hi = ceilDivNonNeg(v.seqKV);
  if (std::optional<int64_t> right = cfg.rightEdge()) {
    Value kEnd = add(add(v.rowLast, v.diag), c32(*right + 1));
    kEnd = arith::MaxSIOp::create(b, kEnd, c32(0));
    hi = arith::MinSIOp::create(b, hi, ceilDivNonNeg(kEnd));
  }
  Value lo = c32(0);
  if (cfg.windowLeft >= 0) {
    Value kStart = sub(add(v.rowFirst, v.diag), c32(cfg.windowLeft));
    kStart = arith::MaxSIOp::create(b, kStart, c32(0));
    lo = arith::DivUIOp::create(b, kStart, c32(n));
  }
  v.kvLo = lo;
  v.kvHi = arith::MaxSIOp::create(b, hi, lo);
}

void AttentionKernelBuilder::buildProducer() {
  // One thread issues every TMA copy; the other producer threads only give
  // their registers away (setmaxnreg) and exit.
  Value isThread0 = cmp(arith::CmpIPredicate::eq, v.tid, c32(0));
  auto ifOp = scf::IfOp::create(b, isThread0, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
  if (cfg.schedule.persistent)
    buildTileLoop([&] { buildProducerTile(); });
  else
    buildProducerTile();
}

void AttentionKernelBuilder::buildProducerTile() {
  // Q: D/64 boxes of [blockM rows][64 columns], once per tile, into the
  // tile's Q buffer. A persistent CTA first waits for the consumers to
  // release that buffer's previous tile (parity 1 on its first use: a fresh
  // barrier reports it complete); with two buffers that is tile t − 2,
  // released while tile t − 1 ran, so Q(t) loads while the consumers still
  // work on tile t − 1.
  int64_t rowBytes = 128;
  Value slot = qSlot();
  Value qBar = qFullBarrier(slot);
  if (cfg.schedule.persistent)
    buildMBarrierWait(b, qEmptyBarrier(slot),
                      arith::XOrIOp::create(b, qParity(), c32(1)));
  buildMBarrierArriveExpectTx(b, qBar, cfg.qBytes());
  Value qBase = buildByteOffset(b, v.smem, mul(slot, c32(cfg.qBytes())));
  for (int64_t c = 0; c < cfg.headDim / 64; ++c)
    buildTmaLoad(b, buildByteOffset(b, qBase, c * cfg.blockM * rowBytes),
                 v.qMap, {c32(64 * c), v.rowFirst, v.head, v.batch}, qBar);

  // K_j and V_j into stage s once the consumers released it (each on its
  // own barriers). The first pass over the ring waits on parity 1, which a
  // fresh barrier reports complete.
  auto loop = scf::ForOp::create(b, v.kvLo, v.kvHi, c32(1));
  tagStage(loop, "load");
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value kvBlock = loop.getInductionVar();
  auto [stage, parity] = ringSlot(kvBlock);
  Value kvRow = mul(kvBlock, c32(cfg.blockN));
  for (bool isV : {false, true}) {
    buildMBarrierWait(b, emptyBarrier(stage, isV),
                      arith::XOrIOp::create(b, parity, c32(1)));
    Value full = fullBarrier(stage, isV);
    buildMBarrierArriveExpectTx(b, full,
                                isV ? cfg.vLoadBytes() : cfg.kStageBytes());
    Value base = buildByteOffset(b, v.smem, stageOffset(stage, isV));
    int64_t dim = isV ? cfg.headDimV : cfg.headDim;
    for (int64_t c = 0; c < dim / 64; ++c)
      buildTmaLoad(b, buildByteOffset(b, base, c * cfg.blockN * rowBytes),
                   isV ? v.vMap : v.kMap,
                   {c32(64 * c), kvRow, v.kvHead, v.batch}, full);
  }
}

SmallVector<Value> AttentionKernelBuilder::buildQK(Value consumer,
                                                   Value stage) {
  // Q chunk c of this warpgroup: rows [64·consumer, +64) of the
  // [blockM][64] box c; K chunk c: the [blockN][64] box c of the stage. Both
  // K-major with 128-byte rows; a k16 step advances 32 bytes inside a row
  // (the swizzle is applied by the hardware on the final address).
  Value qAddr = arith::AddIOp::create(
      b, v.smemAddr,
      ext64(add(mul(qSlot(), c32(cfg.qBytes())), mul(consumer, c32(64 * 128)))));
  Value kAddr =
      arith::AddIOp::create(b, v.smemAddr, ext64(stageOffset(stage, false)));
  Value qDesc = buildWgmmaDescriptor(b, qAddr, 16, 1024);
  Value kDesc = buildWgmmaDescriptor(b, kAddr, 16, 1024);
  auto advance = [&](Value desc, int64_t bytes) -> Value {
    if (bytes == 0)
      return desc;
    // The address field holds addr >> 4 and cannot carry out: every tile
    // lies below 228 KB.
    return arith::AddIOp::create(b, desc, i64Const(b, bytes >> 4));
  };
  buildWgmmaFence(b);
  SmallVector<Value> s;
  for (int64_t c = 0; c < cfg.headDim / 64; ++c) {
    for (int64_t kk = 0; kk < 4; ++kk) {
      Value a = advance(qDesc, c * cfg.blockM * 128 + kk * 32);
      Value bDesc = advance(kDesc, c * cfg.blockN * 128 + kk * 32);
      s = buildWgmmaSS(b, s, a, bDesc, cfg.blockN, cfg.isF16);
    }
  }
  buildWgmmaCommit(b);
  return s;
}

SmallVector<Value> AttentionKernelBuilder::buildMaskedScores(ValueRange s,
                                                             Value kvBlock,
                                                             Value rowBase) {
  // Element d[4i + 2r + e] is (row rowBase + 8r, key kvBlock·N + 8i + 2t + e).
  // With c0 = kvBlock·N + 2t its key is c0 + k, k = 8i + e a constant, so
  // every bound becomes a limit on k per row, computed once:
  //   c0 + k < Skv                  (ragged tail)   k ≤ Skv − 1 − c0
  //   c0 + k ≤ row + diag + right   (causal: 0)     k ≤ row + diag + right − c0
  //   c0 + k ≥ row + diag − left                    k ≥ row + diag − left − c0
  // and an element costs a compare with an immediate (two with a left
  // bound) and a select, not its key's index and a compare per bound
  // (about 120 SASS instructions less per masked block at 128 keys). The
  // per-row limits' loop-invariant parts cost registers, though: some
  // 160-register kernels keep the per-key form (cfg.maskByRowLimits()).
  if (!cfg.maskByRowLimits())
    return buildMaskedScoresByKey(s, kvBlock, rowBase);
  Value t = arith::RemUIOp::create(b, v.lane, c32(4));
  Value colBase = add(mul(kvBlock, c32(cfg.blockN)), mul(t, c32(2)));
  Value negInf = f32Const(b, -std::numeric_limits<double>::infinity());
  std::optional<int64_t> right = cfg.rightEdge();
  Value tail = sub(sub(v.seqKV, c32(1)), colBase);
  Value hi[2], lo[2];
  for (int r = 0; r < 2; ++r) {
    hi[r] = tail;
    if (!cfg.masked())
      continue;
    Value rowDiag = add(add(rowBase, c32(8 * r)), v.diag);
    if (right)
      hi[r] = arith::MinSIOp::create(b, tail,
                                     sub(add(rowDiag, c32(*right)), colBase));
    if (cfg.windowLeft >= 0)
      lo[r] = sub(sub(rowDiag, c32(cfg.windowLeft)), colBase);
  }
  SmallVector<Value> out(s.begin(), s.end());
  for (int64_t i = 0; i < cfg.blockN / 8; ++i) {
    for (int e = 0; e < 2; ++e) {
      Value k = c32(8 * i + e);
      for (int r = 0; r < 2; ++r) {
        Value visible = cmp(arith::CmpIPredicate::sle, k, hi[r]);
        if (lo[r])
          visible = arith::AndIOp::create(
              b, visible, cmp(arith::CmpIPredicate::sge, k, lo[r]));
        int64_t idx = 4 * i + 2 * r + e;
        out[idx] = arith::SelectOp::create(b, visible, out[idx], negInf);
      }
    }
  }
  return out;
}

SmallVector<Value>
AttentionKernelBuilder::buildMaskedScoresByKey(ValueRange s, Value kvBlock,
                                               Value rowBase) {
  // buildMaskedScores, one key index and compare per bound per element.
  Value t = arith::RemUIOp::create(b, v.lane, c32(4));
  Value colBase = add(mul(kvBlock, c32(cfg.blockN)), mul(t, c32(2)));
  Value negInf = f32Const(b, -std::numeric_limits<double>::infinity());
  Value rowDiag[2];
  for (int r = 0; r < 2; ++r)
    rowDiag[r] = add(add(rowBase, c32(8 * r)), v.diag);
  SmallVector<Value> out(s.begin(), s.end());
  for (int64_t i = 0; i < cfg.blockN / 8; ++i) {
    for (int e = 0; e < 2; ++e) {
      Value col = add(colBase, c32(8 * i + e));
      Value inRange = cmp(arith::CmpIPredicate::slt, col, v.seqKV);
      for (int r = 0; r < 2; ++r) {
        Value visible = inRange;
        auto both = [&](Value cond) {
          visible = arith::AndIOp::create(b, visible, cond);
        };
        // causal: j ≤ i + diag; window: i + diag − left ≤ j ≤ i + diag + right
        if (cfg.causal)
          both(cmp(arith::CmpIPredicate::sle, col, rowDiag[r]));
        if (cfg.windowLeft >= 0)
          both(cmp(arith::CmpIPredicate::sge, col,
                   sub(rowDiag[r], c32(cfg.windowLeft))));
        if (cfg.windowRight >= 0)
          both(cmp(arith::CmpIPredicate::sle, col,
                   add(rowDiag[r], c32(cfg.windowRight))));
        int64_t idx = 4 * i + 2 * r + e;
        out[idx] = arith::SelectOp::create(b, visible, out[idx], negInf);
      }
    }
  }
  return out;
}

SmallVector<Value> AttentionKernelBuilder::buildPV(ValueRange o,
                                                   ArrayRef<Value> p,
                                                   Value stage,
                                                   Value accumulate) {
  // V_s is MN-major for this GEMM: box c holds columns [64c, 64c+64) of the
  // blockN key rows, one 128-byte row per key. A k16 step covers 16 key rows
  // = 2048 bytes; SBO = 1024 (8 key rows), LBO = blockN·128 (the next 64
  // output columns).
  Value vAddr =
      arith::AddIOp::create(b, v.smemAddr, ext64(stageOffset(stage, true)));
  Value vDesc = buildWgmmaDescriptor(b, vAddr, cfg.blockN * 128, 1024);
  buildWgmmaFence(b);
  SmallVector<Value> acc(o.begin(), o.end());
  for (int64_t kk = 0; kk < cfg.blockN / 16; ++kk) {
    Value desc = kk == 0 ? vDesc
                         : Value(arith::AddIOp::create(
                               b, vDesc, i64Const(b, (kk * 2048) >> 4)));
    // Only the first k-step may start over; the others add to it.
    acc = buildWgmmaRS(b, acc, p.slice(4 * kk, 4), desc, cfg.pvColumns(),
                       cfg.isF16, kk == 0 ? accumulate : Value());
  }
  buildWgmmaCommit(b);
  return acc;
}

Value AttentionKernelBuilder::buildORowOffset(Value batch, Value head,
                                              Value row) {
  return arith::AddIOp::create(
      b,
      arith::AddIOp::create(
          b, arith::MulIOp::create(b, ext64(batch), v.oStrideB),
          arith::MulIOp::create(b, ext64(head), v.oStrideH)),
      arith::MulIOp::create(b, ext64(row), v.oStrideS));
}

void AttentionKernelBuilder::buildEpilogue(ValueRange o, ArrayRef<Value> m,
                                           ArrayRef<Value> l, Value rowBase,
                                           Value batch, Value head,
                                           bool storeO, bool storeLse,
                                           bool lIsSum) {
  Value quadLane = arith::RemUIOp::create(b, v.lane, c32(4));
  Value zero = f32Const(b, 0.0);
  Value one = f32Const(b, 1.0);
  Value ln2 = f32Const(b, M_LN2);
  Value negInf = f32Const(b, -std::numeric_limits<double>::infinity());
  Value sum[2], nonEmpty[2], inv[2];
  for (int r = 0; r < 2; ++r) {
    // rowsum=mma: every ones column of the accumulator holds the full row
    // sum; rowsum=vector: l was a per-thread partial, finish it on the quad.
    sum[r] = lIsSum ? l[r]
             : cfg.schedule.rowsumMma
                 ? o[4 * (cfg.headDimV / 8) + 2 * r]
                 : buildQuadReduce(b, l[r], /*isMax=*/false);
    nonEmpty[r] =
        arith::CmpFOp::create(b, arith::CmpFPredicate::OGT, sum[r], zero);
    // An empty row (no visible key) has l = 0: O = 0, LSE = −inf.
    inv[r] = arith::SelectOp::create(
        b, nonEmpty[r], arith::DivFOp::create(b, one, sum[r]), zero);
  }
  // O / l of chunk i in row r, packed to 16 bits where it is stored (all
  // of them at once would keep Dv/2 more registers live at D = 256).
  auto packed = [&](int64_t i, int r) {
    return buildPackPair(b, arith::MulFOp::create(b, o[4 * i + 2 * r], inv[r]),
                         arith::MulFOp::create(b, o[4 * i + 2 * r + 1], inv[r]),
                         cfg.isF16);
  };
  if (storeO && cfg.stageO)
    buildStoreOStaged(packed, rowBase, batch, head);

  bool direct = storeO && !cfg.stageO;
  bool lse = cfg.lse && storeLse;
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
    // LSE = ln Σ exp(scale·s) = (c·m + log2 l)·ln 2 with c = scale·log2 e.
    Value lseValue = arith::MulFOp::create(
        b,
        arith::AddFOp::create(b, arith::MulFOp::create(b, m[r], v.scaleLog2e),
                              buildLog2(b, sum[r])),
        ln2);
    lseValue = arith::SelectOp::create(b, nonEmpty[r], lseValue, negInf);
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
    LLVM::StoreOp::create(b, lseValue, ptr, /*alignment=*/4);
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

SmallVector<Value> AttentionKernelBuilder::buildMaskIfNeeded(ValueRange s,
                                                             Value kvBlock,
                                                             Value rowBase) {
  // Only blocks on a mask edge or the ragged tail pay for the mask; the
  // test is uniform over the CTA:
  //   (j+1)·N > Skv                                  ragged tail
  //   (j+1)·N − 1 > rowFirst + diag + right          causal / right edge
  //   j·N < rowLast + diag − left                    left edge
  Value blockEnd = mul(add(kvBlock, c32(1)), c32(cfg.blockN));
  Value needMask = cmp(arith::CmpIPredicate::sgt, blockEnd, v.seqKV);
  if (std::optional<int64_t> right = cfg.rightEdge())
    needMask = arith::OrIOp::create(
        b, needMask,
        cmp(arith::CmpIPredicate::sgt, sub(blockEnd, c32(1)),
            add(add(v.rowFirst, v.diag), c32(*right))));
  if (cfg.windowLeft >= 0)
    needMask = arith::OrIOp::create(
        b, needMask,
        cmp(arith::CmpIPredicate::slt, mul(kvBlock, c32(cfg.blockN)),
            sub(add(v.rowLast, v.diag), c32(cfg.windowLeft))));
  auto maskIf = scf::IfOp::create(
      b, needMask,
      [&](OpBuilder &nested, Location loc) {
        ImplicitLocOpBuilder nb(loc, nested);
        AttentionKernelBuilder inner(nb, cfg);
        inner.v = v;
        scf::YieldOp::create(nb, inner.buildMaskedScores(s, kvBlock, rowBase));
      },
      [&](OpBuilder &nested, Location loc) {
        scf::YieldOp::create(nested, loc, s);
      });
  tagStage(maskIf, "mask");
  return SmallVector<Value>(maskIf.getResults());
}

AttentionKernelBuilder::SoftmaxStep
AttentionKernelBuilder::buildSoftmax(SmallVectorImpl<Value> &s,
                                     ValueRange mOld, ValueRange lOld) {
  // Online softmax, per row r of the thread (c = scale·log2 e):
  //   m̂ = max(m, rowmax S)                    (quad shuffles xor 1, 2)
  //   m' = m̂                                  (rescale=always)
  //   m' = m̂ if c·(m̂ − m) > τ or m = −inf, else m   (rescale=lazy)
  //   ĉm = c·m', or 0 when m' = −inf (a row with nothing visible yet)
  //   P  = exp2(c·S − ĉm)                      one FMA + MUFU.EX2
  //   α  = exp2(c·m − ĉm)                      0 when m = −inf, 1 if m' = m
  //   l' = α·l + Σ P   (rowsum=vector: a per-thread partial, the quad sum
  //                     is taken at the end; rowsum=mma: the P·V wgmma's
  //                     ones columns compute it, and l is not carried here)
  // Lazy-rescale numerics: while m' lags the true max by at most τ, every
  // P ≤ 2^τ (256 for τ = 8): exact in bf16/f16 up to the usual rounding,
  // and O, l ≤ 2^τ·Σ|v|, Skv·2^τ stay far from f32 overflow. O/l and
  // LSE = ln2·(ĉm + log2 l) are invariant to which m' was used.
  // (LLVM's maxnum, not arith.maxnumf: convert-gpu-to-nvvm would turn the
  // latter into a libdevice call.)
  Value c = v.scaleLog2e;
  Value zero = f32Const(b, 0.0);
  Value one = f32Const(b, 1.0);
  Value negInf = f32Const(b, -std::numeric_limits<double>::infinity());
  bool lazy = cfg.schedule.lazyRescale;
  // Element k of the row's blockN/4 registers goes to the FMA-pipe
  // polynomial when ⌊(k+1)·φ⌋ > ⌊k·φ⌋ (φ = exp2Poly): φ·blockN/4 of them,
  // evenly spread, so the MUFU and FMA streams interleave in every chunk.
  double phi = cfg.schedule.exp2Poly;
  auto usePolyExp2 = [&](int64_t k) {
    return std::floor((k + 1) * phi + 1e-9) > std::floor(k * phi + 1e-9);
  };
  SoftmaxStep step;
  Value moved[2];
  for (int r = 0; r < 2; ++r) {
    Value mx = mOld[r];
    for (int64_t i = 0; i < cfg.blockN / 8; ++i)
      for (int e = 0; e < 2; ++e)
        mx = LLVM::MaxNumOp::create(b, mx, s[4 * i + 2 * r + e]);
    Value mHat = buildQuadReduce(b, mx, /*isMax=*/true);
    step.m[r] = mHat;
    if (lazy) {
      // mHat − m is +inf or NaN when m = −inf: the first visible block
      // always moves the max (NaN compares false, hence the explicit test).
      Value growth = arith::MulFOp::create(
          b, arith::SubFOp::create(b, mHat, mOld[r]), c);
      moved[r] = arith::OrIOp::create(
          b,
          arith::CmpFOp::create(b, arith::CmpFPredicate::OGT, growth,
                                f32Const(b, cfg.schedule.rescaleThreshold)),
          arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, mOld[r],
                                negInf));
      step.m[r] = arith::SelectOp::create(b, moved[r], mHat, mOld[r]);
    }
    Value isNegInf = arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ,
                                           step.m[r], negInf);
    Value scaledMax = arith::SelectOp::create(
        b, isNegInf, zero, arith::MulFOp::create(b, step.m[r], c));
    Value negScaledMax = arith::NegFOp::create(b, scaledMax);
    step.alpha[r] =
        buildExp2(b, LLVM::FMAOp::create(b, mOld[r], c, negScaledMax));
    if (lazy)
      step.alpha[r] = arith::SelectOp::create(b, moved[r], step.alpha[r], one);
    Value rowSum = zero;
    for (int64_t i = 0; i < cfg.blockN / 8; ++i) {
      for (int e = 0; e < 2; ++e) {
        int64_t idx = 4 * i + 2 * r + e;
        Value x = LLVM::FMAOp::create(b, s[idx], c, negScaledMax);
        s[idx] = usePolyExp2(2 * i + e) ? buildExp2Poly(b, x)
                                        : buildExp2(b, x);
        if (!cfg.schedule.rowsumMma)
          rowSum = arith::AddFOp::create(b, rowSum, s[idx]);
      }
    }
    step.l[r] = cfg.schedule.rowsumMma
                    ? lOld[r]
                    : Value(LLVM::FMAOp::create(b, lOld[r], step.alpha[r],
                                                rowSum));
  }
  if (lazy) {
    Value either = arith::OrIOp::create(b, moved[0], moved[1]);
    step.anyMoved = NVVM::VoteSyncOp::create(
        b, b.getI1Type(), c32(-1), either,
        NVVM::VoteSyncKindAttr::get(b.getContext(), NVVM::VoteSyncKind::any));
  }
  return step;
}

AttentionKernelBuilder::SoftmaxStep AttentionKernelBuilder::buildScoresToP(
    SmallVectorImpl<Value> &s, Value kvBlock, Value stage, Value rowBase,
    ValueRange mOld, ValueRange lOld, bool mayMask) {
  // S_j is complete (its wgmma group waited for): pin it behind the wait,
  // release K_j — every consumer thread's reads of it are done — then mask
  // and run the online softmax.
  s = buildFenceOperands(b, s);
  buildMBarrierArrive(b, emptyBarrier(stage, /*isV=*/false));
  if (mayMask)
    s = buildMaskIfNeeded(s, kvBlock, rowBase);
  return buildSoftmax(s, mOld, lOld);
}

SmallVector<Value> AttentionKernelBuilder::buildPackP(ArrayRef<Value> s) {
  // P as the A operand: registers d[8kk .. 8kk+7] in pairs are a0..a3 of
  // k-step kk (HopperBuilders.h).
  SmallVector<Value> p;
  for (int64_t j = 0; j < cfg.blockN / 4; ++j)
    p.push_back(buildPackPair(b, s[2 * j], s[2 * j + 1], cfg.isF16));
  return p;
}

void AttentionKernelBuilder::buildRescale(SmallVectorImpl<Value> &o,
                                          const SoftmaxStep &step) {
  // O (and with rowsum=mma the l columns beside it) times α, row by row.
  auto rescale = [&](ImplicitLocOpBuilder &nb, ValueRange acc) {
    SmallVector<Value> out(acc);
    for (int64_t i = 0; i < cfg.pvColumns() / 8; ++i)
      for (int r = 0; r < 2; ++r)
        for (int e = 0; e < 2; ++e)
          out[4 * i + 2 * r + e] =
              arith::MulFOp::create(nb, out[4 * i + 2 * r + e], step.alpha[r]);
    return out;
  };
  if (!step.anyMoved) {
    o = rescale(b, o);
    return;
  }
  // Lazy rescale: α = 1 on every row of the warp unless one moved its max.
  // In the overlapped loop any branch around these multiplies makes ptxas
  // serialize every wgmma of the kernel (C7513) — an scf.if merging two
  // definitions of O, and equally an in-place branch inside one asm block
  // (bisected with ptxas, perf log): only the plain loop gains from it.
  auto ifOp = scf::IfOp::create(
      b, step.anyMoved,
      [&](OpBuilder &nested, Location loc) {
        ImplicitLocOpBuilder nb(loc, nested);
        scf::YieldOp::create(nb, rescale(nb, o));
      },
      [&](OpBuilder &nested, Location loc) {
        scf::YieldOp::create(nested, loc, o);
      });
  tagStage(ifOp, "rescale");
  o.assign(ifOp.getResults().begin(), ifOp.getResults().end());
}

void AttentionKernelBuilder::buildOnConsumer(Value consumer, int64_t which,
                                             function_ref<void()> body) {
  auto ifOp = scf::IfOp::create(
      b, cmp(arith::CmpIPredicate::eq, consumer, c32(which)),
      /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
  body();
}

// The turns go round the n consumer warpgroups (two, or three at
// block-m = 192): 0, 1, …, n − 1, 0, … Consumer c waits on named barrier
// 1 + c and hands over on the next one's, 1 + (c + 1) mod n; each phase is
// 256 threads, the waiter's 128 syncing and the previous turn's 128
// arriving.
void AttentionKernelBuilder::buildOpenGame(Value consumer) {
  // The last consumer opens the game: consumer 0 issues first.
  int64_t n = cfg.numConsumerWarpgroups();
  if (cfg.schedule.pingpong)
    buildOnConsumer(consumer, n - 1,
                    [&] { buildNamedBarrierArrive(b, c32(1), 256); });
}

void AttentionKernelBuilder::buildCloseGame(Value consumer) {
  // Every turn handed over, the last consumer's last too: consumer 0 takes
  // that last hand-over, so every barrier phase completes exactly.
  if (cfg.schedule.pingpong)
    buildOnConsumer(consumer, 0,
                    [&] { buildNamedBarrierSync(b, c32(1), 256); });
}

void AttentionKernelBuilder::buildTurnBegin(Value consumer) {
  // Consumer c waits on named barrier 1 + c: 128 of its own threads sync,
  // the previous warpgroup's 128 arrive when it has issued its GEMMs.
  if (cfg.schedule.pingpong)
    buildNamedBarrierSync(b, add(consumer, c32(1)), 256);
}

void AttentionKernelBuilder::buildTurnEnd(Value consumer, bool lastTurn) {
  if (!cfg.schedule.pingpong)
    return;
  // Hand the turn to the next warpgroup (barrier 1 + (c + 1) mod n). The
  // last consumer opened the game with one extra arrive on consumer 0's
  // barrier, so its last turn hands nothing over: every barrier phase
  // completes exactly.
  int64_t n = cfg.numConsumerWarpgroups();
  Value next =
      n == 2 ? sub(c32(2), consumer) // 2 − c, without the remainder
             : add(arith::RemUIOp::create(b, add(consumer, c32(1)), c32(n)),
                   c32(1));
  if (!lastTurn) {
    buildNamedBarrierArrive(b, next, 256);
    return;
  }
  for (int64_t c = 0; c + 1 < n; ++c)
    buildOnConsumer(consumer, c,
                    [&] { buildNamedBarrierArrive(b, next, 256); });
}

SmallVector<Value> AttentionKernelBuilder::buildPlainLoop(Value consumer,
                                                          Value rowBase) {
  Value zero = f32Const(b, 0.0);
  Value negInf = f32Const(b, -std::numeric_limits<double>::infinity());
  int64_t oRegs = accRegs();
  // Loop-carried: O (Dv/2 accumulator registers), m[2], l[2].
  SmallVector<Value> init(oRegs, zero);
  init.append({negInf, negInf, zero, zero});
  auto loop = scf::ForOp::create(b, v.kvLo, v.kvHi, c32(1), init);
  tagStage(loop, "mainloop");
  tag(loop, "fat.order",
      stringArray(b.getContext(),
                  {"wait K(j)", "S(j) = Q*K(j)^T", "wait S", "softmax(j)",
                   "O = alpha*O", "wait V(j)", "O += P(j)*V(j)", "wait O"}));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value kvBlock = loop.getInductionVar();
  ValueRange carried = loop.getRegionIterArgs();
  SmallVector<Value> o(carried.take_front(oRegs));
  auto [stage, parity] = ringSlot(kvBlock);

  buildMBarrierWait(b, fullBarrier(stage, false), parity);
  SmallVector<Value> s = buildQK(consumer, stage);
  buildWgmmaWait(b, 0);
  SoftmaxStep step = buildScoresToP(s, kvBlock, stage, rowBase,
                                    carried.slice(oRegs, 2),
                                    carried.slice(oRegs + 2, 2));
  buildRescale(o, step);
  SmallVector<Value> p = buildPackP(s);
  buildMBarrierWait(b, fullBarrier(stage, true), parity);
  o = buildPV(o, p, stage);
  buildWgmmaWait(b, 0);
  o = buildFenceOperands(b, o);
  buildMBarrierArrive(b, emptyBarrier(stage, true));

  SmallVector<Value> next(o);
  next.append({step.m[0], step.m[1], step.l[0], step.l[1]});
  scf::YieldOp::create(b, next);
  b.setInsertionPointAfter(loop);
  buildReleaseQ(/*stagedInQ=*/cfg.stageO);
  return SmallVector<Value>(loop.getResults());
}

SmallVector<Value> AttentionKernelBuilder::buildOverlappedLoop(Value consumer,
                                                               Value rowBase) {
  Value zero = f32Const(b, 0.0);
  Value negInf = f32Const(b, -std::numeric_limits<double>::infinity());
  int64_t oRegs = accRegs();
  SmallVector<Value> empty(oRegs, zero);
  empty.append({negInf, negInf, zero, zero});

  // The software pipeline needs a first block: CTAs with an empty KV range
  // (all rows masked out) skip straight to the epilogue with O = 0, l = 0.
  Value hasWork = hasKeyBlocks();
  SmallVector<Type> types(oRegs + 4, b.getF32Type());
  auto work = scf::IfOp::create(b, types, hasWork, /*withElseRegion=*/true);
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

  // Prologue, block kvLo: S_0 and its softmax.
  auto [firstStage, firstParity] = ringSlot(v.kvLo);
  buildMBarrierWait(b, fullBarrier(firstStage, false), firstParity);
  buildTurnBegin(consumer);
  SmallVector<Value> s = buildQK(consumer, firstStage);
  buildTurnEnd(consumer, /*lastTurn=*/false);
  buildWgmmaWait(b, 0);
  Value mInit[2] = {negInf, negInf}, lInit[2] = {zero, zero};
  SoftmaxStep first =
      buildScoresToP(s, v.kvLo, firstStage, rowBase, ArrayRef<Value>(mInit),
                     ArrayRef<Value>(lInit));
  SmallVector<Value> init(empty.begin(), empty.begin() + oRegs);
  init.append({first.m[0], first.m[1], first.l[0], first.l[1]});
  llvm::append_range(init, buildPackP(s));

  // Steady state, blocks kvLo+1 .. kvHi−1, carrying (O, m, l, P_{j−1}).
  SmallVector<Value> last =
      buildSteadyLoop(consumer, rowBase, init, /*overwriteFirst=*/false);

  // Every S of the tile is done: Q may be overwritten (persistent).
  buildReleaseQ(/*stagedInQ=*/cfg.stageO && !cfg.stageOInV());
  // Drain: O += P_last·V_last.
  SmallVector<Value> o(last.begin(), last.begin() + oRegs);
  auto [lastStage, lastParity] = ringSlot(sub(v.kvHi, c32(1)));
  buildMBarrierWait(b, fullBarrier(lastStage, true), lastParity);
  buildTurnBegin(consumer);
  o = buildPV(o, ArrayRef<Value>(last).drop_front(oRegs + 4), lastStage);
  buildTurnEnd(consumer, /*lastTurn=*/!cfg.schedule.persistent);
  buildWgmmaWait(b, 0);
  o = buildFenceOperands(b, o);
  // With stageOInV the epilogue stages O in this V stage and releases it.
  if (!cfg.stageOInV())
    buildMBarrierArrive(b, emptyBarrier(lastStage, true));
  SmallVector<Value> result(o);
  result.append({last[oRegs], last[oRegs + 1], last[oRegs + 2],
                 last[oRegs + 3]});
  scf::YieldOp::create(b, result);
  return SmallVector<Value>(work.getResults());
}

Value AttentionKernelBuilder::buildFirstMaskedBlock() {
  // buildMaskIfNeeded's right-side tests, solved for the first block j:
  //   (j+1)·N > Skv                ⟺ j ≥ ⌊Skv/N⌋
  //   (j+1)·N − 1 > R              ⟺ j ≥ ⌊(R+1)/N⌋   (R = rowFirst + diag
  //                                                     + right, may be < 0)
  // Both tests stay true for every later block. (Kernels with a left
  // window edge, whose masked blocks also lie at the start, are not split.)
  int64_t n = cfg.blockN;
  Value first = arith::DivUIOp::create(b, v.seqKV, c32(n));
  if (std::optional<int64_t> right = cfg.rightEdge()) {
    Value edge = add(add(v.rowFirst, v.diag), c32(*right + 1));
    first = arith::MinSIOp::create(
        b, first, arith::FloorDivSIOp::create(b, edge, c32(n)));
  }
  return first;
}

SmallVector<Value> AttentionKernelBuilder::buildSteadyLoop(
    Value consumer, Value rowBase, ValueRange init, bool overwriteFirst) {
  // Where it measured faster (splitMaskedTail), two copies of the loop:
  // blocks below the first one a mask can touch, whose body has no mask
  // branch (one basic block for ptxas), then the rest with it.
  Value lo = add(v.kvLo, c32(1));
  if (!cfg.splitMaskedTail())
    return buildSteadyRange(consumer, rowBase, init, overwriteFirst, lo,
                            v.kvHi, /*mayMask=*/true);
  Value firstMasked = buildFirstMaskedBlock();
  Value mid = arith::MaxSIOp::create(
      b, lo, arith::MinSIOp::create(b, v.kvHi, firstMasked));
  SmallVector<Value> unmasked = buildSteadyRange(
      consumer, rowBase, init, overwriteFirst, lo, mid, /*mayMask=*/false);
  // Pinned between the loops: otherwise ptxas may join them with copies of
  // the carried P and O that it counts as redefining wgmma operands inside
  // a pipeline stage, and serializes every wgmma (C7513).
  unmasked = buildFenceOperands(b, unmasked);
  return buildSteadyRange(consumer, rowBase, unmasked, overwriteFirst, mid,
                          v.kvHi, /*mayMask=*/true);
}

SmallVector<Value> AttentionKernelBuilder::buildSteadyRange(
    Value consumer, Value rowBase, ValueRange init, bool overwriteFirst,
    Value lo, Value hi, bool mayMask) {
  int64_t oRegs = accRegs();
  auto loop = scf::ForOp::create(b, lo, hi, c32(1), init);
  tagStage(loop, mayMask && cfg.splitMaskedTail() ? "mainloop-edge"
                                                  : "mainloop");
  tag(loop, "fat.order",
      stringArray(b.getContext(),
                  {"wait K(j), V(j-1)", "S(j) = Q*K(j)^T",
                   "O += P(j-1)*V(j-1)", "wait S (1 pending)", "softmax(j)",
                   "wait O", "O = alpha*O"}));
  {
    OpBuilder::InsertionGuard body(b);
    b.setInsertionPointToStart(loop.getBody());
    Value kvBlock = loop.getInductionVar();
    ValueRange carried = loop.getRegionIterArgs();
    SmallVector<Value> o(carried.take_front(oRegs));
    SmallVector<Value> pPrev(carried.drop_front(oRegs + 4));
    auto [stage, parity] = ringSlot(kvBlock);
    auto [prevStage, prevParity] = ringSlot(sub(kvBlock, c32(1)));

    buildMBarrierWait(b, fullBarrier(stage, false), parity);
    buildMBarrierWait(b, fullBarrier(prevStage, true), prevParity);
    buildTurnBegin(consumer);
    SmallVector<Value> s = buildQK(consumer, stage);
    // With overwriteFirst, block kvLo+1's P·V starts the tile's O.
    Value accumulate;
    if (overwriteFirst)
      accumulate = arith::ExtUIOp::create(
          b, b.getI32Type(),
          cmp(arith::CmpIPredicate::ne, kvBlock, add(v.kvLo, c32(1))));
    o = buildPV(o, pPrev, prevStage, accumulate);
    buildTurnEnd(consumer, /*lastTurn=*/false);
    // Groups retire in order: one left pending means S_j is ready while
    // P_{j−1}·V_{j−1} may still run under the softmax below.
    buildWgmmaWait(b, 1);
    SoftmaxStep step = buildScoresToP(s, kvBlock, stage, rowBase,
                                      carried.slice(oRegs, 2),
                                      carried.slice(oRegs + 2, 2), mayMask);
    // latePVWait: P_j is packed after the wait, into registers P_{j−1}
    // leaves, and the fence keeps ptxas from lifting the wait (and with it
    // the rest of the softmax) above the exponentials.
    SmallVector<Value> p;
    if (cfg.latePVWait)
      buildSchedulingFence(b, v.seqKV);
    else
      p = buildPackP(s);
    buildWgmmaWait(b, 0);
    o = buildFenceOperands(b, o);
    // P_{j−1} is read by the in-flight wgmma until here. Using it after the
    // wait keeps its PTX registers live, so the loop-carried P_j cannot be
    // coalesced into them (ptxas would see the wgmma's A operand redefined
    // mid-flight and serialize every wgmma, C7513).
    buildFenceOperands(b, pPrev);
    if (cfg.latePVWait)
      p = buildPackP(s);
    buildMBarrierArrive(b, emptyBarrier(prevStage, true));
    // O holds Σ_{i<j} relative to m_{j−1}; α_j moves it to m_j.
    buildRescale(o, step);
    SmallVector<Value> next(o);
    next.append({step.m[0], step.m[1], step.l[0], step.l[1]});
    llvm::append_range(next, p);
    scf::YieldOp::create(b, next);
  }

  return SmallVector<Value>(loop.getResults());
}

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

Value AttentionKernelBuilder::buildRowBase(Value consumer, Value rowFirst) {
  Value g = arith::DivUIOp::create(b, v.lane, c32(4));
  return add(add(rowFirst, mul(consumer, c32(64))),
             add(mul(v.warp, c32(16)), g));
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
  Value zero = f32Const(b, 0.0);
  Value negInf = f32Const(b, -std::numeric_limits<double>::infinity());
  PendingTile none;
  none.o.assign(accRegs(), zero);
  none.m[0] = none.m[1] = negInf;
  none.l[0] = none.l[1] = zero;
  none.p.assign(cfg.blockN / 4, c32(0));
  none.id = c32(0);
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
  int64_t oRegs = accRegs();
  PendingTile pending = PendingTile::unpack(pendingVals, oRegs);
  Value zero = f32Const(b, 0.0);
  Value negInf = f32Const(b, -std::numeric_limits<double>::infinity());
  Value rowBase = buildRowBase(consumer, v.rowFirst);
  // This tile's name once it is pending, taken now: the coordinates it is
  // made of then need no registers through the tile.
  Value tile = add(mul(add(mul(v.batch, c32(cfg.numHeadsQ)), v.head), v.numM),
                   v.mBlock);
  buildMBarrierWait(b, qFullBarrier(qSlot()), qParity());

  Value hasWork = hasKeyBlocks();
  auto work = scf::IfOp::create(b, TypeRange(ValueRange(pendingVals)),
                                hasWork, /*withElseRegion=*/true);
  tagStage(work, "prologue");
  tag(work, "fat.order",
      stringArray(b.getContext(),
                  {"wait K(0), V'", "S(0) = Q*K(0)^T", "O' += P'*V'",
                   "wait S (1 pending)", "softmax(0)", "wait O'",
                   "store O'", "mainloop"}));
  OpBuilder::InsertionGuard guard(b);
  // No keys: this tile's rows get O = 0, LSE = −inf; the pending tile
  // stays pending.
  b.setInsertionPointToStart(work.elseBlock());
  buildReleaseQ(/*stagedInQ=*/false);
  {
    SmallVector<Value> zeros(oRegs, zero);
    Value m[2] = {negInf, negInf}, l[2] = {zero, zero};
    buildEpilogue(zeros, m, l, rowBase, v.batch, v.head);
  }
  scf::YieldOp::create(b, pendingVals);

  b.setInsertionPointToStart(work.thenBlock());
  auto [firstStage, firstParity] = ringSlot(v.kvLo);
  PendingSlot slot = buildPendingSlot(v.ringBase);
  buildMBarrierWait(b, fullBarrier(firstStage, false), firstParity);
  // Nothing pending: K_0's barrier, just waited for, stands in for the V
  // barrier (the P = 0 product is never stored).
  Value vIndex = arith::SelectOp::create(
      b, slot.isPending, add(slot.stage, c32(1 + cfg.stages)),
      add(firstStage, c32(1)));
  Value vParity =
      arith::SelectOp::create(b, slot.isPending, slot.parity, firstParity);
  buildMBarrierWait(b, barrier(vIndex), vParity);
  buildTurnBegin(consumer);
  SmallVector<Value> s = buildQK(consumer, firstStage);
  Value accumulate = arith::ShRUIOp::create(b, pending.id, c32(31));
  SmallVector<Value> o =
      buildPV(pending.o, pending.p, slot.stage, accumulate);
  buildTurnEnd(consumer, /*lastTurn=*/false);
  buildWgmmaWait(b, 1);
  Value mInit[2] = {negInf, negInf}, lInit[2] = {zero, zero};
  SoftmaxStep first = buildScoresToP(s, v.kvLo, firstStage, rowBase,
                                     ArrayRef<Value>(mInit),
                                     ArrayRef<Value>(lInit));
  // As in the steady loop: keeps softmax_0 under the pending tile's P·V.
  if (cfg.latePVWait)
    buildSchedulingFence(b, v.seqKV);
  buildWgmmaWait(b, 0);
  o = buildFenceOperands(b, o);
  buildFenceOperands(b, pending.p);
  // P_0 is packed only now, after the pending P's last use: so ptxas can
  // give it the pending P's registers, and the steady loop's P (which
  // starts as P_0 and ends as the next pending P) stays one set of
  // registers — packed before, P_0 needs a set of its own and every
  // iteration copies P into the wgmma's operand registers (perf log run 34).
  s = buildFenceOperands(b, s);
  SmallVector<Value> p = buildPackP(s);
  buildStorePending(consumer, slot, o, pending);

  // Blocks kvLo+1 .. kvHi−1; the first P·V overwrites the stored O.
  SmallVector<Value> init(o);
  init.append({first.m[0], first.m[1], first.l[0], first.l[1]});
  llvm::append_range(init, p);
  SmallVector<Value> last =
      buildSteadyLoop(consumer, rowBase, init, /*overwriteFirst=*/true);
  // Every S of the tile is done: Q may be overwritten.
  buildReleaseQ(/*stagedInQ=*/false);

  PendingTile next;
  next.o.assign(last.begin(), last.begin() + oRegs);
  for (int r = 0; r < 2; ++r) {
    next.m[r] = last[oRegs + r];
    next.l[r] = last[oRegs + 2 + r];
  }
  next.p.assign(last.begin() + oRegs + 4, last.end());
  if (!cfg.schedule.rowsumMma) {
    // The vector row sums and the row max are final before the last P·V:
    // finish the sums and write the LSE now, so that only the two sums
    // wait in registers through the next tile's first block.
    for (int r = 0; r < 2; ++r)
      next.l[r] = buildQuadReduce(b, next.l[r], /*isMax=*/false);
    buildEpilogue(next.o, next.m, next.l, rowBase, v.batch, v.head,
                  /*storeO=*/false, /*storeLse=*/true, /*lIsSum=*/true);
    next.m[0] = next.m[1] = negInf;
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
  auto [stage, parity] = ringSlotOfIteration(sub(ringPosition, c32(1)));
  return {isPending, arith::SelectOp::create(b, isPending, stage, c32(0)),
          parity};
}

void AttentionKernelBuilder::buildStorePending(Value consumer,
                                               const PendingSlot &slot,
                                               ValueRange o,
                                               const PendingTile &pending) {
  // Release the pending tile's V block and store its O (and LSE).
  auto store = scf::IfOp::create(b, slot.isPending, /*withElseRegion=*/false);
  tagStage(store, "epilogue");
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(store.thenBlock()->getTerminator());
  buildMBarrierArrive(b, emptyBarrier(slot.stage, true));
  Value tile = arith::AndIOp::create(b, pending.id, c32(0x7fffffff));
  Value rest = arith::DivUIOp::create(b, tile, v.numM);
  Value heads = c32(cfg.numHeadsQ);
  Value rowFirst =
      mul(arith::RemUIOp::create(b, tile, v.numM), c32(cfg.blockM));
  // rowsum=vector: the sums are final and the LSE written (tile end).
  bool vectorSums = !cfg.schedule.rowsumMma;
  buildEpilogue(o, pending.m, pending.l, buildRowBase(consumer, rowFirst),
                arith::DivUIOp::create(b, rest, heads),
                arith::RemUIOp::create(b, rest, heads), /*storeO=*/true,
                /*storeLse=*/!vectorSums, /*lIsSum=*/vectorSums);
}

void AttentionKernelBuilder::buildDrainPending(Value consumer,
                                               Value ringPosition,
                                               ValueRange pendingVals) {
  // The last tile's last P·V (a P = 0 product on stage 0 when the CTA had
  // no keys at all: both warpgroups still take the turn).
  PendingTile pending = PendingTile::unpack(pendingVals, accRegs());
  PendingSlot slot = buildPendingSlot(ringPosition);
  {
    auto wait = scf::IfOp::create(b, slot.isPending, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(wait.thenBlock()->getTerminator());
    buildMBarrierWait(b, fullBarrier(slot.stage, true), slot.parity);
  }
  buildTurnBegin(consumer);
  Value accumulate = arith::ShRUIOp::create(b, pending.id, c32(31));
  SmallVector<Value> o =
      buildPV(pending.o, pending.p, slot.stage, accumulate);
  buildTurnEnd(consumer, /*lastTurn=*/false);
  buildWgmmaWait(b, 0);
  o = buildFenceOperands(b, o);
  buildStorePending(consumer, slot, o, pending);
}

void AttentionKernelBuilder::buildConsumerTile() {
  Value consumer = sub(v.warpgroup, c32(1));
  Value rowBase = buildRowBase(consumer, v.rowFirst);

  buildMBarrierWait(b, qFullBarrier(qSlot()), qParity());
  SmallVector<Value> results = cfg.schedule.overlap
                                   ? buildOverlappedLoop(consumer, rowBase)
                                   : buildPlainLoop(consumer, rowBase);
  int64_t oRegs = accRegs();
  ArrayRef<Value> res(results);
  buildEpilogue(res.take_front(oRegs), {res[oRegs], res[oRegs + 1]},
                {res[oRegs + 2], res[oRegs + 3]}, rowBase, v.batch, v.head);
  buildReleaseStaging();
}

void AttentionKernelBuilder::build(LLVM::LLVMFuncOp func,
                                   LLVM::GlobalOp dynamicSmem) {
  Block &entry = func.getBody().front();
  auto args = entry.getArguments();
  unsigned a = 0;
  v.qMap = args[a++];
  v.kMap = args[a++];
  v.vMap = args[a++];
  v.oPtr = args[a++];
  v.oStrideB = args[a++];
  v.oStrideH = args[a++];
  v.oStrideS = args[a++];
  if (cfg.lse) {
    v.lsePtr = args[a++];
    v.lseStrideB = args[a++];
    v.lseStrideH = args[a++];
  }
  v.seqQ = args[a++];
  v.seqKV = args[a++];
  v.diag = args[a++];
  v.scaleLog2e = args[a++];
  if (cfg.schedule.persistent)
    v.batchCount = args[a++];

  v.tid = NVVM::ThreadIdXOp::create(b, b.getI32Type());
  // The warpgroup index, broadcast from lane 0 so that the role branch is
  // warp-uniform for ptxas.
  v.warpgroup =
      buildWarpBroadcast(b, arith::DivUIOp::create(b, v.tid, c32(128)));
  v.warp = arith::RemUIOp::create(
      b, arith::DivUIOp::create(b, v.tid, c32(32)), c32(4));
  v.lane = arith::RemUIOp::create(b, v.tid, c32(32));

  buildSharedMemoryAndBarriers(dynamicSmem);
  if (!cfg.schedule.persistent)
    buildBlockCoordinates();

  // Register split (setmaxnreg): with two consumer warpgroups the 384
  // threads start with 168 registers each, with three the 512 start with
  // 128; the producer drops to 24 so the consumers can rise to
  // cfg.consumerRegisters(). With one consumer warpgroup every thread
  // already has up to 255.
  bool splitRegisters = cfg.numConsumerWarpgroups() > 1;
  int32_t consumerRegisters = cfg.consumerRegisters();
  Value isProducer = cmp(arith::CmpIPredicate::eq, v.warpgroup, c32(0));
  auto roleIf = scf::IfOp::create(b, isProducer, /*withElseRegion=*/true);
  tag(roleIf, "fat.role",
      stringArray(b.getContext(), {"producer", "consumer"}));
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(roleIf.thenBlock()->getTerminator());
    if (splitRegisters)
      NVVM::SetMaxRegisterOp::create(b, 24, NVVM::SetMaxRegisterAction::decrease);
    buildProducer();
    b.setInsertionPoint(roleIf.elseBlock()->getTerminator());
    if (splitRegisters)
      NVVM::SetMaxRegisterOp::create(b, consumerRegisters,
                                     NVVM::SetMaxRegisterAction::increase);
    buildConsumer();
  }
  LLVM::ReturnOp::create(b, ValueRange{});
}

gpu::GPUModuleOp
mlir::fat::buildAttentionKernelModule(OpBuilder &builder, Location loc,
                                      ModuleOp parent,
                                      const AttentionKernelConfig &cfg) {
  OpBuilder::InsertionGuard guard(builder);
  MLIRContext *ctx = builder.getContext();
  builder.setInsertionPointToEnd(parent.getBody());
  std::string name = cfg.kernelName();
  auto module = gpu::GPUModuleOp::create(builder, loc, name);
  builder.setInsertionPointToStart(module.getBody());

  // Dynamic shared memory: an external zero-sized array in address space 3.
  auto dynamicSmem = LLVM::GlobalOp::create(
      builder, loc, LLVM::LLVMArrayType::get(builder.getI8Type(), 0),
      /*isConstant=*/false, LLVM::Linkage::External, "__fat_dynamic_smem",
      Attribute(), /*alignment=*/1024, kSharedSpace);

  // Parameters, in the order of the manifest (KernelConfig.cpp).
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  auto globalPtr = LLVM::LLVMPointerType::get(ctx, kGlobalSpace);
  Type i32 = builder.getI32Type(), i64 = builder.getI64Type();
  SmallVector<Type> params{ptr, ptr, ptr, globalPtr, i64, i64, i64};
  if (cfg.lse)
    params.append({globalPtr, i64, i64});
  params.append({i32, i32, i32, builder.getF32Type()});
  if (cfg.schedule.persistent)
    params.push_back(i32); // B

  auto funcType =
      LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), params);
  auto func = LLVM::LLVMFuncOp::create(builder, loc, name, funcType);
  func->setAttr(NVVM::NVVMDialect::getKernelFuncAttrName(),
                builder.getUnitAttr());
  func->setAttr(NVVM::NVVMDialect::getMaxntidAttrName(),
                builder.getDenseI32ArrayAttr(
                    {static_cast<int32_t>(cfg.numThreads()), 1, 1}));
  // minctasm = 1 (with maxntid) lets ptxas honour setmaxnreg.
  func->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                builder.getI32IntegerAttr(1));
  // Tensor maps: 128-byte CUtensorMaps passed by value as grid constants
  // (`.param .align 64 .b8 [128]`), which cp.async.bulk.tensor reads in place.
  for (unsigned i = 0; i < 3; ++i) {
    func.setArgAttr(i, LLVM::LLVMDialect::getByValAttrName(),
                    TypeAttr::get(LLVM::LLVMArrayType::get(i64, 16)));
    func.setArgAttr(i, LLVM::LLVMDialect::getAlignAttrName(),
                    builder.getI64IntegerAttr(64));
    func.setArgAttr(i, NVVM::NVVMDialect::getGridConstantAttrName(),
                    builder.getUnitAttr());
  }
  Block *entry = func.addEntryBlock(builder);
  ImplicitLocOpBuilder b(loc, builder);
  b.setInsertionPointToStart(entry);
  AttentionKernelBuilder(b, cfg).build(func, dynamicSmem);
  return module;
}
