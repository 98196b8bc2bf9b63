//===- main.cpp - a C++ program built on the installed fa-t ---------------===//
//
// Registers the fat dialect and passes (fa-t/InitAll.h) next to the upstream
// dialects its input uses, parses a file holding a fat.attention, runs a
// pass pipeline on its module and prints the result:
//
//   fat-consumer attention.mlir 'fat-tile{block-m=64},fat-decompose'
//
//===----------------------------------------------------------------------===//

#include "fa-t/InitAll.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

int main(int argc, char **argv) {
  if (argc != 3) {
    llvm::errs() << "usage: " << argv[0]
                 << " <input.mlir> <passes on the module>\n";
    return 2;
  }
  fat::registerAllFatPasses();
  DialectRegistry registry;
  registry.insert<func::FuncDialect, memref::MemRefDialect>();
  fat::registerAllFatDialects(registry);
  MLIRContext context(registry);

  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(argv[1], &context);
  if (!module)
    return 1;
  PassManager pm(&context);
  if (failed(parsePassPipeline(argv[2], pm, llvm::errs())) ||
      failed(pm.run(*module)))
    return 1;
  module->print(llvm::outs());
  return 0;
}
