//===- EmitKernels.cpp - fat-emit-kernels ---------------------------------===//
//
// Writes the PTX of each fat kernel and its manifest next to it. Runs after
// gpu-module-to-binary{format=isa}, whose gpu.binary object holds the PTX
// text (the escapes MLIR prints are only in the textual IR; the attribute
// holds the raw bytes).
//
//===----------------------------------------------------------------------===//

#include "fa-t/Conversion/FatToNVVM/FatToNVVM.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir {
namespace fat {
#define GEN_PASS_DEF_FATEMITKERNELS
#include "fa-t/Conversion/FatToNVVM/Passes.h.inc"
} // namespace fat
} // namespace mlir

using namespace mlir;
using namespace mlir::fat;

/// Writes `text` to `path`, reporting failures at `loc`.
static LogicalResult writeFile(Location loc, StringRef path, StringRef text) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_Text);
  if (ec)
    return emitError(loc) << "cannot write '" << path << "': " << ec.message();
  os << text;
  return success();
}

/// `manifest` (`fresh` is its JSON), unless `path` already holds the
/// manifest of the same kernel chosen by the cost model ("forced": false)
/// and this build forced it (an ablation variant that happens to be the
/// cost model's choice): the code is the same, and the kernel stays marked
/// as the cost model's, which is what kernel lookup prefers
/// (docs/kernel-abi.md, Schedule).
static std::string keepCostModelProvenance(StringRef path, StringRef manifest,
                                           llvm::json::Value &fresh) {
  auto isForced = [](const llvm::json::Value &v) -> std::optional<bool> {
    const llvm::json::Object *o = v.getAsObject();
    const llvm::json::Object *s = o ? o->getObject("schedule") : nullptr;
    return s ? s->getBoolean("forced") : std::nullopt;
  };
  if (isForced(fresh) != std::optional<bool>(true))
    return manifest.str();
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> old =
      llvm::MemoryBuffer::getFile(path);
  if (!old)
    return manifest.str();
  llvm::Expected<llvm::json::Value> previous =
      llvm::json::parse((*old)->getBuffer());
  if (!previous) {
    llvm::consumeError(previous.takeError());
    return manifest.str();
  }
  if (isForced(*previous) != std::optional<bool>(false))
    return manifest.str();
  (*fresh.getAsObject()->getObject("schedule"))["forced"] = false;
  return llvm::formatv("{0:2}", fresh).str();
}

namespace {
struct FatEmitKernelsPass
    : public fat::impl::FatEmitKernelsBase<FatEmitKernelsPass> {
  using Base::Base;

  void runOnOperation() override {
    if (outputDir.empty())
      return;
    ModuleOp top = getOperation();
    Attribute kernels = top->getAttr("fat.kernels");
    if (!kernels)
      return;
    // fat.kernels is fat-pipeline's, but IR can be written by hand:
    // every kernel is checked before a file is written.
    auto manifests = dyn_cast<DictionaryAttr>(kernels);
    if (!manifests) {
      top.emitError() << "'fat.kernels' must be a dictionary from kernel "
                         "name to its manifest (a JSON string), got "
                      << kernels;
      return signalPassFailure();
    }
    struct Kernel {
      StringRef name, ptx, manifest;
      Location loc;
      llvm::json::Value json;
    };
    SmallVector<Kernel> found;
    for (NamedAttribute entry : manifests) {
      StringRef name = entry.getName().getValue();
      auto text = dyn_cast<StringAttr>(entry.getValue());
      if (!text) {
        top.emitError() << "kernel '" << name
                        << "': its manifest must be a JSON string, got "
                        << entry.getValue();
        return signalPassFailure();
      }
      llvm::Expected<llvm::json::Value> json =
          llvm::json::parse(text.getValue());
      if (!json) {
        top.emitError() << "kernel '" << name << "': its manifest is not JSON: "
                        << llvm::toString(json.takeError());
        return signalPassFailure();
      }
      auto binary = SymbolTable::lookupNearestSymbolFrom<gpu::BinaryOp>(
          top, entry.getName());
      if (!binary) {
        top.emitError() << "kernel '" << name
                        << "' has no gpu.binary: run gpu-module-to-binary "
                           "{format=isa} before fat-emit-kernels";
        return signalPassFailure();
      }
      auto object = dyn_cast<gpu::ObjectAttr>(binary.getObjects()[0]);
      if (!object || object.getFormat() != gpu::CompilationTarget::Assembly) {
        binary.emitError() << "kernel '" << name
                           << "' was not serialized as PTX (format=isa)";
        return signalPassFailure();
      }
      found.push_back({name, object.getObject().getValue(), text.getValue(),
                       binary.getLoc(), std::move(*json)});
    }
    if (std::error_code ec = llvm::sys::fs::create_directories(outputDir)) {
      top.emitError() << "cannot create output directory '" << outputDir
                      << "': " << ec.message();
      return signalPassFailure();
    }
    // create_directories accepts an existing file of that name.
    if (!llvm::sys::fs::is_directory(outputDir)) {
      top.emitError() << "output-dir '" << outputDir
                      << "' exists and is not a directory";
      return signalPassFailure();
    }
    for (Kernel &kernel : found) {
      SmallString<256> ptxPath(outputDir), jsonPath(outputDir);
      llvm::sys::path::append(ptxPath, kernel.name + ".ptx");
      llvm::sys::path::append(jsonPath, kernel.name + ".json");
      std::string manifest =
          keepCostModelProvenance(jsonPath, kernel.manifest, kernel.json);
      if (failed(writeFile(kernel.loc, ptxPath, kernel.ptx)) ||
          failed(writeFile(kernel.loc, jsonPath, manifest + "\n")))
        return signalPassFailure();
    }
  }
};
} // namespace
