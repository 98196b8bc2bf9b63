//===- FatDialect.h - the fat dialect ---------------------------*- C++ -*-===//
#ifndef FAT_DIALECT_FAT_IR_FATDIALECT_H
#define FAT_DIALECT_FAT_IR_FATDIALECT_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/TensorEncoding.h"

#include "fa-t/Dialect/Fat/IR/FatOpsDialect.h.inc"

#define GET_ATTRDEF_CLASSES
#include "fa-t/Dialect/Fat/IR/FatAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "fa-t/Dialect/Fat/IR/FatOpsTypes.h.inc"

#endif // FAT_DIALECT_FAT_IR_FATDIALECT_H
