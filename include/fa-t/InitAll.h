//===- InitAll.h - register every fa-t dialect and pass ---------*- C++ -*-===//
//
// The one place that lists what fa-t adds to MLIR, in the manner of
// mlir/InitAllDialects.h and mlir/InitAllPasses.h: the mlir-opt plugin, the C
// API and projects that embed fa-t call these instead of naming each pass.
//
//===----------------------------------------------------------------------===//
#ifndef FAT_INITALL_H
#define FAT_INITALL_H

#include "fa-t/Conversion/FatToNVVM/FatToNVVM.h"
#include "fa-t/Dialect/Fat/Hopper/AttentionKernel.h"
#include "fa-t/Dialect/Fat/IR/FatDialect.h"
#include "fa-t/Dialect/Fat/TransformOps/FatTransformOps.h"
#include "fa-t/Dialect/Fat/Transforms/Passes.h"

#include "mlir/IR/DialectRegistry.h"

namespace mlir {
namespace fat {

/// Adds the fat dialect, its transform-dialect ops (`transform.fat.*`) and
/// what serializing its kernels needs (registerKernelTranslations) to
/// `registry`. The dialects its ops and passes produce are loaded on
/// demand as dependent dialects.
inline void registerAllFatDialects(DialectRegistry &registry) {
  registry.insert<FatDialect>();
  registerTransformDialectExtension(registry);
  registerKernelTranslations(registry);
}

/// Registers every fa-t pass (`fat-tile`, `fat-decompose`,
/// `convert-fat-to-nvvm`, `fat-emit-kernels`) and pipeline (`fat-to-cpu`,
/// `fat-to-ptx`) with MLIR's global registry. Call it once: MLIR asserts
/// that a pipeline name is registered only once.
inline void registerAllFatPasses() {
  registerFatPasses();
  registerFatPipelines();
  registerFatToNVVMPasses();
  registerFatToPTXPipeline();
}

} // namespace fat
} // namespace mlir

#endif // FAT_INITALL_H
