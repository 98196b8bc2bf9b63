/*===- Fat.h - C API of the fat dialect ---------------------------*- C -*-===*\
|*                                                                            *|
|* The fat dialect and its passes for C and for languages that bind C, in the *|
|* style of MLIR's own C API (mlir-c/). Link FaT::FatCAPI (libFatCAPI.so),    *|
|* which carries MLIR's core C API (mlir-c/IR.h, Pass.h, RegisterEverything.h)*|
|* too, since Debian's libMLIR.so does not export it.                         *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/
#ifndef FAT_C_DIALECT_FAT_H
#define FAT_C_DIALECT_FAT_H

#include "mlir-c/IR.h"

#ifdef __cplusplus
extern "C" {
#endif

/// The fat dialect: `mlirGetDialectHandle__fat__()`, to insert into an
/// MlirDialectRegistry or load into an MlirContext.
MLIR_DECLARE_CAPI_DIALECT_REGISTRATION(Fat, fat);

/// Registers every fa-t pass (`fat-tile`, `fat-decompose`,
/// `convert-fat-to-nvvm`, `fat-emit-kernels`) and pipeline (`fat-to-cpu`,
/// `fat-to-ptx`) with MLIR's global registry, so that mlirParsePassPipeline
/// accepts them, together with the upstream passes those pipelines are built
/// from. Safe to call more than once.
MLIR_CAPI_EXPORTED void fatRegisterAllPasses(void);

#ifdef __cplusplus
}
#endif

#endif /* FAT_C_DIALECT_FAT_H */
