//===- HopperBuilders.h - NVVM/LLVM building blocks for sm_90a --*- C++ -*-===//
//
// Small builders the attention kernel is written with: integer and float
// constants, wgmma shared-memory descriptors, mbarriers, TMA loads, quad
// reductions on the accumulator layout and the MUFU exp2/log2.
//
// Fragment layout of a wgmma m64nNk16 accumulator (f32), as seen by the
// thread with warp w = (tid % 128) / 32 inside its warpgroup, g = lane / 4,
// t = lane % 4 (PTX ISA "wgmma .m64nNk16 register fragment D"):
//
//            col 8i+2t  8i+2t+1        (i = 0 .. N/8-1)
//   row 16w+g   d[4i]    d[4i+1]
//   row 16w+g+8 d[4i+2]  d[4i+3]
//
// so a thread holds 2 rows x N/4 columns, and the other 3 threads of its
// quad (same g) hold the rest of those two rows: a row reduction is an
// in-thread reduction followed by shuffles xor 1 and xor 2.
//
// The A fragment of m64nNk16 (16-bit elements, 4 x 32-bit registers):
//
//   a0 = A[16w+g  ][2t, 2t+1]     a2 = A[16w+g  ][2t+8, 2t+9]
//   a1 = A[16w+g+8][2t, 2t+1]     a3 = A[16w+g+8][2t+8, 2t+9]
//
// (low half = lower column). For k-step kk of P·V the accumulator values
// d[8kk .. 8kk+7] of S are exactly a0..a3 packed in pairs: P never leaves
// the registers.
//
//===----------------------------------------------------------------------===//
#ifndef FAT_DIALECT_FAT_HOPPER_HOPPERBUILDERS_H
#define FAT_DIALECT_FAT_HOPPER_HOPPERBUILDERS_H

#include "fa-t/Dialect/Fat/IR/FatOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace mlir {
namespace fat {
namespace hopper {

/// Address space numbers of NVPTX.
constexpr unsigned kGlobalSpace = 1, kSharedSpace = 3, kSharedClusterSpace = 7;

Value i32Const(ImplicitLocOpBuilder &b, int64_t v);
Value i64Const(ImplicitLocOpBuilder &b, int64_t v);
Value f32Const(ImplicitLocOpBuilder &b, double v);

/// The kernel's i32 (and widening) index arithmetic at `b`'s insertion
/// point, for the lowerings that write a formula of it.
struct I32Math {
  ImplicitLocOpBuilder &b;

  Value c32(int64_t v) { return i32Const(b, v); }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, x, y); }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, x, y); }
  Value divu(Value x, int64_t y) {
    return arith::DivUIOp::create(b, x, c32(y));
  }
  Value remu(Value x, int64_t y) {
    return arith::RemUIOp::create(b, x, c32(y));
  }
  Value cmp(arith::CmpIPredicate p, Value x, Value y) {
    return arith::CmpIOp::create(b, p, x, y);
  }
  Value ext64(Value x) { return arith::ExtSIOp::create(b, b.getI64Type(), x); }
};

/// Emits `asmText` as an inline-asm statement with the given constraints and
/// returns its results one by one (extracted from the struct LLVM uses for
/// several outputs). Pass named Type variables: a TypeRange built from a
/// temporary IntegerType/FloatType would point at a destroyed Type.
SmallVector<Value> buildInlineAsm(ImplicitLocOpBuilder &b,
                                  ArrayRef<Type> resultTypes,
                                  ValueRange operands, StringRef asmText,
                                  StringRef constraints, bool sideEffects);

/// `base + byteOffset` on an i8-addressed pointer (any address space).
Value buildByteOffset(ImplicitLocOpBuilder &b, Value base, Value byteOffset);
Value buildByteOffset(ImplicitLocOpBuilder &b, Value base, int64_t byteOffset);

/// The 64-bit wgmma shared-memory matrix descriptor of a 128B-swizzled tile
/// starting at shared-window address `smemAddr` (i64, 1024-byte aligned
/// pattern base; k-steps inside a swizzle row add 32 B to it):
///
///   bits  0-13  start address >> 4
///   bits 16-29  leading-dimension byte offset >> 4 (LBO)
///   bits 32-45  stride-dimension byte offset >> 4  (SBO)
///   bits 49-51  base offset (0: patterns start on 1024-byte boundaries)
///   bits 62-63  swizzle mode, 1 = 128B
///
/// K-major (rows of 64 K-elements = 128 B): SBO = 1024 (the 8-row pattern),
/// LBO unused (1). MN-major (rows of 64 MN-elements, one row per k): SBO =
/// 1024 (8 k-rows), LBO = byte distance between consecutive 64-element MN
/// blocks.
/// `swizzle128` false: no swizzle (mode 0), the operand in 8 × 16-byte
/// core matrices, LBO between the two along K, SBO between 8-row groups
/// (fat.bias_keys_fill's layout).
Value buildWgmmaDescriptor(ImplicitLocOpBuilder &b, Value smemAddr,
                           int64_t leadingByteOffset, int64_t strideByteOffset,
                           bool swizzle128 = true);

/// `fat.wgmma_wait pending(N)` on `vals`, the tiles (or registers) the
/// retired groups wrote and any to keep live to here; returns them as valid
/// after it.
SmallVector<Value> buildWgmmaWait(ImplicitLocOpBuilder &b, int64_t pending,
                                  ValueRange vals);

/// `fat.operand_fence` on `vals`, tiles or registers (pins what an
/// in-flight wgmma wrote behind the preceding wgmma.wait_group); returns the
/// fenced values.
SmallVector<Value> buildFenceOperands(ImplicitLocOpBuilder &b, ValueRange vals);

/// `fat.schedule_fence %never`: a basic-block boundary ptxas keeps, right
/// before a wgmma wait that must stay below what precedes it.
void buildSchedulingFence(ImplicitLocOpBuilder &b, Value never);

/// Named barrier `bar.sync id, count` / `bar.arrive id, count` (ids 1..15;
/// 0 is __syncthreads').
void buildNamedBarrierSync(ImplicitLocOpBuilder &b, Value id, int64_t count);
void buildNamedBarrierArrive(ImplicitLocOpBuilder &b, Value id, int64_t count);

/// `cvt.rn.{bf16x2,f16x2}.f32`: packs two f32 into one 32-bit register,
/// `lo` in the low half (the lower column of an A fragment pair).
Value buildPackPair(ImplicitLocOpBuilder &b, Value lo, Value hi, bool isF16);

/// MUFU `ex2.approx.ftz.f32` (2^x; -inf gives +0) and `lg2.approx.ftz.f32`.
Value buildExp2(ImplicitLocOpBuilder &b, Value x);
Value buildLog2(ImplicitLocOpBuilder &b, Value x);

/// Element `index` (i32) of a read-only global array of `type` at `base`:
/// an invariant load (ld.global.nc), for captured tensors.
Value buildInvariantLoad(ImplicitLocOpBuilder &b, Type type, Value base,
                         Value index, unsigned alignment);

/// The index of row (batch, ⌊row/64⌋)'s first column in a [B, G, C] i32
/// kv_ranges table, batch and group clamped into the table as every capture
/// read; and column `column` of the table row at `index`, at `ranges`.
Value buildKeyRangeRow(ImplicitLocOpBuilder &b, ArrayRef<int64_t> shape,
                       Value batch, Value row);
Value buildKeyRangeLoad(ImplicitLocOpBuilder &b, Value ranges, Value index,
                        int64_t column);

/// 2^x on the FMA and integer pipes instead of MUFU, for x ≤ 16 (the
/// softmax exponents: ≤ 0, or ≤ τ with the lazy rescale). Cody–Waite split
///   x' = max(x, −127),  j = ⌊x'⌋ (add.rm of 1.5·2^23),  f = x' − j ∈ [0, 1)
///   2^x ≈ p(f)·2^j,     p(f) = 1 + f·(c1 + f·(c2 + f·c3))
/// with the exponent added to p's bits as an integer (j << 23). p is the
/// minimax fit of 2^f on [0, 1) for relative error with p(0) = 1: |rel err|
/// ≤ 8.6e-5 (2^-13.5), a sixth of f16's and a twenty-third of bf16's
/// half-ulp, so P keeps its rounding to 16 bits as its only visible error.
/// x = −inf (a masked score) clamps to −127, j = −127, f = 0, p = 1: the
/// bits are exactly +0, like MUFU's. 0 gives exactly 1. NaN clamps to −127
/// (max ignores it) and gives 0. Nine FMA/ALU-pipe instructions.
Value buildExp2Poly(ImplicitLocOpBuilder &b, Value x);

/// Reduces `v` over the 4 threads of a quad (lanes 4g .. 4g+3): the threads
/// holding one accumulator row. Shuffles xor 1 then xor 2 (butterfly), so
/// every thread of the quad ends with the result.
Value buildQuadReduce(ImplicitLocOpBuilder &b, Value v, bool isMax);

/// Broadcasts lane 0's value to the warp, making a value derived from the
/// thread id provably warp-uniform (ptxas C7520 wants the warpgroup-role
/// branch uniform before wgmma).
Value buildWarpBroadcast(ImplicitLocOpBuilder &b, Value v);

/// mbarrier helpers; `bar` is an `!llvm.ptr<3>`.
/// fence.proxy.async (shared::cta): this thread's generic-proxy writes to
/// shared memory ordered before later async-proxy accesses (TMA, wgmma).
void buildAsyncProxyFence(ImplicitLocOpBuilder &b);
void buildMBarrierInit(ImplicitLocOpBuilder &b, Value bar, int64_t count);
void buildMBarrierArriveExpectTx(ImplicitLocOpBuilder &b, Value bar,
                                 int64_t bytes);
void buildMBarrierArrive(ImplicitLocOpBuilder &b, Value bar);
/// Blocks until the phase of parity `parity` (i32 0/1) has completed.
void buildMBarrierWait(ImplicitLocOpBuilder &b, Value bar, Value parity);

/// TMA tile load `cp.async.bulk.tensor.4d.shared::cluster.global` of the box
/// at `coords` (innermost first) into `dst` (`!llvm.ptr<3>`), completing on
/// `bar`.
void buildTmaLoad(ImplicitLocOpBuilder &b, Value dst, Value tensorMap,
                  ValueRange coords, Value bar);

} // namespace hopper
} // namespace fat
} // namespace mlir

#endif // FAT_DIALECT_FAT_HOPPER_HOPPERBUILDERS_H
