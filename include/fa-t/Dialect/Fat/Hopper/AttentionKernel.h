//===- AttentionKernel.h - the Hopper attention kernel builder --*- C++ -*-===//
//
// Builds the warp-specialized FlashAttention kernel for sm_90a (TMA +
// mbarrier ring, wgmma for both GEMMs, online softmax in registers) in the
// pipelined form that --fat-pipeline writes and --convert-fat-to-nvvm
// lowers.
//
//===----------------------------------------------------------------------===//
#ifndef FAT_DIALECT_FAT_HOPPER_ATTENTIONKERNEL_H
#define FAT_DIALECT_FAT_HOPPER_ATTENTIONKERNEL_H

#include "fa-t/Dialect/Fat/Hopper/KernelModel.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir {
namespace fat {

/// Builds `gpu.module @<config.kernelName()>` holding the kernel as an
/// `llvm.func` in the pipelined form (NVVM ops and FatKernelOps.td's), at
/// the end of `parent`.
gpu::GPUModuleOp buildAttentionKernelModule(OpBuilder &builder, Location loc,
                                            ModuleOp parent,
                                            const AttentionKernelConfig &config);

/// Registers what gpu-module-to-binary needs to serialize the kernels:
/// the #nvvm.target interface and the LLVM IR translations of the dialects
/// a kernel holds (a tool that registers only the dialects of its input
/// would otherwise fail in serialization, e.g. when the tail of --fat-to-ptx
/// runs alone on printed IR).
void registerKernelTranslations(DialectRegistry &registry);

} // namespace fat
} // namespace mlir

#endif // FAT_DIALECT_FAT_HOPPER_ATTENTIONKERNEL_H
