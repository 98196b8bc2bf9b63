//===- fa-t-opt.cpp - the fa-t compiler driver ----------------------------===//
//
// mlir-opt with the fat dialect, its passes and pipelines, and every
// upstream dialect and pass the pipelines lower through.
//
//===----------------------------------------------------------------------===//

#include "fa-t/Conversion/FatToNVVM/FatToNVVM.h"
#include "fa-t/Dialect/Fat/IR/FatDialect.h"
#include "fa-t/Dialect/Fat/Transforms/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  mlir::fat::registerFatPasses();
  mlir::fat::registerFatPipelines();
  mlir::fat::registerFatToNVVMPasses();
  mlir::fat::registerFatToPTXPipeline();

  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  registry.insert<mlir::fat::FatDialect>();

  llvm::cl::AddExtraVersionPrinter(
      [](llvm::raw_ostream &os) { os << FAT_VERSION_STRING << "\n"; });
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "fa-t compiler: fat.attention to tensorized Hopper kernels\n",
      registry));
}
