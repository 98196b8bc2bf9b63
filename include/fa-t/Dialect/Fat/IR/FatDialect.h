//===- FatDialect.h - the fat dialect ---------------------------*- C++ -*-===//
#ifndef FAT_DIALECT_FAT_IR_FATDIALECT_H
#define FAT_DIALECT_FAT_IR_FATDIALECT_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dialect.h"

#include "fa-t/Dialect/Fat/IR/FatOpsDialect.h.inc"

#endif // FAT_DIALECT_FAT_IR_FATDIALECT_H
