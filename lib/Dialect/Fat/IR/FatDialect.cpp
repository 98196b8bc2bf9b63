//===- FatDialect.cpp - the fat dialect -----------------------------------===//
#include "fa-t/Dialect/Fat/IR/FatDialect.h"
#include "fa-t/Dialect/Fat/IR/FatOps.h"

using namespace mlir;
using namespace mlir::fat;

#include "fa-t/Dialect/Fat/IR/FatOpsDialect.cpp.inc"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

#define GET_ATTRDEF_CLASSES
#include "fa-t/Dialect/Fat/IR/FatAttrs.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "fa-t/Dialect/Fat/IR/FatOpsTypes.cpp.inc"

// `#fat.wgmma_fragment` or `#fat.wgmma_fragment<partial>`.
Attribute WgmmaFragmentAttr::parse(AsmParser &parser, Type) {
  if (failed(parser.parseOptionalLess()))
    return get(parser.getContext());
  if (failed(parser.parseOptionalKeyword("partial")) ||
      failed(parser.parseOptionalGreater())) {
    parser.emitError(parser.getCurrentLocation(),
                     "#fat.wgmma_fragment expects no parameter or <partial>");
    return {};
  }
  return get(parser.getContext(), /*partial=*/true);
}

void WgmmaFragmentAttr::print(AsmPrinter &printer) const {
  if (getPartial())
    printer << "<partial>";
}

LogicalResult WgmmaFragmentAttr::verifyEncoding(
    ArrayRef<int64_t> shape, Type elementType,
    function_ref<InFlightDiagnostic()> emitError) const {
  // 64 rows per warpgroup; N/8 column groups of the instruction (N ≤ 256
  // for one wgmma, but a tile may span several, e.g. O beside its ones
  // columns); 16-bit tiles pack pairs, so N is a multiple of 16 there.
  // (The parser asks with a null element type after a malformed one.)
  if (!elementType)
    return emitError() << "#fat.wgmma_fragment expects a tensor with an "
                          "element type";
  bool is16 = elementType.isF16() || elementType.isBF16();
  if (shape.empty() || shape.size() > 2 || shape[0] != 64)
    return emitError() << "#fat.wgmma_fragment expects a 64-row tile or row "
                          "vector (one warpgroup), got shape ["
                       << llvm::make_range(shape.begin(), shape.end()) << "]";
  if (shape.size() == 1 ? !elementType.isF32()
                        : !(elementType.isF32() || is16))
    return emitError() << "#fat.wgmma_fragment expects f32 "
                       << (shape.size() == 1 ? "row vectors" : "or 16-bit tiles")
                       << ", got " << elementType;
  if (shape.size() == 2 &&
      (shape[1] <= 0 || shape[1] % (is16 ? 16 : 8) != 0))
    return emitError() << "#fat.wgmma_fragment expects the columns to be a "
                          "positive multiple of "
                       << (is16 ? 16 : 8) << ", got " << shape[1];
  if (getPartial() && shape.size() != 1)
    return emitError() << "#fat.wgmma_fragment<partial> expects a row vector "
                          "(a quad's shares of one value per row), got shape ["
                       << llvm::make_range(shape.begin(), shape.end()) << "]";
  return success();
}

bool WgmmaFragmentAttr::isPartial(Type type) {
  auto t = dyn_cast<RankedTensorType>(type);
  auto attr = t ? dyn_cast_or_null<WgmmaFragmentAttr>(t.getEncoding())
                : WgmmaFragmentAttr();
  return attr && attr.getPartial();
}

RankedTensorType WgmmaFragmentAttr::withPartial(RankedTensorType type,
                                                bool partial) {
  return RankedTensorType::get(type.getShape(), type.getElementType(),
                               get(type.getContext(), partial));
}

bool WgmmaFragmentAttr::isFragment(Type type) {
  auto t = dyn_cast<RankedTensorType>(type);
  return t && isa_and_nonnull<WgmmaFragmentAttr>(t.getEncoding());
}

Type WgmmaFragmentAttr::getRegisterType(RankedTensorType type) {
  MLIRContext *ctx = type.getContext();
  return type.getElementType().isF32() ? Type(Float32Type::get(ctx))
                                       : Type(IntegerType::get(ctx, 32));
}

int64_t WgmmaFragmentAttr::getRegisterCount(RankedTensorType type) {
  if (type.getRank() == 1)
    return 2;
  int64_t n = type.getDimSize(1);
  return type.getElementType().isF32() ? n / 2 : n / 4;
}

void FatDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "fa-t/Dialect/Fat/IR/FatOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "fa-t/Dialect/Fat/IR/FatAttrs.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "fa-t/Dialect/Fat/IR/FatOpsTypes.cpp.inc"
      >();
}
