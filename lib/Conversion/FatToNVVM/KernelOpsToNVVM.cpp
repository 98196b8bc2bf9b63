//===- KernelOpsToNVVM.cpp - the pipelined kernel's fat ops to NVVM -------===//
//
// One conversion pattern per op of FatKernelOps.td; `--convert-fat-to-nvvm`
// applies them to the kernels `--fat-pipeline` built.
//
//===----------------------------------------------------------------------===//

#include "HopperBuilders.h"
#include "fa-t/Conversion/FatToNVVM/FatToNVVM.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Transforms/DialectConversion.h"

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

namespace {
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

/// fat.operand_fence → fenceRegisters: the asm is itself ordered after the
/// side effects before it (a wait, a barrier).
struct OperandFenceLowering : OpConversionPattern<OperandFenceOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OperandFenceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    rewriter.replaceOp(op, fenceRegisters(b, adaptor.getInputs()));
    return success();
  }
};

/// fat.wgmma_wait → `wgmma.wait_group N`, then the fence above on the
/// values the retired groups wrote.
struct WgmmaWaitLowering : OpConversionPattern<WgmmaWaitOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(WgmmaWaitOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    NVVM::WgmmaWaitGroupSyncOp::create(b, op.getPending());
    rewriter.replaceOp(op, fenceRegisters(b, adaptor.getInputs()));
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
} // namespace

void mlir::fat::populateFatKernelToNVVMPatterns(RewritePatternSet &patterns) {
  patterns.add<WarpSpecializeLowering, OperandFenceLowering,
               WgmmaWaitLowering, ScheduleFenceLowering>(
      patterns.getContext());
}
