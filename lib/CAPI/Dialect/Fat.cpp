//===- Fat.cpp - C API of the fat dialect ---------------------------------===//
//
// The dialect handle and pass registration of include/fa-t-c/Dialect/Fat.h.
//
//===----------------------------------------------------------------------===//

#include "fa-t-c/Dialect/Fat.h"
#include "fa-t/InitAll.h"

#include "mlir/CAPI/Registration.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Transforms/Passes.h"

#include <mutex>

MLIR_DEFINE_CAPI_DIALECT_REGISTRATION(Fat, fat, mlir::fat::FatDialect)

void fatRegisterAllPasses(void) {
  // MLIR asserts that a pipeline name is registered once: guard ours.
  static std::once_flag once;
  std::call_once(once, [] {
    mlir::fat::registerAllFatPasses();
    // fat-to-cpu and fat-to-ptx are built by parsing upstream pass names
    // (canonicalize, one-shot-bufferize, convert-scf-to-cf,
    // gpu-module-to-binary, ...), so those must be registered too. These
    // groups hold passes only, never pipelines, and registering a pass again
    // is harmless: a host that registered them already is unaffected.
    mlir::registerTransformsPasses();
    mlir::registerConversionPasses();
    mlir::bufferization::registerBufferizationPasses();
    mlir::registerLinalgPasses();
    mlir::registerSCFPasses();
    mlir::memref::registerMemRefPasses();
    mlir::registerGPUPasses();
  });
}
