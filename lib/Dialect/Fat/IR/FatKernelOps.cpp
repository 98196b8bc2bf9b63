//===- FatKernelOps.cpp - ops of the pipelined kernel ---------------------===//
//
// The role split's register budget is the hardware's: setmaxnreg takes 24 to
// 256 registers in steps of 8, and a warpgroup only gives registers away
// (producer) or takes them (consumers).
//
//===----------------------------------------------------------------------===//

#include "fa-t/Dialect/Fat/IR/FatOps.h"

using namespace mlir;
using namespace mlir::fat;

void WarpSpecializeOp::build(
    OpBuilder &builder, OperationState &state, Value warpgroup,
    std::optional<std::pair<int32_t, int32_t>> registers) {
  state.addOperands(warpgroup);
  if (registers) {
    state.addAttribute(getProducerRegistersAttrName(state.name),
                       builder.getI32IntegerAttr(registers->first));
    state.addAttribute(getConsumerRegistersAttrName(state.name),
                       builder.getI32IntegerAttr(registers->second));
  }
  for (int i = 0; i < 2; ++i)
    state.addRegion()->emplaceBlock();
}

/// setmaxnreg's operand range: 24 to 256, a multiple of 8.
static bool isRegisterCount(int32_t n) {
  return n >= 24 && n <= 256 && n % 8 == 0;
}

LogicalResult WarpSpecializeOp::verify() {
  std::optional<uint32_t> producer = getProducerRegisters();
  std::optional<uint32_t> consumer = getConsumerRegisters();
  if (producer.has_value() != consumer.has_value())
    return emitOpError("needs both register counts (producer, consumer) or "
                       "neither");
  if (!producer)
    return success();
  int32_t p = static_cast<int32_t>(*producer);
  int32_t c = static_cast<int32_t>(*consumer);
  if (!isRegisterCount(p) || !isRegisterCount(c))
    return emitOpError("register counts must be 24 to 256 in steps of 8 "
                       "(setmaxnreg), got (")
           << p << ", " << c << ")";
  if (p > c)
    return emitOpError("the producer gives registers to the consumers: its "
                       "count must not exceed theirs, got (")
           << p << ", " << c << ")";
  return success();
}

LogicalResult OperandFenceOp::verify() {
  if (getInputs().empty())
    return emitOpError("needs at least one value to fence");
  return success();
}

/// The fences return their operands: one result of the same type each.
static LogicalResult sameTypesAsOperands(ValueRange operands,
                                         SmallVectorImpl<Type> &types) {
  llvm::append_range(types, operands.getTypes());
  return success();
}

LogicalResult OperandFenceOp::inferReturnTypes(
    MLIRContext *, std::optional<Location>, ValueRange operands,
    DictionaryAttr, OpaqueProperties, RegionRange,
    SmallVectorImpl<Type> &inferredReturnTypes) {
  return sameTypesAsOperands(operands, inferredReturnTypes);
}

LogicalResult WgmmaWaitOp::inferReturnTypes(
    MLIRContext *, std::optional<Location>, ValueRange operands,
    DictionaryAttr, OpaqueProperties, RegionRange,
    SmallVectorImpl<Type> &inferredReturnTypes) {
  return sameTypesAsOperands(operands, inferredReturnTypes);
}
