//===- FatToNVVM.cpp - convert-fat-to-nvvm --------------------------------===//
//
// Builds one gpu.module kernel per distinct kernel configuration of the
// fat.attention ops in a module and tags each op with the kernel it uses.
//
//===----------------------------------------------------------------------===//

#include "fa-t/Conversion/FatToNVVM/FatToNVVM.h"

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

/// An option naming one of two choices or `auto`: sets `choice` to true for
/// `yes`, false for `no` and leaves it unset for `auto`; anything else is
/// an error naming the option and its three words.
static LogicalResult parseAutoChoice(ModuleOp top, StringRef option,
                                     StringRef value, StringRef yes,
                                     StringRef no,
                                     std::optional<bool> &choice) {
  if (value == yes || value == no) {
    choice = value == yes;
    return success();
  }
  if (value == "auto")
    return success();
  return top.emitError() << "convert-fat-to-nvvm: " << option
                         << " must be 'auto', '" << yes << "' or '" << no
                         << "', got '" << value << "'";
}

namespace {
struct ConvertFatToNVVMPass
    : public fat::impl::ConvertFatToNVVMBase<ConvertFatToNVVMPass> {
  using Base::Base;

  /// The kernel is meant to reach gpu-module-to-binary, which translates the
  /// gpu.module to LLVM IR and serializes it through the #nvvm.target's
  /// interface: register those with the dialects (a tool that registers only
  /// the dialects of its input would otherwise crash in serialization).
  void getDependentDialects(DialectRegistry &registry) const override {
    Base::getDependentDialects(registry);
    NVVM::registerNVVMTargetInterfaceExternalModels(registry);
    registerBuiltinDialectTranslation(registry);
    registerGPUDialectTranslation(registry);
    registerLLVMDialectTranslation(registry);
    registerNVVMDialectTranslation(registry);
  }

  void runOnOperation() override {
    ModuleOp top = getOperation();
    MLIRContext *ctx = &getContext();
    HopperKernelOptions options;
    options.sm = sm;
    options.blockM = blockM;
    options.blockN = blockN;
    options.stages = stages;
    options.qBuffers = qBuffers;
    options.seqLen = seqLen;
    options.ptxVersion = ptxVersion;
    options.schedule.overlap = overlap;
    options.schedule.pingpong = pingpong;
    std::optional<bool> rowsumMma = parseRowsumMma(rowsum);
    if (!rowsumMma) {
      top.emitError() << "convert-fat-to-nvvm: rowsum must be 'vector' or "
                         "'mma', got '"
                      << rowsum << "'";
      return signalPassFailure();
    }
    std::optional<bool> lazyRescale = parseLazyRescale(rescale);
    if (!lazyRescale) {
      top.emitError() << "convert-fat-to-nvvm: rescale must be 'always' or "
                         "'lazy', got '"
                      << rescale << "'";
      return signalPassFailure();
    }
    options.schedule.rowsumMma = *rowsumMma;
    options.schedule.lazyRescale = *lazyRescale;
    options.schedule.rescaleThreshold = rescaleThreshold;
    options.schedule.exp2Poly = exp2Poly;
    options.schedule.persistent = persistent;
    options.schedule.tileOverlap = tileOverlap;
    options.numSMs = numSMs;
    if (failed(parseAutoChoice(top, "o-store", oStore, "staged", "direct",
                               options.stageO)) ||
        failed(parseAutoChoice(top, "pv-wait", pvWait, "late", "early",
                               options.latePVWait)))
      return signalPassFailure();

    // Each op becomes a kernel launched from the host; one already inside
    // device code (a gpu.module) could only be a call from a kernel, which
    // nothing lowers (upstream's translation would fail on it later, naming
    // an unrealized cast).
    SmallVector<AttentionOp> ops;
    bool inDeviceCode = false;
    top.walk([&](AttentionOp op) {
      if (auto device = op->getParentOfType<gpu::GPUModuleOp>()) {
        op.emitOpError() << "inside gpu.module '" << device.getName()
                         << "' is device code: the Hopper kernel is "
                            "launched from host code, call it there";
        inDeviceCode = true;
        return;
      }
      ops.push_back(op);
    });
    if (inDeviceCode)
      return signalPassFailure();

    // The manifests built so far, by kernel name (kept across runs).
    NamedAttrList manifests;
    if (auto existing = top->getAttrOfType<DictionaryAttr>("fat.kernels"))
      manifests.append(existing.getValue());

    OpBuilder builder(ctx);
    bool failedAny = false;
    for (AttentionOp op : ops) {
      FailureOr<AttentionKernelConfig> config =
          getAttentionKernelConfig(op, options);
      if (failed(config)) {
        failedAny = true;
        continue;
      }
      std::string name = config->kernelName();
      if (Operation *existing = SymbolTable::lookupSymbolIn(top, name)) {
        // The kernel of an earlier op (or run of this pass) is reused; any
        // other symbol of that name would be called as the kernel.
        if (!isa<gpu::GPUModuleOp, gpu::BinaryOp>(existing) ||
            !manifests.get(name)) {
          InFlightDiagnostic diag = op.emitOpError()
                                    << "needs the kernel name '" << name
                                    << "', which a '" << existing->getName()
                                    << "' of the module already has: rename "
                                       "that symbol";
          diag.attachNote(existing->getLoc()) << "the symbol is here";
          failedAny = true;
          continue;
        }
      } else {
        buildAttentionKernelModule(builder, op.getLoc(), top, *config);
        manifests.set(name, StringAttr::get(ctx, config->manifestJson()));
      }
      op->setAttr("fat.kernel",
                  SymbolRefAttr::get(ctx, name,
                                     {FlatSymbolRefAttr::get(ctx, name)}));
    }
    if (failedAny)
      return signalPassFailure();
    if (!manifests.empty()) {
      top->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                   UnitAttr::get(ctx));
      top->setAttr("fat.kernels", manifests.getDictionary(ctx));
    }
  }
};
} // namespace
