//===- FatOps.h - fat dialect operations ------------------------*- C++ -*-===//
#ifndef FAT_DIALECT_FAT_IR_FATOPS_H
#define FAT_DIALECT_FAT_IR_FATOPS_H

#include "fa-t/Dialect/Fat/IR/FatDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/TilingInterface.h"

#include "fa-t/Dialect/Fat/IR/FatEnums.h.inc"

#define GET_OP_CLASSES
#include "fa-t/Dialect/Fat/IR/FatOps.h.inc"

namespace mlir {
namespace fat {
/// Whether `type` may be the element type of Q, K, V and O (and of their
/// tiles): f16, bf16, or f32 for reference use.
bool isSupportedElementType(Type type);
} // namespace fat
} // namespace mlir

#endif // FAT_DIALECT_FAT_IR_FATOPS_H
