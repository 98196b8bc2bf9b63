//===- AttentionKernelSoftmax.cpp - one key block of the softmax ----------===//
//
// The work of one key block on a consumer warpgroup: S = Q·K_jᵀ (wgmma, both
// operands in shared memory), the mask, the online softmax (row max, exp2 on
// MUFU or the FMA pipe, the vector row sums), P packed as the A operand, the
// rescale O = α·O (eager or lazy) and O += P·V_j (wgmma with A in registers,
// and the ones columns that sum P's rows on the tensor cores).
//
//===----------------------------------------------------------------------===//

#include "AttentionKernelBuilder.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::fat;
using namespace mlir::fat::hopper;

SmallVector<Value> AttentionKernelBuilder::buildQK(Value consumer,
                                                   Value stage) {
  // Q chunk c of this warpgroup: rows [64·consumer, +64) of the
  // [blockM][64] box c; K chunk c: the [blockN][64] box c of the stage. Both
  // K-major with 128-byte rows; a k16 step advances 32 bytes inside a row
  // (the swizzle is applied by the hardware on the final address).
  Value qAddr = arith::AddIOp::create(
      b, v.smemAddr,
      ext64(add(mul(qSlot(), c32(cfg.qBytes())), mul(consumer, c32(64 * 128)))));
  Value kAddr =
      arith::AddIOp::create(b, v.smemAddr, ext64(stageOffset(stage, false)));
  Value qDesc = buildWgmmaDescriptor(b, qAddr, 16, 1024);
  Value kDesc = buildWgmmaDescriptor(b, kAddr, 16, 1024);
  auto advance = [&](Value desc, int64_t bytes) -> Value {
    if (bytes == 0)
      return desc;
    // The address field holds addr >> 4 and cannot carry out: every tile
    // lies below 228 KB.
    return arith::AddIOp::create(b, desc, i64Const(b, bytes >> 4));
  };
  buildWgmmaFence(b);
  SmallVector<Value> s;
  for (int64_t c = 0; c < cfg.headDim / 64; ++c) {
    for (int64_t kk = 0; kk < 4; ++kk) {
      Value a = advance(qDesc, c * cfg.blockM * 128 + kk * 32);
      Value bDesc = advance(kDesc, c * cfg.blockN * 128 + kk * 32);
      s = buildWgmmaSS(b, s, a, bDesc, cfg.blockN, cfg.isF16);
    }
  }
  buildWgmmaCommit(b);
  return s;
}

SmallVector<Value> AttentionKernelBuilder::buildPV(ValueRange o,
                                                   ArrayRef<Value> p,
                                                   Value stage,
                                                   Value accumulate) {
  // V_s is MN-major for this GEMM: box c holds columns [64c, 64c+64) of the
  // blockN key rows, one 128-byte row per key. A k16 step covers 16 key rows
  // = 2048 bytes; SBO = 1024 (8 key rows), LBO = blockN·128 (the next 64
  // output columns).
  Value vAddr =
      arith::AddIOp::create(b, v.smemAddr, ext64(stageOffset(stage, true)));
  Value vDesc = buildWgmmaDescriptor(b, vAddr, cfg.blockN * 128, 1024);
  buildWgmmaFence(b);
  SmallVector<Value> acc(o.begin(), o.end());
  for (int64_t kk = 0; kk < cfg.blockN / 16; ++kk) {
    Value desc = kk == 0 ? vDesc
                         : Value(arith::AddIOp::create(
                               b, vDesc, i64Const(b, (kk * 2048) >> 4)));
    // Only the first k-step may start over; the others add to it.
    acc = buildWgmmaRS(b, acc, p.slice(4 * kk, 4), desc, cfg.pvColumns(),
                       cfg.isF16, kk == 0 ? accumulate : Value());
  }
  buildWgmmaCommit(b);
  return acc;
}

SmallVector<Value> AttentionKernelBuilder::buildMaskIfNeeded(ValueRange s,
                                                             Value kvBlock,
                                                             Value rowBase) {
  // Only blocks on a mask edge or the ragged tail pay for the mask; the
  // test is uniform over the CTA:
  //   (j+1)·N > Skv                                  ragged tail
  //   (j+1)·N − 1 > rowFirst + diag + right          causal / right edge
  //   j·N < rowLast + diag − left                    left edge
  Value blockEnd = mul(add(kvBlock, c32(1)), c32(cfg.blockN));
  Value needMask = cmp(arith::CmpIPredicate::sgt, blockEnd, v.seqKV);
  if (std::optional<int64_t> right = cfg.rightEdge())
    needMask = arith::OrIOp::create(
        b, needMask,
        cmp(arith::CmpIPredicate::sgt, sub(blockEnd, c32(1)),
            add(add(v.rowFirst, v.diag), c32(*right))));
  if (cfg.windowLeft >= 0)
    needMask = arith::OrIOp::create(
        b, needMask,
        cmp(arith::CmpIPredicate::slt, mul(kvBlock, c32(cfg.blockN)),
            sub(add(v.rowLast, v.diag), c32(cfg.windowLeft))));
  auto maskIf = scf::IfOp::create(
      b, needMask,
      [&](OpBuilder &nested, Location loc) {
        ImplicitLocOpBuilder nb(loc, nested);
        AttentionKernelBuilder inner(nb, cfg);
        inner.v = v;
        scf::YieldOp::create(nb, inner.buildMaskedScores(s, kvBlock, rowBase));
      },
      [&](OpBuilder &nested, Location loc) {
        scf::YieldOp::create(nested, loc, s);
      });
  tagStage(maskIf, "mask");
  return SmallVector<Value>(maskIf.getResults());
}

SmallVector<Value> AttentionKernelBuilder::buildMaskedScores(ValueRange s,
                                                             Value kvBlock,
                                                             Value rowBase) {
  // Element d[4i + 2r + e] is (row rowBase + 8r, key kvBlock·N + 8i + 2t + e).
  // With c0 = kvBlock·N + 2t its key is c0 + k, k = 8i + e a constant, so
  // every bound becomes a limit on k per row, computed once:
  //   c0 + k < Skv                  (ragged tail)   k ≤ Skv − 1 − c0
  //   c0 + k ≤ row + diag + right   (causal: 0)     k ≤ row + diag + right − c0
  //   c0 + k ≥ row + diag − left                    k ≥ row + diag − left − c0
  // and an element costs a compare with an immediate (two with a left
  // bound) and a select, not its key's index and a compare per bound
  // (about 120 SASS instructions less per masked block at 128 keys). The
  // per-row limits' loop-invariant parts cost registers, though: some
  // 160-register kernels keep the per-key form (cfg.maskByRowLimits()).
  if (!cfg.maskByRowLimits())
    return buildMaskedScoresByKey(s, kvBlock, rowBase);
  Value t = arith::RemUIOp::create(b, v.lane, c32(4));
  Value colBase = add(mul(kvBlock, c32(cfg.blockN)), mul(t, c32(2)));
  Value negInf = f32Const(b, -std::numeric_limits<double>::infinity());
  std::optional<int64_t> right = cfg.rightEdge();
  Value tail = sub(sub(v.seqKV, c32(1)), colBase);
  Value hi[2], lo[2];
  for (int r = 0; r < 2; ++r) {
    hi[r] = tail;
    if (!cfg.masked())
      continue;
    Value rowDiag = add(add(rowBase, c32(8 * r)), v.diag);
    if (right)
      hi[r] = arith::MinSIOp::create(b, tail,
                                     sub(add(rowDiag, c32(*right)), colBase));
    if (cfg.windowLeft >= 0)
      lo[r] = sub(sub(rowDiag, c32(cfg.windowLeft)), colBase);
  }
  SmallVector<Value> out(s.begin(), s.end());
  for (int64_t i = 0; i < cfg.blockN / 8; ++i) {
    for (int e = 0; e < 2; ++e) {
      Value k = c32(8 * i + e);
      for (int r = 0; r < 2; ++r) {
        Value visible = cmp(arith::CmpIPredicate::sle, k, hi[r]);
        if (lo[r])
          visible = arith::AndIOp::create(
              b, visible, cmp(arith::CmpIPredicate::sge, k, lo[r]));
        int64_t idx = 4 * i + 2 * r + e;
        out[idx] = arith::SelectOp::create(b, visible, out[idx], negInf);
      }
    }
  }
  return out;
}

SmallVector<Value>
AttentionKernelBuilder::buildMaskedScoresByKey(ValueRange s, Value kvBlock,
                                               Value rowBase) {
  // buildMaskedScores, one key index and compare per bound per element.
  Value t = arith::RemUIOp::create(b, v.lane, c32(4));
  Value colBase = add(mul(kvBlock, c32(cfg.blockN)), mul(t, c32(2)));
  Value negInf = f32Const(b, -std::numeric_limits<double>::infinity());
  Value rowDiag[2];
  for (int r = 0; r < 2; ++r)
    rowDiag[r] = add(add(rowBase, c32(8 * r)), v.diag);
  SmallVector<Value> out(s.begin(), s.end());
  for (int64_t i = 0; i < cfg.blockN / 8; ++i) {
    for (int e = 0; e < 2; ++e) {
      Value col = add(colBase, c32(8 * i + e));
      Value inRange = cmp(arith::CmpIPredicate::slt, col, v.seqKV);
      for (int r = 0; r < 2; ++r) {
        Value visible = inRange;
        auto both = [&](Value cond) {
          visible = arith::AndIOp::create(b, visible, cond);
        };
        // causal: j ≤ i + diag; window: i + diag − left ≤ j ≤ i + diag + right
        if (cfg.causal)
          both(cmp(arith::CmpIPredicate::sle, col, rowDiag[r]));
        if (cfg.windowLeft >= 0)
          both(cmp(arith::CmpIPredicate::sge, col,
                   sub(rowDiag[r], c32(cfg.windowLeft))));
        if (cfg.windowRight >= 0)
          both(cmp(arith::CmpIPredicate::sle, col,
                   add(rowDiag[r], c32(cfg.windowRight))));
        int64_t idx = 4 * i + 2 * r + e;
        out[idx] = arith::SelectOp::create(b, visible, out[idx], negInf);
      }
    }
  }
  return out;
}

Value AttentionKernelBuilder::buildFirstMaskedBlock() {
  // buildMaskIfNeeded's right-side tests, solved for the first block j:
  //   (j+1)·N > Skv                ⟺ j ≥ ⌊Skv/N⌋
  //   (j+1)·N − 1 > R              ⟺ j ≥ ⌊(R+1)/N⌋   (R = rowFirst + diag
  //                                                     + right, may be < 0)
  // Both tests stay true for every later block. (Kernels with a left
  // window edge, whose masked blocks also lie at the start, are not split.)
  int64_t n = cfg.blockN;
  Value first = arith::DivUIOp::create(b, v.seqKV, c32(n));
  if (std::optional<int64_t> right = cfg.rightEdge()) {
    Value edge = add(add(v.rowFirst, v.diag), c32(*right + 1));
    first = arith::MinSIOp::create(
        b, first, arith::FloorDivSIOp::create(b, edge, c32(n)));
  }
  return first;
}

AttentionKernelBuilder::SoftmaxStep
AttentionKernelBuilder::buildSoftmax(SmallVectorImpl<Value> &s,
                                     ValueRange mOld, ValueRange lOld) {
  // Online softmax, per row r of the thread (c = scale·log2 e):
  //   m̂ = max(m, rowmax S)                    (quad shuffles xor 1, 2)
  //   m' = m̂                                  (rescale=always)
  //   m' = m̂ if c·(m̂ − m) > τ or m = −inf, else m   (rescale=lazy)
  //   ĉm = c·m', or 0 when m' = −inf (a row with nothing visible yet)
  //   P  = exp2(c·S − ĉm)                      one FMA + MUFU.EX2
  //   α  = exp2(c·m − ĉm)                      0 when m = −inf, 1 if m' = m
  //   l' = α·l + Σ P   (rowsum=vector: a per-thread partial, the quad sum
  //                     is taken at the end; rowsum=mma: the P·V wgmma's
  //                     ones columns compute it, and l is not carried here)
  // Lazy-rescale numerics: while m' lags the true max by at most τ, every
  // P ≤ 2^τ (256 for τ = 8): exact in bf16/f16 up to the usual rounding,
  // and O, l ≤ 2^τ·Σ|v|, Skv·2^τ stay far from f32 overflow. O/l and
  // LSE = ln2·(ĉm + log2 l) are invariant to which m' was used.
  // (LLVM's maxnum, not arith.maxnumf: convert-gpu-to-nvvm would turn the
  // latter into a libdevice call.)
  Value c = v.scaleLog2e;
  Value zero = f32Const(b, 0.0);
  Value one = f32Const(b, 1.0);
  Value negInf = f32Const(b, -std::numeric_limits<double>::infinity());
  bool lazy = cfg.schedule.lazyRescale;
  // Element k of the row's blockN/4 registers goes to the FMA-pipe
  // polynomial as fat.softmax_exp defines it (φ·blockN/4 of them, evenly
  // spread, so the MUFU and FMA streams interleave in every chunk).
  double phi = cfg.schedule.exp2Poly;
  auto usePolyExp2 = [&](int64_t k) {
    return SoftmaxExpOp::usesPolynomial(k, phi);
  };
  SoftmaxStep step;
  Value moved[2];
  for (int r = 0; r < 2; ++r) {
    Value mx = mOld[r];
    for (int64_t i = 0; i < cfg.blockN / 8; ++i)
      for (int e = 0; e < 2; ++e)
        mx = LLVM::MaxNumOp::create(b, mx, s[4 * i + 2 * r + e]);
    Value mHat = buildQuadReduce(b, mx, /*isMax=*/true);
    step.m[r] = mHat;
    if (lazy) {
      // mHat − m is +inf or NaN when m = −inf: the first visible block
      // always moves the max (NaN compares false, hence the explicit test).
      Value growth = arith::MulFOp::create(
          b, arith::SubFOp::create(b, mHat, mOld[r]), c);
      moved[r] = arith::OrIOp::create(
          b,
          arith::CmpFOp::create(b, arith::CmpFPredicate::OGT, growth,
                                f32Const(b, cfg.schedule.rescaleThreshold)),
          arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, mOld[r],
                                negInf));
      step.m[r] = arith::SelectOp::create(b, moved[r], mHat, mOld[r]);
    }
    Value isNegInf = arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ,
                                           step.m[r], negInf);
    Value scaledMax = arith::SelectOp::create(
        b, isNegInf, zero, arith::MulFOp::create(b, step.m[r], c));
    Value negScaledMax = arith::NegFOp::create(b, scaledMax);
    step.alpha[r] =
        buildExp2(b, LLVM::FMAOp::create(b, mOld[r], c, negScaledMax));
    if (lazy)
      step.alpha[r] = arith::SelectOp::create(b, moved[r], step.alpha[r], one);
    Value rowSum = zero;
    for (int64_t i = 0; i < cfg.blockN / 8; ++i) {
      for (int e = 0; e < 2; ++e) {
        int64_t idx = 4 * i + 2 * r + e;
        Value x = LLVM::FMAOp::create(b, s[idx], c, negScaledMax);
        s[idx] = usePolyExp2(2 * i + e) ? buildExp2Poly(b, x)
                                        : buildExp2(b, x);
        if (!cfg.schedule.rowsumMma)
          rowSum = arith::AddFOp::create(b, rowSum, s[idx]);
      }
    }
    step.l[r] = cfg.schedule.rowsumMma
                    ? lOld[r]
                    : Value(LLVM::FMAOp::create(b, lOld[r], step.alpha[r],
                                                rowSum));
  }
  if (lazy) {
    Value either = arith::OrIOp::create(b, moved[0], moved[1]);
    step.anyMoved = NVVM::VoteSyncOp::create(
        b, b.getI1Type(), c32(-1), either,
        NVVM::VoteSyncKindAttr::get(b.getContext(), NVVM::VoteSyncKind::any));
  }
  return step;
}

AttentionKernelBuilder::SoftmaxStep AttentionKernelBuilder::buildScoresToP(
    SmallVectorImpl<Value> &s, Value kvBlock, Value stage, Value rowBase,
    ValueRange mOld, ValueRange lOld, bool mayMask) {
  // S_j is complete (the caller's fat.wgmma_wait returned it): release
  // K_j — every consumer thread's reads of it are done — then mask and run
  // the online softmax.
  buildMBarrierArrive(b, emptyBarrier(stage, /*isV=*/false));
  if (mayMask)
    s = buildMaskIfNeeded(s, kvBlock, rowBase);
  return buildSoftmax(s, mOld, lOld);
}

SmallVector<Value> AttentionKernelBuilder::buildPackP(ArrayRef<Value> s) {
  // P as the A operand: registers d[8kk .. 8kk+7] in pairs are a0..a3 of
  // k-step kk (HopperBuilders.h).
  SmallVector<Value> p;
  for (int64_t j = 0; j < cfg.blockN / 4; ++j)
    p.push_back(buildPackPair(b, s[2 * j], s[2 * j + 1], cfg.isF16));
  return p;
}

void AttentionKernelBuilder::buildRescale(SmallVectorImpl<Value> &o,
                                          const SoftmaxStep &step) {
  // O (and with rowsum=mma the l columns beside it) times α, row by row.
  auto rescale = [&](ImplicitLocOpBuilder &nb, ValueRange acc) {
    SmallVector<Value> out(acc);
    for (int64_t i = 0; i < cfg.pvColumns() / 8; ++i)
      for (int r = 0; r < 2; ++r)
        for (int e = 0; e < 2; ++e)
          out[4 * i + 2 * r + e] =
              arith::MulFOp::create(nb, out[4 * i + 2 * r + e], step.alpha[r]);
    return out;
  };
  if (!step.anyMoved) {
    o = rescale(b, o);
    return;
  }
  // Lazy rescale: α = 1 on every row of the warp unless one moved its max.
  // In the overlapped loop any branch around these multiplies makes ptxas
  // serialize every wgmma of the kernel (C7513) — an scf.if merging two
  // definitions of O, and equally an in-place branch inside one asm block
  // (bisected with ptxas, perf log): only the plain loop gains from it.
  auto ifOp = scf::IfOp::create(
      b, step.anyMoved,
      [&](OpBuilder &nested, Location loc) {
        ImplicitLocOpBuilder nb(loc, nested);
        scf::YieldOp::create(nb, rescale(nb, o));
      },
      [&](OpBuilder &nested, Location loc) {
        scf::YieldOp::create(nested, loc, o);
      });
  tagStage(ifOp, "rescale");
  o.assign(ifOp.getResults().begin(), ifOp.getResults().end());
}
