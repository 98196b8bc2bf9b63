//===- FuzzCompiler.cpp - fa-t compiled in-process for fuzzing ------------===//
//
// Every input gets a fresh MLIRContext (no state carried between inputs, so a
// crash replays from its input alone), single-threaded, with a diagnostic
// handler that keeps the messages instead of printing them.
//
//===----------------------------------------------------------------------===//

#include "FuzzCompiler.h"

#include "fa-t/Tools/InputChecks.h"

#include "fa-t/Conversion/FatToNVVM/FatToNVVM.h"
#include "fa-t/Dialect/Fat/IR/FatDialect.h"
#include "fa-t/Dialect/Fat/TransformOps/FatTransformOps.h"
#include "fa-t/Dialect/Fat/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/TransformOps/DialectExtension.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Transform/IR/TransformDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassInstrumentation.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

using namespace mlir;
using namespace mlir::fat;

namespace {

/// Prints what an aborting check found, then aborts: libFuzzer saves the
/// input as crash-<sha1> and the message says which rule broke.
[[noreturn]] void fail(StringRef what, StringRef diagnostics) {
  llvm::errs() << "fa-t-fuzz: " << what << "\n";
  if (!diagnostics.empty())
    llvm::errs() << "diagnostics:\n" << diagnostics << "\n";
  llvm::errs().flush();
  std::abort();
}

/// The PassManager's verifyPasses, made fatal: a pass that reports success
/// must leave IR that verifies (an invalid module passed on is a compiler
/// bug, and with LLVM built without assertions nothing else would notice).
/// The PassManager's own verifier is off, because it turns the same finding
/// into an ordinary pass failure that the harness could not tell apart from
/// a rejected input.
struct AbortOnInvalidIR : PassInstrumentation {
  explicit AbortOnInvalidIR(const std::string &diagnostics)
      : diagnostics(diagnostics) {}

  void runAfterPass(Pass *pass, Operation *op) override {
    if (succeeded(verify(op)))
      return;
    fail(("pass '" + pass->getArgument() +
          "' succeeded but left IR that does not verify")
             .str(),
         diagnostics);
  }

  const std::string &diagnostics;
};

/// Whether any value in `module` is a memref without a strided layout.
/// Upstream's ownership-based buffer deallocation (in fat-to-cpu) builds
/// memref.extract_strided_metadata on such a memref, which is invalid IR: a
/// known upstream limitation that fat.attention's verifier keeps away from
/// our ops, so the harness leaves those inputs out rather than report it.
bool hasNonStridedMemRef(ModuleOp module) {
  auto nonStrided = [](Type t) {
    auto m = dyn_cast<MemRefType>(t);
    return m && !m.isStrided();
  };
  WalkResult found = module->walk([&](Operation *op) {
    bool any = llvm::any_of(op->getResultTypes(), nonStrided);
    for (Region &region : op->getRegions())
      for (Block &block : region)
        any |= llvm::any_of(block.getArgumentTypes(), nonStrided);
    return any ? WalkResult::interrupt() : WalkResult::advance();
  });
  return found.wasInterrupted();
}

/// Removes what fat-emit-kernels wrote for one input, keeping the directory.
void clearDirectory(StringRef dir) {
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec))
    llvm::sys::fs::remove_directories(it->path());
}

} // namespace

FuzzCompiler::FuzzCompiler() {
  // The pipelines name upstream passes in text: register them all, and ours,
  // exactly as fa-t-opt does.
  registerAllPasses();
  registerFatPasses();
  registerFatPipelines();
  registerFatToNVVMPasses();
  registerFatToPTXPipeline();

  // Inputs are written in our dialect and the upstream ones our IR uses,
  // plus linalg and math: the attention chains fat-raise-attention reads.
  // The pipelines then run in fa-t-opt's environment: upstream keeps the
  // external models the passes rely on (bufferization of tensor/linalg/scf,
  // ConvertToLLVM, the NVVM target) in registerAllDialects.
  inputRegistry.insert<FatDialect, func::FuncDialect, arith::ArithDialect,
                       tensor::TensorDialect, memref::MemRefDialect,
                       linalg::LinalgDialect, math::MathDialect>();
  inputRegistry.appendTo(scriptRegistry);
  scriptRegistry.insert<scf::SCFDialect, transform::TransformDialect>();
  linalg::registerTransformDialectExtension(scriptRegistry);
  registerTransformDialectExtension(scriptRegistry);
  registerAllDialects(toolRegistry);
  registerAllExtensions(toolRegistry);
  toolRegistry.insert<FatDialect>();

  verbose = std::getenv("FA_T_FUZZ_VERBOSE") != nullptr;
  SmallString<128> dir;
  if (std::error_code ec = llvm::sys::fs::createUniqueDirectory("fa-t-fuzz", dir))
    fail("cannot create a temporary directory: " + ec.message(), "");
  outputDir = dir.str().str();
}

FuzzCompiler::~FuzzCompiler() { llvm::sys::fs::remove_directories(outputDir); }

void FuzzCompiler::compile(StringRef source,
                           const FuzzPipelineOptions &options) {
  bool script = source.contains("transform.fat.");
  MLIRContext ctx(script ? scriptRegistry : inputRegistry,
                  MLIRContext::Threading::DISABLED);
  std::string diagnostics;
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &diag) {
    llvm::raw_string_ostream os(diagnostics);
    os << diag.getLocation() << ": " << diag << "\n";
    for (const Diagnostic &note : diag.getNotes())
      os << "  note: " << note << "\n";
    if (verbose)
      llvm::errs() << diag.getLocation() << ": " << diag << "\n";
    return success();
  });

  // Text that crashes MLIR 22's linalg parsers is refused as fa-t-opt
  // refuses it (InputChecks.h): not ours to fix, so not fuzzed.
  if (findLinalgArrayHazard(source))
    return;
  // A copy, so that the lexer sees a NUL-terminated buffer.
  std::string text = source.str();
  ParserConfig config(&ctx, /*verifyAfterParse=*/true);
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, config);
  if (!module)
    return;

  // What verifies must print and parse back to IR that verifies.
  std::string printed;
  {
    llvm::raw_string_ostream os(printed);
    module->print(os);
  }
  if (!parseSourceString<ModuleOp>(printed, config))
    fail("the printed module does not parse back:\n" + printed, diagnostics);
  if (hasNonStridedMemRef(*module))
    return;

  ctx.appendDialectRegistry(toolRegistry);
  // The raising runs on the linalg chains of the seeds (and what the
  // mutations make of them), alone and followed by the CPU lowering of the
  // fat.attention it raised.
  // The tensorized level: tiled, tensorized and lowered for the CPU.
  std::string tensorized = "fat-tile{" + options.tile + "},fat-tensorize{" +
                           options.tensorize + "},fat-to-cpu";
  const std::pair<StringRef, std::string> scriptPipelines[] = {
      {"transform-interpreter", ""}};
  const std::pair<StringRef, std::string> inputPipelines[] = {
      {"fat-tile", options.tile},
      {tensorized, options.cpu},
      {"fat-to-cpu", options.cpu},
      {"fat-to-ptx", options.ptx + " output-dir=" + outputDir},
      // The pipelined kernel's ops written by hand (the kernel-ops seeds).
      {"convert-fat-to-nvvm", ""},
      {"fat-raise-attention", "remarks=1"},
      {"fat-raise-attention,fat-to-cpu", options.cpu}};
  for (const auto &[name, opts] :
       script ? ArrayRef(scriptPipelines) : ArrayRef(inputPipelines)) {
    std::string pipeline = (name + "{" + opts + "}").str();
    if (verbose)
      llvm::errs() << "fa-t-fuzz: running " << pipeline << "\n";
    PassManager pm(&ctx);
    pm.enableVerifier(false);
    pm.addInstrumentation(std::make_unique<AbortOnInvalidIR>(diagnostics));
    std::string parseErrors;
    llvm::raw_string_ostream errs(parseErrors);
    if (failed(parsePassPipeline(pipeline, pm, errs))) {
      if (verbose)
        llvm::errs() << parseErrors << "\n";
      continue;
    }
    OwningOpRef<ModuleOp> copy = module->clone();
    (void)pm.run(*copy);
  }
  clearDirectory(outputDir);
}

FuzzCompiler &mlir::fat::getFuzzCompiler() {
  static FuzzCompiler compiler;
  return compiler;
}
