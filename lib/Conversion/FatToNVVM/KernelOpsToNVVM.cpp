//===- KernelOpsToNVVM.cpp - the pipelined kernel's fat ops to NVVM -------===//
//
// One conversion pattern per op of FatKernelOps.td; `--convert-fat-to-nvvm`
// applies them to the kernels `--fat-pipeline` built.
//
//===----------------------------------------------------------------------===//

#include "fa-t/Dialect/Fat/Hopper/HopperBuilders.h"
#include "fa-t/Conversion/FatToNVVM/FatToNVVM.h"
#include "fa-t/Dialect/Fat/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Transforms/DialectConversion.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::fat;
using namespace mlir::fat::hopper;

/// Per value `asm volatile("" : "=f"(x) : "0"(x))` (`=r` for i32): a new
/// definition of the register that LLVM cannot move above the asm.
static SmallVector<Value> fenceRegisters(ImplicitLocOpBuilder &b,
                                         ValueRange values) {
  SmallVector<Value> fenced;
  for (Value v : values) {
    Type t = v.getType();
    StringRef constraint = t.isF32() ? "=f,0" : "=r,0";
    fenced.push_back(
        buildInlineAsm(b, t, v, "", constraint, /*sideEffects=*/true)[0]);
  }
  return fenced;
}

/// "{$first, $first+1, ..., $first+count-1}" for an asm register list.
static std::string asmRegList(int64_t first, int64_t count) {
  std::string s = "{";
  for (int64_t i = 0; i < count; ++i)
    s += (i ? ", $" : "$") + std::to_string(first + i);
  return s + "}";
}

/// Constraints for `count` f32 outputs followed by the inputs `ins` and, if
/// `tied`, `count` inputs tied to the outputs.
static std::string wgmmaConstraints(int64_t count, StringRef ins, bool tied) {
  std::string s;
  for (int64_t i = 0; i < count; ++i)
    s += (i ? ",=f" : "=f");
  s += "," + ins.str();
  if (tied)
    for (int64_t i = 0; i < count; ++i)
      s += "," + std::to_string(i);
  return s;
}

/// The registers of a 1:N adaptor's operands, in operand order.
static SmallVector<Value> flatten(ArrayRef<ValueRange> operands) {
  SmallVector<Value> flat;
  for (ValueRange regs : operands)
    llvm::append_range(flat, regs);
  return flat;
}

/// Replaces `op` by `flat`, the registers of its results in order (each
/// result takes as many as its operand of the same position had).
static void replaceByRegisters(ConversionPatternRewriter &rewriter,
                               Operation *op, ArrayRef<ValueRange> operands,
                               ArrayRef<Value> flat) {
  SmallVector<SmallVector<Value>> groups;
  for (ValueRange regs : operands) {
    groups.emplace_back(flat.take_front(regs.size()));
    flat = flat.drop_front(regs.size());
  }
  rewriter.replaceOpWithMultiple(op, std::move(groups));
}

namespace {
/// fat.wgmma_async → wgmma.fence; K/16 steps of
/// `wgmma.mma_async.sync.aligned.m64n<N>k16.f32.<t>.<t>` in inline asm;
/// wgmma.commit_group. Each step's scale-d is a predicate set from an i32:
/// the first step's is 0 without `acc` (1 with it, or the op's run-time
/// `scale_d`), every later step's 1. The N/2 accumulator registers of the
/// thread are `=f` outputs and, once accumulating, tied to the inputs, so
/// they stay the accumulator's across the chain. A from registers: step s
/// reads the four i32 registers 4s .. 4s + 3 of the 16-bit tile (a0 = rows
/// g, columns 2t, 2t+1; a1 = g+8; a2, a3 = the same rows 8 columns on).
struct WgmmaAsyncLowering : OpConversionPattern<WgmmaAsyncOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(WgmmaAsyncOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    int64_t n = op.getShape()[1];
    int64_t regs = n / 2;
    std::string t = op.getElt().isF16() ? "f16" : "bf16";
    SmallVector<Type> types(regs, b.getF32Type());
    // Descriptors: 8-row groups 1024 bytes apart; an MN-major B's leading
    // stride is the step between its 64-column boxes of N (a K-major
    // operand's is unused with the 128-byte swizzle: 16 by convention).
    bool fromSmem = !adaptor.getAAddr().empty();
    int64_t atom = WgmmaAsyncOp::kSwizzleAtomBytes;
    Value aDesc =
        fromSmem ? buildWgmmaDescriptor(b, adaptor.getAAddr().front(), 16, atom)
                 : Value();
    Value bDesc = buildWgmmaDescriptor(b, adaptor.getBAddr().front(),
                                       fromSmem ? 16 : op.getBBoxStride(),
                                       atom);
    // Step s of a K-major operand: 64-column box s / 4, 32 bytes per k16
    // inside its 128-byte rows (the hardware swizzles the final address);
    // of an MN-major one: 16 rows of 128 bytes. The address field holds
    // addr >> 4 and cannot carry out: shared memory lies below 228 KB.
    auto advance = [&](Value desc, int64_t bytes) -> Value {
      if (bytes == 0)
        return desc;
      return arith::AddIOp::create(b, desc, i64Const(b, bytes >> 4));
    };
    auto kMajorStep = [](int64_t boxStride, int64_t s) {
      return s / 4 * boxStride + s % 4 * 32;
    };
    NVVM::WgmmaFenceAlignedOp::create(b);
    SmallVector<Value> acc(adaptor.getAcc());
    for (int64_t s = 0, e = op.getK() / WgmmaOp::kInstrK; s < e; ++s) {
      bool accumulate = !acc.empty();
      if (fromSmem) {
        // Operands: $0..$regs-1 accumulators, then descA, descB, scale-d,
        // then (when accumulating) the tied accumulator inputs.
        Value a = advance(aDesc, kMajorStep(*op.getABoxStride(), s));
        Value bStep = advance(bDesc, kMajorStep(op.getBBoxStride(), s));
        std::string text = llvm::formatv(
            "{{\n.reg .pred p;\nsetp.ne.b32 p, ${0}, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n{1}k16.f32.{2}.{2} {3}, ${4}, "
            "${5}, p, 1, 1, 0, 0;\n}",
            regs + 2, n, t, asmRegList(0, regs), regs, regs + 1);
        SmallVector<Value> operands{a, bStep, i32Const(b, accumulate ? 1 : 0)};
        llvm::append_range(operands, acc);
        acc = buildInlineAsm(b, types, operands, text,
                             wgmmaConstraints(regs, "l,l,r", accumulate),
                             /*sideEffects=*/true);
        continue;
      }
      // Operands: $0..$regs-1 accumulators, a0..a3, descB, scale-d, then
      // the tied inputs.
      std::string text = llvm::formatv(
          "{{\n.reg .pred p;\nsetp.ne.b32 p, ${0}, 0;\n"
          "wgmma.mma_async.sync.aligned.m64n{1}k16.f32.{2}.{2} {3}, {4}, "
          "${5}, p, 1, 1, 1;\n}",
          regs + 5, n, t, asmRegList(0, regs), asmRegList(regs, 4), regs + 4);
      SmallVector<Value> operands(
          adaptor.getARegs().drop_front(4 * s).take_front(4));
      operands.push_back(advance(bDesc, 2048 * s));
      ValueRange scaleD = adaptor.getScaleD();
      operands.push_back(s == 0 && !scaleD.empty() ? scaleD.front()
                                                   : i32Const(b, accumulate));
      llvm::append_range(operands, acc);
      acc = buildInlineAsm(b, types, operands, text,
                           wgmmaConstraints(regs, "r,r,r,r,l,r", accumulate),
                           /*sideEffects=*/true);
    }
    if (!adaptor.getBiasA().empty()) {
      // linear-bias=mma's step: A the bias query columns in registers, B
      // the key columns, K-major (imm-trans-b 0) without swizzle.
      std::string text = llvm::formatv(
          "{{\n.reg .pred p;\nsetp.ne.b32 p, ${0}, 0;\n"
          "wgmma.mma_async.sync.aligned.m64n{1}k16.f32.{2}.{2} {3}, {4}, "
          "${5}, p, 1, 1, 0;\n}",
          regs + 5, n, t, asmRegList(0, regs), asmRegList(regs, 4), regs + 4);
      SmallVector<Value> operands(adaptor.getBiasA());
      operands.push_back(buildWgmmaDescriptor(
          b, adaptor.getBiasB().front(), /*leadingByteOffset=*/128,
          /*strideByteOffset=*/256, /*swizzle128=*/false));
      operands.push_back(i32Const(b, 1));
      llvm::append_range(operands, acc);
      acc = buildInlineAsm(b, types, operands, text,
                           wgmmaConstraints(regs, "r,r,r,r,l,r", true),
                           /*sideEffects=*/true);
    }
    NVVM::WgmmaGroupSyncAlignedOp::create(b);
    rewriter.replaceOpWithMultiple(op, {acc});
    return success();
  }
};

/// fat.bias_keys_fill → a loop over the thread's 16-byte pieces (from the
/// thread, step threads): piece p is row r = 8⌊p/16⌋ + p mod 8 of the
/// core matrix of columns 8·(⌊p/8⌋ mod 2) + 0..7, at byte 16p — [r, r, r,
/// 256, 256, 256, 0, 0] for the first eight columns, zeros for the rest —
/// one vector store each, then fence.proxy.async.
struct BiasKeysFillLowering : OpConversionPattern<BiasKeysFillOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(BiasKeysFillOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    bool isF16 = op.getElt().isF16();
    auto vecType = VectorType::get({4}, b.getI32Type());
    auto loop = scf::ForOp::create(b, adaptor.getThread(),
                                   i32Const(b, op.getKeys() * 2),
                                   i32Const(b, op.getThreads()));
    loop->setAttr("fat.stage", b.getStringAttr("bias-keys"));
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      Value p = loop.getInductionVar();
      Value row = arith::AddIOp::create(
          b,
          arith::MulIOp::create(
              b, arith::DivUIOp::create(b, p, i32Const(b, 16)), i32Const(b, 8)),
          arith::RemUIOp::create(b, p, i32Const(b, 8)));
      Value r = arith::UIToFPOp::create(b, b.getF32Type(), row);
      Value offsetScale =
          f32Const(b, static_cast<double>(BiasKeyColumnsOp::kOffsetScale));
      Value zero = f32Const(b, 0.0);
      Value words[4] = {buildPackPair(b, r, r, isF16),
                        buildPackPair(b, r, offsetScale, isF16),
                        buildPackPair(b, offsetScale, offsetScale, isF16),
                        buildPackPair(b, zero, zero, isF16)};
      // Columns 8..15 (odd ⌊p/8⌋): zeros.
      Value upper = arith::CmpIOp::create(
          b, arith::CmpIPredicate::ne,
          arith::AndIOp::create(b, p, i32Const(b, 8)), i32Const(b, 0));
      Value piece = LLVM::UndefOp::create(b, vecType);
      for (int64_t i = 0; i < 4; ++i)
        piece = LLVM::InsertElementOp::create(
            b, piece, arith::SelectOp::create(b, upper, words[3], words[i]),
            i32Const(b, i));
      LLVM::StoreOp::create(
          b, piece,
          buildByteOffset(b, adaptor.getDst(),
                          arith::MulIOp::create(b, p, i32Const(b, 16))),
          /*alignment=*/16);
    }
    buildAsyncProxyFence(b);
    rewriter.eraseOp(op);
    return success();
  }
};

/// fat.tma_load → one TMA copy per 64-column box: box c to dst +
/// c·box_stride, from the map's coordinates (64c, coords…).
struct TmaLoadLowering : OpConversionPattern<TmaLoadOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(TmaLoadOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    for (int64_t c = 0, e = op.getColumns() / TmaLoadOp::kBoxColumns; c < e;
         ++c) {
      Value dst = buildByteOffset(b, adaptor.getDst(), c * op.getBoxStride());
      SmallVector<Value> coords{i32Const(b, TmaLoadOp::kBoxColumns * c)};
      llvm::append_range(coords, adaptor.getCoords());
      buildTmaLoad(b, dst, adaptor.getTensorMap(), coords,
                   adaptor.getBarrier());
    }
    rewriter.eraseOp(op);
    return success();
  }
};

/// One iteration of a ring after conversion (`base` its shared-memory
/// base), in the type's layout: stage s = i mod stages, parity ⌊i /
/// stages⌋ mod 2, full[s] at barrier_offset + 8s, empty[s] at
/// barrier_offset + 8(stages + s), the buffer at buffer_offset +
/// s · buffer_bytes. The stage and parity are computed right after the
/// iteration where it is defined in the op's block (the loop's "wait K(j),
/// V(j−1)" computes both slots before either wait, so V's address is
/// ready when K's wait returns); the addresses at the op.
class RingSlot {
public:
  RingSlot(ImplicitLocOpBuilder &b, Operation *op, RingType ring, Value base,
           Value iteration)
      : b(b), op(op), ring(ring), base(base), iteration(iteration) {}
  /// The slot of stage `s` itself (iteration s < stages).
  static RingSlot ofStage(ImplicitLocOpBuilder &b, RingType ring, Value base,
                          int64_t s) {
    RingSlot slot(b, nullptr, ring, base, Value());
    slot.stageValue = i32Const(b, s);
    return slot;
  }

  /// The ops call stage() before parity() where both are needed: the
  /// order the kernels were measured with (perf log runs 107–109; ptxas
  /// schedules the main loop from it).
  Value stage() {
    if (!stageValue)
      stageValue = atIteration(
          [&] { return arith::RemUIOp::create(b, iteration, stages()); });
    return stageValue;
  }
  Value parity() {
    if (!parityValue)
      parityValue = atIteration([&] {
        return arith::AndIOp::create(
            b, arith::DivUIOp::create(b, iteration, stages()),
            i32Const(b, 1));
      });
    return parityValue;
  }
  Value full() { return address(ring.getBarrierOffset(), 8, stage()); }
  Value empty() {
    Value s = stage();
    return address(ring.getBarrierOffset(), 8,
                   arith::AddIOp::create(b, s, stages()));
  }
  Value buffer() {
    Value s = stage();
    return address(ring.getBufferOffset(), ring.getBufferBytes(), s);
  }
  /// buffer() as a byte offset (i32) from the base.
  Value bufferOffset() { return bufferOffsetOf(stage()); }
  /// The byte offset of stage `s`'s buffer (a stage the caller has, e.g.
  /// through an operand fence).
  Value bufferOffsetOf(Value s) {
    return offset(ring.getBufferOffset(), ring.getBufferBytes(), s);
  }

private:
  Value stages() { return i32Const(b, ring.getStages()); }
  /// offset + stride · index (i32).
  Value offset(int64_t offset, int64_t stride, Value index) {
    return arith::AddIOp::create(
        b, i32Const(b, offset),
        arith::MulIOp::create(b, index, i32Const(b, stride)));
  }
  /// base + offset + stride · index.
  Value address(int64_t offset, int64_t stride, Value index) {
    return buildByteOffset(b, base, this->offset(offset, stride, index));
  }
  /// `build()` after the iteration's definition (and what was built there
  /// before) when it is in the op's block, else at the op.
  Value atIteration(function_ref<Value()> build) {
    Operation *def = iteration.getDefiningOp();
    if (!def || def->getBlock() != op->getBlock())
      return build();
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointAfter(hoisted ? hoisted : def);
    Value v = build();
    hoisted = v.getDefiningOp();
    return v;
  }

  ImplicitLocOpBuilder &b;
  Operation *op;
  RingType ring;
  Value base, iteration, stageValue, parityValue;
  Operation *hoisted = nullptr;
};

/// The slot an op of a ring names (`%ring[%i]`), and with `if (%c) else
/// %other[%j]` the other one (ring_wait, ring_release).
template <typename OpTy>
static RingSlot slotOf(ImplicitLocOpBuilder &b, OpTy op,
                       typename OpTy::Adaptor adaptor) {
  return RingSlot(b, op, op.getRingType(), adaptor.getRing(),
                  adaptor.getIteration());
}
template <typename OpTy>
static RingSlot otherSlotOf(ImplicitLocOpBuilder &b, OpTy op,
                            typename OpTy::Adaptor adaptor) {
  return RingSlot(b, op, cast<RingType>(op.getOtherRing().getType()),
                  adaptor.getOtherRing(), adaptor.getOtherIteration());
}

/// fat.ring → its base.
struct RingCreateLowering : OpConversionPattern<RingCreateOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(RingCreateOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, adaptor.getBase());
    return success();
  }
};

/// fat.ring_init → mbarrier.init of full[s] (1 arrival) and empty[s]
/// (`releases`), stage by stage.
struct RingInitLowering : OpConversionPattern<RingInitOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(RingInitOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    RingType ring = op.getRingType();
    for (int64_t s = 0; s < ring.getStages(); ++s) {
      auto slot = RingSlot::ofStage(b, ring, adaptor.getRing(), s);
      buildMBarrierInit(b, slot.full(), 1);
      if (ring.getReleases() > 0)
        buildMBarrierInit(b, slot.empty(), ring.getReleases());
    }
    rewriter.eraseOp(op);
    return success();
  }
};

/// The writer's wait before it refills a slot of phase `parity`: for
/// empty[s]'s previous phase (parity ^ 1: a fresh barrier reports it
/// complete); a ring without empty barriers does not wait.
static void buildWaitReleased(ImplicitLocOpBuilder &b, RingSlot &slot,
                              RingType ring, Value parity) {
  if (ring.getReleases() > 0)
    buildMBarrierWait(b, slot.empty(),
                      arith::XOrIOp::create(b, parity, i32Const(b, 1)));
}

/// fat.ring_acquire → wait for empty[s]'s previous phase (parity ^ 1: a
/// fresh barrier reports it complete), arrive.expect_tx on full[s]; the
/// results are the stage's buffer and full[s].
struct RingAcquireLowering : OpConversionPattern<RingAcquireOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(RingAcquireOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    RingSlot slot = slotOf(b, op, adaptor);
    slot.stage();
    Value parity = slot.parity();
    Value full = slot.full();
    buildWaitReleased(b, slot, op.getRingType(), parity);
    buildMBarrierArriveExpectTx(b, full, op.getExpectTx());
    rewriter.replaceOp(op, {slot.buffer(), full});
    return success();
  }
};

/// fat.ring_claim → wait for empty[s]'s previous phase, as ring_acquire;
/// the result is the stage's buffer (its writers arrive later).
struct RingClaimLowering : OpConversionPattern<RingClaimOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(RingClaimOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    RingSlot slot = slotOf(b, op, adaptor);
    slot.stage();
    buildWaitReleased(b, slot, op.getRingType(), slot.parity());
    rewriter.replaceOp(op, slot.buffer());
    return success();
  }
};

/// fat.ring_commit → bar.warp.sync, then lane 0 arrives on full[s]
/// (`one_thread`: the calling thread arrives).
struct RingCommitLowering : OpConversionPattern<RingCommitOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(RingCommitOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    RingSlot slot = slotOf(b, op, adaptor);
    if (op.getOneThread()) {
      buildMBarrierArrive(b, slot.full());
      rewriter.eraseOp(op);
      return success();
    }
    NVVM::SyncWarpOp::create(b, i32Const(b, -1));
    Value lane = NVVM::LaneIdOp::create(b, b.getI32Type());
    Value first = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, lane,
                                        i32Const(b, 0));
    auto ifOp = scf::IfOp::create(b, first, /*withElseRegion=*/false);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
      buildMBarrierArrive(b, slot.full());
    }
    rewriter.eraseOp(op);
    return success();
  }
};

/// fat.ring_wait → try_wait.parity on full[s] until its phase completes
/// (with `if (%c) else`: on the selected slot's full barrier and parity).
struct RingWaitLowering : OpConversionPattern<RingWaitOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(RingWaitOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    RingSlot slot = slotOf(b, op, adaptor);
    slot.stage();
    Value parity = slot.parity();
    Value full = slot.full();
    if (Value cond = adaptor.getCond()) {
      RingSlot other = otherSlotOf(b, op, adaptor);
      other.stage();
      parity = arith::SelectOp::create(b, cond, parity, other.parity());
      full = LLVM::SelectOp::create(b, cond, full, other.full());
    }
    buildMBarrierWait(b, full, parity);
    rewriter.eraseOp(op);
    return success();
  }
};

/// fat.ring_release → mbarrier.arrive on empty[s] (with `if (%c) else`: on
/// the selected slot's).
struct RingReleaseLowering : OpConversionPattern<RingReleaseOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(RingReleaseOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    RingSlot slot = slotOf(b, op, adaptor);
    Value empty = slot.empty();
    if (Value cond = adaptor.getCond()) {
      RingSlot other = otherSlotOf(b, op, adaptor);
      empty = LLVM::SelectOp::create(b, cond, empty, other.empty());
    }
    buildMBarrierArrive(b, empty);
    rewriter.eraseOp(op);
    return success();
  }
};

/// fat.ring_buffer → base + buffer_offset + s · buffer_bytes.
struct RingBufferLowering : OpConversionPattern<RingBufferOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(RingBufferOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    RingSlot slot = slotOf(b, op, adaptor);
    rewriter.replaceOp(op, slot.buffer());
    return success();
  }
};

/// fat.ring_fill → a loop over the thread's 16-byte pieces (from the
/// thread, step threads), each one vector store of four copies of the
/// value into its stage's buffer, then fence.proxy.async.
struct RingFillLowering : OpConversionPattern<RingFillOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(RingFillOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    Value word = i32Const(b, op.getValue());
    auto vecType = VectorType::get({4}, b.getI32Type());
    Value piece = LLVM::UndefOp::create(b, vecType);
    for (int64_t i = 0; i < 4; ++i)
      piece = LLVM::InsertElementOp::create(b, piece, word, i32Const(b, i));
    int64_t perStage = op.getBytes() / 16;
    int64_t total = perStage * op.getRingType().getStages();
    auto loop = scf::ForOp::create(b, adaptor.getThread(), i32Const(b, total),
                                   i32Const(b, op.getThreads()));
    loop->setAttr("fat.stage", b.getStringAttr("ones"));
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      Value p = loop.getInductionVar();
      // Piece p < stages · perStage: iteration ⌊p / perStage⌋ < stages of
      // the ring is that stage.
      Value stage =
          arith::DivUIOp::create(b, p, i32Const(b, perStage)).getResult();
      RingSlot slot(b, op, op.getRingType(), adaptor.getRing(), stage);
      slot.stage();
      Value within = arith::RemUIOp::create(b, p, i32Const(b, perStage));
      Value offset = arith::AddIOp::create(
          b, i32Const(b, op.getOffset()),
          arith::MulIOp::create(b, within, i32Const(b, 16)));
      LLVM::StoreOp::create(b, piece, buildByteOffset(b, slot.buffer(), offset),
                            /*alignment=*/16);
    }
    buildAsyncProxyFence(b);
    rewriter.eraseOp(op);
    return success();
  }
};

/// fat.warp_specialize → scf.if (%warpgroup == 0) { setmaxnreg.dec;
/// producer } else { setmaxnreg.inc; consumer }, the regions moved as they
/// are (the consumer code reads values defined before the split).
struct WarpSpecializeLowering : OpConversionPattern<WarpSpecializeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(WarpSpecializeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    Value isProducer =
        arith::CmpIOp::create(b, arith::CmpIPredicate::eq,
                              adaptor.getWarpgroup(), i32Const(b, 0));
    auto roleIf = scf::IfOp::create(b, isProducer, /*withElseRegion=*/true);
    roleIf->setAttr("fat.role",
                    b.getStrArrayAttr({"producer", "consumer"}));
    auto moveRole = [&](Region &role, Block *into,
                        std::optional<uint32_t> registers,
                        NVVM::SetMaxRegisterAction action) {
      Operation *yield = into->getTerminator();
      b.setInsertionPoint(yield);
      if (registers)
        NVVM::SetMaxRegisterOp::create(b, *registers, action);
      if (!role.empty())
        rewriter.inlineBlockBefore(&role.front(), yield);
    };
    moveRole(op.getProducer(), roleIf.thenBlock(), op.getProducerRegisters(),
             NVVM::SetMaxRegisterAction::decrease);
    moveRole(op.getConsumer(), roleIf.elseBlock(), op.getConsumerRegisters(),
             NVVM::SetMaxRegisterAction::increase);
    rewriter.eraseOp(op);
    return success();
  }
};

/// fat.operand_fence → fenceRegisters on every register of its operands
/// (a tile's all): the asm is itself ordered after the side effects before
/// it (a wait, a barrier).
struct OperandFenceLowering : OpConversionPattern<OperandFenceOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OperandFenceOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    ArrayRef<ValueRange> inputs = adaptor.getInputs();
    replaceByRegisters(rewriter, op, inputs,
                       fenceRegisters(b, flatten(inputs)));
    return success();
  }
};

/// fat.wgmma_wait → `wgmma.wait_group N`, then the fence above on the
/// registers the retired groups wrote.
struct WgmmaWaitLowering : OpConversionPattern<WgmmaWaitOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(WgmmaWaitOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    NVVM::WgmmaWaitGroupSyncOp::create(b, op.getPending());
    ArrayRef<ValueRange> inputs = adaptor.getInputs();
    replaceByRegisters(rewriter, op, inputs,
                       fenceRegisters(b, flatten(inputs)));
    return success();
  }
};

/// fat.schedule_fence → `@!p bra.uni SKIP; membar.cta; SKIP:` with p =
/// (%never == 2^32 − 1). The label is local to the braces (as in MLIR's own
/// mbarrier waits), so the fence may appear any number of times in one
/// kernel; an empty skipped path would be folded away.
struct ScheduleFenceLowering : OpConversionPattern<ScheduleFenceOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ScheduleFenceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    buildInlineAsm(b, {}, adaptor.getNever(),
                   "{\n\t.reg .pred fence_p;\n\t"
                   "setp.eq.u32 fence_p, $0, 0xffffffff;\n\t"
                   "@!fence_p bra.uni FENCE_SKIP;\n\tmembar.cta;\n"
                   "FENCE_SKIP:\n\t}",
                   "r", /*sideEffects=*/true);
    rewriter.eraseOp(op);
    return success();
  }
};

/// The turn ops (ping-pong): named barrier 1 + c is consumer c's turn,
/// 256 threads a phase (c's 128 sync, the previous consumer's 128 arrive).
constexpr int64_t kTurnThreads = 256;

/// Builds `body` on consumer `which` only (a uniform branch).
static void onConsumer(ImplicitLocOpBuilder &b, Value consumer, int64_t which,
                       function_ref<void()> body) {
  auto ifOp = scf::IfOp::create(
      b, arith::CmpIOp::create(b, arith::CmpIPredicate::eq, consumer,
                               i32Const(b, which)),
      /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
  body();
}

/// fat.turns_open → consumer n − 1 arrives on barrier 1.
static void lowerTurn(ImplicitLocOpBuilder &b, TurnsOpenOp op, Value c) {
  onConsumer(b, c, op.getConsumers() - 1, [&] {
    buildNamedBarrierArrive(b, i32Const(b, 1), kTurnThreads);
  });
}

/// fat.turn_begin → bar.sync 1 + c.
static void lowerTurn(ImplicitLocOpBuilder &b, TurnBeginOp, Value c) {
  buildNamedBarrierSync(b, arith::AddIOp::create(b, c, i32Const(b, 1)),
                        kTurnThreads);
}

/// fat.turn_end → bar.arrive 1 + (c + 1) mod n; `last`: on every consumer
/// but n − 1.
static void lowerTurn(ImplicitLocOpBuilder &b, TurnEndOp op, Value c) {
  int64_t n = op.getConsumers();
  // 2 − c for two consumers, without the remainder.
  Value next =
      n == 2 ? arith::SubIOp::create(b, i32Const(b, 2), c).getResult()
             : arith::AddIOp::create(
                   b,
                   arith::RemUIOp::create(
                       b, arith::AddIOp::create(b, c, i32Const(b, 1)),
                       i32Const(b, n)),
                   i32Const(b, 1))
                   .getResult();
  if (!op.getLast()) {
    buildNamedBarrierArrive(b, next, kTurnThreads);
    return;
  }
  for (int64_t which = 0; which + 1 < n; ++which)
    onConsumer(b, c, which,
               [&] { buildNamedBarrierArrive(b, next, kTurnThreads); });
}

/// fat.turns_close → consumer 0 syncs on barrier 1.
static void lowerTurn(ImplicitLocOpBuilder &b, TurnsCloseOp, Value c) {
  onConsumer(b, c, 0, [&] {
    buildNamedBarrierSync(b, i32Const(b, 1), kTurnThreads);
  });
}

/// The turn ops, each by its lowerTurn.
template <typename OpTy> struct TurnLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    lowerTurn(b, op, adaptor.getConsumer());
    rewriter.eraseOp(op);
    return success();
  }
};

/// The mask-geometry ops: their formulas in i32 (expandKeyGeometry, the
/// tiled form's expansion too).
template <typename OpTy>
struct KeyGeometryLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op,
                       expandKeyGeometry(rewriter, op, adaptor.getOperands()));
    return success();
  }
};

/// A [B, G, C] kv_ranges table at `ranges` (buildKeyRangeRow /
/// buildKeyRangeLoad) for the two ops below.
struct RangeTable : I32Math {
  Value ranges;
  ArrayRef<int64_t> shape;

  Value rowIndex(Value batch, Value row) {
    return buildKeyRangeRow(b, shape, batch, row);
  }
  Value load(Value index, int64_t column) {
    return buildKeyRangeLoad(b, ranges, index, column);
  }
  /// fn(at) for each 64-row group of a tile of `blockM` rows from
  /// `rowFirst` (each clamped to `rowLast`): `at` its row of the table.
  template <typename Fn>
  void forEachGroup(int64_t blockM, Value rowFirst, Value rowLast,
                    Value batch, Fn fn) {
    for (int64_t r = 0; r < blockM; r += 64)
      fn(rowIndex(batch, arith::MinUIOp::create(b, add(rowFirst, c32(r)),
                                                rowLast)));
  }
};

/// fat.key_block_range → per 64-row group of the tile two loads, the
/// union's [min first, max end) in keys, then its blocks (the op's
/// formula).
struct KeyBlockRangeLowering : OpConversionPattern<KeyBlockRangeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(KeyBlockRangeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    RangeTable t{{b}, adaptor.getRanges(), op.getTable()};
    Value first, end;
    t.forEachGroup(op.getBlockM(), adaptor.getRowFirst(), adaptor.getRowLast(),
                   adaptor.getBatch(), [&](Value at) {
      Value f = t.load(at, 0), e = t.load(at, 1);
      // A group that sees no key must not widen the union.
      Value seen = t.cmp(arith::CmpIPredicate::sgt, e, f);
      f = arith::SelectOp::create(b, seen, f, t.c32(INT32_MAX));
      e = arith::SelectOp::create(b, seen, e, t.c32(0));
      first = first ? arith::MinSIOp::create(b, first, f) : f;
      end = end ? arith::MaxSIOp::create(b, end, e) : e;
    });
    int64_t n = op.getBlockN();
    first = arith::DivSIOp::create(
        b, arith::MaxSIOp::create(b, first, t.c32(0)), t.c32(n));
    end = arith::DivSIOp::create(
        b, t.add(arith::MaxSIOp::create(b, end, t.c32(0)), t.c32(n - 1)),
        t.c32(n));
    // lo stays ≤ the unnarrowed hi, so a tile without keys keeps an index
    // in range.
    Value lo = adaptor.getLo(), hi = adaptor.getHi();
    Value newLo = arith::MinSIOp::create(b, arith::MaxSIOp::create(b, lo, first), hi);
    Value newHi = arith::MinSIOp::create(b, hi, end);
    rewriter.replaceOp(op, {newLo, newHi});
    return success();
  }
};

/// fat.key_block_hole → per 64-row group of the tile four loads, the
/// intersection [max r4, min r5) of the holes of the groups that see keys,
/// then its whole blocks clamped into [lo, hi] (the op's formula).
struct KeyBlockHoleLowering : OpConversionPattern<KeyBlockHoleOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(KeyBlockHoleOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    RangeTable t{{b}, adaptor.getRanges(), op.getTable()};
    Value first, end;
    t.forEachGroup(op.getBlockM(), adaptor.getRowFirst(), adaptor.getRowLast(),
                   adaptor.getBatch(), [&](Value at) {
      // A group that sees no key hides every key.
      Value r1 = t.load(at, 1);
      Value r0 = t.load(at, 0);
      Value seen = t.cmp(arith::CmpIPredicate::sgt, r1, r0);
      Value r4 = t.load(at, 4);
      Value f = arith::SelectOp::create(b, seen, r4, t.c32(0));
      Value r5 = t.load(at, 5);
      Value e = arith::SelectOp::create(b, seen, r5, t.c32(INT32_MAX));
      first = first ? arith::MaxSIOp::create(b, first, f) : f;
      end = end ? arith::MinSIOp::create(b, end, e) : e;
    });
    // ⌈first / N⌉ and ⌊end / N⌋ of keys clamped to be non-negative; the
    // +N−1 cannot overflow for first ≤ 2^31 − N.
    int64_t n = op.getBlockN();
    Value zero = t.c32(0);
    first = arith::DivSIOp::create(
        b,
        t.add(arith::MinSIOp::create(b, arith::MaxSIOp::create(b, first, zero),
                                     t.c32(INT32_MAX - n)),
              t.c32(n - 1)),
        t.c32(n));
    end = arith::DivSIOp::create(b, arith::MaxSIOp::create(b, end, zero),
                                 t.c32(n));
    Value lo = adaptor.getLo(), hi = adaptor.getHi();
    Value holeFirst =
        arith::MinSIOp::create(b, arith::MaxSIOp::create(b, first, lo), hi);
    Value holeEnd = arith::MaxSIOp::create(
        b, arith::MinSIOp::create(b, end, hi), holeFirst);
    rewriter.replaceOp(op, {holeFirst, holeEnd});
    return success();
  }
};

/// The keys [max(r0, r2), min(r1', r3)) of a warpgroup's full range (four
/// loads of its table row; r1' ignores an end at or past the warpgroup's
/// last edge), shared by fat.full_key_block and fat.full_key_blocks.
template <typename FullOp>
static std::pair<Value, Value> fullKeyBounds(RangeTable &t, FullOp op,
                                             Value row, Value batch,
                                             Value diag) {
  ImplicitLocOpBuilder &b = t.b;
  Value at = t.rowIndex(batch, row);
  Value end = t.load(at, 1);
  if (std::optional<uint64_t> right = op.getRight()) {
    Value edge = t.add(t.add(t.add(row, t.c32(63)), diag),
                       t.c32(static_cast<int64_t>(*right) + 1));
    end = arith::SelectOp::create(
        b, t.cmp(arith::CmpIPredicate::sge, end, edge), t.c32(INT32_MAX), end);
  }
  Value lo = arith::MaxSIOp::create(b, t.load(at, 0), t.load(at, 2));
  Value hi = arith::MinSIOp::create(b, end, t.load(at, 3));
  return {lo, hi};
}

/// fat.full_key_block → the warpgroup's full keys and the op's two
/// compares.
struct FullKeyBlockLowering : OpConversionPattern<FullKeyBlockOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(FullKeyBlockOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    RangeTable t{{b}, adaptor.getRanges(), op.getTable()};
    auto [lo, hi] = fullKeyBounds(t, op, adaptor.getRow(), adaptor.getBatch(),
                                  adaptor.getDiag());
    int64_t n = op.getBlockN();
    Value keyFirst = t.mul(adaptor.getBlock(), t.c32(n));
    rewriter.replaceOp(
        op, arith::AndIOp::create(
                b, t.cmp(arith::CmpIPredicate::sge, keyFirst, lo),
                t.cmp(arith::CmpIPredicate::sle, t.add(keyFirst, t.c32(n)), hi)));
    return success();
  }
};
/// fat.full_key_blocks → the warpgroup's full keys, then ⌈lo / N⌉ and
/// max(⌊hi / N⌋, that) (the op's formula; lo clamped into [0, 2^31 − N] so
/// lo + N − 1 cannot overflow, hi to ≥ 0).
struct FullKeyBlocksLowering : OpConversionPattern<FullKeyBlocksOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(FullKeyBlocksOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    RangeTable t{{b}, adaptor.getRanges(), op.getTable()};
    auto [lo, hi] = fullKeyBounds(t, op, adaptor.getRow(), adaptor.getBatch(),
                                  adaptor.getDiag());
    int64_t n = op.getBlockN();
    Value zero = t.c32(0);
    Value first = arith::DivSIOp::create(
        b,
        t.add(arith::MinSIOp::create(b, arith::MaxSIOp::create(b, lo, zero),
                                     t.c32(INT32_MAX - n)),
              t.c32(n - 1)),
        t.c32(n));
    Value end = arith::MaxSIOp::create(
        b,
        arith::DivSIOp::create(b, arith::MaxSIOp::create(b, hi, zero), t.c32(n)),
        first);
    rewriter.replaceOp(op, {first, end});
    return success();
  }
};

/// The ops in `block` that compute `value` for its one user alone (pure,
/// one use each): fat.finalize's form of one register of its results.
static void collectChain(Value value, Block *block,
                         SmallVectorImpl<Operation *> &chain) {
  Operation *def = value.getDefiningOp();
  if (!def || def->getBlock() != block || !def->hasOneUse() ||
      !isMemoryEffectFree(def) || llvm::is_contained(chain, def))
    return;
  for (Value operand : def->getOperands())
    collectChain(operand, block, chain);
  chain.push_back(def);
}

/// Moves `value`'s chain (collectChain) to right before `point`, in the
/// order it had. The epilogue is register-bound at D = 256: formed all at
/// once, O / l would hold Dv/2 more registers across the staging rounds.
static void sinkInto(ConversionPatternRewriter &rewriter, Value value,
                     Operation *point, Block *block) {
  SmallVector<Operation *> chain;
  collectChain(value, block, chain);
  llvm::sort(chain, [](Operation *x, Operation *y) {
    return x->isBeforeInBlock(y);
  });
  for (Operation *op : chain)
    rewriter.moveOpBefore(op, point);
}

/// Names the stage of a loop or branch the epilogue's lowering makes, as
/// the kernel's own are named (`fat.stage`: the schedule stays readable in
/// the lowered IR).
static void tagEpilogue(Operation *op) {
  op->setAttr("fat.stage", StringAttr::get(op->getContext(), "epilogue"));
}

/// The thread rows and O offsets of the epilogue stores.
struct EpilogueMath : I32Math {
  /// Thread t's first row in the fragment layout: row + 16w + λ/4.
  Value threadRow(Value row, Value warp, Value lane) {
    Value g = divu(lane, 4);
    return add(row, add(mul(warp, c32(16)), g));
  }
  /// threadRow where `row` is defined: a tile's rows are known at its
  /// start, and the kernel computes its per-thread row values there, once
  /// per tile (at the stores, in the tile's epilogue, the code around it
  /// moved and causal kernels lost 1–5%: perf log run 103).
  Value threadRowAt(Value row) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointAfterValue(row);
    Value tid = NVVM::ThreadIdXOp::create(b, b.getI32Type());
    Value warp = remu(divu(tid, 32), 4);
    Value lane = remu(tid, 32);
    return threadRow(row, warp, lane);
  }
  /// The element offset b·sb + h·sh + row·ss of a row of O.
  Value rowOffset(ValueRange strides, Value batch, Value head, Value row) {
    return add(add(mul(ext64(batch), strides[0]), mul(ext64(head), strides[1])),
               mul(ext64(row), strides[2]));
  }
};

/// fat.store_output → per row r of the thread (row + 16w + λ/4 + 8r) a
/// branch on row < num_rows holding its O registers 2i + r, each one
/// 32-bit store at column 8i + 2(λ%4), and the LSE register r stored by
/// the quad's first lane; fat.finalize's forms of those registers move
/// into the branch, next to their stores.
struct StoreOutputLowering : OpConversionPattern<StoreOutputOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(StoreOutputOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    EpilogueMath e{{b}};
    Block *home = op->getBlock();
    SmallVector<Value> o(adaptor.getOutput()), lse(adaptor.getLse());
    SmallVector<Value> os = flatten(adaptor.getOStrides());
    SmallVector<Value> ls = flatten(adaptor.getLseStrides());
    Value row = adaptor.getRow().front();
    Value numRows = adaptor.getNumRows().front();
    Value batch = adaptor.getBatch().front(), head = adaptor.getHead().front();
    Value rowBase = e.threadRowAt(row);
    Value tid = NVVM::ThreadIdXOp::create(b, b.getI32Type());
    Value quadLane = e.remu(e.remu(tid, 32), 4);
    int64_t pairs = o.size() / 2;
    for (int r = 0; r < 2; ++r) {
      Value thisRow = e.add(rowBase, e.c32(8 * r));
      auto ifRow = scf::IfOp::create(
          b, e.cmp(arith::CmpIPredicate::slt, thisRow, numRows),
          /*withElseRegion=*/false);
      tagEpilogue(ifRow);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(ifRow.thenBlock()->getTerminator());
      // O[b, h, row, 8i + 2t + {0, 1}] as one 32-bit store per pair.
      Value colBase = e.mul(quadLane, e.c32(2));
      if (!o.empty()) {
        Value rowOffset = e.rowOffset(os, batch, head, thisRow);
        for (int64_t i = 0; i < pairs; ++i) {
          Value index = e.add(rowOffset, e.ext64(e.add(colBase, e.c32(8 * i))));
          Value oPtr = adaptor.getOPtr().front();
          Value ptr = LLVM::GEPOp::create(b, oPtr.getType(), b.getI16Type(),
                                          oPtr, ValueRange{index});
          auto store = LLVM::StoreOp::create(b, o[2 * i + r], ptr,
                                             /*alignment=*/4);
          sinkInto(rewriter, o[2 * i + r], store, home);
        }
      }
      if (lse.empty())
        continue;
      auto ifLane = scf::IfOp::create(
          b, e.cmp(arith::CmpIPredicate::eq, quadLane, e.c32(0)),
          /*withElseRegion=*/false);
      b.setInsertionPoint(ifLane.thenBlock()->getTerminator());
      Value index = e.add(
          e.add(e.mul(e.ext64(batch), ls[0]), e.mul(e.ext64(head), ls[1])),
          e.ext64(thisRow));
      Value ptr = LLVM::GEPOp::create(b, adaptor.getLsePtr().front().getType(),
                                      b.getF32Type(),
                                      adaptor.getLsePtr().front(),
                                      ValueRange{index});
      LLVM::StoreOp::create(b, lse[r], ptr, /*alignment=*/4);
      // The LSE is formed before the lane's branch, as the row's O is.
      sinkInto(rewriter, lse[r], ifLane, home);
    }
    rewriter.eraseOp(op);
    return success();
  }
};

/// fat.stage_output → the op's rounds: stmatrix .x4 of the warp's
/// accumulator pairs into its swizzled region, bar.warp.sync, 16-byte
/// rows read back and stored (a loop over the warp's 16 rows), then
/// fence.proxy.async for the producer's next TMA.
struct StageOutputLowering : OpConversionPattern<StageOutputOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(StageOutputOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    EpilogueMath e{{b}};
    Block *home = op->getBlock();
    SmallVector<Value> o(adaptor.getOutput());
    SmallVector<Value> os = flatten(adaptor.getOStrides());
    Value oPtr = adaptor.getOPtr().front(), smem = adaptor.getQRing().front();
    Value numRows = adaptor.getNumRows().front();
    Value batch = adaptor.getBatch().front(), head = adaptor.getHead().front();
    int64_t dv = cast<RankedTensorType>(op.getOutput().getType()).getDimSize(1);
    int64_t cols = op.getColumns();
    int64_t pitch = 2 * cols, chunksPerRow = cols / 8;
    int64_t regionBytes = 16 * pitch;
    auto qRing = cast<RingType>(op.getQRing().getType());
    RingSlot q(b, op, qRing, smem, adaptor.getQIteration().front());
    Value qStage = q.stage();
    Value rowBase = e.threadRowAt(adaptor.getRow().front());
    Value tid0 = NVVM::ThreadIdXOp::create(b, b.getI32Type());
    // The addresses below depend only on the thread (and the Q stage):
    // LLVM would hoist their parts to the top of the kernel and keep them
    // live through the main loop (36…80 bytes of spills at D = 256). Opaque
    // copies of the thread's indices keep them here.
    SmallVector<Value> ids = buildFenceOperands(b, {tid0, qStage});
    Value tid = ids[0];
    Value lane = e.remu(tid, 32);
    Value warp = e.remu(e.divu(tid, 32), 4);
    Value consumer = e.sub(e.divu(tid, 128), e.c32(1));
    Value linear = e.mul(warp, e.c32(regionBytes));
    Value box = e.divu(linear, 8192);
    Value within = e.remu(linear, 8192);
    Value warpOffset = e.add(
        e.add(q.bufferOffsetOf(ids[1]), e.mul(box, e.c32(op.getQBoxStride()))),
        e.add(e.mul(consumer, e.c32(64 * 128)), within));
    if (op.getVRing()) {
      RingSlot v(b, op, cast<RingType>(op.getVRing().getType()),
                 adaptor.getVRing().front(),
                 adaptor.getVIteration().front());
      Value inV = e.add(v.bufferOffset(),
                        e.mul(e.add(e.mul(consumer, e.c32(4)), warp),
                              e.c32(regionBytes)));
      warpOffset = arith::SelectOp::create(b, adaptor.getHasKeys().front(),
                                           inV, warpOffset);
      ArrayRef<int64_t> barrier = *op.getBarrier();
      buildNamedBarrierSync(b, e.c32(barrier[0]), barrier[1]);
    }
    auto chunkOffset = [&](Value rho, Value chunk) {
      Value swizzled = arith::XOrIOp::create(
          b, chunk, arith::AndIOp::create(b, rho, e.c32(7)));
      return e.add(e.add(warpOffset, e.mul(rho, e.c32(pitch))),
                   e.mul(swizzled, e.c32(16)));
    };
    auto smemAt = [&](Value offset, int64_t plus) {
      return buildByteOffset(b, buildByteOffset(b, smem, offset), plus);
    };

    // stmatrix .x4: matrix k of the four is (chunk 2j + k/2, rows 8·(k mod 2)
    // .. +7); its register in each lane is exactly that lane's accumulator
    // pair (row g, columns 2t, 2t+1), and lanes 8k .. 8k+7 give its rows'
    // addresses. (2j + k/2) ⊕ ρ only changes the low three bits, which
    // repeat every 4 j: four base addresses, the rest immediate offsets.
    Value lane8 = e.remu(lane, 8);
    Value matrix = e.divu(lane, 8);
    Value rho = e.add(lane8, e.mul(e.remu(matrix, 2), e.c32(8)));
    Value chunkOfLane = e.divu(matrix, 2);
    int64_t writePeriod = std::min<int64_t>(4, chunksPerRow / 2);
    SmallVector<Value> writeBase;
    for (int64_t j = 0; j < writePeriod; ++j)
      writeBase.push_back(chunkOffset(rho, e.add(chunkOfLane, e.c32(2 * j))));

    // Read back: load k of lane λ is chunk 32k + λ of the warp's 16·R/8,
    // i.e. row k·rowsPerLoad + ⌊λ / (R/8)⌋, chunk λ mod R/8: one 16-byte
    // load and store per lane covers 512 contiguous bytes of O per warp
    // instruction (4 full 128-byte lines). A loop, not unrolled: with all
    // loads in flight at once (Dv/4 registers) ptxas spills at D = 256.
    int64_t rowsPerLoad = 32 / chunksPerRow;
    Value laneRow = e.divu(lane, chunksPerRow);
    Value chunk = e.remu(lane, chunksPerRow);
    Value warpRow0 = e.sub(rowBase, e.divu(lane, 4));
    Value firstRow = e.add(warpRow0, laneRow);
    Value firstIndex = e.add(e.rowOffset(os, batch, head, firstRow),
                             e.ext64(e.mul(chunk, e.c32(8))));
    auto vecType = VectorType::get({4}, b.getI32Type());
    auto *ctx = b.getContext();
    for (int64_t round = 0; round < dv / cols; ++round) {
      // bar.warp.sync orders the warp's shared-memory accesses: the
      // previous round's reads before these writes, these writes before
      // the reads.
      if (round > 0)
        NVVM::SyncWarpOp::create(b, e.c32(-1));
      int64_t firstChunk = round * chunksPerRow;
      for (int64_t j = 0; j < chunksPerRow / 2; ++j) {
        int64_t i = firstChunk + 2 * j;
        SmallVector<Value> regs{o[2 * i], o[2 * i + 1], o[2 * i + 2],
                                o[2 * i + 3]};
        auto st = NVVM::StMatrixOp::create(
            b, smemAt(writeBase[j % writePeriod], 16 * 8 * (j / writePeriod)),
            regs, NVVM::MMALayout::row,
            NVVM::LdStMatrixShapeAttr::get(ctx, 8, 8),
            NVVM::LdStMatrixEltType::B16);
        for (Value reg : regs)
          sinkInto(rewriter, reg, st, home);
      }
      NVVM::SyncWarpOp::create(b, e.c32(-1));

      auto loop =
          scf::ForOp::create(b, e.c32(0), e.c32(16), e.c32(rowsPerLoad));
      tagEpilogue(loop);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      Value step = loop.getInductionVar();
      Value data = LLVM::LoadOp::create(
          b, vecType, smemAt(chunkOffset(e.add(laneRow, step), chunk), 0),
          /*alignment=*/16);
      Value thisRow = e.add(firstRow, step);
      auto ifRow = scf::IfOp::create(
          b, e.cmp(arith::CmpIPredicate::slt, thisRow, numRows),
          /*withElseRegion=*/false);
      b.setInsertionPoint(ifRow.thenBlock()->getTerminator());
      Value index = e.add(
          firstIndex, e.add(e.mul(os[2], e.ext64(step)),
                            i64Const(b, round * cols)));
      Value ptr = LLVM::GEPOp::create(b, oPtr.getType(), b.getI16Type(), oPtr,
                                      ValueRange{index});
      LLVM::StoreOp::create(b, data, ptr, /*alignment=*/16);
      b.setInsertionPointAfter(loop);
    }
    // The producer's TMA (async proxy) overwrites these bytes with a later
    // tile's Q or V once they are released: order this warp's
    // generic-proxy accesses before that.
    buildAsyncProxyFence(b);
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

/// fat.tile_loop's dynamic order: an scf.while whose first region finds
/// the tile's unit — the fetching role publishes it in the units ring (the
/// first unit is blockIdx.x, the next ones are fetched from the counter
/// during the tile before), the following roles read it there — and leaves
/// on u ≥ U; `runTile` inlines the body for unit u.
static void expandDynamicTiles(
    RewriterBase &rewriter, TileLoopOp op, ImplicitLocOpBuilder &b,
    Value numUnits,
    function_ref<SmallVector<Value>(Value, Value, ValueRange)> runTile,
    SmallVector<Value> init) {
  I32Math m{b};
  Value units = op.getUnits(), counter = op.getCounter();
  bool fetches = static_cast<bool>(counter);
  Type i32 = b.getI32Type();
  // The fetching role carries its unit: [u, ring position, tile, carried…].
  if (fetches)
    init.insert(init.begin(), NVVM::BlockIdXOp::create(b, i32));
  SmallVector<Type> types(ValueRange(init).getTypes());
  // Both forward [u, ring position, tile, carried…] to the body.
  SmallVector<Type> forwardedTypes(types);
  if (!fetches)
    forwardedTypes.insert(forwardedTypes.begin(), i32);
  auto loop = scf::WhileOp::create(b, forwardedTypes, init);
  loop->setAttr("fat.tiles",
                b.getStringAttr(fetches ? "dynamic-fetch" : "dynamic-follow"));
  {
    Block *before =
        b.createBlock(&loop.getBefore(), {}, types,
                      SmallVector<Location>(types.size(), b.getLoc()));
    ValueRange args = before->getArguments();
    Value tile = args[fetches ? 2 : 1];
    Value u;
    if (fetches) {
      u = args[0];
      Value slot = RingClaimOp::create(b, units, tile);
      LLVM::StoreOp::create(b, u, slot);
      RingCommitOp::create(b, units, tile, b.getUnitAttr());
    } else {
      RingWaitOp::create(b, units, tile);
      u = LLVM::LoadOp::create(b, i32, RingBufferOp::create(b, units, tile));
      RingReleaseOp::create(b, units, tile);
    }
    SmallVector<Value> forwarded{u};
    llvm::append_range(forwarded, args.drop_front(fetches ? 1 : 0));
    scf::ConditionOp::create(b, m.cmp(arith::CmpIPredicate::ult, u, numUnits),
                             forwarded);
  }
  Block *after =
      b.createBlock(&loop.getAfter(), {}, forwardedTypes,
                    SmallVector<Location>(forwardedTypes.size(), b.getLoc()));
  Value u = after->getArgument(0);
  Value fetched;
  if (fetches) {
    // Fetched before the tile's copies are issued, used after them: the
    // atomic's round trip runs under the tile.
    fetched =
        LLVM::AtomicRMWOp::create(b, LLVM::AtomicBinOp::add, counter, m.c32(1),
                                  LLVM::AtomicOrdering::monotonic);
  }
  // Head-major: m = u mod nM (runTile finds the longest-first order's).
  SmallVector<Value> next =
      runTile(u, arith::RemUIOp::create(b, u, op.getQueryBlocks()),
              after->getArguments().drop_front());
  if (fetches) {
    // U fetches in all; the one that returned U − 1 was the launch's last:
    // the counter goes back to 0 for the next launch on this stream.
    Value last =
        m.cmp(arith::CmpIPredicate::eq, fetched, m.sub(numUnits, m.c32(1)));
    auto reset = scf::IfOp::create(b, last, /*withElseRegion=*/false);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(reset.thenBlock()->getTerminator());
      LLVM::AtomicRMWOp::create(b, LLVM::AtomicBinOp::xchg, counter, m.c32(0),
                                LLVM::AtomicOrdering::monotonic);
    }
    Value launched = arith::MinUIOp::create(b, numUnits, m.c32(op.getCtas()));
    next.insert(next.begin(), m.add(launched, fetched));
  }
  scf::YieldOp::create(b, next);
  rewriter.replaceOp(op, loop.getResults().drop_front());
}

/// fat.tile_loop: CTA c's units u = c, c + G, … < U = P·Hq·B (its
/// description has the order); the tile's coordinates u / P = b·Hq + h and
/// the query block, then the body, inlined.
static void expandTileLoop(RewriterBase &rewriter, TileLoopOp op) {
  ImplicitLocOpBuilder b(op.getLoc(), rewriter);
  b.setInsertionPoint(op);
  I32Math m{b};
  Value numM = op.getQueryBlocks();
  Value heads = m.c32(op.getHeads());
  Value unitsPerHead =
      op.getPairs()
          ? Value(arith::DivUIOp::create(b, m.add(numM, m.c32(1)), m.c32(2)))
          : numM;
  Value numUnits = m.mul(unitsPerHead, m.mul(heads, op.getBatch()));
  // The static orders' first unit (the dynamic one reads its own).
  Value first =
      op.getUnits() ? Value() : NVVM::BlockIdXOp::create(b, b.getI32Type());
  int64_t step = op.getCtas();
  // One tile of unit u, query block mBlock: the body inlined at the
  // insertion point; returns the next (ring position, tile index, carried).
  auto runTile = [&](Value u, Value mBlock, ValueRange carried) {
    Value head, batch;
    if (op.getLongestFirst()) {
      // u = (b·nM + y)·Hq + h, m = nM − 1 − y.
      Value rest = arith::DivUIOp::create(b, u, heads);
      head = arith::RemUIOp::create(b, u, heads);
      batch = arith::DivUIOp::create(b, rest, numM);
      mBlock =
          m.sub(m.sub(numM, m.c32(1)), arith::RemUIOp::create(b, rest, numM));
    } else {
      Value rest = arith::DivUIOp::create(b, u, unitsPerHead);
      head = arith::RemUIOp::create(b, rest, heads);
      batch = arith::DivUIOp::create(b, rest, heads);
    }
    SmallVector<Value> args{mBlock, head, batch};
    llvm::append_range(args, carried);
    Block &body = op.getBodyBlock();
    auto yield = cast<TileYieldOp>(body.back());
    rewriter.inlineBlockBefore(&body, b.getInsertionBlock(),
                               b.getInsertionPoint(), args);
    SmallVector<Value> next{m.add(carried[0], yield.getBlocks()),
                            m.add(carried[1], m.c32(1))};
    llvm::append_range(next, yield.getCarried());
    rewriter.eraseOp(yield);
    return next;
  };
  SmallVector<Value> init{m.c32(0), m.c32(0)};
  llvm::append_range(init, op.getInits());
  if (op.getUnits()) {
    expandDynamicTiles(rewriter, op, b, numUnits, runTile, init);
    return;
  }
  if (!op.getPairs()) {
    auto loop = scf::ForOp::create(b, first, numUnits, m.c32(step), init);
    loop->setAttr(
        "fat.tiles",
        b.getStringAttr(op.getLongestFirst() ? "longest-first" : "head-major"));
    b.setInsertionPointToStart(loop.getBody());
    Value u = loop.getInductionVar();
    scf::YieldOp::create(
        b, runTile(u, arith::RemUIOp::create(b, u, unitsPerHead),
                   loop.getRegionIterArgs()));
    rewriter.replaceOp(op, loop.getResults());
    return;
  }
  // Pairs: one loop over tile positions w = 2u + k (k = 0: block p, k = 1:
  // block nM − 1 − p), from 2c: after k = 0 the next position is w + 1, or
  // the next unit's w + 2G when the pair is one block; after k = 1 it is
  // w + 2G − 1. The next position is computed before the body, so only it,
  // the ring position and the tile index live across the body: a loop nest
  // (units, then the pair) keeps its bounds live and spills in the
  // 24-register producer and the D = 256 consumers. Positions stay below
  // 2U + 2G < 2^32 (U < 2^31): unsigned compares.
  Value end = m.mul(numUnits, m.c32(2));
  init.insert(init.begin(), m.mul(first, m.c32(2)));
  SmallVector<Type> types(ValueRange(init).getTypes());
  SmallVector<Location> locs(init.size(), b.getLoc());
  auto loop = scf::WhileOp::create(b, types, init);
  loop->setAttr("fat.tiles", b.getStringAttr("head-major-pairs"));
  {
    Block *before = b.createBlock(&loop.getBefore(), {}, types, locs);
    scf::ConditionOp::create(
        b, m.cmp(arith::CmpIPredicate::ult, before->getArgument(0), end),
        before->getArguments());
  }
  Block *after = b.createBlock(&loop.getAfter(), {}, types, locs);
  Value w = after->getArgument(0);
  Value u = arith::ShRUIOp::create(b, w, m.c32(1));
  Value second = m.cmp(arith::CmpIPredicate::ne,
                       arith::AndIOp::create(b, w, m.c32(1)), m.c32(0));
  Value p = arith::RemUIOp::create(b, u, unitsPerHead);
  Value longer = m.sub(m.sub(numM, m.c32(1)), p);
  Value afterFirst =
      arith::SelectOp::create(b, m.cmp(arith::CmpIPredicate::ugt, longer, p),
                              m.add(w, m.c32(1)), m.add(w, m.c32(2 * step)));
  Value next = arith::SelectOp::create(b, second, m.add(w, m.c32(2 * step - 1)),
                                       afterFirst);
  Value mBlock = arith::SelectOp::create(b, second, longer, p);
  SmallVector<Value> carried =
      runTile(u, mBlock, after->getArguments().drop_front());
  carried.insert(carried.begin(), next);
  scf::YieldOp::create(b, carried);
  rewriter.replaceOp(op, loop.getResults().drop_front());
}

void mlir::fat::expandTileLoops(Operation *root) {
  SmallVector<TileLoopOp> loops;
  root->walk([&](TileLoopOp op) { loops.push_back(op); });
  IRRewriter rewriter(root->getContext());
  for (TileLoopOp op : loops)
    expandTileLoop(rewriter, op);
}

void mlir::fat::populateFatKernelToNVVMPatterns(
    const TypeConverter &converter, RewritePatternSet &patterns) {
  patterns
      .add<WarpSpecializeLowering, WgmmaAsyncLowering, TmaLoadLowering,
           OperandFenceLowering, WgmmaWaitLowering, ScheduleFenceLowering,
           TurnLowering<TurnsOpenOp>, TurnLowering<TurnBeginOp>,
           TurnLowering<TurnEndOp>, TurnLowering<TurnsCloseOp>,
           KeyGeometryLowering<VisibleKeyBlocksOp>,
           KeyGeometryLowering<FirstMaskedKeyBlockOp>,
           KeyGeometryLowering<KeyBlockNeedsMaskOp>, KeyBlockRangeLowering,
           KeyBlockHoleLowering, FullKeyBlockLowering, FullKeyBlocksLowering,
           StoreOutputLowering, StageOutputLowering, RingCreateLowering,
           RingInitLowering, RingAcquireLowering, RingWaitLowering,
           RingReleaseLowering, RingBufferLowering, RingFillLowering,
           BiasKeysFillLowering, RingClaimLowering, RingCommitLowering>(
          converter, patterns.getContext());
}

void mlir::fat::populateRingTypeConversion(TypeConverter &converter) {
  converter.addConversion([](RingType ring) -> Type {
    return LLVM::LLVMPointerType::get(ring.getContext(), kSharedSpace);
  });
}
