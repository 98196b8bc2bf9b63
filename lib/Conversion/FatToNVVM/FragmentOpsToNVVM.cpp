//===- FragmentOpsToNVVM.cpp - warpgroup tiles to per-thread registers ----===//
//
// The tile ops of the pipelined kernel work on `#fat.wgmma_fragment` tiles
// (a warpgroup's registers, FatAttrs.td has the layout). `--convert-fat-to-
// nvvm` distributes them here: a 1:N type conversion turns each tile into
// the registers of one thread, and each op gets one pattern that does its
// math on those registers. In the m64nNk16 layout a thread holds, for its
// two rows r ∈ {0, 1}, the f32 registers 4i + 2r + e (i < N/8, e ∈ {0, 1}),
// and a row vector as registers r.
//
//===----------------------------------------------------------------------===//

#include "fa-t/Conversion/FatToNVVM/FatToNVVM.h"
#include "fa-t/Dialect/Fat/Hopper/HopperBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/DialectConversion.h"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <type_traits>

using namespace mlir;
using namespace mlir::fat;
using namespace mlir::fat::hopper;

/// Tags the scf.if of a score region's versioned reads
/// (ModFragmentLowering), which issueCaptureReadsEarly moves.
static constexpr llvm::StringLiteral kScoreReadsAttrName = "fat.score_reads";

void mlir::fat::populateWgmmaFragmentTypeConversion(
    TypeConverter &converter) {
  converter.addConversion([](Type t) { return t; });
  converter.addConversion(
      [](RankedTensorType t,
         SmallVectorImpl<Type> &results) -> std::optional<LogicalResult> {
        if (!WgmmaFragmentAttr::isFragment(t))
          return std::nullopt;
        results.append(WgmmaFragmentAttr::getRegisterCount(t),
                       WgmmaFragmentAttr::getRegisterType(t));
        return success();
      });
  auto cast = [](OpBuilder &b, TypeRange types, ValueRange inputs,
                 Location loc) -> SmallVector<Value> {
    return UnrealizedConversionCastOp::create(b, loc, types, inputs)
        .getResults();
  };
  converter.addTargetMaterialization(cast);
  converter.addSourceMaterialization(
      [cast](OpBuilder &b, Type type, ValueRange inputs, Location loc) {
        return cast(b, type, inputs, loc)[0];
      });
}


/// Sets the insertion point right after the last of `values` defined in
/// `op`'s block and of the ops there that already compute from one of
/// `after` (before `op` when there is none): per-thread code that only
/// depends on them is issued as soon as they are ready. The kernels are
/// straight-line code that ptxas schedules mostly in issue order, so this
/// is what lets one row's exponentials (MUFU) run under the next row's
/// max shuffles, behind that row's α, as in the kernels measured in the
/// perf log (run 75).
static void setInsertionPointAfterLast(OpBuilder &b, Operation *op,
                                       ValueRange values,
                                       ValueRange after = {}) {
  Operation *last = nullptr;
  auto consider = [&](Operation *def) {
    if (def && def->getBlock() == op->getBlock() &&
        (!last || last->isBeforeInBlock(def)))
      last = def;
  };
  for (Value v : values)
    consider(v.getDefiningOp());
  // The ops between the first of `after` and `op` that depend on it.
  for (Value v : after) {
    Operation *def = v.getDefiningOp();
    if (!def || def->getBlock() != op->getBlock())
      continue;
    llvm::SmallPtrSet<Value, 16> dependent{v};
    for (Operation *it = def->getNextNode(); it && it != op;
         it = it->getNextNode()) {
      if (llvm::none_of(it->getOperands(),
                        [&](Value x) { return dependent.contains(x); }))
        continue;
      dependent.insert(it->result_begin(), it->result_end());
      consider(it);
    }
  }
  if (last)
    b.setInsertionPointAfter(last);
  else
    b.setInsertionPoint(op);
}

/// −ĉm = −(m = −inf ? 0 : c·m), the exponent shift of fat.softmax_max's α
/// and fat.softmax_exp's P (a row with nothing visible yet keeps its
/// numerators and α at 0 instead of NaN).
static Value buildNegScaledMax(ImplicitLocOpBuilder &b, Value m, Value c,
                               Value offset = {}) {
  Value isNegInf = arith::CmpFOp::create(
      b, arith::CmpFPredicate::OEQ, m,
      f32Const(b, -std::numeric_limits<double>::infinity()));
  // With an offset o (scores read as s + o): −c·(m − o).
  Value shifted = offset ? arith::SubFOp::create(b, m, offset) : m;
  return arith::NegFOp::create(
      b, arith::SelectOp::create(b, isNegInf, f32Const(b, 0.0),
                                 arith::MulFOp::create(b, shifted, c)));
}

namespace {
/// fat.softmax_max on a fragment, per row r of the thread (its N/4
/// elements 4i + 2r + e): the thread's max, then the quad's (shuffles xor
/// 1, 2), then m', ĉm' and α as the op defines them. LLVM's maxnum, not
/// arith.maxnumf: convert-gpu-to-nvvm would turn the latter into a
/// libdevice call.
struct SoftmaxMaxLowering : OpConversionPattern<SoftmaxMaxOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(SoftmaxMaxOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    SmallVector<Value> s(adaptor.getScores());
    SmallVector<Value> mOld(adaptor.getMax());
    if (mOld.size() != 2 || adaptor.getScale().size() != 1)
      return rewriter.notifyMatchFailure(op, "not a wgmma fragment");
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    Value c = adaptor.getScale().front();
    Value one = f32Const(b, 1.0);
    Value negInf = f32Const(b, -std::numeric_limits<double>::infinity());
    std::optional<APFloat> tau = op.getThreshold();
    // With offsets o_p: max(m, max_p (rowmax S_p + o_p)) over the runs S_p
    // of 8-key groups, each o_p added once per row to the thread's run max
    // (the quad's max of x + o is its max of x, plus o: rounding is
    // monotone).
    SmallVector<Value> offsets;
    for (ValueRange offset : adaptor.getOffsets())
      offsets.push_back(offset.front());
    size_t groups = s.size() / 4;
    size_t runGroups = offsets.empty() ? groups : groups / offsets.size();
    SmallVector<Value> mNew, alpha;
    for (int r = 0; r < 2; ++r) {
      Value mx = mOld[r];
      for (size_t first = 0; first < groups; first += runGroups) {
        Value run = offsets.empty() ? mx : negInf;
        for (size_t i = first; i < first + runGroups; ++i)
          for (int e = 0; e < 2; ++e)
            run = LLVM::MaxNumOp::create(b, run, s[4 * i + 2 * r + e]);
        mx = offsets.empty() ? run
                             : LLVM::MaxNumOp::create(
                                   b, mx,
                                   arith::AddFOp::create(
                                       b, run, offsets[first / runGroups]));
      }
      Value m = buildQuadReduce(b, mx, /*isMax=*/true);
      Value moved;
      if (tau) {
        // m̂ − m is +inf or NaN when m = −inf: the first visible block
        // always moves the reference (NaN compares false, hence the test).
        Value growth =
            arith::MulFOp::create(b, arith::SubFOp::create(b, m, mOld[r]), c);
        moved = arith::OrIOp::create(
            b,
            arith::CmpFOp::create(b, arith::CmpFPredicate::OGT, growth,
                                  f32Const(b, tau->convertToDouble())),
            arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, mOld[r],
                                  negInf));
        m = arith::SelectOp::create(b, moved, m, mOld[r]);
      }
      Value a = buildExp2(
          b, LLVM::FMAOp::create(b, mOld[r], c, buildNegScaledMax(b, m, c)));
      if (tau)
        a = arith::SelectOp::create(b, moved, a, one);
      mNew.push_back(m);
      alpha.push_back(a);
    }
    rewriter.replaceOpWithMultiple(op, {mNew, alpha});
    return success();
  }
};

/// fat.softmax_exp on a fragment: per element fma(s, c, −ĉm') then MUFU
/// ex2 or the FMA-pipe polynomial (register k = 2i + e of the row, as
/// SoftmaxExpOp::usesPolynomial spreads them), with the vector row sum the
/// thread's partial: the quad's total is taken once, in the epilogue.
struct SoftmaxExpLowering : OpConversionPattern<SoftmaxExpOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(SoftmaxExpOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    SmallVector<Value> s(adaptor.getScores());
    SmallVector<Value> m(adaptor.getMax());
    SmallVector<Value> lOld(adaptor.getSum());
    SmallVector<Value> alpha(adaptor.getAlpha());
    if (m.size() != 2 || adaptor.getScale().size() != 1)
      return rewriter.notifyMatchFailure(op, "not a wgmma fragment");
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    Value c = adaptor.getScale().front();
    double phi = op.getExp2Poly().convertToDouble();
    bool rowSum = bool(op.getSum());
    // With offsets: a −ĉm per run of 8-key groups.
    SmallVector<Value> offsets;
    for (ValueRange offset : adaptor.getOffsets())
      offsets.push_back(offset.front());
    size_t runGroups =
        offsets.empty() ? s.size() / 4 : s.size() / 4 / offsets.size();
    SmallVector<Value> p(s.begin(), s.end()), l;
    for (int r = 0; r < 2; ++r) {
      // Row r as soon as its m' (and l, α) and scores are ready, behind
      // what already computes from m' (the row's α).
      SmallVector<Value> inputs{m[r], c};
      llvm::append_range(inputs, offsets);
      for (size_t i = 0; i < s.size() / 4; ++i)
        inputs.append({s[4 * i + 2 * r], s[4 * i + 2 * r + 1]});
      if (rowSum)
        inputs.push_back(lOld[r]);
      if (!alpha.empty())
        inputs.push_back(alpha[r]);
      setInsertionPointAfterLast(b, op, inputs, m[r]);
      SmallVector<Value> negScaledMax;
      if (offsets.empty())
        negScaledMax.push_back(buildNegScaledMax(b, m[r], c));
      for (Value offset : offsets)
        negScaledMax.push_back(buildNegScaledMax(b, m[r], c, offset));
      Value sum = f32Const(b, 0.0);
      for (size_t i = 0; i < s.size() / 4; ++i) {
        for (int e = 0; e < 2; ++e) {
          size_t idx = 4 * i + 2 * r + e;
          Value x =
              LLVM::FMAOp::create(b, s[idx], c, negScaledMax[i / runGroups]);
          p[idx] = SoftmaxExpOp::usesPolynomial(2 * i + e, phi)
                       ? buildExp2Poly(b, x)
                       : buildExp2(b, x);
          if (rowSum)
            sum = arith::AddFOp::create(b, sum, p[idx]);
        }
      }
      // Without α (a fixed reference, α = 1) the sum is only added.
      if (rowSum)
        l.push_back(
            alpha.empty()
                ? arith::AddFOp::create(b, lOld[r], sum).getResult()
                : LLVM::FMAOp::create(b, lOld[r], alpha[r], sum).getResult());
    }
    if (rowSum)
      rewriter.replaceOpWithMultiple(op, {p, l});
    else
      rewriter.replaceOpWithMultiple(op, {p});
    return success();
  }
};

/// arith.truncf of an f32 fragment to a 16-bit one: each pair of registers
/// (elements e = 0, 1 of one row and column group) becomes one
/// `cvt.rn.{bf16x2,f16x2}.f32` register, which is already the A fragment
/// of a register-A wgmma (FatAttrs.td).
struct TruncFFragmentLowering : OpConversionPattern<arith::TruncFOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(arith::TruncFOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = dyn_cast<RankedTensorType>(op.getType());
    if (!type || !WgmmaFragmentAttr::isFragment(type) || type.getRank() != 2)
      return rewriter.notifyMatchFailure(op, "not a wgmma fragment tile");
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    SmallVector<Value> s(adaptor.getIn());
    bool isF16 = type.getElementType().isF16();
    SmallVector<Value> packed;
    for (size_t j = 0; j < s.size() / 2; ++j)
      packed.push_back(buildPackPair(b, s[2 * j], s[2 * j + 1], isF16));
    rewriter.replaceOpWithMultiple(op, {packed});
    return success();
  }
};

/// fat.convert_layout of a partial row vector: each register r of the
/// thread plus the quad's other three (butterfly shuffles xor 1, 2).
struct ConvertLayoutLowering : OpConversionPattern<ConvertLayoutOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ConvertLayoutOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    SmallVector<Value> rows;
    for (Value share : adaptor.getInput())
      rows.push_back(buildQuadReduce(b, share, /*isMax=*/false));
    rewriter.replaceOpWithMultiple(op, {rows});
    return success();
  }
};

/// fat.finalize on fragments. Per row r of the thread: l (the operand's
/// register r, summed over the quad when it is partial, or register
/// 4·Dv/8 + 2r of acc, the first ones column this thread holds — all of
/// them hold the sum), l ≠ 0 (NaN passes) and 1 / l (0 for an empty row). Then
/// register 2i + r of the 16-bit output is the pair o · (1 / l) of acc
/// registers 4i + 2r + e, and register r of the LSE ln 2 · (c·m + log2 l) (−inf
/// when empty), each its own chain of ops, which fat.store_output and
/// fat.stage_output move next to their stores; a result nobody reads is
/// not formed.
struct FinalizeFragmentLowering : OpConversionPattern<FinalizeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(FinalizeOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto outType = cast<RankedTensorType>(op.getOutput().getType());
    if (!WgmmaFragmentAttr::isFragment(outType) || !op.getExp2Scale())
      return rewriter.notifyMatchFailure(
          op, "a fragment fat.finalize takes a run-time exp2_scale");
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    SmallVector<Value> o(adaptor.getAcc()), m(adaptor.getMax());
    SmallVector<Value> l(adaptor.getSum());
    Value c = adaptor.getExp2Scale().front();
    int64_t dv = outType.getDimSize(1);
    bool partialSum = op.getSum() && WgmmaFragmentAttr::isPartial(op.getSum().getType());
    Value zero = f32Const(b, 0.0);
    Value one = f32Const(b, 1.0);
    Value sum[2], nonEmpty[2], inv[2];
    for (int r = 0; r < 2; ++r) {
      sum[r] = l.empty()   ? o[4 * (dv / 8) + 2 * r]
               : partialSum ? buildQuadReduce(b, l[r], /*isMax=*/false)
                            : l[r];
      // l ≠ 0, NaN included: an empty row is exactly 0 (fat.finalize).
      nonEmpty[r] =
          arith::CmpFOp::create(b, arith::CmpFPredicate::UNE, sum[r], zero);
      inv[r] = arith::SelectOp::create(
          b, nonEmpty[r], arith::DivFOp::create(b, one, sum[r]), zero);
    }
    bool isF16 = outType.getElementType().isF16();
    SmallVector<Value> out, lse;
    for (int64_t i = 0; !op.getOutput().use_empty() && i < dv / 8; ++i) {
      for (int r = 0; r < 2; ++r) {
        Value lo = arith::MulFOp::create(b, o[4 * i + 2 * r], inv[r]);
        Value hi = arith::MulFOp::create(b, o[4 * i + 2 * r + 1], inv[r]);
        out.push_back(buildPackPair(b, lo, hi, isF16));
      }
    }
    for (int r = 0; r < 2 && !op.getLse().use_empty(); ++r) {
      // LSE = ln Σ exp(scale·s) = (c·m + log2 l)·ln 2 with c = scale·log2 e.
      Value value = arith::MulFOp::create(
          b,
          arith::AddFOp::create(b, arith::MulFOp::create(b, m[r], c),
                                buildLog2(b, sum[r])),
          f32Const(b, M_LN2));
      lse.push_back(arith::SelectOp::create(
          b, nonEmpty[r], value,
          f32Const(b, -std::numeric_limits<double>::infinity())));
    }
    // Unread results still need values of their shape; none is emitted.
    auto placeholders = [&](Value result, SmallVector<Value> &regs) {
      if (!regs.empty())
        return;
      auto type = cast<RankedTensorType>(result.getType());
      Value poison = LLVM::PoisonOp::create(
          b, WgmmaFragmentAttr::getRegisterType(type));
      regs.assign(WgmmaFragmentAttr::getRegisterCount(type), poison);
    };
    placeholders(op.getOutput(), out);
    placeholders(op.getLse(), lse);
    rewriter.replaceOpWithMultiple(op, {out, lse});
    return success();
  }
};

/// arith.constant of a fragment tile with one value everywhere (the online
/// softmax's start: O = 0, m = −inf, l = 0, and P = 0): every register of
/// the thread holds it — f32 as it is, 16-bit elements as the i32 of the
/// pair (the value in both halves).
struct ConstantFragmentLowering : OpConversionPattern<arith::ConstantOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(arith::ConstantOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = dyn_cast<RankedTensorType>(op.getType());
    auto splat = dyn_cast<SplatElementsAttr>(op.getValue());
    if (!type || !WgmmaFragmentAttr::isFragment(type) || !splat)
      return rewriter.notifyMatchFailure(
          op, "a fragment constant must hold one value everywhere");
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    APFloat value = splat.getSplatValue<APFloat>();
    Value reg;
    if (type.getElementType().isF32()) {
      reg = f32Const(b, value.convertToFloat());
    } else {
      uint64_t half = value.bitcastToAPInt().getZExtValue();
      reg = i32Const(b, static_cast<int32_t>(half | (half << 16)));
    }
    SmallVector<Value> regs(WgmmaFragmentAttr::getRegisterCount(type), reg);
    rewriter.replaceOpWithMultiple(op, {regs});
    return success();
  }
};

/// x where `keep` holds, −∞ elsewhere: one `selp` however many conditions
/// `keep` joins. NVPTX's instruction selection turns a select on an i1
/// `and` / `or` into a chain of selects, one per condition, and ptxas keeps
/// them (a document mask's two bounds and the key bound cost three FSEL per
/// element, perf log run 157); behind an identity `mov.pred` the conditions
/// join as predicates, which ptxas folds into the ISETPs' .AND / .OR input.
static Value selectVisible(ImplicitLocOpBuilder &b, Value keep, Value x,
                           Value negInf) {
  if (isa_and_present<arith::AndIOp, arith::OrIOp>(keep.getDefiningOp()))
    keep = buildInlineAsm(b, b.getI1Type(), keep, "mov.pred $0, $1;", "=b,b",
                          /*sideEffects=*/false)
               .front();
  return arith::SelectOp::create(b, keep, x, negInf);
}

/// fat.rescale of a fragment tile: register 4i + 2r + e times α_r (of a
/// row vector: register r). With `warp_vote` the warp skips the
/// multiplies when α = 1 on each of its rows (a vote over the warp's 32
/// threads; exact, since x·1 = x).
struct RescaleFragmentLowering : OpConversionPattern<RescaleOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(RescaleOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    SmallVector<Value> x(adaptor.getInput());
    SmallVector<Value> alpha(adaptor.getFactor());
    bool rows = cast<RankedTensorType>(op.getType()).getRank() == 1;
    if (alpha.size() != 2 || (rows ? x.size() != 2 : x.size() % 4 != 0))
      return rewriter.notifyMatchFailure(op, "not a wgmma fragment tile");
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    auto scale = [&](ImplicitLocOpBuilder &nb) {
      SmallVector<Value> out(x.begin(), x.end());
      if (rows) {
        for (int r = 0; r < 2; ++r)
          out[r] = arith::MulFOp::create(nb, out[r], alpha[r]);
        return out;
      }
      for (size_t i = 0; i < x.size() / 4; ++i)
        for (int r = 0; r < 2; ++r)
          for (int e = 0; e < 2; ++e)
            out[4 * i + 2 * r + e] =
                arith::MulFOp::create(nb, out[4 * i + 2 * r + e], alpha[r]);
      return out;
    };
    if (!op.getWarpVote()) {
      rewriter.replaceOpWithMultiple(op, {scale(b)});
      return success();
    }
    // The vote as soon as α is known, so that its latency hides under the
    // work before the multiplies.
    OpBuilder::InsertPoint here = b.saveInsertionPoint();
    setInsertionPointAfterLast(b, op, alpha);
    // The vote needs a superset of the rows with α ≠ 1 (multiplying a row
    // by α = 1 is exact). For α = select(p, x, 1), fat.softmax_max's lazy
    // form with p = "the reference moved", that is p itself, with no
    // compare; else α ≠ 1.
    auto notOne = [&](Value a) -> Value {
      auto select = a.getDefiningOp<arith::SelectOp>();
      APFloat f(0.0f);
      if (select &&
          matchPattern(select.getFalseValue(), m_ConstantFloat(&f)) &&
          f.isExactlyValue(1.0))
        return select.getCondition();
      return arith::CmpFOp::create(b, arith::CmpFPredicate::UNE, a,
                                   f32Const(b, 1.0));
    };
    Value moved = arith::OrIOp::create(b, notOne(alpha[0]), notOne(alpha[1]));
    Value anyMoved = NVVM::VoteSyncOp::create(
        b, b.getI1Type(), i32Const(b, -1), moved,
        NVVM::VoteSyncKindAttr::get(b.getContext(), NVVM::VoteSyncKind::any));
    b.restoreInsertionPoint(here);
    auto ifOp = scf::IfOp::create(
        b, anyMoved,
        [&](OpBuilder &nested, Location loc) {
          ImplicitLocOpBuilder nb(loc, nested);
          scf::YieldOp::create(nb, scale(nb));
        },
        [&](OpBuilder &nested, Location loc) {
          scf::YieldOp::create(nested, loc, x);
        });
    ifOp->setAttr("fat.stage", b.getStringAttr("rescale"));
    rewriter.replaceOpWithMultiple(op, {ifOp.getResults()});
    return success();
  }
};
/// An index operand of a kernel tile op as the i32 the kernel computes in:
/// the value the kernel cast to index, else a cast back.
static Value asI32(ImplicitLocOpBuilder &b, Value index) {
  if (auto c = index.getDefiningOp<arith::IndexCastOp>())
    if (c.getIn().getType().isInteger(32))
      return c.getIn();
  return arith::IndexCastOp::create(b, b.getI32Type(), index);
}

/// fat.mask of a fragment tile. Register 4i + 2r + e of the thread holds
/// (row q0 + 16w + λ/4 + 8r, key k0 + 2(λ%4) + 8i + e); the bounds of the
/// op become, with c0 = k0 + 2(λ%4) and the constant κ = 8i + e,
///   c0 + κ < Skv                   κ ≤ Skv − 1 − c0
///   c0 + κ ≤ row + δ + right       κ ≤ row + δ + right − c0  (causal: 0)
///   c0 + κ ≥ row + δ − left        κ ≥ row + δ − left − c0
/// as limits per row (`row_limits`), or as each key's index compared with
/// every bound. The thread coordinates repeat the kernel's own (tid.x is
/// pure, so they fold into the values the kernel computed at its entry).
struct MaskFragmentLowering : OpConversionPattern<MaskOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(MaskOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    SmallVector<Value> s(adaptor.getScores());
    if (!WgmmaFragmentAttr::isFragment(op.getScores().getType()))
      return rewriter.notifyMatchFailure(op, "not a wgmma fragment tile");
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    using P = arith::CmpIPredicate;
    I32Math m{b};
    int64_t left = -1, right = -1;
    if (std::optional<ArrayRef<int64_t>> w = op.getWindow())
      left = (*w)[0], right = (*w)[1];
    std::optional<int64_t> rightEdge = maskRightEdge(op.getCausal(), right);
    bool bounded = op.getCausal() || left >= 0 || right >= 0;

    Value tid = NVVM::ThreadIdXOp::create(b, b.getI32Type());
    Value warp = arith::RemUIOp::create(
        b, arith::DivUIOp::create(b, tid, m.c32(32)), m.c32(4));
    Value lane = arith::RemUIOp::create(b, tid, m.c32(32));
    Value rowBase = m.add(asI32(b, adaptor.getQStart().front()),
                          m.add(m.mul(warp, m.c32(16)),
                                arith::DivUIOp::create(b, lane, m.c32(4))));
    Value seqKV = asI32(b, adaptor.getKvLen().front());
    Value diag = asI32(b, adaptor.getDiagonal().front());
    Value t = arith::RemUIOp::create(b, lane, m.c32(4));
    Value colBase =
        m.add(asI32(b, adaptor.getKvStart().front()), m.mul(t, m.c32(2)));
    Value negInf = f32Const(b, -std::numeric_limits<double>::infinity());
    SmallVector<Value> out(s.begin(), s.end());
    size_t groups = s.size() / 4;
    if (op.getRowLimits()) {
      Value tail = m.sub(m.sub(seqKV, m.c32(1)), colBase);
      Value hi[2], lo[2];
      for (int r = 0; r < 2; ++r) {
        hi[r] = tail;
        if (!bounded)
          continue;
        Value rowDiag = m.add(m.add(rowBase, m.c32(8 * r)), diag);
        if (rightEdge)
          hi[r] = arith::MinSIOp::create(
              b, tail, m.sub(m.add(rowDiag, m.c32(*rightEdge)), colBase));
        if (left >= 0)
          lo[r] = m.sub(m.sub(rowDiag, m.c32(left)), colBase);
      }
      for (size_t i = 0; i < groups; ++i) {
        for (int e = 0; e < 2; ++e) {
          Value k = m.c32(8 * i + e);
          for (int r = 0; r < 2; ++r) {
            Value visible = m.cmp(P::sle, k, hi[r]);
            if (lo[r])
              visible =
                  arith::AndIOp::create(b, visible, m.cmp(P::sge, k, lo[r]));
            size_t idx = 4 * i + 2 * r + e;
            out[idx] = arith::SelectOp::create(b, visible, out[idx], negInf);
          }
        }
      }
    } else {
      Value rowDiag[2];
      for (int r = 0; r < 2; ++r)
        rowDiag[r] = m.add(m.add(rowBase, m.c32(8 * r)), diag);
      for (size_t i = 0; i < groups; ++i) {
        for (int e = 0; e < 2; ++e) {
          Value col = m.add(colBase, m.c32(8 * i + e));
          Value inRange = m.cmp(P::slt, col, seqKV);
          for (int r = 0; r < 2; ++r) {
            Value visible = inRange;
            auto both = [&](Value cond) {
              visible = arith::AndIOp::create(b, visible, cond);
            };
            if (op.getCausal())
              both(m.cmp(P::sle, col, rowDiag[r]));
            if (left >= 0)
              both(m.cmp(P::sge, col, m.sub(rowDiag[r], m.c32(left))));
            if (right >= 0)
              both(m.cmp(P::sle, col, m.add(rowDiag[r], m.c32(right))));
            size_t idx = 4 * i + 2 * r + e;
            out[idx] = selectVisible(b, visible, out[idx], negInf);
          }
        }
      }
    }
    rewriter.replaceOpWithMultiple(op, {out});
    return success();
  }
};
/// tensor.splat of a scalar to a fragment tile: every register holds it.
struct SplatFragmentLowering : OpConversionPattern<tensor::SplatOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(tensor::SplatOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    if (!WgmmaFragmentAttr::isFragment(type) ||
        !type.getElementType().isF32())
      return rewriter.notifyMatchFailure(op, "not an f32 fragment tile");
    SmallVector<Value> regs(WgmmaFragmentAttr::getRegisterCount(type),
                            adaptor.getInput().front());
    rewriter.replaceOpWithMultiple(op, {regs});
    return success();
  }
};

/// An element-wise f32 arith op on fragment tiles: the same op on each
/// register (the operands share the layout, so register k of each is the
/// same element).
template <typename ArithOp>
struct ElementwiseFragmentLowering : OpConversionPattern<ArithOp> {
  using OpConversionPattern<ArithOp>::OpConversionPattern;
  using OneToNOpAdaptor =
      typename OpConversionPattern<ArithOp>::OneToNOpAdaptor;
  LogicalResult
  matchAndRewrite(ArithOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = dyn_cast<RankedTensorType>(op.getType());
    if (!type || !WgmmaFragmentAttr::isFragment(type) ||
        !type.getElementType().isF32())
      return rewriter.notifyMatchFailure(op, "not an f32 fragment tile");
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    ValueRange lhs = adaptor.getLhs(), rhs = adaptor.getRhs();
    SmallVector<Value> out;
    for (auto [x, y] : llvm::zip_equal(lhs, rhs))
      out.push_back(ArithOp::create(b, x, y, op.getFastmathAttr()));
    rewriter.replaceOpWithMultiple(op, {out});
    return success();
  }
};

/// arith.mulf of two 16-bit fragment tiles (P times fat.key_weights'
/// weights): one packed `mul.rn.{bf16x2,f16x2}` per register, each register
/// holding the same two elements of both (TruncFFragmentLowering's pairs).
struct PackedMulFragmentLowering : OpConversionPattern<arith::MulFOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(arith::MulFOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = dyn_cast<RankedTensorType>(op.getType());
    if (!type || !WgmmaFragmentAttr::isFragment(type) ||
        type.getElementType().getIntOrFloatBitWidth() != 16)
      return rewriter.notifyMatchFailure(op, "not a 16-bit fragment tile");
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    StringRef text = type.getElementType().isF16()
                         ? "mul.rn.f16x2 $0, $1, $2;"
                         : "mul.rn.bf16x2 $0, $1, $2;";
    SmallVector<Value> out;
    for (auto [x, y] : llvm::zip_equal(adaptor.getLhs(), adaptor.getRhs()))
      out.push_back(buildInlineAsm(b, b.getI32Type(), ValueRange{x, y}, text,
                                   "=r,r,r", /*sideEffects=*/false)[0]);
    rewriter.replaceOpWithMultiple(op, {out});
    return success();
  }
};

/// |x| and |m| with the sign of s, on the bits: convert-gpu-to-nvvm turns
/// LLVM's fabs / copysign (and math's) into libdevice calls.
static Value buildAbs(ImplicitLocOpBuilder &b, Value x) {
  Value bits = arith::BitcastOp::create(b, b.getI32Type(), x);
  Value abs = arith::AndIOp::create(b, bits, i32Const(b, 0x7fffffff));
  return arith::BitcastOp::create(b, b.getF32Type(), abs);
}
static Value buildCopySign(ImplicitLocOpBuilder &b, Value magnitude,
                           Value sign) {
  Value s = arith::AndIOp::create(
      b, arith::BitcastOp::create(b, b.getI32Type(), sign),
      i32Const(b, static_cast<int32_t>(0x80000000u)));
  Value m = arith::AndIOp::create(
      b, arith::BitcastOp::create(b, b.getI32Type(), magnitude),
      i32Const(b, 0x7fffffff));
  return arith::BitcastOp::create(b, b.getF32Type(),
                                  arith::OrIOp::create(b, m, s));
}

/// math.tanh (f32) in a kernel: tanh x = sign(x)·(1 − t)/(1 + t) with t =
/// 2^(−2|x|·log2 e), on MUFU `ex2.approx` and `rcp.approx` (each ≤ 2 ulp:
/// an absolute error of a few 1e-7, which a soft-cap c·tanh(s/c) scales to
/// c·1e-7 of the score). libdevice's tanhf adds a polynomial branch for the
/// relative error at small |x| that a score does not need.
/// Approximate (a tanh with the afn flag, or every tanh with tanh=approx;
/// Passes.td says when): MUFU `tanh.approx.f32`, one instruction.
struct TanhLowering : OpConversionPattern<math::TanhOp> {
  TanhLowering(const TypeConverter &converter, MLIRContext *ctx,
               TanhForm form)
      : OpConversionPattern(converter, ctx), form(form) {}
  LogicalResult
  matchAndRewrite(math::TanhOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (!op.getType().isF32())
      return rewriter.notifyMatchFailure(op, "not f32");
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    Value x = adaptor.getOperand();
    bool approx = form == TanhForm::Approx ||
                  (form == TanhForm::Auto &&
                   bitEnumContainsAll(op.getFastmath(),
                                      arith::FastMathFlags::afn));
    if (approx) {
      rewriter.replaceOp(op, buildInlineAsm(b, b.getF32Type(), x,
                                            "tanh.approx.f32 $0, $1;", "=f,f",
                                            /*sideEffects=*/false));
      return success();
    }
    Value t = buildExp2(
        b, arith::MulFOp::create(b, buildAbs(b, x),
                                 f32Const(b, -2.0 * M_LOG2E)));
    Value one = f32Const(b, 1.0);
    Value r = NVVM::RcpApproxFtzF32Op::create(b, b.getF32Type(),
                                              arith::AddFOp::create(b, one, t));
    Value y = arith::MulFOp::create(b, arith::SubFOp::create(b, one, t), r);
    rewriter.replaceOp(op, buildCopySign(b, y, x));
    return success();
  }
  TanhForm form;
};

/// fat.score_mod's tanh_poly polynomial x·Σ c_k·x^(2k) (FatTileOps.td) on
/// the FMA pipe: x², three FFMAs by Horner, one FMUL.
static Value buildTanhPoly(ImplicitLocOpBuilder &b, Value x) {
  const auto &c = ScoreModOp::kTanhPoly;
  Value t = arith::MulFOp::create(b, x, x);
  Value p = f32Const(b, c[3]);
  for (int k = 2; k >= 0; --k)
    p = LLVM::FMAOp::create(b, p, t, f32Const(b, c[k]));
  return arith::MulFOp::create(b, x, p);
}

/// e^x as the softmax computes its exponentials: MUFU ex2.approx of x·log2 e.
static Value buildExp(ImplicitLocOpBuilder &b, Value x) {
  return buildExp2(b, arith::MulFOp::create(b, x, f32Const(b, M_LOG2E)));
}

/// An f32 math op of a kernel by its kernel form `build`: math.exp by
/// buildExp, math.absf by buildAbs. (convert-gpu-to-nvvm would call
/// libdevice for both, which a kernel compiled without the CUDA toolkit at
/// hand cannot link.)
template <typename MathOp, Value (*build)(ImplicitLocOpBuilder &, Value)>
struct UnaryMathLowering : OpConversionPattern<MathOp> {
  using OpConversionPattern<MathOp>::OpConversionPattern;
  using OpAdaptor = typename OpConversionPattern<MathOp>::OpAdaptor;
  LogicalResult
  matchAndRewrite(MathOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (!op.getType().isF32())
      return rewriter.notifyMatchFailure(op, "not f32");
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    rewriter.replaceOp(op, build(b, adaptor.getOperand()));
    return success();
  }
};

/// The `arith.subi` i − j of a region's row and key arguments `positions`
/// that `conv` (an `arith.sitofp` to f32, possibly through an
/// `arith.index_cast`) converts; null otherwise.
static arith::SubIOp positionDifference(arith::SIToFPOp conv,
                                        ValueRange positions) {
  if (!conv.getType().isF32())
    return {};
  Value in = conv.getIn();
  if (auto cast = in.getDefiningOp<arith::IndexCastOp>())
    in = cast.getIn();
  auto sub = in.getDefiningOp<arith::SubIOp>();
  if (!sub || !llvm::is_contained(positions, sub.getLhs()) ||
      !llvm::is_contained(positions, sub.getRhs()))
    return {};
  return sub;
}
/// float(i − j) of a region (`arith.sitofp` to f32 of an `arith.subi` of
/// its row and key arguments `positions`, possibly through an
/// `arith.index_cast`: ALiBi's slope·(j − i)) as float(i) − float(j), the
/// operands `floatOf(i)`, `floatOf(j)`: the element's row and key as f32
/// (ModFragmentLowering: a per-row value and a per-key FADD on a per-tile
/// float base). Positions lie in [0, 2^31), so i − j does not wrap, and an
/// element costs one FSUB instead of an integer subtract, a clamp and an
/// I2F, which issues at a quarter of the FMA pipe's rate on sm_90 like
/// MUFU. Exact while positions are below 2^24 (integers of f32's 24-bit
/// significand, so the conversions, the sums and the difference are
/// exact). Null where the pattern does not apply.
static Value splitIndexDifference(ImplicitLocOpBuilder &b,
                                  arith::SIToFPOp conv, ValueRange positions,
                                  function_ref<Value(Value)> floatOf,
                                  bool negated = false) {
  arith::SubIOp sub = positionDifference(conv, positions);
  if (!sub)
    return Value();
  Value lhs = floatOf(sub.getLhs()), rhs = floatOf(sub.getRhs());
  if (negated)
    std::swap(lhs, rhs);
  return arith::SubFOp::create(b, lhs, rhs);
}

/// The subtractions a − b·float(i − j) of a region (the multiply and the
/// conversion used once): ALiBi's `score − slope·(i − j)`. The kernel emits
/// them as a + b·(float(j) − float(i)), exact, so that LLVM's contraction
/// fuses b·d into an FFMA without an FNEG per element (it negates the
/// product when both operands of the FSUB are products, as here with the
/// scaled score).
static llvm::SmallPtrSet<Operation *, 4>
negatedDifferences(Block &body, ValueRange positions) {
  llvm::SmallPtrSet<Operation *, 4> ops;
  body.walk([&](arith::SubFOp sub) {
    auto mul = sub.getRhs().getDefiningOp<arith::MulFOp>();
    if (!mul || !mul->hasOneUse() || sub.getLhs() == sub.getRhs())
      return;
    for (Value factor : mul->getOperands()) {
      auto conv = factor.getDefiningOp<arith::SIToFPOp>();
      if (conv && conv->hasOneUse() && positionDifference(conv, positions) &&
          mul.getLhs() != mul.getRhs()) {
        ops.insert(sub);
        ops.insert(conv);
        return;
      }
    }
  });
  return ops;
}

/// The range [lo, hi] that a region's integer value spans over one fragment
/// tile, for the reads of captured tensors: an index that is an affine
/// function of the row and key (adds, subtracts, products with constants,
/// widening casts of them; b, h and constants enter as themselves) takes
/// its extremes at the ends of their ranges, so two values bound it. Wider
/// than 32 bits only: positions lie below 2^31 and constants below 2^31 in
/// magnitude, so no sum or product wraps and the adds may carry nsw.
class TileIndexRanges {
public:
  /// `positions` are the body's row and key arguments, `uniform` its batch
  /// and head arguments.
  TileIndexRanges(ValueRange positions, ValueRange uniform)
      : positions(positions), uniform(uniform) {}

  /// The ranges of the row and key over the tile and the values of batch
  /// and head (all `index`), before any `emit`.
  void seed(std::pair<Value, Value> rows, std::pair<Value, Value> keys,
            Value batch, Value head) {
    known[positions[0]] = rows;
    known[positions[1]] = keys;
    known[uniform[0]] = {batch, batch};
    known[uniform[1]] = {head, head};
  }

  /// Whether `v` has a range this class can bound.
  bool isBounded(Value v) {
    if (auto arg = dyn_cast<BlockArgument>(v))
      return llvm::is_contained(positions, arg) ||
             llvm::is_contained(uniform, arg);
    Operation *def = v.getDefiningOp();
    if (matchPattern(v, m_Constant()))
      return smallConstant(v).has_value();
    if (!isWide(v.getType()))
      return false;
    if (isa<arith::AddIOp, arith::SubIOp>(def))
      return isBounded(def->getOperand(0)) && isBounded(def->getOperand(1));
    if (auto mul = dyn_cast<arith::MulIOp>(def))
      return smallConstant(mul.getRhs()) ? isBounded(mul.getLhs())
             : smallConstant(mul.getLhs()) && isBounded(mul.getRhs());
    if (isa<arith::IndexCastOp, arith::ExtSIOp>(def))
      return width(def->getOperand(0).getType()) <= width(v.getType()) &&
             isBounded(def->getOperand(0));
    return false;
  }

  /// Whether `v` varies with the key.
  bool dependsOnKey(Value v) {
    if (auto arg = dyn_cast<BlockArgument>(v))
      return arg == positions[1];
    return llvm::any_of(v.getDefiningOp()->getOperands(),
                        [&](Value x) { return dependsOnKey(x); });
  }

  /// d v / d position (the row: 0, the key: 1) of a value isBounded
  /// accepts: a compile-time constant, the value being affine.
  int64_t coefficient(Value v, unsigned position) {
    if (v == positions[position])
      return 1;
    Operation *def = v.getDefiningOp();
    if (!def || matchPattern(v, m_Constant()))
      return 0;
    if (isa<arith::AddIOp>(def))
      return coefficient(def->getOperand(0), position) +
             coefficient(def->getOperand(1), position);
    if (isa<arith::SubIOp>(def))
      return coefficient(def->getOperand(0), position) -
             coefficient(def->getOperand(1), position);
    if (auto mul = dyn_cast<arith::MulIOp>(def)) {
      if (std::optional<int64_t> c = smallConstant(mul.getRhs()))
        return *c * coefficient(mul.getLhs(), position);
      return *smallConstant(mul.getLhs()) * coefficient(mul.getRhs(), position);
    }
    return coefficient(def->getOperand(0), position);
  }

  /// The same for the row-major linear index of a read.
  int64_t coefficient(tensor::ExtractOp extract, unsigned position) {
    ArrayRef<int64_t> shape =
        cast<RankedTensorType>(extract.getTensor().getType()).getShape();
    int64_t sum = 0, stride = 1;
    for (int64_t d = shape.size() - 1; d >= 0; --d) {
      sum += coefficient(extract.getIndices()[d], position) * stride;
      stride *= shape[d];
    }
    return sum;
  }

  /// [lo, hi] of a value isBounded accepts, computed at `b`.
  std::pair<Value, Value> emit(ImplicitLocOpBuilder &b, Value v) {
    if (auto it = known.find(v); it != known.end())
      return it->second;
    Operation *def = v.getDefiningOp();
    std::pair<Value, Value> range;
    auto binary = [&](auto tag, Value x, Value y) -> Value {
      using OpTy = decltype(tag);
      return OpTy::create(b, x, y, arith::IntegerOverflowFlags::nsw);
    };
    if (matchPattern(v, m_Constant())) {
      Value c = b.clone(*def)->getResult(0);
      range = {c, c};
    } else if (isa<arith::AddIOp>(def)) {
      auto [xl, xh] = emit(b, def->getOperand(0));
      auto [yl, yh] = emit(b, def->getOperand(1));
      range = {binary(arith::AddIOp(), xl, yl),
               binary(arith::AddIOp(), xh, yh)};
    } else if (isa<arith::SubIOp>(def)) {
      auto [xl, xh] = emit(b, def->getOperand(0));
      auto [yl, yh] = emit(b, def->getOperand(1));
      range = {binary(arith::SubIOp(), xl, yh),
               binary(arith::SubIOp(), xh, yl)};
    } else if (auto mul = dyn_cast<arith::MulIOp>(def)) {
      bool rhsConstant = smallConstant(mul.getRhs()).has_value();
      int64_t c = rhsConstant ? *smallConstant(mul.getRhs())
                              : *smallConstant(mul.getLhs());
      auto [xl, xh] = emit(b, rhsConstant ? mul.getLhs() : mul.getRhs());
      Value k = b.clone(*(rhsConstant ? mul.getRhs() : mul.getLhs())
                             .getDefiningOp())
                    ->getResult(0);
      range = {binary(arith::MulIOp(), xl, k), binary(arith::MulIOp(), xh, k)};
      if (c < 0)
        std::swap(range.first, range.second);
    } else {
      auto [xl, xh] = emit(b, def->getOperand(0));
      auto cast = [&](Value x) {
        IRMapping map;
        map.map(def->getOperand(0), x);
        return b.clone(*def, map)->getResult(0);
      };
      range = {cast(xl), cast(xh)};
    }
    return known[v] = range;
  }

private:
  static unsigned width(Type t) {
    return t.isIndex() ? 64 : t.getIntOrFloatBitWidth();
  }
  static bool isWide(Type t) {
    return t.isIndex() || (t.isSignlessInteger() && width(t) >= 64);
  }
  /// The value of a constant below 2^31 in magnitude.
  static std::optional<int64_t> smallConstant(Value v) {
    APInt c;
    if (!matchPattern(v, m_ConstantInt(&c)) || c.getSignificantBits() > 32)
      return std::nullopt;
    return c.getSExtValue();
  }

  ValueRange positions, uniform;
  DenseMap<Value, std::pair<Value, Value>> known;
};

/// A captured tensor's element as a region reads it (`tensor.extract
/// %capture[x…]`, the indices mapped through `mapping`): its row-major
/// linear index Σ_d x_d·stride_d, each x_d clamped into [0, n_d − 1]
/// unless `inBounds` (an index the region computes out of range reads an
/// edge element, never outside the tensor).
static Value captureLinearIndex(ImplicitLocOpBuilder &b,
                                tensor::ExtractOp extract, IRMapping &mapping,
                                bool inBounds) {
  auto tensor = cast<RankedTensorType>(extract.getTensor().getType());
  auto nsw = inBounds ? arith::IntegerOverflowFlags::nsw
                      : arith::IntegerOverflowFlags::none;
  Value linear;
  int64_t stride = 1;
  for (int64_t d = tensor.getRank() - 1; d >= 0; --d) {
    Value x = mapping.lookup(extract.getIndices()[d]);
    if (!inBounds) {
      x = arith::MaxSIOp::create(b, x, arith::ConstantIndexOp::create(b, 0));
      x = arith::MinSIOp::create(
          b, x, arith::ConstantIndexOp::create(b, tensor.getDimSize(d) - 1));
    }
    if (stride != 1)
      x = arith::MulIOp::create(b, x, arith::ConstantIndexOp::create(b, stride),
                                nsw);
    linear = linear ? arith::AddIOp::create(b, linear, x, nsw) : x;
    stride *= tensor.getDimSize(d);
  }
  return linear ? linear : arith::ConstantIndexOp::create(b, 0);
}

/// The element at `index` (i32) of the capture at address `base`: an
/// invariant load, i1 stored as a byte (as torch.bool).
static Value loadCaptureElement(ImplicitLocOpBuilder &b,
                                tensor::ExtractOp extract, Value base,
                                Value index) {
  Type elt = extract.getType();
  Value value = buildInvariantLoad(b, elt.isInteger(1) ? b.getI8Type() : elt,
                                   base, index, /*alignment=*/0);
  if (elt.isInteger(1))
    value = arith::CmpIOp::create(b, arith::CmpIPredicate::ne, value,
                                  arith::ConstantIntOp::create(b, 0, 8));
  return value;
}

/// Brings the lines that a thread's reads of a captured `tensor` (its
/// elements stored as `stored`: i1 as a byte) will touch in a later key
/// block into L1 (`prefetch.global.L1`): the read at linear index
/// `at` (the thread's first row and key) moves `perRow` elements per row and
/// `perKey` per key, so in the block `ahead` keys on the thread reads at +
/// perKey·ahead + o for its register offsets o = perRow·8r + perKey·(8i + e)
/// in [oMin, oMax] (keys 8i + e < the tile's `tileKeys`). The lines of that
/// span are n ≤ ⌈span / 128 B⌉ + 1; lane λ prefetches line λ mod n of its own
/// span, so one warp instruction covers the warp's lines (its lanes' spans are
/// a few elements apart). The index is clamped into the tensor: the next block
/// may lie past its end. Without it the loads after the scores' wait take new
/// lines from L2 each block, on the softmax's path.
static void prefetchKeyBlock(ImplicitLocOpBuilder &b, RankedTensorType tensor,
                             Type stored, Value base, Value at, Value lane,
                             int64_t perRow, int64_t perKey, bool atOrigin,
                             int64_t tileKeys, int64_t ahead) {
  int64_t bytes = stored.getIntOrFloatBitWidth() / 8;
  int64_t lineElements = 128 / bytes;
  int64_t oMin = 0, oMax = 0;
  for (int64_t r = 0; r < (atOrigin ? 1 : 2); ++r)
    for (int64_t k = 0; k < tileKeys; ++k) {
      int64_t o = perRow * 8 * r + perKey * k;
      oMin = std::min(oMin, o);
      oMax = std::max(oMax, o);
    }
  int64_t lines = std::min<int64_t>(
      32, llvm::divideCeil((oMax - oMin + 1) * bytes, 128) + 1);
  int64_t last = tensor.getNumElements() - 1;
  // 32-bit, as the reads' clamped indices; a tensor past 2^31 elements or a
  // distance past 2^31 gets no prefetch (a hint: nothing changes but speed).
  int64_t shift = perKey * ahead + oMin;
  if (last > std::numeric_limits<int32_t>::max() ||
      std::abs(shift) > std::numeric_limits<int32_t>::max())
    return;
  Value laneLine = arith::MulIOp::create(
      b, arith::RemUIOp::create(b, lane, i32Const(b, lines)),
      i32Const(b, lineElements));
  Value next = arith::AddIOp::create(
      b,
      arith::AddIOp::create(b, arith::TruncIOp::create(b, b.getI32Type(), at),
                            i32Const(b, shift)),
      laneLine);
  next = arith::MinSIOp::create(
      b, arith::MaxSIOp::create(b, next, i32Const(b, 0)), i32Const(b, last));
  Value line =
      LLVM::GEPOp::create(b, base.getType(), stored, base, ValueRange{next});
  NVVM::PrefetchOp::create(b,
                           NVVM::PrefetchCacheLevelAttr::get(
                               b.getContext(), NVVM::PrefetchCacheLevel::L1),
                           /*evictPriority=*/{}, line, /*predicate=*/Value());
}

/// Adds the ops that compute `roots` (their defining ops and, transitively,
/// those of their operands) to `ops`.
static void addBackwardSlice(ArrayRef<Value> roots,
                             llvm::SmallPtrSetImpl<Operation *> &ops) {
  SmallVector<Value> work(roots);
  while (!work.empty())
    if (Operation *def = work.pop_back_val().getDefiningOp();
        def && ops.insert(def).second)
      work.append(def->operand_begin(), def->operand_end());
}

/// A mask region's conditions on the key alone: the yielded i1 split along
/// its `arith.andi` tree into bounds `j ≥ x`, `j > x`, `j < x`, `j ≤ x` (the
/// key `j` either operand; x free of the key, so one value per row: a
/// document's run, a causal diagonal written as a region) and the conjuncts
/// left. Their conjunction is the interval max(lower) ≤ j < min(upper) per
/// row, which a fragment compares as the element's constant key offset
/// against two per-row limits (ModFragmentLowering), as fat.mask's row
/// limits do: no key index per element, one compare per side, where each
/// bound cost a compare of the element's key (perf log, run 158).
struct KeyBounds {
  struct Bound {
    Value x;
    arith::CmpIPredicate pred; // j pred x: sge, sgt, slt or sle
  };
  SmallVector<Bound> bounds;
  SmallVector<Value> rest;
};
static KeyBounds splitKeyBounds(Block &body, Value key,
                                function_ref<bool(Value)> readsKey) {
  using P = arith::CmpIPredicate;
  KeyBounds out;
  SmallVector<Value> work{cast<YieldOp>(body.getTerminator()).getValue()};
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (auto both = v.getDefiningOp<arith::AndIOp>()) {
      work.append({both.getRhs(), both.getLhs()});
      continue;
    }
    if (auto cmp = v.getDefiningOp<arith::CmpIOp>()) {
      Value lhs = cmp.getLhs(), rhs = cmp.getRhs();
      P pred = cmp.getPredicate();
      if (rhs == key && lhs != key) {
        std::swap(lhs, rhs);
        // x pred j as j pred' x.
        switch (pred) {
        case P::sge: pred = P::sle; break;
        case P::sgt: pred = P::slt; break;
        case P::sle: pred = P::sge; break;
        case P::slt: pred = P::sgt; break;
        default: break;
        }
      }
      bool signedOrder = pred == P::sge || pred == P::sgt || pred == P::sle ||
                         pred == P::slt;
      if (lhs == key && signedOrder && !readsKey(rhs)) {
        out.bounds.push_back({rhs, pred});
        continue;
      }
    }
    out.rest.push_back(v);
  }
  return out;
}

/// fat.score_mod / fat.mask_mod of a fragment tile: the region's body once
/// per register 4i + 2r + e, which holds (row q0 + 16w + λ/4 + 8r, key k0 +
/// 2(λ%4) + 8i + e); the body reads them clamped to the last row and key
/// (i' = min(row, Sq − 1), j' = min(key, Skv − 1): a padding row or key
/// reads the last real one, as on the CPU) and, for a score, the element
/// times the op's scale. A mask keeps the element where the body yields
/// true and sets −inf elsewhere. A captured tensor is its global address
/// (an `!llvm.ptr` operand for the region's tensor argument): each
/// `tensor.extract` of it becomes an invariant load of element
/// Σ_d clamp(x_d, 0, n_d − 1)·stride_d of the row-major array, so an index
/// the region computes out of range reads an edge element, never outside
/// the tensor (i1 is stored as a byte, as torch.bool). Reads whose index
/// moves with the key and is affine (TileIndexRanges) run in a second
/// version of the tile, taken where their whole range lies in the tensor,
/// without the clamps (below).
template <typename ModOp>
struct ModFragmentLowering : OpConversionPattern<ModOp> {
  using OneToNOpAdaptor = typename OpConversionPattern<ModOp>::OneToNOpAdaptor;
  ModFragmentLowering(const TypeConverter &converter, MLIRContext *context,
                      int64_t prefetchBlocks)
      : OpConversionPattern<ModOp>(converter, context),
        prefetchBlocks(prefetchBlocks) {}
  /// Key blocks ahead the reads that move with the key prefetch (0: none).
  int64_t prefetchBlocks;
  LogicalResult
  matchAndRewrite(ModOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getScores().getType());
    if (!WgmmaFragmentAttr::isFragment(type))
      return rewriter.notifyMatchFailure(op, "not a fragment tile");
    constexpr bool isScore = std::is_same_v<ModOp, ScoreModOp>;
    Block &body = op.getBody().front();
    auto captureArgs = body.getArguments().take_back(op.getCaptures().size());
    // The body's row and key arguments (after the score, b and h).
    ValueRange positions = body.getArguments().slice(isScore ? 3 : 2, 2);
    // FatToNVVM.cpp checked the captures: addresses, read by tensor.extract.
    if (!llvm::all_of(op.getCaptures().getTypes(),
                      llvm::IsaPred<LLVM::LLVMPointerType>))
      return rewriter.notifyMatchFailure(op, "a capture is not an address");
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    I32Math m{b};
    auto index = [&](Value x) -> Value {
      return arith::IndexCastOp::create(b, b.getIndexType(), x);
    };
    Value tid = NVVM::ThreadIdXOp::create(b, b.getI32Type());
    Value warp = arith::RemUIOp::create(
        b, arith::DivUIOp::create(b, tid, m.c32(32)), m.c32(4));
    Value lane = arith::RemUIOp::create(b, tid, m.c32(32));
    Value rowBase = m.add(asI32(b, op.getQStart()),
                          m.add(arith::MulIOp::create(b, warp, m.c32(16)),
                                arith::DivUIOp::create(b, lane, m.c32(4))));
    Value colBase =
        m.add(asI32(b, op.getKvStart()),
              arith::MulIOp::create(
                  b, arith::RemUIOp::create(b, lane, m.c32(4)), m.c32(2)));
    Value lastRow = arith::SubIOp::create(b, asI32(b, op.getQLen()), m.c32(1));
    Value lastKey = arith::SubIOp::create(b, asI32(b, op.getKvLen()), m.c32(1));
    // rows_at_origin: every row is the tile's first (the op's semantics).
    bool atOrigin = false;
    if constexpr (isScore)
      atOrigin = op.getRowsAtOrigin();
    Value origin =
        atOrigin ? Value(arith::MinSIOp::create(b, asI32(b, op.getQStart()),
                                                lastRow))
                 : Value();
    Value rows[2];
    for (int r = 0; r < 2; ++r)
      rows[r] =
          index(atOrigin ? origin
                         : Value(arith::MinSIOp::create(
                               b, m.add(rowBase, m.c32(8 * r)), lastRow)));
    Value scale, negInf;
    if constexpr (isScore)
      scale = f32Const(b, op.getScale().convertToDouble());
    else
      negInf = f32Const(b, -std::numeric_limits<double>::infinity());

    unsigned firstCapture = body.getNumArguments() - captureArgs.size();
    // tensor.extract %capture[x…]: its row-major linear index, the indices
    // clamped (see above) or, `inBounds`, as they are; the element there.
    auto linearIndex = [&](tensor::ExtractOp extract, IRMapping &mapping,
                           bool inBounds) -> Value {
      return captureLinearIndex(b, extract, mapping, inBounds);
    };
    auto storedType = [&](tensor::ExtractOp extract) -> Type {
      Type elt = extract.getType();
      return elt.isInteger(1) ? b.getI8Type() : elt;
    };
    auto address = [&](tensor::ExtractOp extract) -> Value {
      auto arg = cast<BlockArgument>(extract.getTensor());
      return op.getCaptures()[arg.getArgNumber() - firstCapture];
    };
    auto loadAt = [&](tensor::ExtractOp extract, Value base,
                      Value index) -> Value {
      return loadCaptureElement(b, extract, base, index);
    };
    auto load = [&](tensor::ExtractOp extract, IRMapping &mapping) -> Value {
      return loadAt(extract, address(extract),
                    arith::IndexCastOp::create(
                        b, b.getI32Type(),
                        linearIndex(extract, mapping, /*inBounds=*/false)));
    };
    // A mask's key range (kv_ranges = n): r0 ≤ j' < r1 of row i''s group
    // ⌊i'/64⌋ in the table r (capture n). A fragment tile is one
    // warpgroup's 64 rows from a multiple of 64 (fat-pipeline's warpgroup
    // rows), so every row, clamped or not, is in group ⌊min(q0, Sq−1)/64⌋:
    // the bounds are two loads per tile and the test one per key, not per
    // element (perf log run 82). Indices clamped into the table as every
    // capture read.
    Value rangeLo, rangeHi;
    if constexpr (!isScore) {
      if (std::optional<uint64_t> n = op.getKvRanges()) {
        auto table =
            cast<RankedTensorType>(body.getArgument(firstCapture + *n).getType());
        Value at = buildKeyRangeRow(
            b, table.getShape(), asI32(b, op.getBatch()),
            arith::MinSIOp::create(b, asI32(b, op.getQStart()), lastRow));
        Value base = op.getCaptures()[*n];
        rangeLo = buildKeyRangeLoad(b, base, at, 0);
        rangeHi = buildKeyRangeLoad(b, base, at, 1);
      }
    }
    // A mask's bounds on the key (KeyBounds) and its key range as two
    // limits per row on k, the element's key c0 + k less the thread's first
    // key c0: the element is inside where lo_r ≤ k < hi_r. A bound j > x or
    // j ≤ x is j ≥ x + 1 or j < x + 1, x + 1 taken below 2^31 (keys are).
    // max(limit, c0) − c0 neither wraps (c0 ≥ 0) nor moves a comparison: a
    // limit below c0 becomes 0, below which no k lies. The rows are the
    // elements' (clamped); the bounds' reads are the region's, per row.
    KeyBounds keyBounds;
    Value keyLimits[2][2]; // [r][0]: lo_r, [r][1]: hi_r; null: no bound
    llvm::SmallPtrSet<Operation *, 8> restOps;
    TileIndexRanges ranges(positions,
                           body.getArguments().slice(isScore ? 1 : 0, 2));
    if constexpr (!isScore) {
      keyBounds = splitKeyBounds(body, positions[1], [&](Value x) {
        return ranges.dependsOnKey(x);
      });
      if (!keyBounds.bounds.empty()) {
        using P = arith::CmpIPredicate;
        llvm::SmallPtrSet<Operation *, 8> boundOps;
        addBackwardSlice(llvm::map_to_vector(keyBounds.bounds,
                                             [](const KeyBounds::Bound &x) {
                                               return x.x;
                                             }),
                         boundOps);
        addBackwardSlice(keyBounds.rest, restOps);
        for (int r = 0; r < 2; ++r) {
          IRMapping at;
          at.map(body.getArguments().take_front(3),
                 ValueRange{op.getBatch(), op.getHead(), rows[r]});
          for (Operation &inner : body.without_terminator()) {
            if (!boundOps.contains(&inner))
              continue;
            auto extract = dyn_cast<tensor::ExtractOp>(inner);
            if (extract && llvm::is_contained(captureArgs, extract.getTensor()))
              at.map(extract.getResult(), load(extract, at));
            else
              b.clone(inner, at);
          }
          Value lo = rangeLo, hi = rangeHi;
          for (auto [x, pred] : keyBounds.bounds) {
            Value v = asI32(b, at.lookupOrDefault(x));
            if (pred == P::sgt || pred == P::sle)
              v = m.add(arith::MinSIOp::create(
                            b, v,
                            m.c32(std::numeric_limits<int32_t>::max() - 1)),
                        m.c32(1));
            Value &side = pred == P::sge || pred == P::sgt ? lo : hi;
            side = !side                              ? v
                   : pred == P::sge || pred == P::sgt
                       ? Value(arith::MaxSIOp::create(b, side, v))
                       : Value(arith::MinSIOp::create(b, side, v));
          }
          Value limits[2] = {lo, hi};
          for (int side = 0; side < 2; ++side)
            if (limits[side])
              keyLimits[r][side] = m.sub(
                  arith::MaxSIOp::create(b, limits[side], colBase), colBase);
        }
      }
    }
    bool byLimits = !keyBounds.bounds.empty();
    // The element's row and key as f32 for splitIndexDifference: a key is
    // the tile's float base plus a constant, not clamped — a padding key's
    // score is −inf after fat.mask (kv_len) whatever the region computed,
    // and a padding row is never written (captures clamp their own reads).
    bool splits = false;
    body.walk([&](arith::SIToFPOp conv) {
      splits |= static_cast<bool>(positionDifference(conv, positions));
    });
    llvm::SmallPtrSet<Operation *, 4> negated =
        negatedDifferences(body, positions);
    Value floatRows[2], floatColBase;
    if (splits && atOrigin) {
      // Keys relative to the one row: float(j − i') per key, the row 0.
      floatRows[0] = floatRows[1] = f32Const(b, 0.0);
      floatColBase = arith::SIToFPOp::create(
          b, b.getF32Type(), arith::SubIOp::create(b, colBase, origin));
    } else if (splits) {
      for (int r = 0; r < 2; ++r)
        floatRows[r] = arith::SIToFPOp::create(
            b, b.getF32Type(),
            arith::IndexCastOp::create(b, b.getI32Type(), rows[r]));
      floatColBase = arith::SIToFPOp::create(b, b.getF32Type(), colBase);
    }
    // The reads whose indices vary with the key and have a range
    // (TileIndexRanges): where every such index of the tile lies in its
    // tensor — a uniform test, true but at the tensors' edges — the
    // elements skip the clamps, the keys included (a padding key's score is
    // −inf after fat.mask whatever the region computed); the clamped form
    // runs otherwise. A relative bias table read at [h, j − i + c] then
    // costs a load per element, not the index's clamp and its address.
    SetVector<tensor::ExtractOp> unclamped;
    bool varies = false;
    body.walk([&](tensor::ExtractOp extract) {
      if (extract->getBlock() != &body ||
          !llvm::is_contained(captureArgs, extract.getTensor()) ||
          !llvm::all_of(extract.getIndices(),
                        [&](Value x) { return ranges.isBounded(x); }))
        return;
      unclamped.insert(extract);
      varies |= llvm::any_of(extract.getIndices(), [&](Value x) {
        return ranges.dependsOnKey(x);
      });
    });
    if (!varies)
      unclamped.clear();
    // The ops computing those indices, and those of them that compute
    // nothing else (the in-bounds elements do not repeat them).
    llvm::SmallPtrSet<Operation *, 8> indexOps, addressOnly;
    for (tensor::ExtractOp extract : unclamped)
      addBackwardSlice(llvm::to_vector(extract.getIndices()), indexOps);
    for (Operation &inner : llvm::reverse(body.without_terminator()))
      if (indexOps.contains(&inner) &&
          llvm::all_of(inner.getUsers(), [&](Operation *user) {
            auto extract = dyn_cast<tensor::ExtractOp>(user);
            return addressOnly.contains(user) ||
                   (extract && unclamped.contains(extract));
          }))
        addressOnly.insert(&inner);
    // The rows as the reads see them there: not clamped either (a padding
    // row is never written), so that a thread's two rows are 8 apart.
    if (!unclamped.empty()) {
      int64_t tileRows = type.getDimSize(0), tileKeys = type.getDimSize(1);
      Value first = atOrigin ? origin : asI32(b, op.getQStart());
      Value last = atOrigin
                       ? origin
                       : m.add(asI32(b, op.getQStart()), m.c32(tileRows - 1));
      ranges.seed({index(first), index(last)},
                  {op.getKvStart(),
                   arith::AddIOp::create(
                       b, op.getKvStart(),
                       arith::ConstantIndexOp::create(b, tileKeys - 1))},
                  op.getBatch(), op.getHead());
    }
    Value allInBounds;
    llvm::DenseSet<std::pair<Value, int64_t>> tested;
    for (tensor::ExtractOp extract : unclamped) {
      auto tensor = cast<RankedTensorType>(extract.getTensor().getType());
      for (auto [d, x] : llvm::enumerate(extract.getIndices())) {
        if (!tested.insert({x, tensor.getDimSize(d)}).second)
          continue;
        auto [lo, hi] = ranges.emit(b, x);
        Value fits = arith::AndIOp::create(
            b,
            arith::CmpIOp::create(b, arith::CmpIPredicate::sge, lo,
                                  arith::ConstantIndexOp::create(b, 0)),
            arith::CmpIOp::create(
                b, arith::CmpIPredicate::sle, hi,
                arith::ConstantIndexOp::create(b, tensor.getDimSize(d) - 1)));
        allInBounds =
            allInBounds ? arith::AndIOp::create(b, allInBounds, fits) : fits;
      }
    }

    // The reads of `unclamped`, register by register (4i + 2r + e) and
    // read by read: in bounds where `inBounds`, clamped otherwise. Their
    // index is affine in the row and key (TileIndexRanges), so in bounds a
    // thread's reads lie at one address (its first row's element at its
    // first key, computed once) plus a constant per register, the load's
    // immediate offset: a·8r + b·(8i + e) elements for a read moving a per
    // row and b per key. Where two registers read the same element (a
    // relative bias table, a = −1, b = 1: row r + 1's keys 8(i + 1) + e are
    // row r's 8i + e) the offsets are equal and LLVM loads it once.
    // (Per-element addresses let LLVM's loop strength reduction keep one
    // 64-bit pointer per register across the key loop, and the kernel
    // spilled.) Clamped, such a read (one that moves with the row and the
    // key) is made at the register's row and key as they are, each index
    // clamped into its dimension: a real row and key read what they did, a
    // padding one (its score hidden or never written) some element of the
    // tensor. Equal registers then compute equal indices in this version
    // too, LLVM loads them once in both, and the versions meet in one φ per
    // distinct element, not one per register with the shared ones copied
    // (perf log, run 128). A read that moves with the key only (document
    // ids) shares across rows either way and reads at the clamped
    // positions. Only reads: the versions depend on the tile's position,
    // not on its scores (issueCaptureReadsEarly may issue them before the
    // scores' wait).
    llvm::SmallPtrSet<Operation *, 4> movesWithRowAndKey;
    for (tensor::ExtractOp extract : unclamped)
      if (!atOrigin && ranges.coefficient(extract, 0) != 0 &&
          ranges.coefficient(extract, 1) != 0)
        movesWithRowAndKey.insert(extract);
    int64_t registers = adaptor.getScores().size();
    // Per read of `unclamped`: the thread's address and its moves per row and
    // per key (in bounds; computed once per version, with the prefetches).
    struct ThreadRead {
      Value address;
      int64_t perRow, perKey;
    };
    using ThreadReads = DenseMap<Operation *, ThreadRead>;
    auto threadReadsOf = [&](bool inBounds) {
      ThreadReads threadReads;
      if (!inBounds)
        return threadReads;
      IRMapping mapping;
      mapping.map(body.getArguments().slice(isScore ? 1 : 0, 4),
                  ValueRange{op.getBatch(), op.getHead(),
                             atOrigin ? rows[0] : index(rowBase),
                             index(colBase)});
      for (Operation &inner : body.without_terminator())
        if (indexOps.contains(&inner))
          b.clone(inner, mapping);
      for (tensor::ExtractOp extract : unclamped) {
        Value at = arith::IndexCastOp::create(
            b, b.getI64Type(),
            linearIndex(extract, mapping, /*inBounds=*/true));
        ThreadRead read{LLVM::GEPOp::create(b, address(extract).getType(),
                                            storedType(extract),
                                            address(extract), ValueRange{at}),
                        atOrigin ? 0 : ranges.coefficient(extract, 0),
                        ranges.coefficient(extract, 1)};
        threadReads[extract] = read;
        if (prefetchBlocks > 0 && read.perKey != 0)
          prefetchKeyBlock(
              b, cast<RankedTensorType>(extract.getTensor().getType()),
              storedType(extract), address(extract), at, lane, read.perRow,
              read.perKey, atOrigin, type.getDimSize(1),
              prefetchBlocks * type.getDimSize(1));
      }
      return threadReads;
    };
    // The reads of `unclamped` by register 4i + 2r + e.
    auto readsOf = [&](const ThreadReads &threadReads, bool inBounds, int64_t i,
                       int e, int r) {
      SmallVector<Value> values;
      for (tensor::ExtractOp extract : unclamped) {
        if (inBounds) {
          const ThreadRead &read = threadReads.at(extract);
          values.push_back(
              loadAt(extract, read.address,
                     i64Const(b, read.perRow * 8 * r +
                                     read.perKey * int64_t(8 * i + e))));
          continue;
        }
        bool asTheyAre = movesWithRowAndKey.contains(extract);
        Value keyI32 = m.add(colBase, m.c32(8 * i + e));
        IRMapping at;
        at.map(
            body.getArguments().slice(isScore ? 1 : 0, 4),
            ValueRange{
                op.getBatch(), op.getHead(),
                asTheyAre ? index(m.add(rowBase, m.c32(8 * r))) : rows[r],
                index(asTheyAre ? keyI32
                                : arith::MinSIOp::create(b, keyI32, lastKey))});
        for (Operation &inner : body.without_terminator())
          if (indexOps.contains(&inner))
            b.clone(inner, at);
        values.push_back(
            loadAt(extract, address(extract),
                   arith::IndexCastOp::create(
                       b, b.getI32Type(),
                       linearIndex(extract, at, /*inBounds=*/false))));
      }
      return values;
    };
    using ReadsFor = function_ref<SmallVector<Value>(int64_t, int, int)>;

    // The elements: the body per register, `readsFor` the values of its
    // reads of `unclamped` (none: the body reads them itself), the keys
    // clamped where `clampKeys`. Unclamped, as the in-bounds reads assume:
    // a padding key's score is −inf after fat.mask (kv_len) whatever the
    // region computed, and the body's other reads clamp their own indices.
    auto elements = [&](ReadsFor readsFor, bool clampKeys,
                        bool tanhPoly = false) {
      SmallVector<Value> out(adaptor.getScores());
      for (size_t i = 0; i < out.size() / 4; ++i) {
        for (int e = 0; e < 2; ++e) {
          // Masked by limits alone, no op reads the key.
          Value keyI32 = colBase;
          if (!byLimits || !restOps.empty()) {
            keyI32 = arith::AddIOp::create(
                b, colBase, m.c32(8 * i + e),
                clampKeys ? arith::IntegerOverflowFlags::none
                          : arith::IntegerOverflowFlags::nsw);
            if (clampKeys)
              keyI32 = arith::MinSIOp::create(b, keyI32, lastKey);
          }
          Value key = index(keyI32);
          Value floatKey;
          if (splits)
            floatKey = arith::AddFOp::create(b, floatColBase,
                                             f32Const(b, double(8 * i + e)));
          Value inRange;
          if (rangeLo && !byLimits)
            inRange = arith::AndIOp::create(
                b,
                arith::CmpIOp::create(b, arith::CmpIPredicate::sge, keyI32,
                                      rangeLo),
                arith::CmpIOp::create(b, arith::CmpIPredicate::slt, keyI32,
                                      rangeHi));
          for (int r = 0; r < 2; ++r) {
            Value &x = out[4 * i + 2 * r + e];
            SmallVector<Value> args;
            if constexpr (isScore)
              args.push_back(arith::MulFOp::create(b, x, scale));
            args.append({op.getBatch(), op.getHead(), rows[r], key});
            IRMapping mapping;
            mapping.map(body.getArguments(), args);
            SmallVector<Value> loaded = readsFor(i, e, r);
            for (auto [extract, value] : llvm::zip(unclamped, loaded))
              mapping.map(extract->getResult(0), value);
            for (Operation &inner : body.without_terminator()) {
              if (byLimits && !restOps.contains(&inner))
                continue;
              auto extract = dyn_cast<tensor::ExtractOp>(inner);
              if (extract && mapping.contains(extract.getResult()))
                continue;
              if (extract && llvm::is_contained(captureArgs,
                                                extract.getTensor())) {
                mapping.map(extract.getResult(), load(extract, mapping));
                continue;
              }
              if (auto conv = dyn_cast<arith::SIToFPOp>(inner)) {
                auto floatOf = [&](Value position) {
                  return position == positions[0] ? floatRows[r] : floatKey;
                };
                if (Value split = splitIndexDifference(
                        b, conv, positions, floatOf, negated.contains(conv))) {
                  mapping.map(conv.getResult(), split);
                  continue;
                }
              }
              if (auto sub = dyn_cast<arith::SubFOp>(inner);
                  sub && negated.contains(sub)) {
                mapping.map(sub.getResult(),
                            arith::AddFOp::create(
                                b, mapping.lookup(sub.getLhs()),
                                mapping.lookup(sub.getRhs()),
                                sub.getFastmathAttr()));
                continue;
              }
              if (!loaded.empty() && addressOnly.contains(&inner))
                continue;
              if (auto tanh = dyn_cast<math::TanhOp>(inner);
                  tanh && tanhPoly) {
                mapping.map(tanh.getResult(),
                            buildTanhPoly(b, mapping.lookup(tanh.getOperand())));
                continue;
              }
              Operation *copy = b.clone(inner, mapping);
              // A division may become a multiply by the reciprocal (≤ 1 ulp
              // of the f32 score, far below P's 16-bit rounding): a constant
              // divisor (softcap's s / c) then costs one FMUL, not div.rn.
              if (auto div = dyn_cast<arith::DivFOp>(copy))
                div.setFastmath(div.getFastmath() | arith::FastMathFlags::arcp);
            }
            if constexpr (isScore) {
              x = mapping.lookup(
                  cast<YieldOp>(body.getTerminator()).getValue());
            } else if (byLimits) {
              // The conjuncts left, then the limits on the constant k.
              Value keep;
              auto join = [&](Value c) {
                keep = keep ? arith::AndIOp::create(b, keep, c) : c;
              };
              for (Value c : keyBounds.rest)
                join(mapping.lookup(c));
              Value k = m.c32(8 * i + e);
              if (Value lo = keyLimits[r][0])
                join(m.cmp(arith::CmpIPredicate::sge, k, lo));
              if (Value hi = keyLimits[r][1])
                join(m.cmp(arith::CmpIPredicate::slt, k, hi));
              x = selectVisible(b, keep, x, negInf);
            } else {
              Value y =
                  mapping.lookup(cast<YieldOp>(body.getTerminator()).getValue());
              if (inRange)
                y = arith::AndIOp::create(b, y, inRange);
              x = selectVisible(b, y, x, negInf);
            }
          }
        }
      }
      return out;
    };
    auto none = [](int64_t, int, int) { return SmallVector<Value>(); };
    if (!allInBounds) {
      SmallVector<Operation *> tanhArgs;
      if constexpr (isScore)
        if (op.getTanhPoly())
          tanhArgs = op.getTanhArgumentSlice();
      if (tanhArgs.empty()) {
        rewriter.replaceOpWithMultiple(op,
                                       {elements(none, /*clampKeys=*/true)});
        return success();
      }
      // tanh_poly: the warp's versions by its tanh arguments x = k·s. The
      // thread's largest |s| (an FMNMX per register, |·| its operand
      // modifier), each x at it, the warp's vote that all |x| lie within
      // the polynomial's bound; then the elements with the polynomial, or
      // with MUFU's tanh. Only the scores live across the vote: the
      // versions compute x again (a register of x or x² per score would
      // stay live through it, and the kernel spilled). A tile versioned by
      // its reads' bounds (above) keeps MUFU's tanh.
      Value widest = f32Const(b, 0.0);
      for (Value x : adaptor.getScores())
        widest = LLVM::MaxNumOp::create(
            b, widest,
            buildInlineAsm(b, b.getF32Type(), x, "abs.f32 $0, $1;", "=f,f",
                           /*sideEffects=*/false)
                .front());
      IRMapping atWidest;
      atWidest.map(body.getArgument(0),
                   arith::MulFOp::create(b, widest, scale));
      double bound = ScoreModOp::kTanhPolyBound;
      Value inRange;
      for (Operation *inner : tanhArgs) {
        auto tanh = dyn_cast<math::TanhOp>(inner);
        if (!tanh) {
          // As the elements compute it (a division by the reciprocal).
          Operation *copy = b.clone(*inner, atWidest);
          if (auto div = dyn_cast<arith::DivFOp>(copy))
            div.setFastmath(div.getFastmath() | arith::FastMathFlags::arcp);
          continue;
        }
        Value arg = atWidest.lookup(tanh.getOperand());
        Value fits = arith::CmpFOp::create(
            b, arith::CmpFPredicate::OLE, arith::MulFOp::create(b, arg, arg),
            f32Const(b, bound * bound));
        inRange = inRange ? arith::AndIOp::create(b, inRange, fits) : fits;
      }
      Value all = NVVM::VoteSyncOp::create(
          b, b.getI1Type(), i32Const(b, -1), inRange, NVVM::VoteSyncKind::all);
      auto versions = scf::IfOp::create(b, adaptor.getScores().getTypes(), all,
                                        /*addThenBlock=*/true,
                                        /*addElseBlock=*/true);
      for (bool poly : {true, false}) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(poly ? versions.thenBlock()
                                        : versions.elseBlock());
        scf::YieldOp::create(b, elements(none, /*clampKeys=*/true, poly));
      }
      rewriter.replaceOpWithMultiple(op, {versions.getResults()});
      return success();
    }
    // A score region's versions are its reads, the elements follow them
    // once: the versions then depend on the tile's position only, and
    // issueCaptureReadsEarly may issue them before the scores' wait (LLVM
    // sank the elements' common arithmetic below the versions
    // anyway). A mask region's versions hold its elements, each register's
    // reads beside its body: the loaded ids do not outlive their element
    // (with the reads alone the D = 128 document kernels spilled 24…60
    // bytes).
    SmallVector<Type> types;
    if constexpr (isScore) {
      for (int64_t k = 0; k < registers; ++k)
        for (tensor::ExtractOp extract : unclamped)
          types.push_back(extract.getType());
    } else {
      types.assign(adaptor.getScores().getTypes().begin(),
                   adaptor.getScores().getTypes().end());
    }
    auto versions = scf::IfOp::create(b, types, allInBounds,
                                      /*addThenBlock=*/true,
                                      /*addElseBlock=*/true);
    if constexpr (isScore)
      versions->setAttr(kScoreReadsAttrName, b.getUnitAttr());
    for (bool inBounds : {true, false}) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(inBounds ? versions.thenBlock()
                                          : versions.elseBlock());
      ThreadReads threadReads = threadReadsOf(inBounds);
      auto readsNow = [&](int64_t i, int e, int r) {
        return readsOf(threadReads, inBounds, i, e, r);
      };
      SmallVector<Value> values;
      if constexpr (isScore) {
        for (int64_t i = 0; i < registers / 4; ++i)
          for (int e = 0; e < 2; ++e)
            for (int r = 0; r < 2; ++r)
              llvm::append_range(values, readsNow(i, e, r));
      } else {
        values = elements(readsNow, /*clampKeys=*/!inBounds);
      }
      // An empty asm with effects ends the in-bounds version: without it
      // LLVM's InstCombine folds the two versions' φs of loaded values into
      // loads of φs of addresses, a 64-bit φ per register that the kernel
      // spilled (perf log run 99).
      if (inBounds)
        buildInlineAsm(b, {}, {}, "", "", /*sideEffects=*/true);
      scf::YieldOp::create(b, values);
    }
    SmallVector<Value> results(versions.getResults());
    if constexpr (isScore) {
      int64_t n = unclamped.size();
      auto loaded = [&](int64_t i, int e, int r) {
        return SmallVector<Value>(
            ArrayRef<Value>(results).slice(((2 * i + e) * 2 + r) * n, n));
      };
      results = elements(loaded, /*clampKeys=*/false);
    }
    rewriter.replaceOpWithMultiple(op, {results});
    return success();
  }
};
/// The value a term region (fat.bias_query_columns', fat.band_stage's)
/// yields, its body cloned at `b` with its leading index arguments mapped to
/// `args`; each read of a captured tensor (the region's arguments after
/// them; `captures` their addresses) an invariant load, its indices clamped
/// into the tensor.
static Value cloneTermBody(ImplicitLocOpBuilder &b, Block &body,
                           ArrayRef<Value> args, ValueRange captures) {
  unsigned firstCapture = args.size();
  IRMapping mapping;
  for (auto [arg, value] : llvm::zip(body.getArguments(), args))
    mapping.map(arg, value);
  for (Operation &inner : body.without_terminator()) {
    auto extract = dyn_cast<tensor::ExtractOp>(inner);
    auto arg = extract ? dyn_cast<BlockArgument>(extract.getTensor())
                       : BlockArgument();
    if (arg && arg.getOwner() == &body && arg.getArgNumber() >= firstCapture) {
      Value index = arith::IndexCastOp::create(
          b, b.getI32Type(),
          captureLinearIndex(b, extract, mapping, /*inBounds=*/false));
      mapping.map(
          extract.getResult(),
          loadCaptureElement(
              b, extract, captures[arg.getArgNumber() - firstCapture], index));
      continue;
    }
    b.clone(inner, mapping);
  }
  return mapping.lookup(cast<YieldOp>(body.getTerminator()).getValue());
}

/// fat.band_stage: the lane's terms x = lane, lane + 32, … (clamped to the
/// last: lanes past the end write it again), each T at row q_start + M − 1
/// and key kv_start + x times 1 / scale, stored at A_r[x] and B_r[x + 1] of
/// both copies r; a warp sync after every four keeps their loads in flight
/// within the producer's registers.
struct BandStageLowering : OpConversionPattern<BandStageOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(BandStageOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (!llvm::all_of(adaptor.getCaptures().getTypes(),
                      llvm::IsaPred<LLVM::LLVMPointerType>))
      return rewriter.notifyMatchFailure(op, "a capture is not an address");
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    I32Math m{b};
    int64_t rows = op.getRows(), keys = op.getKeys();
    int64_t terms = rows + keys - 1, width = rows + keys;
    Value reciprocal =
        arith::DivFOp::create(b, f32Const(b, 1.0), adaptor.getScale());
    auto index = [&](Value x) -> Value {
      return arith::IndexCastOp::create(b, b.getIndexType(), x);
    };
    Value row = index(m.add(asI32(b, op.getQStart()), m.c32(rows - 1)));
    Value kvStart = asI32(b, op.getKvStart());
    auto f32Ptr = LLVM::LLVMPointerType::get(b.getContext(), kSharedSpace);
    auto store = [&](Value value, Value element) {
      Value at = LLVM::GEPOp::create(b, f32Ptr, b.getF32Type(),
                                     adaptor.getBuffer(), ValueRange{element});
      LLVM::StoreOp::create(b, value, at, /*alignment=*/4);
    };
    for (int64_t first = 0; first < terms; first += 32) {
      // Four terms' loads in flight at a time: ptxas would issue all of
      // them first, more than the writer's 24 registers hold.
      if (first && first % 128 == 0)
        NVVM::SyncWarpOp::create(b, m.c32(-1));
      Value x = arith::MinUIOp::create(
          b, m.add(adaptor.getLane(), m.c32(first)), m.c32(terms - 1));
      Value t = cloneTermBody(
          b, op.getBody().front(),
          {op.getBatch(), op.getHead(), row, index(m.add(kvStart, x))},
          adaptor.getCaptures());
      Value u = arith::MulFOp::create(b, t, reciprocal);
      for (int64_t copy = 0; copy < 2; ++copy) {
        store(u, m.add(x, m.c32(2 * width * copy)));
        store(u, m.add(x, m.c32(2 * width * copy + width + 1)));
      }
    }
    rewriter.eraseOp(op);
    return success();
  }
};

/// fat.band_fragment: per thread one base x₀ = 2(λ mod 4) − row − 16w −
/// λ/4 + M − 1 (register pair (i, r') reads x₀ + 8i − 8r' of copy r'), the
/// array of its parity (A where x₀ is even, else B one element on), then
/// one 8-byte shared load per pair at a constant offset from it.
struct BandFragmentLowering : OpConversionPattern<BandFragmentOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(BandFragmentOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    if (!WgmmaFragmentAttr::isFragment(type) || type.getDimSize(0) != 64 ||
        type.getDimSize(1) != static_cast<int64_t>(op.getKeys()))
      return rewriter.notifyMatchFailure(op, "not a warpgroup's S fragment");
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    I32Math m{b};
    int64_t rows = op.getRows(), keys = op.getKeys();
    int64_t width = rows + keys;
    Value tid = NVVM::ThreadIdXOp::create(b, b.getI32Type());
    Value warp = arith::RemUIOp::create(
        b, arith::DivUIOp::create(b, tid, m.c32(32)), m.c32(4));
    Value lane = arith::RemUIOp::create(b, tid, m.c32(32));
    Value x0 =
        m.sub(m.add(m.mul(arith::RemUIOp::create(b, lane, m.c32(4)), m.c32(2)),
                    m.c32(rows - 1)),
              m.add(adaptor.getRow(),
                    m.add(m.mul(warp, m.c32(16)),
                          arith::DivUIOp::create(b, lane, m.c32(4)))));
    Value odd = arith::AndIOp::create(b, x0, m.c32(1));
    Value first = m.add(x0, m.mul(odd, m.c32(width + 1)));
    auto f32Ptr = LLVM::LLVMPointerType::get(b.getContext(), kSharedSpace);
    auto pairType = VectorType::get({2}, b.getF32Type());
    Value base = LLVM::GEPOp::create(b, f32Ptr, b.getF32Type(),
                                     adaptor.getBuffer(), ValueRange{first});
    SmallVector<Value> regs(keys / 2);
    for (int64_t i = 0; i < keys / 8; ++i)
      for (int64_t r = 0; r < 2; ++r) {
        Value at =
            LLVM::GEPOp::create(b, f32Ptr, b.getF32Type(), base,
                                ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(
                                    8 * i - 8 * r + 2 * width * r)});
        Value pair = LLVM::LoadOp::create(b, pairType, at, /*alignment=*/8);
        for (int64_t e = 0; e < 2; ++e)
          regs[4 * i + 2 * r + e] = LLVM::ExtractElementOp::create(
              b, pair, arith::ConstantIntOp::create(b, e, 32));
      }
    rewriter.replaceOpWithMultiple(op, {regs});
    return success();
  }
};

/// fat.bias_query_columns of a fragment tile (the A operand of Q·Kᵀ's
/// extra k16 step): G from the region — b and h the op's, a capture's read
/// an invariant load, clamped — then g = G / scale, t = g·float(kv_start −
/// q_start)/256, their three 16-bit parts each (x₀ = rnd(x), x₁ = rnd(x −
/// x₀), x₂ = rnd(x − x₀ − x₁), as on the CPU). Every row is [g₀, g₁, g₂,
/// t₀, t₁, t₂, 0, …]: in the A fragment thread λ holds columns 2(λ mod 4)
/// + e in its registers 0 and 1 (its two rows) and 8 + 2(λ mod 4) + e in
/// 2 and 3, so lanes λ mod 4 = 0, 1, 2 hold the pairs (g₀, g₁), (g₂, t₀),
/// (t₁, t₂), lane 3 and registers 2 and 3 zeros.
struct BiasQueryColumnsLowering : OpConversionPattern<BiasQueryColumnsOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(BiasQueryColumnsOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    if (!WgmmaFragmentAttr::isFragment(type) || type.getDimSize(0) != 64)
      return rewriter.notifyMatchFailure(op, "not a warpgroup's A fragment");
    if (!llvm::all_of(op.getCaptures().getTypes(),
                      llvm::IsaPred<LLVM::LLVMPointerType>))
      return rewriter.notifyMatchFailure(op, "a capture is not an address");
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    Value factor =
        cloneTermBody(b, op.getBody().front(), {op.getBatch(), op.getHead()},
                      op.getCaptures());
    Value g = arith::DivFOp::create(b, factor, op.getScale());
    Value offset = arith::SubIOp::create(b, asI32(b, op.getKvStart()),
                                         asI32(b, op.getQStart()));
    Value t = arith::MulFOp::create(
        b,
        arith::MulFOp::create(
            b, g, arith::SIToFPOp::create(b, b.getF32Type(), offset)),
        f32Const(b, 1.0 / BiasKeyColumnsOp::kOffsetScale));
    Type elt = type.getElementType();
    SmallVector<Value> parts; // f32 values of the 16-bit parts
    for (Value x : {g, t}) {
      Value rest = x;
      for (int64_t k = 0; k < BiasKeyColumnsOp::kParts; ++k) {
        Value part = arith::ExtFOp::create(
            b, b.getF32Type(),
            arith::TruncFOp::create(b, elt, rest).getResult());
        parts.push_back(part);
        rest = arith::SubFOp::create(b, rest, part);
      }
    }
    Value zero = f32Const(b, 0.0);
    Value quad = arith::RemUIOp::create(
        b, NVVM::LaneIdOp::create(b, b.getI32Type()), i32Const(b, 4));
    auto pick = [&](Value v0, Value v1, Value v2) {
      auto is = [&](int64_t q) {
        return arith::CmpIOp::create(b, arith::CmpIPredicate::eq, quad,
                                     i32Const(b, q));
      };
      return arith::SelectOp::create(
          b, is(0), v0,
          arith::SelectOp::create(b, is(1), v1,
                                  arith::SelectOp::create(b, is(2), v2, zero)));
    };
    bool isF16 = elt.isF16();
    Value pair = buildPackPair(b, pick(parts[0], parts[2], parts[4]),
                               pick(parts[1], parts[3], parts[5]), isF16);
    Value none = i32Const(b, 0);
    rewriter.replaceOpWithMultiple(op, {{pair, pair, none, none}});
    return success();
  }
};

/// fat.key_weights in the kernel: G from the region (as
/// fat.bias_query_columns'), a = G·log2 e, and the thread's weights of P's
/// fragment — thread λ holds keys 8i + 2(λ mod 4) + e of every 8-key group
/// i in both its rows, so register 2i + r is the pair (ŵ_{8i+2q},
/// ŵ_{8i+2q+1}), ŵ_k = rnd(ex2(a·(k − (N−1)/2))) — and the block's offset
/// (G/scale)·(kv_start + (N−1)/2), NaN past the exact spread (FatTensorOps.td
/// has the numerics). Pure, so a tile's weights computed before its loop and
/// a block's unused ones cost nothing per block.
struct KeyWeightsLowering : OpConversionPattern<KeyWeightsOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(KeyWeightsOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getWeights().getType());
    if (!WgmmaFragmentAttr::isFragment(type))
      return rewriter.notifyMatchFailure(op, "not a warpgroup's fragment");
    if (!llvm::all_of(op.getCaptures().getTypes(),
                      llvm::IsaPred<LLVM::LLVMPointerType>))
      return rewriter.notifyMatchFailure(op, "a capture is not an address");
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    int64_t n = type.getDimSize(1), runKeys = op.getRunKeys();
    double centre = 0.5 * double(runKeys - 1);
    Value factor =
        cloneTermBody(b, op.getBody().front(), {op.getBatch(), op.getHead()},
                      op.getCaptures());
    Value a = arith::MulFOp::create(b, factor, f32Const(b, M_LOG2E));
    Value quad = arith::RemUIOp::create(
        b, NVVM::LaneIdOp::create(b, b.getI32Type()), i32Const(b, 4));
    Value firstKey = arith::SubFOp::create(
        b,
        arith::UIToFPOp::create(b, b.getF32Type(),
                                arith::ShLIOp::create(b, quad, i32Const(b, 1))),
        f32Const(b, centre));
    // Past the exact spread the weights and offsets are NaN: maxnum would
    // drop a NaN offset, a NaN weight reaches O and l.
    Value spread =
        arith::MulFOp::create(b, buildAbs(b, factor), f32Const(b, centre));
    Value exact = arith::CmpFOp::create(b, arith::CmpFPredicate::OLE, spread,
                                        f32Const(b, KeyWeightsOp::kMaxSpread));
    // Every run has the same weights: one set of runKeys / 8 pairs.
    SmallVector<Value> pairs;
    for (int64_t i = 0; i < runKeys / 8; ++i) {
      Value w[2];
      for (int64_t e = 0; e < 2; ++e) {
        Value key = 8 * i + e == 0
                        ? firstKey
                        : arith::AddFOp::create(b, firstKey,
                                                f32Const(b, double(8 * i + e)));
        w[e] = arith::SelectOp::create(
            b, exact, buildExp2(b, arith::MulFOp::create(b, a, key)),
            f32Const(b, NAN));
      }
      pairs.push_back(buildPackPair(b, w[0], w[1], /*isF16=*/false));
    }
    SmallVector<Value> regs;
    for (int64_t i = 0; i < n / 8; ++i)
      regs.append(2, pairs[i % pairs.size()]);
    Value g = arith::DivFOp::create(b, factor, op.getScale());
    Value start =
        arith::SIToFPOp::create(b, b.getF32Type(), asI32(b, op.getKvStart()));
    SmallVector<SmallVector<Value>> results{regs};
    for (size_t p = 0; p < op.getOffsets().size(); ++p) {
      Value middle = arith::AddFOp::create(
          b, start, f32Const(b, double(int64_t(p) * runKeys) + centre));
      Value offset = arith::MulFOp::create(b, g, middle);
      results.push_back(
          {arith::SelectOp::create(b, exact, offset, f32Const(b, NAN))});
    }
    rewriter.replaceOpWithMultiple(op, results);
    return success();
  }
};
} // namespace

void mlir::fat::configureWgmmaFragmentLegality(ConversionTarget &target) {
  target.addIllegalOp<SoftmaxMaxOp, SoftmaxExpOp, ConvertLayoutOp>();
  target.addDynamicallyLegalOp<math::TanhOp, math::ExpOp, math::AbsFOp>(
      [](Operation *op) { return !op->getResult(0).getType().isF32(); });
  target.addIllegalOp<BandStageOp, BandFragmentOp>();
  target.addDynamicallyLegalOp<RescaleOp, MaskOp, ScoreModOp, MaskModOp,
                               BiasQueryColumnsOp, KeyWeightsOp, FinalizeOp,
                               arith::TruncFOp, arith::ConstantOp,
                               arith::MulFOp, arith::AddFOp, tensor::SplatOp>(
      [](Operation *op) {
        return !WgmmaFragmentAttr::isFragment(op->getResult(0).getType());
      });
}

void mlir::fat::populateWgmmaFragmentToNVVMPatterns(
    const TypeConverter &converter, RewritePatternSet &patterns, TanhForm tanh,
    int64_t prefetchBlocks) {
  patterns.add<TanhLowering>(converter, patterns.getContext(), tanh);
  patterns.add<UnaryMathLowering<math::ExpOp, buildExp>,
               UnaryMathLowering<math::AbsFOp, buildAbs>>(converter,
                                                          patterns.getContext());
  patterns.add<
      SoftmaxMaxLowering, SoftmaxExpLowering, ConvertLayoutLowering,
      FinalizeFragmentLowering, TruncFFragmentLowering, RescaleFragmentLowering,
      MaskFragmentLowering, BiasQueryColumnsLowering, KeyWeightsLowering,
      PackedMulFragmentLowering, ElementwiseFragmentLowering<arith::MulFOp>,
      ElementwiseFragmentLowering<arith::AddFOp>, SplatFragmentLowering,
      ConstantFragmentLowering, BandStageLowering, BandFragmentLowering>(
      converter, patterns.getContext());
  patterns.add<ModFragmentLowering<ScoreModOp>, ModFragmentLowering<MaskModOp>>(
      converter, patterns.getContext(), prefetchBlocks);
}

/// Whether `version` is ModFragmentLowering's two versions of a score
/// region's reads (tagged kScoreReadsAttrName) and only reads memory that
/// nothing in the kernel writes: its ops are invariant loads of captured
/// tensors, their L1 prefetches, address and index arithmetic, and the
/// empty asm that ends the in-bounds version.
static bool onlyReadsCaptures(scf::IfOp version) {
  if (!version->hasAttr(kScoreReadsAttrName))
    return false;
  WalkResult walk = version->walk([](Operation *op) {
    if (auto load = dyn_cast<LLVM::LoadOp>(op))
      return load.getInvariant() ? WalkResult::advance()
                                 : WalkResult::interrupt();
    if (auto asmOp = dyn_cast<LLVM::InlineAsmOp>(op))
      return asmOp.getAsmString().empty() && asmOp->getNumOperands() == 0 &&
                     asmOp->getNumResults() == 0
                 ? WalkResult::advance()
                 : WalkResult::interrupt();
    if (isa<NVVM::PrefetchOp, scf::IfOp, scf::YieldOp>(op) ||
        isMemoryEffectFree(op))
      return WalkResult::advance();
    return WalkResult::interrupt();
  });
  return !walk.wasInterrupted() && version.getNumResults() > 0;
}

void mlir::fat::issueCaptureReadsEarly(Operation *root) {
  SmallVector<NVVM::WgmmaWaitGroupSyncOp> waits;
  root->walk([&](NVVM::WgmmaWaitGroupSyncOp wait) { waits.push_back(wait); });
  for (NVVM::WgmmaWaitGroupSyncOp wait : waits) {
    // The versions after the wait in its block, up to the next wait.
    Block *block = wait->getBlock();
    SmallVector<scf::IfOp> versions;
    for (Operation *op = wait->getNextNode(); op; op = op->getNextNode()) {
      if (isa<NVVM::WgmmaWaitGroupSyncOp>(op))
        break;
      if (auto version = dyn_cast<scf::IfOp>(op);
          version && onlyReadsCaptures(version))
        versions.push_back(version);
    }
    for (scf::IfOp version : versions) {
      // The ops after the wait that compute the version's operands (its
      // test, the thread's addresses) go with it, in their order, when all
      // of them are free of memory effects: the fences that make the scores
      // valid, the stage's release and anything else stay where they are.
      // What the version reads of its block (its test and the values its
      // ops use; the walk visits the version itself too).
      SmallVector<Value> needed;
      version->walk([&](Operation *inner) {
        for (Value x : inner->getOperands())
          if (x.getParentBlock() == block)
            needed.push_back(x);
      });
      SetVector<Operation *> slice;
      SmallVector<Value> work(needed);
      bool movable = true;
      while (!work.empty() && movable) {
        Operation *def = work.pop_back_val().getDefiningOp();
        if (!def || def->getBlock() != block || def->isBeforeInBlock(wait) ||
            slice.contains(def))
          continue;
        movable = isMemoryEffectFree(def) && def->getNumRegions() == 0;
        slice.insert(def);
        work.append(def->operand_begin(), def->operand_end());
      }
      if (!movable)
        continue;
      SmallVector<Operation *> ordered(slice.begin(), slice.end());
      llvm::sort(ordered, [](Operation *a, Operation *b) {
        return a->isBeforeInBlock(b);
      });
      // They go right after the last op of the block whose results they
      // read (the block's start if none): in the key loop's step the top,
      // before the wait for K_j, the turn and the GEMMs' issue.
      Operation *last = nullptr;
      auto note = [&](Value x) {
        Operation *def = x.getDefiningOp();
        if (def && def->getBlock() == block && !slice.contains(def) &&
            (!last || last->isBeforeInBlock(def)))
          last = def;
      };
      for (Operation *op : ordered)
        llvm::for_each(op->getOperands(), note);
      llvm::for_each(needed, note);
      ordered.push_back(version);
      for (Operation *op : llvm::reverse(ordered)) {
        if (last)
          op->moveAfter(last);
        else
          op->moveBefore(&block->front());
      }
    }
  }
}
