//===- FatToPTX.cpp - the fat-to-ptx pipeline -----------------------------===//
//
// fat.attention -> tiles (fat-tile) -> warpgroup-MMA form (fat-tensorize)
// -> pipelined Hopper kernel + fat.launch (fat-pipeline) -> its fat ops to
// NVVM (convert-fat-to-nvvm) -> LLVM/NVVM inside the gpu.module -> PTX
// (gpu-module-to-binary{format=isa}) -> <name>.ptx and <name>.json in
// output-dir (fat-emit-kernels). The pass list inside the gpu.module is the
// one checked on the H200.
//
//===----------------------------------------------------------------------===//

#include "fa-t/Conversion/FatToNVVM/FatToNVVM.h"
#include "fa-t/Dialect/Fat/Hopper/KernelModel.h"
#include "fa-t/Dialect/Fat/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace {
struct FatToPTXOptions : PassPipelineOptions<FatToPTXOptions> {
  Option<std::string> sm{*this, "sm", llvm::cl::init("sm_90a"),
                         llvm::cl::desc("Target architecture (sm_90a)")};
  Option<int64_t> blockM{
      *this, "block-m", llvm::cl::init(0),
      llvm::cl::desc("Query rows per CTA (64, 128 or 192; 0 = by head dim and mask)")};
  Option<int64_t> blockN{
      *this, "block-n", llvm::cl::init(0),
      llvm::cl::desc("Keys per KV block (64 to 192 in steps of 16; 0 = by head dim)")};
  Option<int64_t> qBuffers{
      *this, "q-buffers", llvm::cl::init(0),
      llvm::cl::desc("Q buffers (1, or 2 for persistent kernels; 0 = 2 where they fit)")};
  Option<int64_t> seqLen{
      *this, "seq-len", llvm::cl::init(0),
      llvm::cl::desc("Key-sequence length to tune the default tiles for "
                     "(0 = the op's static key length, if any)")};
  Option<int64_t> stages{
      *this, "stages", llvm::cl::init(0),
      llvm::cl::desc("Depth of the K/V ring (1..4; 0 = the op's fat.schedule "
                     "entry, else 2)")};
  Option<int64_t> ptx{*this, "ptx", llvm::cl::init(80),
                      llvm::cl::desc("PTX ISA version (80 = 8.0)")};
  Option<std::string> overlap{
      *this, "overlap", llvm::cl::init("auto"),
      llvm::cl::desc("Intra-warpgroup overlap: auto, on or off (fat-pipeline)")};
  Option<std::string> pingpong{
      *this, "pingpong", llvm::cl::init("auto"),
      llvm::cl::desc("Warpgroup ping-pong: auto, on or off (fat-pipeline)")};
  Option<std::string> persistent{
      *this, "persistent", llvm::cl::init("auto"),
      llvm::cl::desc("Persistent CTAs with a tile loop: auto, on or off "
                     "(fat-pipeline)")};
  Option<std::string> tileOverlap{
      *this, "tile-overlap", llvm::cl::init("auto"),
      llvm::cl::desc("A tile's last P·V issued with the next tile's first "
                     "Q·K^T: auto, on or off (fat-pipeline)")};
  Option<std::string> tileScheduler{
      *this, "tile-scheduler", llvm::cl::init("auto"),
      llvm::cl::desc("How persistent CTAs find their tiles: auto (dynamic "
                     "for data-dependent key blocks), static or dynamic (a "
                     "counter in global memory; fat-pipeline)")};
  Option<std::string> oStore{
      *this, "o-store", llvm::cl::init("auto"),
      llvm::cl::desc("How the epilogue writes O: auto, staged (through "
                     "shared memory) or direct (from registers)")};
  Option<std::string> pvWait{
      *this, "pv-wait", llvm::cl::init("auto"),
      llvm::cl::desc("Where the overlapped loop waits for P·V: auto, late "
                     "(after the softmax, fenced) or early (ptxas's place)")};
  Option<std::string> tailSplit{
      *this, "tail-split", llvm::cl::init("auto"),
      llvm::cl::desc("The steady loop's blocks below the first masked one "
                     "in a copy without the mask test: auto, on or off")};
  Option<std::string> maskForm{
      *this, "mask-form", llvm::cl::init("auto"),
      llvm::cl::desc("How masked blocks compare keys: auto, rows (per-row "
                     "limits) or keys (per-key bounds)")};
  Option<int64_t> numSMs{
      *this, "num-sms", llvm::cl::init(132),
      llvm::cl::desc("SMs of the target (persistent kernels' grid)")};
  Option<std::string> rowMax{
      *this, "row-max", llvm::cl::init("auto"),
      llvm::cl::desc("The softmax reference: auto, online (the running row "
                     "maximum) or bound (a bounded score region's bound; "
                     "fat-tensorize)")};
  Option<std::string> rowsum{
      *this, "rowsum", llvm::cl::init("auto"),
      llvm::cl::desc("Row sums: auto, vector or mma (fat-tensorize)")};
  Option<std::string> linearBias{
      *this, "linear-bias", llvm::cl::init("auto"),
      llvm::cl::desc("A score region s + G·(j − i): auto, vector, mma "
                     "(Q·Kᵀ's extra k16 step) or weights (weights on P; "
                     "fat-tensorize)")};
  Option<std::string> relativeBias{
      *this, "relative-bias", llvm::cl::init("auto"),
      llvm::cl::desc("fat-tensorize relative-bias: a score region s ± "
                     "T(b, h, j − i) as Q·Kᵀ's accumulator (accumulator), per "
                     "score (vector), or auto")};
  Option<std::string> rescale{
      *this, "rescale", llvm::cl::init("auto"),
      llvm::cl::desc("Rescale: auto, always or lazy (fat-tensorize)")};
  Option<double> rescaleThreshold{
      *this, "rescale-threshold", llvm::cl::init(8.0),
      llvm::cl::desc("Lazy-rescale threshold, log2 units")};
  Option<std::string> exp2Poly{
      *this, "exp2-poly", llvm::cl::init("auto"),
      llvm::cl::desc("Fraction of exponentials on the FMA pipe: auto or "
                     "0..1 (fat-tensorize)")};
  Option<std::string> tanhPoly{
      *this, "tanh-poly", llvm::cl::init("auto"),
      llvm::cl::desc("A score region's tanh on the FMA pipe where a warp's "
                     "arguments allow: auto, on or off (fat-tensorize)")};
  Option<std::string> tanh{
      *this, "tanh", llvm::cl::init("auto"),
      llvm::cl::desc("The kernel's tanh: auto, approx or precise "
                     "(convert-fat-to-nvvm)")};
  Option<int64_t> capturePrefetch{
      *this, "capture-prefetch", llvm::cl::init(fat::kDefaultCapturePrefetch),
      llvm::cl::desc(
          "Key blocks ahead that a region's reads moving with the "
          "key prefetch into L1, 0 (none) to 8 (convert-fat-to-nvvm)")};
  Option<std::string> captureReads{
      *this, "capture-reads", llvm::cl::init("early"),
      llvm::cl::desc("Where a score region's reads of captured tensors are "
                     "issued: early (at the top of their block) or late "
                     "(convert-fat-to-nvvm)")};
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
  // The level diagram of docs/architecture.md: the tiles (the kernel's
  // blocks), the FlashAttention-T primitives rewritten onto warpgroup MMA,
  // then the asynchronous schedule, which builds the kernel in its
  // pipelined form from the tensorized loop; convert-fat-to-nvvm lowers
  // that form's own ops. Each option goes to the one pass that decides it.
  fat::FatTileOptions tile;
  tile.blockM = opts.blockM;
  tile.blockN = opts.blockN;
  tile.stages = opts.stages;
  tile.seqLen = opts.seqLen;
  pm.addPass(fat::createFatTile(tile));
  fat::FatTensorizeOptions tensorize;
  tensorize.rowsum = opts.rowsum;
  tensorize.rowMax = opts.rowMax;
  tensorize.linearBias = opts.linearBias;
  tensorize.relativeBias = opts.relativeBias;
  tensorize.rescale = opts.rescale;
  tensorize.rescaleThreshold = opts.rescaleThreshold;
  tensorize.exp2Poly = opts.exp2Poly;
  tensorize.tanhPoly = opts.tanhPoly;
  pm.addPass(fat::createFatTensorize(tensorize));
  fat::FatPipelineOptions pipeline;
  pipeline.overlap = opts.overlap;
  pipeline.pingpong = opts.pingpong;
  pipeline.persistent = opts.persistent;
  pipeline.tileOverlap = opts.tileOverlap;
  pipeline.tileScheduler = opts.tileScheduler;
  pipeline.sm = opts.sm;
  pipeline.qBuffers = opts.qBuffers;
  pipeline.ptxVersion = opts.ptx;
  pipeline.numSMs = opts.numSMs;
  pipeline.oStore = opts.oStore;
  pipeline.pvWait = opts.pvWait;
  pipeline.tailSplit = opts.tailSplit;
  pipeline.maskForm = opts.maskForm;
  pm.addPass(fat::createFatPipeline(pipeline));
  fat::ConvertFatToNVVMOptions toNVVM;
  toNVVM.tanh = opts.tanh;
  toNVVM.capturePrefetch = opts.capturePrefetch;
  toNVVM.captureReads = opts.captureReads;
  pm.addPass(fat::createConvertFatToNVVM(toNVVM));
  appendPipeline(pm, "gpu.module(convert-scf-to-cf,convert-nvvm-to-llvm,"
                     "convert-gpu-to-nvvm{index-bitwidth=32},reconcile-unrealized-casts,"
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

/// Checks the options that the pipeline splices into nvvm-attach-target
/// (chip, +ptx<N> feature, O); fat-pipeline checks the kernel's own
/// options at each op. Without this, a value the pass text cannot hold
/// (sm='a}b', O=-1) was a fatal error, and an unknown PTX version an LLVM
/// warning and PTX of the wrong .version.
static LogicalResult checkFatToPTXOptions(
    const FatToPTXOptions &opts,
    function_ref<LogicalResult(const Twine &)> errorHandler) {
  if (opts.sm != "sm_90a")
    return errorHandler("fat-to-ptx: sm = '" + opts.sm +
                        "' is not supported; supported: sm_90a (the Hopper "
                        "kernel needs wgmma and setmaxnreg)");
  if (!fat::isSupportedPTXVersion(opts.ptx))
    return errorHandler("fat-to-ptx: ptx = " + Twine(opts.ptx) +
                        " is not supported; supported: " +
                        fat::kSupportedPTXVersions +
                        " (PTX ISA 8.0 and newer, as far as LLVM's NVPTX "
                        "backend knows them)");
  if (opts.optLevel < 0 || opts.optLevel > 3)
    return errorHandler("fat-to-ptx: O = " + Twine(opts.optLevel) +
                        " is not supported; supported: 0 to 3");
  return success();
}

void mlir::fat::registerFatToPTXPipeline() {
  registerPassPipeline(
      "fat-to-ptx",
      "Compile every fat.attention to a Hopper PTX kernel and its launch "
      "manifest: fat-tile, fat-tensorize, fat-pipeline, convert-fat-to-nvvm, "
      "NVVM/LLVM "
      "lowering in the gpu.module, "
      "nvvm-attach-target, gpu-module-to-binary{format=isa}, "
      "fat-emit-kernels",
      [](OpPassManager &pm, StringRef text,
         function_ref<LogicalResult(const Twine &)> errorHandler) {
        FatToPTXOptions opts;
        if (failed(opts.parseFromString(text)) ||
            failed(checkFatToPTXOptions(opts, errorHandler)))
          return failure();
        buildFatToPTXPipeline(pm, opts);
        return success();
      },
      [](function_ref<void(const mlir::detail::PassOptions &)> optHandler) {
        optHandler(FatToPTXOptions());
      });
}
