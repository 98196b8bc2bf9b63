//===- Pipeline.cpp - the fat-to-ptx pipeline -----------------------------===//
//
// fat.attention -> Hopper kernel (convert-fat-to-nvvm) -> LLVM/NVVM inside
// the gpu.module -> PTX (gpu-module-to-binary{format=isa}) -> <name>.ptx and
// <name>.json in output-dir (fat-emit-kernels). The pass list inside the
// gpu.module is the one checked on the H200 (shared/HOPPER-NOTES.md, C).
//
//===----------------------------------------------------------------------===//

#include "fa-t/Conversion/FatToNVVM/FatToNVVM.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace {
struct FatToPTXOptions : PassPipelineOptions<FatToPTXOptions> {
  Option<std::string> sm{*this, "sm", llvm::cl::init("sm_90a"),
                         llvm::cl::desc("Target architecture (sm_90a)")};
  Option<int64_t> blockM{*this, "block-m", llvm::cl::init(128),
                         llvm::cl::desc("Query rows per CTA (64 or 128)")};
  Option<int64_t> blockN{
      *this, "block-n", llvm::cl::init(0),
      llvm::cl::desc("Keys per KV block (64 or 128; 0 = by head dim)")};
  Option<int64_t> stages{*this, "stages", llvm::cl::init(2),
                         llvm::cl::desc("Depth of the K/V ring (1..4)")};
  Option<int64_t> ptx{*this, "ptx", llvm::cl::init(80),
                      llvm::cl::desc("PTX ISA version (80 = 8.0)")};
  Option<bool> overlap{
      *this, "overlap", llvm::cl::init(true),
      llvm::cl::desc("Intra-warpgroup overlap of softmax and P·V")};
  Option<bool> pingpong{
      *this, "pingpong", llvm::cl::init(false),
      llvm::cl::desc("Consumer warpgroups take turns issuing GEMMs")};
  Option<int64_t> optLevel{*this, "O", llvm::cl::init(3),
                           llvm::cl::desc("LLVM optimization level")};
  Option<std::string> outputDir{
      *this, "output-dir", llvm::cl::init(""),
      llvm::cl::desc("Directory for <name>.ptx and <name>.json")};
};

/// Appends a textual pipeline; upstream pass names are the stable API.
void appendPipeline(OpPassManager &pm, StringRef text) {
  std::string err;
  llvm::raw_string_ostream os(err);
  if (failed(parsePassPipeline(text, pm, os)))
    llvm::report_fatal_error(llvm::Twine("fat-to-ptx: bad pipeline '") +
                             text + "': " + err);
}

void buildFatToPTXPipeline(OpPassManager &pm, const FatToPTXOptions &opts) {
  fat::ConvertFatToNVVMOptions convert;
  convert.sm = opts.sm;
  convert.blockM = opts.blockM;
  convert.blockN = opts.blockN;
  convert.stages = opts.stages;
  convert.ptxVersion = opts.ptx;
  convert.overlap = opts.overlap;
  convert.pingpong = opts.pingpong;
  pm.addPass(fat::createConvertFatToNVVM(convert));
  appendPipeline(pm, "gpu.module(convert-scf-to-cf,convert-nvvm-to-llvm,"
                     "convert-gpu-to-nvvm,reconcile-unrealized-casts,"
                     "canonicalize,cse)");
  std::string chip = opts.sm;
  appendPipeline(pm, "nvvm-attach-target{chip=" + chip + " features=+ptx" +
                         std::to_string(opts.ptx) +
                         " O=" + std::to_string(opts.optLevel) + "}");
  appendPipeline(pm, "gpu-module-to-binary{format=isa}");
  fat::FatEmitKernelsOptions emit;
  emit.outputDir = opts.outputDir;
  pm.addPass(fat::createFatEmitKernels(emit));
}
} // namespace

void mlir::fat::registerFatToPTXPipeline() {
  PassPipelineRegistration<FatToPTXOptions>(
      "fat-to-ptx",
      "Compile every fat.attention to a Hopper PTX kernel and its launch "
      "manifest: convert-fat-to-nvvm, NVVM/LLVM lowering in the gpu.module, "
      "nvvm-attach-target, gpu-module-to-binary{format=isa}, "
      "fat-emit-kernels",
      buildFatToPTXPipeline);
}
