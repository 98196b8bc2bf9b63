//===- TileVerifiers.h - shape checks shared by the tile-op verifiers -----===//
//
// Private to FatDialect: the rank / element-type / dimension checks of the
// tile-level ops (FatTileOps.cpp) and of the tensorized level
// (FatTensorOps.cpp), with one wording for every diagnostic.
//
//===----------------------------------------------------------------------===//
#ifndef FAT_LIB_DIALECT_FAT_IR_TILEVERIFIERS_H
#define FAT_LIB_DIALECT_FAT_IR_TILEVERIFIERS_H

#include "fa-t/Dialect/Fat/IR/FatOps.h"

#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/TypeUtilities.h"

namespace mlir::fat::detail {

/// The region of a term op (fat.bias_query_columns, fat.score_band,
/// fat.band_stage): `indices` index arguments named `names`, then the
/// captures (in a kernel a captured tensor is its address), ending in
/// fat.yield of an f32 `what`.
LogicalResult verifyTermRegion(Operation *op, Block &body, unsigned indices,
                               ValueRange captures, StringRef names,
                               StringRef what);

/// Checks that `type` is a rank-`rank` tensor with f32 elements when
/// `requireF32`, else with elements of an operand of fat.attention (f16,
/// bf16 or f32: --fat-decompose widens and rounds them with extf/truncf).
inline LogicalResult verifyTile(Operation *op, StringRef name, Type type,
                                int64_t rank, bool requireF32 = true) {
  auto t = dyn_cast<RankedTensorType>(type);
  if (!t || t.getRank() != rank)
    return op->emitOpError() << "expected " << name << " to be a rank-" << rank
                             << " tensor, got " << type;
  if (requireF32 && !t.getElementType().isF32())
    return op->emitOpError() << "expected " << name
                             << " to have f32 elements, got " << type;
  if (!requireF32 && !isSupportedElementType(t.getElementType()))
    return op->emitOpError() << "expected " << name
                             << " to have f16, bf16 or f32 elements, got "
                             << type;
  return success();
}

/// Checks that dimension `da` of `a` equals dimension `db` of `b` when both
/// are static.
inline LogicalResult verifyDimsMatch(Operation *op, StringRef aName, Type a,
                                     unsigned da, StringRef bName, Type b,
                                     unsigned db) {
  int64_t x = cast<ShapedType>(a).getDimSize(da);
  int64_t y = cast<ShapedType>(b).getDimSize(db);
  if (ShapedType::isDynamic(x) || ShapedType::isDynamic(y) || x == y)
    return success();
  return op->emitOpError() << "expected dim " << db << " of " << bName << " ("
                           << y << ") to match dim " << da << " of " << aName
                           << " (" << x << ")";
}

/// A tile and its row vector share their layout (both plain tensors, or
/// both one warpgroup's `#fat.wgmma_fragment`): a row lives with its tile.
inline LogicalResult verifySameEncoding(Operation *op, StringRef aName, Type a,
                                        StringRef bName, Type b) {
  Attribute ea = cast<RankedTensorType>(a).getEncoding();
  Attribute eb = cast<RankedTensorType>(b).getEncoding();
  if (ea == eb)
    return success();
  return op->emitOpError() << "expected " << aName << " and " << bName
                           << " to share their layout encoding, got " << a
                           << " and " << b;
}

/// A tile [M, N] with its row vector [M].
inline LogicalResult verifyTileAndRows(Operation *op, StringRef tileName,
                                       Type tile, StringRef rowName, Type rows) {
  if (failed(verifyTile(op, tileName, tile, 2)) ||
      failed(verifyTile(op, rowName, rows, 1)) ||
      failed(verifySameEncoding(op, tileName, tile, rowName, rows)))
    return failure();
  return verifyDimsMatch(op, tileName, tile, 0, rowName, rows, 0);
}

/// fat.finalize's row sum: an operand, or `ones_columns` when there is none.
ParseResult parseRowSum(OpAsmParser &parser,
                        std::optional<OpAsmParser::UnresolvedOperand> &sum);
void printRowSum(OpAsmPrinter &printer, Operation *op, Value sum);
/// acc's type, then the sum's when there is the operand.
ParseResult
parseRowSumType(OpAsmParser &parser, Type &accType,
                const std::optional<OpAsmParser::UnresolvedOperand> &sum,
                Type &type);
void printRowSumType(OpAsmPrinter &printer, Operation *op, Type accType,
                     Value sum, Type type);

/// Checks a score (`isScore`) or mask region of fat.attention /
/// fat.score_mod / fat.mask_mod: empty (when `optional`), or one block
/// with arguments (f32 score,) b, h, i, j (index), then one per capture of
/// its type, ending in fat.yield of an f32 score (an i1 for a mask), and
/// using no value defined outside it (captures are the way in).
LogicalResult verifyModRegion(Operation *op, Region &region, bool isScore,
                              TypeRange captureTypes, bool optional);

/// Checks `kv_ranges` (fat.attention, fat.mask_mod): absent, or the index
/// of a capture whose region type is tensor<B x G x 2 x i32>.
LogicalResult verifyKeyRanges(Operation *op, std::optional<uint64_t> ranges,
                              TypeRange captureTypes);

} // namespace mlir::fat::detail

#endif // FAT_LIB_DIALECT_FAT_IR_TILEVERIFIERS_H
