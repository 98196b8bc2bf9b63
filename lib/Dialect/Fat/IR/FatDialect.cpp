//===- FatDialect.cpp - the fat dialect -----------------------------------===//
#include "fa-t/Dialect/Fat/IR/FatDialect.h"
#include "fa-t/Dialect/Fat/IR/FatOps.h"

using namespace mlir;
using namespace mlir::fat;

#include "fa-t/Dialect/Fat/IR/FatOpsDialect.cpp.inc"

void FatDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "fa-t/Dialect/Fat/IR/FatOps.cpp.inc"
      >();
}
