//===- FatToNVVM.cpp - convert-fat-to-nvvm --------------------------------===//
//
// Lowers the ops of the pipelined kernels that --fat-pipeline built
// (KernelOpsToNVVM.cpp has the patterns; FragmentOpsToNVVM.cpp those of the
// tile ops on #fat.wgmma_fragment tiles and the type conversion).
//
//===----------------------------------------------------------------------===//

#include "fa-t/Conversion/FatToNVVM/FatToNVVM.h"
#include "fa-t/Dialect/Fat/Hopper/AttentionKernel.h"
#include "fa-t/Dialect/Fat/Transforms/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMTypes.h"
#include "mlir/Dialect/SCF/Transforms/Patterns.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
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
    if (captureReads != "early" && captureReads != "late") {
      top->emitError() << "convert-fat-to-nvvm: capture-reads must be early "
                          "or late, got '"
                       << captureReads << "'";
      return signalPassFailure();
    }
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
    // A modification of a kernel tile reads its captured tensors through
    // their addresses (ModFragmentLowering): each capture must be one, and
    // the region may only load elements of it.
    bool badCapture = false;
    top.walk([&](Operation *op) {
      if (!isa<ScoreModOp, MaskModOp>(op) || op->getNumResults() != 1 ||
          !WgmmaFragmentAttr::isFragment(op->getResult(0).getType()))
        return;
      Block &body = op->getRegion(0).front();
      auto captures = isa<ScoreModOp>(op) ? cast<ScoreModOp>(op).getCaptures()
                                          : cast<MaskModOp>(op).getCaptures();
      for (auto [capture, arg] : llvm::zip_equal(
               captures, body.getArguments().take_back(captures.size()))) {
        if (!isa<LLVM::LLVMPointerType>(capture.getType())) {
          op->emitOpError("on a kernel tile expects each capture as the "
                          "tensor's !llvm.ptr address, got ")
              << capture.getType();
          badCapture = true;
          return;
        }
        for (Operation *user : arg.getUsers())
          if (!isa<tensor::ExtractOp>(user)) {
            user->emitOpError("reads a captured tensor in a kernel, where "
                              "only tensor.extract of its elements is "
                              "supported");
            badCapture = true;
            return;
          }
      }
    });
    if (badCapture)
      return signalPassFailure();

    expandTileLoops(top);
    ConversionTarget target(getContext());
    target.addIllegalOp<
        WarpSpecializeOp, WgmmaAsyncOp, TmaLoadOp, OperandFenceOp,
        VisibleKeyBlocksOp, FirstMaskedKeyBlockOp, KeyBlockNeedsMaskOp,
        KeyBlockRangeOp, KeyBlockHoleOp, FullKeyBlockOp, FullKeyBlocksOp,
        WgmmaWaitOp, ScheduleFenceOp, StoreOutputOp, StageOutputOp,
        RingCreateOp, RingInitOp, RingAcquireOp, RingWaitOp, RingReleaseOp,
        RingBufferOp, RingFillOp, RingClaimOp, RingCommitOp, BiasKeysFillOp,
        TurnsOpenOp, TurnBeginOp, TurnEndOp, TurnsCloseOp>();
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    configureWgmmaFragmentLegality(target);
    TypeConverter fragments;
    populateWgmmaFragmentTypeConversion(fragments);
    populateRingTypeConversion(fragments);
    RewritePatternSet patterns(&getContext());
    populateFatKernelToNVVMPatterns(fragments, patterns);
    std::optional<TanhForm> form =
        llvm::StringSwitch<std::optional<TanhForm>>(tanh)
            .Case("auto", TanhForm::Auto)
            .Case("approx", TanhForm::Approx)
            .Case("precise", TanhForm::Precise)
            .Default(std::nullopt);
    if (!form) {
      top->emitError() << "convert-fat-to-nvvm: tanh must be auto, approx or "
                          "precise, got '"
                       << tanh << "'";
      return signalPassFailure();
    }
    if (capturePrefetch < 0 || capturePrefetch > kMaxCapturePrefetch) {
      top->emitError() << "convert-fat-to-nvvm: capture-prefetch is a number "
                          "of key blocks ahead, 0 (none) to "
                       << kMaxCapturePrefetch << ", got "
                       << static_cast<int64_t>(capturePrefetch);
      return signalPassFailure();
    }
    populateWgmmaFragmentToNVVMPatterns(fragments, patterns, *form,
                                        capturePrefetch);
    // Loops and branches that carry tiles carry their registers instead.
    scf::populateSCFStructuralTypeConversionsAndLegality(fragments, patterns,
                                                         target);
    FrozenRewritePatternSet frozen(std::move(patterns));
    for (auto module : top.getOps<gpu::GPUModuleOp>()) {
      if (failed(applyPartialConversion(module, target, frozen)))
        return signalPassFailure();
      // The tiles' registers meet the per-thread code through casts (the
      // kernel's own and the conversion's); pairs that round-trip fold.
      SmallVector<UnrealizedConversionCastOp> casts, left;
      module.walk([&](UnrealizedConversionCastOp c) {
        if (llvm::any_of(c->getOperandTypes(), WgmmaFragmentAttr::isFragment) ||
            llvm::any_of(c->getResultTypes(), WgmmaFragmentAttr::isFragment))
          casts.push_back(c);
      });
      reconcileUnrealizedCasts(casts, &left);
      // A cast left over means a tile reached an op with no per-thread form.
      if (!left.empty()) {
        Operation *user = left.front();
        for (UnrealizedConversionCastOp c : left)
          for (Operation *u : c->getUsers())
            if (!isa<UnrealizedConversionCastOp>(u))
              user = u;
        user->emitOpError("reads a #fat.wgmma_fragment tile, which only "
                          "the kernel's tile ops (fat.wgmma_async, "
                          "fat.wgmma_wait, fat.operand_fence, fat.mask, "
                          "fat.score_mod, fat.mask_mod, "
                          "fat.softmax_max, fat.softmax_exp, fat.rescale, "
                          "fat.finalize, fat.convert_layout, "
                          "fat.store_output, fat.stage_output, "
                          "arith.truncf, arith.constant), scf loops and "
                          "branches, and casts to registers may read: "
                          "convert-fat-to-nvvm has no per-thread form for it");
        return signalPassFailure();
      }
      if (captureReads == "early")
        issueCaptureReadsEarly(module);
    }
  }
};
} // namespace
