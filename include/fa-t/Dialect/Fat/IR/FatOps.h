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

#include <optional>

#include "fa-t/Dialect/Fat/IR/FatEnums.h.inc"

#define GET_OP_CLASSES
#include "fa-t/Dialect/Fat/IR/FatOps.h.inc"

namespace mlir {
namespace fat {
/// Whether `type` may be the element type of Q, K, V and O (and of their
/// tiles): f16, bf16, or f32 for reference use.
bool isSupportedElementType(Type type);

/// The right edge of a row's visible keys as an offset from its diagonal
/// (key ≤ row + δ + edge) under a mask: 0 under the causal mask (a right
/// window, also ≥ 0, does not widen it), else the window's right extent
/// (windowRight ≥ 0), else none. The key-block geometry, the kernel's mask
/// and its cost model all read the edge from here.
std::optional<int64_t> maskRightEdge(bool causal, int64_t windowRight);
} // namespace fat
} // namespace mlir

#endif // FAT_DIALECT_FAT_IR_FATOPS_H
