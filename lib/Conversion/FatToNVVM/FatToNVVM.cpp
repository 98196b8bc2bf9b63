//===- FatToNVVM.cpp - convert-fat-to-nvvm --------------------------------===//
//
// Lowers the ops of the pipelined kernels that --fat-pipeline built
// (KernelOpsToNVVM.cpp has the patterns).
//
//===----------------------------------------------------------------------===//

#include "fa-t/Conversion/FatToNVVM/FatToNVVM.h"
#include "fa-t/Dialect/Fat/Hopper/AttentionKernel.h"
#include "fa-t/Dialect/Fat/Transforms/Passes.h"

#include "mlir/Transforms/DialectConversion.h"

namespace mlir {
namespace fat {
#define GEN_PASS_DEF_CONVERTFATTONVVM
#include "fa-t/Conversion/FatToNVVM/Passes.h.inc"
} // namespace fat
} // namespace mlir

using namespace mlir;
using namespace mlir::fat;

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
      op.emitOpError("has no kernel to lower: run --fat-tile, "
                     "--fat-tensorize and --fat-pipeline first (they build "
                     "the pipelined kernel that convert-fat-to-nvvm "
                     "lowers), or --fat-to-ptx for the whole pipeline");
      unbuilt = true;
    }
    // A tiled loop left on the host is an attention without a kernel too.
    top.walk([&](scf::ForallOp loop) {
      if (!loop->hasAttr(kTileAttrName) ||
          loop->getParentOfType<gpu::GPUModuleOp>())
        return;
      loop.emitOpError("is a tiled attention with no kernel to lower: run "
                       "--fat-tensorize and --fat-pipeline first, or "
                       "--fat-to-ptx for the whole pipeline");
      unbuilt = true;
    });
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
