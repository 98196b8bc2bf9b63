//===- Pipelines.cpp - named pipelines (fat-to-cpu) -----------------------===//
//
// `fat-to-cpu` is the reference lowering: fat.attention -> tiled online
// softmax -> linalg -> bufferized loops -> LLVM dialect for the host. Its
// output is what `mlir-runner` executes and what the CPU numerics suite
// compiles to a shared object.
//
//===----------------------------------------------------------------------===//

#include "fa-t/Dialect/Fat/Transforms/Passes.h"

#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace {
struct FatToCPUOptions : PassPipelineOptions<FatToCPUOptions> {
  Option<int64_t> blockM{
      *this, "block-m", llvm::cl::init(128),
      llvm::cl::desc("Query rows per tile (0 = the Hopper kernel's)")};
  Option<int64_t> blockN{
      *this, "block-n", llvm::cl::init(128),
      llvm::cl::desc("Keys per inner-loop iteration (0 = the Hopper "
                     "kernel's)")};
};

/// Appends a textual pipeline; the upstream pass names are the stable API.
LogicalResult appendPipeline(OpPassManager &pm, StringRef text) {
  std::string err;
  llvm::raw_string_ostream os(err);
  if (failed(parsePassPipeline(text, pm, os))) {
    llvm::errs() << "fat-to-cpu: bad pipeline '" << text << "': " << err << "\n";
    return failure();
  }
  return success();
}

void buildFatToCPUPipeline(OpPassManager &pm, const FatToCPUOptions &opts) {
  fat::FatTileOptions tile;
  tile.blockM = opts.blockM;
  tile.blockN = opts.blockN;
  // The pipeline bufferizes the whole module: refuse the reshapes that
  // MLIR 22 verifies but cannot bufferize first (fat-check-reshapes).
  pm.addPass(fat::createFatCheckReshapes());
  pm.addPass(fat::createFatTile(tile));
  pm.addPass(fat::createFatDecompose());
  (void)appendPipeline(
      pm, "convert-elementwise-to-linalg,canonicalize,cse,"
          "one-shot-bufferize{bufferize-function-boundaries=1 "
          "function-boundary-type-conversion=identity-layout-map "
          "allow-return-allocs-from-loops=1},"
          "canonicalize");
  bufferization::BufferDeallocationPipelineOptions dealloc;
  bufferization::buildBufferDeallocationPipeline(pm, dealloc);
  (void)appendPipeline(
      pm, "convert-linalg-to-loops,scf-forall-to-for,lower-affine,"
          "convert-scf-to-cf,expand-strided-metadata,lower-affine,"
          "finalize-memref-to-llvm,convert-math-to-llvm,convert-arith-to-llvm,"
          "convert-index-to-llvm,convert-func-to-llvm,convert-cf-to-llvm,"
          "reconcile-unrealized-casts,canonicalize");
}
} // namespace

void mlir::fat::registerFatPipelines() {
  PassPipelineRegistration<FatToCPUOptions>(
      "fat-to-cpu",
      "Lower fat.attention to LLVM for the host CPU (the reference path): "
      "fat-check-reshapes, fat-tile, fat-decompose, one-shot-bufferize, "
      "loops, LLVM",
      buildFatToCPUPipeline);
}
