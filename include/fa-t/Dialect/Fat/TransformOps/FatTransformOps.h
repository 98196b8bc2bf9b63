//===- FatTransformOps.h - transform-dialect ops of fat ---------*- C++ -*-===//
#ifndef FAT_DIALECT_FAT_TRANSFORMOPS_FATTRANSFORMOPS_H
#define FAT_DIALECT_FAT_TRANSFORMOPS_FATTRANSFORMOPS_H

#include "mlir/Dialect/Transform/IR/TransformDialect.h"
#include "mlir/Dialect/Transform/Interfaces/TransformInterfaces.h"
#include "mlir/IR/OpImplementation.h"

namespace mlir {
class DialectRegistry;
namespace fat {
/// Adds the `transform.fat.*` ops to the transform dialect in `registry`.
void registerTransformDialectExtension(DialectRegistry &registry);
} // namespace fat
} // namespace mlir

#define GET_OP_CLASSES
#include "fa-t/Dialect/Fat/TransformOps/FatTransformOps.h.inc"

#endif // FAT_DIALECT_FAT_TRANSFORMOPS_FATTRANSFORMOPS_H
