//===- fa-t-fuzz-mlir.cpp - libFuzzer harness: bytes as MLIR text ---------===//
//
// Reads each input as a module in MLIR text (our dialect with func, arith,
// tensor and memref), and compiles whatever verifies with the default
// options of fa-t-opt's pipelines; fat-to-ptx runs at O=0 because LLVM's
// optimizer is not what is under test and costs most of an input's time.
// Seeds: the lit tests, split at `// -----` (scripts/fuzz.sh).
//
//===----------------------------------------------------------------------===//

#include "FuzzCompiler.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlir::fat::FuzzPipelineOptions options;
  options.ptx = "O=0";
  mlir::fat::getFuzzCompiler().compile(
      llvm::StringRef(reinterpret_cast<const char *>(data), size), options);
  return 0;
}
