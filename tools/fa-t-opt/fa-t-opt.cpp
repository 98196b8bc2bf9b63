//===- fa-t-opt.cpp - the fa-t compiler driver ----------------------------===//
//
// mlir-opt with the fat dialect, its passes and pipelines, and every
// upstream dialect and pass the pipelines lower through.
//
//===----------------------------------------------------------------------===//

#include "fa-t/InitAll.h"
#include "fa-t/Tools/InputChecks.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  mlir::fat::registerAllFatPasses();

  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::fat::registerAllFatDialects(registry);

  llvm::cl::AddExtraVersionPrinter(
      [](llvm::raw_ostream &os) { os << FAT_VERSION_STRING << "\n"; });
  // Named copies, not structured bindings: the lambda below captures the
  // input name, and capturing a binding needs C++20.
  std::pair<std::string, std::string> files = mlir::registerAndParseCLIOptions(
      argc, argv, "fa-t compiler: fat.attention to tensorized Hopper kernels\n",
      registry);
  const std::string inputFilename = files.first;
  const std::string outputFilename = files.second;

  // Text that would crash MLIR 22's own parsers gets a diagnostic instead
  // (InputChecks.h).
  auto refuseHazard = [&](const llvm::MemoryBuffer &input) {
    std::optional<mlir::fat::InputHazard> hazard =
        mlir::fat::findLinalgArrayHazard(input.getBuffer());
    if (hazard)
      llvm::errs() << (inputFilename == "-" ? "<stdin>" : inputFilename)
                   << ":" << hazard->line << ":" << hazard->col
                   << ": error: " << hazard->message << "\n";
    return hazard.has_value();
  };
  mlir::MlirOptMainConfig config = mlir::MlirOptMainConfig::createFromCLOptions();
  if (config.shouldShowDialects() || config.shouldListPasses())
    return mlir::asMainReturnCode(
        mlir::MlirOptMain(argc, argv, inputFilename, outputFilename, registry));
  // Read the input once — a file, or standard input, which can only be read
  // once — check it, and hand the buffer to the driver (what MlirOptMain
  // does after opening the file itself).
  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> input =
      mlir::openInputFile(inputFilename, &error);
  if (!input) {
    llvm::errs() << error << "\n";
    return 1;
  }
  if (refuseHazard(*input))
    return 1;
  std::unique_ptr<llvm::ToolOutputFile> output =
      mlir::openOutputFile(outputFilename, &error);
  if (!output) {
    llvm::errs() << error << "\n";
    return 1;
  }
  if (mlir::failed(
          mlir::MlirOptMain(output->os(), std::move(input), registry, config)))
    return 1;
  output->keep();
  return 0;
}
