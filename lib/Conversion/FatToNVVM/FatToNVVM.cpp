//===- FatToNVVM.cpp - convert-fat-to-nvvm --------------------------------===//
//
// Lowers the ops of the pipelined kernels that --fat-pipeline built
// (KernelOpsToNVVM.cpp has the patterns).
//
//===----------------------------------------------------------------------===//

#include "Schedule.h"

#include "mlir/Transforms/DialectConversion.h"

#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"

namespace mlir {
namespace fat {
#define GEN_PASS_DEF_CONVERTFATTONVVM
#include "fa-t/Conversion/FatToNVVM/Passes.h.inc"
} // namespace fat
} // namespace mlir

using namespace mlir;
using namespace mlir::fat;

void mlir::fat::registerKernelTranslations(DialectRegistry &registry) {
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  registerBuiltinDialectTranslation(registry);
  registerGPUDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
}

namespace {
struct ConvertFatToNVVMPass
    : public fat::impl::ConvertFatToNVVMBase<ConvertFatToNVVMPass> {
  using Base::Base;

  void getDependentDialects(DialectRegistry &registry) const override {
    Base::getDependentDialects(registry);
    registerKernelTranslations(registry);
  }

  void runOnOperation() override {
    ModuleOp top = getOperation();
    // A host op without a kernel: --fat-pipeline builds kernels, this pass
    // only lowers what they are written in.
    bool unbuilt = false;
    for (AttentionOp op : hostAttentionOps(top)) {
      if (op->hasAttr(kKernelAttrName))
        continue;
      op.emitOpError("has no kernel to lower: run --fat-pipeline first (it "
                     "builds the pipelined kernel that convert-fat-to-nvvm "
                     "lowers), or --fat-to-ptx for the whole pipeline");
      unbuilt = true;
    }
    if (unbuilt)
      return signalPassFailure();

    ConversionTarget target(getContext());
    target.addIllegalOp<WarpSpecializeOp, WgmmaAsyncOp, OperandFenceOp,
                        WgmmaWaitOp, ScheduleFenceOp>();
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    RewritePatternSet patterns(&getContext());
    populateFatKernelToNVVMPatterns(patterns);
    FrozenRewritePatternSet frozen(std::move(patterns));
    for (auto module : top.getOps<gpu::GPUModuleOp>())
      if (failed(applyPartialConversion(module, target, frozen)))
        return signalPassFailure();
  }
};
} // namespace
