//===- CheckReshapes.cpp - fat-check-reshapes -----------------------------===//
//
// Refuses tensor.expand_shape ops whose static output_shape disagrees with
// their result type: MLIR 22's verifier lets them through and bufferization
// then builds an invalid memref.expand_shape (Passes.td has the example).
//
//===----------------------------------------------------------------------===//

#include "fa-t/Dialect/Fat/Transforms/Passes.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace mlir {
namespace fat {
#define GEN_PASS_DEF_FATCHECKRESHAPES
#include "fa-t/Dialect/Fat/Transforms/Passes.h.inc"
} // namespace fat
} // namespace mlir

using namespace mlir;

namespace {
struct FatCheckReshapesPass
    : public fat::impl::FatCheckReshapesBase<FatCheckReshapesPass> {
  void runOnOperation() override {
    WalkResult result = getOperation()->walk([](tensor::ExpandShapeOp op) {
      ArrayRef<int64_t> declared = op.getStaticOutputShape();
      RankedTensorType type = op.getResultType();
      if (static_cast<int64_t>(declared.size()) != type.getRank())
        return WalkResult(op.emitOpError("output_shape has ")
                          << declared.size() << " entries for a result of rank "
                          << type.getRank());
      for (auto [i, size] : llvm::enumerate(declared)) {
        int64_t want = type.getDimSize(i);
        if (ShapedType::isDynamic(size) || ShapedType::isDynamic(want) ||
            size == want)
          continue;
        return WalkResult(op.emitOpError("output_shape[")
                          << i << "] = " << size << " contradicts the result type "
                          << type << " (dimension " << i << " is " << want
                          << ")");
      }
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace
