//===- fa-t-fuzz-attention.cpp - libFuzzer harness: structured cases ------===//
//
// Reads each input as the choices of one fat.attention func and its pass
// options (AttentionCase.h) and compiles it. FA_T_FUZZ_VERBOSE=1 prints the
// generated module and options, which is how a crash input becomes a lit
// regression test.
//
//===----------------------------------------------------------------------===//

#include "AttentionCase.h"
#include "FuzzCompiler.h"

#include "llvm/Support/raw_ostream.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlir::fat::FuzzCompiler &compiler = mlir::fat::getFuzzCompiler();
  mlir::fat::AttentionCase input = mlir::fat::generateAttentionCase(data, size);
  if (compiler.isVerbose())
    llvm::errs() << "fa-t-fuzz: case\n"
                 << input.source << "// fat-tile{" << input.options.tile
                 << "}\n// fat-tensorize{" << input.options.tensorize
                 << "}\n// fat-to-cpu{" << input.options.cpu
                 << "}\n// fat-to-ptx{" << input.options.ptx << "}\n";
  compiler.compile(input.source, input.options);
  return 0;
}
