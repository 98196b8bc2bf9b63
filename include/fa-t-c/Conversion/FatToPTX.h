/*===- FatToPTX.h - C API of the fat-to-ptx pipeline --------------*- C -*-===*\
|*                                                                            *|
|* Compiles the fat.attention ops of a module to Hopper PTX kernels and their *|
|* launch manifests (docs/kernel-abi.md) in memory: the `fat-to-ptx` pipeline *|
|* of fa-t-opt, without files.                                                *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/
#ifndef FAT_C_CONVERSION_FATTOPTX_H
#define FAT_C_CONVERSION_FATTOPTX_H

#include "mlir-c/IR.h"
#include "mlir-c/Support.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Receives one compiled kernel: `name` (its PTX entry symbol, also the file
/// stem `fat-emit-kernels` writes), its PTX text and its launch manifest
/// (JSON). The strings are valid only during the call.
typedef void (*FatKernelCallback)(MlirStringRef name, MlirStringRef ptx,
                                  MlirStringRef manifest, void *userData);

/// Compiles every fat.attention of `module` with the `fat-to-ptx` pipeline
/// and calls `kernelCallback` once for each distinct kernel (attention ops
/// with equal configurations share one). `options` are the pipeline's
/// options as on the command line, e.g. "sm=sm_90a block-m=128 block-n=128
/// stages=2 ptx=80"; empty for the defaults. `module` itself is not changed:
/// a copy is compiled.
///
/// Diagnostics (errors, warnings, remarks, each with its location and notes)
/// are passed as text to `diagnosticCallback`, one call per diagnostic, when
/// it is not NULL; otherwise they reach the context's handlers. `userData`
/// is passed to both callbacks. Returns failure when the options do not
/// parse or an attention cannot be compiled for the target.
MLIR_CAPI_EXPORTED MlirLogicalResult fatCompileModuleToPTX(
    MlirModule module, MlirStringRef options, FatKernelCallback kernelCallback,
    MlirStringCallback diagnosticCallback, void *userData);

#ifdef __cplusplus
}
#endif

#endif /* FAT_C_CONVERSION_FATTOPTX_H */
