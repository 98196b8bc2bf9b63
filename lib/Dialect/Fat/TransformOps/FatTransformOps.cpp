//===- FatTransformOps.cpp - transform.fat.* ------------------------------===//
//
// Thin wrappers over the rewrites the passes use (Tile.cpp; the kernel's
// software pipeline, SoftwarePipeline.cpp), so a transform script and the
// passes produce the same IR.
//
//===----------------------------------------------------------------------===//

#include "fa-t/Dialect/Fat/TransformOps/FatTransformOps.h"
#include "fa-t/Dialect/Fat/Hopper/SoftwarePipeline.h"
#include "fa-t/Dialect/Fat/IR/FatOps.h"
#include "fa-t/Dialect/Fat/Transforms/Passes.h"

#include "mlir/Dialect/Transform/IR/TransformDialect.h"

using namespace mlir;
using namespace mlir::fat;

#define GET_OP_CLASSES
#include "fa-t/Dialect/Fat/TransformOps/FatTransformOps.cpp.inc"

LogicalResult transform::TileAttentionOp::verify() {
  ArrayRef<int64_t> sizes = getTileSizes();
  if (sizes.size() != 2)
    return emitOpError() << "expected tile_sizes [block_m, block_n], got "
                         << sizes.size() << " sizes";
  for (auto [name, v] : {std::pair<StringRef, int64_t>{"block_m", sizes[0]},
                         {"block_n", sizes[1]}})
    if (v <= 0 || v > 1024)
      return emitOpError() << "expected " << name << " in [1, 1024], got " << v;
  return success();
}

DiagnosedSilenceableFailure transform::TileAttentionOp::applyToOne(
    transform::TransformRewriter &rewriter, Operation *target,
    transform::ApplyToEachResultList &results, transform::TransformState &state) {
  auto op = dyn_cast<AttentionOp>(target);
  if (!op) {
    DiagnosedSilenceableFailure diag =
        emitSilenceableError() << "expected a fat.attention target";
    diag.attachNote(target->getLoc()) << "target op";
    return diag;
  }
  op = convertAttentionToTensorForm(rewriter, op);
  FailureOr<Operation *> tiled = tileAttention(
      rewriter, op, AttentionTileSizes{getTileSizes()[0], getTileSizes()[1]});
  if (failed(tiled))
    return emitDefiniteFailure() << "could not tile the fat.attention";
  results.push_back(*tiled);
  return DiagnosedSilenceableFailure::success();
}

DiagnosedSilenceableFailure
transform::PipelineLoopOp::applyToOne(transform::TransformRewriter &rewriter,
                                      Operation *target,
                                      transform::ApplyToEachResultList &results,
                                      transform::TransformState &state) {
  auto loop = dyn_cast<scf::ForOp>(target);
  if (!loop) {
    DiagnosedSilenceableFailure diag = emitSilenceableError()
                                       << "expected an scf.for target";
    diag.attachNote(target->getLoc()) << "target op";
    return diag;
  }
  FailureOr<LoopPipeline> pipeline = LoopPipeline::analyze(loop);
  if (failed(pipeline))
    return emitDefiniteFailure() << "the loop's schedule does not expand";
  // The expansion needs a first iteration: an empty loop gives its init.
  Location loc = loop.getLoc();
  rewriter.setInsertionPoint(loop);
  Value lb = loop.getLowerBound(), ub = loop.getUpperBound(),
        step = loop.getStep();
  Value any =
      arith::CmpIOp::create(rewriter, loc,
                            loop.getUnsignedCmp() ? arith::CmpIPredicate::ult
                                                  : arith::CmpIPredicate::slt,
                            lb, ub);
  auto guard = scf::IfOp::create(rewriter, loc, loop.getResultTypes(), any,
                                 /*withElseRegion=*/true);
  // (Without results the builder made the branches' yields: ours replace
  // them.)
  for (Block *branch : {guard.thenBlock(), guard.elseBlock()})
    if (!branch->empty())
      rewriter.eraseOp(branch->getTerminator());
  rewriter.setInsertionPointToStart(guard.elseBlock());
  scf::YieldOp::create(rewriter, loc, loop.getInitArgs());
  rewriter.setInsertionPointToStart(guard.thenBlock());
  SmallVector<Value> init =
      pipeline->emitPrologue(rewriter, lb, loop.getInitArgs());
  scf::ForOp steady = pipeline->emitSteadyLoop(
      rewriter, arith::AddIOp::create(rewriter, loc, lb, step), ub, init);
  // The last iteration: lb + ⌊(ub − lb − 1) / s⌋·s.
  Value one = arith::ConstantOp::create(
      rewriter, loc, rewriter.getIntegerAttr(lb.getType(), 1));
  Value span = arith::SubIOp::create(
      rewriter, loc, arith::SubIOp::create(rewriter, loc, ub, lb), one);
  Value last = arith::AddIOp::create(
      rewriter, loc, lb,
      arith::MulIOp::create(rewriter, loc,
                            arith::DivUIOp::create(rewriter, loc, span, step),
                            step));
  scf::YieldOp::create(
      rewriter, loc, pipeline->emitDrain(rewriter, last, steady.getResults()));
  rewriter.replaceOp(loop, guard.getResults());
  results.push_back(steady);
  return DiagnosedSilenceableFailure::success();
}

namespace {
class FatTransformDialectExtension
    : public transform::TransformDialectExtension<FatTransformDialectExtension> {
public:
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(FatTransformDialectExtension)

  FatTransformDialectExtension() {
    declareGeneratedDialect<FatDialect>();
    declareGeneratedDialect<scf::SCFDialect>();
    declareGeneratedDialect<linalg::LinalgDialect>();
    declareGeneratedDialect<tensor::TensorDialect>();
    declareGeneratedDialect<bufferization::BufferizationDialect>();
    declareGeneratedDialect<arith::ArithDialect>();
    declareGeneratedDialect<affine::AffineDialect>();
    registerTransformOps<
#define GET_OP_LIST
#include "fa-t/Dialect/Fat/TransformOps/FatTransformOps.cpp.inc"
        >();
  }
};
} // namespace

void mlir::fat::registerTransformDialectExtension(DialectRegistry &registry) {
  registry.addExtensions<FatTransformDialectExtension>();
}
