//===- FatToPTX.cpp - C API of the fat-to-ptx pipeline --------------------===//
//
// fatCompileModuleToPTX runs the registered `fat-to-ptx` pipeline (the one
// fa-t-opt runs, without `output-dir`) on a copy of the module and hands each
// kernel's PTX, read from its gpu.binary, and manifest, read from the module
// attribute `fat.kernels`, to the caller.
//
//===----------------------------------------------------------------------===//

#include "fa-t-c/Conversion/FatToPTX.h"
#include "fa-t-c/Dialect/Fat.h"

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Support.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>

using namespace mlir;

/// Name of the module attribute (a dictionary: kernel name -> manifest JSON)
/// that fat-pipeline records (docs/kernel-abi.md).
static constexpr llvm::StringLiteral kKernelsAttrName = "fat.kernels";

/// Writes `diag` as `<file>:<line>:<col>: <severity>: <message>`, then its
/// notes, one line each, as mlir-opt prints them.
static std::string formatDiagnostic(Diagnostic &diag) {
  std::string text;
  llvm::raw_string_ostream os(text);
  auto print = [&os](Diagnostic &d) {
    if (auto file = d.getLocation()->findInstanceOf<FileLineColLoc>())
      os << file.getFilename().getValue() << ":" << file.getLine() << ":"
         << file.getColumn() << ": ";
    else
      os << d.getLocation() << ": ";
    switch (d.getSeverity()) {
    case DiagnosticSeverity::Error:
      os << "error: ";
      break;
    case DiagnosticSeverity::Warning:
      os << "warning: ";
      break;
    case DiagnosticSeverity::Remark:
      os << "remark: ";
      break;
    case DiagnosticSeverity::Note:
      os << "note: ";
      break;
    }
    os << d << "\n";
  };
  print(diag);
  for (Diagnostic &note : diag.getNotes())
    print(note);
  return text;
}

MlirLogicalResult fatCompileModuleToPTX(MlirModule module,
                                        MlirStringRef options,
                                        FatKernelCallback kernelCallback,
                                        MlirStringCallback diagnosticCallback,
                                        void *userData) {
  fatRegisterAllPasses();
  ModuleOp source = unwrap(module);
  MLIRContext *ctx = source.getContext();

  auto report = [&](llvm::StringRef text) {
    if (diagnosticCallback)
      diagnosticCallback(wrap(text), userData);
  };
  std::optional<ScopedDiagnosticHandler> handler;
  if (diagnosticCallback)
    handler.emplace(ctx, [&](Diagnostic &diag) {
      report(formatDiagnostic(diag));
      return success();
    });

  PassManager pm(ctx, ModuleOp::getOperationName());
  std::string pipeline = ("fat-to-ptx{" + unwrap(options) + "}").str();
  std::string parseError;
  llvm::raw_string_ostream parseErrorStream(parseError);
  if (failed(parsePassPipeline(pipeline, pm, parseErrorStream))) {
    report("error: invalid fat-to-ptx options '" + unwrap(options).str() +
           "': " + parseError + "\n");
    return mlirLogicalResultFailure();
  }

  OwningOpRef<ModuleOp> copy(source.clone());
  if (failed(pm.run(*copy)))
    return mlirLogicalResultFailure();

  // Each kernel is a gpu.binary (format=isa: its object is the PTX text)
  // named like its manifest entry; other gpu.binary ops are not ours.
  auto manifests = (*copy)->getAttrOfType<DictionaryAttr>(kKernelsAttrName);
  if (!manifests)
    return mlirLogicalResultSuccess();
  for (auto binary : copy->getOps<gpu::BinaryOp>()) {
    auto manifest = manifests.getAs<StringAttr>(binary.getName());
    if (!manifest)
      continue;
    auto object = dyn_cast<gpu::ObjectAttr>(binary.getObjects()[0]);
    if (!object || object.getFormat() != gpu::CompilationTarget::Assembly) {
      binary.emitError() << "kernel '" << binary.getName()
                         << "' was not serialized as PTX (format=isa)";
      return mlirLogicalResultFailure();
    }
    if (kernelCallback)
      kernelCallback(wrap(binary.getName()),
                     wrap(object.getObject().getValue()),
                     wrap(manifest.getValue()), userData);
  }
  return mlirLogicalResultSuccess();
}
