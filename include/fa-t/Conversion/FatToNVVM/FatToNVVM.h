//===- FatToNVVM.h - the pipelined kernel to NVVM, fat-to-ptx ---*- C++ -*-===//
//
// The last steps of the GPU path: --convert-fat-to-nvvm lowers the fat ops
// of the pipelined kernel (FatKernelOps.td) to NVVM, --fat-emit-kernels
// writes each serialized kernel with its launch manifest
// (docs/kernel-abi.md), and `fat-to-ptx` is the whole pipeline.
//
//===----------------------------------------------------------------------===//
#ifndef FAT_CONVERSION_FATTONVVM_FATTONVVM_H
#define FAT_CONVERSION_FATTONVVM_FATTONVVM_H

#include "fa-t/Dialect/Fat/IR/FatOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir {
namespace fat {

/// Key blocks ahead that a region's reads moving with the key bring into L1
/// unless told otherwise (`capture-prefetch`): one, +4…6% for a D = 128
/// relative bias table, ±1% where the loads were not waiting (perf log,
/// run 117); two gain nothing more.
constexpr int64_t kDefaultCapturePrefetch = 1;
/// The most blocks ahead: lines fetched further ahead leave L1 (~28 KB
/// beside the kernels' shared memory) before their block comes.
constexpr int64_t kMaxCapturePrefetch = 8;

#define GEN_PASS_DECL
#include "fa-t/Conversion/FatToNVVM/Passes.h.inc"

/// The patterns of `--convert-fat-to-nvvm`: one per op of FatKernelOps.td
/// (warp specialization, wgmma issue and wait, operand and scheduling
/// fences) to NVVM/LLVM, tiles given as registers by `converter`.
void populateFatKernelToNVVMPatterns(const TypeConverter &converter,
                                     RewritePatternSet &patterns);

/// Expands every `fat.tile_loop` under `root` into its integer arithmetic
/// around an `scf.for` / `scf.while` (tagged `fat.tiles`), the body inlined:
/// before the type conversion, so that the loops carrying tiles convert as
/// any scf loop does.
void expandTileLoops(Operation *root);

/// `!fat.ring` to its value after conversion, the shared-memory base
/// (`!llvm.ptr<3>`).
void populateRingTypeConversion(TypeConverter &converter);

/// The 1:N type conversion of `#fat.wgmma_fragment` tiles to one thread's
/// registers (N/2 f32, N/4 i32 pairs of 16-bit values, 2 f32 for a row
/// vector), other types unchanged; casts materialize the boundary.
void populateWgmmaFragmentTypeConversion(TypeConverter &converter);
/// Marks the tile ops on fragments illegal (the softmax ops, fat.rescale,
/// fat.mask, arith.truncf and arith.constant of a fragment).
void configureWgmmaFragmentLegality(ConversionTarget &target);
/// How the kernel computes math.tanh: `tanh.approx` where the op has the
/// afn flag (Auto), always (Approx), or on MUFU ex2 + rcp (Precise).
enum class TanhForm { Auto, Approx, Precise };

/// One pattern per tile op on fragments (its math on the registers), and
/// the kernel's own forms of the scalar math a modification's body uses
/// (math.exp, math.absf, math.tanh by `tanh`). A region's reads that move
/// with the key bring the cache lines of the key block `prefetchBlocks`
/// ahead into L1 (0: none; Passes.td, `capture-prefetch`).
void populateWgmmaFragmentToNVVMPatterns(
    const TypeConverter &converter, RewritePatternSet &patterns,
    TanhForm tanh = TanhForm::Auto,
    int64_t prefetchBlocks = kDefaultCapturePrefetch);

/// Moves each tile's versioned reads of captured tensors by a score region
/// (ModFragmentLowering: invariant loads, their prefetches and addresses)
/// from after a `wgmma.wait_group` to the earliest point of its block — right
/// after the last op whose results they read, in the key loop's step its top
/// — with the arithmetic after the wait that they need, so the loads are in
/// flight through the step's waits and the GEMMs (`capture-reads=early`,
/// Passes.td). Runs after the tiles are registers; the fences that validate
/// the waited registers, and anything else with a memory effect, stay
/// where they are.
void issueCaptureReadsEarly(Operation *root);

/// Registers the `fat-to-ptx` pipeline.
void registerFatToPTXPipeline();

#define GEN_PASS_REGISTRATION
#include "fa-t/Conversion/FatToNVVM/Passes.h.inc"

} // namespace fat
} // namespace mlir

#endif // FAT_CONVERSION_FATTONVVM_FATTONVVM_H
