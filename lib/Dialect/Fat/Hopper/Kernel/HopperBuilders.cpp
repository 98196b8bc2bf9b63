//===- HopperBuilders.cpp - NVVM/LLVM building blocks for sm_90a ----------===//
//
// See HopperBuilders.h for the fragment layouts these builders assume.
//
//===----------------------------------------------------------------------===//

#include "fa-t/Dialect/Fat/Hopper/HopperBuilders.h"
#include "fa-t/Dialect/Fat/IR/FatOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::fat;
using namespace mlir::fat::hopper;

Value hopper::i32Const(ImplicitLocOpBuilder &b, int64_t v) {
  return arith::ConstantIntOp::create(b, b.getI32Type(), v);
}
Value hopper::i64Const(ImplicitLocOpBuilder &b, int64_t v) {
  return arith::ConstantIntOp::create(b, b.getI64Type(), v);
}
Value hopper::f32Const(ImplicitLocOpBuilder &b, double v) {
  return arith::ConstantFloatOp::create(b, b.getF32Type(),
                                        llvm::APFloat(static_cast<float>(v)));
}

Value hopper::buildByteOffset(ImplicitLocOpBuilder &b, Value base,
                              Value byteOffset) {
  return LLVM::GEPOp::create(b, base.getType(), b.getI8Type(), base,
                             ValueRange{byteOffset});
}
Value hopper::buildByteOffset(ImplicitLocOpBuilder &b, Value base,
                              int64_t byteOffset) {
  if (byteOffset == 0)
    return base;
  return LLVM::GEPOp::create(b, base.getType(), b.getI8Type(), base,
                             ArrayRef<LLVM::GEPArg>{byteOffset});
}

SmallVector<Value> hopper::buildInlineAsm(ImplicitLocOpBuilder &b,
                                          ArrayRef<Type> resultTypes,
                                          ValueRange operands,
                                          StringRef asmText,
                                          StringRef constraints,
                                          bool sideEffects) {
  Type resType;
  if (resultTypes.size() == 1)
    resType = resultTypes.front();
  else if (resultTypes.size() > 1)
    resType = LLVM::LLVMStructType::getLiteral(b.getContext(),
                                               SmallVector<Type>(resultTypes));
  auto op = LLVM::InlineAsmOp::create(
      b, resType ? TypeRange{resType} : TypeRange{}, operands, asmText,
      constraints, sideEffects, /*is_align_stack=*/false,
      LLVM::tailcallkind::TailCallKind::None,
      LLVM::AsmDialectAttr::get(b.getContext(), LLVM::AsmDialect::AD_ATT),
      /*operand_attrs=*/ArrayAttr());
  SmallVector<Value> results;
  if (resultTypes.size() == 1) {
    results.push_back(op.getResult(0));
  } else {
    for (int64_t i = 0, e = resultTypes.size(); i < e; ++i)
      results.push_back(LLVM::ExtractValueOp::create(b, op.getResult(0), i));
  }
  return results;
}

Value hopper::buildWgmmaDescriptor(ImplicitLocOpBuilder &b, Value smemAddr,
                                   int64_t leadingByteOffset,
                                   int64_t strideByteOffset, bool swizzle128) {
  // The start address field holds bits 4..17 of the shared-window address.
  Value addrField = arith::ShRUIOp::create(
      b, arith::AndIOp::create(b, smemAddr, i64Const(b, 0x3FFFF)),
      i64Const(b, 4));
  uint64_t fixed = (uint64_t((leadingByteOffset >> 4) & 0x3FFF) << 16) |
                   (uint64_t((strideByteOffset >> 4) & 0x3FFF) << 32) |
                   (uint64_t(swizzle128 ? 1 : 0) << 62); // 128B swizzle
  return arith::OrIOp::create(b, addrField,
                              i64Const(b, static_cast<int64_t>(fixed)));
}

SmallVector<Value> hopper::buildWgmmaWait(ImplicitLocOpBuilder &b,
                                          int64_t pending, ValueRange vals) {
  auto wait = WgmmaWaitOp::create(b, pending, vals);
  return SmallVector<Value>(wait.getResults());
}

SmallVector<Value> hopper::buildFenceOperands(ImplicitLocOpBuilder &b,
                                              ValueRange vals) {
  auto fence = OperandFenceOp::create(b, vals);
  return SmallVector<Value>(fence.getResults());
}

void hopper::buildSchedulingFence(ImplicitLocOpBuilder &b, Value never) {
  ScheduleFenceOp::create(b, never);
}

void hopper::buildNamedBarrierSync(ImplicitLocOpBuilder &b, Value id,
                                   int64_t count) {
  NVVM::BarrierOp::create(b, TypeRange{}, id, i32Const(b, count),
                          NVVM::BarrierReductionAttr(), Value());
}

void hopper::buildNamedBarrierArrive(ImplicitLocOpBuilder &b, Value id,
                                     int64_t count) {
  NVVM::BarrierArriveOp::create(b, id, i32Const(b, count));
}

Value hopper::buildPackPair(ImplicitLocOpBuilder &b, Value lo, Value hi,
                            bool isF16) {
  // cvt.rn.bf16x2.f32 d, a, b puts a in the upper half and b in the lower.
  StringRef text = isF16 ? "cvt.rn.f16x2.f32 $0, $1, $2;"
                         : "cvt.rn.bf16x2.f32 $0, $1, $2;";
  Type i32 = b.getI32Type();
  return buildInlineAsm(b, i32, ValueRange{hi, lo}, text, "=r,f,f",
                        /*sideEffects=*/false)[0];
}

Value hopper::buildExp2(ImplicitLocOpBuilder &b, Value x) {
  Type f32 = b.getF32Type();
  return buildInlineAsm(b, f32, x, "ex2.approx.ftz.f32 $0, $1;",
                        "=f,f", /*sideEffects=*/false)[0];
}

Value hopper::buildExp2Poly(ImplicitLocOpBuilder &b, Value x) {
  // The minimax fit's coefficients (SoftmaxExpOp::kExp2Poly); in f32
  // Horner form the error stays 8.6e-5 (checked by test/CPU/test_exp2_poly.py,
  // which evaluates this same sequence in numpy float32 over every exponent).
  const auto &c = SoftmaxExpOp::kExp2Poly;
  // 1.5·2^23: adding it in round-down mode leaves ⌊x'⌋ in the low mantissa
  // bits for |x'| < 2^22 (the 0.5·2^23 keeps the exponent fixed for
  // negative x'); subtracting it back is exact.
  constexpr float magic = 12582912.0f;
  Type f32 = b.getF32Type(), i32 = b.getI32Type();
  Value clamped = LLVM::MaxNumOp::create(b, x, f32Const(b, -127.0));
  Value shifted =
      buildInlineAsm(b, f32, ValueRange{clamped, f32Const(b, magic)},
                     "add.rm.ftz.f32 $0, $1, $2;", "=f,f,f",
                     /*sideEffects=*/false)[0];
  Value floorX = arith::SubFOp::create(b, shifted, f32Const(b, magic));
  Value frac = arith::SubFOp::create(b, clamped, floorX);
  Value p = LLVM::FMAOp::create(b, frac, f32Const(b, c[2]), f32Const(b, c[1]));
  p = LLVM::FMAOp::create(b, frac, p, f32Const(b, c[0]));
  p = LLVM::FMAOp::create(b, frac, p, f32Const(b, 1.0));
  // bits(shifted) = 0x4B400000 + j: its low 9 bits are j mod 512, so the
  // shift by 23 leaves exactly j << 23 (mod 2^32) to add to p's exponent.
  Value exponent = arith::ShLIOp::create(
      b, arith::BitcastOp::create(b, i32, shifted), i32Const(b, 23));
  Value bits = arith::AddIOp::create(b, arith::BitcastOp::create(b, i32, p),
                                     exponent);
  return arith::BitcastOp::create(b, f32, bits);
}

Value hopper::buildLog2(ImplicitLocOpBuilder &b, Value x) {
  Type f32 = b.getF32Type();
  return buildInlineAsm(b, f32, x, "lg2.approx.ftz.f32 $0, $1;",
                        "=f,f", /*sideEffects=*/false)[0];
}

Value hopper::buildInvariantLoad(ImplicitLocOpBuilder &b, Type type,
                                Value base, Value index, unsigned alignment) {
  Value address =
      LLVM::GEPOp::create(b, base.getType(), type, base, ValueRange{index});
  return LLVM::LoadOp::create(b, type, address, alignment,
                              /*isVolatile=*/false, /*isNonTemporal=*/false,
                              /*isInvariant=*/true);
}

Value hopper::buildKeyRangeRow(ImplicitLocOpBuilder &b,
                               ArrayRef<int64_t> shape, Value batch,
                               Value row) {
  Value clampedBatch =
      arith::MinUIOp::create(b, batch, i32Const(b, shape[0] - 1));
  Value group = arith::MinUIOp::create(
      b, arith::DivUIOp::create(b, row, i32Const(b, 64)),
      i32Const(b, shape[1] - 1));
  return arith::MulIOp::create(
      b,
      arith::AddIOp::create(
          b, arith::MulIOp::create(b, clampedBatch, i32Const(b, shape[1])),
          group),
      i32Const(b, shape[2]));
}

Value hopper::buildKeyRangeLoad(ImplicitLocOpBuilder &b, Value ranges,
                                Value index, int64_t column) {
  return buildInvariantLoad(b, b.getI32Type(), ranges,
                            arith::AddIOp::create(b, index, i32Const(b, column)),
                            /*alignment=*/4);
}

Value hopper::buildQuadReduce(ImplicitLocOpBuilder &b, Value v, bool isMax) {
  Value fullMask = i32Const(b, -1);
  Value clamp = i32Const(b, 0x1f);
  for (int64_t offset : {1, 2}) {
    Value other = NVVM::ShflOp::create(b, v.getType(), fullMask, v,
                                       i32Const(b, offset), clamp,
                                       NVVM::ShflKind::bfly, UnitAttr());
    v = isMax ? Value(LLVM::MaxNumOp::create(b, v, other))
              : Value(arith::AddFOp::create(b, v, other));
  }
  return v;
}

Value hopper::buildWarpBroadcast(ImplicitLocOpBuilder &b, Value v) {
  return NVVM::ShflOp::create(b, v.getType(), i32Const(b, -1), v,
                              i32Const(b, 0), i32Const(b, 0x1f),
                              NVVM::ShflKind::idx, UnitAttr());
}

void hopper::buildMBarrierInit(ImplicitLocOpBuilder &b, Value bar,
                               int64_t count) {
  NVVM::MBarrierInitOp::create(b, bar, i32Const(b, count), Value());
}

void hopper::buildMBarrierArriveExpectTx(ImplicitLocOpBuilder &b, Value bar,
                                         int64_t bytes) {
  NVVM::MBarrierArriveExpectTxOp::create(b, Type(), bar, i32Const(b, bytes),
                                         NVVM::MemScopeKind::CTA,
                                         /*relaxed=*/false, Value());
}

void hopper::buildMBarrierArrive(ImplicitLocOpBuilder &b, Value bar) {
  NVVM::MBarrierArriveOp::create(b, Type(), bar, Value());
}

void hopper::buildMBarrierWait(ImplicitLocOpBuilder &b, Value bar,
                               Value parity) {
  // A generous suspend-time hint; the op loops until the phase completes.
  NVVM::MBarrierTryWaitParityOp::create(b, bar, parity, i32Const(b, 0x989680));
}

void hopper::buildTmaLoad(ImplicitLocOpBuilder &b, Value dst, Value tensorMap,
                          ValueRange coords, Value bar) {
  // The .shared::cluster destination wants an address-space-7 pointer.
  Value dstCluster = LLVM::AddrSpaceCastOp::create(
      b, LLVM::LLVMPointerType::get(b.getContext(), kSharedClusterSpace), dst);
  NVVM::CpAsyncBulkTensorGlobalToSharedClusterOp::create(
      b, dstCluster, tensorMap, coords, bar, ValueRange{}, Value(), Value(),
      NVVM::TMALoadMode::TILE, /*isCTAOnly=*/false,
      NVVM::CTAGroupKindAttr(), Value());
}

void hopper::buildAsyncProxyFence(ImplicitLocOpBuilder &b) {
  NVVM::FenceProxyOp::create(
      b, NVVM::ProxyKindAttr::get(b.getContext(), NVVM::ProxyKind::async_shared),
      NVVM::SharedSpaceAttr::get(b.getContext(), NVVM::SharedSpace::shared_cta));
}
