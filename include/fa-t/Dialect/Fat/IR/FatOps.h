//===- FatOps.h - fat dialect operations ------------------------*- C++ -*-===//
#ifndef FAT_DIALECT_FAT_IR_FATOPS_H
#define FAT_DIALECT_FAT_IR_FATOPS_H

#include "fa-t/Dialect/Fat/IR/FatDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/TilingInterface.h"

#include "fa-t/Dialect/Fat/IR/FatEnums.h.inc"

#define GET_OP_CLASSES
#include "fa-t/Dialect/Fat/IR/FatOps.h.inc"

#endif // FAT_DIALECT_FAT_IR_FATOPS_H
